#!/bin/bash
# End to end: a real slurmctld/slurmd/slurmstepd load acct_gather_profile/sh5;
# `srun -n2 --profile=all` runs a CPU+memory+I/O workload for several
# seconds as an ordinary user; the node-step file must have the documented
# layout, attributes, sample counts, monotonic high-resolution time stamps,
# owner and mode; Slurm's own sh5util must merge it.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

plugin_cluster_setup
t0=$(date +%s%N)
as_user srun -n2 --profile=all "$WORKLOAD" 6 64 16 "$SCRATCH" ||
	fail "srun failed: $(cluster_log_tail 20)"
t1=$(date +%s%N)
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$f"
uid=$(id -u "$JOBUSER")
assert_eq "$(stat -c '%u %a' "$f")" "$uid 600" "file owner and mode"
assert_eq "$(stat -c '%u %a' "$PROFDIR/$JOBUSER")" "$uid 700" "user dir owner and mode"
h5dump -H "$f" >/dev/null || fail "h5dump cannot read $f"

$PY - "$f" "$NODE" "$job" "$t0" "$t1" "$JOBUSER" <<'PYEOF' || fail "layout check failed"
import sys, h5py, numpy as np
path, node, job, t0, t1, user = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
f = h5py.File(path, "r")
def check(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
check(f.attrs["sh5 Format Version"] == 1, "format version")
g = f[node]
def attr(n):
    v = g.attrs[n]
    return v.decode() if isinstance(v, bytes) else v
for a in ["Node Index", "Node Name", "Number of Tasks", "CPUs per Task", "Start Time",
          "Job ID", "Step ID", "Step Number", "UID", "User", "Cluster", "Start Time UTC",
          "Start Time ns", "Sampling Frequencies", "Slurm Version", "Plugin Version",
          "sh5 Format Version", "Profile", "Flush Interval"]:
    check(a in g.attrs, "attribute %s" % a)
check(attr("Node Name") == node, "node name")
check(int(attr("Number of Tasks")) == 2, "number of tasks")
check(int(attr("Job ID")) == job, "job id")
check(attr("Step ID") == "0", "step id")
check(attr("User") == user, "user")
check(attr("Slurm Version") == "22.05.8", "slurm version")
check(attr("Sampling Frequencies").startswith("task=1"), "frequencies")
tasks = sorted(g["Tasks"].keys(), key=int)
check(tasks == ["0", "1"], "task datasets %s" % tasks)
for t in tasks:
    d = g["Tasks"][t]
    names = d.dtype.names
    check(names[:2] == ("ElapsedTime", "EpochTime"), "stock time fields first: %s" % (names,))
    check(names[-1] == "EpochTimeNs", "EpochTimeNs last")
    for fld in ["CPUTime", "CPUUtilization", "RSS", "VMSize", "ReadMB", "WriteMB"]:
        check(fld in names, "field %s" % fld)
    sattr = d.attrs["Series"]
    check((sattr.decode() if isinstance(sattr, bytes) else sattr) == "Task", "Series attr")
    units = [u.decode() if isinstance(u, bytes) else u for u in d.attrs["Field Units"]]
    check(len(units) == len(names) and units[names.index("RSS")] == "KiB", "units")
    n = len(d)
    check(4 <= n <= 9, "task %s has %d samples for a 6 s run at 1 Hz" % (t, n))
    ns = d["EpochTimeNs"].astype(np.int64)
    check(np.all(np.diff(ns) > 0), "EpochTimeNs strictly increasing")
    check(ns[0] >= t0 - 2e9 and ns[-1] <= t1 + 2e9, "EpochTimeNs within the job")
    check(np.any(ns % 1000000000 != 0), "sub-second resolution")
    check(np.all(np.abs(ns // 1000000000 - d["EpochTime"].astype(np.int64)) <= 1), "ns agrees with seconds")
    check(d["CPUTime"].sum() > 0.5, "CPU time used: %f" % d["CPUTime"].sum())
    check(d["RSS"].max() >= 60 * 1024, "RSS >= 60 MiB: %d KiB" % d["RSS"].max())
    check(d["WriteMB"].sum() > 4, "written MB: %f" % d["WriteMB"].sum())
    check(d.chunks is not None and d.chunks[0] >= 32, "chunked by rate: %s" % (d.chunks,))
    check(d.compression == "gzip" and d.shuffle, "shuffle+deflate")
    check(d.fletcher32, "fletcher32 chunk checksums")
    # The writer's totals of what it wrote (sh5merge copies them).
    tt = g["Totals/Tasks"][t]
    check(tt.attrs["Rows"] == n and tt[0]["Samples"] == n, "Totals/Tasks/%s rows" % t)
    check(abs(tt[0]["CPUTime.Sum"] - d["CPUTime"].sum()) < 1e-9 * max(1, d["CPUTime"].sum()),
          "CPUTime total")
    check(tt[0]["RSS.Max"] == d["RSS"].max(), "RSS max total")
at = g["Totals/AllTasks"]
check(at.attrs["Series Count"] == len(tasks), "AllTasks covers the tasks")
check(at[0]["Samples"] == sum(len(g["Tasks"][t]) for t in tasks), "AllTasks samples")
check("Network" in g, "Network series from acct_gather_interconnect/sysfs")
net = g["Network"]
check(len(net) >= 3 and "InMB" in net.dtype.names, "network samples")
print("layout ok:", {t: len(g["Tasks"][t]) for t in tasks}, "network", len(net))
PYEOF

# Slurm's own sh5util still merges and extracts our files.
out=$CLUSTER_DIR/sh5util-job.h5
sh5util -j "$job" -d "$PROFDIR" -u "$JOBUSER" -S -o "$out" >/dev/null 2>&1 ||
	fail "sh5util -j failed"
$PY - "$out" "$NODE" <<'PYEOF' || fail "sh5util output check failed"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
t = f["Steps/0/Nodes/%s/Tasks" % sys.argv[2]]
assert sorted(t.keys()) == ["0", "1"], list(t.keys())
assert len(t["0"]) >= 4
print("sh5util merged", {k: len(t[k]) for k in t})
PYEOF
sh5util -j "$job" -E -i "$out" -s Tasks -l Node:TimeSeries -o "$CLUSTER_DIR/ts.csv" >/dev/null 2>&1 ||
	fail "sh5util -E failed"
rows=$(grep -c "^0,$NODE," "$CLUSTER_DIR/ts.csv")
assert_ge 8 "$rows" "sh5util extracted task rows"
assert_file "$PROFDIR/$JOBUSER/${job}_0_$NODE.h5"   # -S kept the input
echo "plugin end-to-end ok"
