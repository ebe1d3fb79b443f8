#!/bin/bash
# merge_seal.sh: node-step files sealed with the site key (as the plugin
# seals them; bench/gen_job -k) are copied on their verified seal, without
# the checks, into a job file equal to the fully checked merge's (object by
# object, value by value, the inputs' CRCs in /Merge included).  A file
# changed after its seal, sealed with another key, cut or never sealed is
# checked in full as before (a changed one with a warning naming it); a key
# file others can read, not root's, a symlink or too short is refused with
# a warning naming it and why; the two-pass way (copy in the merge
# process, from the files) trusts no seal; the inputs are never modified.
. "$top_srcdir/tests/tools/merge_lib.sh"

# The key must be root's: sh5merge trusts no other.
[ "$(id -u)" = 0 ] || skip "needs root (the seal key is root's)"

head -c 64 /dev/urandom > key
chmod 600 key
mkdir -p prof/u
$GEN -d prof/u -j 811 -n 6 -t 2 -s 200 -f sh5 -k key || fail "gen_job"
sum0=$(cat prof/u/811_*.h5 | md5sum)
for f in prof/u/811_*.h5; do
	tail -c 80 "$f" | head -c 8 | grep -q 'SH5SEAL' || fail "$f: no trailer"
done
# HDF5 (C library, h5py) opens a sealed file: the trailer is past its end.
h5dump -H prof/u/811_0_node1.h5 >/dev/null || fail "h5dump of a sealed file"
$PY -c 'import h5py, sys; h5py.File(sys.argv[1], "r")["node1/Tasks"]' \
	prof/u/811_0_node1.h5 || fail "h5py on a sealed file"

$SH5MERGE merge -j 811 -p prof -u u -o sealed.h5 --seal-key "$T/key" 2>s.err ||
	{ cat s.err; fail "merge with the key"; }
grep -q '6 node files (6 copied whole, 6 on a verified seal)' s.err ||
	{ cat s.err; fail "not copied on the seals"; }
$SH5MERGE merge -j 811 -p prof -u u -o checked.h5 --seal-key none 2>c.err ||
	{ cat c.err; fail "merge without a key"; }
grep -q '6 node files (6 copied whole)' c.err || { cat c.err; fail "checked merge"; }
compare sealed.h5 checked.h5
$CHECK job sealed.h5 prof/u/811_*.h5 || fail "sealed job file values"
no_temp .
echo "ok: sealed inputs copied on their seals, the same job file"

# The two-pass way copies in the merge process, from the files: seals
# are not trusted there (checked in full), the job file the same.
SH5MERGE_TWO_PASS=1 $SH5MERGE merge -j 811 -p prof -u u -o two.h5 --seal-key "$T/key" 2>two.err ||
	{ cat two.err; fail "two passes with the key"; }
grep -q '6 node files (6 copied whole), ' two.err || { cat two.err; fail "two passes: seals trusted"; }
compare two.h5 checked.h5
echo "ok: two passes check sealed inputs in full"

# Refused keys: a warning naming the file and why, every input checked.
refused() { # refused KEYFILE PATTERN
	$SH5MERGE merge -j 811 -p prof -u u -o r.h5 -f --seal-key "$1" 2>r.err ||
		{ cat r.err; fail "$1: merge"; }
	grep -Eq "seal key $1: $2.*: seals not trusted" r.err ||
		{ cat r.err; fail "$1: no refusal '$2'"; }
	grep -q 'verified seal' r.err && { cat r.err; fail "$1: seals trusted"; }
	grep -q '6 node files (6 copied whole)' r.err || { cat r.err; fail "$1: merge"; }
	compare r.h5 checked.h5
	echo "ok: key refused: $2"
}
cp key k644 && chmod 644 k644
refused "$T/k644" "readable or writable by group or others"
cp key k640 && chmod 640 k640
refused "$T/k640" "readable or writable by group or others"
cp key knobody && chown 65534 knobody
refused "$T/knobody" "not owned by root"
ln -s "$T/key" klink
refused "$T/klink" "a symbolic link"
head -c 16 key > kshort && chmod 600 kshort
refused "$T/kshort" "too short"

# Another key: noted, checked in full, the same job file.
head -c 64 /dev/urandom > key2
chmod 600 key2
$SH5MERGE merge -j 811 -p prof -u u -o o.h5 --seal-key "$T/key2" 2>o.err ||
	{ cat o.err; fail "other key"; }
