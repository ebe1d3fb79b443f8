#!/bin/bash
# exports_cluster.sh - issue 6's tool tests on a real profiled job: a
# one-node cluster loads acct_gather_profile/sh5, `srun -n2
# --profile=all` runs a CPU/memory/I/O workload, then one `sh5merge
# merge` run writes the job file, the vt LBDatafiles (--lbdata) and the
# Chimbuko-style counter statistics (--counters).  Every exported value
# and the schema rules (float typing, ids, same phases per rank, the
# RunStats keys, anomalies beyond sigma) are checked against the job
# file with h5py by tests/tools/exports_check.py; a second merge with
# --compress brotli gives files that decompress to the plain ones.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

SH5MERGE=$top_builddir/sh5merge/sh5merge
UNBROTLI=$top_builddir/tests/tools/exports_unbrotli
CHECK="$PY $top_srcdir/tests/tools/exports_check.py"
[ -x "$SH5MERGE" ] && [ -x "$UNBROTLI" ] || fail "sh5merge or exports_unbrotli not built"
$PY -c 'import h5py, numpy' 2>/dev/null || skip "needs python3-h5py and numpy"
plugin_cluster_setup

as_user srun -n2 --profile=all "$WORKLOAD" 6 32 8 "$SCRATCH" ||
	fail "srun --profile=all failed"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
D=$PROFDIR/$JOBUSER
assert_file "$D/${job}_0_$NODE.h5"
W=$CLUSTER_DIR/out
mkdir -p "$W"

# One pass: job file, LBDatafiles in 2 s phases, counter statistics.
"$SH5MERGE" merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" -o "$W/job.h5" \
	--lbdata "$W/lb" --phase-length 2 --counters "$W/stats.json" \
	--sigma 2 2>"$W/merge.err" || { cat "$W/merge.err"; fail "merge with exports"; }
cat "$W/merge.err"
assert_file "$W/job.h5"
assert_match 'lb: step 0: 2 rank files, [3-9] phases of 2 s' "$(cat "$W/merge.err")" \
	"lbdata summary (2 ranks, about 6 s in 2 s phases)"
assert_match 'stats.json: [0-9]+ counters' "$(cat "$W/merge.err")" "counters summary"
ls -A "$W" "$W/lb" | grep -q '\.tmp\.\|\.part$' && fail "temporary files left behind"

$CHECK lbdata "$W/job.h5" "$W/lb" 2 || fail "LBDatafiles differ from the job file"
$CHECK counters "$W/job.h5" "$W/stats.json" 2 >"$W/check.txt" ||
	fail "counter statistics differ from the job file"
cat "$W/check.txt"
# The real job's counters: each task's CPU time and memory, the node's
# network; the app is the job's step.
$PY - "$W/stats.json" "$job" <<'EOF' || fail "counter names"
import json, sys
d = json.load(open(sys.argv[1]))
names = {c["counter"] for c in d["counter_stats"]}
for want in ("Task.CPUTime", "Task.RSS", "Task.ReadMB", "Task.WriteMB"):
    assert want in names, (want, sorted(names))
apps = {c["app"] for c in d["counter_stats"]}
assert apps == {sys.argv[2] + ".0"}, apps
cpu = [c for c in d["counter_stats"] if c["counter"] == "Task.CPUTime"][0]
assert cpu["stats"]["count"] >= 8, cpu   # two tasks, about 6 samples each
print("counters:", len(names), "names, app", apps.pop(),
      "Task.CPUTime samples", cpu["stats"]["count"])
EOF

# brotli through merge: decompresses to the same files.
"$SH5MERGE" -q merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" -o "$W/job2.h5" \
	--lbdata "$W/br" --phase-length 2 --compress brotli || fail "merge --compress brotli"
for f in "$W"/lb/data.*.json; do
	b=$W/br/$(basename "$f")
	[ "$(head -c1 "$b")" != "{" ] || fail "$b is not compressed"
	"$UNBROTLI" <"$b" | cmp -s - "$f" || fail "$b does not decompress to $f"
done
echo "exports from a real job ok (job $job)"
exit 0
