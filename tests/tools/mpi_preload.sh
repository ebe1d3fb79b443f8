#!/bin/bash
# mpi_preload.sh - libsh5mpi.so, preloaded into the unmodified MPI program
# sh5_mpitest, changes nothing the program computes and records what it
# did.
#
# 1. mpirun -np 4 without and with LD_PRELOAD=libsh5mpi.so (SH5_EVENTS_DIR
#    set): same stdout, exit status and JSON report; one spill file per
#    rank; mpi_check.py compares the events (read with sh5ev_dump) with
#    the report: RANK records, SEND totals per (rank, peer, phase), RECV
#    totals, wildcard receives resolved, CBEGIN/CEND per operation,
#    communicator definitions, MPI regions, PHASE marks from MPI_Pcontrol.
# 2. The same with SH5_EVENTS_BUFFER=4096: many blocks per file.
# 3. 3 ranks (odd; MPI_Init_thread) and 1 rank, preloaded, checked the
#    same way.
# 4. Preloaded without SH5_EVENTS_DIR: same output, no file written.
# 5. MPI calls from two threads: only those of the thread that called
#    MPI_Init_thread are recorded; the communicators the other thread
#    makes leave no one waiting.
# Exit 0 pass, 1 fail, 77 when the MPI parts are not built (HAVE_MPI off).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
B=$top_builddir
PROG=$B/tests/tools/sh5_mpitest
LIB=$B/mpi/.libs/libsh5mpi.so
DUMP=$B/tests/tools/sh5ev_dump
CHECK=$top_srcdir/tests/tools/mpi_check.py
if [ ! -x "$PROG" ] || [ ! -f "$LIB" ]; then
	echo "SKIP: MPI parts not built (configure found no OpenMPI)"
	exit 77
fi
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -x "$DUMP" ] || { echo "FAIL: $DUMP not built"; exit 1; }

# OpenMPI in a container, as root, without a resource manager: allow
# root, start ranks locally (plm isolated: no ssh, no Slurm), and copy
# through shared memory without CMA (ptrace is often not allowed).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm=isolated OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
unset SH5_EVENTS_DIR SH5_EVENTS_PREFIX SH5_EVENTS_BUFFER SH5_EVENTS_MAX

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ITERS=6

# run NAME NP [VAR=VALUE...]: sh5_mpitest (options: array OPT) under
# mpirun, the variables exported to every rank; stdout in $tmp/NAME.out,
# report $tmp/NAME.json.
OPT=()
run() {
	local name=$1 np=$2 x=() v
	shift 2
	for v in "$@"; do x+=(-x "$v"); done
	timeout 300 mpirun -np "$np" --oversubscribe "${x[@]}" "$PROG" \
		"${OPT[@]}" -n $ITERS -j "$tmp/$name.json" >"$tmp/$name.out" \
		2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}

# same NAME REF: NAME's output, exit status and report are REF's.
same() {
	cmp -s "$tmp/$1.out" "$tmp/$2.out" ||
		fail "$1: stdout differs: $(cat "$tmp/$1.out") vs $(cat "$tmp/$2.out")"
	cmp -s "$tmp/$1.rc" "$tmp/$2.rc" ||
		fail "$1: exit status $(cat "$tmp/$1.rc"), want $(cat "$tmp/$2.rc")"
	cmp -s "$tmp/$1.json" "$tmp/$2.json" || fail "$1: JSON report differs"
}

# events NAME NP DIR: one spill file per rank in DIR, all consistent with
# NAME's report.  Prints the total of blocks.
events() {
	local name=$1 np=$2 dir=$3 f n=0 dumps=()
	for f in "$dir"/*.sh5ev; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		"$DUMP" "$f" >"$f.txt" || fail "$name: sh5ev_dump $f failed"
		dumps+=("$f.txt")
	done
	[ "$n" = "$np" ] || fail "$name: $n spill files for $np ranks"
	[ "$n" -gt 0 ] || return
	/usr/bin/python3 "$CHECK" "$tmp/$name.json" "${dumps[@]}" ||
		fail "$name: events differ from what the program did"
	cat "${dumps[@]}" | sed -n 's/^INFO blocks=\([0-9]*\).*/\1/p' |
		awk '{s += $1} END {print "blocks", s + 0}' >"$tmp/$name.blocks"
}

# 1. Four ranks, without and with the library.
run plain 4
[ "$(cat "$tmp/plain.rc")" = 0 ] || {
	cat "$tmp/plain.err"
	fail "sh5_mpitest without the library failed"
}
grep -q '^sh5_mpitest: ranks 4 iterations 6 checksum ' "$tmp/plain.out" ||
	fail "plain: no result line"
