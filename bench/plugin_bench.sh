#!/bin/bash
# plugin_bench.sh - CPU time and peak memory the profile plugin adds to
# the step's slurmstepd: acct_gather_profile/none against Slurm's stock
# acct_gather_profile/hdf5 and ours, on a private one-node cluster.
#
#   bench/plugin_bench.sh [BUILD_DIR]      (as root; default: current dir)
#
# Configurations (CONFIGS, default all five, run in this order in each
# round, rounds repeated REPS times: ABCDE ABCDE ..., so that drifts of
# the machine's load hit every configuration alike):
#   none    AcctGatherProfileType=acct_gather_profile/none
#   stock   acct_gather_profile/hdf5 (Debian's slurm-wlm-hdf5-plugin)
#   sh5     acct_gather_profile/sh5, file only (default flush interval)
#   clock   sh5 with ProfileSH5ClockServer: a private chronyd
#           (tests/lib/chrony.sh), default ClockInterval
#   stream  sh5 with JSON streaming to tests/tools/sh5_http_receiver.py
#   base    sh5, file only, loaded from BASE=BUILD_DIR (another build, e.g.
#           of the commit before a change: before and after in one run)
#   basestream  base with streaming as stream
# Each round of each configuration starts a fresh cluster and runs two
# steps, `srun -nNTASKS --profile=all sleep SHORT` and `... sleep LONG`, with
# task sampling every second (JobAcctGatherFrequency=task=1; no other
# gather plugin).
#
# Measurement: slurmd runs under bench/stepd_reaper.py, a child
# subreaper, which reaps the orphaned slurmstepd itself and logs the
# kernel's rusage from wait4(): exact user+sys CPU (microseconds, from
# the scheduler's runtime accounting, every thread included) and peak RSS
# (ru_maxrss, i.e. VmHWM).  The rusage includes the step's `sleep`
# tasks (about 1 ms and 1 MiB each, the same in every configuration: they
# cancel in the differences).
#
# Prints every measurement, then per configuration the median and the
# spread (max - min) over the rounds, the CPU added to `none` by a short
# and a long step, the cost of one task sample ((long - short) /
# (NTASKS tasks x (LONG - SHORT) samples)), the fixed cost per step (added CPU
# of the short step minus its samples' cost), the added peak RSS, and the
# ratios against stock.  Added costs are differences of medians; their
# spread is that of the differences with the `none` run of the same round.
# When the spread of a configuration's added CPU exceeds half of stock's
# added CPU the figures cannot be told apart and the script says "TOO
# NOISY".
#
# Environment: SHORT (default 10), LONG (default 60) seconds; NTASKS
# (default 2) tasks per step (`srun -nNTASKS --overcommit`; more tasks multiply the
# task samples, and so the per-sample cost against the noise); REPS
# (default 3); CONFIGS; FLUSH (ProfileSH5FlushInterval, default: the
# plugin's); KEEP=1 keeps the work directory; RESULTS=FILE prints the
# figures of an earlier run's results file (its lines: CONFIG ROUND
# short|long CPU_US RSS_KIB; kept with KEEP=1) without running anything.
# Interrupted (INT, TERM: Ctrl-C or kill of the script's pid), it stops
# the running round's srun and cluster daemons before it exits.
set -u
B=$(cd "${1:-$PWD}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$B
export top_srcdir top_builddir
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/lib/chrony.sh"

SHORT=${SHORT:-10}
LONG=${LONG:-60}
REPS=${REPS:-3}
NTASKS=${NTASKS:-2}
CONFIGS=${CONFIGS:-none stock sh5 clock stream}
PY=/usr/bin/python3
REAPER=$top_srcdir/bench/stepd_reaper.py
[ "$(id -u)" = 0 ] || { echo "run as root (starts slurmd)" >&2; exit 1; }
[ -f "$B/plugins/.libs/acct_gather_profile_sh5.so" ] ||
	{ echo "plugin not built in $B" >&2; exit 1; }
[ -f "${CLUSTER_SLURM_PLUGINDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}/acct_gather_profile_hdf5.so" ] ||
	{ echo "stock plugin missing (slurm-wlm-hdf5-plugin)" >&2; exit 1; }
case " $CONFIGS " in *" base"*)
	[ -f "${BASE:-}/plugins/.libs/acct_gather_profile_sh5.so" ] ||
		{ echo "config base: set BASE to a build directory" >&2; exit 1; } ;;
