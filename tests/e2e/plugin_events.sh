#!/bin/bash
# End to end: application events.  Tasks of `srun -n2 --profile=all`
# record events through libsh5ev into spill files in $SH5_EVENTS_DIR; at
# step end slurmstepd absorbs them into Events/<task> of the node-step
# file.  One task plays a hostile user (a symlink to a root-only file, a
# FIFO, a file cut in its header, a damaged block, another format
# version, all named like its spill files), one kills itself with
# SIGKILL: the refused files are kept and logged by name, the killed
# task's full blocks are kept, slurmstepd survives, exit codes are those
# of an unprofiled run, a step without events has no Events group.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

TASK=$top_builddir/tests/tools/sh5ev_task
[ -x "$TASK" ] || fail "$TASK not built"
plugin_cluster_setup "ProfileSH5EventsMax=64"
TASK=$(cluster_stage "$TASK") || fail "cannot stage $TASK"
UDIR=$PROFDIR/$JOBUSER
# The two keys are declared (unknown ones would have stopped the daemons)
# and shown.
conf=$(scontrol show config 2>/dev/null)
assert_match 'ProfileSH5Events +=  *yes' "$(grep ProfileSH5Events <<<"$conf")" \
	"ProfileSH5Events shown"
assert_match 'ProfileSH5EventsMax += 64 MiB' "$(grep ProfileSH5EventsMax <<<"$conf")" \
	"ProfileSH5EventsMax shown"

# wait_step_end JOB: until the slurmstepd of JOB.0 is gone (it absorbs
# the spill files after the tasks ended, which is when srun returns).
wait_step_end() {
	local i p busy
	for i in $(seq 1 100); do
		busy=0
		for p in $(cluster_stepd_pids_all); do
			grep -qF "[$1.0]" "/proc/$p/cmdline" 2>/dev/null && busy=1
		done
		[ "$busy" = 0 ] && return 0
		sleep 0.2
	done
	fail "slurmstepd of $1.0 still running"
}

# 1. A step without events: the tasks get the environment, nothing else.
out=$(as_user srun -n1 --profile=task "$TASK" none) ||
	fail "srun none failed: $(cluster_log_tail 20)"
job_none=$(last_job_id)
wait_step_end "$job_none"
assert_eq "task 0 dir=$UDIR prefix=${job_none}_0_$NODE max=$((64 << 20))" \
	"$out" "the tasks' SH5_EVENTS_* environment"

# 2. A normal task and a hostile one.
target=$CLUSTER_DIR/root-only
echo secret >"$target"
chmod 0600 "$target"
as_user srun -n2 --profile=all env SH5_EVENTS_BUFFER=4096 \
	"$TASK" normal hostile -- "$target" ||
	fail "srun normal+hostile failed (exit $?): $(cluster_log_tail 20)"
job_h=$(last_job_id)
wait_step_end "$job_h"
assert_eq secret "$(cat "$target")" "the symlink target"

# 3. A normal task and one killed by SIGKILL, then the same unprofiled.
rc_prof=0
as_user srun -n2 --profile=all env SH5_EVENTS_BUFFER=4096 \
	"$TASK" normal kill 2>/dev/null || rc_prof=$?
job_k=$(last_job_id)
wait_step_end "$job_k"
rc_plain=0
as_user srun -n2 env SH5_EVENTS_BUFFER=4096 "$TASK" normal kill \
	2>/dev/null || rc_plain=$?
assert_ne 0 "$rc_prof" "srun exit code with a killed task"
assert_eq "$rc_plain" "$rc_prof" "exit code profiled vs unprofiled"

log=$(cluster_log slurmd)
p_h=${job_h}_0_$NODE
for pid in 4000001 4000002 4000003 4000005; do
	name=$p_h.1.$pid.sh5ev
	grep -q "acct_gather_profile/sh5: events: $name: refused: .*; kept" \
		"$log" || fail "no refusal of $name logged: $(grep 'sh5: events' "$log")"
done
grep -q "acct_gather_profile/sh5: events: $p_h.1.4000004.sh5ev: task 1: 200 events absorbed from 2 blocks (1 blocks dropped" \
	"$log" || fail "damaged block not logged: $(grep 'sh5: events' "$log")"
# Kept: everything refused; removed: everything absorbed.
[ -L "$UDIR/$p_h.1.4000001.sh5ev" ] || fail "symlink not kept"
[ -p "$UDIR/$p_h.1.4000002.sh5ev" ] || fail "FIFO not kept"
assert_file "$UDIR/$p_h.1.4000003.sh5ev" "file cut in its header kept"
assert_file "$UDIR/$p_h.1.4000005.sh5ev" "version 99 file kept"
assert_no_file "$UDIR/$p_h.1.4000004.sh5ev" "absorbed damaged file"
left=$(cd "$UDIR" && ls | grep -v "^$p_h\.1\.400000[1235]\.sh5ev\$" |
	grep '\.sh5ev$' || true)
