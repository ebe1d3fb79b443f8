#!/bin/bash
# merge_kill.sh: killing sh5merge while it writes never leaves a job file
# under the final name (SIGKILL: only a temporary name; SIGTERM: nothing);
# a later merge then succeeds.
. "$top_srcdir/tests/tools/merge_lib.sh"

mkdir -p prof/u out
$GEN -d prof/u -j 700 -n 96 -t 4 -s 1800 -f stock -E || fail "gen_job"

# kill_during SIGNAL: start a merge, wait for its temporary file, signal.
kill_during() {
	local sig=$1 pid i
	$SH5MERGE merge -q -j 700 -p prof -u u -o out/job.h5 2>/dev/null &
	pid=$!
	for i in $(seq 1 2000); do
		ls -a out | grep -q '^\.job\.h5\.tmp\.' && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.005
	done
	ls -a out | grep -q '^\.job\.h5\.tmp\.' ||
		{ wait $pid; skip "merge finished before it could be killed"; }
	sleep 0.02
	kill -$sig $pid 2>/dev/null ||
		{ wait $pid; skip "merge finished before it could be killed"; }
	wait $pid
	echo "killed with SIG$sig: exit $?"
	[ ! -e out/job.h5 ] || fail "SIG$sig: out/job.h5 exists"
}

kill_during KILL
ls -a out | grep -q '^\.job\.h5\.tmp\.' || fail "SIGKILL: where did the temporary go?"
kill_during TERM
[ "$(ls -a out | grep -c '^\.job\.h5\.tmp\.')" = 1 ] ||
	fail "SIGTERM: the temporary was not removed: $(ls -a out)"
echo "ok: no job file after SIGKILL/SIGTERM"

# A stale temporary does not stop the next merge.
$SH5MERGE merge -q -j 700 -p prof -u u -o out/job.h5 || fail "merge after kill"
[ "$(h5attr out/job.h5 / 'Number of Steps')" = 1 ] || fail "job file"
echo "ok: merge after kill"
exit 0
