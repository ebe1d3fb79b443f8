#!/bin/bash
# merge_onefeed.sh: inputs that are not copied whole (the stock plugin's,
# damaged ones) are checked by the reader child just before it reads
# them (one HDF5 open per input in the children, not two).  The job file
# equals the one of the checking children and the separate reader
# (SH5MERGE_NO_ONEFEED=1) object by object, value by value, but /Merge's
# time, and so do the reports and the exit status: stock files, a mixed
# job, a missing node and a cut input with and without --allow-partial;
# HDF5 crashing or looping on an input during its check ends only the
# child (the input is marked once, the others merged); the inputs are
# never modified.  The records pass through memory shared with the
# reader child, not the pipe.
. "$top_srcdir/tests/tools/merge_lib.sh"

# both NAME USER ARGS...: merge prof/USER with the one-pass feeder
# (NAME-1.h5) and the normal way before it (NAME-2.h5); the same exit
# status and reports (the output's name aside), the same job file.
both() {
	local name=$1 user=$2 r1 r2 sum
	shift 2
	sum=$(cat prof/$user/*.h5 | md5sum)
	$SH5MERGE merge -p prof -u $user -o $name-1.h5 "$@" 2>$name-1.err
	r1=$?
	SH5MERGE_NO_ONEFEED=1 $SH5MERGE merge -p prof -u $user -o $name-2.h5 \
		"$@" 2>$name-2.err
	r2=$?
	[ $r1 = $r2 ] || { cat $name-1.err $name-2.err; fail "$name: exit $r1, before $r2"; }
	diff <(sed "s/$name-1\.h5/X/" $name-1.err) <(sed "s/$name-2\.h5/X/" $name-2.err) ||
		fail "$name: reports differ from the normal way's"
	if [ $r1 = 0 ]; then
		compare $name-1.h5 $name-2.h5 20
	else
		[ ! -e $name-1.h5 ] || fail "$name: job file written (exit $r1)"
	fi
	[ "$(cat prof/$user/*.h5 | md5sum)" = "$sum" ] || fail "$name: inputs modified"
	no_temp .
	return $r1
}

mkdir -p prof/s prof/m
$GEN -d prof/s -j 811 -n 6 -t 2 -s 200 -f stock || fail "gen_job stock"
$GEN -d prof/m -j 812 -n 6 -t 2 -s 200 -f mixed || fail "gen_job mixed"

both stock s -j 811 || fail "stock: exit $?"
grep -q '6 node files, 2400 samples' stock-1.err || { cat stock-1.err; fail "stock: not all merged"; }
$CHECK job stock-1.h5 prof/s/811_*.h5 || fail "stock: job file values"
echo "ok: stock files in one pass equal two passes"

both mixed m -j 812 || fail "mixed: exit $?"
$CHECK job mixed-1.h5 prof/m/812_*.h5 || fail "mixed: job file values"
echo "ok: a mixed job"

# Each stock input is opened by HDF5 from its file once, by the merge:
# the reader child that checks and reads it (and the one-pass child,
# which looks at the first) reads it once, mapped for its CRC, and HDF5
# reads that map.  With SH5MERGE_NO_INMEM=1 each input but the first is
# opened by HDF5 twice (the reader child, the merge), the first three
# times (the one-pass child too); the normal way (checking children) one
# more.  (An open strace cuts in two ends "O_RDONLY <unfinished ...>".
# LeakSanitizer does not work under ptrace: off for these runs.)
if command -v strace >/dev/null; then
	for how in mem nomem; do
		unset SH5MERGE_NO_INMEM
		[ $how = mem ] || export SH5MERGE_NO_INMEM=1
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace -f -qq -e trace=openat -o opens-$how.txt \
			$SH5MERGE -q merge -j 811 -p prof -u s -o opens-$how.h5 ||
			fail "merge under strace ($how)"
	done
	unset SH5MERGE_NO_INMEM
	opens() {
		for i in 1 2 3 4 5 6; do
			h5opens "$1" | awk -v f="811_0_node$i.h5" \
				'index($1, f) { n = $2 } END { print n + 0 }'
		done | sort | tr '\n' ' '
	}
	n=$(opens opens-mem.txt)
	[ "$n" = "1 1 1 1 1 1 " ] || { cat opens-mem.txt; fail "HDF5 opens per input: $n"; }
	n=$(opens opens-nomem.txt)
	[ "$n" = "2 2 2 2 2 3 " ] || { cat opens-nomem.txt; fail "NO_INMEM: HDF5 opens per input: $n"; }
	compare opens-mem.h5 opens-nomem.h5 20
	echo "ok: one HDF5 open of each stock input's file (two with SH5MERGE_NO_INMEM=1)"
fi

# The records pass from the reader child to the merge through memory
# they share (two slots handed back and forth), not the pipe, which
# carries only headers and totals: no write() of a block of records
# (the job file is written with pwrite64); SH5MERGE_FEED_PIPE=1 sends
# them through the pipe as before; the same job file both ways.
if command -v strace >/dev/null; then
	for how in ring pipe; do
		traced SH5MERGE_FEED_PIPE "$([ $how = ring ] || echo 1)" write \
			writes-$how.txt -j 811 -p prof -u s -o feed-$how.h5 ||
			fail "merge under strace ($how)"
	done
	big() { # the largest write() of a trace
		sed -n 's/.* = \([0-9][0-9]*\)$/\1/p' "$1" | sort -n | tail -1
	}
	[ "$(big writes-ring.txt)" -lt 4096 ] ||
		fail "ring: a write of $(big writes-ring.txt) bytes"
	[ "$(big writes-pipe.txt)" -ge 8192 ] ||
		fail "SH5MERGE_FEED_PIPE=1: largest write $(big writes-pipe.txt) bytes"
	compare feed-ring.h5 feed-pipe.h5 20
	$CHECK job feed-ring.h5 prof/s/811_*.h5 || fail "ring: job file values"
	echo "ok: records through the shared slots (the same job file as through the pipe)"
fi

# A node missing (found at the end of the first pass): no job file
# without --allow-partial, the report once; with it, the same file.
mkdir -p prof/v
cp prof/s/811_*.h5 prof/v/
rm prof/v/811_0_node4.h5
both miss v -j 811
[ $? = 1 ] || fail "missing node: exit not 1"
[ "$(grep -c 'node index 3 missing' miss-1.err)" = 1 ] || { cat miss-1.err; fail "report not given once"; }
both missp v -j 811 --allow-partial || fail "missing node, --allow-partial"
echo "ok: a problem found at the end of the checks"

# An input cut short (damage the check finds: salvaged), first and later.
for k in 1 5; do
	rm -rf prof/c
	mkdir -p prof/c
	cp prof/s/811_*.h5 prof/c/
	f=prof/c/811_0_node$k.h5
	truncate -s $(( $(stat -c %s $f) * 2 / 3 )) $f
	both cut$k c -j 811
	[ $? = 1 ] || fail "cut node$k: exit not 1"
	both cutp$k c -j 811 --allow-partial || fail "cut node$k, --allow-partial"
	grep -q "811_0_node$k.h5: damaged" cutp$k-1.err || { cat cutp$k-1.err; fail "cut node$k: not reported"; }
done
echo "ok: a cut input"

# The output cannot be written (a file size limit) with an input the
# checks find damaged: the same reports and exit status as the normal
# way (with --allow-partial the checks' reports, then the failure;
# without, the two passes stop before writing: the problems only).
for opt in --allow-partial ""; do
	for way in 1 2; do
		env $([ $way = 2 ] && echo SH5MERGE_NO_ONEFEED=1) bash -c \
			"ulimit -f 40; exec $SH5MERGE merge -j 811 -p prof -u c -o fsz.h5 $opt" \
			>/dev/null 2>fsz$way.err
		echo $? >>fsz$way.err
		[ ! -e fsz.h5 ] || fail "fsz$opt: job file written"
		no_temp .
	done
	diff fsz1.err fsz2.err || fail "file size limit $opt: not as the normal way"
	[ "$(tail -1 fsz1.err)" = 1 ] || { cat fsz1.err; fail "file size limit $opt: exit"; }
	grep -q 'node5.h5: truncated' fsz1.err || { cat fsz1.err; fail "file size limit $opt: the check's report"; }
done
grep -q 'cannot write' fsz1.err && fail "file size limit: written although the checks stop the merge"
echo "ok: the output cannot be written"

# HDF5 crashing or looping on an input while the reader child checks it:
# a damaged global heap of variable-length attributes (one of our files
# in the mixed job, after stock ones: not copied by the one-pass child).
for how in crash loop; do
	rm -rf prof/h
	mkdir -p prof/h
	cp prof/m/812_*.h5 prof/h/
	vlen_heap prof/h/812_0_node4.h5 $how
	t0=$(date +%s)
	SH5MERGE_READ_TIMEOUT=3 both h$how h -j 812 --allow-partial ||
		fail "$how: --allow-partial"
	t1=$(date +%s)
	if [ $how = crash ]; then
		pat="812_0_node4.h5: corrupt: reading it crashes HDF5"
	else
		pat="812_0_node4.h5: corrupt: HDF5 does not finish reading it"
		# Stopped once per merge (3 s), not checked again.
		[ $((t1 - t0)) -lt 12 ] || fail "loop: $((t1 - t0)) s (checked twice?)"
	fi
	[ "$(grep -c "$pat" h$how-1.err)" = 1 ] || { cat h$how-1.err; fail "$how: not reported once"; }
	grep -q '5 node files' h$how-1.err || { cat h$how-1.err; fail "$how: the others not merged"; }
done
echo "ok: HDF5 crashing or looping in the reader child's check"
