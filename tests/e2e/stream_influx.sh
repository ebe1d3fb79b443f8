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

# 1. healthy server: everything arrives, same values and timestamps
as_user srun -n2 --profile=all "$WORKLOAD" 4 16 4 "$SCRATCH" ||
	fail "srun failed: $(cluster_log_tail 20)"
job1=$(last_job_id)
f1=$PROFDIR/$JOBUSER/${job1}_0_$NODE.h5
assert_file "$f1"
out=$(stream_compare "$f1") || fail "step 1: $out"
note "$out"
assert_eq 0 "$(h5_attr "$f1" "Stream Spooled")" "step 1 spooled nothing"
sent1=$(h5_attr "$f1" "Stream Sent")
assert_ge 8 "$sent1" "step 1 samples sent (file attribute)"

# 2. influxd stops in the middle of a step and comes back after it ended
as_user srun -n2 --profile=all "$WORKLOAD" 6 16 4 "$SCRATCH" &
srun_pid=$!
sleep 2.5
stream_influxd_stop
wait "$srun_pid" || fail "srun (server stopped mid-step) failed"
job2=$(last_job_id)
f2=$PROFDIR/$JOBUSER/${job2}_0_$NODE.h5
assert_file "$f2"
spooled2=$(h5_attr "$f2" "Stream Spooled")
assert_ge 1 "$spooled2" "step 2 spooled samples"
ls "$SPOOL"/*.lp >/dev/null 2>&1 || fail "no spool files after step 2"
grep -q "acct_gather_profile/sh5: stream: POST http://127.0.0.1:$IFX_PORT/write?db=slurm" \
	"$(cluster_log slurmd)" || fail "no stream error in the slurmd log"
stream_influxd_start

# the next step delivers step 2's spool first
as_user srun -n1 --profile=task "$WORKLOAD" 2 8 1 "$SCRATCH" ||
	fail "srun (after restart) failed"
job3=$(last_job_id)
f3=$PROFDIR/$JOBUSER/${job3}_0_$NODE.h5
assert_file "$f3"
rec3=$(h5_attr "$f3" "Stream Recovered")
assert_eq "$spooled2" "$rec3" "step 3 delivered step 2's spool"
out=$(stream_compare "$f1" "$f2" "$f3") || fail "after restart: $out"
note "$out"
if ls "$SPOOL"/*.lp >/dev/null 2>&1; then
	fail "spool not empty: $(ls "$SPOOL")"
fi
# credentials and config: nothing secret to leak here, but the password
# option is masked in scontrol show config
echo "stream influx end-to-end ok"
