#!/bin/bash
# acct_gather.conf without ProfileSH5Dir: the daemons refuse to start with
# a message that says what is missing (the only fatal the plugin has, at
# daemon start).
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
need_root
CLUSTER_DIR=$(mktemp -d /tmp/sh5-e2e.XXXXXX)
CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
[ -f "$CLUSTER_PLUGIN_DIR/acct_gather_profile_sh5.so" ] || skip "plugin not built"
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Default=none"
CLUSTER_START_TIMEOUT=10
export CLUSTER_DIR CLUSTER_PLUGIN_DIR CLUSTER_EXTRA_CONF CLUSTER_ACCT_GATHER_CONF
trap cluster_cleanup EXIT
if cluster_start 2>/dev/null; then
	fail "the cluster started without ProfileSH5Dir"
fi
grep -h "no ProfileSH5Dir in acct_gather.conf" "$CLUSTER_DIR"/log/*.log ||
	fail "no clear message about the missing ProfileSH5Dir"
echo "missing ProfileSH5Dir refused ok"