esac
W=$(mktemp -d /tmp/sh5-plugbench.XXXXXX)
[ -n "${RESULTS:-}" ] && CONFIGS= REPS=0
chmod 755 "$W"
RES=${RESULTS:-$W/results}
recv_pid=
run_pid=
cleanup() {
	[ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null
	chrony_stop 2>/dev/null
	[ "${KEEP:-0}" = 1 ] && echo "kept $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT
# Killed (INT, TERM): the round under way stops its own cluster (its
# daemons would outlive the script otherwise), then cleanup runs.
on_signal() {
	[ -n "$run_pid" ] && kill -TERM "$run_pid" 2>/dev/null &&
		wait "$run_pid"
	exit 130
}
trap on_signal INT TERM

# slurmd under the reaper (non-netns, one node), logging to $REAPER_OUT.
cluster_start_slurmd() {
	local i=$1 name
	name=$(echo "$CLUSTER_NODE_NAMES" | cut -d' ' -f"$i")
	mkdir -p "$CLUSTER_DIR/spool/$name"
	cluster_spawn 3 "slurmd_$name" "$CLUSTER_DIR/log/slurmd.$name.out" \
		"$PY" "$REAPER" "$REAPER_OUT" -- \
		env SH5_CLUSTER_DIR="$CLUSTER_DIR" \
		slurmd -D -f "$SLURM_CONF" -N "$name"
}

case " $CONFIGS " in *" clock "*)
	chrony_start 127.0.0.1 "$(cluster_free_port)" "$W/chrony" ||
		{ echo "chronyd did not start" >&2; exit 1; } ;;
esac
case " $CONFIGS " in *stream" "*)
	mkdir -p "$W/recv"
	"$PY" "$top_srcdir/tests/tools/sh5_http_receiver.py" "$W/recv" &
	recv_pid=$!
	for _ in $(seq 50); do [ -s "$W/recv/port" ] && break; sleep 0.1; done
	[ -s "$W/recv/port" ] || { echo "receiver did not start" >&2; exit 1; } ;;
esac

# run_config CFG ROUND: one cluster, a short and a long step (run in a
# background subshell of its own, below); appends
# "CFG ROUND short|long CPU_US RSS_KIB" to $RES.
run_config() {
	cfg=$1 round=$2
	CLUSTER_DIR=$W/c-$cfg-$round
	CLUSTER_CPUS=2
	CLUSTER_PLUGIN_DIR=$B/plugins/.libs
	case $cfg in base*) CLUSTER_PLUGIN_DIR=$BASE/plugins/.libs ;; esac
	REAPER_OUT=$CLUSTER_DIR/rusage
	prof=$CLUSTER_DIR/profile
	scratch=$CLUSTER_DIR/scratch
	mkdir -p "$CLUSTER_DIR" "$scratch" "$prof"
	chmod 1777 "$scratch"
	type=sh5
	conf="ProfileSH5Dir=$prof
${FLUSH:+ProfileSH5FlushInterval=$FLUSH}"
	case $cfg in
	none) type=none conf= ;;
	stock) type=hdf5 conf="ProfileHDF5Dir=$prof" ;;
	clock) conf="$conf
ProfileSH5ClockServer=$CHRONY_ADDR:$CHRONY_PORT" ;;
	stream | basestream) conf="$conf
