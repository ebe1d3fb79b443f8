#!/bin/bash
# extract_parallel.sh: sh5merge extract in two processes (segments of
# whole chunks alternate between them) writes exactly what one process
# writes: same CSV bytes, same warnings, same exit status, on intact job
# files (ours: compressed chunks; stock: one chunk per series, rows
# formatted from the file's records) and on damaged ones (the first
# damaged chunk ends the series, whichever process read it).
. "$top_srcdir/tests/tools/merge_lib.sh"

# same NAME FILE ARGS...: extract with one-chunk segments in two
# processes and in one; stdout, stderr and exit status must agree.
same() {
	local name=$1 f=$2 rc1 rc2
	shift 2
	SH5MERGE_EXTRACT_SEGMENT=1 $SH5MERGE extract -i "$f" "$@" >p.csv 2>p.err
	rc1=$?
	SH5MERGE_NO_FORK=1 $SH5MERGE extract -i "$f" "$@" >s.csv 2>s.err
	rc2=$?
	[ $rc1 -eq $rc2 ] || fail "$name: exit $rc1 in two processes, $rc2 in one"
	cmp -s p.csv s.csv || { diff p.csv s.csv | head; fail "$name: CSV differs"; }
	cmp -s p.err s.err || { diff p.err s.err; fail "$name: stderr differs"; }
	[ -s p.csv ] || fail "$name: no output"
	echo "ok: $name"
}

mkdir -p prof/u
$GEN -d prof/u -j 601 -n 3 -t 2 -s 1900 -f sh5 -E -r 5 || fail "gen_job sh5"
$GEN -d prof/u -j 602 -n 2 -t 2 -s 250 -f stock -E -r 6 || fail "gen_job stock"
$SH5MERGE merge -q -j 601 -p prof -u u -o ours.h5 || fail "merge ours"
$SH5MERGE merge -q -j 602 -p prof -u u -o stock.h5 || fail "merge stock"

# Ours: several chunks per series, so one series spans both processes.
cr=$($PY -c 'import h5py,sys; print(h5py.File(sys.argv[1],"r")["Steps/0/Nodes/node1/Tasks/0"].chunks[0])' ours.h5) ||
	fail "reading the chunk layout"
[ $((1900 / cr)) -ge 3 ] || fail "want several chunks per series, got rows of $cr"
rows=$(SH5MERGE_EXTRACT_SEGMENT=1 $SH5MERGE extract -i ours.h5 | wc -l)
[ "$rows" -eq $((3 * 2 * 1900 + 1)) ] || fail "ours: $rows lines"
$CHECK csv ours.h5 <(SH5MERGE_EXTRACT_SEGMENT=1 $SH5MERGE extract -i ours.h5) Tasks ||
	fail "ours: values"
same "ours, all tasks" ours.h5
same "ours, default segments" ours.h5 -o /dev/stdout
same "ours, one node" ours.h5 -n node2
same "ours, one task" ours.h5 -t 3
same "ours, energy" ours.h5 -S Energy
same "ours, totals" ours.h5 -l totals
same "ours, field" ours.h5 -F RSS
same "stock, all tasks" stock.h5
# Into a pipe (the child's CSV is spliced or copied), and a full disk.
$SH5MERGE extract -i ours.h5 | cat >piped.csv
SH5MERGE_NO_FORK=1 $SH5MERGE extract -i ours.h5 >s.csv
cmp -s piped.csv s.csv || fail "extract into a pipe differs"
for mode in SH5MERGE_EXTRACT_SEGMENT=1 SH5MERGE_NO_FORK=1; do
	env $mode $SH5MERGE extract -i ours.h5 -o /dev/full 2>full.err
	rc=$?
	[ $rc -eq 1 ] || fail "full disk ($mode): exit $rc"
	grep -Eq '^sh5merge: /dev/full: write (error|failed): No space' full.err ||
		{ cat full.err; fail "full disk ($mode): message"; }
done
echo "ok: pipe, full disk"
same "stock, one node" stock.h5 -n node1 -t 1

# Chunks of 13 rows (not a multiple of the 8-row blocks the shuffle
# decoder transposes at once): same CSV as the file written by the merge.
cp ours.h5 odd.h5
$PY - odd.h5 <<'PY' || fail "rechunking"
import sys, h5py
f = h5py.File(sys.argv[1], "r+")
p = "Steps/0/Nodes/node1/Tasks/0"
d = f[p]
data, attrs = d[...], dict(d.attrs)
del f[p]
n = f.create_dataset(p, data=data, chunks=(13,), shuffle=True,
                     compression="gzip", maxshape=(None,))
for k, v in attrs.items():
    n.attrs[k] = v
PY
$SH5MERGE extract -i ours.h5 -n node1 -t 0 >a.csv || fail "extract ours"
$SH5MERGE extract -i odd.h5 -n node1 -t 0 >b.csv || fail "extract 13-row chunks"
cmp -s a.csv b.csv || { diff a.csv b.csv | head; fail "13-row chunks: CSV differs"; }
same "13-row chunks" odd.h5 -n node1

