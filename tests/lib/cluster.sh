# tests/lib/cluster.sh - a private, real Slurm cluster for end-to-end tests.
#
# Source it from a bash test (as root), set what you need, start, test,
# and let the EXIT trap tear everything down:
#
#   . "$top_srcdir/tests/lib/common.sh"
#   . "$top_srcdir/tests/lib/cluster.sh"
#   CLUSTER_PLUGIN_DIR=$top_builddir/plugins/.libs
#   CLUSTER_EXTRA_CONF='AcctGatherProfileType=acct_gather_profile/sh5'
#   CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$dir"
#   trap cluster_cleanup EXIT
#   cluster_start || fail "cluster did not start"
#   w=$(cluster_stage "$top_builddir/tests/tools/sh5_workload")
#   srun -n2 --profile=all "$w" 4 16 4 /tmp
#
# Everything is private to one cluster: its own munged (socket, key, pid,
# log), slurmctld and slurmd(s) in the foreground as children of the
# test shell, state/spool/pid/log files under CLUSTER_DIR, ports picked
# free and reserved, so several clusters can run at the same time.
# Teardown stops only the processes and removes only the namespaces,
# links and locks this library created (recorded in
# $CLUSTER_DIR/cluster.created).
#
# Parameters (environment variables, set before cluster_start):
#   CLUSTER_DIR            base directory (default: new mktemp -d dir)
#   CLUSTER_NODES          number of nodes (default 1)
#   CLUSTER_NETNS          0: slurmd on 127.0.0.1 (only 1 node possible)
#                          1: one network namespace per node
#                          (default: 1 when CLUSTER_NODES > 1, else 0)
#   CLUSTER_CPUS           CPUs per node (default 2)
#   CLUSTER_CTLD_PORT      slurmctld port (default: a free port)
#   CLUSTER_SLURMD_PORT    slurmd port (default: a free port)
#   CLUSTER_PLUGIN_DIR     directory of extra plugins (e.g. the build
#                          tree's plugins/.libs): its *.so files are
#                          copied to $CLUSTER_DIR/plugins (world-readable),
#                          which is prepended to Slurm's PluginDir, so
#                          clients run by any job user can load them
#                          wherever the source tree lives
#   CLUSTER_EXTRA_CONF     extra slurm.conf lines (newline separated)
#   CLUSTER_ACCT_GATHER_CONF  full acct_gather.conf content (default empty)
#   CLUSTER_FAKETIME_<i>   FAKETIME spec for node i (1-based), e.g.
#                          '+2.5s x1.0001'; slurmd runs with libfaketime
#   CLUSTER_TASK_FAKETIME  1: the tasks of node i run with the same faked
#                          clock as its slurmd (a TaskProlog preloads
#                          libfaketime with slurmd's FAKETIME and shared
#                          start time, FAKETIME_SHARED), so events stamped
#                          by tasks and the plugin's clock-offset
#                          measurements describe one clock
#   CLUSTER_SLURMD_DEBUG   SlurmdDebug (default debug)
#   CLUSTER_START_TIMEOUT  seconds to wait for idle nodes (default 30)
#   CLUSTER_STOP_TIMEOUT   seconds between TERM and KILL (default 10)
#   Every node gets TmpFS=$CLUSTER_DIR/tmpfs/<node> (mode 1777): PMIx
#   (srun --mpi=pmix) needs a directory of its own per node.
#   CLUSTER_KEEP           1: keep CLUSTER_DIR after cleanup (it is always
#                          kept when the test failed)
#   CLUSTER_SLURM_PREFIX   a Slurm installed in a private prefix (e.g. by
#                          scripts/slurm-build.sh): its bin and sbin go
#                          first on PATH (exported: the test's own sinfo,
#                          srun ... are that release's; runuser resets
#                          PATH, so call them as $CLUSTER_SLURM_PREFIX/bin/X
#                          for another user), PluginDir defaults to its
#                          lib/slurm.  Default: the installed Slurm (22.05).
#   CLUSTER_SLURM_PLUGINDIR Slurm's own plugins (default: the installed
#                          Slurm's, or CLUSTER_SLURM_PREFIX/lib/slurm)
#   CLUSTER_CGROUP_CONF    cgroup.conf content (default: cgroup/v1 without
#                          automount; for a CLUSTER_SLURM_PREFIX release of
#                          24.05 or later CgroupPlugin=disabled)
#
# Set by cluster_start (exported): SLURM_CONF, CLUSTER_SLURM_RELEASE
# (e.g. 24.11.5, only with CLUSTER_SLURM_PREFIX), CLUSTER_DIR, CLUSTER_CONF_DIR,
# CLUSTER_NODE_NAMES (space separated), CLUSTER_NODE_ADDRS, CLUSTER_CTLD_ADDR,
# CLUSTER_CTLD_PORT, CLUSTER_SLURMD_PORT, CLUSTER_NET_PREFIX (netns mode).
#
# Functions: cluster_start, cluster_wait_idle, cluster_stop, cluster_cleanup,
# cluster_free_port, cluster_stepd_pid, cluster_log, cluster_log_tail,
# cluster_node_exec, cluster_netns_name, cluster_stage,
# cluster_path_reachable.
#
# Job steps run as the job user (often nobody), who may not be able to
# enter the source or build tree (a clone in a 0700 home such as /root):
# everything a job user must read or run lives under CLUSTER_DIR (mode
# 755, by default under /tmp).  The plugins are copied there by
# cluster_write_conf; programs are copied with cluster_stage.

CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER_LOCK_ROOT=${CLUSTER_LOCK_ROOT:-/tmp/sh5-test-locks}
CLUSTER_FAKETIME_LIB=${CLUSTER_FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
_cluster_started=0

cluster_msg() {
	echo "cluster: $*" >&2
}

# ------------------------------------------------------------ locks, ports
#
# A lock is a directory $CLUSTER_LOCK_ROOT/<name> holding the owner's pid
# ($$ of the test shell).  mkdir is atomic, so two tests racing for the
# same port or subnet cannot both win.  A lock whose owner is dead is
# stale and taken over.

# cluster_lock NAME: take lock NAME for this shell; status 0 on success.
cluster_lock() {
	local d=$CLUSTER_LOCK_ROOT/$1 owner
	mkdir -p "$CLUSTER_LOCK_ROOT" 2>/dev/null
	if mkdir "$d" 2>/dev/null; then
		echo $$ >"$d/owner"
		return 0
	fi
	owner=$(cat "$d/owner" 2>/dev/null)
	if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
		# Stale: remove and retry once (mkdir decides the race).
		rm -rf "$d"
		if mkdir "$d" 2>/dev/null; then
			echo $$ >"$d/owner"
			return 0
		fi
	fi
	return 1
}

# cluster_release_locks: drop every lock owned by this shell.
cluster_release_locks() {
	local d
	for d in "$CLUSTER_LOCK_ROOT"/*; do
		[ -d "$d" ] || continue
		[ "$(cat "$d/owner" 2>/dev/null)" = "$$" ] && rm -rf "$d"
	done
	return 0
}

# cluster_port_busy PORT: status 0 if any TCP or UDP socket uses PORT.
cluster_port_busy() {
	ss -Hantu 2>/dev/null |
		awk -v p="$1" '{ n = split($5, a, ":"); if (a[n] == p) f = 1 }
			END { exit !f }'
}

# cluster_free_port: print a free TCP/UDP port (10000-31999, below the
# ephemeral range) and reserve it for this shell until
# cluster_release_locks (called by cluster_cleanup).
cluster_free_port() {
	local i p
	for i in $(seq 1 200); do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))
		cluster_port_busy "$p" && continue
		cluster_lock "port-$p" || continue
		echo "$p"
		return 0
	done
	cluster_msg "no free port found"
	return 1
}

# ------------------------------------------------------------ bookkeeping

# Record something this library created, for teardown in reverse order.
#   pid STAGE PID NAME | netns NAME | link NAME
cluster_record() {
	echo "$*" >>"$CLUSTER_DIR/cluster.created"
}

# cluster_netns_name I: name of node I's network namespace.
cluster_netns_name() {
	echo "sh5-${CLUSTER_NET_ID}-n$1"
}

# ------------------------------------------------------------ configuration

cluster_init() {
	local i names addrs

	CLUSTER_NODES=${CLUSTER_NODES:-1}
	if [ -z "${CLUSTER_NETNS:-}" ]; then
		if [ "$CLUSTER_NODES" -gt 1 ]; then CLUSTER_NETNS=1; else CLUSTER_NETNS=0; fi
	fi
	if [ "$CLUSTER_NETNS" = 0 ] && [ "$CLUSTER_NODES" -ne 1 ]; then
		cluster_msg "CLUSTER_NODES=$CLUSTER_NODES needs CLUSTER_NETNS=1"
		return 1
	fi
	CLUSTER_CPUS=${CLUSTER_CPUS:-2}
	if [ -n "${CLUSTER_SLURM_PREFIX:-}" ]; then
		[ -x "$CLUSTER_SLURM_PREFIX/sbin/slurmd" ] || {
			cluster_msg "no $CLUSTER_SLURM_PREFIX/sbin/slurmd"
			return 1
		}
		PATH=$CLUSTER_SLURM_PREFIX/sbin:$CLUSTER_SLURM_PREFIX/bin:$PATH
		CLUSTER_SLURM_PLUGINDIR=${CLUSTER_SLURM_PLUGINDIR:-$CLUSTER_SLURM_PREFIX/lib/slurm}
		# "slurm 24.11.5"
		CLUSTER_SLURM_RELEASE=$(slurmd -V 2>/dev/null | awk '{ print $2 }')
		export PATH CLUSTER_SLURM_PREFIX CLUSTER_SLURM_RELEASE
	fi
	CLUSTER_SLURM_PLUGINDIR=${CLUSTER_SLURM_PLUGINDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
	CLUSTER_START_TIMEOUT=${CLUSTER_START_TIMEOUT:-30}
	CLUSTER_STOP_TIMEOUT=${CLUSTER_STOP_TIMEOUT:-10}
	CLUSTER_SLURMD_DEBUG=${CLUSTER_SLURMD_DEBUG:-debug}
	if [ -z "${CLUSTER_DIR:-}" ]; then
		CLUSTER_DIR=$(mktemp -d /tmp/sh5-cluster.XXXXXX) || return 1
		_cluster_made_dir=1
	fi
	mkdir -p "$CLUSTER_DIR" || return 1
	CLUSTER_DIR=$(cd "$CLUSTER_DIR" && pwd)
	# munged insists that every directory on the socket path is
	# searchable by all; job steps of other users need the same.
	chmod 755 "$CLUSTER_DIR"
	cluster_path_reachable "$CLUSTER_DIR" || {
		cluster_msg "CLUSTER_DIR $CLUSTER_DIR: job users and munged" \
			"need every directory above it searchable by all;" \
			"use a directory under /tmp"
		return 1
	}
	CLUSTER_CONF_DIR=$CLUSTER_DIR/etc
	mkdir -p "$CLUSTER_CONF_DIR" "$CLUSTER_DIR/munge" "$CLUSTER_DIR/state" \
		"$CLUSTER_DIR/spool" "$CLUSTER_DIR/run" "$CLUSTER_DIR/log" \
		"$CLUSTER_DIR/tmpfs" || return 1
	chmod 755 "$CLUSTER_DIR/munge"
	: >>"$CLUSTER_DIR/cluster.created"

	CLUSTER_CTLD_PORT=${CLUSTER_CTLD_PORT:-$(cluster_free_port)} || return 1
	CLUSTER_SLURMD_PORT=${CLUSTER_SLURMD_PORT:-$(cluster_free_port)} || return 1
	CLUSTER_HOST=$(hostname -s)

	if [ "$CLUSTER_NETNS" = 1 ]; then
		cluster_pick_subnet || return 1
		CLUSTER_CTLD_ADDR=$CLUSTER_NET_PREFIX.1
		names= addrs=
		for i in $(seq 1 "$CLUSTER_NODES"); do
			names="$names n$i"
			addrs="$addrs $CLUSTER_NET_PREFIX.$((10 + i))"
		done
		CLUSTER_NODE_NAMES=${names# }
		CLUSTER_NODE_ADDRS=${addrs# }
	else
		CLUSTER_CTLD_ADDR=127.0.0.1
		CLUSTER_NODE_NAMES=$CLUSTER_HOST
		CLUSTER_NODE_ADDRS=127.0.0.1
	fi
	SLURM_CONF=$CLUSTER_CONF_DIR/slurm.conf
	export SLURM_CONF CLUSTER_DIR CLUSTER_CONF_DIR CLUSTER_NODE_NAMES \
		CLUSTER_NODE_ADDRS CLUSTER_CTLD_ADDR CLUSTER_CTLD_PORT \
		CLUSTER_SLURMD_PORT
	cluster_write_conf
}

# cluster_path_reachable PATH: status 0 if every directory from / down
# to PATH (PATH included when it is a directory) has the search bit for
# others, so any user can reach PATH (modes only: ACLs are not looked at).
# Prints nothing; cluster_msg names the first blocking directory.
cluster_path_reachable() {
	local p d mode
	p=$(readlink -f "$1") || return 1
	[ -d "$p" ] || p=$(dirname "$p")
	d=$p
	while :; do
		mode=$(stat -c %a "$d") || return 1
		if [ $((0$mode & 1)) -eq 0 ]; then
			cluster_msg "$d (mode $mode) is not searchable by other users"
			return 1
		fi
		[ "$d" = / ] && break
		d=$(dirname "$d")
	done
	return 0
}

# cluster_stage_plugins: copy the *.so files of CLUSTER_PLUGIN_DIR to
# $CLUSTER_DIR/plugins (mode 755, files 644).  The copy, not the build
# tree, goes into PluginDir: srun run by a job user reads PluginDir too,
# and refuses the whole configuration if it cannot open a directory of it.
cluster_stage_plugins() {
	local d=$CLUSTER_DIR/plugins f n=0
	if [ ! -d "$CLUSTER_PLUGIN_DIR" ]; then
		cluster_msg "CLUSTER_PLUGIN_DIR $CLUSTER_PLUGIN_DIR: no such directory"
		return 1
	fi
	rm -rf "$d"
	mkdir -p "$d" && chmod 755 "$d" || return 1
	for f in "$CLUSTER_PLUGIN_DIR"/*.so; do
		[ -f "$f" ] || continue
		cp "$f" "$d/" && chmod 644 "$d/${f##*/}" || {
			cluster_msg "cannot copy $f to $d"
			return 1
		}
		n=$((n + 1))
	done
	if [ "$n" -eq 0 ]; then
		cluster_msg "CLUSTER_PLUGIN_DIR $CLUSTER_PLUGIN_DIR holds no *.so" \
			"(plugin not built?)"
		return 1
	fi
}

