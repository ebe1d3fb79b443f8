#!/bin/bash
# merge_bench.sh - sh5merge merge against Slurm's sh5util -S, same inputs.
#
#   bench/merge_bench.sh [BUILD_DIR]     (default: the current directory)
#
# Generates node-step files with bench/gen_job (1 task x 3600 samples per
# node, as issue 17 states; our layout sealed with a bench key as the
# plugin seals it, the same unsealed, and Slurm's stock one), then runs
# `sh5merge merge` and `sh5util -j JOB -S` on them alternately (A B A B
# ..., RUNS pairs, the same machine state for both) and prints, per case,
# the median wall time, the median CPU time (user + sys of the process and
# every child it waited for) and the peak RSS of each tool, with the
# ratios sh5merge / sh5util.  Each case runs on the machine as it is
# ("idle") and again with one core kept busy by a CPU hog the script
# starts and kills by its pid ("busy").  Targets (issue 17): wall and CPU
# <= 1.0x at every size, idle and busy; wall <= 0.6x with both cores free.
# Then sh5merge's peak RSS at 3 job lengths (memory bounded independently
# of the job length).  Extraction is measured by bench/extract_bench.sh.
#
# The load average is printed beside each case: other work on the machine
# makes wall times (not CPU times) meaningless.
#
# Environment: BENCH_DIR (scratch, default a new /tmp dir, removed at the
# end), SIZES (nodes, default "64 256 1024"), SAMPLES (3600), TASKS (1),
# FORMATS (default "sealed sh5 stock"; sealed needs root: sh5merge trusts
# only a root-owned key), RUNS (pairs, default 5), LOADS (default
# "idle busy"), RSS_NODES (64), RSS_SAMPLES (default "360 3600 36000"),
# BEFORE (the build directory of an earlier commit: its sh5merge runs in
# the same alternation, A B C A B C ..., and the ratios after/before are
# printed too; build it from `git archive COMMIT` in a separate dir).
set -u
B=${1:-$PWD}
SH5MERGE=$B/sh5merge/sh5merge
GEN=$B/bench/gen_job
SH5UTIL=${SH5UTIL:-/usr/bin/sh5util}
SIZES=${SIZES:-64 256 1024} SAMPLES=${SAMPLES:-3600} TASKS=${TASKS:-1}
FORMATS=${FORMATS:-sealed sh5 stock} RUNS=${RUNS:-5} LOADS=${LOADS:-idle busy}
RSS_NODES=${RSS_NODES:-64} RSS_SAMPLES=${RSS_SAMPLES:-360 3600 36000}
BEFORE=${BEFORE:-}
[ -x "$SH5MERGE" ] && [ -x "$GEN" ] ||
	{ echo "build first: make && make bench/gen_job" >&2; exit 1; }
[ -z "$BEFORE" ] || [ -x "$BEFORE/sh5merge/sh5merge" ] ||
	{ echo "BEFORE=$BEFORE: no sh5merge/sh5merge there" >&2; exit 1; }
[ -x "$SH5UTIL" ] ||
	{ echo "no $SH5UTIL (apt-get install slurm-wlm-hdf5-plugin)" >&2; exit 1; }
