#!/bin/bash
# tests/lib/influxd.sh - start and stop a private InfluxDB 1.x (Debian's
# influxd) on loopback for tests.  Never touches a system instance: the
# config, meta/data/wal directories and ports are private.
#
#   influxd.sh start DIR [PORT] [auth]
#       Start influxd with everything under DIR (created), HTTP on
#       127.0.0.1:PORT (a free port when PORT is empty or 0).  With "auth",
#       HTTP authentication is on and an admin user "sh5admin" with
#       password "sh5secret" is created.  Waits until /ping answers (at most
#       20 s).  Prints "PORT PID" on stdout; the pid is also in DIR/influxd.pid
#       and the port in DIR/port.  Exit 0 ok, 77 when influxd is missing,
#       1 on failure (DIR/influxd.log has the server's output).
#   influxd.sh stop DIR
#       TERM the pid in DIR/influxd.pid (only that process), wait for it to
#       exit (KILL after 10 s).  The data directory is kept, so a later
#       "start DIR PORT" serves the same databases.
#   influxd.sh free-port
#       Print a TCP port that was free on 127.0.0.1 a moment ago.
set -u

free_port() {
	/usr/bin/python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

cmd=${1:-}
case $cmd in
free-port)
	free_port
	;;
start)
	dir=${2:?usage: influxd.sh start DIR [PORT] [auth]}
	port=${3:-0}
	auth=${4:-}
	command -v influxd >/dev/null 2>&1 || { echo "influxd not installed" >&2; exit 77; }
	mkdir -p "$dir/meta" "$dir/data" "$dir/wal" || exit 1
	[ "$port" = 0 ] && port=$(free_port)
	rpc=$(free_port)
	authon=false
	[ "$auth" = auth ] && authon=true
	cat > "$dir/influxd.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc"
[meta]
  dir = "$dir/meta"
[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$port"
  auth-enabled = $authon
  log-enabled = false
[logging]
  level = "warn"
[continuous_queries]
  enabled = false
CONF
	influxd run -config "$dir/influxd.conf" >>"$dir/influxd.log" 2>&1 &
	pid=$!
	echo "$pid" > "$dir/influxd.pid"
	echo "$port" > "$dir/port"
	for _ in $(seq 200); do
		if curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/ping"; then
			if [ "$authon" = true ] && [ ! -f "$dir/admin-created" ]; then
				curl -s -o /dev/null -m 5 -XPOST "http://127.0.0.1:$port/query" \
					--data-urlencode "q=CREATE USER sh5admin WITH PASSWORD 'sh5secret' WITH ALL PRIVILEGES" &&
					touch "$dir/admin-created"
			fi
			echo "$port $pid"
			exit 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "influxd did not start; log: $dir/influxd.log" >&2
	kill "$pid" 2>/dev/null
	exit 1
	;;
stop)
	dir=${2:?usage: influxd.sh stop DIR}
	[ -f "$dir/influxd.pid" ] || exit 0
	pid=$(cat "$dir/influxd.pid")
	kill -TERM "$pid" 2>/dev/null || { rm -f "$dir/influxd.pid"; exit 0; }
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$dir/influxd.pid"; exit 0; }
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$dir/influxd.pid"
	;;
*)
	echo "usage: influxd.sh start DIR [PORT] [auth] | stop DIR | free-port" >&2
	exit 2
	;;
esac
