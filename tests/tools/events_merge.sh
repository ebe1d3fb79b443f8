#!/bin/bash
# events_merge.sh - application events through sh5merge: node-step files
# with events (tests/tools/events_mkjob.py: skewed node clocks,
# ClockOffsets describing them, messages of every kind, every collective,
# sub-communicators) -> `merge --sync clc` -> `events` / `events --raw`,
# checked against the generator's truth (tests/tools/events_check.py) and
# the contract's semantics (tests/tools/sync_check.py): every message
# matched, the raw trace violates the clock condition and the corrected
# one does not, local order kept, barrier ends aligned, `events --raw |
# sync` equal byte for byte to `events`, --raw equal to the recorded
# times; damaged and missing events reported, never a crash, outputs
# never partial; usage errors.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
T=$top_srcdir/tests/tools
W=$(mktemp -d /tmp/events_merge.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# exit status of a command that must fail cleanly (1), not crash
clean_fail() { [ "$1" = 1 ]; }

$PY "$T/events_mkjob.py" "$W/in" --nodes 3 --tasks 2 --iterations 4 \
	--seed 7 --skew-ms 3,-2.5,0.8 --truth "$W/truth.json" || exit 1
merge() { "$SH5MERGE" merge -j 4343 -p "$1" -u "" -o "$2" "${@:3}"; }

# merge --sync clc
if merge "$W/in" "$W/job.h5" --sync clc 2>"$W/merge.err" &&
	grep -q 'sync clc: 1 of 1 step with events synchronized' "$W/merge.err"
then ok "merge --sync clc"
else cat "$W/merge.err"; bad "merge --sync clc"; fi

# events: raw and corrected
"$SH5MERGE" events --raw "$W/job.h5" -o "$W/raw.csv" &&
	ok "events --raw" || bad "events --raw"
"$SH5MERGE" events "$W/job.h5" -o "$W/sync.csv" &&
	ok "events" || bad "events"
$PY "$T/events_check.py" raw "$W/raw.csv" "$W/truth.json" &&
	ok "--raw: the recorded times, messages per pair, comms, nodes" ||
	bad "raw trace against the truth"
# every message matched, violations before (the skew), none after
"$SH5MERGE" sync "$W/raw.csv" -o "$W/resync.csv" --stats >"$W/stats" ||
	bad "sync of the raw trace"
msgs=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["messages"])' "$W/truth.json")
grep -q "messages $msgs," "$W/stats" &&
	ok "all $msgs messages matched" || { cat "$W/stats"; bad "messages matched"; }
if ! $PY "$T/sync_check.py" violations "$W/raw.csv" >"$W/v.raw"; then
	ok "raw trace violates the clock condition: $(cat "$W/v.raw")"
else bad "raw trace: no violation ($(cat "$W/v.raw"))"; fi
if $PY "$T/sync_check.py" violations "$W/sync.csv" >"$W/v.sync"; then
	ok "corrected trace: $(cat "$W/v.sync")"
else bad "corrected trace: $(cat "$W/v.sync")"; fi
$PY "$T/sync_check.py" order "$W/raw.csv" "$W/sync.csv" &&
	ok "local order kept" || bad "local order"
$PY "$T/sync_check.py" same "$W/raw.csv" "$W/sync.csv" >/dev/null &&
	ok "raw and corrected differ in event times only" ||
	bad "raw and corrected differ elsewhere"
cmp "$W/resync.csv" "$W/sync.csv" &&
	ok "events --raw | sync == events (byte for byte)" ||
	bad "events --raw | sync differs from events"
$PY "$T/events_check.py" barriers "$W/raw.csv" "$W/sync.csv" \
	"$W/truth.json" && ok "barrier ends" || bad "barrier ends"
$PY "$T/events_check.py" job "$W/job.h5" "$W/sync.csv" "$W/truth.json" &&
	ok "/Merge records, SyncTimeNs" || bad "job file"

"$SH5MERGE" list -i "$W/job.h5" | grep -q '^  events: 6 tasks, [0-9]* events (corrected: SyncTimeNs)$' &&
	ok "list: the events line" || bad "list: no events line"
"$SH5MERGE" events -i "$W/job.h5" -o "$W/sync_i.csv" &&
	cmp "$W/sync_i.csv" "$W/sync.csv" && ok "events -i" || bad "events -i"

