#!/bin/bash
# report_browser.sh - sh5merge report opened in a real browser (Debian's
# chromium-headless-shell, file://, tests/tools/report_browser_check.sh:
# no console message, no network request, the expected figures in the
# DOM) for: a job with application events on three skewed nodes
# (events_mkjob.py, merge --sync clc), a job made the real way
# (bench/gen_job: our writer and stock files, with Energy), and the bad
# inputs: no events, no clock offsets, one node (a report that says what
# is missing), a damaged file and a missing step (a clear error, no
# file under the output name, an existing output left as it was).
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
command -v chromium-headless-shell >/dev/null ||
	{ echo "no chromium-headless-shell"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
T=$top_srcdir/tests/tools
CHECK=$T/report_browser_check.sh
W=$(mktemp -d /tmp/report_browser.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
merge() { "$SH5MERGE" -q merge -j 4343 -p "$1" -u "" -o "$2" "${@:3}"; }
leftovers() { ls "$W" | grep -q '\.tmp'; }

# 1. events on three skewed nodes
$PY "$T/events_mkjob.py" "$W/in" --nodes 3 --tasks 2 --iterations 4 \
	--seed 7 --skew-ms 3,-2.5,0.8 || exit 1
merge "$W/in" "$W/ev.h5" --sync clc 2>/dev/null || { bad "merge"; exit 1; }
if "$SH5MERGE" report "$W/ev.h5" -o "$W/ev.html" 2>"$W/ev.err"; then
	ok "report of a job with events: $(tail -1 "$W/ev.err")"
else cat "$W/ev.err"; bad "report of a job with events"; fi
"$CHECK" "$W/ev.html" "$W/b1" series heat clock-raw clock-corrected \
	timeline imbalance phase-load comm-matrix || bad "browser: events job"
grep -o 'data-series="[A-Za-z.]*"' "$W/b1/dom.html" | sort -u |
	grep -q 'Task.CPUUtilization' && ok "plot of Task.CPUUtilization" ||
	bad "no Task.CPUUtilization plot"
n=$(grep -o 'class="message"' "$W/b1/dom.html" | wc -l)
want=$($PY -c "import h5py,numpy as np
f=h5py.File('$W/ev.h5','r'); n=0
def v(name,o):
    global n
    if isinstance(o,h5py.Dataset) and name.split('/')[-2]=='Events' and name.split('/')[-1].isdigit():
        n+=int((o['Kind'][()]==4).sum())
f['Steps/0'].visititems(v); print(n)")
[ "$n" = "$want" ] && ok "timeline draws every message ($n)" ||
	bad "timeline: $n messages drawn, job has $want sends"
grep -q 'id="missing"' "$W/b1/dom.html" &&
	bad "events job: report says something is missing" ||
	ok "events job: nothing missing"
sz=$(stat -c %s "$W/ev.html")
grep -Eo '(src|href)="https?:' "$W/ev.html" && bad "external reference" ||
	ok "no external references ($sz bytes)"

# 1b. 136 ranks on 17 nodes: the binned timeline, a matrix of nodes
$PY "$T/events_mkjob.py" "$W/inb" --nodes 17 --tasks 8 --iterations 2 \
	>/dev/null || bad "mkjob 136 ranks"
merge "$W/inb" "$W/big.h5" --sync clc 2>/dev/null || bad "merge 136 ranks"
"$SH5MERGE" -q report "$W/big.h5" -o "$W/big.html" || bad "report 136 ranks"
TEXT="Timeline per rank (binned" "$CHECK" "$W/big.html" "$W/b1b" timeline \
	phase-load comm-matrix imbalance || bad "browser: 136 ranks"
grep -q 'column: receiver' "$W/b1b/dom.html" &&
	grep -q '(row: sender node' "$W/b1b/dom.html" &&
	ok "136 ranks: communication matrix between nodes" ||
	bad "136 ranks: matrix not per node"

# 1c. two steps with events: a section, a timeline each
$PY "$T/events_mkjob.py" "$W/in2" --nodes 2 --iterations 2 --step 0 >/dev/null
$PY "$T/events_mkjob.py" "$W/in2" --nodes 2 --iterations 3 --step 1 \
	--seed 3 >/dev/null
merge "$W/in2" "$W/two.h5" --sync clc 2>/dev/null || bad "merge two steps"
"$SH5MERGE" -q report "$W/two.h5" -o "$W/two.html" || bad "report two steps"
"$CHECK" "$W/two.html" "$W/b1c" timeline >/dev/null || bad "browser: two steps"
[ "$(grep -o 'data-kind="timeline"' "$W/b1c/dom.html" | wc -l)" = 2 ] &&
	grep -q 'data-step="1"' "$W/b1c/dom.html" &&
	ok "two steps with events: two timelines" || bad "two steps"

# 2. a job made the real way (gen_job: sh5 and stock files, Energy)
if [ -x "$GEN" ]; then
	mkdir -p "$W/real"
	"$GEN" -d "$W/real" -j 777 -n 3 -t 2 -s 120 -S 0,1 -f mixed -E \
		>/dev/null || bad "gen_job"
	"$SH5MERGE" -q merge -j 777 -p "$W/real" -u "" -o "$W/real.h5" ||
		bad "merge of gen_job files"
	"$SH5MERGE" -q report "$W/real.h5" -o "$W/real.html" 2>"$W/r.err" ||
		{ cat "$W/r.err"; bad "report of the gen_job job"; }
	TEXT="No application events" "$CHECK" "$W/real.html" "$W/b2" series \
		heat '!timeline' || bad "browser: gen_job job"
	for s in Task.CPUUtilization Task.RSS Energy.Power; do
		grep -q "data-series=\"$s\"" "$W/b2/dom.html" &&
			ok "plot of $s" || bad "no plot of $s"
	done
	grep -q 'data-step="1"' "$W/b2/dom.html" && ok "both steps" ||
		bad "step 1 missing"
	grep -q 'Totals per series' "$W/b2/dom.html" && ok "totals per series" ||
		bad "no totals per series"
	# the report's numbers against the job file (h5py): samples per
	# counter, sums, min and max
	$PY - "$W/real.html" "$W/real.h5" <<'PY' && ok "report data equal the job file's" || bad "report data"
import json, re, sys, h5py, numpy as np
html = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S).group(1))
f = h5py.File(sys.argv[2], "r")
for st in d["steps"]:
    for s in st["series"]:
        vals = []
        for g in f["Steps/%s/Nodes" % st["name"]].values():
            if s["s"] == "Task":
                ds = [g["Tasks"][k] for k in g["Tasks"]] if "Tasks" in g else []
            else:
                ds = [g[s["s"]]] if s["s"] in g else []
            for x in ds:
                vals.append(x[s["f"]].astype(float))
        v = np.concatenate(vals)
        want = v.sum()
        assert abs(s["stats"]["sum"] - want) <= 1e-3 * max(1, abs(want)), (s["s"], s["f"], s["stats"]["sum"], want)
        if not s["delta"]:
            assert int(s["stats"]["count"]) == len(v), (s["f"], s["stats"]["count"], len(v))
            assert abs(s["stats"]["max"] - v.max()) <= 1e-3 * max(1, abs(v.max())), s["f"]
            assert abs(s["stats"]["min"] - v.min()) <= 1e-3 * max(1, abs(v.min())), s["f"]
print("checked", sum(len(st["series"]) for st in d["steps"]), "counters")
PY
else
	echo "skip: no bench/gen_job"
fi

# 3. no events: a report that says so (exports_mkjob.py writes the job)
$PY "$T/exports_mkjob.py" "$W/noev.h5" --nodes 2 --samples 30 --sync \
	--spike 1:3:20 ||
	bad "exports_mkjob"
"$SH5MERGE" report "$W/noev.h5" -o "$W/noev.html" 2>"$W/noev.err" &&
	grep -q 'no application events' "$W/noev.err" &&
	ok "no events: warned on stderr" ||
	{ cat "$W/noev.err"; bad "no events"; }
TEXT="No application events in this step" "$CHECK" "$W/noev.html" \
	"$W/b3" series '!timeline' || bad "browser: no events"
# the spike (CPUUtilization x 50 on node 1, task 3, sample 20): marked
# on its plot, its row highlighted in the anomalies table
grep -qP '<figure[^>]*data-series="Task.CPUUtilization"(?:(?!</figure>).)*class="anomaly"' \
	"$W/b3/dom.html" && ok "anomaly marked on the plot" ||
	bad "no anomaly mark on Task.CPUUtilization"
grep -q '<tr class="anom"><td>[^<]*</td><td>4242.0</td><td>[^<]*</td><td>3</td><td>Task.CPUUtilization</td>' \
	"$W/b3/dom.html" && ok "anomaly listed (task 3, Task.CPUUtilization)" ||
	bad "anomaly not listed"

# 4. no clock offsets; 5. one node
$PY "$T/events_mkjob.py" "$W/inoff" --nodes 2 --tasks 2 --iterations 2 \
	--no-offsets >/dev/null || bad "mkjob --no-offsets"
merge "$W/inoff" "$W/nooff.h5" --sync none 2>/dev/null || bad "merge"
"$SH5MERGE" -q report "$W/nooff.h5" -o "$W/nooff.html" 2>/dev/null ||
	bad "report without offsets"
TEXT="No clock offsets" "$CHECK" "$W/nooff.html" "$W/b4" timeline \
	'!clock-raw' || bad "browser: no offsets"
grep -q 'NOT synchronized' "$W/b4/dom.html" &&
	ok "unsynchronized events said so" || bad "unsynchronized not said"
$PY "$T/events_mkjob.py" "$W/in1" --nodes 1 --tasks 3 --iterations 2 \
	>/dev/null || bad "mkjob --nodes 1"
merge "$W/in1" "$W/one.h5" --sync clc 2>/dev/null || bad "merge one node"
"$SH5MERGE" -q report "$W/one.h5" -o "$W/one.html" 2>/dev/null ||
	bad "report of one node"
TEXT="one node: nothing to synchronize" "$CHECK" "$W/one.html" "$W/b5" \
	timeline clock-raw || bad "browser: one node"

# 5b. damaged events in a readable job file: the report says so
$PY "$T/events_mkjob.py" "$W/ind" --nodes 2 --damage region >/dev/null
if merge "$W/ind" "$W/dmgev.h5" --sync none 2>/dev/null; then
	"$SH5MERGE" report "$W/dmgev.h5" -o "$W/dmgev.html" 2>"$W/de.err" &&
		grep -q 'events unreadable: .*region id without definition' \
			"$W/de.err" && ok "damaged events: warned" ||
		{ cat "$W/de.err"; bad "damaged events"; }
	TEXT="Events unreadable: " "$CHECK" "$W/dmgev.html" "$W/b6" series \
		'!timeline' || bad "browser: damaged events"
fi

# 6. damaged input, missing step, usage: clean errors, outputs untouched
head -c 5000 "$W/ev.h5" >"$W/dmg.h5"
echo keep >"$W/keep.html"
rc=0
"$SH5MERGE" report "$W/dmg.h5" -o "$W/keep.html" 2>"$W/d.err" || rc=$?
[ $rc = 1 ] && grep -q 'dmg.h5' "$W/d.err" && [ "$(cat "$W/keep.html")" = keep ] &&
	! leftovers && ok "damaged file: $(cat "$W/d.err")" ||
	{ cat "$W/d.err"; bad "damaged file (rc $rc)"; }
rc=0
"$SH5MERGE" report "$W/ev.h5" -o "$W/nostep.html" --step 9 2>"$W/s.err" ||
	rc=$?
[ $rc = 1 ] && grep -q 'no step 9' "$W/s.err" && [ ! -e "$W/nostep.html" ] &&
	! leftovers && ok "missing step: $(cat "$W/s.err")" ||
	{ cat "$W/s.err"; bad "missing step (rc $rc)"; }
rc=0
sum=$(md5sum <"$W/ev.h5")
"$SH5MERGE" report "$W/ev.h5" -o "$W/ev.h5" 2>/dev/null || rc=$?
[ $rc = 1 ] && [ "$(md5sum <"$W/ev.h5")" = "$sum" ] &&
	ok "input not overwritten" ||
	bad "output = input (rc $rc)"
rc=0
"$SH5MERGE" report "$W/ev.h5" 2>/dev/null || rc=$?
[ $rc = 2 ] && ok "usage: no -o" || bad "usage (rc $rc)"
# stderr not a terminal: no progress lines
grep -q $'\r' "$W/ev.err" && bad "progress on a non-terminal" ||
	ok "quiet when stderr is not a terminal"
echo "$fails failed"
[ $fails = 0 ]
