#!/bin/bash
# bench/stream_bench.sh - enqueue cost and sender throughput of the stream
# module against a private influxd on loopback (run by hand, not a test).
#
#   bench/stream_bench.sh [BUILD_DIR] [SAMPLES] [BATCH]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
samples=${2:-200000}
batch=${3:-5000}
make -s -C "$build" bench/stream_bench || exit 1
dir=$(mktemp -d /tmp/sh5-stream-bench.XXXXXX)
trap '"$top/tests/lib/influxd.sh" stop "$dir"; rm -rf "$dir"' EXIT
read -r port _ < <("$top/tests/lib/influxd.sh" start "$dir") || exit 1
curl -s -o /dev/null -XPOST "http://127.0.0.1:$port/query" --data-urlencode "q=CREATE DATABASE bench"
"$build/bench/stream_bench" "http://127.0.0.1:$port/write?db=bench" "$samples" "$batch"
rc=$?
n=$(curl -s "http://127.0.0.1:$port/query?db=bench" --data-urlencode 'q=SELECT COUNT("CPUTime") FROM "Task"' |
	/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["series"][0]["values"][0][1] if "series" in r else 0)')
echo "in influxd         $n of $samples"
exit $rc
