#!/bin/bash
# End to end: a real cluster loads acct_gather_profile/sh5; a batch job
# with two srun steps runs under --profile=all (on two nodes when network
# namespaces are available); the job user runs `sh5merge merge` with its
# defaults (profile directory from acct_gather.conf, own user name), then
# `extract` and `list`.  Every value of the job file is compared with the
# node-step files (h5py), and the CSV with what Slurm's sh5util extracts
# from its own merge of the same files and from our job file.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

SH5MERGE=$top_builddir/sh5merge/sh5merge
CHECK="$PY $top_srcdir/tests/tools/merge_check.py"
[ -x "$SH5MERGE" ] || fail "$SH5MERGE not built"
N=1
if [ "$(id -u)" = 0 ] &&
	ip netns add "sh5-mprobe-$$" 2>/dev/null; then
	ip netns del "sh5-mprobe-$$"
	N=2
	CLUSTER_NODES=2
	export CLUSTER_NODES
fi
plugin_cluster_setup
# The job user runs sh5merge: a copy it can reach, wherever the build is.
SH5MERGE=$(cluster_stage "$SH5MERGE") || fail "cannot stage sh5merge"
cat >"$SCRATCH/job.sh" <<JOBEOF
#!/bin/bash
srun -N$N -n$((2 * N)) $WORKLOAD 4 32 8 $SCRATCH || exit 1
srun -N$N -n$N $WORKLOAD 3 16 4 $SCRATCH || exit 1
JOBEOF
chmod 755 "$SCRATCH/job.sh"
as_user sbatch --wait --profile=all -N$N -n$((2 * N)) -o "$SCRATCH/job.out" "$SCRATCH/job.sh" \
	>/dev/null || fail "sbatch failed: $(cat "$SCRATCH/job.out" 2>/dev/null) $(cluster_log_tail 20)"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
D=$PROFDIR/$JOBUSER
ls "$D"/${job}_* >/dev/null 2>&1 || fail "no node-step files for job $job"
nfiles=$(ls "$D"/${job}_* | wc -l)
assert_eq "$nfiles" "$((1 + 2 * N))" "node-step files (batch + 2 steps x $N nodes)"

# The job user merges with the defaults.
as_user bash -c "cd '$SCRATCH' && '$SH5MERGE' -q merge -j $job" ||
	fail "sh5merge merge as $JOBUSER"
J=$SCRATCH/job_$job.h5
assert_file "$J"
$CHECK job "$J" "$D"/${job}_*.h5 || fail "job file values"
as_user "$SH5MERGE" list -i "$J" >"$CLUSTER_DIR/list.txt" || fail "list"
for want in "step batch: 1 node" "step 0: $N node" "step 1: $N node" "Tasks/0 "; do
	grep -q "$want" "$CLUSTER_DIR/list.txt" ||
		{ cat "$CLUSTER_DIR/list.txt"; fail "list lacks '$want'"; }
done

# Our CSV against our job file; sh5util's CSV (its own merge of the same
# files, and our job file) against our job file.
"$SH5MERGE" extract -i "$J" -o "$CLUSTER_DIR/m.csv" || fail "extract"
$CHECK csv "$J" "$CLUSTER_DIR/m.csv" Tasks || fail "extract values"
"$SH5MERGE" extract -i "$J" -S Network -o "$CLUSTER_DIR/mn.csv" || fail "extract Network"
$CHECK csv "$J" "$CLUSTER_DIR/mn.csv" Network || fail "extract Network values"
sh5util -j "$job" -p "$PROFDIR" -u "$JOBUSER" -S -o "$CLUSTER_DIR/s.h5" >/dev/null 2>&1 ||
	fail "sh5util -j"
for src in "$CLUSTER_DIR/s.h5" "$J"; do
	for series in Tasks Network; do
		rm -f "$CLUSTER_DIR/s.csv"
		sh5util -j "$job" -E -i "$src" -s $series -l Node:TimeSeries \
			-o "$CLUSTER_DIR/s.csv" >/dev/null 2>&1 ||
			fail "sh5util -E -s $series on $src"
		$CHECK sh5util "$J" "$CLUSTER_DIR/s.csv" $series ||
			fail "sh5util's $series CSV of $src differs"
	done
done
"$SH5MERGE" extract -i "$J" -l totals -o "$CLUSTER_DIR/t.csv" || fail "totals"
$CHECK totals "$J" "$CLUSTER_DIR/t.csv" Tasks || fail "totals values"
ls "$D"/${job}_0_* >/dev/null || fail "inputs removed"
echo "merge end-to-end ok ($N node(s), job $job)"
