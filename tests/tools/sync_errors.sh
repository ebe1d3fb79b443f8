#!/bin/bash
# sync_errors.sh - bad traces: `sh5merge sync` exits 1 with the line
# number in "sh5merge: FILE:LINE: reason" and writes nothing; with
# --allow-partial it writes what it could correct (exit 0) and still
# reports the rest; usage errors exit 2.
set -u
B=${top_builddir:-.}
SH5=$B/sh5merge/sh5merge
W=$(mktemp -d /tmp/sync_errors.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

HDR='#sh5-trace 1'
# case name | expected line | expected text | trace body (after line 1)
check() {
	local name=$1 line=$2 text=$3 body=$4 rc
	printf '%s\n%b' "$HDR" "$body" > $W/$name.csv
	rm -f $W/$name.out
	$SH5 sync $W/$name.csv -o $W/$name.out 2> $W/$name.err
	rc=$?
	[ $rc -eq 1 ] || { cat $W/$name.err; fail "$name: exit $rc, want 1"; }
	grep -q "^sh5merge: $W/$name.csv:$line: .*$text" $W/$name.err ||
		{ cat $W/$name.err; fail "$name: no '$line: ...$text'"; }
	[ -e $W/$name.out ] && fail "$name: output written despite the error"
	ls $W | grep -q "$name.out.tmp" && fail "$name: temporary left"
	echo "ok: $name -> $(head -1 $W/$name.err)"
}

check unmatched_send 3 "unmatched SEND" '0,10,INT,,,,,\n0,20,SEND,1,0,0,,8\n1,30,INT,,,,,\n'
check unmatched_recv 2 "unmatched RECV" '1,10,RECV,0,0,0,,8\n0,20,INT,,,,,\n'
check tag_mismatch 3 "unmatched RECV" '0,10,SEND,1,1,0,,8\n1,30,RECV,0,2,0,,8\n'
check backwards 4 "time goes backwards" '0,10,INT,,,,,\n1,5,INT,,,,,\n0,9,INT,,,,,\n'
check backwards_offset 3 "time goes backwards" '0,10,INT,,,,,\n0,9,OFFSET,5,1,,,\n'
check unknown_kind 3 "unknown kind 'FOO'" '0,10,INT,,,,,\n0,11,FOO,,,,,\n'
check unknown_op 2 "unknown collective operation" '0,10,CBEGIN,BARRIERX,,0,,0\n0,11,CEND,BARRIERX,,0,,0\n'
check few_fields 2 "want 8 comma-separated fields" '0,10,INT,,,,\n'
check bad_time 2 "bad time" '0,1x0,INT,,,,,\n'
check huge_time 2 "bad time" '0,99999999999999999999,INT,,,,,\n'
check bad_loc 2 "bad location" '-1,10,INT,,,,,\n'
check int_fields 2 "must be empty" '0,10,INT,1,,,,\n'
check missing_root 2 "needs a root" '0,10,CBEGIN,BCAST,,0,,0\n0,11,CEND,BCAST,,0,,0\n'
check missing_member 3 "member 1 never calls it" '#comm 5 0 1\n0,10,CBEGIN,BARRIER,,5,,0\n0,20,CEND,BARRIER,,5,,0\n1,5,INT,,,,,\n'
check op_mismatch 4 "BCAST root 1 here but BARRIER" '0,10,CBEGIN,BARRIER,,0,,0\n0,20,CEND,BARRIER,,0,,0\n1,10,CBEGIN,BCAST,,0,1,0\n1,20,CEND,BCAST,,0,1,0\n'
check root_mismatch 4 "BCAST root 1 here but BCAST root 0" '0,10,CBEGIN,BCAST,,0,0,0\n0,20,CEND,BCAST,,0,0,0\n1,10,CBEGIN,BCAST,,0,1,0\n1,20,CEND,BCAST,,0,1,0\n'
check cend_mismatch 3 "does not repeat" '0,10,CBEGIN,BARRIER,,0,,0\n0,20,CEND,ALLREDUCE,,0,,0\n'
check no_cend 2 "CBEGIN without a CEND" '0,10,CBEGIN,BARRIER,,0,,0\n0,20,INT,,,,,\n'
check cend_alone 2 "CEND at location 0 without a CBEGIN" '0,10,CEND,BARRIER,,0,,0\n'
check not_member 3 "not a member of communicator 3" '#comm 3 1\n0,10,CBEGIN,BARRIER,,3,,0\n0,11,CEND,BARRIER,,3,,0\n1,10,CBEGIN,BARRIER,,3,,0\n1,11,CEND,BARRIER,,3,,0\n'
check undeclared_comm 2 "undeclared communicator 4" '0,10,CBEGIN,BARRIER,,4,,0\n0,11,CEND,BARRIER,,4,,0\n'
check late_directive 3 "directive after the first data line" '0,10,INT,,,,,\n#comm 2 0\n'
check bad_mu 2 "malformed #mu" '#mu -3\n0,10,INT,,,,,\n'
check cycle 2 "cyclic dependency" '0,10,RECV,1,0,0,,8\n0,20,SEND,1,1,0,,8\n1,10,RECV,0,1,0,,8\n1,20,SEND,0,0,0,,8\n'

# Not a trace at all, and version 2.
printf 'loc,time\n' > $W/nohdr.csv
$SH5 sync $W/nohdr.csv -o $W/nohdr.out 2> $W/e; [ $? -eq 1 ] || fail "no header: exit"
grep -q "nohdr.csv:1: not an event trace" $W/e || fail "no header: message"
printf '#sh5-trace 2\n' > $W/v2.csv
$SH5 sync $W/v2.csv -o $W/v2.out 2> $W/e; [ $? -eq 1 ] || fail "v2: exit"
grep -q "v2.csv:1: unsupported event-trace version '2'" $W/e || fail "v2: message"
$SH5 sync $W/missing.csv -o $W/m.out 2> $W/e; [ $? -eq 1 ] || fail "missing: exit"
grep -q "missing.csv: No such file" $W/e || fail "missing: message"

# A pipe cannot be read twice.
printf '#sh5-trace 1\n0,1,INT,,,,,\n' | $SH5 sync /dev/stdin -o $W/pipe.out 2> $W/e
[ $? -eq 1 ] || fail "pipe: exit"
grep -q "not a regular file" $W/e || fail "pipe: message"
[ -e $W/pipe.out ] && fail "pipe: output written"

# Usage errors exit 2; --help exits 0.
$SH5 sync $W/unmatched_send.csv 2>/dev/null; [ $? -eq 2 ] || fail "no -o: want 2"
$SH5 sync $W/unmatched_send.csv -o $W/x --method nope 2>/dev/null; [ $? -eq 2 ] || fail "bad method: want 2"
$SH5 sync $W/unmatched_send.csv -o $W/x --mu-ns -4 2>/dev/null; [ $? -eq 2 ] || fail "bad mu: want 2"
$SH5 sync $W/unmatched_send.csv -o $W/x --bogus 2>/dev/null; [ $? -eq 2 ] || fail "bad option: want 2"
$SH5 sync --help | grep -q "allow-partial" || fail "--help"

# An existing output stays untouched when the input is bad.
echo keep > $W/keep.out
$SH5 sync $W/unmatched_send.csv -o $W/keep.out 2>/dev/null
[ "$(cat $W/keep.out)" = keep ] || fail "existing output overwritten on error"

# --allow-partial: what can be corrected is, the rest reported.
printf '%s\n%b' "$HDR" '#mu 100\n0,100,SEND,1,0,0,,8\n1,50,RECV,0,0,0,,8\n1,60,INT,,,,,\n0,200,SEND,1,9,0,,8\n1,40,INT,,,,,\n2,10,FOO,,,,,\n' > $W/partial.csv
$SH5 sync $W/partial.csv -o $W/partial.out --allow-partial 2> $W/e || { cat $W/e; fail "partial: exit"; }
cat $W/e
grep -q "partial.csv:6: left uncorrected: unmatched SEND" $W/e || fail "partial: unmatched not reported"
grep -q "partial.csv:7: left uncorrected: time goes backwards" $W/e || fail "partial: backwards not reported"
grep -q "partial.csv:8: left uncorrected: unknown kind" $W/e || fail "partial: unknown kind not reported"
# The matched message is corrected (RECV at >= 100 + 100), the bad line
# is copied unchanged, local order holds at location 1.
sed -n 4p $W/partial.out | grep -q '^1,200,RECV' || fail "partial: message not corrected: $(sed -n 4p $W/partial.out)"
sed -n 8p $W/partial.out | grep -qx '2,10,FOO,,,,,' || fail "partial: bad line not copied"
t5=$(sed -n 5p $W/partial.out | cut -d, -f2); t7=$(sed -n 7p $W/partial.out | cut -d, -f2)
[ "$t5" -ge 200 ] && [ "$t7" -ge "$t5" ] || fail "partial: local order at location 1 ($t5, $t7)"
# A cycle with --allow-partial is broken and reported.
$SH5 sync $W/cycle.csv -o $W/cycle.out --allow-partial 2> $W/e || fail "partial cycle: exit"
grep -q "cyclic dependency" $W/e || fail "partial cycle: not reported"
[ -s $W/cycle.out ] || fail "partial cycle: no output"
echo "sync_errors: all passed"
