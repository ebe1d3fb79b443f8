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

# Files of our writer are copied whole while they are checked (the early
# second pass): the same guarantees when killed then.  This merge takes a
# few tenths of a second: tried a few times, each kill sooner.
mkdir -p prof2/u out2
$GEN -d prof2/u -j 701 -n 400 -t 4 -s 600 -f sh5 -E || fail "gen_job sh5"
killed=0
for delay in 0.05 0.02 0.005 0; do
	rm -rf out2 && mkdir out2
	$SH5MERGE merge -q -j 701 -p prof2 -u u -o out2/job.h5 2>/dev/null &
	pid=$!
	for i in $(seq 1 400); do
		ls -a out2 | grep -q '^\.job\.h5\.tmp\.' && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.002
	done
	sleep $delay
	if kill -KILL $pid 2>/dev/null; then
		wait $pid
		if [ ! -e out2/job.h5 ]; then
			ls -a out2 | grep -q '^\.job\.h5\.tmp\.' ||
				fail "early pass, SIGKILL: no temporary"
			killed=1
			break
		fi
	fi
	wait $pid 2>/dev/null
	[ -e out2/job.h5 ] || fail "early pass: neither finished nor killed"
done
[ $killed = 1 ] && echo "ok: early pass killed: only the temporary is left" ||
	echo "note: the early-pass merge always finished before the kill"
$SH5MERGE merge -q -j 701 -p prof2 -u u -o out2/job.h5 2>err || fail "merge after the early kill"
grep -q . err && { cat err; fail "warnings after the early kill"; }
$SH5MERGE merge -j 701 -p prof2 -u u -o out2/again.h5 2>err || fail "merge 701"
grep -q '400 node files (400 copied whole)' err || { cat err; fail "not copied whole"; }
exit 0
