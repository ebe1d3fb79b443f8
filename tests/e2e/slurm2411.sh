#!/bin/bash
# End to end on Slurm 24.11 (Debian trixie's release, built from its
# upstream tarball into a private prefix): the plugin, built out of tree
# against that tree, is loaded by the 24.11 slurmctld/slurmd/slurmstepd
# of a private one-node cluster; `srun -n2 --profile=all` of a CPU+memory+
# I/O workload runs as an ordinary user; the node-step file must pass the
# attribute and sample checks of tests/e2e/plugin.sh (those that do not
# concern chunking or sh5util), and sh5merge must merge it into a job
# file equal to it (merge_check.py).
#
# The Slurm build is cached (scripts/slurm-build.sh): cold, it takes
# about 9 minutes on 2 shared cores; then nothing.  Skips (77) only
# when Debian's source registry cannot serve the tarball.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

PY=/usr/bin/python3
JOBUSER=${SH5_TEST_USER:-nobody}
SUITE=${SH5_SLURM_SUITE:-trixie}
SH5MERGE=$top_builddir/sh5merge/sh5merge
WORKLOAD=$top_builddir/tests/tools/sh5_workload
need_root
need_cmd make gcc munged runuser
[ -x "$SH5MERGE" ] || fail "$SH5MERGE not built"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD not built"

work=$(mktemp -d /tmp/sh5-2411.XXXXXX) || fail "mktemp"
chmod 755 "$work"

# 1. The release's tarball (Debian's source registry, cached).
rc=0
tree=$("$top_srcdir/scripts/slurm-source.sh" --suite "$SUITE" \
	2>"$work/source.err") || rc=$?
if [ "$rc" -eq 3 ]; then
	why=$(tail -n1 "$work/source.err")
	rm -rf "$work"
	skip "Debian's source registry cannot serve Slurm of $SUITE: $why"
fi
[ "$rc" -eq 0 ] && [ -f "$tree/config.h" ] ||
	fail "slurm-source.sh --suite $SUITE (exit $rc): $(cat "$work/source.err")"
VER=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$tree/config.h")
case $VER in
24.11.*) ;;
*) fail "$SUITE ships Slurm '$VER', not 24.11 (update this test)" ;;
esac

# 2. Slurm VER in a private prefix (cached; cold: a long build).
t=$(date +%s)
prefix=$("$top_srcdir/scripts/slurm-build.sh" "$VER" 2>"$work/build.err") ||
	fail "slurm-build.sh $VER: $(tail -n 20 "$work/build.err")"
note "Slurm $VER in $prefix ($(( $(date +%s) - t )) s)"
srctree=$(dirname "$prefix")/src
[ -f "$srctree/config.h" ] || fail "no configured tree $srctree"

# 3. The plugin, out of tree, against that tree.  An in-tree configured
# source cannot host a second build: configure a clean copy then.
src=$top_srcdir
if [ -f "$top_srcdir/config.status" ]; then
	src=$work/src
	cp -a "$top_srcdir" "$src" && make -s -C "$src" distclean >/dev/null 2>&1 ||
		fail "cannot make a clean copy of $top_srcdir"
fi
src=$(cd "$src" && pwd)
mkdir -p "$work/build" "$work/plugins"
(cd "$work/build" &&
	"$src/configure" -q --without-mpi --disable-slurm-version-check \
		--with-slurm-source="$srctree" &&
	make -s plugins/acct_gather_profile_sh5.la) >"$work/plugin.log" 2>&1 ||
	fail "plugin build against $srctree: $(tail -n 20 "$work/plugin.log")"
rel=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$work/build" print-slurm-release)
assert_eq "$VER" "$rel" "release the plugin is built for"
so=$work/build/plugins/.libs/acct_gather_profile_sh5.so
assert_file "$so"
cp "$so" "$work/plugins/" || fail "copy plugin"

# 4. A one-node cluster of the VER daemons loading it.  Programs the job
# user runs are copied into the cluster directory (the build may be in a
# directory only root can enter).
CLUSTER_DIR=$work/cluster
CLUSTER_SLURM_PREFIX=$prefix
CLUSTER_PLUGIN_DIR=$work/plugins
PROFDIR=$CLUSTER_DIR/profile
SCRATCH=$CLUSTER_DIR/scratch
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
AcctGatherInterconnectType=acct_gather_interconnect/sysfs
AcctGatherNodeFreq=1
JobAcctGatherFrequency=task=1,network=1"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=2
SysfsInterfaces=lo"
export CLUSTER_DIR CLUSTER_SLURM_PREFIX CLUSTER_PLUGIN_DIR \
	CLUSTER_EXTRA_CONF CLUSTER_ACCT_GATHER_CONF
mkdir -p "$SCRATCH" "$CLUSTER_DIR/bin" || fail "mkdir"
chmod 1777 "$SCRATCH"
install -m 755 "$WORKLOAD" "$CLUSTER_DIR/bin/sh5_workload" ||
	fail "copy workload"
cleanup() {
	local rc=$?
	cluster_cleanup
	if [ "$rc" -eq 0 ] && [ "${CLUSTER_KEEP:-0}" != 1 ]; then
		rm -rf "$work"
	else
		echo "kept $work" >&2
	fi
	return "$rc"
}
trap cleanup EXIT
cluster_start || fail "cluster of Slurm $VER did not start"
assert_eq "$VER" "$CLUSTER_SLURM_RELEASE" "slurmd release"
NODE=$CLUSTER_NODE_NAMES
assert_eq "$prefix/bin/srun" "$(command -v srun)" "srun on PATH"

