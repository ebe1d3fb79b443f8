#!/bin/bash
# filesize_real.sh - file size per sample of real profiles: our node-step
# files against Slurm's stock acct_gather_profile/hdf5 on the same samples.
#
#   bench/filesize_real.sh [BUILD_DIR]      (as root; default: current dir)
#
# Starts a private one-node cluster (tests/lib/cluster.sh) loading
# acct_gather_profile/sh5 from BUILD_DIR, with task and network sampling
# every second (JobAcctGatherFrequency=task=1,network=1, the sysfs
# interconnect plugin on lo) and the default flush interval, and runs two
# profiled steps of the same workload (`srun -n4 --overcommit --profile=all
# sh5_workload SECONDS 64 IO_MB`: CPU, memory, file I/O), a short one
# (SHORT seconds, default 30) and a long one (LONG, default 300).
#
# Each node-step file is then rewritten by bench/stock_copy in the stock
# layout: the same samples, written exactly as Slurm 22.05's hdf5 plugin
# writes them (H5PTcreate_fl with 10-record chunks and deflate level 0,
# one H5PTappend per sample, no EpochTimeNs, five node attributes).
# Then (STOCK=1, the default) the same two steps run again under the
# stock plugin itself, as a sanity check of the rewritten files (other
# samples of the same workload: sizes per sample must agree).
#
# Prints, per file, bytes, samples and bytes per sample, then the cost of
# one more sample (the difference between the long and the short file,
# divided by the difference in samples: the per-file overhead cancels),
# the fixed per-file overhead, and the ratios ours/stock.  Target: per
# sample ratio <= 0.25.
#
# Environment: SHORT, LONG (seconds), IO_MB (default 32 per task),
# TASKS (default 4), FLUSH (ProfileSH5FlushInterval, default 10),
# COMPRESSION (ProfileSH5Compression, default: the plugin's), CODING
# (ProfileSH5ChunkCoding, default: the plugin's), STOCK=0
# (skip the stock plugin run), KEEP=DIR (copy every file there).
set -u
B=$(cd "${1:-$PWD}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$B
export top_srcdir top_builddir
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

SHORT=${SHORT:-30}
LONG=${LONG:-300}
IO_MB=${IO_MB:-32}
TASKS=${TASKS:-4}
FLUSH=${FLUSH:-10}
STOCK=${STOCK:-1}
PY=/usr/bin/python3
WORKLOAD=$B/tests/tools/sh5_workload
COPY=$B/bench/stock_copy
[ "$(id -u)" = 0 ] || { echo "run as root (starts slurmd)" >&2; exit 1; }
[ -f "$B/plugins/.libs/acct_gather_profile_sh5.so" ] ||
	{ echo "plugin not built in $B" >&2; exit 1; }
[ -x "$WORKLOAD" ] && [ -x "$COPY" ] ||
	{ echo "build first: make -C $B tests/tools/sh5_workload bench/stock_copy" >&2; exit 1; }
W=$(mktemp -d /tmp/sh5-fsreal.XXXXXX)
chmod 755 "$W"
trap 'rm -rf "$W"' EXIT

# samples FILE: number of records of every series dataset (a compound
# with ElapsedTime) in FILE.
samples() {
	$PY - "$1" <<'EOF'
import sys, h5py
n = 0
def visit(name, obj):
    global n
    if isinstance(obj, h5py.Dataset) and obj.dtype.names and "ElapsedTime" in obj.dtype.names:
        n += obj.shape[0]
h5py.File(sys.argv[1], "r").visititems(visit)
print(n)
EOF
}

# run_cluster PLUGIN OUTDIR: start a cluster with acct_gather_profile/PLUGIN,
# run the short and the long step, copy their files to OUTDIR/short.h5 and
# OUTDIR/long.h5.
run_cluster() (
	plugin=$1 out=$2
	CLUSTER_DIR=$W/cluster-$plugin
	CLUSTER_CPUS=2
	CLUSTER_PLUGIN_DIR=$B/plugins/.libs
	prof=$CLUSTER_DIR/profile
	scratch=$CLUSTER_DIR/scratch
	mkdir -p "$CLUSTER_DIR" "$scratch" "$out"
	chmod 1777 "$scratch"
	CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/$plugin
AcctGatherInterconnectType=acct_gather_interconnect/sysfs
AcctGatherNodeFreq=1
JobAcctGatherFrequency=task=1,network=1"
	if [ "$plugin" = sh5 ]; then
		CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$prof
ProfileSH5FlushInterval=$FLUSH
${COMPRESSION:+ProfileSH5Compression=$COMPRESSION}
${CODING:+ProfileSH5ChunkCoding=$CODING}
SysfsInterfaces=lo"
	else
		mkdir -p "$prof"
		CLUSTER_ACCT_GATHER_CONF="ProfileHDF5Dir=$prof
SysfsInterfaces=lo"
	fi
	export CLUSTER_DIR CLUSTER_CPUS CLUSTER_PLUGIN_DIR CLUSTER_EXTRA_CONF \
		CLUSTER_ACCT_GATHER_CONF
	trap cluster_cleanup EXIT
	cluster_start || { echo "cluster ($plugin) did not start" >&2; exit 1; }
	# nobody may not reach the build tree (a clone in a 0700 home).
	WORKLOAD=$(cluster_stage "$WORKLOAD") || exit 1
	cd "$scratch" || exit 1
	for len in short long; do
		secs=$SHORT
		[ $len = long ] && secs=$LONG
		echo "== $plugin: srun -n$TASKS -O --profile=all sh5_workload $secs 64 $IO_MB" >&2
		runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" \
			srun -n"$TASKS" --overcommit --profile=all "$WORKLOAD" "$secs" 64 \
			"$IO_MB" "$scratch" >&2 || { cluster_log_tail 20; exit 1; }
		f=$(ls -t "$prof"/nobody/*_0_*.h5 | head -n1)
		[ -f "$f" ] || { echo "no profile file" >&2; exit 1; }
		cp "$f" "$out/$len.h5"
		rm -f "$f"
	done
)

run_cluster sh5 "$W/sh5" || exit 1
mkdir -p "$W/copy"
for len in short long; do
	"$COPY" "$W/sh5/$len.h5" "$W/copy/$len.h5" >/dev/null || exit 1
done
kinds="sh5 copy"
if [ "$STOCK" = 1 ]; then
	run_cluster hdf5 "$W/stock" || exit 1
	kinds="sh5 copy stock"
fi
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" &&
	for k in $kinds; do cp "$W/$k/short.h5" "$KEEP/$k-short.h5"; cp "$W/$k/long.h5" "$KEEP/$k-long.h5"; done

echo
echo "files (sh5: our plugin; copy: the same samples in the stock layout;"
echo "stock: Slurm's hdf5 plugin on the same workload, other samples):"
printf '%-6s %-6s %10s %8s %14s\n' file job bytes samples bytes/sample
for k in $kinds; do
	for len in short long; do
		b=$(stat -c %s "$W/$k/$len.h5")
		n=$(samples "$W/$k/$len.h5")
		eval "${k}_${len}_b=$b ${k}_${len}_n=$n"
		awk -v k="$k" -v l="$len" -v b="$b" -v n="$n" \
			'BEGIN { printf "%-6s %-6s %10d %8d %14.1f\n", k, l, b, n, b / n }'
	done
done
echo
echo "per sample (long minus short) and per file (short minus its samples):"
printf '%-6s %14s %14s\n' file bytes/sample fixed_bytes
for k in $kinds; do
	eval "bs=\$${k}_short_b ns=\$${k}_short_n bl=\$${k}_long_b nl=\$${k}_long_n"
	# shellcheck disable=SC2154
	awk -v k="$k" -v bs="$bs" -v ns="$ns" -v bl="$bl" -v nl="$nl" \
		'BEGIN { p = (bl - bs) / (nl - ns); printf "%-6s %14.2f %14.0f\n", k, p, bs - p * ns }'
	eval "${k}_per=\$(awk -v bs=$bs -v ns=$ns -v bl=$bl -v nl=$nl 'BEGIN { print (bl - bs) / (nl - ns) }')"
done
echo
# shellcheck disable=SC2154
awk -v a="$sh5_per" -v b="$copy_per" -v sl="$sh5_long_b" -v cl="$copy_long_b" \
	-v ss="$sh5_short_b" -v cs="$copy_short_b" 'BEGIN {
	printf "ratio sh5/stock-layout, per sample:        %.3f\n", a / b
	printf "ratio sh5/stock-layout, whole short file:  %.3f\n", ss / cs
	printf "ratio sh5/stock-layout, whole long file:   %.3f\n", sl / cl }'
if [ "$STOCK" = 1 ]; then
	# shellcheck disable=SC2154
	awk -v a="$sh5_per" -v b="$stock_per" -v c="$copy_per" 'BEGIN {
	printf "ratio sh5/stock plugin, per sample:        %.3f\n", a / b
	printf "stock plugin vs stock-layout copy:         %.3f (sanity: ~1)\n", b / c }'
fi
echo "target: per-sample ratio <= 0.25"
