# tests/e2e/stream_lib.sh - shared set-up of the streaming end-to-end
# tests: a private influxd (tests/lib/influxd.sh) beside the plugin's test
# cluster (tests/e2e/plugin_lib.sh).  Sourced after common.sh, cluster.sh
# and plugin_lib.sh.

IFX_DIR=
IFX_PORT=

# stream_need: skip unless influxd is installed and the plugin streams.
stream_need() {
	need_root
	need_cmd influxd curl
	[ -f "$top_builddir/plugins/.libs/acct_gather_profile_sh5.so" ] ||
		skip "plugin not built (configure --with-slurm-source)"
	grep -q ProfileSH5StreamURL "$top_builddir/plugins/.libs/acct_gather_profile_sh5.so" ||
		skip "the plugin has no ProfileSH5Stream* options"
}

# stream_influxd_prepare: pick the port influxd will use (the cluster's
# configuration needs it before the server runs).
stream_influxd_prepare() {
	IFX_DIR=$(mktemp -d /tmp/sh5-e2e-influxd.XXXXXX)
	IFX_PORT=$("$top_srcdir/tests/lib/influxd.sh" free-port)
	[ -n "$IFX_PORT" ] || fail "no free port for influxd"
}

stream_influxd_start() {
	"$top_srcdir/tests/lib/influxd.sh" start "$IFX_DIR" "$IFX_PORT" >/dev/null ||
		fail "influxd did not start: $(tail -n 5 "$IFX_DIR/influxd.log")"
}

stream_influxd_stop() {
	[ -n "$IFX_DIR" ] && "$top_srcdir/tests/lib/influxd.sh" stop "$IFX_DIR"
}

# stream_cleanup: EXIT trap: the cluster, then influxd and its data.
stream_cleanup() {
	local rc=$?
	stream_influxd_stop
	[ -n "$IFX_DIR" ] && [ "$rc" -eq 0 ] && rm -rf "$IFX_DIR"
	(exit "$rc")
	cluster_cleanup
}

# influx_q DB QUERY: run an InfluxQL statement, print the JSON answer.
influx_q() {
	curl -s -m 30 -XPOST "http://127.0.0.1:$IFX_PORT/query?db=$1&epoch=ns" \
		--data-urlencode "q=$2"
}

# influx_count DB MEASUREMENT FIELD: number of points.
influx_count() {
	influx_q "$1" "SELECT COUNT(\"$3\") FROM \"$2\"" | $PY -c '
import json, sys
r = json.load(sys.stdin)["results"][0]
print(r["series"][0]["values"][0][1] if "series" in r else 0)'
}

# h5_attr FILE NAME: an attribute of the node group.
h5_attr() {
	$PY - "$1" "$2" <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f[[k for k in f if isinstance(f[k], h5py.Group)][0]]
v = g.attrs.get(sys.argv[2])
print("" if v is None else (v.decode() if isinstance(v, bytes) else v))
PYEOF
}

# stream_compare FILE...: every sample of the files is in InfluxDB.
stream_compare() {
	$PY "$top_srcdir/tests/tools/sh5_stream_compare.py" \
		"http://127.0.0.1:$IFX_PORT" slurm "$@"
}

# stream_step_done JOB: wait (at most 20 s) until the slurmstepd of step
# JOB.0 has ended: srun returns when the tasks end, before the step's
# node_step_end has closed the stream and written its counters.
stream_step_done() {
	local i p left
	for i in $(seq 200); do
		left=
		for p in $(cluster_stepd_pids_all); do
			grep -qF "[$1.0]" "/proc/$p/cmdline" 2>/dev/null && left=$p
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	fail "slurmstepd of $1.0 did not end"
}

# h5_samples FILE: number of samples of the file's series (those the
# plugin streams; as counted by sh5_stream_compare.py).
h5_samples() {
	$PY - "$1" <<'PYEOF'
import sys, h5py
f, n = h5py.File(sys.argv[1], "r"), 0
for node in f:
    g = f[node]
    if not isinstance(g, h5py.Group):
        continue
    for name in g:
        o = g[name]
        if isinstance(o, h5py.Group) and name == "Tasks":
            n += sum(len(o[t]) for t in o)
        elif isinstance(o, h5py.Dataset) and name != "ClockOffsets" \
                and "Series" in o.attrs and o.dtype.names \
                and "EpochTimeNs" in o.dtype.names:
            n += len(o)
print(n)
PYEOF
}

# spool_samples DIR: samples in the spool files of DIR (from the names).
spool_samples() {
	local f n=0 base
	for f in "$1"/*.lp "$1"/*.json; do
		[ -f "$f" ] || continue
		base=${f##*-}
		n=$((n + ${base%%.*}))
	done
	echo "$n"
}

# stream_step_counts FILE: check that every sample of the step's file is
# counted once ("Stream Sent" straight + "Stream Spooled", nothing
# dropped or rejected); print "SPOOLED RECOVERED".
stream_step_counts() {
	local n sent spooled rec dropped rej
	n=$(h5_samples "$1")
	sent=$(h5_attr "$1" "Stream Sent")
	spooled=$(h5_attr "$1" "Stream Spooled")
	rec=$(h5_attr "$1" "Stream Recovered")
	dropped=$(h5_attr "$1" "Stream Dropped")
	rej=$(h5_attr "$1" "Stream Rejected")
	assert_eq 0 "$dropped" "$(basename "$1"): samples dropped"
	assert_eq 0 "$rej" "$(basename "$1"): samples rejected"
	assert_eq "$n" "$((sent + spooled))" \
		"$(basename "$1"): sent $sent + spooled $spooled = samples in the file"
	echo "$spooled $rec"
}
