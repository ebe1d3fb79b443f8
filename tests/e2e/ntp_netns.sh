#!/bin/bash
# ntp_netns.sh - the NTP probe across the multi-node harness: chronyd
# serves time on the controller's bridge address; from inside a node's
# network namespace, a probe running under libfaketime with a known skew
# measures that skew (offset = reference - local), and one on the real
# clock measures about zero.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/lib/chrony.sh"

PROBE=$top_builddir/tests/tools/sh5_ntpprobe
need_root
need_cmd chronyd munged slurmctld slurmd ip unshare ss
[ -x "$PROBE" ] || fail "$PROBE not built"
[ -f "$CLUSTER_FAKETIME_LIB" ] || skip "needs faketime ($CLUSTER_FAKETIME_LIB)"
ip netns add "sh5-probe-$$" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "sh5-probe-$$"

trap 'chrony_stop; cluster_cleanup' EXIT
CLUSTER_NODES=2
cluster_start || fail "2-node cluster did not start"
chrony_start "$CLUSTER_CTLD_ADDR" "$(cluster_free_port)" "$CLUSTER_DIR/chrony" ||
	fail "chronyd did not start on $CLUSTER_CTLD_ADDR"
server=$CHRONY_ADDR:$CHRONY_PORT

# probe NODE FAKETIME: print "offset_ns rtt_ns stratum ..." measured from
# inside NODE's namespace (FAKETIME empty: real clock).
probe() {
	cluster_node_exec "$1" env ${2:+LD_PRELOAD=$CLUSTER_FAKETIME_LIB FAKETIME="$2"} \
		"$PROBE" "$server" 4 2000
}

# check WHAT EXPECTED_NS LINE: the offset is within rtt/2 + 5 ms of the
# expected one, stratum 8.
check() {
	local what=$1 want=$2 off rtt stratum rest err bound
	read -r off rtt stratum rest <<<"$3"
	[ -n "$off" ] || fail "$what: no measurement"
	assert_eq 8 "$stratum" "$what: stratum"
	err=$((off - want)); err=${err#-}
	bound=$((rtt / 2 + 5000000))
	note "$what: offset $off ns (want $want), rtt $rtt ns"
	[ "$err" -le "$bound" ] ||
		fail "$what: offset $off ns, expected $want +- $bound"
}

line=$(probe 1 "") || fail "probe from n1 on the real clock"
check "n1 real clock" 0 "$line"
# A node 2.5 s ahead reads 2.5 s too much: reference - local = -2.5 s.
line=$(probe 2 "+2.5s") || fail "probe from n2, 2.5 s ahead"
check "n2 +2.5 s" -2500000000 "$line"
line=$(probe 2 "-30s") || fail "probe from n2, 30 s behind"
check "n2 -30 s" 30000000000 "$line"

# Unreachable server from a node: bounded failure, not a hang.
t0=$(date +%s%N)
rc=0
cluster_node_exec 1 "$PROBE" "$CLUSTER_CTLD_ADDR:$(cluster_free_port)" 4 500 \
	2>"$CLUSTER_DIR/probe.err" || rc=$?
t1=$(date +%s%N)
assert_eq 1 "$rc" "probe of a closed port: exit status"
assert_match 'no NTP server|no NTP reply' "$(cat "$CLUSTER_DIR/probe.err")" "probe error"
[ $(((t1 - t0) / 1000000)) -lt 3000 ] || fail "probe of a closed port took too long"
exit 0
