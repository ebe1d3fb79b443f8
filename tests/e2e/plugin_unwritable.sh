#!/bin/bash
# A profile directory that cannot be created: the job still runs and ends
# with its own exit code; the reason is logged once.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

# ProfileSH5Dir below a regular file: mkdir fails with ENOTDIR.
CLUSTER_DIR_PRE=$(mktemp -d /tmp/sh5-e2e-blocker.XXXXXX)
: >"$CLUSTER_DIR_PRE/afile"
bad=$CLUSTER_DIR_PRE/afile/profile
plugin_cluster_setup
# Point the plugin at the bad directory and restart the daemons' view of it.
sed -i "s|^ProfileSH5Dir=.*|ProfileSH5Dir=$bad|" "$CLUSTER_CONF_DIR/acct_gather.conf"
scontrol reconfigure || fail "reconfigure failed"
sleep 1

as_user srun -n2 --profile=all "$WORKLOAD" 2 8 1 "$SCRATCH" 3
rc=$?
assert_eq "$rc" 3 "job exit code"
as_user srun -n1 --profile=all true || fail "second job failed"
log=$(cluster_log slurmd)
n=$(grep -c "acct_gather_profile/sh5.*profiling off for this step" "$log")
assert_ge 1 "$n" "logged reason"
grep "acct_gather_profile/sh5" "$log" | grep -q "$bad" || fail "log does not name $bad"
assert_no_file "$bad"
rm -rf "$CLUSTER_DIR_PRE"
echo "unwritable directory ok"