W=${BENCH_DIR:-$(mktemp -d /tmp/sh5-bench.XXXXXX)}
HOG=
cleanup() {
	[ -n "$HOG" ] && kill "$HOG" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
U=$(id -un)
mkdir -p "$W/conf"
# The bench's seal key (sealed files; the other cases merge without one).
head -c 64 /dev/urandom > "$W/seal.key"
chmod 600 "$W/seal.key"
KEYOPT="--seal-key none"
# sh5util needs a Slurm configuration naming the stock plugin.
printf 'ClusterName=bench\nSlurmctldHost=localhost\nAcctGatherProfileType=acct_gather_profile/hdf5\n' > "$W/conf/slurm.conf"
printf 'ProfileHDF5Dir=%s/prof\n' "$W" > "$W/conf/acct_gather.conf"
export SLURM_CONF=$W/conf/slurm.conf

# hog_start / hog_stop: one core kept busy (a shell loop, by its pid).
hog_start() {
	bash -c 'while :; do :; done' &
	HOG=$!
	sleep 0.2
}
hog_stop() {
	[ -n "$HOG" ] || return 0
	kill "$HOG" 2>/dev/null
	wait "$HOG" 2>/dev/null
	HOG=
}

# once CMD...: "WALL CPU RSS" (s, s, KiB) of one run; the output removed
# first.  CPU: user + sys of CMD and every child it waited for, from
# wait4() (microseconds; GNU time prints hundredths); RSS: the largest
# peak of those processes.
RUN1='
import os, sys, time
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open("/dev/null", os.O_WRONLY)
    os.dup2(fd, 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, st, ru = os.wait4(pid, 0)
t1 = time.monotonic()
print("%.4f %.4f %d" % (t1 - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(st))
'
once() {
	rm -f "$W/out.h5"
	/usr/bin/python3 -c "$RUN1" "$@" 2>"$W/err" ||
		{ echo "failed: $* ($(tail -n 2 "$W/err"))" >&2; exit 1; }
}
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "met" : "NOT met" }'; }

# pair JOB: RUNS alternating runs of both tools; prints a summary line
# per tool and the ratios.
pair() {
	local job=$1 i a b tools=a\ b
	: > "$W/a"; : > "$W/b"; : > "$W/c"
	[ -n "$BEFORE" ] && tools="a b c"
	for i in $(seq 1 "$RUNS"); do
		once "$SH5MERGE" -q merge -j "$job" -p "$W/prof" -o "$W/out.h5" \
			$KEYOPT >> "$W/a"
		once "$SH5UTIL" -j "$job" -p "$W/prof" -S -o "$W/out.h5" >> "$W/b"
		[ -n "$BEFORE" ] &&
			once "$BEFORE/sh5merge/sh5merge" -q merge -j "$job" \
				-p "$W/prof" -o "$W/out.h5" >> "$W/c"
	done
	for t in $tools; do
		eval "${t}w=\$(cut -d' ' -f1 \"\$W/$t\" | median)"
		eval "${t}c=\$(cut -d' ' -f2 \"\$W/$t\" | median)"
		eval "${t}r=\$(cut -d' ' -f3 \"\$W/$t\" | sort -n | tail -n 1)"
		eval "${t}ws=\$(cut -d' ' -f1 \"\$W/$t\" | spread)"
		eval "${t}cs=\$(cut -d' ' -f2 \"\$W/$t\" | spread)"
	done
	printf '    sh5merge  wall %6.3f s (%s)  cpu %6.3f s (%s)  rss %6d KiB\n' \
		"$aw" "$aws" "$ac" "$acs" "$ar"
	printf '    sh5util   wall %6.3f s (%s)  cpu %6.3f s (%s)  rss %6d KiB\n' \
		"$bw" "$bws" "$bc" "$bcs" "$br"
	rw=$(ratio "$aw" "$bw") rc=$(ratio "$ac" "$bc")
	printf '    ratio     wall %s (<= %s: %s)  cpu %s (<= 1.0: %s)  rss %s\n' \
		"$rw" "$2" "$(verdict "$rw" "$2")" "$rc" "$(verdict "$rc" 1.0)" \
		"$(ratio "$ar" "$br")"
	[ -n "$BEFORE" ] || return 0
	printf '    before    wall %6.3f s (%s)  cpu %6.3f s (%s)  rss %6d KiB\n' \
		"$cw" "$cws" "$cc" "$ccs" "$cr"
	printf '    before/sh5util  wall %s  cpu %s;  after/before  wall %s  cpu %s\n' \
		"$(ratio "$cw" "$bw")" "$(ratio "$cc" "$bc")" \
		"$(ratio "$aw" "$cw")" "$(ratio "$ac" "$cc")"
}

gen() { # gen JOB NODES SAMPLES FORMAT (sealed: sh5, sealed)
	local f=$4 k=
	rm -rf "$W/prof"
	mkdir -p "$W/prof/$U"
	KEYOPT="--seal-key none"
	[ "$f" = sealed ] && { f=sh5 k="-k $W/seal.key" KEYOPT="--seal-key $W/seal.key"; }
	"$GEN" -d "$W/prof/$U" -j "$1" -n "$2" -t "$TASKS" -s "$3" -f "$f" $k ||
		{ echo "gen_job failed" >&2; exit 1; }
}

echo "merge_bench: $(nproc) CPUs, $(uname -r), RUNS=$RUNS alternating pairs," \
	"medians (min-max)${BEFORE:+; before: $BEFORE}"
for fmt in $FORMATS; do
	for n in $SIZES; do
		gen 2000 "$n" "$SAMPLES" "$fmt"
		echo "== $n nodes x $TASKS task x $SAMPLES samples, $fmt files" \
			"($(du -sh "$W/prof/$U" | cut -f1))"
		if [ "$fmt" = sealed ]; then
			rm -f "$W/out.h5"
			"$SH5MERGE" merge -j 2000 -p "$W/prof" -o "$W/out.h5" \
				$KEYOPT 2>&1 | grep -o '[0-9]* on a verified seal' |
				sed 's/^/  (/; s/$/)/' | grep . ||
				echo "  (NOT merged on the seals: run as root)"
		fi
		for load in $LOADS; do
			# With both cores free the wall target is 0.6x.
			tw=0.6
			[ "$load" = busy ] && { hog_start; tw=1.0; }
			echo "  $load (load average $(cut -d' ' -f1 /proc/loadavg))"
			pair 2000 "$tw"
			hog_stop
		done
	done
done

echo "== sh5merge peak RSS against job length ($RSS_NODES nodes, sh5 files)"
for s in $RSS_SAMPLES; do
	gen 2001 "$RSS_NODES" "$s" sh5
	m=$(once "$SH5MERGE" -q merge -j 2001 -p "$W/prof" -o "$W/out.h5")
	set -- $m
	printf '  %6d samples per series (%s): wall %6.3f s, cpu %6.3f s, peak RSS %d KiB\n' \
		"$s" "$(du -sh "$W/prof/$U" | cut -f1)" "$1" "$2" "$3"
done
