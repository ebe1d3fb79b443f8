#!/bin/bash
# sync_bench.sh - speed and memory of `sh5merge sync` (run by hand).
#
#   bench/sync_bench.sh [BUILDDIR] [EVENTS] [PROCS] [NODES]
#
# Generates a trace of EVENTS events (default 10 million) of PROCS
# processes (64) on NODES nodes (8) with sh5_tracegen (built on demand in
# BUILDDIR, default .), then times `sync --method clc` and
# `sync --method offset` on one core (taskset), 3 runs each (the best
# wall time and the best CPU time, user + sys, of the three), and prints
# events per second and their ratio to the 10 M/s target (issue 17; met
# or not by
# CPU time: on a shared machine wall time measures the neighbours too),
# the peak resident memory (/usr/bin/time) in bytes per event, the ratio
# clc/offset, the per-phase times of one clc run (--timing), and the
# peak RSS of one clc run at EVENTS/4, EVENTS/2 and EVENTS (linear in
# events, bytes per event constant).  Files
# go to a temporary directory under ${TMPDIR:-/tmp}, removed at the end.
#
# SYNC_BENCH_BASE=/path/to/an/older/sh5merge times that binary's clc
# runs too, interleaved with this build's (ABAB...), and prints both
# and their ratio: a before/after from one run on the same trace.
set -eu
B=$(cd "${1:-.}" && pwd)
N=${2:-10000000}
P=${3:-64}
M=${4:-8}
SH5=$B/sh5merge/sh5merge
GEN=$B/tests/tools/sh5_tracegen
[ -x "$GEN" ] || make -C "$B" tests/tools/sh5_tracegen >/dev/null
[ -x "$SH5" ] || make -C "$B" sh5merge/sh5merge >/dev/null
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/sync_bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
PIN=""
command -v taskset >/dev/null && PIN="taskset -c 0"

echo "generating $N events, $P processes on $M nodes ..."
$GEN -o $W/in.csv -t $W/truth.txt -e $N -n $P -m $M --mu-directives > $W/gen.txt
EV=$(awk '/^events/ {print $2}' $W/gen.txt)
echo "trace: $EV events, $(stat -c %s $W/in.csv) bytes"

run() {	# method [binary] -> best wall s, best CPU s (user+sys), peak RSS (KB)
	local wall="" cpu="" rss=0 i s u y r c bin=${2:-$SH5}
	for i in 1 2 3; do
		rm -f $W/out.csv	# not the run's work: unlinking 400 MB
		/usr/bin/time -f "%e %U %S %M" -o $W/time.txt $PIN $bin sync $W/in.csv -o $W/out.csv --method $1
		read s u y r < $W/time.txt
		c=$(awk "BEGIN {print $u + $y}")
		if [ -z "$wall" ] || awk "BEGIN {exit !($s < $wall)}"; then
			wall=$s
		fi
		if [ -z "$cpu" ] || awk "BEGIN {exit !($c < $cpu)}"; then
			cpu=$c
		fi
		if [ "$r" -gt "$rss" ]; then rss=$r; fi
	done
	echo "$wall $cpu $rss"
}
if [ -n "${SYNC_BENCH_BASE:-}" ]; then
	# before (the older binary) and after (this build), interleaved
	bw=() bc=() br=() aw=() ac=() ar=()
	for k in 1 2 3; do
		read w c r < <(run clc "$SYNC_BENCH_BASE")
		bw+=($w) bc+=($c) br+=($r)
		read w c r < <(run clc)
		aw+=($w) ac+=($c) ar+=($r)
	done
	cp $W/out.csv $W/after.csv
	rm -f $W/out.csv
	$PIN $SYNC_BENCH_BASE sync $W/in.csv -o $W/out.csv --method clc
	if cmp -s $W/out.csv $W/after.csv; then same="identical"; else same="DIFFERENT"; fi
	echo "before ($SYNC_BENCH_BASE) and after (this build), clc, 3 rounds of 3 runs:"
	printf '%s\n' "${bc[@]}" | sort -n > $W/bc.txt
	printf '%s\n' "${ac[@]}" | sort -n > $W/ac.txt
	awk -v n=$EV -v b="$(sed -n 2p $W/bc.txt)" -v a="$(sed -n 2p $W/ac.txt)" \
	    -v bmin="$(sed -n 1p $W/bc.txt)" -v amin="$(sed -n 1p $W/ac.txt)" \
	    -v bmax="$(sed -n 3p $W/bc.txt)" -v amax="$(sed -n 3p $W/ac.txt)" \
	    -v rb="${br[0]}" -v ra="${ar[0]}" -v same=$same 'BEGIN {
		printf "  before: CPU %.2f s (%.2f-%.2f) = %.2f M events/s (%.2f x target), peak RSS %.1f bytes/event\n",
			b, bmin, bmax, n / b / 1e6, n / b / 10e6, rb * 1024 / n
		printf "  after:  CPU %.2f s (%.2f-%.2f) = %.2f M events/s (%.2f x target), peak RSS %.1f bytes/event\n",
			a, amin, amax, n / a / 1e6, n / a / 10e6, ra * 1024 / n
		printf "  after/before CPU %.3f, RSS %.3f; outputs %s\n", a / b, ra / rb, same
	}'