assert_eq "" "$left" "spill files left besides the refused ones"
if grep -Eq "slurmstepd.*(Segmentation|core dumped|fatal)" "$log"; then
	fail "slurmstepd crashed: $(grep -E 'Segmentation|core dumped|fatal' "$log")"
fi

$PY - "$PROFDIR/$JOBUSER" "$NODE" "$job_none" "$job_h" "$job_k" <<'PYEOF' ||
import sys, h5py, numpy as np
udir, node, job_none, job_h, job_k = sys.argv[1:]
ENTER, EXIT, PHASE, OBJECT = 1, 2, 3, 8
def check(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
def nodegroup(job):
    f = h5py.File("%s/%s_0_%s.h5" % (udir, job, node), "r")
    g = f[node]
    # Totals are written when the writer closes: the step ended cleanly.
    check("Totals" in g, "job %s: file closed with its totals" % job)
    return g
def s(v):
    return v.decode() if isinstance(v, bytes) else v

g = nodegroup(job_none)
check("Events" not in g, "a step without events has no Events group")

def normal_task(ev, task, job):
    d = ev[str(task)]
    check(len(d) == 300, "task %d: %d events, not 300" % (task, len(d)))
    k = d["Kind"]
    check((k == PHASE).sum() == 50 and (k == OBJECT).sum() == 50, "phases, objects")
    check((k == ENTER).sum() == 100 and (k == EXIT).sum() == 100, "enter/exit")
    o = d[k == OBJECT]
    check(list(o["Bytes"]) == [task * 1000 + i for i in range(50)], "object ids")
    check(np.allclose(o["Value"], np.arange(50) / 1000.0), "object loads")
    check(list(o["Id"]) == list(range(1, 51)), "objects' phases")
    check(np.all(np.diff(d["TimeNs"]) >= 0), "time order")
    check(d.attrs["Task"] == task and d.attrs["World Rank"] == -1, "task attrs")
    check(d.attrs["Torn Tail"] == 0 and d.attrs["Blocks Dropped"] == 0, "clean")
    check(d.attrs["Blocks"] == 4, "blocks of 101 records: %d" % d.attrs["Blocks"])
    check(s(d.attrs["Spill File"]).startswith("%s_0_%s.%d." % (job, node, task)),
          "spill file name %s" % s(d.attrs["Spill File"]))
    check(d.compression == "gzip" and d.fletcher32 and d.chunks == (4096,), "filters")
    r = ev["Regions"][:]
    names = {(int(x["Task"]), int(x["Region"])): x["Name"].decode() for x in r}
    mine = sorted(n for (t, _), n in names.items() if t == task)
    check(mine == ["io", "solve"], "task %d regions %s" % (task, mine))

g = nodegroup(job_h)
ev = g["Events"]
check(ev.attrs["Events Format Version"] == 1, "format version")
check(sorted(k for k in ev.keys() if k.isdigit()) == ["0", "1"], "tasks: %s" % list(ev.keys()))
normal_task(ev, 0, job_h)
d = ev["1"]
check(len(d) == 200 and d.attrs["Blocks"] == 2 and d.attrs["Blocks Dropped"] == 1,
      "damaged file: %d events, %d blocks" % (len(d), d.attrs["Blocks"]))
check(s(d.attrs["Library Version"]) == "hostile", "library version")
check(s(d.attrs["Spill File"]).endswith(".1.4000004.sh5ev"), "which hostile file")

g = nodegroup(job_k)
ev = g["Events"]
normal_task(ev, 0, job_k)
d = ev["1"]
cap = (4096 - 32) // 40
want = (2 + 1000) // cap * cap - 2      # full blocks, less the definition
check(len(d) == want, "killed task: %d events, want %d" % (len(d), want))
check(d.attrs["Blocks"] == (2 + 1000) // cap and d.attrs["Torn Tail"] == 0,
      "killed task's blocks")
check(set(d["Kind"]) == {ENTER, EXIT}, "killed task's kinds")
# the default writer (map) left its unfinished block and the rest of
# the window it had extended the file by: dropped, named
check("unfinished block %d" % ((2 + 1000) // cap) in s(d.attrs["Problem"]),
      "killed task's problem: %r" % s(d.attrs["Problem"]))
print("events ok:", job_none, job_h, job_k)
PYEOF
	fail "node-step files check failed"
echo "plugin events end-to-end ok"
