#!/bin/bash
# Symlinks planted where the user directory or the node-step file would go
# are not followed (CVE-2023-41914 was the stock plugin following them as
# root); the jobs still succeed.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

PLUGIN_EXTRA_SLURM_CONF="FirstJobId=7000" plugin_cluster_setup
uid=$(id -u "$JOBUSER")
victim=$CLUSTER_DIR/victim
victimdir=$CLUSTER_DIR/victimdir
mkdir -p "$PROFDIR" "$victimdir"
# The job user's directory exists; in it, a symlink where job 7000's file goes.
install -d -m 0700 -o "$uid" "$PROFDIR/$JOBUSER"
ln -s "$victim" "$PROFDIR/$JOBUSER/7000_0_$NODE.h5"
# root's user directory is a symlink to somewhere else.
ln -s "$victimdir" "$PROFDIR/root"

as_user srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" || fail "job 7000 failed"
assert_eq "$(last_job_id)" 7000 "job id"
[ -L "$PROFDIR/$JOBUSER/7000_0_$NODE.h5" ] || fail "the planted symlink was replaced"
assert_no_file "$victim"
srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" || fail "root's job failed"
assert_eq "$(ls -A "$victimdir")" "" "nothing written through the symlinked directory"
log=$(cluster_log slurmd)
grep -q "acct_gather_profile/sh5.*symlink" "$log" || fail "no log line about the symlink"
grep -q "acct_gather_profile/sh5.*refused" "$log" || fail "no refusal logged"
# A later job of the same user gets its file normally.
as_user srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" || fail "job 7002 failed"
assert_file "$PROFDIR/$JOBUSER/7002_0_$NODE.h5"
echo "symlinks refused ok"
