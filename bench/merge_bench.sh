#!/bin/bash
# merge_bench.sh - sh5merge against Slurm's sh5util on the same inputs.
#
#   bench/merge_bench.sh [BUILD_DIR]     (default: the current directory)
#
# Generates node-step files with bench/gen_job (stock layout, as Slurm's
# acct_gather_profile/hdf5 writes them, and ours), then measures side by
# side in one run: merge wall time and peak RSS (sh5merge merge vs
# sh5util -j ... -S), and CSV extraction of every task series (sh5merge
# extract vs sh5util -E -l Node:TimeSeries -s Tasks).  Prints ratios.
# Targets: merge <= 1.5x sh5util's time, extract >= 10x sh5util's rows/s,
# merge's peak RSS independent of the number of samples.
#
# The two tools run alternately (the same machine state for both), best
# wall time of RUNS each.
#
# Environment: BENCH_DIR (scratch, default a new /tmp dir, removed at the
# end), NODES/TASKS/SAMPLES (default 64/4/3600), BIG_NODES (512),
# BIG_SAMPLES (3600), RUNS (best of, default 3).
set -u
B=${1:-$PWD}
SH5MERGE=$B/sh5merge/sh5merge
GEN=$B/bench/gen_job
SH5UTIL=${SH5UTIL:-/usr/bin/sh5util}
NODES=${NODES:-64} TASKS=${TASKS:-4} SAMPLES=${SAMPLES:-3600}
BIG_NODES=${BIG_NODES:-512} BIG_SAMPLES=${BIG_SAMPLES:-3600}
RUNS=${RUNS:-3}
[ -x "$SH5MERGE" ] && [ -x "$GEN" ] ||
	{ echo "build first: make && make bench/gen_job" >&2; exit 1; }
[ -x "$SH5UTIL" ] || { echo "no $SH5UTIL (apt-get install slurm-wlm-hdf5-plugin)" >&2; exit 1; }
W=${BENCH_DIR:-$(mktemp -d /tmp/sh5-bench.XXXXXX)}
trap 'rm -rf "$W"' EXIT
U=$(id -un)
mkdir -p "$W/conf"
# sh5util needs a Slurm configuration naming the stock plugin.
printf 'ClusterName=bench\nSlurmctldHost=localhost\nAcctGatherProfileType=acct_gather_profile/hdf5\n' > "$W/conf/slurm.conf"
printf 'ProfileHDF5Dir=%s/prof\n' "$W" > "$W/conf/acct_gather.conf"
export SLURM_CONF=$W/conf/slurm.conf

# One run of CMD...: "WALL RSS" (s, microsecond resolution; KiB).
once() {
	local t0 t1 rss
	rm -f "$W/out.h5" "$W/out.csv"
	t0=$EPOCHREALTIME
	/usr/bin/time -o "$W/time" -f '%M' "$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	rss=$(tail -n 1 "$W/time")
	awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN{printf "%.4f %d\n", b - a, r}'
}
# measure CMD...: best wall time (s) and its peak RSS (KiB) of RUNS runs.
measure() {
	local best= rss= i out t
	for i in $(seq 1 "$RUNS"); do
		out=$(once "$@")
		t=${out% *}
		if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then
			best=$t rss=${out#* }
		fi
	done
	echo "$best $rss"
}
# pair "CMD A" "CMD B": both measured in alternation (the same machine
# state for both), best of RUNS each: "A_WALL A_RSS B_WALL B_RSS".
pair() {
	local a=$1 b=$2 ba= ra= bb= rb= i out t
	for i in $(seq 1 "$RUNS"); do
		out=$(once $a); t=${out% *}
		if [ -z "$ba" ] || awk "BEGIN{exit !($t < $ba)}"; then ba=$t ra=${out#* }; fi
		out=$(once $b); t=${out% *}
		if [ -z "$bb" ] || awk "BEGIN{exit !($t < $bb)}"; then bb=$t rb=${out#* }; fi
	done
	echo "$ba $ra $bb $rb"
}
ratio() { awk "BEGIN{ if ($2 > 0) printf \"%.2f\", $1 / $2; else print \"inf\" }"; }

run_case() { # run_case NAME JOB NODES SAMPLES FORMAT [noextract]
	local name=$1 job=$2 nodes=$3 samples=$4 fmt=$5 mode=${6:-} d rows e u p
	d=$W/prof/$U
	rm -rf "$W/prof"
	mkdir -p "$d"
	"$GEN" -d "$d" -j "$job" -n "$nodes" -t "$TASKS" -s "$samples" -E -f "$fmt" ||
		{ echo "gen_job failed" >&2; exit 1; }
	rows=$((nodes * TASKS * samples))
	echo "== $name: $nodes nodes x $TASKS tasks x $samples samples + Energy" \
		"($fmt files, $(du -sh "$d" | cut -f1), $rows task rows)"
	p=$(pair "$SH5MERGE -q merge -j $job -p $W/prof -o $W/out.h5" \
		 "$SH5UTIL -j $job -p $W/prof -S -o $W/out.h5")
	set -- $p
	printf '  merge    sh5merge %7.3f s %7d KiB   sh5util %7.3f s %7d KiB   time ratio %s (target <= 1.5)\n' \
		$1 $2 $3 $4 "$(ratio $1 $3)"
	[ "$mode" = noextract ] && return 0
	# Extraction of all task series from each tool's own job file.
	"$SH5MERGE" -q merge -j "$job" -p "$W/prof" -o "$W/m.h5" || exit 1
	"$SH5UTIL" -j "$job" -p "$W/prof" -S -o "$W/s.h5" >/dev/null 2>&1 || exit 1
	e=$(measure "$SH5MERGE" extract -i "$W/m.h5" -o "$W/out.csv")
	u=$(measure "$SH5UTIL" -j "$job" -E -i "$W/s.h5" -l Node:TimeSeries -s Tasks -o "$W/out.csv")
	printf '  extract  sh5merge %6.2f s (%s rows/s)   sh5util %6.2f s (%s rows/s)   speed ratio %s (target >= 10)\n' \
		${e% *} "$(awk "BEGIN{printf \"%.0f\", $rows / ${e% *}}")" \
		${u% *} "$(awk "BEGIN{printf \"%.0f\", $rows / ${u% *}}")" \
		"$(ratio ${u% *} ${e% *})"
	rm -f "$W/m.h5" "$W/s.h5"
}

run_case "stock files" 1001 "$NODES" "$SAMPLES" stock
run_case "sh5 files" 1002 "$NODES" "$SAMPLES" sh5
run_case "large case" 1003 "$BIG_NODES" "$BIG_SAMPLES" stock
# (sh5util -E of 512 nodes takes half a minute a run: extraction is
# measured on the stock large case only.)
run_case "large case, sh5 files" 1005 "$BIG_NODES" "$BIG_SAMPLES" sh5 noextract

# Peak RSS against job length: same nodes, 10x the samples.
for fmt in stock sh5; do
	echo "== merge peak RSS against job length ($NODES nodes, $fmt files)"
	for s in 360 3600 36000; do
		rm -rf "$W/prof"; mkdir -p "$W/prof/$U"
		"$GEN" -d "$W/prof/$U" -j 1004 -n "$NODES" -t "$TASKS" -s $s -E -f $fmt || exit 1
		m=$(measure "$SH5MERGE" -q merge -j 1004 -p "$W/prof" -o "$W/out.h5")
		printf '  %6d samples per series: %6.2f s, peak RSS %d KiB\n' $s ${m% *} ${m#* }
	done
done
