#!/bin/bash
# sync_clc.sh - `sh5merge sync` on generated traces with known truth.
#
# The generator simulates processes on nodes whose clocks have offsets
# (up to 20 s), linear drift (up to 100 ppm) and a sinusoidal wobble, and
# writes OFFSET measurements with noise.  Asserted, with an independent
# Python reading of the contract (sync_check.py):
#  - every line is written back, only event times change;
#  - `--method offset` is exactly the piecewise-linear interpolation, and
#    its error against the truth E is within the generator's analytic
#    bound (noise + h^2/8 max|C''| + rounding);
#  - the offset pass leaves violations (so the test means something) and
#    `clc` leaves none, for p2p and collectives, with the given mu and
#    with the estimated one;
#  - local order is kept;
#  - the clc result is within [-E, 3E] of the truth (doc/timesync.md:
#    CLC never moves an event backwards, the forward pass never puts an
#    event later than truth + E when mu <= the true minimum latency, and
#    backward amortization adds at most one jump, itself <= 2E).
set -u
B=${top_builddir:-.}
S=${top_srcdir:-.}
GEN=$B/tests/tools/sh5_tracegen
SH5=$B/sh5merge/sh5merge
CHK="/usr/bin/python3 $S/tests/tools/sync_check.py"
[ -x /usr/bin/python3 ] || { echo "no /usr/bin/python3"; exit 77; }
[ -x "$GEN" ] || { echo "generator not built"; exit 99; }
W=$(mktemp -d /tmp/sync_clc.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for cfg in "-n 12 -m 3 -s 1 --mu-directives" "-n 8 -m 2 -s 5 --mu-directives --wobble-ns 8000" \
	   "-n 6 -m 6 -s 9 --mu-directives --drift-ppm 1000 --offset-max-ns 3e10"; do
	echo "== generator $cfg"
	$GEN -o $W/in.csv -t $W/truth.txt -e 15000 $cfg > $W/gen.txt || fail "generator"
	bound=$(awk '/^offset_error_bound_ns/ {print $2}' $W/gen.txt)

	$SH5 sync $W/in.csv -o $W/off.csv --method offset || fail "sync offset"
	$CHK same $W/in.csv $W/off.csv || fail "offset: lines changed"
	$CHK offset $W/in.csv $W/off.csv || fail "offset: not the interpolation"
	read lo hi < <($CHK truth $W/off.csv $W/truth.txt)
	E=$(( ${lo#-} > ${hi#-} ? ${lo#-} : ${hi#-} ))
	echo "offset error [$lo, $hi], E=$E, analytic bound $bound"
	[ "$E" -le "$bound" ] || fail "offset error $E above the bound $bound"
	$CHK violations $W/off.csv > $W/v.txt && fail "offset pass left no violation: test too weak"
	cat $W/v.txt

	$SH5 sync $W/in.csv -o $W/clc.csv --stats > $W/stats.txt || fail "sync clc"
	cat $W/stats.txt
	grep -Eq '^p2p clock-condition violations +[0-9]+ +[0-9]+ +0$' $W/stats.txt || fail "stats: p2p after clc"
	grep -Eq '^collective violations \(ends\) +[0-9]+ +[0-9]+ +0$' $W/stats.txt || fail "stats: coll after clc"
	$CHK same $W/in.csv $W/clc.csv || fail "clc: lines changed"
	$CHK violations $W/clc.csv || fail "clc left violations"
	$CHK order $W/in.csv $W/clc.csv || fail "clc broke local order"
	read lo hi < <($CHK truth $W/clc.csv $W/truth.txt)
	echo "clc error [$lo, $hi], allowed [-$E, $((3 * E))]"
	[ "$lo" -ge "-$E" ] && [ "$hi" -le $((3 * E)) ] || fail "clc error outside [-E, 3E]"

	# Estimated mu: drop the #mu directives.
	grep -v '^#mu' $W/in.csv > $W/in2.csv
	$SH5 sync $W/in2.csv -o $W/clc2.csv --stats > $W/stats2.txt || fail "sync clc, estimated mu"
	mu=$(sed -n 's/^mu: intra-node \([0-9]*\) ns (\([a-z :0]*\)), inter-node \([0-9]*\) ns.*/\1 \3/p' $W/stats2.txt)
	echo "estimated mu (intra inter): $mu"
	$CHK violations $W/clc2.csv --mu-intra ${mu% *} --mu-inter ${mu#* } || fail "clc (estimated mu) left violations"
	$CHK order $W/in2.csv $W/clc2.csv || fail "clc (estimated mu) broke local order"
done

# Without OFFSET lines CLC alone must still remove every violation.
$GEN -o $W/in.csv -t $W/truth.txt -e 5000 -n 4 -m 2 --no-offsets --offset-max-ns 3000 --mu-directives > /dev/null
$SH5 sync $W/in.csv -o $W/clc.csv || fail "sync without offsets"
$CHK violations $W/clc.csv || fail "clc without offsets left violations"
$CHK order $W/in.csv $W/clc.csv || fail "order without offsets"
echo "sync_clc: all passed"
