#!/bin/bash
# sync_multinode.sh - issue 5 end to end: a 3-node cluster in network
# namespaces whose slurmd (and so slurmstepd) run on skewed, drifting
# clocks through libfaketime (n1 real, n2 +12.5 s running 500 ppm fast,
# n3 -20 s running 1000 ppm slow); a real chronyd serves the reference
# time on the controller's bridge address; the plugin measures each
# node's offset every 2 s (ProfileSH5ClockServer).  A profiled
# `srun -N3 sleep` of about 10 s, then `sh5merge merge --sync offset`
# must put every sample of every node within 1 ms of the truth (the real
# time of the sample, from the faketime settings: see
# tests/tools/sync_multinode_check.py), while `--sync none` leaves them
# off by the injected skew.  The truth model is first checked with
# tests/tools/sh5_fakeclock in the nodes' namespaces.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/lib/chrony.sh"

PY=/usr/bin/python3
SH5MERGE=$top_builddir/sh5merge/sh5merge
PROBE=$top_builddir/tests/tools/sh5_fakeclock
CHECK="$PY $top_srcdir/tests/tools/sync_multinode_check.py"
JOBUSER=${SH5_TEST_USER:-nobody}
need_root
need_cmd chronyd munged slurmctld slurmd srun ip unshare ss runuser
[ -f "$top_builddir/plugins/.libs/acct_gather_profile_sh5.so" ] ||
	skip "plugin not built (configure --with-slurm-source)"
[ -x "$SH5MERGE" ] && [ -x "$PROBE" ] || fail "sh5merge or sh5_fakeclock not built"
[ -f "$CLUSTER_FAKETIME_LIB" ] || skip "needs faketime ($CLUSTER_FAKETIME_LIB)"
$PY -c 'import h5py' 2>/dev/null || skip "needs python3-h5py"
ip netns add "sh5-sprobe-$$" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "sh5-sprobe-$$"

# Node i: FAKETIME spec (empty: real clock) and the same as off_ns,rate.
SPEC_2='+12.5s x1.0005'
SPEC_3='-20s x0.999'
TRUTH_1='0,1'
TRUTH_2='12500000000,1.0005'
TRUTH_3='-20000000000,0.999'

trap 'rc=$?; chrony_stop; (exit $rc); cluster_cleanup' EXIT
CLUSTER_NODES=3
CLUSTER_CPUS=1
CLUSTER_FAKETIME_2=$SPEC_2
CLUSTER_FAKETIME_3=$SPEC_3
CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
JobAcctGatherFrequency=task=1"
cluster_init || fail "cluster_init"
PROFDIR=$CLUSTER_DIR/profile
port=$(cluster_free_port) || fail "no free port"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=2
ProfileSH5ClockServer=$CLUSTER_CTLD_ADDR:$port
ProfileSH5ClockInterval=2
ProfileSH5ClockSamples=8
ProfileSH5ClockTimeout=500"
cluster_write_conf
cluster_start || fail "3-node cluster did not start"
chrony_start "$CLUSTER_CTLD_ADDR" "$port" "$CLUSTER_DIR/chrony" ||
	fail "chronyd did not start on $CLUSTER_CTLD_ADDR:$port"

# The truth model, checked where the steps run: each skewed node's spec
# predicts what a fresh process reads to 100 us; a large rate (which
# amplifies any error of the model 500-fold) implies one t0 per process,
# just after its start.
for i in 2 3; do
	var=SPEC_$i
	cluster_node_exec "$i" env LD_PRELOAD="$CLUSTER_FAKETIME_LIB" \
		FAKETIME="${!var}" "$PROBE" 5 100 >"$CLUSTER_DIR/probe$i.txt" ||
		fail "probe on n$i"
	$CHECK model "${!var}" "$CLUSTER_DIR/probe$i.txt" || fail "truth model on n$i"
done
env LD_PRELOAD="$CLUSTER_FAKETIME_LIB" FAKETIME='+12.5s x1.5' "$PROBE" 5 50 \
	>"$CLUSTER_DIR/probe_x.txt" || fail "probe x1.5"
$CHECK model '+12.5s x1.5' "$CLUSTER_DIR/probe_x.txt" --t0-only ||
	fail "truth model (t0)"

# The profiled step: about 10 s, three tasks that sleep (run from
# CLUSTER_DIR: the test's directory may be closed to the job user).
(cd "$CLUSTER_DIR" && runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" \
	srun -N3 -J syncstep --profile=task sleep 10) &
srunpid=$!
job=
for n in $(seq 100); do
	job=$(squeue -h -n syncstep -t R -o %i)
	[ -n "$job" ] && break
	sleep 0.1
done
[ -n "$job" ] || fail "step not running"
# t0 of each node's faked clock.  libfaketime (Debian 0.9.10) keeps its
# start time in shared memory named by FAKETIME_SHARED, which the first
# process (slurmd) creates and exports: slurmstepd, exec'd by slurmd with
# its environment, continues slurmd's timeline instead of starting its
# own.  So t0 is when slurmd's libfaketime initialised: slurmd's start
# time (clock ticks since boot, in CLOCK_REALTIME) plus its start-up
# (the check script adds 20 ms; measured about 25 ms).
boot=$($PY -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_BOOTTIME))')
hz=$(getconf CLK_TCK)
args=
for i in 1 2 3; do
	p=$(cluster_stepd_pid "$job" 0 "n$i") || fail "no slurmstepd of $job.0 on n$i"
	sd=$(awk -v n="slurmd_n$i" '$1 == "pid" && $4 == n { print $3 }' "$CLUSTER_DIR/cluster.created")
	envft=$(tr '\0' '\n' <"/proc/$p/environ" | sed -n 's/^FAKETIME=//p')
	var=SPEC_$i
	assert_eq "${!var:-}" "$envft" "FAKETIME of n$i's slurmstepd"
	if [ -n "${!var:-}" ]; then
		tr '\0' '\n' <"/proc/$p/environ" | grep -q "^FAKETIME_SHARED=.*_$sd\( \|$\)" ||
			fail "n$i's slurmstepd does not share slurmd's ($sd) faked clock"
	fi
	ticks=$(sed 's/.*) //' "/proc/$sd/stat" | cut -d' ' -f20)
	var=TRUTH_$i
	args="$args n$i=${!var},$((boot + ticks * (1000000000 / hz)))"
done
note "node=off_ns,rate,t0_ns:$args"
wait "$srunpid" || fail "srun -N3 failed"
D=$PROFDIR/$JOBUSER
for i in 1 2 3; do
	assert_file "$D/${job}_0_n$i.h5"
done

"$SH5MERGE" merge -j "$job.0" -p "$PROFDIR" -u "$JOBUSER" --sync offset \
	-o "$CLUSTER_DIR/sync.h5" || fail "merge --sync offset"
"$SH5MERGE" -q merge -j "$job.0" -p "$PROFDIR" -u "$JOBUSER" --sync none \
	-o "$CLUSTER_DIR/none.h5" || fail "merge --sync none"
# shellcheck disable=SC2086
$CHECK job "$CLUSTER_DIR/sync.h5" "$CLUSTER_DIR/none.h5" $args ||
	fail "samples not back on the reference clock"
# The default picks offset for these files.
"$SH5MERGE" -q merge -j "$job.0" -p "$PROFDIR" -u "$JOBUSER" \
	-o "$CLUSTER_DIR/auto.h5" || fail "merge (default sync)"
"$SH5MERGE" list -i "$CLUSTER_DIR/auto.h5" | grep -q '^sync: offset (asked: auto)' ||
	fail "default sync is not offset"
echo "sync multinode ok (job $job)"
exit 0
