#!/bin/bash
# merge_onepass.sh: inputs copied whole are checked and copied in one
# child process (one HDF5 open per input).  Its job file equals the one of
# the two-pass early merge (SH5MERGE_TWO_PASS=1) object by object, value
# by value, but /Merge's time; its reports reach the merge; an input that
# is not whole or a damaged one makes the merge start over the normal
# way, with the same outcome as before; HDF5 crashing or looping on an
# input ends only the child (the input is marked, the others merged);
# the inputs are never modified; an input is read once (HDF5 reads the
# map its CRC was computed on); where the child is reaches the merge
# without a message per input.
. "$top_srcdir/tests/tools/merge_lib.sh"

mkdir -p prof/u
$GEN -d prof/u -j 801 -n 6 -t 2 -s 200 -f sh5 || fail "gen_job"
sum0=$(cat prof/u/801_*.h5 | md5sum)

$SH5MERGE merge -j 801 -p prof -u u -o one.h5 2>one.err || { cat one.err; fail "one-pass merge"; }
grep -q '6 node files (6 copied whole)' one.err || { cat one.err; fail "not copied whole"; }
SH5MERGE_TWO_PASS=1 $SH5MERGE merge -j 801 -p prof -u u -o two.h5 2>two.err ||
	{ cat two.err; fail "two-pass merge"; }
grep -q '6 node files (6 copied whole)' two.err || { cat two.err; fail "two-pass: not copied whole"; }
compare one.h5 two.h5
$CHECK job one.h5 prof/u/801_*.h5 || fail "one-pass job file values"
# The space reserved for whole copies (fallocate past the end) is freed
# at the close: no more blocks than the size needs (and a block or so).
alloc=$(( $(stat -c '%b * %B' one.h5) ))
[ "$alloc" -le $(( $(stat -c %s one.h5) + 65536 )) ] ||
	fail "one.h5: $alloc bytes allocated for $(stat -c %s one.h5)"
no_temp .
echo "ok: one pass equals two passes"

# Where the child is goes through a shared page, not a message per
# input: under strace, one 24-byte message header (its END) in all.
if command -v strace >/dev/null; then
	traced SH5MERGE_TWO_PASS "" write w.txt -j 801 -p prof -u u -o w.h5 ||
		fail "merge under strace"
	n=$(grep -c '^[0-9]* *write(.* = 24$' w.txt)
	[ "$n" = 1 ] || { cat w.txt; fail "$n message headers, not 1 (a message per input?)"; }
	echo "ok: no message per input"
fi

# A node missing (a problem the first pass finds at the end): no job file
# without --allow-partial, the same report once; with it, the same file.
mkdir -p prof/v
cp prof/u/801_*.h5 prof/v/
rm prof/v/801_0_node3.h5
expect_fail "missing node" "node index.* 2 missing" $SH5MERGE merge -j 801 -p prof -u v -o m1.h5
[ "$(grep -c 'node index 2 missing' "$T/err")" = 1 ] || { cat "$T/err"; fail "report not given once"; }
[ ! -e m1.h5 ] || fail "job file written despite a problem"
$SH5MERGE merge -j 801 -p prof -u v -o m1.h5 --allow-partial 2>m1.err ||
	{ cat m1.err; fail "--allow-partial"; }
SH5MERGE_TWO_PASS=1 $SH5MERGE merge -j 801 -p prof -u v -o m2.h5 --allow-partial 2>m2.err ||
	{ cat m2.err; fail "--allow-partial, two passes"; }
compare m1.h5 m2.h5
diff <(sed 's/m1\.h5/X/' m1.err) <(sed 's/m2\.h5/X/' m2.err) ||
	fail "reports differ between one and two passes"
echo "ok: a problem found by the checks"

