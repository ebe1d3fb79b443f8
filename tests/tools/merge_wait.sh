#!/bin/bash
# merge_wait.sh - `sh5merge merge --wait`: a job whose node-step files are
# all closed by their writer (bench/gen_job) merges at once; a file whose
# writer did not close it yet (gen_job -K: no /<node>/Totals) or a missing
# node file is waited for up to the bound, then reported with the reason
# and the merge runs on what is there; a file that gets closed while
# merge waits (renamed into place) ends the wait early, with no warning.
set -u
. "$top_srcdir/tests/lib/common.sh"
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
[ -x "$SH5MERGE" ] && [ -x "$GEN" ] || fail "sh5merge or bench/gen_job not built"
W=$(mktemp -d /tmp/merge_wait.XXXXXX)
trap 'rm -rf "$W"' EXIT
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc -l; }
mkdir -p "$W/ok/u" "$W/killed/u"
"$GEN" -d "$W/ok/u" -j 77 -n 2 -t 1 -s 5 -S batch,0 -f sh5 || fail "gen_job"
"$GEN" -d "$W/killed/u" -j 77 -n 2 -t 1 -s 5 -S batch,0 -f sh5 -K ||
	fail "gen_job -K"

# Complete: no wait, no warning.
t=$(now)
"$SH5MERGE" merge -j 77 -p "$W/ok" -u u --wait 30 -o "$W/ok.h5" \
	2>"$W/ok.err" || { cat "$W/ok.err"; fail "merge --wait of a complete job"; }
grep -q warning "$W/ok.err" && { cat "$W/ok.err"; fail "warning for a complete job"; }
[ "$(echo "$(elapsed "$t") < 10" | bc)" = 1 ] || fail "waited for a complete job"
assert_file "$W/ok.h5"

# One file not closed: waited for up to the bound, then named.
mkdir -p "$W/a/u"
cp "$W/ok/u/77_batch_node1.h5" "$W/ok/u/77_0_node1.h5" "$W/a/u/"
cp "$W/killed/u/77_0_node2.h5" "$W/a/u/77_0_node2.h5"
t=$(now)
"$SH5MERGE" merge -j 77 -p "$W/a" -u u --wait 1.5 --allow-partial \
	-o "$W/a.h5" 2>"$W/a.err"
e=$(elapsed "$t")
[ "$(echo "$e >= 1.5" | bc)" = 1 ] || fail "did not wait 1.5 s (${e}s)"
grep -q "job 77: files not complete after 1.5 s (2 of 3 closed): .*77_0_node2.h5: not closed by its writer yet (no /node2/Totals)" "$W/a.err" ||
	{ cat "$W/a.err"; fail "no warning naming the open file"; }
assert_file "$W/a.h5" "the merge runs after the wait"

# A missing node file: named with its step.
mkdir -p "$W/b/u"
cp "$W/ok/u/77_batch_node1.h5" "$W/ok/u/77_0_node1.h5" "$W/b/u/"
"$SH5MERGE" merge -j 77 -p "$W/b" -u u --wait 0.5 -o "$W/b.h5" 2>"$W/b.err"
assert_eq 1 "$?" "exit status with a node missing"
grep -q "files not complete after 0.5 s (2 of 2 closed): step 0: 1 of 2 node files" "$W/b.err" ||
	{ cat "$W/b.err"; fail "no warning naming the step"; }
assert_no_file "$W/b.h5"

# The open file gets closed during the wait: no warning, early end.
( sleep 1; cp "$W/ok/u/77_0_node2.h5" "$W/a/u/.n2" &&
	mv -f "$W/a/u/.n2" "$W/a/u/77_0_node2.h5" ) &
t=$(now)
"$SH5MERGE" merge -j 77 -p "$W/a" -u u --wait 60 -o "$W/c.h5" 2>"$W/c.err" ||
	{ cat "$W/c.err"; fail "merge after the file was closed"; }
wait
e=$(elapsed "$t")
[ "$(echo "$e >= 0.9 && $e < 20" | bc)" = 1 ] || fail "wait took ${e}s"
grep -q warning "$W/c.err" && { cat "$W/c.err"; fail "warning after the file was closed"; }
assert_file "$W/c.h5"

# Usage.
"$SH5MERGE" merge -j 77 -p "$W/ok" -u u --wait x 2>/dev/null
assert_eq 2 "$?" "--wait x"
"$SH5MERGE" merge -j 77 -p "$W/ok" -u u --wait -1 2>/dev/null
assert_eq 2 "$?" "--wait -1"
echo "merge --wait ok"
