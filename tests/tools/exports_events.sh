#!/bin/bash
# exports_events.sh - sh5merge lbdata and counters on a job file with
# application events (tests/tools/events_mkjobfile.py writes it and the
# truth); checked by exports_events_check.py: vt's schema (python3-schema),
# an LBAF-style load, communications, phases, objects, rank times, region
# and MPI-call counters.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
$PY -c 'import schema' 2>/dev/null || { echo "no python3-schema"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
T=$top_srcdir/tests/tools
W=$(mktemp -d /tmp/exports_events.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() {	# check WHAT ARGS...: the checker's lines, one failure if any
	local what=$1
	shift
	if $PY "$T/exports_events_check.py" "$@" >"$W/chk.txt"; then
		cat "$W/chk.txt"
		ok "$what"
	else
		cat "$W/chk.txt"
		bad "$what"
	fi
}

# 1. phases from Pcontrol marks
$PY "$T/events_mkjobfile.py" "$W/job.h5" "$W/truth.json" || exit 1
if "$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/lb" --summary >"$W/sum.txt"
then
	cat "$W/sum.txt"
	check "lbdata from marks" lbdata "$W/lb" "$W/truth.json"
	grep -q 'events: phases from marks' "$W/sum.txt" &&
		ok "summary names the phase source" || bad "summary"
else bad "lbdata exit status"; fi

# the checker must catch a schema violation (time written as an integer)
mkdir -p "$W/broken"
for f in "$W"/lb/data.*.json; do cp "$f" "$W/broken/"; done
sed -i '0,/"time":[0-9.e-]*/s//"time":1/' "$W/broken/data.0.json"
if $PY "$T/exports_events_check.py" lbdata "$W/broken" "$W/truth.json" \
	>"$W/chk.txt" 2>&1; then
	bad "an integer time passed the schema"
else
	grep -q 'schema' "$W/chk.txt" && ok "schema rejects an integer time" ||
		bad "integer time: $(head -2 "$W/chk.txt")"
fi

# 2. brotli: same content
if "$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/lbz" --compress brotli; then
	mkdir -p "$W/lbzp"
	for f in "$W"/lbz/data.*.json; do
		"$top_builddir/tests/tools/exports_unbrotli" <"$f" \
			>"$W/lbzp/$(basename "$f")" || bad "unbrotli $f"
	done
	check "brotli rank files" lbdata "$W/lbzp" "$W/truth.json"
else bad "lbdata --compress brotli exit status"; fi

# 3. SyncTimeNs (offset and drift): times from the corrected clock
$PY "$T/events_mkjobfile.py" "$W/sync.h5" "$W/sync.json" --sync || exit 1
if "$SH5MERGE" lbdata -i "$W/sync.h5" -o "$W/lbs"; then
	check "lbdata with SyncTimeNs" lbdata "$W/lbs" "$W/sync.json"
else bad "lbdata (sync) exit status"; fi

# 4. no marks: fixed windows, communications still there
$PY "$T/events_mkjobfile.py" "$W/nomark.h5" "$W/nomark.json" --no-marks ||
	exit 1
if "$SH5MERGE" lbdata -i "$W/nomark.h5" -o "$W/lbw" --summary \
	>"$W/sumw.txt"; then
	check "lbdata from windows" lbdata "$W/lbw" "$W/nomark.json" --windows
	grep -q 'phases from windows' "$W/sumw.txt" && ok "windows named" ||
		bad "summary (windows)"
else bad "lbdata (no marks) exit status"; fi

# 5. counters: region and MPI-call statistics, anomalies at 3 sigma
if "$SH5MERGE" counters -i "$W/job.h5" -o "$W/stats.json" --sigma 3 \
	--summary --top 5 >"$W/csum.txt"; then
	cat "$W/csum.txt"
	check "counters from events" counters "$W/stats.json" \
		"$W/truth.json" --sigma3
	grep -q 'cn001 *2 *Region.solve' "$W/csum.txt" &&
		ok "the slow solve is in the top list" || bad "top list"
else bad "counters exit status"; fi
if "$SH5MERGE" counters -i "$W/sync.h5" -o "$W/sstats.json"; then
	check "counters with SyncTimeNs" counters "$W/sstats.json" \
		"$W/sync.json"
else bad "counters (sync) exit status"; fi

# 6. a damaged events dataset: a clear error naming it, no output
$PY - "$W/job.h5" "$W/bad.h5" <<'PYEOF' || exit 1
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    ev = f["Steps/0/Nodes/node01/Events"]
    del ev["Regions"]
PYEOF
if "$SH5MERGE" lbdata -i "$W/bad.h5" -o "$W/lbbad" 2>"$W/err.txt"; then
	bad "lbdata accepted events without region definitions"
else
	cat "$W/err.txt"
	grep -q 'Events/0' "$W/err.txt" && ok "error names the dataset" ||
		bad "error text: $(cat "$W/err.txt")"
	ls "$W/lbbad" 2>/dev/null | grep -q . && bad "output left behind" ||
		ok "no output left behind"
fi

# 7. the whole pipeline: node-step files with events (events_mkjob.py,
# another generator with its own truth: sub-communicators, non-blocking
# and wildcard receives, skewed clocks) -> merge --sync clc -> lbdata and
# counters; SendRecv messages and bytes per pair and per phase equal that
# truth, every rank file validates.
if [ -x "$T/events_mkjob.py" ]; then
	$PY "$T/events_mkjob.py" "$W/in" --nodes 3 --tasks 2 --iterations 4 \
		--seed 7 --skew-ms 3,-2.5,0.8 --truth "$W/mtruth.json" || exit 1
	if "$SH5MERGE" merge -j 4343 -p "$W/in" -u "" -o "$W/mjob.h5" \
		--sync clc --lbdata "$W/mlb0" --counters "$W/mst0.json" \
		2>"$W/merge.err" &&
		"$SH5MERGE" lbdata -i "$W/mjob.h5" -o "$W/mlb" &&
		"$SH5MERGE" counters -i "$W/mjob.h5" -o "$W/mstats.json"; then
		if $PY - "$W/mlb" "$W/mtruth.json" "$W/mstats.json" "$T" <<'PYEOF'
import glob, json, os, sys
sys.path.insert(0, sys.argv[4])
from lbdata_schema import LBDatafile_schema
t = json.load(open(sys.argv[2]))
pairs, phases = {}, {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "data.*.json"))):
    d = json.load(open(f))
    LBDatafile_schema.validate(d)
    for p in d["phases"]:
        for c in p.get("communications", []):
            if c["type"] != "SendRecv":
                continue
            k = "%d->%d" % (c["from"]["seq_id"], c["to"]["seq_id"])
            m, b = pairs.get(k, (0, 0.0))
            pairs[k] = (m + c["messages"], b + c["bytes"])
            m, b = phases.get(str(p["id"]), (0, 0.0))
            phases[str(p["id"])] = (m + c["messages"], b + c["bytes"])
