# tests/e2e/plugin_lib.sh - shared set-up for the plugin's end-to-end
# tests: a private cluster loading acct_gather_profile/sh5 from the build
# tree, a profile directory and a scratch directory for the workload.
# Sourced after tests/lib/common.sh and tests/lib/cluster.sh.
#
# The job user cannot be assumed to reach the build tree (a clone in a
# 0700 home): the cluster loads a copy of the plugin (CLUSTER_PLUGIN_DIR,
# see tests/lib/cluster.sh), WORKLOAD is staged into $CLUSTER_DIR/bin by
# plugin_cluster_setup, and as_user refuses paths the job user cannot
# read.

PY=/usr/bin/python3
WORKLOAD=$top_builddir/tests/tools/sh5_workload
JOBUSER=${SH5_TEST_USER:-nobody}

# plugin_cluster_setup [EXTRA_ACCT_GATHER_LINES]: start a one-node cluster
# whose profile directory is $PROFDIR.
plugin_cluster_setup() {
	need_root
	[ -f "$top_builddir/plugins/.libs/acct_gather_profile_sh5.so" ] ||
		skip "plugin not built (configure --with-slurm-source)"
	[ -x "$WORKLOAD" ] || fail "$WORKLOAD not built"
	CLUSTER_DIR=$(mktemp -d /tmp/sh5-e2e.XXXXXX)
	PROFDIR=$CLUSTER_DIR/profile
	SCRATCH=$CLUSTER_DIR/scratch
	mkdir -p "$SCRATCH"
	chmod 1777 "$SCRATCH"
	CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
	CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
AcctGatherInterconnectType=acct_gather_interconnect/sysfs
AcctGatherNodeFreq=1
JobAcctGatherFrequency=task=1,network=1
${PLUGIN_EXTRA_SLURM_CONF:-}"
	CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=${PLUGIN_FLUSH:-2}
SysfsInterfaces=lo
${1:-}"
	export CLUSTER_DIR CLUSTER_PLUGIN_DIR CLUSTER_EXTRA_CONF \
		CLUSTER_ACCT_GATHER_CONF
	trap cluster_cleanup EXIT
	cluster_start || fail "cluster did not start"
	NODE=$CLUSTER_NODE_NAMES
	WORKLOAD=$(cluster_stage "$WORKLOAD") || fail "cannot stage $WORKLOAD"
}

# as_user CMD...: run a client command as the job user, from $SCRATCH
# (the caller's directory may be out of the job user's reach, and srun
# passes it on as the tasks' working directory).  An argument that is
# an absolute path of an existing file the job user cannot read fails
# the test with a clear message (stage it with cluster_stage).
as_user() {
	local a
	for a in "$@"; do
		case $a in /*) ;; *) continue ;; esac
		# Programs only: a test may name a file the user must not read.
		[ -f "$a" ] && [ -x "$a" ] || continue
		runuser -u "$JOBUSER" -- test -r "$a" ||
			fail "as_user: $JOBUSER cannot read $a (the source or" \
				"build tree in a directory closed to others?" \
				"copy it with cluster_stage)"
	done
	(cd "$SCRATCH" &&
		runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

# last_job_id: the highest job id the controller knows.
last_job_id() {
	scontrol show jobs -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\).*/\1/p' |
		sort -n | tail -n 1
}