# 5. A profiled step as the job user.
t0=$(date +%s%N)
runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" \
	"$prefix/bin/srun" -n2 --profile=all --chdir="$SCRATCH" \
	"$CLUSTER_DIR/bin/sh5_workload" 6 64 16 "$SCRATCH" \
	>"$CLUSTER_DIR/srun.out" 2>&1 &
srun_pid=$!
# The harness finds the step's slurmstepd although 24.11's
# /proc/PID/environ holds no variables (teardown relies on it).
job=
for _ in $(seq 1 100); do
	job=$(squeue -h -s -o %i 2>/dev/null | sed -n 's/\.0$//p' | head -n1)
	[ -n "$job" ] && break
	sleep 0.1
done
[ -n "$job" ] ||
	fail "step 0 of the job never ran: $(cat "$CLUSTER_DIR/srun.out")"
stepd=$(cluster_stepd_pid "$job" 0) ||
	fail "harness finds no slurmstepd of $job.0"
tr '\0' '\n' <"/proc/$stepd/environ" | grep -q "^SH5_CLUSTER_DIR=" &&
	note "slurmstepd's environ lists SH5_CLUSTER_DIR again (harness note obsolete)"
wait "$srun_pid" ||
	fail "srun failed: $(cat "$CLUSTER_DIR/srun.out") $(cluster_log_tail 20)"
t1=$(date +%s%N)
# The step's slurmstepd (24.11) loaded our plugin.
grep -qF "[$job.0] debug:  AcctGatherProfile sh5 plugin loaded" \
	"$(cluster_log slurmd)" ||
	fail "no slurmstepd of step $job.0 loaded the plugin: $(cluster_log_tail 20)"
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$f" "node-step file"
uid=$(id -u "$JOBUSER")
assert_eq "$uid 600" "$(stat -c '%u %a' "$f")" "file owner and mode"
assert_eq "$uid 700" "$(stat -c '%u %a' "$PROFDIR/$JOBUSER")" \
	"user dir owner and mode"

$PY - "$f" "$NODE" "$job" "$t0" "$t1" "$JOBUSER" "$VER" \
	<<'PYEOF' || fail "layout check failed"
import sys, h5py, numpy as np
path, node, job, t0, t1, user, ver = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
f = h5py.File(path, "r")
def check(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
check(f.attrs["sh5 Format Version"] == 1, "format version")
g = f[node]
def attr(n):
    v = g.attrs[n]
    return v.decode() if isinstance(v, bytes) else v
check(attr("Node Name") == node, "node name")
check(int(attr("Number of Tasks")) == 2, "number of tasks")
check(int(attr("Job ID")) == job, "job id")
check(attr("Step ID") == "0", "step id")
check(attr("User") == user, "user")
check(attr("Slurm Version") == ver, "slurm version %s" % attr("Slurm Version"))
check(attr("Sampling Frequencies").startswith("task=1"), "frequencies")
tasks = sorted(g["Tasks"].keys(), key=int)
check(tasks == ["0", "1"], "task datasets %s" % tasks)
for t in tasks:
    d = g["Tasks"][t]
    names = d.dtype.names
    check(names[:2] == ("ElapsedTime", "EpochTime"), "stock time fields first: %s" % (names,))
    check(names[-1] == "EpochTimeNs", "EpochTimeNs last")
    # 23.02 added the GPU fields to Task samples.
    for fld in ["CPUTime", "CPUUtilization", "RSS", "VMSize", "ReadMB", "WriteMB",
                "GPUMemMB", "GPUUtilization"]:
        check(fld in names, "field %s" % fld)
    n = len(d)
    check(4 <= n <= 9, "task %s has %d samples for a 6 s run at 1 Hz" % (t, n))
    ns = d["EpochTimeNs"].astype(np.int64)
    check(np.all(np.diff(ns) > 0), "EpochTimeNs strictly increasing")
    check(ns[0] >= t0 - 2e9 and ns[-1] <= t1 + 2e9, "EpochTimeNs within the job")
    check(d["CPUTime"].sum() > 0.5, "CPU time used: %f" % d["CPUTime"].sum())
    check(d["RSS"].max() >= 60 * 1024, "RSS >= 60 MiB: %d KiB" % d["RSS"].max())
    check(d["WriteMB"].sum() > 4, "written MB: %f" % d["WriteMB"].sum())
    tt = g["Totals/Tasks"][t]
    check(tt.attrs["Rows"] == n and tt[0]["Samples"] == n, "Totals/Tasks/%s rows" % t)
check("Network" in g and len(g["Network"]) >= 3, "Network series from acct_gather_interconnect/sysfs")
print("layout ok:", {t: len(g["Tasks"][t]) for t in tasks}, "network", len(g["Network"]))
PYEOF

# 6. sh5merge merges it; the job file equals the node-step file.
J=$CLUSTER_DIR/job_$job.h5
"$SH5MERGE" -q merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" -o "$J" ||
	fail "sh5merge merge -j $job"
assert_file "$J" "job file"
$PY "$top_srcdir/tests/tools/merge_check.py" job "$J" "$f" ||
	fail "job file values differ from the node-step file"
"$SH5MERGE" list -i "$J" >"$CLUSTER_DIR/list.txt" || fail "sh5merge list"
grep -q "step 0: 1 node" "$CLUSTER_DIR/list.txt" ||
	fail "list lacks 'step 0: 1 node': $(cat "$CLUSTER_DIR/list.txt")"
echo "Slurm $VER end-to-end ok (job $job)"