fi
read tc cc rc < <(run clc)
read to co ro < <(run offset)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (wall time suffers when the machine is shared; CPU time less so)"
awk -v n=$EV -v tc=$tc -v cc=$cc -v rc=$rc -v to=$to -v co=$co -v ro=$ro 'BEGIN {
	printf "clc:    wall %.2f s = %.2f M events/s (%.2f x the 10 M/s target)\n",
		tc, n / tc / 1e6, n / tc / 10e6
	printf "        CPU  %.2f s = %.2f M events/s (%.2f x the 10 M/s target: %s)\n",
		cc, n / cc / 1e6, n / cc / 10e6, (n / cc >= 10e6 ? "met" : "NOT met")
	printf "        peak RSS %.0f MB = %.1f bytes/event\n", rc / 1024, rc * 1024 / n
	printf "offset: wall %.2f s = %.2f M events/s, CPU %.2f s = %.2f M events/s\n",
		to, n / to / 1e6, co, n / co / 1e6
	printf "        peak RSS %.0f MB = %.1f bytes/event\n", ro / 1024, ro * 1024 / n
	printf "ratio clc/offset: wall %.2f, CPU %.2f\n", tc / to, cc / co
}'
echo "phases of one clc run:"
rm -f $W/out.csv
$PIN $SH5 sync $W/in.csv -o $W/out.csv --timing --stats 2>&1 | sed 's/^/  /'
echo "peak RSS of one clc run against trace size:"
for n in $((N / 4)) $((N / 2)) $N; do
	if [ "$n" != "$N" ]; then
		$GEN -o $W/in$n.csv -t $W/truth$n.txt -e $n -n $P -m $M \
			--mu-directives > $W/gen$n.txt
		in=$W/in$n.csv
		ev=$(awk '/^events/ {print $2}' $W/gen$n.txt)
	else
		in=$W/in.csv
		ev=$EV
	fi
	rm -f $W/out.csv
	/usr/bin/time -f "%e %U %S %M" -o $W/time.txt $PIN $SH5 sync $in -o $W/out.csv --method clc
	read s u y r < $W/time.txt
	awk -v n=$ev -v b=$(stat -c %s $in) -v r=$r -v u=$u -v y=$y 'BEGIN {
		printf "  %9d events (%6.1f MB CSV): CPU %.2f s = %.2f M events/s, peak RSS %6.1f MB = %.1f bytes/event\n",
		       n, b / 1e6, u + y, n / (u + y) / 1e6, r / 1024, r * 1024 / n }'
	[ "$in" = $W/in.csv ] || rm -f $in
done