# An input cut short (not whole: salvaged the normal way) after whole ones.
mkdir -p prof/w
cp prof/u/801_*.h5 prof/w/
f=prof/w/801_0_node4.h5
truncate -s $(( $(stat -c %s $f) * 2 / 3 )) $f
$SH5MERGE merge -j 801 -p prof -u w -o c1.h5 --allow-partial 2>c1.err ||
	{ cat c1.err; fail "truncated input"; }
grep -q "801_0_node4.h5: damaged" c1.err || { cat c1.err; fail "truncation not reported"; }
SH5MERGE_TWO_PASS=1 $SH5MERGE merge -j 801 -p prof -u w -o c2.h5 --allow-partial 2>c2.err ||
	{ cat c2.err; fail "truncated input, two passes"; }
compare c1.h5 c2.h5
no_temp .
echo "ok: an input that is not whole"

# HDF5 crashing or looping on an input in the one-pass child (whole
# inputs before it): that input is marked, not checked again, the others
# merged.  A damaged global heap (variable-length string attributes, as
# merge_faults.sh makes them) crashes HDF5 1.10; an overrun one loops.
for how in crash loop; do
	rm -rf prof/h
	mkdir -p prof/h
	cp prof/u/801_*.h5 prof/h/
	vlen_heap prof/h/801_0_node4.h5 $how
	hsum=$(cat prof/h/801_*.h5 | md5sum)
	t0=$(date +%s)
	SH5MERGE_READ_TIMEOUT=5 timeout 60 $SH5MERGE merge -j 801 -p prof -u h \
		-o h-$how.h5 --allow-partial 2>h.err
	rc=$?
	t1=$(date +%s)
	[ $rc -eq 0 ] || { cat h.err; fail "$how: --allow-partial exit $rc"; }
	if [ $how = crash ]; then
		grep -q "801_0_node4.h5: corrupt: reading it crashes HDF5" h.err ||
			{ cat h.err; fail "crash not reported"; }
	else
		grep -q "801_0_node4.h5: corrupt: HDF5 does not finish reading it" h.err ||
			{ cat h.err; fail "loop not reported"; }
		# Stopped once (5 s), not again by the first pass.
		[ $((t1 - t0)) -lt 9 ] || fail "loop: $((t1 - t0)) s (checked twice?)"
	fi
	[ "$(grep -c '801_0_node4.h5: corrupt' h.err)" = 1 ] ||
		{ cat h.err; fail "$how: reported more than once"; }
	grep -q '5 node files' h.err || { cat h.err; fail "$how: the others not merged"; }
	$PY - h-$how.h5 <<'PY' || fail "$how: job file"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
nodes = sorted(f["/Steps/0/Nodes"])
assert "node4" not in nodes and len(nodes) == 5, nodes
inp = {r["File"].decode().rsplit("/", 1)[-1]: r for r in f["/Merge/Inputs"][()]}
assert inp["801_0_node4.h5"]["Status"] == b"skipped", inp["801_0_node4.h5"]
assert f["/Merge"].attrs["Partial"] == 1
PY
	[ "$(cat prof/h/801_*.h5 | md5sum)" = "$hsum" ] || fail "$how: inputs modified"
	no_temp .
	echo "ok: HDF5 ${how}ing in the one-pass child"
done

# An input of at most 8 MiB is read once: into memory for its CRC, and HDF5
# reads the same bytes from there (SH5MERGE_NO_INMEM=1: HDF5 reads the
# file itself, piece by piece); the same job file both ways.
SH5MERGE_NO_INMEM=1 $SH5MERGE merge -j 801 -p prof -u u -o nomem.h5 2>nomem.err ||
	{ cat nomem.err; fail "SH5MERGE_NO_INMEM=1 merge"; }
grep -q '6 node files (6 copied whole)' nomem.err || { cat nomem.err; fail "NO_INMEM: not copied whole"; }
compare one.h5 nomem.h5
# Inputs above SH5MERGE_MAP_MAX bytes (default 64 MiB) are not held in
# memory but read in pieces; 0: none is.  Of those held, the ones up to
# SH5MERGE_READ_MAX (default 4 MiB) are read whole, the others mapped.
# The same job file every way.
SH5MERGE_MAP_MAX=0 $SH5MERGE merge -j 801 -p prof -u u -o nomap.h5 2>nomap.err ||
	{ cat nomap.err; fail "SH5MERGE_MAP_MAX=0 merge"; }
