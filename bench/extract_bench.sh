#!/bin/bash
# extract_bench.sh - sh5merge extract against Slurm's sh5util -E.
#
#   bench/extract_bench.sh BUILD_DIR     (default: the current directory)
#
# Generates stock node-step files at 3 sizes with bench/gen_job, merges
# each with sh5merge (its job file) and with sh5util -S (sh5util's own),
# then extracts every task series from each tool's file, the two tools
# alternately (the same machine state for both), best wall time of RUNS:
#   sh5merge extract -i JOB.h5 -o out.csv
#   sh5util -j JOB -E -i SJOB.h5 -l Node:TimeSeries -s Tasks -o out.csv
# Prints rows/s of each, the speed ratio against the target (>= 20x
# sh5util's rows/s), CPU (user+sys, children included) and peak RSS of
# the best run.  Say the load (printed) beside the figures.
#
# Environment: BENCH_DIR (scratch, default a new /tmp dir, removed at the
# end), TASKS (4), SIZES ("64x900 64x3600 64x14400": nodes x samples,
# job length growing at a fixed width: rows/s and peak RSS against it),
# RUNS (best of, default 3), SH5UTIL (/usr/bin/sh5util), SH5MERGE (another
# binary, e.g. an older build, instead of BUILD_DIR's),
# SH5MERGE_NO_FORK=1 (one process, passed on to sh5merge).
set -u
B=${1:-$PWD}
SH5MERGE=${SH5MERGE:-$B/sh5merge/sh5merge}
GEN=$B/bench/gen_job
SH5UTIL=${SH5UTIL:-/usr/bin/sh5util}
TASKS=${TASKS:-4}
SIZES=${SIZES:-64x900 64x3600 64x14400}
RUNS=${RUNS:-3}
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

# once CMD...: "WALL CPU RSS" (s, s user+sys, KiB) of one run.
once() {
	local t0 t1
	rm -f "$W/out.csv"
	t0=$EPOCHREALTIME
	/usr/bin/time -o "$W/time" -f '%U %S %M' "$@" >/dev/null 2>&1 ||
		{ echo "failed: $*" >&2; exit 1; }
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" '{ printf "%.4f %.2f %d\n", b - a, $1 + $2, $3 }' \
		"$W/time"
}
# pair "CMD A" "CMD B": alternately, best wall of RUNS each, with its CPU
# and RSS: "A_WALL A_CPU A_RSS B_WALL B_CPU B_RSS".
pair() {
	local a=$1 b=$2 ba= bb= i out
	for i in $(seq 1 "$RUNS"); do
		out=$(once $a) || exit 1
		if [ -z "$ba" ] || awk "BEGIN{exit !(${out%% *} < ${ba%% *})}"; then
			ba=$out
		fi
		out=$(once $b) || exit 1
		if [ -z "$bb" ] || awk "BEGIN{exit !(${out%% *} < ${bb%% *})}"; then
			bb=$out
		fi
	done
	echo "$ba $bb"
}

echo "extract_bench: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"best of $RUNS, target >= ${TARGET}x sh5util's rows/s"
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
	set -- $(pair "$SH5MERGE extract -i $W/m.h5 -o $W/out.csv" \
		"$SH5UTIL -j $job -E -i $W/s.h5 -l Node:TimeSeries -s Tasks -o $W/out.csv")
	awk -v n="$nodes" -v t="$TASKS" -v s="$samples" -v r="$rows" \
	    -v mw="$1" -v mc="$2" -v mr="$3" -v uw="$4" -v uc="$5" -v ur="$6" \
	    -v T="$TARGET" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
		printf "== %d nodes x %d tasks x %d samples = %d rows (load %s)\n",
			n, t, s, r, load
		printf "  sh5merge %7.3f s %9.0f rows/s  CPU %6.2f s  RSS %7d KiB\n",
			mw, r / mw, mc, mr
		printf "  sh5util  %7.3f s %9.0f rows/s  CPU %6.2f s  RSS %7d KiB\n",
			uw, r / uw, uc, ur
		printf "  speed ratio %.1fx (wall), %.1fx (CPU); target >= %dx: %s\n",
			uw / mw, (mc > 0 ? uc / mc : 0), T,
			(uw / mw >= T ? "met" : "NOT met")
	}'
done
