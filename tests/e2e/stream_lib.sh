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
