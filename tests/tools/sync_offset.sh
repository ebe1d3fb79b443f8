#!/bin/bash
# sync_offset.sh - `sh5merge sync --method offset` on hand-made traces
# with known answers: one offset = constant shift (not a no-op), two
# offsets = linear (with extrapolation at both ends), three = piecewise,
# none = unchanged; times near 1.8e18 keep every nanosecond; comments,
# blank lines, directives and OFFSET lines come back byte for byte;
# output goes through a temporary file (no partial output).
set -u
B=${top_builddir:-.}
SH5=$B/sh5merge/sh5merge
W=$(mktemp -d /tmp/sync_offset.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > $W/in.csv <<'T'
#sh5-trace 1
# loc 1: one offset, loc 2: two, loc 3: three, loc 4: none
#comm 7 2 1

1,1800000000000000100,INT,,,,,
1,1800000000000000200,OFFSET,-50,10,,,
1,1800000000000000300,INT,,,,,
2,1800000000000000000,INT,,,,,
2,1800000000000001000,OFFSET,0,10,,,
2,1800000000000002000,INT,,,,,
2,1800000000000003000,OFFSET,1000,10,,,
2,1800000000000004000,INT,,,,,
3,1800000000000000000,OFFSET,0,10,,,
3,1800000000000000500,INT,,,,,
3,1800000000000001000,OFFSET,100,10,,,
3,1800000000000001500,INT,,,,,
3,1800000000000002000,OFFSET,-100,10,,,
3,1800000000000003000,INT,,,,,
# a comment in the middle stays
4,-5,INT,,,,,
4,7,INT,,,,,
T
cat > $W/want.csv <<'T'
#sh5-trace 1
# loc 1: one offset, loc 2: two, loc 3: three, loc 4: none
#comm 7 2 1

1,1800000000000000050,INT,,,,,
1,1800000000000000200,OFFSET,-50,10,,,
1,1800000000000000250,INT,,,,,
2,1799999999999999500,INT,,,,,
2,1800000000000001000,OFFSET,0,10,,,
2,1800000000000002500,INT,,,,,
2,1800000000000003000,OFFSET,1000,10,,,
2,1800000000000005500,INT,,,,,
3,1800000000000000000,OFFSET,0,10,,,
3,1800000000000000550,INT,,,,,
3,1800000000000001000,OFFSET,100,10,,,
3,1800000000000001500,INT,,,,,
3,1800000000000002000,OFFSET,-100,10,,,
3,1800000000000002700,INT,,,,,
# a comment in the middle stays
4,-5,INT,,,,,
4,7,INT,,,,,
T
$SH5 sync $W/in.csv -o $W/out.csv --method offset || fail "sync"
diff -u $W/want.csv $W/out.csv || fail "offset result differs"
# clc on a trace without any message changes nothing more.
$SH5 sync $W/in.csv -o $W/out2.csv || fail "sync clc"
diff -u $W/want.csv $W/out2.csv || fail "clc without messages moved events"
# No final newline: kept as is.
printf '#sh5-trace 1\n0,10,INT,,,,,\n0,20,OFFSET,5,1,,,' > $W/nonl.csv
$SH5 sync $W/nonl.csv -o $W/nonl.out --method offset || fail "no final newline"
[ "$(cat $W/nonl.out)" = "$(printf '#sh5-trace 1\n0,15,INT,,,,,\n0,20,OFFSET,5,1,,,')" ] || fail "no-final-newline output"
[ "$(tail -c 1 $W/nonl.out | od -An -c | tr -d ' ')" = "," ] || fail "a newline was added"
# No temporary file left behind.
ls $W | grep -q tmp && fail "temporary file left"
echo "sync_offset: all passed"