# cluster_stage FILE...: copy programs (or scripts) a job user must run
# into $CLUSTER_DIR/bin (mode 755, files 755) and print their new paths,
# one per line, in order.  Call it after cluster_init or cluster_start.
# The source or build tree may be out of the job user's reach (a clone
# in a 0700 home); the copies are not.  Status 1 (with a message) if a
# FILE is missing or two FILEs share a base name.
cluster_stage() {
	local d=${CLUSTER_DIR:-}/bin f dst
	if [ -z "${CLUSTER_DIR:-}" ] || [ ! -d "$CLUSTER_DIR" ]; then
		cluster_msg "cluster_stage: no CLUSTER_DIR (call cluster_init first)"
		return 1
	fi
	mkdir -p "$d" && chmod 755 "$d" || return 1
	for f in "$@"; do
		dst=$d/${f##*/}
		if [ ! -f "$f" ]; then
			cluster_msg "cluster_stage: $f: no such file (not built?)"
			return 1
		fi
		if [ -e "$dst" ] && ! cmp -s "$f" "$dst"; then
			cluster_msg "cluster_stage: $dst already holds another file"
			return 1
		fi
		cp "$f" "$dst.tmp.$$" && chmod 755 "$dst.tmp.$$" &&
			mv -f "$dst.tmp.$$" "$dst" || {
			cluster_msg "cluster_stage: cannot copy $f to $d"
			return 1
		}
		echo "$dst"
	done
}

cluster_write_conf() {
	local plugindir=$CLUSTER_SLURM_PLUGINDIR nodes

	if [ -n "${CLUSTER_PLUGIN_DIR:-}" ]; then
		cluster_stage_plugins || return 1
		plugindir="$CLUSTER_DIR/plugins:$plugindir"
	fi
	nodes=$(echo "$CLUSTER_NODE_NAMES" | tr ' ' ',')
	# Distinct job ids per cluster keep slurmstepd titles apart when two
	# clusters run at once.
	cat >"$SLURM_CONF" <<EOF
# Written by tests/lib/cluster.sh for a private test cluster.
ClusterName=sh5test
SlurmctldHost=$CLUSTER_HOST($CLUSTER_CTLD_ADDR)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CLUSTER_DIR/munge/munge.socket
SlurmctldPort=$CLUSTER_CTLD_PORT
SlurmdPort=$CLUSTER_SLURMD_PORT
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool/%n
SlurmctldPidFile=$CLUSTER_DIR/run/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/run/slurmd.%n.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=$CLUSTER_SLURMD_DEBUG
PluginDir=$plugindir
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
FirstJobId=$((1000 + CLUSTER_CTLD_PORT * 100))
InactiveLimit=0
KillWait=2
MinJobAge=300
MailProg=/bin/true
TmpFS=$CLUSTER_DIR/tmpfs/%n
${CLUSTER_TASK_FAKETIME:+TaskProlog=$CLUSTER_CONF_DIR/task_prolog}
${CLUSTER_EXTRA_CONF:-}
NodeName=DEFAULT CPUs=$CLUSTER_CPUS State=UNKNOWN
EOF
	if [ "$CLUSTER_NETNS" = 1 ]; then
		echo "NodeName=n[1-$CLUSTER_NODES] NodeAddr=$(echo "$CLUSTER_NODE_ADDRS" | tr ' ' ',')" >>"$SLURM_CONF"
	else
		echo "NodeName=$CLUSTER_HOST NodeAddr=127.0.0.1" >>"$SLURM_CONF"
	fi
	echo "PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"

	for n in $CLUSTER_NODE_NAMES; do
		mkdir -p "$CLUSTER_DIR/tmpfs/$n" && chmod 1777 "$CLUSTER_DIR/tmpfs/$n"
	done
	[ "${CLUSTER_TASK_FAKETIME:-0}" = 1 ] && cluster_write_task_prolog
	printf '%s\n' "${CLUSTER_CGROUP_CONF:-$(cluster_cgroup_conf)}" \
		>"$CLUSTER_CONF_DIR/cgroup.conf"
	printf '%s\n' "${CLUSTER_ACCT_GATHER_CONF:-}" \
		>"$CLUSTER_CONF_DIR/acct_gather.conf"
}

# cluster_cgroup_conf: the default cgroup.conf.  The tests need no
# cgroups (proctrack/linuxproc, task/none); 22.05 still reads the file.
# Slurm's NEWS: 23.11 removed CgroupAutomount (an error since), 24.05
# added CgroupPlugin=disabled (run on 24.11).  23.11 is not handled.
cluster_cgroup_conf() {
	local maj min
	IFS=. read -r maj min _ <<<"${CLUSTER_SLURM_RELEASE:-}"
	if [ -n "${CLUSTER_SLURM_PREFIX:-}" ] && [ -n "$min" ] &&
		[ $((maj * 100 + min)) -ge 2405 ]; then
		echo 'CgroupPlugin=disabled'
	else
		printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n'
	fi
}

# ------------------------------------------------------------ network (netns)

# Pick a /24 in 10.213.0.0/16 not on any interface, lock it, and name
# the bridge after it.
cluster_pick_subnet() {
	local k i
	for i in $(seq 1 100); do
		k=$((1 + RANDOM % 250))
		ip -4 -o addr show | grep -q " 10\.213\.$k\." && continue
		cluster_lock "net-$k" || continue
		CLUSTER_NET_ID=$k
		CLUSTER_NET_PREFIX=10.213.$k
		CLUSTER_BRIDGE=sh5br$k
		export CLUSTER_NET_PREFIX
		return 0
	done
	cluster_msg "no free 10.213.x.0/24 subnet"
	return 1
}

cluster_net_up() {
	local i ns host peer addr

	ip link add "$CLUSTER_BRIDGE" type bridge || return 1
	cluster_record link "$CLUSTER_BRIDGE"
	ip addr add "$CLUSTER_CTLD_ADDR/24" dev "$CLUSTER_BRIDGE" || return 1
	ip link set "$CLUSTER_BRIDGE" up || return 1
	for i in $(seq 1 "$CLUSTER_NODES"); do
		ns=$(cluster_netns_name "$i")
		host=sh5v${CLUSTER_NET_ID}n$i
		peer=sh5p${CLUSTER_NET_ID}n$i
		addr=$CLUSTER_NET_PREFIX.$((10 + i))
		ip netns add "$ns" || return 1
		cluster_record netns "$ns"
		ip link add "$host" type veth peer name "$peer" || return 1
		cluster_record link "$host"
		ip link set "$peer" netns "$ns" || return 1
		ip -n "$ns" link set "$peer" name eth0 || return 1
		ip -n "$ns" addr add "$addr/24" dev eth0 || return 1
		ip -n "$ns" link set eth0 up || return 1
		ip -n "$ns" link set lo up || return 1
		ip link set "$host" master "$CLUSTER_BRIDGE" || return 1
		ip link set "$host" up || return 1
	done
}

# cluster_node_exec I COMMAND...: run COMMAND in node I's namespace (netns
# mode; in loopback mode it simply runs COMMAND).
cluster_node_exec() {
	local i=$1
	shift
	if [ "$CLUSTER_NETNS" = 1 ]; then
		ip netns exec "$(cluster_netns_name "$i")" "$@"
	else
		"$@"
	fi
}

# ------------------------------------------------------------ daemons

# cluster_spawn STAGE NAME LOG COMMAND...: start COMMAND in the
# background (stdin /dev/null, output to LOG), record its pid.  The
# daemon is started from a subshell, so it is not a child of the test
# shell: a bare "wait" in a test does not wait for the daemons.
cluster_spawn() {
	local stage=$1 name=$2 log=$3 pid
	shift 3
	pid=$("$@" </dev/null >>"$log" 2>&1 & echo $!)
	cluster_record pid "$stage" "$pid" "$name"
	eval "_cluster_pid_${name//[^A-Za-z0-9]/_}=$pid"
}

cluster_start_munged() {
	local m=$CLUSTER_DIR/munge
	if [ ! -f "$m/munge.key" ]; then
		mungekey -c -k "$m/munge.key" >/dev/null 2>&1 ||
			dd if=/dev/urandom of="$m/munge.key" bs=128 count=1 2>/dev/null ||
			return 1
		chmod 600 "$m/munge.key"
	fi
	cluster_spawn 1 munged "$CLUSTER_DIR/log/munged.log" \
		munged -F --socket="$m/munge.socket" --key-file="$m/munge.key" \
		--pid-file="$m/munged.pid" --seed-file="$m/munged.seed" \
		--log-file="$CLUSTER_DIR/log/munged.log"
	cluster_wait_for "munged socket" 10 test -S "$m/munge.socket"
}

cluster_start_slurmctld() {
	cluster_spawn 2 slurmctld "$CLUSTER_DIR/log/slurmctld.out" \
		slurmctld -D -i -f "$SLURM_CONF"
}

cluster_start_slurmd() {
	local i=$1 name ft var
	name=$(echo "$CLUSTER_NODE_NAMES" | cut -d' ' -f"$i")
	var=CLUSTER_FAKETIME_$i
	ft=${!var:-}
	mkdir -p "$CLUSTER_DIR/spool/$name"
	if [ "$CLUSTER_NETNS" = 1 ]; then
		# ip netns exec, unshare and sh all exec: $! is slurmd.
		cluster_spawn 3 "slurmd_$name" "$CLUSTER_DIR/log/slurmd.$name.out" \
			ip netns exec "$(cluster_netns_name "$i")" \
			unshare --uts sh -c 'hostname "$1"; shift; exec "$@"' sh "$name" \
			env ${ft:+LD_PRELOAD=$CLUSTER_FAKETIME_LIB FAKETIME="$ft"} \
			SH5_CLUSTER_DIR="$CLUSTER_DIR" \
			slurmd -D -f "$SLURM_CONF" -N "$name"
	else
		cluster_spawn 3 "slurmd_$name" "$CLUSTER_DIR/log/slurmd.$name.out" \
			env ${ft:+LD_PRELOAD=$CLUSTER_FAKETIME_LIB FAKETIME="$ft"} \
			SH5_CLUSTER_DIR="$CLUSTER_DIR" \
			slurmd -D -f "$SLURM_CONF" -N "$name"
	fi
}

# The TaskProlog of CLUSTER_TASK_FAKETIME: prints the exports of the
# task's node, from $CLUSTER_DIR/faketime/<node>.env (written by
# cluster_task_faketime_env once the node's slurmd runs).  It runs as the
# job's user, with an almost empty environment.
cluster_write_task_prolog() {
	mkdir -p "$CLUSTER_DIR/faketime" && chmod 755 "$CLUSTER_DIR/faketime"
	cat >"$CLUSTER_CONF_DIR/task_prolog" <<EOF
#!/bin/sh
f=$CLUSTER_DIR/faketime/\$SLURMD_NODENAME.env
[ -r "\$f" ] || exit 0
/bin/cat "\$f"
echo "export LD_PRELOAD=$CLUSTER_FAKETIME_LIB\${LD_PRELOAD:+:\$LD_PRELOAD}"
EOF
	chmod 755 "$CLUSTER_CONF_DIR/task_prolog"
}

# cluster_task_faketime_env I: write node I's task clock (FAKETIME and
# slurmd's FAKETIME_SHARED) for the TaskProlog.  libfaketime (Debian
# 0.9.10) names its shared start time after the pid of the first process
# that loaded it (slurmd) and creates it for root only: the semaphore and
# the segment are opened to the job's users.
cluster_task_faketime_env() {
	local i=$1 name ft var pid
	name=$(echo "$CLUSTER_NODE_NAMES" | cut -d' ' -f"$i")
	var=CLUSTER_FAKETIME_$i
	ft=${!var:-}
	[ -n "$ft" ] || return 0
	var=_cluster_pid_slurmd_$name
	pid=${!var}
	cluster_wait_for "libfaketime state of slurmd on $name" 10 \
		test -e "/dev/shm/faketime_shm_$pid" || return 1
	chmod 666 "/dev/shm/faketime_shm_$pid" "/dev/shm/sem.faketime_sem_$pid" ||
		return 1
	printf 'export FAKETIME=%s\nexport FAKETIME_SHARED=/faketime_sem_%s /faketime_shm_%s\n' \
		"$ft" "$pid" "$pid" >"$CLUSTER_DIR/faketime/$name.env"
	chmod 644 "$CLUSTER_DIR/faketime/$name.env"
}

# cluster_wait_for WHAT SECONDS COMMAND...: poll COMMAND every 0.1 s until
# it succeeds; status 1 (with a message) after SECONDS.
cluster_wait_for() {
	local what=$1 secs=$2 n=0
	shift 2
	while ! "$@" >/dev/null 2>&1; do
		n=$((n + 1))
		if [ "$n" -ge $((secs * 10)) ]; then
			cluster_msg "timed out after ${secs}s waiting for $what"
			return 1
		fi
		sleep 0.1
	done
}

cluster_all_idle() {
	local idle
	idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
	[ "$idle" -eq "$CLUSTER_NODES" ]
}

# cluster_daemons_alive: every recorded daemon still runs.
cluster_daemons_alive() {
	local kind stage pid name
	while read -r kind stage pid name; do
		[ "$kind" = pid ] || continue
		cluster_pid_alive "$pid" || {
			cluster_msg "$name (pid $pid) exited"
			return 1
		}
	done <"$CLUSTER_DIR/cluster.created"
}

cluster_wait_idle_poll() {
	cluster_daemons_alive 2>/dev/null || return 2
	cluster_all_idle
}

# cluster_wait_idle [SECONDS]: wait until every node is idle.  On
# timeout, or when a daemon dies, print the log tails; status 1.
cluster_wait_idle() {
	local secs=${1:-$CLUSTER_START_TIMEOUT} n=0 rc
	while :; do
		rc=0
		cluster_wait_idle_poll || rc=$?
		[ "$rc" -eq 0 ] && return 0
		if [ "$rc" -eq 2 ]; then
			cluster_daemons_alive || true
			break
		fi
		n=$((n + 1))
		if [ "$n" -ge $((secs * 10)) ]; then
			cluster_msg "nodes not idle after ${secs}s:"
			sinfo -N 2>&1 | sed 's/^/cluster:   /' >&2
			break
		fi
		sleep 0.1
	done
	cluster_log_tail 20
	return 1
}

# cluster_start: write the configuration (if not done), start munged,
# slurmctld and the slurmd(s), and wait until all nodes are idle.
# Status 0 when the cluster is usable; 1 (log tails on stderr) otherwise.
cluster_start() {
	local i
	if [ -z "${SLURM_CONF:-}" ] || [ ! -f "${CLUSTER_CONF_DIR:-/nonexistent}/slurm.conf" ]; then
		cluster_init || return 1
	fi
	_cluster_started=1
	if [ "$CLUSTER_NETNS" = 1 ]; then
		cluster_net_up || { cluster_msg "network set-up failed"; return 1; }
	fi
	cluster_start_munged || { cluster_log_tail 20; return 1; }
	cluster_start_slurmctld
	cluster_wait_for "slurmctld" "$CLUSTER_START_TIMEOUT" \
		cluster_ctld_up || { cluster_log_tail 20; return 1; }
	for i in $(seq 1 "$CLUSTER_NODES"); do
		cluster_start_slurmd "$i"
	done
	cluster_wait_idle || return 1
	if [ "${CLUSTER_TASK_FAKETIME:-0}" = 1 ]; then
		for i in $(seq 1 "$CLUSTER_NODES"); do
			cluster_task_faketime_env "$i" || return 1
		done
	fi
}

cluster_ctld_up() {
	cluster_daemons_alive || return 0	# stop waiting; caller sees it
	scontrol ping 2>/dev/null | grep -q 'UP'
}

# ------------------------------------------------------------ teardown

cluster_pid_alive() {
	local st
	[ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# cluster_kill_pids SECONDS PID...: TERM, wait up to SECONDS, KILL, reap.
cluster_kill_pids() {
	local secs=$1 p n=0 left
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	while :; do
		left=
		for p in "$@"; do
			cluster_pid_alive "$p" && left="$left $p"
		done
		[ -z "$left" ] && break
		if [ "$n" -ge $((secs * 10)) ]; then
			cluster_msg "killing$left after ${secs}s"
			kill -KILL $left 2>/dev/null || true
			sleep 0.2
			break
		fi
		n=$((n + 1))
		sleep 0.1
	done
	# Reap them if they are our children (they normally are not).
	for p in "$@"; do
		wait "$p" 2>/dev/null || true
	done
	return 0
}

# Step daemons of this cluster: they carry SH5_CLUSTER_DIR from slurmd
# (22.05).  24.11's slurmstepd writes its process title over that area
# (/proc/PID/environ holds no variables); then a step daemon of this
# cluster is one with a file open under CLUSTER_DIR (its slurmd log).
cluster_stepd_pids_all() {
	local p fd
	for p in $(pgrep -x slurmstepd 2>/dev/null); do
		if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null |
			grep -qx "SH5_CLUSTER_DIR=$CLUSTER_DIR"; then
			echo "$p"
			continue
		fi
		for fd in /proc/"$p"/fd/*; do
			case $(readlink "$fd" 2>/dev/null) in
			"$CLUSTER_DIR"/*) echo "$p"; break ;;
			esac
		done
	done
	return 0
}

# cluster_stop: cancel jobs, stop the daemons this library started
# (slurmd, then slurmctld, then munged; TERM, then KILL after
# CLUSTER_STOP_TIMEOUT), then remove the links and namespaces it made.
# Safe to call twice.
cluster_stop() {
	local f=${CLUSTER_DIR:-}/cluster.created stage kind a b c pids left ctld
	# Teardown must run to the end even under "set -e" (options are
	# restored on return).
	local -
	set +e
	[ -n "${CLUSTER_DIR:-}" ] && [ -f "$f" ] || return 0
	# Cancel every job (of any user) while the controller still runs,
	# so step daemons end cleanly.
	ctld=$(awk '$1 == "pid" && $4 == "slurmctld" { print $3 }' "$f")
	if [ -n "$ctld" ] && cluster_pid_alive "$ctld" && [ -n "${SLURM_CONF:-}" ]; then
		timeout 5 scancel --quiet --partition=debug 2>/dev/null || true
	fi
	for stage in 3 2 1; do
		pids=$(awk -v s="$stage" '$1 == "pid" && $2 == s { print $3 }' "$f")
		# shellcheck disable=SC2086
		cluster_kill_pids "${CLUSTER_STOP_TIMEOUT:-10}" $pids
		if [ "$stage" = 3 ]; then
			left=$(cluster_stepd_pids_all)
			# shellcheck disable=SC2086
			[ -n "$left" ] && cluster_kill_pids 5 $left
		fi
	done
	tac "$f" | while read -r kind a b c; do
		case $kind in
		link) ip link del "$a" 2>/dev/null || true ;;
		netns) ip netns del "$a" 2>/dev/null || true ;;
		esac
	done
	: >"$f"
	return 0
}

# cluster_cleanup: for "trap cluster_cleanup EXIT".  Stops the cluster,
# releases ports and subnets, and removes CLUSTER_DIR if this library
# created it, the test passed and CLUSTER_KEEP is not 1.  Keeps the
# caller's exit status.
cluster_cleanup() {
	local rc=$?
	local -
	set +e
	cluster_stop
	cluster_release_locks
	if [ "${_cluster_made_dir:-0}" = 1 ] && [ -n "${CLUSTER_DIR:-}" ]; then
		if [ "$rc" -eq 0 ] && [ "${CLUSTER_KEEP:-0}" != 1 ]; then
			rm -rf "$CLUSTER_DIR"
		else
			cluster_msg "kept $CLUSTER_DIR"
		fi
	fi
	return "$rc"
}

# ------------------------------------------------------------ inspection

# cluster_log ctld|munged|slurmd [NODE]: print the path of a daemon log
# (NODE: node name, default the first node).
cluster_log() {
	local node=${2:-${CLUSTER_NODE_NAMES%% *}}
	case $1 in
	ctld | slurmctld) echo "$CLUSTER_DIR/log/slurmctld.log" ;;
	munged) echo "$CLUSTER_DIR/log/munged.log" ;;
	slurmd) echo "$CLUSTER_DIR/log/slurmd.$node.log" ;;
	*) cluster_msg "cluster_log: unknown daemon '$1'"; return 1 ;;
	esac
}

# cluster_log_tail [LINES]: print the last LINES (20) of every log to stderr.
cluster_log_tail() {
	local n=${1:-20} f
	for f in "$CLUSTER_DIR"/log/*; do
		[ -s "$f" ] || continue
		echo "---- $f (last $n lines)" >&2
		tail -n "$n" "$f" >&2
	done
}

# cluster_node_index NAME: 1-based index of node NAME.
cluster_node_index() {
	local i=0 n
	for n in $CLUSTER_NODE_NAMES; do
		i=$((i + 1))
		[ "$n" = "$1" ] && { echo "$i"; return 0; }
	done
	return 1
}

# cluster_stepd_pid JOBID STEPID [NODE] [SECONDS]: print the pid of the
# slurmstepd running step JOBID.STEPID (on NODE in netns mode), waiting
# up to SECONDS (default 10) for it to appear.  STEPID may be a number,
# "batch" or "extern".  Status 1 if not found.
cluster_stepd_pid() {
	local job=$1 step=$2 node=${3:-} secs=${4:-10} n=0 p ns want
	if [ "$CLUSTER_NETNS" = 1 ]; then
		[ -n "$node" ] || node=${CLUSTER_NODE_NAMES%% *}
		want=$(cluster_netns_name "$(cluster_node_index "$node")")
	fi
	while :; do
		for p in $(cluster_stepd_pids_all); do
			grep -qF "[$job.$step]" "/proc/$p/cmdline" 2>/dev/null || continue
			if [ "$CLUSTER_NETNS" = 1 ]; then
				ns=$(ip netns identify "$p" 2>/dev/null) || true
				[ "$ns" = "$want" ] || continue
			fi
			echo "$p"
			return 0
		done
		n=$((n + 1))
		[ "$n" -ge $((secs * 10)) ] && break
		sleep 0.1
	done
	cluster_msg "no slurmstepd for step $job.$step${node:+ on $node}"
	return 1
}
