#!/bin/bash
# End to end, streaming faults on a real cluster:
#  - a listener that accepts TCP connections and never answers: the step
#    ends less than the close deadline (2 s) late, its exit code is the
#    job's own, the samples are spooled;
#  - wrong credentials, an unknown database, an unreachable port: one clear
#    log line each (no password in any log or in scontrol show config), the
#    job's exit code unaffected.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"
. "$top_srcdir/tests/e2e/stream_lib.sh"

stream_need
stream_influxd_prepare
HANG_DIR=$IFX_DIR/hang
mkdir -p "$HANG_DIR"
$PY "$top_srcdir/tests/tools/sh5_http_receiver.py" --hang "$HANG_DIR" &
hang_pid=$!
for _ in $(seq 50); do [ -s "$HANG_DIR/port" ] && break; sleep 0.1; done
hang_port=$(cat "$HANG_DIR/port" 2>/dev/null) || { kill "$hang_pid"; fail "hanging listener did not start"; }
SPOOL=$IFX_DIR/spool
plugin_cluster_setup "ProfileSH5StreamURL=http://127.0.0.1:$hang_port/write?db=slurm
ProfileSH5StreamFormat=influx1
ProfileSH5StreamTimeout=60000
ProfileSH5StreamSpoolDir=$SPOOL"
faults_cleanup() {
	local rc=$?
	kill "$hang_pid" 2>/dev/null
	wait "$hang_pid" 2>/dev/null
	(exit "$rc")
	stream_cleanup
}
trap faults_cleanup EXIT

# reconfigure LINES...: restart the cluster with other stream options.
reconfigure() {
	cluster_stop
	{
		echo "ProfileSH5Dir=$PROFDIR"
		echo "ProfileSH5FlushInterval=1"
		echo "SysfsInterfaces=lo"
		printf '%s\n' "$@"
	} >"$CLUSTER_CONF_DIR/acct_gather.conf"
	cluster_start || fail "cluster did not restart"
}

# run_step SECONDS EXIT [PROFILE]: a one-task step (profiled: task);
# prints "rc elapsed_ms".
run_step() {
	local t0 t1 rc=0
	t0=$(date +%s%N)
	as_user srun -n1 --profile="${3:-task}" "$WORKLOAD" "$1" 8 1 "$SCRATCH" "$2" || rc=$?
	t1=$(date +%s%N)
	echo "$rc $(((t1 - t0) / 1000000))"
}

log=$(cluster_log slurmd)

# 1. hanging listener, against the same step without profiling
read -r rc base < <(run_step 3 3 none)
assert_eq 3 "$rc" "job exit code without profiling"
read -r rc ms < <(run_step 3 3)
assert_eq 3 "$rc" "job exit code with a hanging stream server"
note "3 s step: $base ms unprofiled, $ms ms with a hanging stream server"
# the close deadline is 2 s; allow 0.7 s for writing the HDF5 file and noise
[ $((ms - base)) -lt 2700 ] ||
	fail "step delayed by $((ms - base)) ms: the close deadline was not kept"
job=$(last_job_id)
stream_step_done "$job"
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$f"
assert_ge 1 "$(h5_attr "$f" "Stream Spooled")" "samples spooled at the deadline"
assert_eq 0 "$(h5_attr "$f" "Stream Sent")" "nothing sent to a hanging server"
grep -q "stream: POST http://127.0.0.1:$hang_port/write?db=slurm&precision=ns: close deadline reached" "$log" ||
	fail "no deadline line in the log: $(grep stream "$log" | tail -n 3)"

# 2. wrong credentials, unknown database, unreachable port
stream_influxd_stop
"$top_srcdir/tests/lib/influxd.sh" start "$IFX_DIR" "$IFX_PORT" auth >/dev/null ||
	fail "influxd (auth) did not start"
curl -s -o /dev/null -XPOST "http://127.0.0.1:$IFX_PORT/query?u=sh5admin&p=sh5secret" \
	--data-urlencode "q=CREATE DATABASE slurm"
SECRET=Wr0ngS3cretPw
check_case() { # WHAT REGEX
	local rc ms
	read -r rc ms < <(run_step 2 0)
	assert_eq 0 "$rc" "$1: job exit code"
	grep -Eq "acct_gather_profile/sh5: stream: POST http://127.0.0.1:[0-9]+/write\?db=[a-z]+&precision=ns: $2" "$log" ||
		fail "$1: no clear log line: $(grep 'sh5: stream' "$log" | tail -n 3)"
	[ "$(grep -cE "sh5: stream: POST.*$2" "$log")" -eq 1 ] ||
		fail "$1: the error was logged more than once"
	note "$1: $(grep -E "sh5: stream: POST.*$2" "$log" | tail -n 1 | sed 's/.*stream: //')"
}
reconfigure "ProfileSH5StreamURL=http://127.0.0.1:$IFX_PORT/write?db=slurm" \
	"ProfileSH5StreamUser=sh5admin" "ProfileSH5StreamPass=$SECRET"
if scontrol show config 2>/dev/null | grep -q "$SECRET"; then
	fail "the password shows in scontrol show config"
fi
check_case "wrong credentials" 'HTTP 401: \{"error":"authorization failed"\}'
reconfigure "ProfileSH5StreamURL=http://127.0.0.1:$IFX_PORT/write?db=nosuchdb" \
	"ProfileSH5StreamUser=sh5admin" "ProfileSH5StreamPass=sh5secret"
check_case "unknown database" 'HTTP 404: \{"error":"database not found: \\"nosuchdb\\""\}'
reconfigure "ProfileSH5StreamURL=http://127.0.0.1:1/write?db=slurm"
check_case "unreachable port" "Failed to connect to 127.0.0.1 port 1 .*Couldn't connect to server"
if grep -rq "$SECRET" "$CLUSTER_DIR/log" "$SPOOL"; then
	fail "the password appears in a log or spool file"
fi
echo "stream faults end-to-end ok"
