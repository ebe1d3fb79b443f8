#!/bin/bash
# End to end, JSON format: a profiled srun streams counter-statistics
# packets to a local HTTP receiver; the packets' structure, samples and
# running statistics must match the node-step file.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"
. "$top_srcdir/tests/e2e/stream_lib.sh"

stream_need
RECV_DIR=$(mktemp -d /tmp/sh5-e2e-recv.XXXXXX)
$PY "$top_srcdir/tests/tools/sh5_http_receiver.py" "$RECV_DIR" &
recv_pid=$!
for _ in $(seq 50); do [ -s "$RECV_DIR/port" ] && break; sleep 0.1; done
recv_port=$(cat "$RECV_DIR/port" 2>/dev/null) || { kill "$recv_pid"; fail "receiver did not start"; }
plugin_cluster_setup "ProfileSH5StreamURL=http://127.0.0.1:$recv_port/sh5
ProfileSH5StreamFormat=json
ProfileSH5StreamToken=e2etoken
ProfileSH5StreamFlush=1000"
json_cleanup() {
	local rc=$?
	kill "$recv_pid" 2>/dev/null
	wait "$recv_pid" 2>/dev/null
	[ "$rc" -eq 0 ] && rm -rf "$RECV_DIR"
	(exit "$rc")
	cluster_cleanup
}
trap json_cleanup EXIT

as_user srun -n2 --profile=task "$WORKLOAD" 4 16 2 "$SCRATCH" ||
	fail "srun failed: $(cluster_log_tail 20)"
job=$(last_job_id)
stream_step_done "$job"
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$f"
$PY - "$f" "$RECV_DIR/requests.jsonl" "$job" "$NODE" <<'PYEOF' || fail "JSON packets do not match the file"
import json, sys
import h5py, numpy as np
path, reqs, job, node = sys.argv[1:5]
def check(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
f = h5py.File(path, "r")
tasks = f[node]["Tasks"]
want = {}
for t in tasks:
    d = tasks[t][...]
    for rec in d:
        want[(int(t), int(rec["EpochTimeNs"]))] = rec
packets = [json.loads(l) for l in open(reqs)]
check(len(packets) >= 2, "%d packets for a 4 s step at a 1 s period" % len(packets))
got = {}
for r in packets:
    check(r["headers"].get("content-type") == "application/json", "content type")
    check(r["headers"].get("authorization") == "Bearer e2etoken", "bearer token")
    p = json.loads(r["body"])
    check(p["version"] == 2 and isinstance(p["created_at"], int), "version, created_at")
    check(p["job"] == job and p["step"] == "0" and p["node"] == node, "job/step/node")
    check(isinstance(p["counter_stats"], list) and p["counter_stats"], "counter_stats")
    for e in p["counter_stats"]:
        check(e["app"] == "%s.0" % job, "app %s" % e["app"])
        check(list(e["stats"].keys()) == ["count", "accumulate", "minimum", "maximum",
              "mean", "stddev", "skewness", "kurtosis"], "RunStats keys")
        check(all(isinstance(v, float) for v in e["stats"].values()), "RunStats doubles")
    for s in p["samples"]:
        check(s["series"] == "Task", "series %s" % s["series"])
        key = (s["task"], s["time_ns"])
        check(key not in got, "sample %s sent twice" % (key,))
        got[key] = s["fields"]
check(set(got) == set(want), "samples: %d in packets, %d in the file" % (len(got), len(want)))
for key, rec in want.items():
    for name, v in got[key].items():
        fv = rec[name]
        check((int(fv) if rec.dtype[name].kind == "u" else float(fv)) == v,
              "%s %s: %r in the packet, %r in the file" % (key, name, v, fv))
# the last packet's statistics cover every sample of the step
last = json.loads(packets[-1]["body"])
stats = {e["counter"]: e["stats"] for e in last["counter_stats"]}
allv = {n: np.concatenate([tasks[t][n].astype(float) for t in tasks]) for n in ("CPUUtilization", "RSS")}
for n, v in allv.items():
    st = stats["Task." + n]
    check(st["count"] == float(len(v)), "%s count %s vs %d" % (n, st["count"], len(v)))
    check(st["minimum"] == v.min() and st["maximum"] == v.max(), "%s min/max" % n)
    check(abs(st["mean"] - v.mean()) <= 1e-9 * max(1.0, abs(v.mean())), "%s mean" % n)
    check(abs(st["accumulate"] - v.sum()) <= 1e-9 * max(1.0, abs(v.sum())), "%s sum" % n)
print("json packets ok: %d packets, %d samples" % (len(packets), len(got)))
PYEOF
echo "stream json end-to-end ok"
