#!/bin/bash
# The file's start after the forks: slurmstepd calls task_start just
# before forking each task, so the plugin writes the HDF5 file's start
# (node attributes, first flush) only once every task of the node is
# forked (the flush thread woken by the step thread's first sample after
# the last task_start), or at the flush interval, node_step_end or fini
# if one comes first.  Checks, with DebugFlags=Profile: the log line
# saying when, its place after the last task_start and before
# node_step_end, every task's series with samples, the node attributes;
# and a step without task samples (--profile=energy) whose start is
# written at node_step_end.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

NSTEPS=${NSTEPS:-3}
PLUGIN_EXTRA_SLURM_CONF="DebugFlags=Profile" PLUGIN_FLUSH=30 \
	plugin_cluster_setup
log=$(cluster_log slurmd)

# step_log JOB: the slurmstepd lines of step JOB.0 in slurmd's log.
step_log() {
	grep -F "[$1.0]" "$log"
}

# wait_step_end JOB: slurmstepd logs node_step_end after srun returned.
wait_step_end() {
	for _ in $(seq 50); do
		step_log "$1" | grep -q "node_step_end" && return
		sleep 0.1
	done
}

for i in $(seq "$NSTEPS"); do
	t0=$(date +%s)
	as_user srun -O -n8 --profile=all "$WORKLOAD" 3 8 1 "$SCRATCH" ||
		fail "srun $i failed: $(cluster_log_tail 20)"
	job=$(last_job_id)
	f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
	assert_file "$f"
	wait_step_end "$job"
	step_log "$job" >"$CLUSTER_DIR/step$i.log"
	n=$(grep -c "file start written" "$CLUSTER_DIR/step$i.log")
	assert_eq "$n" 1 "step $i ($job): one file start logged"
	assert_match "file start written once the tasks were forked, 8 of 8 tasks started" \
		"$(cat "$CLUSTER_DIR/step$i.log")" \
		"step $i ($job): started after the forks"
	awk '/task_start/ { t = NR } /file start written/ { s = NR }
	     /node_step_end/ { e = NR }
	     END { exit !(t && s > t && e > s) }' "$CLUSTER_DIR/step$i.log" ||
		fail "step $i ($job): file start not between the last" \
			"task_start and node_step_end: $(cat "$CLUSTER_DIR/step$i.log")"
	$PY - "$f" "$NODE" "$job" "$t0" <<'PYEOF' || fail "step $i ($job): file check failed"
import sys, h5py, calendar, time
path, node, job, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
g = h5py.File(path, "r")[node]
def attr(n):
    v = g.attrs[n]
    return v.decode() if isinstance(v, bytes) else v
tasks = sorted(g["Tasks"].keys(), key=int)
assert tasks == [str(t) for t in range(8)], "task series %s" % tasks
counts = {t: len(g["Tasks"][t]) for t in tasks}
assert all(n >= 1 for n in counts.values()), "a task without samples: %s" % counts
assert int(attr("Number of Tasks")) == 8, "Number of Tasks"
assert int(attr("Job ID")) == job, "Job ID"
st = attr("Start Time UTC")
ns = int(attr("Start Time ns"))
assert calendar.timegm(time.strptime(st, "%Y-%m-%dT%H:%M:%SZ")) == ns // 10**9, \
    "Start Time UTC %s against Start Time ns %d" % (st, ns)
assert abs(ns // 10**9 - t0) <= 5, "Start Time ns %d, srun started at %d" % (ns, t0)
assert attr("Start Time").strip(), "Start Time empty"
assert attr("Sampling Frequencies").startswith("task=1"), "frequencies"
print("step ok:", counts)
PYEOF
done

# No task samples: nothing wakes the flush thread before node_step_end
# (the flush interval, 30 s, is longer than the step).
as_user srun -n1 --profile=energy sleep 2 || fail "energy step failed"
job=$(last_job_id)
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$f"
wait_step_end "$job"
assert_match "file start written at node_step_end" "$(step_log "$job")" \
	"energy-only step ($job): started at node_step_end"
$PY - "$f" "$NODE" "$job" <<'PYEOF' || fail "energy-only step: file check failed"
import sys, h5py
g = h5py.File(sys.argv[1], "r")[sys.argv[2]]
v = g.attrs["Job ID"]
assert int(v) == int(sys.argv[3]), "Job ID"
assert int(g.attrs["Number of Tasks"]) == 1, "Number of Tasks"
assert "Tasks" not in g or len(g["Tasks"]) == 0, "task series in an energy-only step"
assert "Start Time UTC" in g.attrs and "Start Clock ns" in g.attrs
print("energy-only step ok")
PYEOF
echo "file start after the forks ok"
