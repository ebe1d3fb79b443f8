#!/bin/bash
# exports_counters.sh - sh5merge counters on generated job files; every
# statistic and anomaly checked against an independent numpy computation.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
T=$top_srcdir/tests/tools
W=$(mktemp -d /tmp/exports_counters.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. two steps, injected spikes, our shape with SyncTimeNs
$PY "$T/exports_mkjob.py" "$W/job.h5" --nodes 3 --tasks 2 --samples 200 \
	--steps 0,1 --sync --spike 1:2:50 --spike 0:1:7 --spike 2:5:199 ||
	exit 1
if "$SH5MERGE" counters -i "$W/job.h5" -o "$W/stats.json" --sigma 5 \
	--summary >"$W/sum.txt"; then
	cat "$W/sum.txt"
	if $PY "$T/exports_check.py" counters "$W/job.h5" "$W/stats.json" 5 \
		"$W/sum.txt" >"$W/chk.txt"; then
		cat "$W/chk.txt"
		# 3 spikes x 2 steps at least
		n=$(sed -n 's/^anomalies: //p' "$W/chk.txt")
		[ "$n" -ge 6 ] && ok "counters and anomalies match ($n)" ||
			bad "expected the 6 injected spikes, got $n"
	else bad "counter values"; fi
	grep -q 'cn002 *5 *Task.CPUUtilization' "$W/sum.txt" &&
		ok "spike on task 5 is in the top list" || bad "top list"
else bad "counters exit status"; fi
ls "$W" | grep -q 'stats.json\.' && bad "temporary file left behind"

# 2. default sigma 6, stock shape (EpochTime only), standard output
$PY "$T/exports_mkjob.py" "$W/stock.h5" --nodes 2 --tasks 2 --samples 300 \
	--stock --spike 1:3:100 || exit 1
if "$SH5MERGE" counters -i "$W/stock.h5" -o - >"$W/stock.json" &&
	$PY "$T/exports_check.py" counters "$W/stock.h5" "$W/stock.json" 6 \
		>/dev/null; then
	ok "stock shape to stdout, sigma 6"
else bad "stock shape"; fi

# 3. --step and --pretty still give the same values
"$SH5MERGE" counters -i "$W/job.h5" -o "$W/s1.json" --step 1 --pretty &&
	$PY - "$W/s1.json" "$W/stats.json" <<'PYEOF' && ok "--step 1 --pretty" || bad "--step/--pretty"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert {c["app"] for c in a["counter_stats"]} == {"4242.1"}
want = [c for c in b["counter_stats"] if c["app"] == "4242.1"]
assert a["counter_stats"] == want, "values differ"
assert [e for e in b["anomaly_stats"]["anomaly"] if e["data"][0]["app"] == "4242.1"] == a["anomaly_stats"]["anomaly"]
PYEOF

# 4. errors and usage; a failed run leaves the old output alone
echo old >"$W/keep.json"
"$SH5MERGE" counters -i "$W/missing.h5" -o "$W/keep.json" 2>"$W/err"
[ $? = 1 ] && grep -q "^sh5merge: $W/missing.h5: " "$W/err" &&
	[ "$(cat "$W/keep.json")" = old ] && ! ls "$W" | grep -q 'keep.json\.' &&
	ok "missing input: exit 1, output untouched" ||
	bad "missing input: $(cat "$W/err")"
"$SH5MERGE" counters -i "$W/job.h5" -o "$W/x.json" --sigma 0 2>/dev/null
[ $? = 2 ] && ok "--sigma 0: exit 2" || bad "--sigma 0"
"$SH5MERGE" counters -i "$W/job.h5" 2>/dev/null
[ $? = 2 ] && ok "missing -o: exit 2" || bad "missing -o"
"$SH5MERGE" counters --help | grep -q "^Usage: sh5merge counters" &&
	ok "--help" || bad "--help"

echo "$fails failures"
[ $fails = 0 ]
