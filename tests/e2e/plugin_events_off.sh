#!/bin/bash
# ProfileSH5Events=no: the tasks of a profiled step get no SH5_EVENTS_*
# environment, a spill file left in the user directory is not touched,
# and the node-step file has no Events group.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

TASK=$top_builddir/tests/tools/sh5ev_task
[ -x "$TASK" ] || fail "$TASK not built"
plugin_cluster_setup "ProfileSH5Events=no"
TASK=$(cluster_stage "$TASK") || fail "cannot stage $TASK"
out=$(as_user srun -n1 --profile=task "$TASK" none) ||
	fail "srun failed: $(cluster_log_tail 20)"
job=$(last_job_id)
assert_eq "task 0 dir= prefix= max=" "$out" "no SH5_EVENTS_* environment"
# A step whose task records through the API with the variables given by
# hand: the file stays, nothing is absorbed.
out=$(as_user srun -n1 --profile=task env SH5_EVENTS_DIR="$PROFDIR/$JOBUSER" \
	SH5_EVENTS_PREFIX=own "$TASK" normal) || fail "srun normal failed"
job2=$(last_job_id)
for i in $(seq 1 50); do
	[ -z "$(cluster_stepd_pids_all)" ] && break
	sleep 0.2
done
ls "$PROFDIR/$JOBUSER"/own.0.*.sh5ev >/dev/null 2>&1 ||
	fail "the task's own spill file is missing"
$PY - "$PROFDIR/$JOBUSER" "$NODE" "$job" "$job2" <<'PYEOF' || fail "file check failed"
import sys, h5py
udir, node = sys.argv[1], sys.argv[2]
for job in sys.argv[3:]:
    g = h5py.File("%s/%s_0_%s.h5" % (udir, job, node), "r")[node]
    assert "Events" not in g, "job %s has Events" % job
    assert "Totals" in g
print("events off ok")
PYEOF
echo "events off ok"