mkdir "$tmp/ev4"
run pre4 4 LD_PRELOAD="$LIB" SH5_EVENTS_DIR="$tmp/ev4"
same pre4 plain
events pre4 4 "$tmp/ev4"
[ -s "$tmp/pre4.err" ] && fail "pre4: stderr: $(head -5 "$tmp/pre4.err")"
# The check catches a report that differs in one message's size.
sed '0,/"bytes": /s/"bytes": \([0-9]*\)/"bytes": 1\1/' "$tmp/pre4.json" \
	>"$tmp/wrong.json"
cmp -s "$tmp/wrong.json" "$tmp/pre4.json" && fail "could not alter the report"
/usr/bin/python3 "$CHECK" "$tmp/wrong.json" "$tmp"/ev4/*.txt >/dev/null &&
	fail "mpi_check.py passed a wrong report"

# 2. Blocks of 4 KiB: a file is many blocks, definitions cross them.
mkdir "$tmp/ev4s"
run small 4 LD_PRELOAD="$LIB" SH5_EVENTS_DIR="$tmp/ev4s" \
	SH5_EVENTS_BUFFER=4096
same small plain
events small 4 "$tmp/ev4s"
nb=$(awk '{print $2}' "$tmp/small.blocks" 2>/dev/null)
[ "${nb:-0}" -ge 16 ] || fail "small: ${nb:-0} blocks in 4 files, want >= 16"

# 3. Three ranks (started with MPI_Init_thread) and one rank.
for np in 3 1; do
	OPT=()
	[ "$np" = 3 ] && OPT=(-t)
	run "plain$np" "$np"
	mkdir "$tmp/ev$np"
	run "pre$np" "$np" LD_PRELOAD="$LIB" SH5_EVENTS_DIR="$tmp/ev$np"
	same "pre$np" "plain$np"
	events "pre$np" "$np" "$tmp/ev$np"
done
OPT=()

# 4. Preloaded, not profiled: a pass-through that writes nothing.
mkdir "$tmp/none"
( cd "$tmp/none" && run off 4 LD_PRELOAD="$LIB" )
same off plain
[ -z "$(ls -A "$tmp/none")" ] || fail "off: files written: $(ls "$tmp/none")"

# 5. Two threads making MPI calls (MPI_THREAD_MULTIPLE): same output;
#    only the thread that called MPI_Init_thread is recorded: per rank 2
#    (its duplicates of world) + THR communicators, THR Allreduce + 1
#    Reduce, THR sends of MPI_Sendrecv and THR of MPI_Send.
THR=50
mpith() {
	timeout 300 mpirun -np 3 --oversubscribe "$@" \
		"$B/tests/tools/sh5_mpithreads" $THR
}
mpith >"$tmp/th.out" 2>"$tmp/th.err"
th_rc=$?
if [ "$th_rc" = 77 ] || grep -q 'no MPI_THREAD_MULTIPLE' "$tmp/th.out"; then
	echo "note: OpenMPI without MPI_THREAD_MULTIPLE: thread check skipped"
else
	[ "$th_rc" = 0 ] || fail "sh5_mpithreads failed: $(cat "$tmp/th.err")"
	mkdir "$tmp/evth"
	mpith -x LD_PRELOAD="$LIB" -x SH5_EVENTS_DIR="$tmp/evth" \
		>"$tmp/thp.out" 2>"$tmp/thp.err"
	[ $? = 0 ] || fail "threads, preloaded: failed: $(cat "$tmp/thp.err")"
	cmp -s "$tmp/th.out" "$tmp/thp.out" || fail "threads: stdout differs"
	n=0
	for f in "$tmp"/evth/*.sh5ev; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		"$DUMP" "$f" | awk -v thr=$THR -v f="$f" '
			/^COMM/ { comms++ }
			/^EV/ && $3 == "CBEGIN" { coll++ }
			/^EV/ && $3 == "SEND" { send++ }
			/^EV/ && $3 == "RECV" { recv++ }
			/^INFO/ { info = $0 }
			END {
				want = "comms " thr + 2 " coll " thr + 1 \
				       " send " 2 * thr " recv " 2 * thr
				got = "comms " comms + 0 " coll " coll + 0 \
				      " send " send + 0 " recv " recv + 0
				if (got != want || info !~ / bad=0 .* lost=0 /) {
					print "FAIL: threads: " f ": " got \
					      ", want " want "; " info
					exit 1
				}
			}' || fails=$((fails + 1))
	done
	[ "$n" = 3 ] || fail "threads: $n spill files for 3 ranks"
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "PASS: mpi_preload ($(cat "$tmp/small.blocks") with 4 KiB blocks)"
exit 0
