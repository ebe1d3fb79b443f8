#!/bin/bash
# exports_bench.sh - export throughput of sh5merge lbdata and counters.
#
#   bench/exports_bench.sh [BUILDDIR] [JOB.h5]
#
# Generates (unless given) the large job of the merge benchmark shape:
# 64 nodes x 4 tasks x 3600 samples at 1 s, then times, on one core
# (taskset -c 0 when available), best of 3 runs by CPU time (user + sys,
# /usr/bin/time: on this shared machine wall time measures the
# neighbours too; both are printed):
#   - lbdata with one phase per sample (--phase-length 1): the JSON-heavy
#     case, target >= 100 MB/s of JSON;
#   - lbdata with the default 60 s phases (bound by reading the samples:
#     little JSON, so its MB/s of JSON says little; samples/s is shown);
#   - lbdata -p 1 with brotli, against the brotli library alone (Python's
#     brotli module, the same quality 8 and window 2^20, on the plain
#     files): target "brotli at its library's speed", i.e. lbdata's CPU
#     <= plain lbdata's CPU + the library's CPU;
#   - counters (two passes over the samples).
# Then peak RSS of lbdata -p 1 against job length (900, 1800 and 3600
# samples of the same 64 x 4 tasks: memory must not grow with it).
# Run by hand; not part of make check.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here}
job=${2:-}
SH5MERGE=$build/sh5merge/sh5merge
[ -x "$SH5MERGE" ] || { echo "no $SH5MERGE (pass the build dir)"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)"; exit 1; }
W=$(mktemp -d /tmp/exports_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkjob() {	# out samples
	/usr/bin/python3 "$here/tests/tools/exports_mkjob.py" "$1" \
		--nodes 64 --tasks 4 --samples "$2" --sync --spike 10:41:1000
}
if [ -z "$job" ]; then
	job=$W/job.h5
	echo "generating $job (64 nodes x 4 tasks x 3600 samples)..."
	mkjob "$job" 3600
fi
pin=
command -v taskset >/dev/null && pin="taskset -c 0"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# run OUTDIR args...: best wall, best CPU of 3 runs -> WALL CPU RSS (KB);
# the output of the last run stays in $W/out.txt and OUTDIR
run() {
	local out=$1 i s u y r c
	shift
	WALL="" CPU="" RSS=0
	for i in 1 2 3; do
		rm -rf "$out"
		/usr/bin/time -f "%e %U %S %M" -o "$W/time.txt" \
			$pin "$SH5MERGE" "$@" >"$W/out.txt"
		read s u y r < "$W/time.txt"
		c=$(awk "BEGIN {print $u + $y}")
		if [ -z "$WALL" ] || awk "BEGIN {exit !($s < $WALL)}"; then
			WALL=$s
		fi
		if [ -z "$CPU" ] || awk "BEGIN {exit !($c < $CPU)}"; then
			CPU=$c
		fi
		if [ "$r" -gt "$RSS" ]; then RSS=$r; fi
	done
}

report() {	# label json_bytes samples
	awk -v l="$1" -v b="$2" -v n="$3" -v s="$WALL" -v c="$CPU" \
	    -v r="$RSS" 'BEGIN {
		printf "%-30s %6.1f MB JSON  CPU %6.3f s = %6.1f MB/s (ratio %.2f)  wall %6.3f s = %6.1f MB/s  %9.0f samples/s CPU  peak RSS %.0f MB\n",
		       l, b / 1e6, c, b / 1e6 / c, b / 1e6 / c / 100,
		       s, b / 1e6 / s, n / c, r / 1024 }'
}
json_bytes() { sed -n 's/.*samples, \([0-9]*\) bytes of JSON.*/\1/p' "$W/out.txt"; }

run "$W/lb1" lbdata -i "$job" -o "$W/lb1" --phase-length 1 --summary
bytes=$(json_bytes)
samples=$(sed -n 's/^lbdata: \([0-9]*\) samples.*/\1/p' "$W/out.txt")
report "lbdata --phase-length 1" "$bytes" "$samples"
plain_cpu=$CPU

run "$W/lb60" lbdata -i "$job" -o "$W/lb60" --summary
report "lbdata (60 s phases)" "$(json_bytes)" "$samples"
rm -rf "$W/lb60"

run "$W/lbbr" lbdata -i "$job" -o "$W/lbbr" --phase-length 1 \
	--compress brotli --summary
ondisk=$(sed -n 's/.*bytes of JSON, \([0-9]*\) bytes written.*/\1/p' "$W/out.txt")
report "lbdata -p 1 --compress brotli" "$bytes" "$samples"
br_cpu=$CPU
rm -rf "$W/lbbr"
lib=$($pin /usr/bin/python3 -c '
import brotli, glob, sys, time
c = n = 0
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    d = open(f, "rb").read()
    t = time.process_time()
    n += len(brotli.compress(d, quality=8, lgwin=20))
    c += time.process_time() - t
print("%.3f %d" % (c, n))' "$W/lb1")
read lib_cpu lib_bytes <<<"$lib"
awk -v p="$plain_cpu" -v b="$br_cpu" -v l="$lib_cpu" -v lb="$lib_bytes" \
    -v d="$ondisk" -v j="$bytes" 'BEGIN {
	printf "    brotli: %d -> %d bytes; the library alone (q 8, window 2^20, one call per file): CPU %.3f s = %.1f MB/s -> %d bytes\n",
	       j, d, l, j / 1e6 / l, lb
	printf "    lbdata brotli CPU %.3f s vs plain lbdata + library %.3f s: ratio %.2f (target <= 1.00: %s)\n",
	       b, p + l, b / (p + l), (b <= (p + l) * 1.05 ? "met" : "NOT met")
}'
rm -rf "$W/lb1"

run "$W/stats.json" counters -i "$job" -o "$W/stats.json" --summary
csamples=$(sed -n 's/^counters: .* counters, \([0-9]*\) samples.*/\1/p' "$W/out.txt")
awk -v n="$csamples" -v s="$WALL" -v c="$CPU" -v r="$RSS" 'BEGIN {
	printf "%-30s CPU %6.3f s = %9.0f samples/s  wall %6.3f s  peak RSS %.0f MB\n",
	       "counters (2 passes)", c, n / c, s, r / 1024 }'
echo "target: 100 MB/s of JSON on one core by CPU time (ratio >= 1.00 on the lbdata --phase-length 1 line)"

echo "peak RSS of lbdata -p 1 against job length (64 nodes x 4 tasks):"
for n in 900 1800 3600; do
	if [ "$n" = 3600 ] && [ -z "${2:-}" ]; then
		j=$job
	else
		j=$W/job$n.h5
		mkjob "$j" $n >/dev/null
	fi
	rm -rf "$W/lbs"
	/usr/bin/time -f "%e %U %S %M" -o "$W/time.txt" $pin "$SH5MERGE" \
		lbdata -i "$j" -o "$W/lbs" --phase-length 1 --summary >"$W/out.txt"
	read s u y r < "$W/time.txt"
	awk -v n=$n -v b="$(json_bytes)" -v h="$(stat -c %s "$j")" -v r=$r \
	    -v c="$(awk "BEGIN {print $u + $y}")" 'BEGIN {
		printf "  %5d samples/task: input %6.1f MB, JSON %6.1f MB, CPU %.3f s = %.1f MB/s, peak RSS %.1f MB\n",
		       n, h / 1e6, b / 1e6, c, b / 1e6 / c, r / 1024 }'
	[ "$j" = "$job" ] || rm -f "$j"
	rm -rf "$W/lbs"
done
