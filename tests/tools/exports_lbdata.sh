#!/bin/bash
# exports_lbdata.sh - sh5merge lbdata on generated job files; every value
# checked against an independent h5py/numpy computation.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
UNBROTLI=$top_builddir/tests/tools/exports_unbrotli
T=$top_srcdir/tests/tools
W=$(mktemp -d /tmp/exports_lbdata.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. our shape with SyncTimeNs, a gap in the task ids (rank 3 has no data)
$PY "$T/exports_mkjob.py" "$W/job.h5" --nodes 3 --tasks 2 --samples 40 \
	--sync --skip-task 3 || exit 1
if "$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/out" --phase-length 7 \
	--summary >"$W/sum.txt"; then
	cat "$W/sum.txt"
	if $PY "$T/exports_check.py" lbdata "$W/job.h5" "$W/out" 7 \
		"$W/sum.txt"; then ok "plain export, 6 ranks, 6 phases"
	else bad "plain export values"; fi
else bad "lbdata exit status"; fi
ls -A "$W/out" | grep -q '\.part$' && bad "temporary files left behind"

# 2. brotli: one stream per file, decompresses to the plain file
if "$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/br" --phase-length 7 \
	--compress brotli; then
	same=1
	for f in "$W"/out/data.*.json; do
		b=$W/br/$(basename "$f")
		[ "$(head -c1 "$b")" != "{" ] || { same=0; echo "$b is plain"; }
		"$UNBROTLI" <"$b" | cmp -s - "$f" || { same=0; echo "$b differs"; }
	done
	[ $same = 1 ] && ok "brotli files decompress to the plain ones" ||
		bad "brotli round trip"
else bad "lbdata --compress brotli exit status"; fi

# 3. Slurm's stock shape (no EpochTimeNs): whole step as one phase, stem
$PY "$T/exports_mkjob.py" "$W/stock.h5" --nodes 2 --tasks 3 --samples 25 \
	--interval 2 --stock || exit 1
if "$SH5MERGE" lbdata -i "$W/stock.h5" -o "$W/stock" --stem vom \
	--phase-length 0 --summary >"$W/sum2.txt" &&
	$PY "$T/exports_check.py" lbdata "$W/stock.h5" "$W/stock" 0 \
		"$W/sum2.txt" --stem vom; then
	ok "stock shape, one phase"
else bad "stock shape export"; fi

# 4. --step picks a step; a missing step is an error naming the file
$PY "$T/exports_mkjob.py" "$W/two.h5" --steps 0,1 --samples 10 || exit 1
"$SH5MERGE" lbdata -i "$W/two.h5" -o "$W/s1" --step 1 ||
	bad "--step 1"
grep -q '"step":"1"' "$W/s1/data.0.json" && ok "--step 1 exported" ||
	bad "--step 1 attributes"
"$SH5MERGE" lbdata -i "$W/two.h5" -o "$W/s9" --step 9 2>"$W/err"
rc=$?
[ $rc = 1 ] && grep -q "^sh5merge: $W/two.h5: no step 9" "$W/err" &&
	[ -z "$(ls -A "$W/s9")" ] && ok "missing step: exit 1, no files" ||
	bad "missing step (rc $rc: $(cat "$W/err"))"

# 5. errors and usage
"$SH5MERGE" lbdata -i "$W/nonexistent.h5" -o "$W/e" 2>"$W/err"
[ $? = 1 ] && grep -q "^sh5merge: $W/nonexistent.h5: " "$W/err" &&
	ok "missing input: exit 1" || bad "missing input: $(cat "$W/err")"
echo garbage >"$W/garbage.h5"
"$SH5MERGE" lbdata -i "$W/garbage.h5" -o "$W/e" 2>"$W/err"
[ $? = 1 ] && ok "not HDF5: exit 1 ($(cat "$W/err"))" || bad "garbage input"
"$SH5MERGE" lbdata -i "$W/job.h5" 2>/dev/null
[ $? = 2 ] && ok "missing -o: exit 2" || bad "missing -o"
"$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/e" --compress zip 2>/dev/null
[ $? = 2 ] && ok "bad --compress: exit 2" || bad "bad --compress"
"$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/e" --phase-length -1 2>/dev/null
[ $? = 2 ] && ok "bad --phase-length: exit 2" || bad "bad --phase-length"
"$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/e" --phase-length 0.000001 \
	2>"$W/err"
[ $? = 1 ] && grep -q "phases (at most" "$W/err" &&
	ok "too many phases: exit 1" || bad "too many phases: $(cat "$W/err")"
"$SH5MERGE" lbdata --help | grep -q "^Usage: sh5merge lbdata" &&
	ok "--help" || bad "--help"

echo "$fails failures"
[ $fails = 0 ]
