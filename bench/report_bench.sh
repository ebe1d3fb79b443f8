#!/bin/bash
# report_bench.sh - size and time of `sh5merge report` on a large job.
#
#   bench/report_bench.sh [BUILDDIR] [JOB.h5] [NODES] [TASKS]
#
# Generates (unless given) a job of NODES (1024) nodes x TASKS (2) tasks
# x 3600 samples at 1 s, with Energy, synchronized
# (tests/tools/exports_mkjob.py), then prints the report's size (target
# <= 5 MB), the time sh5merge takes to write it, and the time
# chromium-headless-shell takes to load and render it (--dump-dom of
# the finished page, when the browser is installed).  Run by hand; not
# part of make check.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here}
job=${2:-}
nodes=${3:-1024}
tasks=${4:-2}
SH5MERGE=$build/sh5merge/sh5merge
[ -x "$SH5MERGE" ] || { echo "no $SH5MERGE (pass the build dir)"; exit 1; }
W=$(mktemp -d /tmp/report_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$job" ]; then
	job=$W/job.h5
	echo "generating $job ($nodes nodes x $tasks tasks x 3600 samples)..."
	/usr/bin/python3 "$here/tests/tools/exports_mkjob.py" "$job" \
		--nodes "$nodes" --tasks "$tasks" --samples 3600 --sync \
		--spike 10:41:1000
fi
now() { date +%s.%N; }
t0=$(now)
"$SH5MERGE" -q report "$job" -o "$W/report.html"
t1=$(now)
size=$(stat -c %s "$W/report.html")
printf 'report: %s bytes (%.2f MB, target <= 5 MB: %s), written in %.2f s\n' \
	"$size" "$(echo "$size / 1000000" | bc -l)" \
	"$([ "$size" -le 5000000 ] && echo ok || echo OVER)" \
	"$(echo "$t1 - $t0" | bc -l)"
CHROME=$(command -v chromium-headless-shell || true)
if [ -n "$CHROME" ]; then
	t0=$(now)
	"$CHROME" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$W/udd" --dump-dom \
		"file://$W/report.html" >"$W/dom.html" 2>/dev/null
	t1=$(now)
	grep -q 'data-ready="1"' "$W/dom.html" && r=rendered || r="NOT rendered"
	printf 'browser: %s in %.2f s (chromium-headless-shell, load + script + DOM dump; %d figures)\n' \
		"$r" "$(echo "$t1 - $t0" | bc -l)" \
		"$(grep -o '<figure' "$W/dom.html" | wc -l)"
fi
