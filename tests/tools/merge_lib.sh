# tests/tools/merge_lib.sh - shared set-up of the sh5merge tool tests.
# Sourced by tests/tools/merge_*.sh; needs top_srcdir and top_builddir.

: "${top_srcdir:?}" "${top_builddir:?}"
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
PY=/usr/bin/python3
CHECK="$PY $top_srcdir/tests/tools/merge_check.py"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

[ -x "$SH5MERGE" ] || fail "$SH5MERGE not built"
[ -x "$GEN" ] || fail "$GEN not built (make check builds it)"
$PY -c 'import h5py, numpy' 2>/dev/null || skip "python3 h5py/numpy missing"

T=$(mktemp -d /tmp/sh5merge-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# expect_fail NAME PATTERN CMD...: CMD must exit 1 and print PATTERN
# (extended regex) on stderr in the form "sh5merge: ...".
expect_fail() {
	local name=$1 pat=$2 rc
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc -eq 1 ] || { cat "$T/err"; fail "$name: exit $rc, expected 1"; }
	grep -Eq "$pat" "$T/err" ||
		{ cat "$T/err"; fail "$name: no '$pat' on stderr"; }
	grep -q '^sh5merge: ' "$T/err" || fail "$name: message format"
	echo "ok: $name"
}

# no_temp DIR: no temporary output left in DIR.
no_temp() {
	! ls -a "$1" | grep -q '\.tmp\.' || fail "temporary file left in $1"
}

# h5attr FILE PATH ATTR: print an attribute.
h5attr() {
	$PY - "$@" <<'PY'
import sys, h5py
v = h5py.File(sys.argv[1], "r")[sys.argv[2]].attrs[sys.argv[3]]
print(v.decode() if isinstance(v, bytes) else v)
PY
}

# vlen_attrs FILE: store Field Kinds/Units as variable-length strings, as
# builds before fixed-length ones did: the file then has a global heap.
vlen_attrs() {
	$PY - "$1" <<'PY' || fail "vlen attributes"
import sys, h5py
f = h5py.File(sys.argv[1], "r+")
def conv(name, obj):
    if isinstance(obj, h5py.Dataset):
        for a in ("Field Kinds", "Field Units"):
            if a in obj.attrs:
                v = [bytes(x) for x in obj.attrs[a]]
                del obj.attrs[a]
                obj.attrs.create(a, v, dtype=h5py.string_dtype("ascii"))
f.visititems(conv)
f.close()
PY
}

# vlen_heap FILE crash|loop: vlen_attrs FILE, then damage the global
# heap so that HDF5 1.10 crashes reading it (crash) or loops (loop).
vlen_heap() {
	vlen_attrs "$1"
	$PY - "$1" "$2" <<'PY' || fail "corrupting the heap"
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
i = d.find(b"GCOL")
assert i > 0
if sys.argv[2] == "crash":
    struct.pack_into("<Q", d, i + 24, 0x7fffffff)
else:
    o, last = i + 16, None
    while True:
        idx = struct.unpack_from("<H", d, o)[0]
        size = struct.unpack_from("<Q", d, o + 8)[0]
        if idx == 0:
            break
        last = o
        o += 16 + ((size + 7) // 8) * 8
    struct.pack_into("<Q", d, last + 8, 0xd8)
open(sys.argv[1], "wb").write(d)
PY
}

# compare A B [MIN]: the job files A and B hold the same objects,
# attributes and values (but /Merge's time and command line), more than
# MIN objects (default 0).
compare() {
	$PY - "$1" "$2" "${3:-0}" <<'PY' || fail "$1 and $2 differ"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
SKIP = ("Merge Time", "Options")  # when, and the command line (-o)
def names(f):
    out = []
    f.visit(out.append)
    return sorted(out)
na, nb = names(a), names(b)
assert na == nb, (set(na) ^ set(nb))
for n in ["/"] + na:
    x, y = a[n], b[n]
    ka = sorted(k for k in x.attrs if k not in SKIP)
    kb = sorted(k for k in y.attrs if k not in SKIP)
    assert ka == kb, (n, ka, kb)
    for k in ka:
        assert np.array_equal(np.asarray(x.attrs[k]), np.asarray(y.attrs[k])), (n, k)
    if isinstance(x, h5py.Dataset):
        assert x.dtype == y.dtype and x.shape == y.shape, n
        assert np.array_equal(x[()], y[()]), n
assert len(na) > int(sys.argv[3]), na
print("compared %d objects" % len(na))
PY
}

# traced VAR VAL TRACE OUT ARGS...: `sh5merge -q merge ARGS` under
# `strace -f -e trace=TRACE -o OUT`, VAR=VAL in its environment (VAL
# empty: VAR unset).  LeakSanitizer does not work under ptrace: off.
traced() {
	local var=$1 val=$2 trace=$3 out=$4
	shift 4
	(
		unset "$var"
		[ -z "$val" ] || export "$var=$val"
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace -f -qq -e trace="$trace" -o "$out" \
			$SH5MERGE -q merge "$@"
	)
}

# h5opens TRACE: how often HDF5 opened each input in an strace of openat
# (-f): "PATH COUNT" lines.  HDF5 opens an input by the name of a
# descriptor the merge checked ("/proc/self/fd/N", after an O_NOFOLLOW
# open of the path in the same process), or by the path itself with
# O_RDONLY alone.  Lines strace cut in two ("<unfinished ...>", "<...
# openat resumed>") are joined by process.
h5opens() {
	awk '
	{
		pid = $1
		if ($0 ~ /openat\(/) {
			split($0, q, "\"")
			path[pid] = q[2]
			byname[pid] = $0 ~ /", O_RDONLY[) <]/
			if ($0 ~ /<unfinished/)
				next
		} else if ($0 !~ /openat resumed/)
			next
		if (!match($0, /\) += [0-9]+/))
			next
		fd = substr($0, RSTART, RLENGTH)
		gsub(/[^0-9]/, "", fd)
		p = path[pid]
		if (p ~ /^\/proc\/self\/fd\/[0-9]+$/) {
			t = last[pid, substr(p, 15)]
			if (t != "")
				c[t]++
		} else if (byname[pid])
			c[p]++
		last[pid, fd] = p
	}
	END { for (p in c) print p, c[p] }' "$1"
}
