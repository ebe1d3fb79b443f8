#!/bin/bash
# cluster_smoke.sh - the test harness itself: a one-node private cluster
# with Slurm's stock acct_gather_profile/hdf5 plugin runs a profiled
# two-task step; the job succeeds and the stock node-step file holds
# Task samples.  Then the cluster stops and leaves no daemon behind.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

need_root
need_cmd munged slurmctld slurmd srun sinfo ss
[ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/acct_gather_profile_hdf5.so ] ||
	skip "stock acct_gather_profile/hdf5 not installed (slurm-wlm-hdf5-plugin)"
$PYTHON -c 'import h5py' 2>/dev/null || skip "needs python3-h5py"

trap cluster_cleanup EXIT
cluster_init || fail "cluster_init"
PROFDIR=$CLUSTER_DIR/profile
mkdir -p "$PROFDIR"
CLUSTER_EXTRA_CONF='AcctGatherProfileType=acct_gather_profile/hdf5'
CLUSTER_ACCT_GATHER_CONF="ProfileHDF5Dir=$PROFDIR
ProfileHDF5Default=None"
cluster_write_conf
cluster_start || fail "cluster did not start"
note "cluster up in $CLUSTER_DIR (ctld port $CLUSTER_CTLD_PORT)"

# The controller we talk to is ours.
port=$(scontrol show config | awk '$1 == "SlurmctldPort" { print $3 }')
assert_eq "$CLUSTER_CTLD_PORT" "$port" "SlurmctldPort seen by scontrol"

# ~3 s of CPU work per task; samples come once a second.
out=$CLUSTER_DIR/srun.out
rc=0
srun -n2 --profile=all -J smoke bash -c \
	'while [ $SECONDS -lt 3 ]; do :; done; echo "task $SLURM_PROCID ok"' \
	>"$out" 2>&1 || rc=$?
cat "$out" >&2
assert_eq 0 "$rc" "srun exit status"
assert_eq 2 "$(grep -c '^task [01] ok$' "$out")" "tasks reporting ok"

job=$(scontrol show jobs -o |
	sed -n 's/^JobId=\([0-9]*\) .*JobName=smoke .*/\1/p' | tail -n 1)
[ -n "$job" ] || fail "job not found in scontrol show jobs"
state=$(scontrol show job -o "$job" | sed -n 's/.*JobState=\([A-Z]*\) .*/\1/p')
assert_eq COMPLETED "$state" "job state"

node=$CLUSTER_NODE_NAMES
h5=$PROFDIR/root/${job}_0_${node}.h5
assert_file "$h5" "stock node-step file"
# /<node>/Tasks/<task>/ holds one row per sample with CPU time columns.
counts=$($PYTHON - "$h5" "$node" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
tasks = f[sys.argv[2]]["Tasks"]
for name in sorted(tasks):
    d = tasks[name]
    if isinstance(d, h5py.Group):
        d = d[list(d)[0]]
    print(name, d.shape[0], "CPUTime" in d.dtype.names)
PY
) || fail "cannot read $h5 with h5py"
note "tasks/samples: $(echo $counts)"
assert_eq 2 "$(echo "$counts" | wc -l)" "task datasets"
echo "$counts" | while read -r task n hascpu; do
	assert_ge 2 "$n" "samples of task $task"
	assert_eq True "$hascpu" "task $task has CPUTime"
done || exit 1

# Stop: every daemon we started is gone.
pids=$(awk '$1 == "pid" { print $3 }' "$CLUSTER_DIR/cluster.created")
cluster_stop
for p in $pids; do
	cluster_pid_alive "$p" && fail "pid $p still alive after cluster_stop"
done
[ -z "$(cluster_stepd_pids_all)" ] || fail "slurmstepd left behind"
exit 0
