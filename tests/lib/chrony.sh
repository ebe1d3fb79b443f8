# tests/lib/chrony.sh - a private chronyd serving NTP for tests.
#
#   . "$top_srcdir/tests/lib/chrony.sh"
#   chrony_start 127.0.0.1 "$(cluster_free_port)" "$dir" || fail ...
#   ... NTP clients ask $CHRONY_ADDR:$CHRONY_PORT ...
#   chrony_stop
#
# chronyd runs with -x (it never touches the system clock), in the
# foreground (-d, its log on stderr goes to DIR/chronyd.log), as root (no
# privilege drop, so its files can live in a private directory), with no
# command sockets, a local reference ("local stratum N") so it answers
# as a synchronised server without any upstream, bound to the given
# address and port only.  chrony_stop signals only the pid chrony_start
# got.  The daemon is not a child of the calling shell (a bare "wait"
# does not wait for it).

# chrony_start ADDR PORT DIR [STRATUM]: start chronyd serving NTP on
# ADDR:PORT with its files (conf, pid, drift, log) in DIR (created).
# STRATUM defaults to 8 (the server then answers with stratum 8).  Waits
# (up to 10 s) until the port is bound.  Sets and exports CHRONY_PID,
# CHRONY_ADDR, CHRONY_PORT, CHRONY_DIR.  Status 0 on success, 1 (log on
# stderr) otherwise.
chrony_start() {
	local addr=$1 port=$2 dir=$3 stratum=${4:-8} i
	[ -n "$addr" ] && [ -n "$port" ] && [ -n "$dir" ] || {
		echo "chrony: usage: chrony_start ADDR PORT DIR [STRATUM]" >&2
		return 1
	}
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd) || return 1
	{
		echo "# Written by tests/lib/chrony.sh: a private NTP server."
		echo "port $port"
		echo "bindaddress $addr"
		echo "allow all"
		echo "local stratum $stratum"
		echo "cmdport 0"
		echo "bindcmdaddress /"
		echo "pidfile $dir/chronyd.pid"
		echo "driftfile $dir/chrony.drift"
		echo "logdir $dir"
	} >"$dir/chrony.conf" || return 1
	CHRONY_PID=$(chronyd -x -d -u root -F 0 -f "$dir/chrony.conf" \
		</dev/null >>"$dir/chronyd.log" 2>&1 & echo $!)
	CHRONY_ADDR=$addr CHRONY_PORT=$port CHRONY_DIR=$dir
	export CHRONY_PID CHRONY_ADDR CHRONY_PORT CHRONY_DIR
	for i in $(seq 100); do
		if ! chrony_alive; then
			echo "chrony: chronyd exited:" >&2
			cat "$dir/chronyd.log" >&2
			CHRONY_PID=
			return 1
		fi
		ss -Hunl "sport = :$port" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	echo "chrony: chronyd not serving on $addr:$port after 10 s:" >&2
	cat "$dir/chronyd.log" >&2
	chrony_stop
	return 1
}

# chrony_alive: status 0 while the chronyd from chrony_start runs.
chrony_alive() {
	[ -n "${CHRONY_PID:-}" ] && [ -d "/proc/$CHRONY_PID" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$CHRONY_PID/status" 2>/dev/null
}

# chrony_stop: TERM the chronyd chrony_start started, KILL after 5 s.
# Safe to call twice.
chrony_stop() {
	local i
	[ -n "${CHRONY_PID:-}" ] || return 0
	kill -TERM "$CHRONY_PID" 2>/dev/null || true
	for i in $(seq 50); do
		chrony_alive || break
		sleep 0.1
	done
	if chrony_alive; then kill -KILL "$CHRONY_PID" 2>/dev/null || true; fi
	CHRONY_PID=
	return 0
}