ProfileSH5StreamURL=http://127.0.0.1:$(cat "$W/recv/port")/sh5
ProfileSH5StreamFormat=json" ;;
	esac
	CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/$type"
	CLUSTER_ACCT_GATHER_CONF=$conf
	export CLUSTER_DIR CLUSTER_CPUS CLUSTER_PLUGIN_DIR CLUSTER_EXTRA_CONF \
		CLUSTER_ACCT_GATHER_CONF REAPER_OUT
	# Run in the background (below), this subshell ignores INT; on TERM
	# (from on_signal) it stops the step's srun and then its cluster.
	srun_pid=
	trap cluster_cleanup EXIT
	trap '[ -n "$srun_pid" ] && kill -TERM "$srun_pid" 2>/dev/null; exit 130' TERM
	cluster_start || { echo "cluster ($cfg) did not start" >&2; exit 1; }
	cd "$scratch" || exit 1
	for len in short long; do
		secs=$SHORT
		[ $len = long ] && secs=$LONG
		before=0
		[ -f "$REAPER_OUT" ] && before=$(wc -l <"$REAPER_OUT")
		runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" \
			srun -n"$NTASKS" --overcommit --profile=all \
			sleep "$secs" &
		srun_pid=$!
		wait "$srun_pid" || { cluster_log_tail 20; exit 1; }
		srun_pid=
		# slurmstepd outlives srun by a little: wait for its line.
		for _ in $(seq 300); do
			grep -q '\.0\]' <(tail -n +$((before + 1)) "$REAPER_OUT" 2>/dev/null) && break
			sleep 0.1
		done
		line=$(tail -n +$((before + 1)) "$REAPER_OUT" | grep '\.0\]' | tail -n 1)
		[ -n "$line" ] || { echo "no rusage for the $cfg step" >&2; exit 1; }
		set -- $line
		echo "$cfg $round $len $(($2 + $3)) $4" >>"$RES"
		printf '%-7s round %d %-5s cpu %8.1f ms  rss %7.1f MiB\n' \
			"$cfg" "$round" "$len" "$(echo "($2 + $3) / 1000" | bc -l)" \
			"$(echo "$4 / 1024" | bc -l)" >&2
	done
}

for round in $(seq "$REPS"); do
	for cfg in $CONFIGS; do
		# In the background, so that a signal is handled at once
		# (bash runs a trap only after the foreground command).
		run_config "$cfg" "$round" &
		run_pid=$!
		wait "$run_pid" || exit 1
		run_pid=
	done
done

echo
echo "slurmstepd of \`srun -n$NTASKS --profile=all sleep S\` (task sampling 1 s),"
# With RESULTS= the rounds are the file's; the load is now, not the run's.
rounds=$(awk '{ print $2 }' "$RES" | sort -u | wc -l)
echo "S = $SHORT and $LONG, $rounds rounds; $(nproc) CPUs," \
	"load ${RESULTS:+(now) }$(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$RES" "$SHORT" "$LONG" "$NTASKS" <<'PYEOF'
import statistics as st, sys
res, short, long_ = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ntasks = int(sys.argv[4])
d = {}       # (cfg, len) -> {round: (cpu ms, rss MiB)}
order = []
for l in open(res):
    cfg, rnd, ln, cpu, rss = l.split()
    if cfg not in order:
        order.append(cfg)
    d.setdefault((cfg, ln), {})[int(rnd)] = (int(cpu) / 1000.0, int(rss) / 1024.0)
def vals(cfg, ln, i):
    return [v[i] for v in d[(cfg, ln)].values()]
def ms(v):
    return st.median(v), max(v) - min(v)
print("%-10s %21s %21s %14s" % ("config", "short ms (spread)", "long ms (spread)", "peak RSS MiB"))
for c in order:
    print("%-10s %12.1f (%6.1f) %12.1f (%6.1f) %8.1f (%4.1f)" % ((c,) +
          ms(vals(c, "short", 0)) + ms(vals(c, "long", 0)) + ms(vals(c, "long", 1))))
