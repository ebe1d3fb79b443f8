#!/bin/bash
# The tests do not depend on where the clone is: a build tree in a
# directory closed to others (mode 0700, like a clone in /root) still
# gives a working cluster whose job user runs the workload, because the
# harness loads a copy of the plugin ($CLUSTER_DIR/plugins) and runs a
# staged copy of the workload ($CLUSTER_DIR/bin).  What would still reach
# into the closed tree fails with a message that says so: as_user on one
# of its files, and a CLUSTER_DIR inside it.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
need_root
need_cmd runuser
so=$top_builddir/plugins/.libs/acct_gather_profile_sh5.so
[ -f "$so" ] || skip "plugin not built (configure --with-slurm-source)"
[ -x "$top_builddir/tests/tools/sh5_workload" ] || fail "sh5_workload not built"

# A copy of the parts of the build tree the plugin tests use, in a 0700
# directory.
closed=$(mktemp -d /tmp/sh5-closed.XXXXXX)
trap 'rm -rf "$closed"' EXIT
chmod 700 "$closed"
mkdir -p "$closed/build/plugins/.libs" "$closed/build/tests/tools"
cp "$so" "$closed/build/plugins/.libs/"
cp "$top_builddir/tests/tools/sh5_workload" "$closed/build/tests/tools/"
real_builddir=$top_builddir
top_builddir=$closed/build
. "$top_srcdir/tests/e2e/plugin_lib.sh"
runuser -u "$JOBUSER" -- test -r "$top_builddir/tests/tools/sh5_workload" &&
	skip "$JOBUSER can read inside a 0700 directory of root"

# A CLUSTER_DIR inside the closed tree is refused, naming the directory.
out=$(cd / && CLUSTER_DIR=$closed/cdir bash -c '
	. "$1/tests/lib/common.sh"; . "$1/tests/lib/cluster.sh"
	cluster_init' sh "$top_srcdir" 2>&1) &&
	fail "cluster_init accepted a CLUSTER_DIR below a 0700 directory"
assert_match "$closed \(mode 700\) is not searchable by other users" "$out" \
	"cluster_init message"
assert_match "CLUSTER_DIR $closed/cdir: .*use a directory under /tmp" "$out" \
	"cluster_init advice"

# cluster_stage without a cluster directory says why.
out=$( (unset CLUSTER_DIR; cluster_stage /bin/true) 2>&1) &&
	fail "cluster_stage without CLUSTER_DIR succeeded"
assert_match "no CLUSTER_DIR" "$out" "cluster_stage message"

plugin_cluster_setup
trap 'rc=$?; rm -rf "$closed"; (exit $rc); cluster_cleanup' EXIT
plugindir=$(sed -n 's/^PluginDir=//p' "$SLURM_CONF")
assert_eq "$CLUSTER_DIR/plugins:$CLUSTER_SLURM_PLUGINDIR" "$plugindir" \
	"PluginDir"
assert_eq "644" "$(stat -c %a "$CLUSTER_DIR/plugins/acct_gather_profile_sh5.so")" \
	"mode of the plugin copy"
assert_eq "$CLUSTER_DIR/bin/sh5_workload" "$WORKLOAD" "staged workload"
cmp -s "$real_builddir/tests/tools/sh5_workload" "$WORKLOAD" ||
	fail "the staged workload differs from the built one"

# The job user's srun reads PluginDir and runs the staged workload.
as_user srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" ||
	fail "srun as $JOBUSER from a closed build tree failed: $(cat "$CLUSTER_DIR"/log/slurmd.*.log | tail -n 20)"
job=$(last_job_id)
assert_file "$PROFDIR/$JOBUSER/${job}_0_$NODE.h5" "node-step file"

# Staging twice is harmless; another file under the same name is refused.
again=$(cluster_stage "$real_builddir/tests/tools/sh5_workload") ||
	fail "staging the same file again failed"
assert_eq "$WORKLOAD" "$again" "path of the second staging"
out=$(cluster_stage "$closed/x/sh5_workload" 2>&1) &&
	fail "cluster_stage of a missing file succeeded"
assert_match "sh5_workload: no such file" "$out" "missing file message"
printf '#!/bin/sh\n' >"$closed/sh5_workload"
out=$(cluster_stage "$closed/sh5_workload" 2>&1) &&
	fail "cluster_stage replaced another file of the same name"
assert_match "already holds another file" "$out" "name clash message"

# as_user on a file of the closed tree fails and says what to do.
out=$( (as_user true "$top_builddir/tests/tools/sh5_workload") 2>&1) &&
	fail "as_user accepted a path $JOBUSER cannot read"
assert_match "$JOBUSER cannot read $top_builddir/tests/tools/sh5_workload" \
	"$out" "as_user message"
assert_match "cluster_stage" "$out" "as_user advice"
echo "closed build tree ok (job $job)"
