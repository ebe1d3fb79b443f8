#!/bin/bash
# exports_bench.sh - export throughput of sh5merge lbdata and counters.
#
#   bench/exports_bench.sh [BUILDDIR] [JOB.h5]
#
# Generates (unless given) the large job of the merge benchmark shape:
# 64 nodes x 4 tasks x 3600 samples at 1 s, then times, on one core
# (taskset -c 0 when available):
#   - lbdata with one phase per sample (--phase-length 1): the JSON-heavy
#     case, target >= 100 MB/s of JSON;
#   - lbdata with the default 60 s phases, and with brotli;
#   - counters (two passes over the samples).
# Prints MB/s of JSON, samples/s and the ratio to the target.  Run by
# hand; not part of make check.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here}
job=${2:-}
SH5MERGE=$build/sh5merge/sh5merge
[ -x "$SH5MERGE" ] || { echo "no $SH5MERGE (pass the build dir)"; exit 1; }
W=$(mktemp -d /tmp/exports_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$job" ]; then
	job=$W/job.h5
	echo "generating $job (64 nodes x 4 tasks x 3600 samples)..."
	/usr/bin/python3 "$here/tests/tools/exports_mkjob.py" "$job" \
		--nodes 64 --tasks 4 --samples 3600 --sync --spike 10:41:1000
fi
pin=
command -v taskset >/dev/null && pin="taskset -c 0"
now() { date +%s.%N; }

run() {	# label, then the command; sets SECS
	local label=$1 t0 t1
	shift
	sync
	t0=$(now)
	$pin "$@" >"$W/out.txt"
	t1=$(now)
	SECS=$(echo "$t1 - $t0" | bc -l)
}

report() {	# label json_bytes samples
	awk -v l="$1" -v b="$2" -v n="$3" -v s="$SECS" 'BEGIN {
		mbs = b / 1e6 / s
		printf "%-28s %8.3f s %9.1f MB JSON %8.1f MB/s %10.0f samples/s  ratio %.2f\n",
		       l, s, b / 1e6, mbs, n / s, mbs / 100 }'
}

run "lbdata, 1 s phases" "$SH5MERGE" lbdata -i "$job" -o "$W/lb1" \
	--phase-length 1 --summary
bytes=$(sed -n 's/.*samples, \([0-9]*\) bytes of JSON.*/\1/p' "$W/out.txt")
samples=$(sed -n 's/^lbdata: \([0-9]*\) samples.*/\1/p' "$W/out.txt")
report "lbdata --phase-length 1" "$bytes" "$samples"
rm -rf "$W/lb1"

run "lbdata, 60 s phases" "$SH5MERGE" lbdata -i "$job" -o "$W/lb60" --summary
bytes=$(sed -n 's/.*samples, \([0-9]*\) bytes of JSON.*/\1/p' "$W/out.txt")
report "lbdata (60 s phases)" "$bytes" "$samples"

run "lbdata, brotli" "$SH5MERGE" lbdata -i "$job" -o "$W/lbbr" \
	--phase-length 1 --compress brotli --summary
bytes=$(sed -n 's/.*samples, \([0-9]*\) bytes of JSON.*/\1/p' "$W/out.txt")
ondisk=$(sed -n 's/.*bytes of JSON, \([0-9]*\) bytes written.*/\1/p' "$W/out.txt")
report "lbdata -p 1 --compress brotli" "$bytes" "$samples"
echo "    brotli: $bytes -> $ondisk bytes"

run "counters" "$SH5MERGE" counters -i "$job" -o "$W/stats.json" --summary
csamples=$(sed -n 's/^counters: .* counters, \([0-9]*\) samples.*/\1/p' "$W/out.txt")
report "counters (2 passes)" "$(stat -c %s "$W/stats.json")" "$csamples"
echo "target: 100 MB/s of JSON on one core (ratio >= 1.00 on the lbdata -p 1 line)"
