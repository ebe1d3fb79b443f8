#!/bin/bash
# End to end: a profiled srun on a real cluster with ProfileSH5StreamURL
# pointing to a private influxd: every sample of the node-step file is in
# InfluxDB with the same values and ns timestamps.  Then the fault: influxd
# stopped in the middle of a step and restarted after it ended: after the
# next step on the node nothing of either step is missing (the next step
# delivers the first one's spool).
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"
. "$top_srcdir/tests/e2e/stream_lib.sh"

stream_need
stream_influxd_prepare
SPOOL=$IFX_DIR/spool
plugin_cluster_setup "ProfileSH5StreamURL=http://127.0.0.1:$IFX_PORT/write?db=slurm
ProfileSH5StreamFormat=influx1
ProfileSH5StreamSpoolDir=$SPOOL
ProfileSH5StreamFlush=500"
trap stream_cleanup EXIT
stream_influxd_start
influx_q "" "CREATE DATABASE slurm" >/dev/null

# Counters: every sample of a step is counted once, as sent (straight
# from memory) or spooled; a spooled sample is delivered once, by the step
# that spooled it or a later one, and counted there as recovered.  So over
# the steps, spooled = recovered + what is left in the spool.  (Which
# step recovers a file is not fixed: a step also adopts files of steps
# that ended while it ran.)
spooled_sum=0 recovered_sum=0
count_step() {
	local c
	c=$(stream_step_counts "$1") || exit 1
	spooled_sum=$((spooled_sum + ${c% *}))
	recovered_sum=$((recovered_sum + ${c#* }))
}

# 1. healthy server: everything arrives, same values and timestamps
as_user srun -n2 --profile=all "$WORKLOAD" 4 16 4 "$SCRATCH" ||
	fail "srun failed: $(cluster_log_tail 20)"
job1=$(last_job_id)
stream_step_done "$job1"
f1=$PROFDIR/$JOBUSER/${job1}_0_$NODE.h5
assert_file "$f1"
out=$(stream_compare "$f1") || fail "step 1: $out"
note "$out"
count_step "$f1"
sent1=$(h5_attr "$f1" "Stream Sent")
assert_ge 8 "$sent1" "step 1 samples sent (file attribute)"

# 2. influxd stops in the middle of a step and comes back after it ended
as_user srun -n2 --profile=all "$WORKLOAD" 6 16 4 "$SCRATCH" &
srun_pid=$!
sleep 2.5
stream_influxd_stop
wait "$srun_pid" || fail "srun (server stopped mid-step) failed"
job2=$(last_job_id)
stream_step_done "$job2"
f2=$PROFDIR/$JOBUSER/${job2}_0_$NODE.h5
assert_file "$f2"
count_step "$f2"
assert_ge 1 "$(h5_attr "$f2" "Stream Spooled")" "step 2 spooled samples"
ls "$SPOOL"/*.lp >/dev/null 2>&1 || fail "no spool files after step 2"
assert_eq "$((spooled_sum - recovered_sum))" "$(spool_samples "$SPOOL")" \
	"samples in the spool after step 2 (spooled - recovered)"
grep -q "acct_gather_profile/sh5: stream: POST http://127.0.0.1:$IFX_PORT/write?db=slurm" \
	"$(cluster_log slurmd)" || fail "no stream error in the slurmd log"
stream_influxd_start

# the next step delivers step 2's spool first
as_user srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" ||
	fail "srun (after restart) failed"
job3=$(last_job_id)
stream_step_done "$job3"
f3=$PROFDIR/$JOBUSER/${job3}_0_$NODE.h5
assert_file "$f3"
count_step "$f3"
assert_ge 1 "$(h5_attr "$f3" "Stream Recovered")" \
	"step 3 delivered step 2's spool"
if ls "$SPOOL"/*.lp >/dev/null 2>&1; then
	fail "spool not empty: $(ls "$SPOOL")"
fi
# each spooled sample delivered exactly once (none twice, none lost)
assert_eq "$spooled_sum" "$recovered_sum" \
	"samples recovered from the spool (all steps)"
# nothing missing in InfluxDB, nothing extra (same count per series)
out=$(stream_compare "$f1" "$f2" "$f3") || fail "after restart: $out"
note "$out"
echo "stream influx end-to-end ok"
