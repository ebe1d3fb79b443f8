#!/bin/bash
# exports_realjob.sh - lbdata and counters on a job file made the real way:
# node-step files from bench/gen_job (stock and sh5 formats mixed, with
# Energy), merged by `sh5merge merge`, then every exported value checked
# with h5py/numpy.  Skipped while gen_job or the merge subcommand is not
# part of this build.
set -u
PY=/usr/bin/python3
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
T=$top_srcdir/tests/tools
[ -x "$GEN" ] || { echo "no bench/gen_job in this build"; exit 77; }
"$SH5MERGE" merge --help >/dev/null 2>&1 || { echo "no merge"; exit 77; }
W=$(mktemp -d /tmp/exports_realjob.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$W/in"
"$GEN" -d "$W/in" -j 777 -n 3 -t 2 -s 60 -S 0,1 -f mixed -E || exit 1
"$SH5MERGE" -q merge -j 777 -p "$W/in" -u "" -o "$W/job.h5" || {
	echo "merge failed"; exit 1; }
if "$SH5MERGE" lbdata -i "$W/job.h5" -o "$W/lb" --phase-length 10 \
	--summary >"$W/sum.txt" &&
	$PY "$T/exports_check.py" lbdata "$W/job.h5" "$W/lb" 10 "$W/sum.txt"
then ok "lbdata on a merged job file"
else bad "lbdata on a merged job file"; fi
# sigma 1.5: gen_job's uniform values give many anomalies to check
if "$SH5MERGE" counters -i "$W/job.h5" -o "$W/c.json" --sigma 1.5 \
	--summary >"$W/csum.txt" &&
	$PY "$T/exports_check.py" counters "$W/job.h5" "$W/c.json" 1.5 \
		"$W/csum.txt" >"$W/chk.txt"
then
	cat "$W/chk.txt"
	n=$(sed -n 's/^anomalies: //p' "$W/chk.txt")
	[ "$n" -gt 0 ] && ok "counters and $n anomalies on a merged job file" ||
		bad "no anomalies to check"
else bad "counters on a merged job file"; fi
echo "$fails failures"
[ $fails = 0 ]