if "none" not in order:
    sys.exit(0)
nsamp = ntasks * (long_ - short)
# Added cost: the difference of the medians (robust to one disturbed
# run); its spread: that of the differences paired with `none` of the
# same round.
def added(c, ln, i):
    return [d[(c, ln)][r][i] - d[("none", ln)][r][i]
            for r in d[(c, ln)] if r in d[("none", ln)]]
def ms_added(c, ln, i, f=lambda x: x):
    paired = [f(x) for x in added(c, ln, i)]
    return (f(st.median(vals(c, ln, i)) - st.median(vals("none", ln, i))),
            max(paired) - min(paired))
print()
print("added to none: difference of the medians (spread of the per-round differences):")
print("%-10s %16s %16s %16s %15s %11s" % ("", "short ms", "long ms",
      "us/task sample", "fixed ms/step", "+RSS MiB"))
fig = {}
for c in order:
    if c == "none":
        continue
    a_s, a_l = added(c, "short", 0), added(c, "long", 0)
    per = [(l - s) / nsamp for s, l in zip(a_s, a_l)]
    fixed = [s - p * ntasks * short for s, p in zip(a_s, per)]
    m_s, m_l = ms_added(c, "short", 0), ms_added(c, "long", 0)
    m_per = (m_l[0] - m_s[0]) / nsamp
    m_fixed = m_s[0] - m_per * ntasks * short
    fig[c] = [m_s, m_l, (m_per, max(per) - min(per)),
              (m_fixed, max(fixed) - min(fixed)), ms_added(c, "long", 1)]
    f = fig[c]
    print("%-10s %8.1f (%5.1f) %8.1f (%5.1f) %8.0f (%5.0f) %7.1f (%5.1f) %5.1f (%3.1f)" % (
        c, f[0][0], f[0][1], f[1][0], f[1][1], f[2][0] * 1000, f[2][1] * 1000,
        f[3][0], f[3][1], f[4][0], f[4][1]))
if "stock" in fig:
    s = fig["stock"]
    r = lambda a, b: ("%.2f" % (a / b)) if b > 0 else "n/a"
    print()
    print("ratio to stock (medians): per task sample  fixed/step  long step  +RSS")
    for c in fig:
        if c == "stock":
            continue
        f = fig[c]
        print("%-7s %32s %11s %10s %5s" % (c, r(f[2][0], s[2][0]),
              r(f[3][0], s[3][0]), r(f[1][0], s[1][0]), r(f[4][0], s[4][0])))
    print("targets: per task sample <= 0.25, fixed/step <= 1, +RSS <= 1")
    noisy = sorted(c for c in fig if fig[c][1][1] > 0.5 * max(s[1][0], 1e-9))
    if noisy:
        print("TOO NOISY to judge CPU: the spread of the added CPU of %s "
              "exceeds half of stock's added CPU (%.1f ms); RSS figures "
              "are not affected" % (", ".join(noisy), s[1][0]))
r = lambda a, b: ("%.2f" % (a / b)) if b > 0 else "n/a"
for a, b in (("stream", "sh5"), ("basestream", "base")):
    if a in fig and b in fig:
        print("%s/%s added CPU, long step: %s (target <= 1.5); added peak "
              "RSS %.1f against %.1f MiB" % (a, b, r(fig[a][1][0], fig[b][1][0]),
                                             fig[a][4][0], fig[b][4][0]))
        if max(fig[a][1][1], fig[b][1][1]) > 0.5 * max(fig[b][1][0], 1e-9):
            print("TOO NOISY to judge that CPU ratio: spreads %.1f and %.1f "
                  "ms against %.1f ms added by %s (bench/plugin_icount.sh "
                  "STREAM= counts instructions)" % (fig[a][1][1], fig[b][1][1],
                                                   fig[b][1][0], b))
PYEOF
