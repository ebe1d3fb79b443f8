#!/bin/bash
# filesize_bench.sh - bytes per sample of our node-step files against
# Slurm's stock acct_gather_profile/hdf5 files holding the same samples,
# on synthetic samples: the worst case.
#
#   bench/filesize_bench.sh [BUILD_DIR]     (default: the current directory)
#
# bench/gen_job writes deterministic samples whose fields are uniform
# random noise (no slowly changing RSS or VMSize, no structure in the CPU
# time): next to no redundancy for deflate to find.  Each generated file
# is written again
#   - by bench/sh5_replay through our node-step writer, flushing every 10
#     seconds of samples like the plugin (chunks sized by the sampling
#     rate, shuffle + deflate at the default level), and
#   - by bench/stock_copy exactly as Slurm 22.05's plugin writes them (H5PT
#     packet tables: 10-record chunks, deflate level 0, one append per
#     sample, no EpochTimeNs),
# and the script prints bytes per sample and the ratio ours/stock for
# several job lengths (per-file overhead included, so short jobs show it).
# Real samples compress far better: bench/filesize_real.sh measures the
# plugin on a real cluster (see doc/format.md, "Storage").
# Environment: TASKS (per node, default 4).
set -u
B=${1:-$PWD}
for p in gen_job stock_copy sh5_replay; do
	[ -x "$B/bench/$p" ] || { echo "build first: make bench/$p" >&2; exit 1; }
done
TASKS=${TASKS:-4}
W=$(mktemp -d /tmp/sh5-filesize.XXXXXX)
trap 'rm -rf "$W"' EXIT
printf '%-10s %-8s %14s %14s %8s\n' samples energy stock_B/sample sh5_B/sample ratio
for energy in "" -E; do
	for s in 60 600 3600 36000; do
		"$B/bench/gen_job" -d "$W" -j 1 -n 1 -t "$TASKS" -s "$s" -f sh5 $energy >/dev/null ||
			{ echo "gen_job failed" >&2; exit 1; }
		g=$(ls "$W"/*.h5 | head -n1)
		n=$("$B/bench/stock_copy" "$g" "$W/stock.out" | cut -d' ' -f1) ||
			{ echo "stock_copy failed" >&2; exit 1; }
		"$B/bench/sh5_replay" "$g" "$W/sh5.out" >/dev/null ||
			{ echo "sh5_replay failed" >&2; exit 1; }
		st=$(stat -c %s "$W/stock.out")
		sh=$(stat -c %s "$W/sh5.out")
		awk -v s="$s" -v e="${energy:-no}" -v n="$n" -v a="$st" -v b="$sh" \
			'BEGIN { printf "%-10d %-8s %14.1f %14.1f %8.3f\n", s, e, a / n, b / n, b / a }'
		rm -rf "${W:?}"/*
	done
done
echo "target (real samples, bench/filesize_real.sh): ratio <= 0.25"
