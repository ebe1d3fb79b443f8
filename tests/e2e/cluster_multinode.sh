#!/bin/bash
# cluster_multinode.sh - the harness's multi-node mode: three slurmd in
# their own network namespaces (one with a skewed clock through
# libfaketime) behind a private bridge; "srun -N3 hostname" runs one task
# on each node; a step daemon is found in the right namespace; teardown
# removes every namespace, link and daemon it created.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

need_root
need_cmd munged slurmctld slurmd srun sinfo ss ip unshare
[ -f "$CLUSTER_FAKETIME_LIB" ] || skip "needs faketime ($CLUSTER_FAKETIME_LIB)"
ip netns add "sh5-probe-$$" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "sh5-probe-$$"

trap cluster_cleanup EXIT
CLUSTER_NODES=3
CLUSTER_FAKETIME_2='+2.5s x1.0001'
cluster_start || fail "3-node cluster did not start"
assert_eq "n1 n2 n3" "$CLUSTER_NODE_NAMES" "node names"

out=$(srun -N3 hostname | sort | tr '\n' ' ') || fail "srun -N3 hostname"
assert_eq "n1 n2 n3 " "$out" "hostnames of the three tasks"

# Node 2's slurmd runs under libfaketime with the requested skew.
pid_n2=$(awk '$1 == "pid" && $4 == "slurmd_n2" { print $3 }' "$CLUSTER_DIR/cluster.created")
env_n2=$(tr '\0' '\n' <"/proc/$pid_n2/environ")
assert_match '^FAKETIME=\+2\.5s x1\.0001$' "$(echo "$env_n2" | grep '^FAKETIME=')" "n2 FAKETIME"
assert_match 'libfaketime' "$(echo "$env_n2" | grep '^LD_PRELOAD=')" "n2 LD_PRELOAD"
env_n1=$(tr '\0' '\n' <"/proc/$(awk '$1 == "pid" && $4 == "slurmd_n1" { print $3 }' "$CLUSTER_DIR/cluster.created")/environ")
echo "$env_n1" | grep -q '^FAKETIME=' && fail "n1 must run on the real clock"

# The step daemon of node 3 is found, in node 3's namespace.
srun -N3 -J stepd sleep 5 &
srunpid=$!
for i in $(seq 100); do
	job=$(squeue -h -n stepd -t R -o %i)
	[ -n "$job" ] && break
	sleep 0.1
done
[ -n "$job" ] || fail "step job not running"
p=$(cluster_stepd_pid "$job" 0 n3) || fail "no slurmstepd for $job.0 on n3"
assert_eq "$(cluster_netns_name 3)" "$(ip netns identify "$p")" "namespace of n3's slurmstepd"
wait "$srunpid" || fail "srun -N3 sleep 5"

# Teardown removes exactly what was created.
made=$(awk '$1 == "netns" || $1 == "link" { print $2 }' "$CLUSTER_DIR/cluster.created")
cluster_stop
for n in $made; do
	ip netns list | grep -qw "$n" && fail "namespace $n left behind"
	ip link show "$n" >/dev/null 2>&1 && fail "link $n left behind"
done
exit 0
