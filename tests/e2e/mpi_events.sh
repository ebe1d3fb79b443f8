#!/bin/bash
# mpi_events.sh - application events end to end on a real one-node
# cluster: an unmodified MPI program (tests/tools/sh5_mpitest) runs under
# `srun --mpi=pmix --profile=task` once without and once with the preload
# library libsh5mpi.so; the plugin absorbs the ranks' spill files into the
# node-step file; `sh5merge merge --sync clc --lbdata --counters` carries
# the events into the job file and the exports; `sh5merge events` writes
# them as event-trace CSV.  Asserted: the program's output and exit
# status are unchanged by the library, no spill file is left, the events
# match what the program says it sent (every message matched, bytes per
# pair, collective calls per rank), no clock-condition violation after
# the correction, every corrected time within 1 ms of the raw one (one
# node: one clock), the LBDatafile's
# communications equal the program's messages per phase, and the counter
# statistics hold one MPI_<Op> counter per collective with its calls.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/mpi_events_lib.sh"

mpi_events_need
CLUSTER_DIR=$(mktemp -d /tmp/sh5-mpiev.XXXXXX)
PROFDIR=$CLUSTER_DIR/profile
CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
JobAcctGatherFrequency=task=1"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=2"
trap cluster_cleanup EXIT
cluster_start || fail "cluster did not start"
mpi_events_bin
RUN="srun -n2 --mpi=pmix --profile=task"
ARGS="-n 5 -w 400"

as_user $RUN "$BIN/sh5_mpitest" $ARGS -j "$OUT/plain.json" \
	>"$OUT/plain.out" 2>"$OUT/plain.err"
rc0=$?
as_user $RUN --export="ALL,LD_PRELOAD=$BIN/libsh5mpi.so" \
	"$BIN/sh5_mpitest" $ARGS -j "$OUT/truth.json" \
	>"$OUT/ev.out" 2>"$OUT/ev.err"
rc1=$?
cat "$OUT/ev.err" >&2
assert_eq 0 "$rc0" "exit status without the library"
assert_eq "$rc0" "$rc1" "exit status with the library"
cmp -s "$OUT/plain.out" "$OUT/ev.out" ||
	fail "output changed by the library: $(diff "$OUT/plain.out" "$OUT/ev.out" | head -5)"
cmp -s "$OUT/plain.json" "$OUT/truth.json" ||
	fail "the program's report changed by the library"
[ -s "$OUT/ev.out" ] || fail "the program printed nothing"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
D=$PROFDIR/$JOBUSER
assert_file "$D/${job}_0_$CLUSTER_NODE_NAMES.h5"
left=$(find "$D" -name '*.sh5ev' | wc -l)
assert_eq 0 "$left" "spill files left after the step"
$PY - "$D/${job}_0_$CLUSTER_NODE_NAMES.h5" <<'PY' || fail "events in the node-step file"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
node = f[list(f.keys())[0]]
ev = node["Events"]
tasks = sorted(k for k in ev if k.isdigit())
assert tasks == ["0", "1"], tasks
for t in tasks:
    d = ev[t]
    assert d.shape[0] > 100, (t, d.shape)
    assert d.attrs["World Rank"] == int(t), dict(d.attrs)
    assert d.attrs["Blocks Dropped"] == 0 and d.attrs["Records Rejected"] == 0
print("node-step file: %d tasks with events" % len(tasks))
PY

"$SH5MERGE" merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" --sync clc \
	-o "$OUT/job.h5" --lbdata "$OUT/lb" --counters "$OUT/stats.json" \
	2>"$OUT/merge.err" || { cat "$OUT/merge.err" >&2; fail "merge --sync clc"; }
cat "$OUT/merge.err" >&2
"$SH5MERGE" events "$OUT/job.h5" --raw -o "$OUT/raw.csv" || fail "events --raw"
"$SH5MERGE" events "$OUT/job.h5" -o "$OUT/corr.csv" || fail "events"
"$SH5MERGE" sync "$OUT/raw.csv" -o "$OUT/resync.csv" >/dev/null 2>&1 ||
	fail "sync of the raw events"
cmp -s "$OUT/resync.csv" "$OUT/corr.csv" ||
	fail "sh5merge sync of the raw events differs from the merge's correction"
$CHECK csv "$OUT/raw.csv" "$OUT/corr.csv" "$OUT/truth.json" ||
	fail "events against the program"
$CHECK lbdata "$OUT/lb" "$OUT/truth.json" || fail "LBDatafile communications"
$CHECK counters "$OUT/stats.json" "$OUT/truth.json" || fail "counter statistics"
exit 0