# auto picks clc; none keeps the events (raw only)
merge "$W/in" "$W/auto.h5" 2>"$W/auto.err" &&
	grep -q 'sync clc' "$W/auto.err" && ok "auto: clc with events" ||
	{ cat "$W/auto.err"; bad "auto"; }
merge "$W/in" "$W/none.h5" --sync none 2>/dev/null &&
	"$SH5MERGE" events --raw "$W/none.h5" -o "$W/none.csv" &&
	cmp "$W/none.csv" "$W/raw.csv" &&
	ok "--sync none: the events copied by value, same raw trace" ||
	bad "--sync none"
rc=0
"$SH5MERGE" events "$W/none.h5" -o "$W/none2.csv" 2>"$W/e.err" || rc=$?
if clean_fail $rc && grep -q 'merge with --sync clc, or use --raw' "$W/e.err" &&
	[ ! -e "$W/none2.csv" ]
then ok "events without SyncTimeNs refused"
else cat "$W/e.err"; bad "events without SyncTimeNs: rc $rc"; fi

# copied whole: bench/gen_job files (checksummed, with totals) given the
# same Events groups
GEN=$top_builddir/bench/gen_job
if [ -x "$GEN" ]; then
	mkdir -p "$W/whole"
	"$GEN" -d "$W/whole" -j 4343 -n 3 -t 2 -s 5 -S 0 -f sh5 || exit 1
	$PY - "$W/in" "$W/whole" <<'EOF2' || exit 1
import sys, h5py
for k in (1, 2, 3):
    with h5py.File("%s/4343_0_node%d.h5" % (sys.argv[1], k), "r") as s, \
         h5py.File("%s/4343_0_node%d.h5" % (sys.argv[2], k), "r+") as d:
        s.copy(s["node%d/Events" % k], d["node%d" % k], "Events")
EOF2
	if merge "$W/whole" "$W/whole.h5" --sync none 2>"$W/whole.err" &&
		grep -q '3 copied whole' "$W/whole.err" &&
		"$SH5MERGE" events --raw "$W/whole.h5" -o "$W/whole.csv" &&
		$PY "$T/events_check.py" raw "$W/whole.csv" "$W/truth.json" \
			>/dev/null
	then ok "copied whole: the events with the node group"
	else cat "$W/whole.err"; bad "copied whole"; fi
else
	echo "note: no bench/gen_job: whole copy not tested"
fi

# two steps with events: each synchronized; events wants --step
cp -r "$W/in" "$W/two"
$PY "$T/events_mkjob.py" "$W/two" --step 1 --nodes 2 --tasks 2 \
	--iterations 2 --seed 11 --truth "$W/two1.json" || exit 1
rc=0
if merge "$W/two" "$W/two.h5" --sync clc 2>"$W/two.err" &&
	grep -q 'sync clc: 2 of 2 steps with events synchronized' "$W/two.err"
then
	"$SH5MERGE" events "$W/two.h5" -o "$W/two.csv" 2>"$W/two.e" || rc=$?
	if clean_fail $rc && grep -q 'choose one with --step' "$W/two.e" &&
		"$SH5MERGE" events "$W/two.h5" --step 1 -o "$W/two1.csv" &&
		"$SH5MERGE" events --raw "$W/two.h5" -s 1 -o "$W/two1r.csv" &&
		$PY "$T/events_check.py" raw "$W/two1r.csv" "$W/two1.json" \
			>/dev/null &&
		$PY "$T/sync_check.py" violations "$W/two1.csv" >/dev/null &&
		"$SH5MERGE" events "$W/two.h5" --step 0 -o "$W/two0.csv" &&
		cmp "$W/two0.csv" "$W/sync.csv"
	then ok "two steps with events"
	else cat "$W/two.e"; bad "two steps: events"; fi
else cat "$W/two.err"; bad "two steps: merge"; fi

# world ranks not in task order: mapped through the RANK records
$PY "$T/events_mkjob.py" "$W/rev" --nodes 2 --tasks 3 --iterations 2 \
	--seed 3 --reverse-ranks --truth "$W/rev.json" || exit 1
if merge "$W/rev" "$W/rev.h5" --sync clc 2>/dev/null &&
	"$SH5MERGE" events --raw "$W/rev.h5" -o "$W/rev.csv" &&
	$PY "$T/events_check.py" raw "$W/rev.csv" "$W/rev.json" >/dev/null &&
	"$SH5MERGE" events "$W/rev.h5" -o "$W/rev_s.csv" &&
	$PY "$T/sync_check.py" violations "$W/rev_s.csv" >/dev/null