grep -q '6 node files (6 copied whole)' nomap.err || { cat nomap.err; fail "MAP_MAX=0: not copied whole"; }
compare one.h5 nomap.h5
$CHECK job nomap.h5 prof/u/801_*.h5 || fail "MAP_MAX=0: job file values"
SH5MERGE_READ_MAX=0 $SH5MERGE merge -j 801 -p prof -u u -o mapped.h5 2>mapped.err ||
	{ cat mapped.err; fail "SH5MERGE_READ_MAX=0 merge"; }
grep -q '6 node files (6 copied whole)' mapped.err || { cat mapped.err; fail "READ_MAX=0: not copied whole"; }
compare one.h5 mapped.h5
# (LeakSanitizer does not work under ptrace: off for these runs.)
if command -v strace >/dev/null; then
	for cap in default:SH5MERGE_MAP_MAX: map0:SH5MERGE_MAP_MAX:0 \
		   read0:SH5MERGE_READ_MAX:0; do
		IFS=: read -r how var val <<<"$cap"
		traced "$var" "$val" mmap maps-$how.txt -j 801 -p prof -u u \
			-o maps-$how.h5 || fail "merge under strace ($how)"
		compare one.h5 maps-$how.h5
	done
	maps() { grep -c MAP_POPULATE "maps-$1.txt"; }
	[ "$(maps default)" = 0 ] ||
		fail "default: $(maps default) small inputs mapped, not read whole"
	[ "$(maps map0)" = 0 ] || fail "SH5MERGE_MAP_MAX=0: an input mapped"
	[ "$(maps read0)" = 6 ] ||
		fail "SH5MERGE_READ_MAX=0: $(maps read0) inputs mapped, not 6"
	echo "ok: the memory caps (small inputs read whole; mapped with READ_MAX=0, in pieces with MAP_MAX=0)"
fi
if command -v strace >/dev/null; then
	for how in mem nomem; do
		unset SH5MERGE_NO_INMEM
		[ $how = mem ] || export SH5MERGE_NO_INMEM=1
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace -f -qq -y -e trace=openat,pread64,read -o reads-$how.txt \
			$SH5MERGE -q merge -j 801 -p prof -u u -o reads-$how.h5 ||
			fail "merge under strace ($how)"
	done
	unset SH5MERGE_NO_INMEM
	# HDF5's own opens (tests/tools/merge_lib.sh h5opens) and its reads of the inputs.
	h5o() { h5opens "$1" | awk '/801_0_node[0-9]*\.h5 / { n += $2 } END { print n + 0 }'; }
	h5r() { grep -c '^[0-9]* *pread64([0-9]*</.*/801_0_node[0-9]*\.h5>' "$1"; }
	[ "$(h5o reads-mem.txt)" = 0 ] && [ "$(h5r reads-mem.txt)" = 0 ] ||
		{ grep 801_0_node reads-mem.txt | head -40; fail "inputs read by HDF5 again: $(h5o reads-mem.txt) opens, $(h5r reads-mem.txt) reads"; }
	[ "$(h5o reads-nomem.txt)" = 6 ] && [ "$(h5r reads-nomem.txt)" -ge 6 ] ||
		fail "NO_INMEM: $(h5o reads-nomem.txt) HDF5 opens, $(h5r reads-nomem.txt) reads of the inputs"
	compare one.h5 reads-mem.h5
	echo "ok: each input read once (HDF5 on the image of its CRC)"
fi
no_temp .

[ "$(cat prof/u/801_*.h5 | md5sum)" = "$sum0" ] || fail "inputs modified"
echo "ok: inputs unchanged"
