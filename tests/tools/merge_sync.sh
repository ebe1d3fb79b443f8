#!/bin/bash
# merge_sync.sh - `sh5merge merge --sync` and the exports in the same run,
# on generated node-step files (bench/gen_job) given ClockOffsets with
# h5py: three nodes with two drifting measurements, one measurement (a
# constant shift) and none.  Every SyncTimeNs, the records on the node
# groups and /Merge, the totals and extract's CSV are checked by
# tests/tools/merge_sync_check.py; the LBDatafiles and counter statistics
# written by the same run are checked against the job file by
# tests/tools/exports_check.py (they follow SyncTimeNs).  Also: auto and
# none, clc refused (no events) with nothing written, option errors.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
T=$top_srcdir/tests/tools
[ -x "$GEN" ] || { echo "no bench/gen_job in this build"; exit 77; }
W=$(mktemp -d /tmp/merge_sync.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$W/in"
"$GEN" -d "$W/in" -j 4242 -n 3 -t 2 -s 40 -S 0,1 -f sh5 -E || exit 1
merge() { "$SH5MERGE" merge -j 4242 -p "$W/in" -u "" "$@"; }

# No measurements: auto means none.
if merge -o "$W/none.h5" 2>"$W/none.err" &&
	grep -q 'sync none (no clock-offset measurements)' "$W/none.err" &&
	$PY "$T/merge_sync_check.py" "$W/none.h5" --method none
then ok "auto without measurements: none"
else cat "$W/none.err"; bad "auto without measurements"; fi

# Measurements: node1 +12.5 s drifting -500 ppm (its clock runs fast),
# node2 a single one (-20 s), node3 none; step 1 only node1.
$PY - "$W/in" <<'EOF' || exit 1
import sys, h5py, numpy as np
dt = np.dtype([("LocalTimeNs", "<i8"), ("OffsetNs", "<i8"),
               ("RoundTripNs", "<i8"), ("Stratum", "<u4"), ("Phase", "<u4")])
def add(path, node, recs):
    with h5py.File(path, "r+") as f:
        t = f[node + "/Tasks"]
        first = min(int(f[node + "/Tasks/" + k]["EpochTimeNs"][0]) for k in t)
        a = np.array([(first + l, o, r, s, p) for l, o, r, s, p in recs], dtype=dt)
        f[node].create_dataset("ClockOffsets", data=a)
d = sys.argv[1]
# 2 s apart from 1 s before the first sample, -500 ppm; one unsynchronised
# measurement (stratum 16) that must be left out
n1 = [(-10**9 + k * 2 * 10**9, 12500000000 - 500 * (k * 2 * 10**9) // 10**6,
       100000 + 1000 * k, 8, 0 if k == 0 else 1) for k in range(12)]
n1.insert(5, (n1[4][0] + 10**9, 99 * 10**9, 1000, 16, 1))
add(d + "/4242_0_node1.h5", "node1", n1)
add(d + "/4242_0_node2.h5", "node2", [(5 * 10**9, -20 * 10**9, 300000, 8, 0)])
add(d + "/4242_1_node1.h5", "node1", n1[:3])
EOF

# clc: refused (these files carry no events), nothing written.
rc=0
merge -o "$W/clc.h5" --sync clc 2>"$W/clc.err" || rc=$?
if [ "$rc" = 1 ] && [ ! -e "$W/clc.h5" ] &&
	grep -q 'clc needs events' "$W/clc.err"
then ok "--sync clc refused"
else cat "$W/clc.err"; bad "--sync clc: rc $rc"; fi

# Option errors: usage (2), nothing written.
for args in "--sync linear" "--phase-length 10" "--sigma 3" \
	"--lbdata $W/x --compress zip" "--counters $W/c.json --sigma -1"; do
	rc=0
	# shellcheck disable=SC2086
	merge -o "$W/bad.h5" $args 2>/dev/null || rc=$?
	[ "$rc" = 2 ] && [ ! -e "$W/bad.h5" ] && ok "usage error: $args" ||
		bad "$args: rc $rc"
done

# auto: offset, with the exports in the same run.
if merge -o "$W/job.h5" --lbdata "$W/lb" --phase-length 10 \
	--counters "$W/c.json" --sigma 1.5 2>"$W/auto.err"; then
	cat "$W/auto.err"
	grep -q 'sync offset: 3 of 6 node files corrected (16 measurements, 0 noisy left out)' \
		"$W/auto.err" && ok "auto: offset summary" || bad "auto summary"
	grep -q '4242_0_node3.h5: no clock-offset measurement' "$W/auto.err" &&
		ok "unmeasured node warned" || bad "no warning for node3"
	grep -q 'measurements left out' "$W/auto.err" &&
		ok "unsynchronised measurement warned" || bad "no warning for stratum 16"
	"$SH5MERGE" extract -i "$W/job.h5" -o "$W/job.csv" || bad "extract"
	$PY "$T/merge_sync_check.py" "$W/job.h5" --csv "$W/job.csv" &&
		ok "SyncTimeNs values, records, totals, CSV" || bad "sync values"
	"$SH5MERGE" list -i "$W/job.h5" >"$W/list.txt"
	grep -q '^sync: offset (asked: auto)' "$W/list.txt" &&
		grep -q 'sync: offset, 12 measurements, max correction 12\.49.*drift -500\.0 ppm' "$W/list.txt" &&
		grep -q 'sync: offset, 1 measurement, max correction 20\.000000 s' "$W/list.txt" &&
		grep -q '(+SyncTimeNs)' "$W/list.txt" &&
		ok "list shows the sync record" || { cat "$W/list.txt"; bad "list"; }
	ls -A "$W" | grep -q '\.tmp\.' && bad "temporary left behind"
	$PY "$T/exports_check.py" lbdata "$W/job.h5" "$W/lb" 10 &&
		ok "lbdata in the same run" || bad "lbdata values"
	$PY "$T/exports_check.py" counters "$W/job.h5" "$W/c.json" 1.5 >/dev/null &&
		ok "counters in the same run" || bad "counters values"
else
	cat "$W/auto.err"; bad "merge --lbdata --counters"
fi

# Explicit offset and none on the same inputs.
merge -o "$W/off.h5" --sync offset -q && $PY "$T/merge_sync_check.py" "$W/off.h5" &&
	ok "--sync offset" || bad "--sync offset"
merge -o "$W/no.h5" --sync none -q && $PY "$T/merge_sync_check.py" "$W/no.h5" --method none &&
	ok "--sync none" || bad "--sync none"

# An export that cannot be written: exit 1, the job file stays, no
# counters file (not even a temporary).
rc=0
merge -o "$W/ex.h5" -q --counters "$W/c2.json" --lbdata /proc/nonexistent/lb 2>"$W/ex.err" || rc=$?
if [ "$rc" = 1 ] && [ -s "$W/ex.h5" ] && [ ! -e "$W/c2.json" ] &&
	! ls -A "$W" | grep -q 'c2\.json' && grep -q 'exports not written' "$W/ex.err"
then ok "failed export: job file kept, no partial export"
else cat "$W/ex.err"; bad "failed export: rc $rc"; fi

echo "$fails failures"
[ $fails = 0 ]
