#!/bin/bash
# report_cluster.sh - issue 12 on a job of the real plugin: a one-node
# cluster loads acct_gather_profile/sh5, `srun -n2 --profile=all` runs a
# CPU/memory/I/O workload, `sh5merge merge` writes the job file, and
# `sh5merge report` makes a report that Debian's chromium-headless-shell
# opens from file:// with no console message and no network request,
# whose DOM holds a plot and a heat map of each Task counter the plugin
# wrote, a summary, the counters table and the notice that the job has
# no application events; `sh5merge otf2` refuses the job (no events)
# cleanly.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

SH5MERGE=$top_builddir/sh5merge/sh5merge
CHECK=$top_srcdir/tests/tools/report_browser_check.sh
[ -x "$SH5MERGE" ] || fail "sh5merge not built"
command -v chromium-headless-shell >/dev/null ||
	skip "needs chromium-headless-shell (scripts/install-deps.sh)"
$PY -c 'import h5py' 2>/dev/null || skip "needs python3-h5py"
plugin_cluster_setup

as_user srun -n2 --profile=all "$WORKLOAD" 6 32 8 "$SCRATCH" ||
	fail "srun --profile=all failed"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
W=$CLUSTER_DIR/out
mkdir -p "$W"
"$SH5MERGE" -q merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" \
	-o "$W/job.h5" || fail "merge"
"$SH5MERGE" report "$W/job.h5" -o "$W/report.html" 2>"$W/report.err" ||
	{ cat "$W/report.err"; fail "report"; }
cat "$W/report.err"
TEXT="No application events in this step" "$CHECK" "$W/report.html" \
	"$W/browser" series heat '!timeline' || fail "report in the browser"
for s in Task.CPUTime Task.RSS Task.ReadMB Task.WriteMB; do
	grep -q "<figure[^>]*data-kind=\"series\"[^>]*data-series=\"$s\"" \
		"$W/browser/dom.html" || fail "no plot of $s"
	grep -q "<figure[^>]*data-kind=\"heat\"[^>]*data-series=\"$s\"" \
		"$W/browser/dom.html" || fail "no heat map of $s"
done
grep -q "<td>$job</td>" "$W/browser/dom.html" || fail "job id not in the summary"
grep -q 'class="counters"' "$W/browser/dom.html" || fail "no counters table"
if "$SH5MERGE" otf2 --help >/dev/null 2>&1; then
	rc=0
	"$SH5MERGE" otf2 "$W/job.h5" -o "$W/trace" 2>"$W/otf2.err" || rc=$?
	assert_eq 1 "$rc" "otf2 of a job without events"
	assert_match 'no step has events' "$(cat "$W/otf2.err")" "otf2 error"
	[ ! -e "$W/trace" ] || fail "otf2 left $W/trace"
fi
ls -A "$W" | grep -q '\.tmp' && fail "temporary files left behind"
echo "report of a real job ok (job $job)"
exit 0
