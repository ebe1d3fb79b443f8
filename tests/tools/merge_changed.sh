#!/bin/bash
# merge_changed.sh: an input cut short, replaced or rewritten while
# sh5merge reads it (a writer still at work, a clean-up) is reported as
# "FILE: changed while being read (...)", not as damage: exit 1, no job
# file and no temporary left, every input as it was (the changed one as
# the other process left it).  SH5MERGE_TEST_HOLD=NAME:DIR holds the
# reader of NAME once it has read it whole so that the change falls
# while HDF5 reads it (a file cut short under its map: SIGBUS); with
# NAME --remove-inputs it holds the merge before it removes its inputs
# (an input changed since it was read is kept).
. "$top_srcdir/tests/tools/merge_lib.sh"

J=610
fresh() { # fresh NAME: a clean profile dir prof-NAME/u with job $J
	rm -rf "prof-$1" hold
	mkdir -p "prof-$1/u" hold
	$GEN -d "prof-$1/u" -j $J -n 4 -t 2 -s 300 -S 0 -f mixed -r 5 ||
		fail "gen_job"
	P="prof-$1"
	D="prof-$1/u"
}
# held_change NAME FILE CMD...: merge job $J of $P with the reader of
# FILE held; once held, run CMD (the change), then let it go.  The
# merge's stderr in $T/err, its exit status in $rc.
held_change() {
	local name=$1 file=$2 pid k
	shift 2
	(cd "$T" && for f in $D/*.h5; do
		[ "$(basename $f)" = "$file" ] || md5sum "$f"; done) >"$T/sums"
	SH5MERGE_TEST_HOLD="$file:$T/hold" timeout 120 \
		$SH5MERGE merge -j $J -p $P -u u \
		-o "$T/job-${name// /_}.h5" ${EXTRA:-} 2>"$T/err" &
	pid=$!
	for k in $(seq 300); do
		[ -e "$T/hold/held" ] && break
		sleep 0.1
	done
	[ -e "$T/hold/held" ] || { kill $pid; fail "$name: reader not held"; }
	"$@" || fail "$name: the change"
	touch "$T/hold/go"
	wait $pid
	rc=$?
}
# changed_ok NAME FILE PATTERN: the merge failed for FILE's change.
changed_ok() {
	local name=$1 file=$2 pat=$3
	[ $rc -eq 1 ] || { cat "$T/err"; fail "$name: exit $rc, expected 1"; }
	grep -Eq "^sh5merge: $D/$file: changed while being read \($pat\)" \
		"$T/err" || { cat "$T/err"; fail "$name: no '$pat' for $file"; }
	grep -q "input changed while being read (first $D/$file): no job file written" \
		"$T/err" || { cat "$T/err"; fail "$name: no final error"; }
	! grep -q "crashes HDF5" "$T/err" ||
		{ cat "$T/err"; fail "$name: told as a crash of HDF5"; }
	[ ! -e "$T/job-${name// /_}.h5" ] || fail "$name: job file written"
	no_temp "$T"
	md5sum --quiet -c "$T/sums" || fail "$name: another input changed"
	echo "ok: $name"
}

# Ours (node2) and stock's (node3), cut short under the reader.
for f in ${J}_0_node2.h5 ${J}_0_node3.h5; do
	fresh cut
	size=$(stat -c %s $D/$f)
	half=$(( size / 2 ))
	held_change "cut $f" $f truncate -s $half $D/$f
	changed_ok "cut $f" $f "cut short: $size bytes when the merge began, $half now"
	[ "$(stat -c %s $D/$f)" = $half ] || fail "cut $f: input changed by merge"
done

# Replaced by another file (a rename over it), grown, rewritten in place.
fresh repl
f=${J}_0_node1.h5
cp $D/${J}_0_node2.h5 other.h5
size=$(stat -c %s $D/$f)
held_change replaced $f mv other.h5 $D/$f
changed_ok replaced $f "replaced by another file: $size bytes when the merge began, [0-9]+ now"
fresh grow
size=$(stat -c %s $D/$f)
held_change grew $f sh -c "head -c 4096 /dev/zero >> $D/$f"
changed_ok grew $f "grew: $size bytes when the merge began, $(( size + 4096 )) now"
fresh rewrite
size=$(stat -c %s $D/$f)
held_change rewritten $f touch -d '2001-01-01' $D/$f
changed_ok rewritten $f "rewritten: $size bytes, modified after the merge began"

# Rewritten with its modification time put back (touch -r): the inode
# change time tells.
fresh ctime
size=$(stat -c %s $D/$f)
put_back() { # put_back FILE: one byte rewritten, the mtime restored
	touch -r "$1" ref && printf x | dd of="$1" bs=1 seek=2000 \
		conv=notrunc status=none && touch -r ref "$1"
}
held_change "rewritten, mtime put back" $f put_back $D/$f
changed_ok "rewritten, mtime put back" $f "its inode changed after the merge began: $size bytes, the same modification time"

# --remove-inputs removes only inputs unchanged since the merge listed
# them: one rewritten with its mtime put back and one replaced by a copy
# of itself (same size and mtime) once the job file is in place are
# kept, the others removed; the job file holds what was read.
fresh remove
n1=${J}_0_node1.h5 n2=${J}_0_node2.h5
cp -a $D orig
EXTRA=--remove-inputs held_change "--remove-inputs after a change" \
	--remove-inputs sh -c "$(declare -f put_back); put_back $D/$n1 &&
	cp -p $D/$n2 n2.new && mv n2.new $D/$n2"
[ $rc -eq 0 ] || { cat "$T/err"; fail "--remove-inputs: exit $rc"; }
grep -q "$D/$n1: not removed: it changed during the merge (its inode changed" \
	"$T/err" || { cat "$T/err"; fail "--remove-inputs: $n1 not reported"; }
grep -q "$D/$n2: not removed: it changed during the merge (replaced by another file" \
	"$T/err" || { cat "$T/err"; fail "--remove-inputs: $n2 not reported"; }
[ -e $D/$n1 ] && [ -e $D/$n2 ] || fail "--remove-inputs: a changed input removed"
[ ! -e $D/${J}_0_node3.h5 ] && [ ! -e $D/${J}_0_node4.h5 ] ||
	fail "--remove-inputs: an unchanged input kept"
$CHECK job "$T/job---remove-inputs_after_a_change.h5" orig/*.h5 ||
	fail "--remove-inputs: values"
rm -rf orig
echo "ok: --remove-inputs keeps inputs changed after they were read"

# A FIFO renamed over the input once it has been checked (a task racing
# the merge): HDF5 opens what was checked, never the FIFO (which blocked
# the merge for ever), in every way of reading.
for how in "" SH5MERGE_NO_INMEM=1 SH5MERGE_TWO_PASS=1; do
	fresh fifo
	size=$(stat -c %s $D/$f)
	mkfifo fifo.h5
	([ -z "$how" ] || export "$how"
	 held_change "FIFO renamed over it ${how:-(default)}" $f mv fifo.h5 $D/$f
	 [ $rc -ne 124 ] || fail "FIFO renamed over it ${how}: the merge hung"
	 changed_ok "FIFO renamed over it ${how:-(default)}" $f \
		"replaced by another file: $size bytes when the merge began, 0 now") ||
		exit 1
	[ -p $D/$f ] || fail "FIFO renamed over it: not left as it was"
done

# The same with the checking children of the two-pass way, and with
# --allow-partial (a change is not a salvage: still no job file).
f=${J}_0_node2.h5
fresh cut2
size=$(stat -c %s $D/$f)
SH5MERGE_TWO_PASS=1 held_change "cut, two passes" $f truncate -s 8192 $D/$f
changed_ok "cut, two passes" $f "cut short: $size bytes when the merge began, 8192 now"
fresh cut3
EXTRA=--allow-partial held_change "cut, --allow-partial" $f truncate -s 8192 $D/$f
changed_ok "cut, --allow-partial" $f "cut short: $size bytes when the merge began, 8192 now"

# Unchanged inputs with the hook set: merged as without it.
fresh same
held_change unchanged $f true
[ $rc -eq 0 ] || { cat "$T/err"; fail "unchanged: exit $rc"; }
$CHECK job "$T/job-unchanged.h5" $D/*.h5 || fail "unchanged: values"
echo "ok: unchanged inputs merged with the hold"
