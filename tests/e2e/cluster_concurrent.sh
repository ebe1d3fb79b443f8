#!/bin/bash
# cluster_concurrent.sh - two private clusters at once: they get
# different ports and directories, both run jobs while the other is up,
# and tearing one down leaves the other working.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

need_root
need_cmd munged slurmctld slurmd srun sinfo ss

trap cluster_cleanup EXIT
cluster_start || fail "cluster A did not start"
A_DIR=$CLUSTER_DIR A_PORT=$CLUSTER_CTLD_PORT A_CONF=$SLURM_CONF

# Cluster B lives in its own bash process (one cluster per shell).  It
# reports its port and directory, runs a job, waits for our signal file,
# runs another job and stops.
SIG=$A_DIR/b-may-stop
BOUT=$A_DIR/b.out
(
	unset CLUSTER_DIR CLUSTER_CTLD_PORT CLUSTER_SLURMD_PORT SLURM_CONF \
		CLUSTER_CONF_DIR CLUSTER_NODE_NAMES
	exec bash -c '
		. "$1/tests/lib/common.sh"; . "$1/tests/lib/cluster.sh"
		trap cluster_cleanup EXIT
		cluster_start || fail "cluster B did not start"
		echo "B $CLUSTER_CTLD_PORT $CLUSTER_SLURMD_PORT $CLUSTER_DIR"
		srun -n1 echo B-job-1 || fail "job on B"
		for i in $(seq 100); do [ -e "$2" ] && break; sleep 0.1; done
		srun -n1 echo B-job-2 || fail "second job on B"
	' cluster-b "$top_srcdir" "$SIG"
) >"$BOUT" 2>&1 &
bpid=$!

# While B starts and runs, A runs a job too.
out=$(srun -n2 echo A-job) || fail "job on A while B starts"
assert_eq 2 "$(echo "$out" | grep -c '^A-job$')" "A's tasks"

for i in $(seq 300); do grep -q '^B-job-1' "$BOUT" && break; sleep 0.1; done
grep -q '^B-job-1' "$BOUT" || { cat "$BOUT" >&2; fail "cluster B ran no job"; }
read -r _ b_port b_dport b_dir < <(grep '^B ' "$BOUT")
assert_ne "$A_PORT" "$b_port" "slurmctld ports of A and B"
assert_ne "$CLUSTER_SLURMD_PORT" "$b_dport" "slurmd ports of A and B"
assert_ne "$A_DIR" "$b_dir" "directories of A and B"
# Each client talks to its own controller.
assert_eq "$A_PORT" "$(scontrol show config | awk '$1 == "SlurmctldPort" { print $3 }')" \
	"A's client sees A's controller"

touch "$SIG"
rc=0
wait "$bpid" || rc=$?
cat "$BOUT" >&2
assert_eq 0 "$rc" "cluster B's script"
grep -q '^B-job-2' "$BOUT" || fail "cluster B's second job"
[ ! -e "$b_dir" ] || fail "cluster B left $b_dir behind"

# B is gone; A still works and its daemons are untouched.
assert_eq "$A_CONF" "$SLURM_CONF" "SLURM_CONF of A"
out=$(srun -n1 echo A-after) || fail "job on A after B stopped"
assert_eq A-after "$out" "A's job after B stopped"
exit 0
