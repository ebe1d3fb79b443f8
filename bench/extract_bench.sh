#!/bin/bash
# extract_bench.sh - sh5merge extract against Slurm's sh5util -E.
#
#   bench/extract_bench.sh BUILD_DIR     (default: the current directory)
#
# Generates stock node-step files at 3 sizes with bench/gen_job, merges
# each with sh5merge (its job file) and with sh5util -S (sh5util's own),
# then extracts every task series from each tool's file, the tools in
# turn, RUNS rounds, each round starting with the next tool (no tool
# always runs right after another: what follows sh5util pays more system
# time for its output):
#   sh5merge extract -i JOB.h5 -o out.csv
#   sh5util -j JOB -E -i SJOB.h5 -l Node:TimeSeries -s Tasks -o out.csv
# Prints, for each, the median wall time with its spread (min-max), rows/s
# at the median, the median CPU (user+sys, children included) with its
# spread and the peak RSS; the ratios of the medians against the target
# (>= 20x sh5util's rows/s).  Say the load (printed) beside the figures.
#
# Environment: BENCH_DIR (scratch, default a new /tmp dir, removed at the
# end), TASKS (4), SIZES ("64x900 64x3600 64x14400": nodes x samples,
# job length growing at a fixed width: rows/s and peak RSS against it),
# RUNS (rounds, default 5), SH5UTIL (/usr/bin/sh5util), SH5MERGE (another
# binary, e.g. an older build, instead of BUILD_DIR's), OLD (an older
# sh5merge binary run alongside, same files, same rounds: before/after in
# one run), SH5MERGE_NO_FORK=1 (one thread, passed on to sh5merge).
# "met" needs both ratios, wall and CPU, at or above the target.
set -u
B=${1:-$PWD}
SH5MERGE=${SH5MERGE:-$B/sh5merge/sh5merge}
GEN=$B/bench/gen_job
SH5UTIL=${SH5UTIL:-/usr/bin/sh5util}
OLD=${OLD:-}
TASKS=${TASKS:-4}
SIZES=${SIZES:-64x900 64x3600 64x14400}
RUNS=${RUNS:-5}
TARGET=20
[ -x "$SH5MERGE" ] && [ -x "$GEN" ] ||
	{ echo "build first: make && make bench/gen_job" >&2; exit 1; }
[ -x "$SH5UTIL" ] ||
	{ echo "no $SH5UTIL (apt-get install slurm-wlm-hdf5-plugin)" >&2; exit 1; }
W=${BENCH_DIR:-$(mktemp -d /tmp/sh5-xbench.XXXXXX)}
trap 'rm -rf "$W"' EXIT
U=$(id -un)
mkdir -p "$W/conf"
# sh5util needs a Slurm configuration naming the stock plugin.
printf 'ClusterName=bench\nSlurmctldHost=localhost\n'\
'AcctGatherProfileType=acct_gather_profile/hdf5\n' \
	> "$W/conf/slurm.conf"
printf 'ProfileHDF5Dir=%s/prof\n' "$W" > "$W/conf/acct_gather.conf"
export SLURM_CONF=$W/conf/slurm.conf

# once CMD...: "WALL CPU RSS" (s, s user+sys, KiB) of one run, from the
# child's own rusage (microseconds; /usr/bin/time rounds CPU to 10 ms).
once() {
	rm -f "$W/out.csv"
	/usr/bin/python3 -c '
import os, resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
t1 = time.monotonic()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if rc:
    sys.exit(1)
print("%.4f %.3f %d" % (t1 - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
' "$@" || { echo "failed: $*" >&2; exit 1; }
}
# medians "CMD"...: RUNS rounds, each command once per round, round i
# starting with command i mod n; for each command, in order, "WALL CPU
# RSS WMIN WMAX CMIN CMAX": the medians, the peak RSS and the spreads.
medians() {
	local i j k n=$# runs=$W/runs
	: > "$runs"
	for i in $(seq 0 $((RUNS - 1))); do
		for j in $(seq 0 $((n - 1))); do
			k=$(( (i + j) % n ))
			echo "$k $(once ${@:$((k + 1)):1})" >> "$runs" || exit 1
		done
	done
	/usr/bin/python3 - "$n" "$runs" <<'PY'
import statistics, sys
n = int(sys.argv[1])
runs = [[] for _ in range(n)]
for line in open(sys.argv[2]):
    k, w, c, m = line.split()
    runs[int(k)].append((float(w), float(c), int(m)))
out = []
for r in runs:
    w = [x[0] for x in r]; c = [x[1] for x in r]
    out.append("%.4f %.3f %d %.4f %.4f %.3f %.3f" % (
        statistics.median(w), statistics.median(c), max(x[2] for x in r),
        min(w), max(w), min(c), max(c)))
print(" ".join(out))
PY
}

echo "extract_bench: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"medians of $RUNS rounds, target >= ${TARGET}x sh5util's rows/s"
job=2000
for size in $SIZES; do
	nodes=${size%x*} samples=${size#*x}
	job=$((job + 1))
	rm -rf "$W/prof" "$W"/*.h5
	mkdir -p "$W/prof/$U"
	"$GEN" -d "$W/prof/$U" -j "$job" -n "$nodes" -t "$TASKS" \
		-s "$samples" -E -f stock || { echo "gen_job failed" >&2; exit 1; }
	"$SH5MERGE" -q merge -j "$job" -p "$W/prof" -o "$W/m.h5" ||
		{ echo "sh5merge merge failed" >&2; exit 1; }
	"$SH5UTIL" -j "$job" -p "$W/prof" -S -o "$W/s.h5" >/dev/null 2>&1 ||
		{ echo "sh5util -S failed" >&2; exit 1; }
	rows=$((nodes * TASKS * samples))
	X="$SH5MERGE extract -i $W/m.h5 -o $W/out.csv"
	S="$SH5UTIL -j $job -E -i $W/s.h5 -l Node:TimeSeries -s Tasks -o $W/out.csv"
	if [ -n "$OLD" ]; then
		set -- $(medians "$X" "$S" "$OLD extract -i $W/m.h5 -o $W/out.csv")
	else
		set -- $(medians "$X" "$S") 0 0 0 0 0 0 0
	fi
	echo "$@" | awk -v n="$nodes" -v t="$TASKS" -v s="$samples" -v r="$rows" \
	    -v T="$TARGET" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
	function line(what, i) {
		printf "  %-9s %7.3f s (%.3f-%.3f) %9.0f rows/s  CPU %6.3f s (%.3f-%.3f)  RSS %7d KiB\n",
			what, $(i), $(i + 3), $(i + 4), r / $(i), $(i + 1),
			$(i + 5), $(i + 6), $(i + 2)
	}
	function ratio(what, i, w, c) {
		w = $(i); c = $(i + 1)
		printf "  %s ratio %.1fx (wall), %.1fx (CPU); target >= %dx: %s\n",
			what, $8 / w, (c > 0 ? $9 / c : 0), T,
			($8 / w >= T && c > 0 && $9 / c >= T ? "met" : "NOT met")
	}
	{
		printf "== %d nodes x %d tasks x %d samples = %d rows (load %s)\n",
			n, t, s, r, load
		if ($15 > 0)
			line("before", 15)
		line("sh5merge", 1)
		line("sh5util", 8)
		if ($15 > 0)
			ratio("before:", 15)
		ratio("speed", 1)
	}'
done