want = {k: (v["messages"], float(v["bytes"])) for k, v in t["pairs"].items()}
assert pairs == want, (pairs, want)
want = {k: (v["messages"], float(v["bytes"])) for k, v in t["phases"].items()}
assert phases == want, (phases, want)
s = json.load(open(sys.argv[3]))
names = {c["counter"] for c in s["counter_stats"]}
assert "Region.compute" in names and "MPI.MPI_Send" in names, names
print("ok: %d pairs, %d phases of messages equal events_mkjob's truth"
      % (len(pairs), len(phases)))
PYEOF
		then ok "merge --sync clc -> lbdata/counters"
		else bad "merge --sync clc -> lbdata/counters: values"; fi
		# merge --lbdata: the same files, reported as mark phases
		grep -q 'phases from application marks' "$W/merge.err" &&
			ok "merge --lbdata names mark phases" ||
			bad "merge --lbdata message: $(cat "$W/merge.err")"
		same=1
		for f in "$W"/mlb/data.*.json; do
			cmp -s "$f" "$W/mlb0/$(basename "$f")" || same=0
		done
		[ $same = 1 ] && ok "merge --lbdata writes what lbdata writes" ||
			bad "merge --lbdata differs from lbdata"
	else bad "merge --sync clc -> lbdata/counters: exit status"; fi
fi

[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all ok"