# Damage: a chunk of one series overwritten (ours: compressed, so the
# chunk fails to decode; stock: zeroed, read as never written).  Chunks
# 1, 2 and both: with one-chunk segments, one of them falls to each
# process.
damage() { # damage IN OUT SERIES FILL CHUNK...
	cp "$1" "$2"
	$PY - "$2" "$3" "$4" "${@:5}" <<'PY' || fail "damaging $2"
import sys, h5py
path, series, fill, idx = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
f = h5py.File(path, "r")
d = f[series]
infos = [d.id.get_chunk_info(int(i)) for i in idx]
f.close()
with open(path, "r+b") as fh:
    for info in infos:
        fh.seek(info.byte_offset)
        n = min(64, info.size) if fill == "ff" else info.size
        fh.write((b"\xff" if fill == "ff" else b"\0") * n)
PY
}
for c in 1 2 "1 2"; do
	damage ours.h5 bad.h5 Steps/0/Nodes/node2/Tasks/3 ff $c
	same "ours, chunk(s) $c corrupt" bad.h5
	grep -q 'node2/Tasks/3: [0-9]* rows unreadable' p.err ||
		fail "ours, chunk(s) $c corrupt: no warning"
	lost=$(sed -n 's/.*node2\/Tasks\/3: \([0-9]*\) rows unreadable.*/\1/p' p.err)
	first=${c%% *}
	[ "$lost" -eq $((1900 - first * cr)) ] ||
		fail "ours, chunk(s) $c corrupt: $lost rows lost"
done
# Stock job files hold a series in one chunk: zero the middle of it.
cp stock.h5 bad.h5
$PY - bad.h5 <<'PY' || fail "zeroing"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
d = f["Steps/0/Nodes/node1/Tasks/1"]
info = d.id.get_chunk_info(0)
rs = d.dtype.itemsize
f.close()
with open(sys.argv[1], "r+b") as fh:
    fh.seek(info.byte_offset + 100 * rs)
    fh.write(b"\0" * (20 * rs))
PY
same "stock, zero-filled rows" bad.h5
grep -q 'node1/Tasks/1: 150 rows unreadable' p.err || { cat p.err; fail "stock: warning"; }
# Stock rows are formatted from the file's own records (no copy into the
# series' layout): their values as h5py reads them, and an EpochTime
# past 2262 ends the series there as in the copied layout.
$CHECK csv stock.h5 <($SH5MERGE extract -i stock.h5) Tasks ||
	fail "stock: values"
cp stock.h5 bad.h5
$PY - bad.h5 <<'PY' || fail "EpochTime out of range"
import sys, h5py
f = h5py.File(sys.argv[1], "r+")
d = f["Steps/0/Nodes/node2/Tasks/2"]
a = d[...]
a["EpochTime"][30] = 2**62
d[...] = a
PY
same "stock, EpochTime out of range" bad.h5
grep -q 'node2/Tasks/2: 220 rows unreadable (EpochTime out of range' p.err ||
	{ cat p.err; fail "stock, EpochTime out of range: warning"; }
[ "$(grep -c '^0,node2,2,' p.csv)" -eq 30 ] ||
	fail "stock, EpochTime out of range: rows kept"

# Into a regular file the one-thread CSV goes without the page cache
# (common/dwrite, from a writer thread): the same bytes as written the
# ordinary way (SH5MERGE_NO_DIRECT), also for rows too wide for the line
# buffer (stdio writes those: the direct writes end before them).
cp ours.h5 wide.h5
$PY - wide.h5 <<'PY' || fail "adding a wide series"
import sys, numpy as np, h5py
f = h5py.File(sys.argv[1], "r+")
src = f["Steps/0/Nodes/node1/GPU"] if "Steps/0/Nodes/node1/GPU" in f else \
    f["Steps/0/Nodes/node1/Energy"]
nf = 150
dt = np.dtype([("ElapsedTime", "<u8"), ("EpochTime", "<u8")] +
              [("F%03d" % i, "<u8" if i % 2 else "<f8") for i in range(nf)] +
              [("EpochTimeNs", "<u8")])
a = np.zeros(700, dt)
for k in ("ElapsedTime", "EpochTime", "EpochTimeNs"):
    a[k] = src[k][:700]
for i in range(nf):
    a["F%03d" % i] = np.arange(700) * (i + 1) if i % 2 else np.arange(700) / (i + 3.0)
d = f.create_dataset("Steps/0/Nodes/node1/Wide", data=a, chunks=(300,),
                     compression="gzip")
d.attrs["Series"] = np.bytes_("Wide")
PY
for args in "ours.h5" "stock.h5" "ours.h5 -S Energy" "wide.h5 -S Wide"; do
	SH5MERGE_NO_FORK=1 $SH5MERGE extract -i $args -o d.csv 2>d.err ||
		fail "$args: direct: exit $?"
	SH5MERGE_NO_FORK=1 SH5MERGE_NO_DIRECT=1 $SH5MERGE extract -i $args \
		-o n.csv 2>n.err || fail "$args: ordinary: exit $?"
	cmp -s d.csv n.csv || fail "$args: direct writes differ"
	cmp -s d.err n.err || fail "$args: direct writes: stderr differs"
	[ "$(wc -l <d.csv)" -gt 700 ] || fail "$args: too few rows"
done
# A write the file refuses (past the file size limit, SIGXFSZ ignored):
# exit 1, the output named, no output nor temporary file left.
mkdir -p lim && rm -f lim/*
(trap '' XFSZ; ulimit -f 512
 SH5MERGE_NO_FORK=1 exec $SH5MERGE extract -i ours.h5 -o lim/out.csv) 2>lim.err
rc=$?
[ $rc -eq 1 ] || { cat lim.err; fail "file size limit: exit $rc"; }
grep -q '^sh5merge: lim/out.csv: write failed: File too large' lim.err ||
	{ cat lim.err; fail "file size limit: message"; }
[ -z "$(ls -A lim)" ] || { ls -la lim; fail "file size limit: files left"; }
echo "ok: direct writes"
echo "PASS: extract_parallel"
