#!/bin/bash
# epilog_detach.sh - scripts/sh5-epilog run as slurmctld runs an
# EpilogSlurmctld (an empty environment but the job's SLURM_JOB_*, its own
# process group, which is SIGKILLed when the script exits): it returns at
# once with status 0 while a node-step file is still open (no Totals), its
# detached copy survives the kill, waits for the file to be closed, and
# merges as the job's user: job file owned by the user, mode 0600, a log
# line with the job id.  JobFileDir=<dir>/%u: the user's directory is made
# (the user's, 0700).  Timeout: a merge still waiting is stopped and
# logged, nothing left behind.  A job without node-step files is skipped quietly;
# a missing job id or a refused user name is logged, exit status 0.
set -u
. "$top_srcdir/tests/lib/common.sh"
need_root
need_cmd setsid setpriv
SH5MERGE=$top_builddir/sh5merge/sh5merge
GEN=$top_builddir/bench/gen_job
EP=$top_builddir/scripts/sh5-epilog
for f in "$SH5MERGE" "$GEN" "$EP"; do
	[ -x "$f" ] || fail "$f not built"
done
U=${SH5_TEST_USER:-nobody}
UID_=$(id -u "$U") || skip "no user $U"
GID_=$(id -g "$U")
W=$(mktemp -d /tmp/epilog_detach.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir -p "$W/bin" "$W/prof/$U" "$W/gen"
cp "$SH5MERGE" "$EP" "$W/bin/" && chmod 755 "$W/bin"/*
"$GEN" -d "$W/gen" -j 88 -n 2 -t 1 -s 5 -S 0 -f sh5 || fail "gen_job"
mkdir -p "$W/gen/k"
"$GEN" -d "$W/gen/k" -j 88 -n 2 -t 1 -s 5 -S 0 -f sh5 -K || fail "gen_job -K"
cp "$W/gen/88_0_node1.h5" "$W/gen/k/88_0_node2.h5" "$W/prof/$U/"
chown -R "$U:$GID_" "$W/prof/$U" && chmod 700 "$W/prof/$U"
LOG=$W/epilog.log
cat >"$W/sh5-epilog.conf" <<CONF
# test configuration
ProfileDir=$W/prof
Sh5merge=$W/bin/sh5merge
LogFile=$LOG
Wait=30
CONF

# run_epilog JOB USER UID: like slurmctld: empty environment, a process
# group of its own killed after the script exits; prints the seconds taken
# and the exit status.
run_epilog() {
	local t0 t1
	t0=$(date +%s.%N)
	setsid -w bash -c 'env -i SLURM_JOB_ID="$1" SLURM_JOB_USER="$2" \
		SLURM_JOB_UID="$3" SH5_EPILOG_CONF="$4" "$5" \
		</dev/null >/dev/null 2>&1
		echo $? >"$6"; kill -KILL 0' _ "$1" "$2" "$3" "$W/sh5-epilog.conf" \
		"$W/bin/sh5-epilog" "$W/rc"
	t1=$(date +%s.%N)
	echo "$(echo "$t1 - $t0" | bc -l) $(cat "$W/rc")"
}

set -- $(run_epilog 88 "$U" "$UID_")
assert_eq 0 "$2" "exit status of the epilog"
[ "$(echo "$1 < 2.5" | bc)" = 1 ] || fail "the epilog took $1 s"
sleep 1
J=$W/prof/$U/job_88.h5
assert_no_file "$J" "job file before the open file is closed"
# The writer closes node2's file.
cp "$W/gen/88_0_node2.h5" "$W/prof/$U/.n2" && chown "$U" "$W/prof/$U/.n2" &&
	mv -f "$W/prof/$U/.n2" "$W/prof/$U/88_0_node2.h5"
for i in $(seq 300); do
	[ -f "$J" ] && grep -q "job 88" "$LOG" 2>/dev/null && break
	sleep 0.1
done
assert_file "$J" "job file (log: $(cat "$LOG" 2>/dev/null))"
assert_eq "$U 600" "$(stat -c '%U %a' "$J")" "owner and mode"
grep -q ": info: job 88: merged into $J " "$LOG" || fail "log: $(cat "$LOG")"
"$SH5MERGE" list -i "$J" | grep -q "step 0: 2 node" || fail "job file content"

# JobFileDir with a per-user directory: made for the user.
mkdir -p "$W/jobs"
echo "JobFileDir=$W/jobs/%u" >>"$W/sh5-epilog.conf"
set -- $(run_epilog 88 "$U" "$UID_")
assert_eq 0 "$2" "exit status (JobFileDir)"
J2=$W/jobs/$U/job_88.h5
for i in $(seq 100); do
	[ -f "$J2" ] && [ "$(grep -c ": info: job 88: merged" "$LOG")" = 2 ] && break
	sleep 0.1
done
assert_file "$J2" "job file in JobFileDir (log: $(cat "$LOG"))"
assert_eq "$U 700" "$(stat -c '%U %a' "$W/jobs/$U")" "the user's JobFileDir"
assert_eq "$U 600" "$(stat -c '%U %a' "$J2")" "owner and mode in JobFileDir"

# Timeout: a merge still waiting is stopped, logged, leaves nothing.
cp "$W/gen/k/88_0_node2.h5" "$W/prof/$U/87_0_node2.h5"
cp "$W/gen/88_0_node1.h5" "$W/prof/$U/87_0_node1.h5"
chown "$U" "$W/prof/$U"/87_*
echo "Timeout=1" >>"$W/sh5-epilog.conf"
set -- $(run_epilog 87 "$U" "$UID_")
assert_eq 0 "$2" "exit status (Timeout)"
for i in $(seq 100); do
	grep -q "job 87" "$LOG" && break
	sleep 0.1
done
grep -q "err: job 87: merge failed (exit 124, [0-9]*s), $W/jobs/$U/job_87.h5 not written: stopped after 1s (Timeout)" "$LOG" ||
	fail "timeout not logged: $(grep 'job 87' "$LOG")"
[ -z "$(ls -A "$W/jobs/$U" | grep -v '^job_88.h5$')" ] ||
	fail "left behind: $(ls -A "$W/jobs/$U")"
sed -i '/^Timeout=1$/d; /^JobFileDir=/d' "$W/sh5-epilog.conf"

# No node-step files: nothing, quietly.
set -- $(run_epilog 89 "$U" "$UID_")
assert_eq 0 "$2" "exit status (no files)"
sleep 0.5
grep -q "job 89" "$LOG" && fail "logged a job without files"
assert_no_file "$W/prof/$U/job_89.h5"

# Bad input from the environment: logged, exit 0.
set -- $(run_epilog "" "$U" "$UID_")
assert_eq 0 "$2" "exit status (no job id)"
set -- $(run_epilog 90 "../$U" "$UID_")
assert_eq 0 "$2" "exit status (bad user)"
set -- $(run_epilog 91 "$U" 12345)
assert_eq 0 "$2" "exit status (wrong uid)"
for i in $(seq 50); do
	[ "$(grep -c "err: job \(?\|90\|91\):" "$LOG")" -ge 3 ] && break
	sleep 0.1
done
grep -q "err: job ?: no valid SLURM_JOB_ID" "$LOG" || fail "no job id not logged: $(cat "$LOG")"
grep -q "err: job 90: SLURM_JOB_USER '../$U' refused" "$LOG" || fail "bad user not logged"
grep -q "err: job 91: user '$U' is not uid 12345" "$LOG" || fail "wrong uid not logged"
echo "epilog detach ok"
