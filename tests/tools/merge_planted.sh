#!/bin/bash
# merge_planted.sh: a profile directory is writable by the job's user, so
# a task can plant an entry named like a node-step file: a symlink to a
# file the user cannot read (or to /dev/zero), a FIFO, a directory.  The
# merge (as root, by an administrator) reads the entry itself, never what a
# symlink names, and never blocks: each is one error naming the file and
# what it is, exit 1, no job file; --allow-partial merges the others and
# records it in /Merge/Inputs; --wait and --remove-inputs leave it (and a
# symlink's target) alone.  Both ways of reading (one pass, two passes)
# and HDF5 reading by path (SH5MERGE_NO_INMEM=1).  A user directory that
# is a symlink is not listed, a hard link to another uid's file not read;
# the job file's temporary is never truncated by its name.
. "$top_srcdir/tests/tools/merge_lib.sh"

J=620
mkdir -p prof/u secret
$GEN -d prof/u -j $J -n 3 -t 2 -s 200 -S 0 -f mixed -r 5 || fail "gen_job"
# node 4 of the same job, in a directory only root may enter: what a
# symlink would smuggle into the user's job file.
$GEN -d secret -j $J -n 4 -t 2 -s 200 -S 0 -f mixed -r 5 || fail "gen_job"
rm -f secret/${J}_0_node[123].h5
chmod 700 secret
chmod 600 secret/${J}_0_node4.h5
P=prof
D=prof/u
E=$D/${J}_0_node4.h5
sums=$(cd $D && md5sum ${J}_0_node[123].h5)
secret_sum=$(md5sum <secret/${J}_0_node4.h5)

# planted KIND: make $E that kind of entry.
planted() {
	rm -rf "$E"
	case $1 in
	symlink) ln -s "$T/secret/${J}_0_node4.h5" "$E" ;;
	devzero) ln -s /dev/zero "$E" ;;
	dangling) ln -s "$T/nowhere.h5" "$E" ;;
	fifo) mkfifo "$E" ;;
	dir) mkdir "$E" ;;
	esac
}
# refused NAME PATTERN MERGE-ARGS...: the merge ends (not a hang: 60 s),
# exit 1, names $E and PATTERN, writes nothing, changes nothing.
refused() {
	local name=$1 pat=$2 rc
	shift 2
	timeout 60 $SH5MERGE merge -j $J -p $P -u u -o job.h5 "$@" \
		>out 2>err
	rc=$?
	[ $rc -ne 124 ] || fail "$name: the merge hung"
	[ $rc -eq 1 ] || { cat err; fail "$name: exit $rc, expected 1"; }
	grep -Eq "^sh5merge: (warning: )?$E: $pat" err ||
		{ cat err; fail "$name: no '$E: $pat'"; }
	[ ! -e job.h5 ] || fail "$name: job file written"
	no_temp .
	[ "$(cd $D && md5sum ${J}_0_node[123].h5)" = "$sums" ] ||
		fail "$name: an input changed"
	[ "$(md5sum <secret/${J}_0_node4.h5)" = "$secret_sum" ] ||
		fail "$name: the symlink's target changed"
	echo "ok: $name"
}

link='is a symbolic link \(not followed\)'
for how in "" SH5MERGE_NO_INMEM=1 SH5MERGE_TWO_PASS=1; do
	for k in symlink devzero dangling; do
		planted $k
		([ -z "$how" ] || export "$how"
		 refused "$k ${how:-(default)}" "$link")
	done
	planted fifo
	([ -z "$how" ] || export "$how"
	 refused "FIFO ${how:-(default)}" 'is a FIFO, not a regular file')
	planted dir
	([ -z "$how" ] || export "$how"
	 refused "directory ${how:-(default)}" \
		'is a directory, not a regular file')
done

# --wait: a FIFO is not waited on for ever (nor opened blocking).
planted fifo
refused "FIFO with --wait" 'is a FIFO, not a regular file' --wait 1
grep -q "files not complete after 1 s" err || { cat err; fail "--wait: no note"; }

# --allow-partial: the others merged, the planted one recorded, not its
# target's node; --remove-inputs removes only what was merged.
for k in symlink fifo; do
	planted $k
	cp -a $D keep
	timeout 60 $SH5MERGE merge -j $J -p $P -u u -o job-$k.h5 \
		--allow-partial --remove-inputs 2>err ||
		{ cat err; fail "$k --allow-partial: exit $?"; }
	$PY - job-$k.h5 "$E" <<'PY' || { cat err; fail "$k --allow-partial: job file"; }
