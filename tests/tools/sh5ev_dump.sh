#!/bin/bash
# sh5ev_dump.sh - spill files written by the real event library
# (tests/tools/sh5ev_write) and printed by tests/tools/sh5ev_dump: the
# text format other tests rely on, a damaged block, a torn tail, the size
# limit, and files refused (not a spill file, symlink, hard link).
set -u
: "${top_builddir:?}"
W=$top_builddir/tests/tools/sh5ev_write
D=$top_builddir/tests/tools/sh5ev_dump
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # what, got, want
	if [ "$2" != "$3" ]; then
		fail "$1"
		diff <(echo "$3") <(echo "$2") | sed 's/^/  /'
	fi
}

export SH5_EVENTS_DIR=$tmp SH5_EVENTS_PREFIX=9_0_n1 SLURM_PROCID=4
export SH5_EVENTS_BUFFER=4096
f=$("$W" <<'SCRIPT' | tail -1
region solve
region MPI_Send mpi
comm 2 17179869185 3 1 4 5 6
enter 0 1000
send 2 5 7 4096 1100
coll begin 6 0 -1 8 1200
coll end 6 0 -1 8 1300
exit 0 1400
rank 8 4
object 42 0.5
SCRIPT
)
[ -f "$f" ] || { echo "FAIL: no spill file written"; exit 1; }
[ "$(basename "$f")" = "9_0_n1.4.$(basename "$f" | cut -d. -f3).sh5ev" ] ||
	fail "file name $f"
out=$("$D" "$f") || fail "sh5ev_dump exit $?"
body=$(echo "$out" | sed '1d' | grep -v '^EV [0-9]* \(RANK\|OBJECT\)')
expect "dump body" "$body" "REGION 0 0 solve
REGION 1 1 MPI_Send
COMM 2 17179869185 3 1 4 5 6
EV 1000 ENTER 0 0 0 0 0 0 0
EV 1100 SEND 0 0 2 5 7 4096 0
EV 1200 CBEGIN 6 0 0 -1 0 8 0
EV 1300 CEND 6 0 0 -1 0 8 0
EV 1400 EXIT 0 0 0 0 0 0 0
INFO blocks=1 bad=0 torn=0 truncated=0 events=7 rejected=0 lost=0 problem="
# (RANK and OBJECT, last, take the time now)
echo "$out" | grep -q "^EV [0-9]* RANK 0 0 8 4 0 0 0$" || fail "RANK line"
echo "$out" | grep -q "^EV [0-9]* OBJECT 0 0 0 0 0 42 0.5$" || fail "OBJECT line"
echo "$out" | head -1 | grep -q "^FILE task=4 pid=[0-9]* block_size=4096 created=[0-9]* prefix=9_0_n1 lib=" ||
	fail "FILE line: $(echo "$out" | head -1)"
echo "ok: format"

# 2000 enter/exit pairs: 4000 events in 40 blocks of 101 records
f=$(printf 'region r\nloop 2000 1000 10\n' | "$W" | tail -1)
out=$("$D" "$f" | tail -1)
expect "loop" "$out" "INFO blocks=40 bad=0 torn=0 truncated=0 events=4000 rejected=0 lost=0 problem="
cp "$f" "$tmp/bad.x"
printf '\xff' | dd of="$tmp/bad.x" bs=1 seek=$((256 + 4096 * 5 + 300)) conv=notrunc status=none
out=$("$D" "$tmp/bad.x" | tail -1)
expect "damaged block" "$out" "INFO blocks=39 bad=1 torn=0 truncated=0 events=3899 rejected=0 lost=0 problem=block 5: checksum mismatch, block dropped"
cp "$f" "$tmp/torn.x"
truncate -s $((256 + 4096 * 7 + 123)) "$tmp/torn.x"
out=$("$D" "$tmp/torn.x" | tail -1)
expect "torn tail" "$out" "INFO blocks=7 bad=0 torn=1 truncated=0 events=705 rejected=0 lost=0 problem=torn block at the end of the file dropped"
out=$("$D" -m $((256 + 4096 * 2)) "$f" | tail -1)
expect "max bytes" "$out" "INFO blocks=2 bad=0 torn=0 truncated=1 events=200 rejected=0 lost=0 problem=stopped at 8448 bytes of 164096"
echo "ok: damaged, torn, truncated"

echo "not a spill file, but long enough to hold a header ......" >"$tmp/text.x"
head -c 300 /dev/zero >>"$tmp/text.x"
err=$("$D" "$tmp/text.x" 2>&1 >/dev/null); rc=$?
expect "not a spill file" "$rc $err" "1 sh5ev_dump: $tmp/text.x: not a spill file (bad magic)"
ln -s "$f" "$tmp/link.x"
err=$("$D" "$tmp/link.x" 2>&1 >/dev/null); rc=$?
expect "symlink" "$rc $err" "1 sh5ev_dump: $tmp/link.x: is a symbolic link"
ln "$f" "$tmp/hard.x"
err=$("$D" "$tmp/hard.x" 2>&1 >/dev/null); rc=$?
expect "hard link" "$rc $err" "1 sh5ev_dump: $tmp/hard.x: has 2 links, not 1"
"$D" >/dev/null 2>&1; rc=$?
expect "usage" "$rc" "2"
echo "ok: refused files"

# nothing recorded: no file
before=$(ls "$tmp" | wc -l)
out=$(printf '# nothing\n' | "$W")
expect "no file" "$out$(ls "$tmp" | wc -l)" "$before"
[ $fails -eq 0 ] && echo "PASS" || echo "$fails failed"
[ $fails -eq 0 ]
