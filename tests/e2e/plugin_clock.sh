#!/bin/bash
# Clock-offset measurements by the plugin against a real NTP server
# (chronyd on loopback): at step start, periodically, at step end, stored
# in /<node>/ClockOffsets.  A dead server costs the job nothing and is
# logged once.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/lib/chrony.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"
need_cmd chronyd

chrony_dir=$(mktemp -d /tmp/sh5-chrony.XXXXXX)
port=$(cluster_free_port)
chrony_start 127.0.0.1 "$port" "$chrony_dir" 9 || fail "chronyd did not start"
dead=$(cluster_free_port)
plugin_cluster_setup "ProfileSH5ClockServer=127.0.0.1:$port
ProfileSH5ClockInterval=2
ProfileSH5ClockTimeout=500"
trap 'chrony_stop; cluster_cleanup; rm -rf "$chrony_dir"' EXIT

as_user srun -n1 --profile=task "$WORKLOAD" 5 8 1 "$SCRATCH" || fail "srun failed"
job=$(last_job_id)
f=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
$PY - "$f" "$NODE" "$port" <<'PYEOF' || fail "ClockOffsets check failed"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
g = f[sys.argv[2]]
c = g["ClockOffsets"]
assert c.dtype.names == ("LocalTimeNs", "OffsetNs", "RoundTripNs", "Stratum", "Phase"), c.dtype.names
ph = list(c["Phase"])
assert ph[0] == 0 and ph[-1] == 2 and 1 in ph, "phases %s" % ph
assert len(c) >= 3
# Same machine, same clock: tiny offsets and round trips.
assert np.all(np.abs(c["OffsetNs"]) < 50e6), c["OffsetNs"]
assert np.all((c["RoundTripNs"] >= 0) & (c["RoundTripNs"] < 50e6)), c["RoundTripNs"]
assert np.all(c["Stratum"] == 9), c["Stratum"]   # chronyd runs "local stratum 9"
assert np.all(np.diff(c["LocalTimeNs"].astype(np.int64)) > 0)
v = g.attrs["Clock Server"]
assert (v.decode() if isinstance(v, bytes) else v) == "127.0.0.1:" + sys.argv[3]
print("clock offsets:", len(c), "phases", ph, "max |offset| %.3f ms" % (np.abs(c["OffsetNs"]).max() / 1e6))
PYEOF

# A server that does not answer: the step runs normally, one log line.
sed -i "s|^ProfileSH5ClockServer=.*|ProfileSH5ClockServer=127.0.0.1:$dead|" \
	"$CLUSTER_CONF_DIR/acct_gather.conf"
scontrol reconfigure || fail "reconfigure failed"
sleep 1
start=$(date +%s%N)
as_user srun -n1 --profile=task "$WORKLOAD" 3 8 1 "$SCRATCH" 5
assert_eq "$?" 5 "exit code with a dead clock server"
job=$(last_job_id)
n=$(grep -c "clock offset to 127.0.0.1:$dead not measured" "$(cluster_log slurmd)")
assert_eq "$n" 1 "dead server logged once per step"
assert_file "$PROFDIR/$JOBUSER/${job}_0_$NODE.h5"
echo "clock offsets ok"
