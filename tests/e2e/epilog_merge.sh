#!/bin/bash
# epilog_merge.sh - the job-end merge (issue 13, doc/epilog.md) on a
# 3-node cluster in network namespaces.  slurm.conf names scripts/sh5-epilog
# as EpilogSlurmctld (through a two-line wrapper that points it at this
# test's sh5-epilog.conf, as /etc/slurm/sh5-epilog.conf would).  A profiled
# batch job of user nobody with a 3-node step ends; without any user
# action its job file appears at <ProfileSH5Dir>/nobody/job_<id>.h5
# (profile directory read from acct_gather.conf), owned by nobody, mode
# 0600, no temporary left, holding the batch step and all three node groups
# of step 0 with the values of the node-step files (merge_check.py), merged
# with --sync auto; the job is COMPLETED with exit code 0:0 and every node
# is idle.  Then the destination is made unwritable: the next job still
# completes with 0:0, the nodes stay idle, no job file appears and the
# failure is logged with the job id.  Everything the job user or the
# epilog runs is copied into $CLUSTER_DIR first (the build tree may be
# unreadable to nobody, e.g. a clone in /root).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

PY=/usr/bin/python3
JOBUSER=${SH5_TEST_USER:-nobody}
CHECK="$PY $top_srcdir/tests/tools/merge_check.py"
need_root
need_cmd munged slurmctld slurmd sbatch ip unshare ss runuser setpriv setsid
PLUGIN=$top_builddir/plugins/.libs/acct_gather_profile_sh5.so
[ -f "$PLUGIN" ] || skip "plugin not built (configure --with-slurm-source)"
for f in sh5merge/sh5merge tests/tools/sh5_workload scripts/sh5-epilog; do
	[ -x "$top_builddir/$f" ] || fail "$top_builddir/$f not built"
done
$PY -c 'import h5py' 2>/dev/null || skip "needs python3-h5py"
ip netns add "sh5-eprobe-$$" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "sh5-eprobe-$$"

trap cluster_cleanup EXIT
CLUSTER_NODES=3
CLUSTER_CPUS=1
cluster_init || fail "cluster_init"
# Our own copies, readable by everyone.
S=$CLUSTER_DIR/stage
mkdir -p "$S/plugins" "$S/bin"
cp "$PLUGIN" "$S/plugins/" &&
	cp "$top_builddir/sh5merge/sh5merge" "$top_builddir/tests/tools/sh5_workload" \
		"$top_builddir/scripts/sh5-epilog" "$S/bin/" || fail "staging"
chmod -R a+rX "$S"
PROFDIR=$CLUSTER_DIR/profile
SCRATCH=$CLUSTER_DIR/scratch
mkdir -p "$SCRATCH" && chmod 1777 "$SCRATCH"
ELOG=$CLUSTER_DIR/log/sh5-epilog.log
ECONF=$CLUSTER_CONF_DIR/sh5-epilog.conf
printf '#!/bin/sh\nSH5_EPILOG_CONF=%s exec %s\n' "$ECONF" "$S/bin/sh5-epilog" \
	>"$S/bin/epilog" && chmod 755 "$S/bin/epilog"
cat >"$ECONF" <<EOF
# ProfileDir unset: ProfileSH5Dir of AcctGatherConf.
AcctGatherConf=$CLUSTER_CONF_DIR/acct_gather.conf
Sh5merge=$S/bin/sh5merge
LogFile=$ELOG
Wait=60
EOF
CLUSTER_PLUGIN_DIR=$S/plugins
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
EpilogSlurmctld=$S/bin/epilog"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=2"
cluster_write_conf
cluster_start || fail "3-node cluster did not start"

cat >"$SCRATCH/job.sh" <<EOF
#!/bin/sh
srun -N3 -n3 $S/bin/sh5_workload 3 16 4 $SCRATCH || exit 1
EOF
chmod 755 "$SCRATCH/job.sh"

# run_job NAME: submit the job as the job user, wait for its end; prints
# the job id.
run_job() {
	runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" \
		sbatch --parsable --wait -J "$1" -N3 -n3 --profile=task \
		-o "$SCRATCH/$1.out" "$SCRATCH/job.sh"
}