[ "$(grep -c 'sealed with another key: checked in full' o.err)" = 6 ] ||
	{ cat o.err; fail "other key not noted"; }
grep -q 'verified seal' o.err && fail "other key trusted"
compare o.h5 checked.h5
echo "ok: another key's seals checked in full"

# A sealed file changed after its seal (a byte of a chunk flipped): a
# warning naming it, checked in full, its damage reported as without a
# key; the other inputs still on their seals where the merge keeps them.
mkdir -p prof/t
cp prof/u/811_*.h5 prof/t/
f=prof/t/811_0_node3.h5
$PY - "$f" <<'PY' || fail "tampering"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
d = f["node3/Tasks"][sorted(f["node3/Tasks"])[0]]
off = d.id.get_chunk_info(0).byte_offset
f.close()
b = bytearray(open(sys.argv[1], "rb").read())
b[off + 10] ^= 0xff
open(sys.argv[1], "wb").write(b)
PY
$SH5MERGE merge -j 811 -p prof -u t -o t1.h5 --allow-partial --seal-key "$T/key" 2>t1.err ||
	{ cat t1.err; fail "tampered: merge"; }
grep -q "811_0_node3.h5: seal does not match (changed since it was sealed, or not the node-step file it is merged as): checked in full" t1.err ||
	{ cat t1.err; fail "tampered: no warning"; }
$SH5MERGE merge -j 811 -p prof -u t -o t2.h5 --allow-partial --seal-key none 2>t2.err ||
	{ cat t2.err; fail "tampered, no key: merge"; }
grep -q "811_0_node3.h5: damaged" t2.err || { cat t2.err; fail "damage not found"; }
diff <(grep -v 'seal does not match' t1.err | sed 's/t1\.h5/X/') \
	<(sed 's/t2\.h5/X/' t2.err) || fail "tampered: reports differ"
compare t1.h5 t2.h5
SH5MERGE_TWO_PASS=1 $SH5MERGE merge -j 811 -p prof -u t -o t3.h5 --allow-partial \
	--seal-key "$T/key" 2>t3.err || { cat t3.err; fail "tampered, two passes"; }
grep -q "811_0_node3.h5: seal does not match" t3.err || { cat t3.err; fail "two passes: no warning"; }
compare t3.h5 t2.h5
echo "ok: a changed sealed file is caught and checked in full"

# A seal's identity: node1's file merged as node2's does not verify (and
# the reader refuses it as another node's, as before).
mkdir -p prof/i
cp prof/u/811_*.h5 prof/i/
cp prof/u/811_0_node1.h5 prof/i/811_0_node2.h5
$SH5MERGE merge -j 811 -p prof -u i -o i.h5 --allow-partial --seal-key "$T/key" 2>i.err
grep -q "811_0_node2.h5: seal does not match" i.err || { cat i.err; fail "identity"; }
echo "ok: a seal binds the file to its job, step and node"

# A trailer cut short, or none (a writer killed before its seal): not
# sealed, checked in full without a warning, the same job file.
mkdir -p prof/n
cp prof/u/811_*.h5 prof/n/
truncate -s -10 prof/n/811_0_node2.h5
$SH5MERGE merge -j 811 -p prof -u n -o n.h5 --seal-key "$T/key" 2>n.err ||
	{ cat n.err; fail "cut trailer: merge"; }
grep -q '6 node files (6 copied whole, 5 on a verified seal)' n.err ||
	{ cat n.err; fail "cut trailer"; }
grep 'seal' n.err | grep -qv 'verified seal' && { cat n.err; fail "cut trailer: warned"; }
echo "ok: a cut trailer is no seal"
mkdir -p prof/k
$GEN -d prof/k -j 812 -n 3 -t 1 -s 50 -f sh5 -K -k key || fail "gen_job -K"
$SH5MERGE merge -j 812 -p prof -u k -o k.h5 --allow-partial --seal-key "$T/key" 2>k.err
grep -q 'verified seal' k.err && { cat k.err; fail "killed writer sealed"; }
grep -q 'seal does not match' k.err && { cat k.err; fail "killed writer warned"; }
[ -e k.h5 ] || { cat k.err; fail "killed writers: no job file"; }
echo "ok: files of killed writers are merged as before"

[ "$(cat prof/u/811_*.h5 | md5sum)" = "$sum0" ] || fail "inputs modified"
echo "ok: inputs unchanged"
