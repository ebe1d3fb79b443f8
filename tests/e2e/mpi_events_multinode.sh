#!/bin/bash
# mpi_events_multinode.sh - application events on three nodes whose
# clocks are skewed: n1 on the real clock, n2 12.5 s ahead and 500 ppm
# fast, n3 20 s behind and 1000 ppm slow (libfaketime in slurmd, and in
# the tasks through a TaskProlog sharing slurmd's faked clock, see
# tests/lib/cluster.sh); chronyd on the controller's address is the
# clock server the plugin measures against.  An unmodified MPI program
# runs on 3 ranks (one per node) under `srun --mpi=pmix` with the preload
# library; `sh5merge merge --sync clc` maps every event through its
# node's offset measurements and applies the controlled logical clock.
# Asserted: the program's output and exit status are those of a run
# without the library; the raw events show clock-condition violations and
# barrier ends about 32.5 s apart (the skew); after the correction there
# are no violations, local order is kept, every event's corrected time is
# within 1 ms of its real time (from libfaketime's model of the clocks),
# and the ends of each barrier lie as far apart as they really did, to
# 1 ms; every message is matched and the bytes per pair equal the
# program's; the LBDatafile's communications equal them per phase.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/lib/chrony.sh"
. "$top_srcdir/tests/e2e/mpi_events_lib.sh"

mpi_events_need
need_cmd chronyd ip unshare
[ -f "$CLUSTER_FAKETIME_LIB" ] || skip "needs faketime ($CLUSTER_FAKETIME_LIB)"
ip netns add "sh5-mprobe-$$" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "sh5-mprobe-$$"

trap 'rc=$?; chrony_stop; (exit $rc); cluster_cleanup' EXIT
CLUSTER_NODES=3
CLUSTER_CPUS=2
CLUSTER_FAKETIME_2='+12.5s x1.0005'
CLUSTER_FAKETIME_3='-20s x0.999'
CLUSTER_TASK_FAKETIME=1
CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
JobAcctGatherFrequency=task=1"
cluster_init || fail "cluster_init"
PROFDIR=$CLUSTER_DIR/profile
port=$(cluster_free_port) || fail "no free port"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=2
ProfileSH5ClockServer=$CLUSTER_CTLD_ADDR:$port
ProfileSH5ClockInterval=1
ProfileSH5ClockSamples=8
ProfileSH5ClockTimeout=500"
cluster_write_conf
cluster_start || fail "3-node cluster did not start"
chrony_start "$CLUSTER_CTLD_ADDR" "$port" "$CLUSTER_DIR/chrony" ||
	fail "chronyd did not start on $CLUSTER_CTLD_ADDR:$port"
mpi_events_bin
# The three nodes share this machine's two CPUs: ranks that wait yield
# the CPU (OpenMPI's mpi_yield_when_idle), so that the real ends of a
# barrier lie microseconds apart, not a scheduler tick (4 ms) or more.
RUN="env OMPI_MCA_mpi_yield_when_idle=1 srun -N3 -n3 --mpi=pmix --profile=task"
ARGS="-n 6 -w 400"

as_user $RUN "$BIN/sh5_mpitest" $ARGS -j "$OUT/plain.json" \
	>"$OUT/plain.out" 2>"$OUT/plain.err"
rc0=$?
as_user $RUN --export="ALL,LD_PRELOAD=$BIN/libsh5mpi.so" \
	"$BIN/sh5_mpitest" $ARGS -j "$OUT/truth.json" \
	>"$OUT/ev.out" 2>"$OUT/ev.err"
rc1=$?
cat "$OUT/ev.err" >&2
assert_eq 0 "$rc0" "exit status without the library"
assert_eq "$rc0" "$rc1" "exit status with the library"
cmp -s "$OUT/plain.out" "$OUT/ev.out" ||
	fail "output changed by the library: $(diff "$OUT/plain.out" "$OUT/ev.out" | head -5)"
cmp -s "$OUT/plain.json" "$OUT/truth.json" ||
	fail "the program's report changed by the library"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
for i in 1 2 3; do
	assert_file "$PROFDIR/$JOBUSER/${job}_0_n$i.h5"
done

"$SH5MERGE" merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" --sync clc \
	-o "$OUT/job.h5" --lbdata "$OUT/lb" 2>"$OUT/merge.err" ||
	{ cat "$OUT/merge.err" >&2; fail "merge --sync clc"; }
cat "$OUT/merge.err" >&2
"$SH5MERGE" events "$OUT/job.h5" --raw -o "$OUT/raw.csv" || fail "events --raw"
"$SH5MERGE" events "$OUT/job.h5" -o "$OUT/corr.csv" || fail "events"
"$SH5MERGE" sync "$OUT/raw.csv" -o "$OUT/resync.csv" >/dev/null 2>&1 ||
	fail "sync of the raw events"
cmp -s "$OUT/resync.csv" "$OUT/corr.csv" ||
	fail "sh5merge sync of the raw events differs from the merge's correction"
# The real time of every event, from libfaketime's model of each node's
# clock (see tests/tools/sync_multinode_check.py for how it was measured):
# the tasks share slurmd's faked clock (FAKETIME_SHARED), which started
# when slurmd started (plus its start-up, 20 ms).  An error d in that
# start moves the real time by d x |1 - 1/rate|: 50 ms give 50 us.
boot=$($PY -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_BOOTTIME))')
hz=$(getconf CLK_TCK)
clocks=
for i in 2 3; do
	sd=$(awk -v n="slurmd_n$i" '$1 == "pid" && $4 == n { print $3 }' "$CLUSTER_DIR/cluster.created")
	ticks=$(sed 's/.*) //' "/proc/$sd/stat" | cut -d' ' -f20)
	t0=$((boot + ticks * (1000000000 / hz) + 20000000))
	case $i in
	2) model=12500000000,1.0005 ;;
	3) model=-20000000000,0.999 ;;
	esac
	clocks="$clocks --clock $((i - 1))=$model,$t0"
done
note "clocks:$clocks"
# n2 - n3: 12.5 s + 20 s apart, plus drift of well under a second.
# shellcheck disable=SC2086
$CHECK csv "$OUT/raw.csv" "$OUT/corr.csv" "$OUT/truth.json" --skew 32.5 \
	$clocks || fail "events against the program and the clocks"
$CHECK lbdata "$OUT/lb" "$OUT/truth.json" || fail "LBDatafile communications"
# The views of the same real job (issue 12): the report in a real browser
# holds the timeline, phases, imbalance and the communication matrix; the
# OTF2 archive read back by python3-otf2 matches the job file.
T=$top_srcdir/tests/tools
if [ -x "$SH5MERGE" ] && "$SH5MERGE" report "$OUT/job.h5" -o "$OUT/report.html" &&
	command -v chromium-headless-shell >/dev/null; then
	bash "$T/report_browser_check.sh" "$OUT/report.html" "$OUT/browser" \
		timeline phase-load comm-matrix imbalance ||
		fail "report of the MPI job in the browser"
else
	fail "sh5merge report of the MPI job (or no chromium-headless-shell)"
fi
if "$SH5MERGE" otf2 "$OUT/job.h5" -o "$OUT/trace" 2>"$OUT/otf2.err"; then
	$PY "$T/otf2_check.py" "$OUT/trace/traces.otf2" "$OUT/job.h5" 0 ||
		fail "OTF2 archive of the MPI job"
elif grep -q 'not built' "$OUT/otf2.err"; then
	note "otf2 not built into sh5merge: not checked"
else
	cat "$OUT/otf2.err" >&2
	fail "sh5merge otf2 of the MPI job"
fi
exit 0