# check_job_ok JOB: COMPLETED, exit code 0:0, every node idle.
check_job_ok() {
	local info
	info=$(scontrol show job -o "$1")
	assert_match 'JobState=COMPLETED ' "$info" "state of job $1"
	assert_match ' ExitCode=0:0 ' "$info" "exit code of job $1"
	cluster_wait_for "idle nodes after job $1" 15 cluster_all_idle ||
		{ sinfo -N; fail "nodes not idle after job $1"; }
	sinfo -h -N -o '%T %E' | grep -qiv '^idle' &&
		fail "a node is not idle: $(sinfo -h -N -o '%N %T %E')"
	return 0
}

# ---- a profiled job ends: its job file appears
job=$(run_job epi1) || fail "job failed: $(cat "$SCRATCH/epi1.out") $(cluster_log_tail 20)"
job=${job%%;*}
note "job $job done"
check_job_ok "$job"
D=$PROFDIR/$JOBUSER
J=$D/job_$job.h5
cluster_wait_for "the job file $J" 90 test -f "$J" ||
	fail "no job file: $(cat "$ELOG" 2>/dev/null)"
assert_eq "$JOBUSER 600" "$(stat -c '%U %a' "$J")" "owner and mode of the job file"
ls -A "$D" | grep -q '\.tmp\.' && fail "temporary left: $(ls -A "$D")"
grep -q ": info: job $job: merged into $J " "$ELOG" || fail "no log line: $(cat "$ELOG")"
for n in n1 n2 n3; do
	assert_file "$D/${job}_0_$n.h5"
done
# Values: the job file against the node-step files (h5py).
$CHECK job "$J" "$D"/${job}_*.h5 || fail "job file values"
"$S/bin/sh5merge" list -i "$J" >"$CLUSTER_DIR/list.txt" || fail "list"
for want in "step batch: 1 node" "step 0: 3 node" "(asked: auto)"; do
	grep -qF "$want" "$CLUSTER_DIR/list.txt" ||
		{ cat "$CLUSTER_DIR/list.txt"; fail "list lacks '$want'"; }
done
$PY - "$J" <<'EOF' || fail "node groups of step 0"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    nodes = sorted(f["Steps/0/Nodes"].keys())
    assert nodes == ["n1", "n2", "n3"], nodes
    for n in nodes:
        assert len(f["Steps/0/Nodes/%s/Tasks" % n].keys()) == 1, n
EOF

# ---- the merge fails (unwritable destination): logged, the job unharmed
mkdir -p "$CLUSTER_DIR/ro" && chmod 755 "$CLUSTER_DIR/ro"
echo "JobFileDir=$CLUSTER_DIR/ro" >>"$ECONF"
job2=$(run_job epi2) || fail "job 2 failed: $(cat "$SCRATCH/epi2.out")"
job2=${job2%%;*}
check_job_ok "$job2"
cluster_wait_for "the failure of job $job2 in the log" 90 \
	grep -q "job $job2: merge failed" "$ELOG" ||
	fail "no failure logged: $(cat "$ELOG")"
grep "job $job2: merge failed" "$ELOG" | grep -q "Permission denied\|cannot\|$CLUSTER_DIR/ro" ||
	fail "the failure line does not say why: $(grep "job $job2" "$ELOG")"
assert_no_file "$CLUSTER_DIR/ro/job_$job2.h5"
assert_no_file "$D/job_$job2.h5"
[ -z "$(ls -A "$CLUSTER_DIR/ro")" ] || fail "left in ro/: $(ls -A "$CLUSTER_DIR/ro")"
grep -i 'epilog.*\(error\|fail\)' "$(cluster_log ctld)" &&
	fail "slurmctld reports an epilog error"
sinfo -h -N -o '%T' | grep -qv '^idle$' && fail "a node left idle: $(sinfo -N)"
note "log: $(cat "$ELOG")"
echo "epilog merge ok (jobs $job, $job2)"
exit 0
