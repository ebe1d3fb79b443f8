#!/bin/bash
# Durability: while a profiled step runs, a reader can open its node-step
# file; after `kill -9` of the step's slurmstepd the file still opens with
# h5dump and holds every sample older than the flush interval.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

PLUGIN_FLUSH=1 plugin_cluster_setup
as_user srun -n1 --profile=task "$WORKLOAD" 60 16 4 "$SCRATCH" \
	>"$CLUSTER_DIR/srun.out" 2>&1 &
srun_pid=$!
job=
for _ in $(seq 1 50); do
	job=$(last_job_id)
	[ -n "$job" ] && break
	sleep 0.2
done
[ -n "$job" ] || fail "job did not start"
stepd=$(cluster_stepd_pid "$job" 0 "" 20) || fail "no slurmstepd for $job.0"
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
sleep 7

# A reader opens the live file (no lock held by the writer).
live=$($PY -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
print(len(f[sys.argv[2]]['Tasks']['0']))
" "$f" "$NODE") || fail "cannot read the live file"
assert_ge 4 "$live" "samples readable while the step runs"

kill -9 "$stepd"
t_kill=$(date +%s%N)
# The writer is gone: read at once.  srun itself may wait a long time for
# the dead step; it is ended below.
sleep 0.5

h5dump -H "$f" >/dev/null || fail "h5dump cannot open $f after kill -9"
$PY - "$f" "$NODE" "$t_kill" <<'PYEOF' || fail "killed file check failed"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
d = f[sys.argv[2]]["Tasks"]["0"]
ns = d["EpochTimeNs"].astype(np.int64)
kill = int(sys.argv[3])
n = len(d)
# Samples come at 1 Hz for ~7 s before the kill; the flush interval is 1 s:
# everything older than ~2 s before the kill must be there.
assert n >= 5, "only %d samples survived" % n
assert ns[-1] >= kill - 3e9, "last sample %.1f s before the kill" % ((kill - ns[-1]) / 1e9)
assert np.all(np.diff(ns) > 0)
print("after kill -9:", n, "samples, last %.2f s before the kill" % ((kill - ns[-1]) / 1e9))
PYEOF
scancel "$job" 2>/dev/null
kill "$srun_pid" 2>/dev/null
wait "$srun_pid" 2>/dev/null
echo "kill -9 durability ok"
