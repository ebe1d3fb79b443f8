#!/bin/bash
# events_bench.sh - the cost of an application event, recording vs. not
# recording vs. no call (bench/events_bench.c; figures in doc/events.md).
#
# Usage: bench/events_bench.sh [EVENTS] [BUFFER]
#   EVENTS   events per mode (default 3000000)
#   BUFFER   SH5_EVENTS_BUFFER (default: the library's, 64 KiB)
# Run from the build directory after `make bench/events_bench`
# (or set top_builddir).  Spill files go to a temporary directory under
# ${TMPDIR:-/tmp}, removed at the end.
set -eu
B=${top_builddir:-.}
BENCH=$B/bench/events_bench
[ -x "$BENCH" ] || { echo "events_bench.sh: $BENCH: not built (make bench/events_bench)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sh5evbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -n "${2:-}" ]; then export SH5_EVENTS_BUFFER=$2; fi
echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
"$BENCH" -n "${1:-3000000}" "$tmp"
ls -l "$tmp" | awk 'NR > 1 { print "spill file: " $5 " bytes" }'
