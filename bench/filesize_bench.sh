#!/bin/bash
# filesize_bench.sh - bytes per sample of our node-step files against
# Slurm's stock acct_gather_profile/hdf5 files holding the same samples.
#
#   bench/filesize_bench.sh [BUILD_DIR]     (default: the current directory)
#
# bench/gen_job writes the same deterministic samples twice: in the stock
# layout (H5PT packet tables, uncompressed 10-record chunks, as Slurm
# 22.05's plugin) and through our node-step writer (chunks sized by the
# sampling rate, shuffle + deflate).  Prints bytes per sample and the
# ratio ours/stock for several job lengths.  Target: ratio <= 0.25.
# Environment: TASKS (per node, default 4), COMPRESSION is the writer's
# default (4).
set -u
B=${1:-$PWD}
GEN=$B/bench/gen_job
[ -x "$GEN" ] || { echo "build first: make bench/gen_job" >&2; exit 1; }
TASKS=${TASKS:-4}
W=$(mktemp -d /tmp/sh5-filesize.XXXXXX)
trap 'rm -rf "$W"' EXIT
printf '%-10s %-8s %14s %14s %8s\n' samples energy stock_B/sample sh5_B/sample ratio
for energy in "" -E; do
	for s in 60 600 3600 36000; do
		for f in stock sh5; do
			mkdir -p "$W/$f"
			"$GEN" -d "$W/$f" -j 1 -n 1 -t "$TASKS" -s "$s" -f "$f" $energy >/dev/null ||
				{ echo "gen_job failed" >&2; exit 1; }
		done
		nsamp=$(( s * TASKS + (${#energy} > 0 ? s : 0) ))
		st=$(du -bc "$W"/stock/*.h5 | tail -n1 | cut -f1)
		sh=$(du -bc "$W"/sh5/*.h5 | tail -n1 | cut -f1)
		awk -v s="$s" -v e="${energy:-no}" -v n="$nsamp" -v a="$st" -v b="$sh" \
			'BEGIN { printf "%-10d %-8s %14.1f %14.1f %8.3f\n", s, e, a / n, b / n, b / a }'
		rm -rf "$W/stock" "$W/sh5"
	done
done
echo "target: ratio <= 0.25 (at most a quarter of the stock size per sample)"
