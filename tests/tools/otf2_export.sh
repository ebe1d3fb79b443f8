#!/bin/bash
# otf2_export.sh - sh5merge otf2 read back by the real tools: a job with
# events on three skewed nodes (events_mkjob.py, merge --sync clc) ->
# an OTF2 archive read by Debian's otf2-print and python3-otf2
# (tests/tools/otf2_check.py): event counts per kind equal the job
# file's, timestamps the records' SyncTimeNs and non-decreasing per
# location, every send received, locations grouped by node, clock
# properties.  Then one node, unsynchronized events (refused, --raw
# works), no events, damaged events, an existing output directory and
# usage errors: clear errors, no directory under the output name, no
# temporary directory left.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy, otf2' 2>/dev/null ||
	{ echo "no h5py/numpy/otf2 (python3-otf2)"; exit 77; }
command -v otf2-print >/dev/null || { echo "no otf2-print"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
"$SH5MERGE" otf2 --help >/dev/null 2>&1 || { echo "otf2 not built"; exit 77; }
T=$top_srcdir/tests/tools
W=$(mktemp -d /tmp/otf2_export.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
merge() { "$SH5MERGE" -q merge -j 4343 -p "$1" -u "" -o "$2" "${@:3}"; }
leftovers() { ls "$W" | grep -q '\.tmp'; }
# otf2-print's event lines counted per kind, as "KIND n" lines
print_counts() {
	otf2-print "$1" | awk '$2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ {n[$1]++}
		END {for (k in n) print k, n[k]}' | sort
}

$PY "$T/events_mkjob.py" "$W/in" --nodes 3 --tasks 2 --iterations 4 \
	--seed 7 --skew-ms 3,-2.5,0.8 || exit 1
merge "$W/in" "$W/job.h5" --sync clc 2>/dev/null || { bad merge; exit 1; }
if "$SH5MERGE" otf2 "$W/job.h5" -o "$W/tr" 2>"$W/o.err"; then
	ok "otf2: $(cat "$W/o.err")"
else cat "$W/o.err"; bad "otf2"; fi
$PY "$T/otf2_check.py" "$W/tr/traces.otf2" "$W/job.h5" 0 ||
	bad "python3-otf2 read-back"
print_counts "$W/tr/traces.otf2" >"$W/pc"
otf2-print -A "$W/tr/traces.otf2" >/dev/null 2>"$W/pe"
[ ! -s "$W/pe" ] && ok "otf2-print -A: no warnings" ||
	{ head -3 "$W/pe"; bad "otf2-print warnings"; }
want=$($PY -c "import h5py, collections
f=h5py.File('$W/job.h5','r'); c=collections.Counter()
names={1:'ENTER',2:'LEAVE',3:'PARAMETER_INT64',4:'MPI_SEND',5:'MPI_RECV',6:'MPI_COLLECTIVE_BEGIN',7:'MPI_COLLECTIVE_END'}
def v(name,o):
    if isinstance(o,h5py.Dataset) and name.split('/')[-2]=='Events' and name.split('/')[-1].isdigit():
        for k in o['Kind'][()]:
            if int(k) in names: c[names[int(k)]]+=1
f['Steps/0'].visititems(v)
for k in sorted(c): print(k, c[k])")
[ "$(cat "$W/pc")" = "$want" ] &&
	ok "otf2-print: counts per kind equal the job file's ($(tr '\n' ' ' <"$W/pc"))" ||
	{ diff <(echo "$want") "$W/pc"; bad "otf2-print counts"; }
otf2-print -G "$W/tr/traces.otf2" >"$W/defs" 2>&1
grep -q 'CLOCK_PROPERTIES.*Ticks per Seconds: 1000000000' "$W/defs" &&
	ok "otf2-print: clock properties" ||
	{ grep -i clock "$W/defs"; bad "clock properties"; }
for n in node1 node2 node3; do
	grep -q "SYSTEM_TREE_NODE.*\"$n\"" "$W/defs" || bad "no system tree node $n"
done
ok "system tree: a node per node"

# --groups node: a location group per node
"$SH5MERGE" -q otf2 "$W/job.h5" -o "$W/trg" --groups node &&
	$PY "$T/otf2_check.py" "$W/trg/traces.otf2" "$W/job.h5" 0 node \
		>"$W/g.out" && ok "--groups node: $(grep 'per node' "$W/g.out")" ||
	{ cat "$W/g.out"; bad "--groups node"; }
rc=0
"$SH5MERGE" otf2 "$W/job.h5" -o "$W/trx" --groups host 2>/dev/null || rc=$?
[ $rc = 2 ] && [ ! -e "$W/trx" ] && ok "--groups host: usage" || bad "--groups host (rc $rc)"

# no clock offsets: the CLC alone synchronizes the events
$PY "$T/events_mkjob.py" "$W/ino" --nodes 2 --iterations 2 --no-offsets >/dev/null
merge "$W/ino" "$W/nooff.h5" --sync clc 2>/dev/null
"$SH5MERGE" -q otf2 "$W/nooff.h5" -o "$W/tro" &&
	$PY "$T/otf2_check.py" "$W/tro/traces.otf2" "$W/nooff.h5" 0 >/dev/null &&
	ok "no clock offsets" || bad "no clock offsets"

# one node
$PY "$T/events_mkjob.py" "$W/in1" --nodes 1 --tasks 3 --iterations 2 >/dev/null
merge "$W/in1" "$W/one.h5" --sync clc 2>/dev/null
"$SH5MERGE" -q otf2 "$W/one.h5" -o "$W/tr1" &&
	$PY "$T/otf2_check.py" "$W/tr1/traces.otf2" "$W/one.h5" 0 >/dev/null &&
	ok "one node" || bad "one node"

# 136 ranks on 17 nodes, sub-communicators of every rank
$PY "$T/events_mkjob.py" "$W/inb" --nodes 17 --tasks 8 --iterations 2 >/dev/null
merge "$W/inb" "$W/big.h5" --sync clc 2>/dev/null
"$SH5MERGE" -q otf2 "$W/big.h5" -o "$W/trb" &&
	$PY "$T/otf2_check.py" "$W/trb/traces.otf2" "$W/big.h5" 0 >"$W/big.out" &&
	ok "136 ranks on 17 nodes" || { cat "$W/big.out"; bad "136 ranks"; }

# two steps with events: --step chooses, without it a clear error
$PY "$T/events_mkjob.py" "$W/in2" --nodes 2 --iterations 2 --step 0 >/dev/null
$PY "$T/events_mkjob.py" "$W/in2" --nodes 2 --iterations 3 --step 1 \
	--seed 3 >/dev/null
merge "$W/in2" "$W/two.h5" --sync clc 2>/dev/null
rc=0
"$SH5MERGE" otf2 "$W/two.h5" -o "$W/t2" 2>"$W/t2.err" || rc=$?
[ $rc = 1 ] && grep -q 'choose one with --step' "$W/t2.err" && [ ! -e "$W/t2" ] &&
	ok "two steps: $(cat "$W/t2.err")" || bad "two steps without --step"
"$SH5MERGE" -q otf2 "$W/two.h5" -o "$W/t2" --step 1 &&
	$PY "$T/otf2_check.py" "$W/t2/traces.otf2" "$W/two.h5" 1 >/dev/null &&
	ok "--step 1" || bad "--step 1"

# unsynchronized: refused, --raw works
merge "$W/in" "$W/none.h5" --sync none 2>/dev/null
rc=0
"$SH5MERGE" otf2 "$W/none.h5" -o "$W/trn" 2>"$W/n.err" || rc=$?
[ $rc = 1 ] && grep -q 'merge with --sync clc, or use --raw' "$W/n.err" &&
	[ ! -e "$W/trn" ] && ! leftovers && ok "unsynchronized: $(cat "$W/n.err")" ||
	{ cat "$W/n.err"; bad "unsynchronized (rc $rc)"; }
"$SH5MERGE" -q otf2 --raw "$W/none.h5" -o "$W/trn" &&
	[ -s "$W/trn/traces.otf2" ] && otf2-print "$W/trn/traces.otf2" >/dev/null &&
	ok "--raw" || bad "--raw"

# no events
$PY "$T/exports_mkjob.py" "$W/noev.h5" --nodes 2 --samples 5 || bad mkjob
rc=0
"$SH5MERGE" otf2 "$W/noev.h5" -o "$W/tre" 2>"$W/e.err" || rc=$?
[ $rc = 1 ] && grep -q 'no step has events' "$W/e.err" && [ ! -e "$W/tre" ] &&
	ok "no events: $(cat "$W/e.err")" || { cat "$W/e.err"; bad "no events"; }

# damaged events (a record of an unknown kind on node 1)
$PY "$T/events_mkjob.py" "$W/ind" --nodes 2 --damage region >/dev/null
if merge "$W/ind" "$W/dmg.h5" --sync none 2>/dev/null; then
	rc=0
	"$SH5MERGE" otf2 --raw "$W/dmg.h5" -o "$W/trd" 2>"$W/d.err" || rc=$?
	[ $rc = 1 ] && [ -s "$W/d.err" ] && [ ! -e "$W/trd" ] && ! leftovers &&
		ok "damaged events: $(head -1 "$W/d.err")" ||
		{ cat "$W/d.err"; bad "damaged events (rc $rc)"; }
else ok "damaged events refused by merge already"; fi

# existing output directory: not replaced, no leftovers
mkdir "$W/busy" && echo x >"$W/busy/f"
rc=0
"$SH5MERGE" otf2 "$W/job.h5" -o "$W/busy" 2>"$W/b.err" || rc=$?
[ $rc = 1 ] && [ "$(ls "$W/busy")" = f ] && ! leftovers &&
	ok "existing directory: $(cat "$W/b.err")" || { cat "$W/b.err"; bad "busy (rc $rc)"; }
rc=0
"$SH5MERGE" otf2 "$W/job.h5" 2>/dev/null || rc=$?
[ $rc = 2 ] && ok "usage: no -o" || bad "usage (rc $rc)"
echo "$fails failed"
[ $fails = 0 ]