import sys, h5py
f = h5py.File(sys.argv[1], "r")
nodes = sorted(f["Steps/0/Nodes"].keys())
assert nodes == ["node1", "node2", "node3"], nodes
row = [r for r in f["Merge/Inputs"][:] if r["File"].decode() == sys.argv[2]]
assert len(row) == 1, row
assert row[0]["Status"] == b"skipped", row
r = row[0]["Reason"].decode()
assert "symbolic link" in r or "FIFO" in r, r
assert f["Merge"].attrs["Partial"] == 1
PY
	[ -L "$E" ] || [ -p "$E" ] || fail "$k: the planted entry removed"
	! ls $D/${J}_0_node[123].h5 2>/dev/null || fail "$k: merged inputs kept"
	[ "$(md5sum <secret/${J}_0_node4.h5)" = "$secret_sum" ] ||
		fail "$k: the symlink's target changed"
	rm -rf $D && mv keep $D
	echo "ok: $k with --allow-partial --remove-inputs"
done

# Under strace: the symlink's target is never opened, the FIFO never
# opened without O_NONBLOCK.
if command -v strace >/dev/null; then
	planted symlink
	traced SH5MERGE_TWO_PASS "" openat opens.txt -j $J -p $P -u u \
		-o job-s.h5 --allow-partial 2>/dev/null || fail "merge under strace"
	! grep -q 'secret/' opens.txt || { grep secret/ opens.txt; fail "the symlink's target opened"; }
	planted fifo
	traced SH5MERGE_TWO_PASS "" openat opens.txt -j $J -p $P -u u \
		-o job-f.h5 --allow-partial 2>/dev/null || fail "merge under strace"
	grep "${J}_0_node4.h5\"" opens.txt | grep -v O_NONBLOCK | grep . &&
		fail "the FIFO opened blocking"
	echo "ok: under strace, the target never opened, the FIFO never blocking"
fi
rm -rf "$E"

# A user directory that is a symlink (to a directory of planted files):
# not listed, one error naming it, also under --wait.
ln -s u $P/alias
refused_dir() {
	local rc
	timeout 60 $SH5MERGE merge -j $J -p $P -u alias -o job-a.h5 "$@" \
		>out 2>err
	rc=$?
	[ $rc -eq 1 ] || { cat err; fail "symlinked user dir $*: exit $rc"; }
	grep -q "^sh5merge: .*$P/alias: is a symbolic link (not followed)" err ||
		{ cat err; fail "symlinked user dir $*: message"; }
	[ ! -e job-a.h5 ] || fail "symlinked user dir $*: job file written"
}
refused_dir
refused_dir --wait 1
rm $P/alias
echo "ok: a symlinked user directory is not listed"

# A hard link to a file another uid owns (what a task can make where
# fs.protected_hardlinks is off; root makes it here): not read.  A hard
# link to a file of the directory's owner is merged as any input.
if [ "$(id -u)" = 0 ]; then
	mkdir -p hl/n
	cp $D/${J}_0_node[123].h5 hl/n/
	chown -R 65534 hl/n
	ln secret/${J}_0_node4.h5 hl/n/${J}_0_node4.h5
	for how in "" SH5MERGE_TWO_PASS=1; do
		([ -z "$how" ] || export "$how"
		 timeout 60 $SH5MERGE merge -j $J -p hl -u n -o job-h.h5 \
			>out 2>err
		 rc=$?
		 [ $rc -eq 1 ] || { cat err; fail "hard link ${how}: exit $rc"; }
		 grep -q "^sh5merge: hl/n/${J}_0_node4.h5: a hard link (2 links) to a file of uid 0, not of the directory's owner (uid 65534): not read" err ||
			{ cat err; fail "hard link ${how}: message"; }
		 [ ! -e job-h.h5 ] || fail "hard link ${how}: job file written") ||
			exit 1
	done
	rm hl/n/${J}_0_node4.h5
	ln hl/n/${J}_0_node3.h5 hl/n/copy3.h5
	timeout 60 $SH5MERGE -q merge -j $J -p hl -u n -o job-h.h5 2>err ||
		{ cat err; fail "a hard link of the owner's: not merged"; }
	[ "$(md5sum <secret/${J}_0_node4.h5)" = "$secret_sum" ] ||
		fail "hard link: the target changed"
	echo "ok: a hard link to another uid's file refused, the owner's merged"
fi

# The job file's temporary of an abandoned early pass (a mixed job: the
# one-pass child gives up at the stock file) is removed and created anew
# (O_EXCL), never truncated by its name: in an output directory others
# can write, a symlink may have been put in its place.
if command -v strace >/dev/null; then
	traced SH5MERGE_TWO_PASS "" openat,unlink tmp.txt -j $J -p $P -u u \
		-o job-t.h5 || fail "merge under strace (temporary)"
	grep '\.job-t\.h5\.tmp\.' tmp.txt >tmp-ops.txt
	[ "$(grep -c 'O_CREAT|O_EXCL' tmp-ops.txt)" = 2 ] &&
		[ "$(grep -c '^[0-9]* *unlink(' tmp-ops.txt)" = 2 ] ||
		{ cat tmp-ops.txt; fail "the temporary not created twice with O_EXCL (an early pass abandoned?)"; }
	! grep -q O_TRUNC tmp-ops.txt ||
		{ cat tmp-ops.txt; fail "the temporary truncated by its name"; }
	echo "ok: an abandoned temporary removed and created anew, never truncated"
fi
