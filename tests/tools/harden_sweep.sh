#!/bin/bash
# harden_sweep.sh - the adversarial sweep of issue 15, one case per
# finding: every command on hostile inputs and outputs must end within a
# bound, without a crash or a sanitizer report, with "sh5merge: FILE:
# reason" naming what and where, no partial file under the output name,
# inputs unchanged, and devices written in place (never renamed over).
# SH5MERGE may name another build (the sanitizer run uses it).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
S=${SH5MERGE:-$top_builddir/sh5merge/sh5merge}
GEN=$top_builddir/bench/gen_job
PY=/usr/bin/python3
T=$top_srcdir/tests/tools
$PY -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
[ -x "$GEN" ] || { echo "FAIL: $GEN not built"; exit 1; }
W=$(mktemp -d /tmp/harden_sweep.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# run NAME WANT_RC PATTERN CMD...: CMD ends within 30 s with WANT_RC, no
# sanitizer report, and (rc 1) stderr has PATTERN on a "sh5merge: " line.
run() {
	local name=$1 want=$2 pat=$3 rc
	shift 3
	timeout -k 5 30 "$@" >"$W/out" 2>"$W/err" </dev/null
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		bad "$name: did not finish within 30 s"; return 1
	fi
	if grep -Eq 'runtime error|AddressSanitizer|LeakSanitizer' "$W/err"
	then
		head -20 "$W/err"; bad "$name: sanitizer report"; return 1
	fi
	if [ $rc -ne "$want" ]; then
		head -5 "$W/err"; bad "$name: exit $rc, want $want"; return 1
	fi
	if [ -n "$pat" ] && ! grep -Eq -- "^sh5merge: .*($pat)" "$W/err"; then
		head -5 "$W/err"; bad "$name: no '$pat' on stderr"; return 1
	fi
	ok "$name${pat:+ -> $(grep -E -- "$pat" "$W/err" | head -1 | cut -c1-150)}"
}

# Inputs: a job file, node-step files, a trace.
$PY "$T/exports_mkjob.py" job.h5 --nodes 2 --tasks 2 --samples 40 \
	--steps 0 >/dev/null || { echo "FAIL: mkjob"; exit 1; }
mkdir -p prof/u
$GEN -d prof/u -j 7 -n 4 -t 2 -s 2000 -S extern,0 -f mixed -E -r 9 \
	>/dev/null || { echo "FAIL: gen_job"; exit 1; }
printf '#sh5-trace 1\n0,10,SEND,1,0,0,,8\n1,30,RECV,0,0,0,,8\n' > tr.csv
$PY "$T/exports_mkjob.py" hugetime.h5 --nodes 1 --tasks 2 --samples 20 \
	--stock >/dev/null || { echo "FAIL: mkjob --stock"; exit 1; }
sum0=$(md5sum job.h5 tr.csv prof/u/* | md5sum)

# --- crash: merge onto a nearly full file system ---------------------
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	for sz in 1m 1500k; do
		mkdir -p small
		run "merge onto a full $sz tmpfs" 1 "No space left" \
			unshare -m sh -c "mount -t tmpfs -o size=$sz tmpfs small && $S merge -q -j 7 -p prof -u u -o small/job.h5; rc=\$?; ls -A small > ls-small; exit \$rc"
		[ -s ls-small ] && bad "full tmpfs $sz: left $(cat ls-small)"
	done
	# lbdata, counters and merge --counters on a full disk name the file
	# and the errno.
	fill="dd if=/dev/zero of=small/fill bs=4k 2>/dev/null"
	run "counters onto a full tmpfs" 1 "small/c.json: write failed: No space" \
		unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs small && $fill; $S counters -i job.h5 -o small/c.json; rc=\$?; ls -A small > ls-small; exit \$rc"
	grep -v '^fill$' ls-small && bad "counters full: left $(cat ls-small)"
	run "lbdata onto a full tmpfs" 1 "small/l.*No space" \
		unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs small && mkdir small/l && $fill; $S lbdata -i job.h5 -o small/l; exit \$?"
	run "extract onto a full tmpfs" 1 "small/e.csv: write failed: No space" \
		unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs small && $fill; $S extract -i job.h5 -o small/e.csv; rc=\$?; ls -A small > ls-small; exit \$rc"
	grep -v '^fill$' ls-small && bad "extract full: left $(cat ls-small)"
	run "merge --counters onto a full tmpfs" 1 "small/mc.json: write failed: No space" \
		unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs small && $fill; $S merge -q -j 7 -p prof -u u -o mc.h5 --counters small/mc.json; rc=\$?; ls -A small > ls-small; exit \$rc"
	grep -v '^fill$' ls-small && bad "merge --counters full: left $(cat ls-small)"
fi
run "merge under a file size limit" 1 "File too large|No space" \
	bash -c "ulimit -f 600; exec $S merge -q -j 7 -p prof -u u -o fsz.h5"
ls -A | grep -q 'fsz' && bad "file size limit: output or temporary left"

# --- devices: written in place, never renamed over -------------------
if [ "$(id -u)" = 0 ]; then
	mknod full c 1 7 && mknod null c 1 3 || bad "mknod"
	run "counters -o a full device" 1 "full: write failed: No space" \
		$S counters -i job.h5 -o full
	run "sync -o a full device" 1 "full: write failed: No space" \
		$S sync tr.csv -o full
	grep -q "tr.csv" err && bad "sync blames its input for the output"
	run "extract -o a full device" 1 "full: write failed: No space" \
		$S extract -i job.h5 -o full
	run "counters -o a null device" 0 "" $S counters -i job.h5 -o null
	run "report -o a full device" 1 "full: write failed: No space" \
		$S report job.h5 -o full
	run "report -o a null device" 0 "" $S report job.h5 -o null
	run "sync -o a null device" 0 "" $S sync tr.csv -o null
	[ -c full ] && [ -c null ] && ok "devices are still devices" ||
		bad "a device was replaced: $(ls -l full null)"
fi
run "merge -o /dev/null" 1 "not a regular file" \
	$S merge -q -j 7 -p prof -u u -o /dev/null
run "counters -o -" 0 "" $S counters -i job.h5 -o -
grep -q '"counter_stats"' out || bad "counters -o -: no JSON on stdout"
for o in /dev/stdout /dev/fd/1; do
	[ -L /dev/stdout ] || break
	run "counters -o $o" 0 "" $S counters -i job.h5 -o $o
	grep -q '"counter_stats"' out || bad "counters -o $o: no JSON"
	run "extract -o $o" 0 "" $S extract -i job.h5 -o $o
	grep -q '^Step,Node' out || bad "extract -o $o: no CSV"
	if [ ! -L /dev/stdout ]; then
		bad "/dev/stdout replaced by a file (restored)"
		rm -f /dev/stdout && ln -s /proc/self/fd/1 /dev/stdout
	fi
done
ln -s c-real.json c-link.json
run "counters -o a symlink" 0 "" $S counters -i job.h5 -o c-link.json
[ -L c-link.json ] && [ -s c-real.json ] && ok "symlink kept, its file written" ||
	bad "symlink output: $(ls -l c-link.json c-real.json)"
run "sync -o -" 0 "" $S sync tr.csv -o -
grep -q '^1,' out || bad "sync -o -: no CSV on stdout"

# --- outputs that are inputs, partial outputs ------------------------
run "extract -o its input" 1 "also the input" $S extract -i job.h5 -o job.h5
run "counters -o its input" 1 "also an input" $S counters -i job.h5 -o job.h5
run "sync -o its input" 1 "also the input" $S sync tr.csv -o tr.csv
run "report -o its input" 1 "input" $S report job.h5 -o job.h5
run "extract -F Nope" 1 "Nope" $S extract -i job.h5 -F Nope -o ex.csv
[ -e ex.csv ] && bad "extract -F Nope: ex.csv created"
ls -A | grep -q '\.tmp' && bad "temporary files left: $(ls -A | grep tmp)"

# --- inputs that are not regular files -------------------------------
mkfifo fifo
mkdir adir
ln -s loop1 loop2; ln -s loop2 loop1
for c in list extract lbdata counters; do
	o=""; [ $c = lbdata ] && o="-o lbo"; [ $c = counters ] && o="-o c.json"
	run "$c -i FIFO" 1 "fifo: is a FIFO" $S $c -i fifo $o
	run "$c -i directory" 1 "adir: is a directory" $S $c -i adir $o
	run "$c -i symlink loop" 1 "loop1: Too many levels" $S $c -i loop1 $o
done
run "sync FIFO" 1 "fifo: is a FIFO" $S sync fifo -o s.csv
run "events FIFO" 1 "fifo: is a FIFO" $S events fifo -o s.csv
run "report FIFO" 1 "fifo: is a FIFO" $S report fifo -o r.html
run "otf2 FIFO" 1 "fifo: is a FIFO" $S otf2 fifo -o otf
if [ "$(id -u)" != 0 ]; then
	cp job.h5 m000.h5; chmod 000 m000.h5
	run "list mode 000" 1 "m000.h5: Permission denied" $S list -i m000.h5
fi

# --- undefined behaviour (the sanitizer run makes these fail) --------
run "counters without anomalies" 0 "" $S counters -i job.h5 -o c0.json
$PY - <<'EOF' || bad "python set-up"
import h5py, numpy as np, shutil
shutil.copy("job.h5", "emptysteps.h5")
f = h5py.File("emptysteps.h5", "r+"); del f["Steps"]; f.create_group("Steps")
f.close()
shutil.copy("job.h5", "dsetsteps.h5")
f = h5py.File("dsetsteps.h5", "r+"); del f["Steps"]
f["Steps"] = np.zeros(3)
f.close()
# a step of 3000 extra two-row task series
shutil.copy("job.h5", "many.h5")
f = h5py.File("many.h5", "r+")
t = f["Steps/0/Nodes/node00/Tasks"]
src = t[sorted(t.keys())[0]]
a = src[:2]
for i in range(100, 3100):
    d = t.create_dataset(str(i), data=a, maxshape=(None,), chunks=True)
    for k, v in src.attrs.items():
        d.attrs[k] = v
# a series claiming 10^9 rows over no chunk
shutil.copy("job.h5", "huge.h5")
f = h5py.File("huge.h5", "r+")
t = f["Steps/0/Nodes/node00/Tasks"]
src = t[sorted(t.keys())[0]]
d = t.create_dataset("77", shape=(10**9,), dtype=src.dtype,
                     maxshape=(None,), chunks=(1024,))
f.close()
# huge time spans (ns); EpochTime * 1e9 beyond int64 (stock shape);
# extreme values whose statistics overflow to infinity
shutil.copy("job.h5", "hugespan.h5")
f = h5py.File("hugespan.h5", "r+")
t = f["Steps/0/Nodes/node00/Tasks"]
d = t[sorted(t.keys())[0]]
r = d[...]
for tn in ("EpochTimeNs", "EpochTime", "SyncTimeNs"):
    if tn in r.dtype.names:
        r[tn][0] = -(2**62) if tn != "EpochTime" else 1
        r[tn][-1] = 2**62
d[...] = r
f.close()
f = h5py.File("hugetime.h5", "r+")
for n, o in list(f["Steps"].items()):
    pass
def epoch(name, o):
    if isinstance(o, h5py.Dataset) and o.dtype.names and \
       "EpochTime" in o.dtype.names and "EpochTimeNs" not in o.dtype.names:
        r = o[...]
        r["EpochTime"][-1] = 2**62
        o[...] = r
f.visititems(epoch)
f.close()
shutil.copy("job.h5", "inf.h5")
f = h5py.File("inf.h5", "r+")
t = f["Steps/0/Nodes/node00/Tasks"]
d = t[sorted(t.keys())[0]]
r = d[...]
fld = [x for x in r.dtype.names if r.dtype[x].kind == "f"][0]
r[fld][3] = 1e308
r[fld][4] = -1e308
r[fld][5] = 1e308
d[...] = r
f.close()
EOF
run "list: /Steps empty" 0 "" $S list -i emptysteps.h5
run "extract: /Steps empty" 1 "emptysteps.h5" $S extract -i emptysteps.h5
run "list: /Steps a dataset" 1 "dsetsteps.h5: not a job file" \
	$S list -i dsetsteps.h5
run "extract: /Steps a dataset" 1 "dsetsteps.h5: not a job file" \
	$S extract -i dsetsteps.h5
run "merge: no files of the job" 1 "no node-step files of job 7199" \
	$S merge -q -j 7199 -p prof -u u -o x.h5
run "merge: unknown step" 1 "for the selected steps" \
	$S merge -q -j 7.bogus -p prof -u u -o x.h5
run "list: huge time span" 0 "" $S list -i hugespan.h5
run "counters: EpochTime past 2262" 1 "hugetime.h5: .*time 4611686018427387904 s out of range" \
	$S counters -i hugetime.h5 -o ht.json
run "counters: statistics overflow" 1 "inf.json: NaN or infinity has no JSON form \(at counter_stats\[counter=" \
	$S counters -i inf.h5 -o inf.json
[ -e inf.json ] && bad "infinity: partial inf.json left"

# node-step files: a task id past int64, EpochTime past 2262, bad Node
# Index, a step claiming 10^9 tasks.
mkdir -p p2/u
$GEN -d p2/u -j 9 -n 2 -t 2 -s 10 -S 0 -f sh5 >/dev/null || bad gen
cp -r p2 p3
$GEN -d p3/u -j 11 -n 1 -t 2 -s 10 -S 0 -f stock >/dev/null || bad gen
$PY - <<'EOF' || bad "python set-up 2"
import h5py
f = h5py.File("p2/u/9_0_node1.h5", "r+")
g = f["node1"]
g.attrs["Step Tasks"] = 1000000000
t = g["Tasks"]
t.move(sorted(t.keys())[0], "99999999999999999999")
f.close()
f = h5py.File("p2/u/9_0_node2.h5", "r+")
f["node2"].attrs["Node Index"] = -1
f.close()
import glob
p = glob.glob("p3/u/11_0_*.h5")[0]
f = h5py.File(p, "r+")
def flip(name, o):
    if isinstance(o, h5py.Dataset) and o.dtype.names and \
       "EpochTime" in o.dtype.names:
        r = o[...]
        r["EpochTime"][1] = 2**63 + 5
        o[...] = r
f.visititems(flip)
f.close()
EOF
run "merge: hostile node attributes" 1 "9_0_node1.h5: damaged: .*Step Tasks" \
	$S merge -j 9 -p p2 -u u -o j9.h5
grep -q "9_0_node2.h5: damaged: .*Node Index' = -1" err ||
	bad "Node Index -1 not named"
run "merge: EpochTime past 2262" 1 "EpochTime out of range" \
	$S merge -j 11 -p p3 -u u -o j11.h5

# --- hangs -----------------------------------------------------------
t0=$(date +%s)
run "counters: 3000 tiny task series" 0 "" $S counters -i many.h5 -o m.json
run "lbdata: 3000 tiny task series" 0 "" $S lbdata -i many.h5 -o mlb
[ $(( $(date +%s) - t0 )) -le 40 ] && ok "3000 series in $(( $(date +%s) - t0 )) s" ||
	bad "3000 series took $(( $(date +%s) - t0 )) s"
run "counters: 10^9 rows over no chunk" 1 "claims 1000000000 rows but stores 0" \
	$S counters -i huge.h5 -o h.json
run "lbdata: 10^9 rows over no chunk" 1 "claims 1000000000 rows" \
	$S lbdata -i huge.h5 -o hlb

# --- damaged job files over every reading command ---------------------
# Truncation at several offsets and bit flips in metadata and data: each
# run ends within the bound, with exit 0 or 1 (never a crash), no
# sanitizer report, and on 1 a "sh5merge: " line; no partial output.
size=$(stat -c %s job.h5)
n=0
for cut in 0 96 512 2048 $((size / 3)) $((size / 2)) $((size - 100)); do
	head -c $cut job.h5 > dmg.h5
	for c in list extract counters lbdata; do
		o=""; [ $c = lbdata ] && o="-o dmg-lb"
		[ $c = counters ] && o="-o dmg.json"
		[ $c = extract ] && o="-o dmg.csv"
		timeout -k 5 30 $S $c -i dmg.h5 $o >/dev/null 2>dmg.err </dev/null
		rc=$?
		n=$((n + 1))
		if [ $rc -gt 1 ] ||
			grep -Eq 'runtime error|Sanitizer' dmg.err ||
			{ [ $rc -eq 1 ] && ! grep -q '^sh5merge: ' dmg.err; }; then
			head -5 dmg.err; bad "$c on job.h5 cut at $cut: exit $rc"
		fi
		[ $rc -ne 0 ] && [ $c != lbdata ] && [ -e "${o#-o }" ] &&
			bad "$c cut at $cut: partial ${o#-o }"
		rm -rf dmg.json dmg.csv dmg-lb
	done
done
for seed in 1 2 3 4 5 6 7 8; do
	$PY - "$seed" <<'EOF2'
import random, sys
b = bytearray(open("job.h5", "rb").read())
r = random.Random(int(sys.argv[1]))
# metadata (the first KiB and random places), then chunk data
for _ in range(4):
    i = r.randrange(0, 1024) if r.random() < 0.5 else r.randrange(len(b))
    b[i] ^= 1 << r.randrange(8)
open("dmg.h5", "wb").write(b)
EOF2
	for c in list extract counters lbdata; do
		o=""; [ $c = lbdata ] && o="-o dmg-lb"
		[ $c = counters ] && o="-o dmg.json"
		[ $c = extract ] && o="-o dmg.csv"
		timeout -k 5 30 $S $c -i dmg.h5 $o >/dev/null 2>dmg.err </dev/null
		rc=$?
		n=$((n + 1))
		if [ $rc -gt 1 ] || grep -Eq 'runtime error|Sanitizer' dmg.err ||
			{ [ $rc -eq 1 ] && ! grep -q '^sh5merge: ' dmg.err; }; then
			head -5 dmg.err; bad "$c on job.h5 flipped (seed $seed): exit $rc"
		fi
		rm -rf dmg.json dmg.csv dmg-lb
	done
done
ok "$n runs on truncated and bit-flipped job files"
# malformed traces
for body in '0,10,SEND,1,0,0,,8' '0,1e99,INT,,,,,' "$(printf '0,%s,INT,,,,,' 9223372036854775807)" \
	'0,10,INT,,,,,\n0,9223372036854775807,INT,,,,,\n1,-9223372036854775807,INT,,,,,' \
	'\x00\x01,,,' '#comm 1 0 0 0 0\n0,1,CBEGIN,BARRIER,,1,,0'; do
	printf '#sh5-trace 1\n%b\n' "$body" > bad.csv
	timeout -k 5 30 $S sync bad.csv -o bad.out >/dev/null 2>bad.err </dev/null
	rc=$?
	if [ $rc -gt 1 ] || grep -Eq 'runtime error|Sanitizer' bad.err; then
		head -5 bad.err; bad "sync on '$body': exit $rc"
	fi
	[ $rc -ne 0 ] && [ -e bad.out ] && bad "sync '$body': partial bad.out"
	rm -f bad.out
done
ok "malformed traces"

# --- messages --------------------------------------------------------
run "merge -j ''" 2 "-j '' names no job" $S merge -j '' -p prof
run "merge -j ,,," 2 "-j ',,,' names no job" $S merge -j ,,, -p prof
L=$(printf 'd%.0s' $(seq 250)); P=$L
for i in $(seq 18); do P="$P/$L"; done
run "list: path > PATH_MAX" 1 "\.\.\..*: File name too long" $S list -i "$P"
run "counters -o path > PATH_MAX" 1 "File name too long" \
	$S counters -i job.h5 -o "$P"
run "merge -p path > PATH_MAX" 1 "File name too long|longer than" \
	$S merge -q -j 7 -p "$P" -u u -o x.h5
run "merge -o path > PATH_MAX" 1 "File name too long" \
	$S merge -q -j 7 -p prof -u u -o "$P"
run "lbdata -p 1e300" 0 "" $S lbdata -i job.h5 -o lb300 -p 1e300
run "lbdata -p 1e-9" 1 "phase length 1e-09 s gives [0-9]+ phases" \
	$S lbdata -i job.h5 -o lb9 -p 1e-9

[ -c /dev/null ] && [ -c /dev/full ] && [ -L /dev/stdout ] ||
	bad "/dev/null, /dev/full or /dev/stdout is no longer what it was"
sum1=$(md5sum job.h5 tr.csv prof/u/* | md5sum)
[ "$sum0" = "$sum1" ] && ok "inputs unchanged" || bad "an input changed"
echo "$fails failure(s)"
[ $fails -eq 0 ]