then ok "reversed world ranks"
else bad "reversed world ranks"; fi

# damaged events: reported naming the dataset, never a crash
for d in kind type members region notgroup huge; do
	$PY "$T/events_mkjob.py" "$W/d_$d" --damage $d --iterations 1 || exit 1
	rc=0
	merge "$W/d_$d" "$W/d_$d.h5" --sync clc 2>"$W/d_$d.err" || rc=$?
	if [ $rc -gt 1 ]; then
		cat "$W/d_$d.err"; bad "damage $d: merge rc $rc"; continue
	fi
	if [ $rc = 1 ]; then
		# refused (the dataset cannot be copied): nothing written
		if [ ! -e "$W/d_$d.h5" ] && grep -q 'Events/' "$W/d_$d.err"
		then ok "damage $d: merge refused, names the dataset"
		else cat "$W/d_$d.err"; bad "damage $d: merge rc 1"; fi
		continue
	fi
	rc=0
	"$SH5MERGE" events --raw "$W/d_$d.h5" -o "$W/d_$d.csv" \
		2>"$W/d_$d.ev" || rc=$?
	if clean_fail $rc && grep -q '/Events' "$W/d_$d.ev" &&
		grep -q 'not synchronized' "$W/d_$d.err" &&
		[ ! -e "$W/d_$d.csv" ] && ! ls "$W"/d_$d.csv.tmp* >/dev/null 2>&1
	then ok "damage $d: $(head -1 "$W/d_$d.ev")"
	else cat "$W/d_$d.err" "$W/d_$d.ev"; bad "damage $d: events rc $rc"; fi
done

# no events at all: events refuses, merge --sync clc refuses
$PY "$T/exports_mkjob.py" "$W/noev.h5" || exit 1
rc=0
"$SH5MERGE" events --raw "$W/noev.h5" -o "$W/noev.csv" 2>"$W/noev.err" ||
	rc=$?
clean_fail $rc && grep -q 'no step has events' "$W/noev.err" &&
	[ ! -e "$W/noev.csv" ] && ok "job without events" ||
	{ cat "$W/noev.err"; bad "job without events: rc $rc"; }
mkdir -p "$W/plain"
for f in "$W"/in/*.h5; do
	cp "$f" "$W/plain/"
done
$PY - "$W/plain" <<'EOF' || exit 1
import glob, sys, h5py
for p in glob.glob(sys.argv[1] + "/*.h5"):
    with h5py.File(p, "r+") as f:
        for n in f:
            del f[n]["Events"]
EOF
rc=0
merge "$W/plain" "$W/plain.h5" --sync clc 2>"$W/plain.err" || rc=$?
clean_fail $rc && [ ! -e "$W/plain.h5" ] &&
	grep -q 'no node-step file of this job carries any' "$W/plain.err" &&
	ok "merge --sync clc without events refused, nothing written" ||
	{ cat "$W/plain.err"; bad "clc without events: rc $rc"; }

# outputs never partial; usage and step errors
rc=0
"$SH5MERGE" events --raw "$W/job.h5" -o "$W/nodir/x.csv" 2>/dev/null || rc=$?
clean_fail $rc && [ ! -e "$W/nodir" ] && ok "unwritable output: rc 1" ||
	bad "unwritable output: rc $rc"
rc=0
"$SH5MERGE" events --raw "$W/job.h5" --step 9 -o "$W/s9.csv" 2>"$W/s9.err" ||
	rc=$?
clean_fail $rc && grep -q 'step 9 has no events' "$W/s9.err" &&
	[ ! -e "$W/s9.csv" ] && ok "unknown step" || bad "unknown step: rc $rc"
for args in "" "$W/job.h5" "$W/job.h5 -o" "$W/job.h5 -o x --bogus"; do
	rc=0
	# shellcheck disable=SC2086
	"$SH5MERGE" events $args 2>/dev/null || rc=$?
	[ $rc = 2 ] && ok "usage error: '$args'" || bad "usage '$args': rc $rc"
done
rc=0
"$SH5MERGE" events "$W/nofile.h5" -o "$W/x.csv" 2>"$W/nf.err" || rc=$?
clean_fail $rc && grep -q 'nofile.h5' "$W/nf.err" && ok "missing input" ||
	bad "missing input: rc $rc"
ls "$W"/*.tmp* >/dev/null 2>&1 && bad "temporary files left" ||
	ok "no temporary file left"

echo "events_merge: $fails failed"
[ $fails = 0 ]
