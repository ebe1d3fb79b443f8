#!/bin/bash
# plugin_icount.sh - the node-step writer's instructions per task sample
# and per step, sh5 against Slurm's stock acct_gather_profile/hdf5, by
# callgrind: deterministic, where bench/plugin_bench.sh's timed figures
# drown in the machine's noise.
#
#   bench/plugin_icount.sh [BUILD_DIR]     (default: current dir)
#
# Input: bench/gen_job node-step files of 2 tasks x SHORT and LONG
# samples (1 s sampling).  sh5: bench/sh5_replay writes them again
# through the writer as the plugin does (flush every FLUSH s); only the
# writer's calls are counted (callgrind --toggle-collect='sh5_writer_*':
# create, attributes, series, append, flush, close).  stock:
# bench/stock_copy writes them as Slurm 22.05's hdf5 plugin does
# (H5PTappend of each record into 10-record packet tables); only its HDF5
# calls on the output are counted (H5Fcreate, H5Gcreate2, the attribute
# helpers, H5PT*, H5Fclose).  Reading the input counts in neither.
# Per task sample: the difference between the two sizes over the extra
# samples; fixed: the rest (file creation, attributes, datasets, close).
#
# What it judges: the instructions of the writer's work, which is the
# plugin's only per-sample cost beyond Slurm's own (both plugins receive
# the same samples from jobacct_gather).  What it cannot: system time
# (the kernel's copy of the written bytes), cache misses, the plugin's
# threads and locks in slurmstepd, streaming and the clock probe; those
# only bench/plugin_bench.sh sees, within its noise.
#
# Environment: SHORT (60), LONG (600) samples per task; FLUSH (10);
# APPEND=1 (the writer's append_partial option, sh5_replay -A);
# LEVEL (the deflate level, ProfileSH5Compression; default the writer's);
# BASE=BUILD_DIR also counts another build's sh5_replay (before/after).
set -eu
B=$(cd "${1:-$PWD}" && pwd)
SHORT=${SHORT:-60}
LONG=${LONG:-600}
FLUSH=${FLUSH:-10}
W=$(mktemp -d /tmp/sh5-icount.XXXXXX)
trap 'rm -rf "$W"' EXIT
command -v valgrind >/dev/null || { echo "valgrind missing" >&2; exit 1; }

for n in "$SHORT" "$LONG"; do
	mkdir -p "$W/in$n"
	"$B/bench/gen_job" -d "$W/in$n" -j 1 -n 1 -t 2 -f sh5 -s "$n" \
		>/dev/null
done

# count NAME PROG ARGS...: total instructions callgrind collected.
count() {
	local out=$W/cg.$1
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
		>/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	sed -n 's/^summary: //p' "$out"
}
sh5_toggle=(--toggle-collect='sh5_writer_*')
stock_toggle=(--toggle-collect='H5PT*' --toggle-collect=H5Fcreate
	--toggle-collect=H5Gcreate2 --toggle-collect=put_int
	--toggle-collect=put_str --toggle-collect=H5Fclose)

declare -A I SZ
run() { # CONFIG BUILD
	local c=$1 b=$2 n
	for n in "$SHORT" "$LONG"; do
		if [ "$c" = stock ]; then
			I[$c.$n]=$(count "$c.$n" "${stock_toggle[@]}" \
				"$b/bench/stock_copy" "$W/in$n"/*.h5 "$W/$c.$n.h5")
		else
			I[$c.$n]=$(count "$c.$n" "${sh5_toggle[@]}" \
				"$b/bench/sh5_replay" -F "$FLUSH" \
				${LEVEL:+-c "$LEVEL"} ${APPEND:+-A} \
				"$W/in$n"/*.h5 "$W/$c.$n.h5")
		fi
		SZ[$c.$n]=$(stat -c %s "$W/$c.$n.h5")
	done
}
configs="stock sh5"
run stock "$B"
[ -n "${BASE:-}" ] && { run base "$BASE"; configs="stock base sh5"; }
run sh5 "$B"

extra=$((2 * (LONG - SHORT)))
echo "callgrind, node-step writer only, 2 tasks x $SHORT and $LONG samples," \
	"flush every $FLUSH s, level ${LEVEL:-default}${APPEND:+, append_partial}"
printf '%-6s %14s %14s %14s %12s %16s\n' config "I $SHORT" "I $LONG" \
	"I/task sample" "fixed I" "file B $SHORT/$LONG"
for c in $configs; do
	per=$(( (I[$c.$LONG] - I[$c.$SHORT]) / extra ))
	fixed=$(( I[$c.$SHORT] - per * 2 * SHORT ))
	eval "P_$c=$per F_$c=$fixed"
	printf '%-6s %14d %14d %14d %12d %16s\n' "$c" "${I[$c.$SHORT]}" \
		"${I[$c.$LONG]}" "$per" "$fixed" \
		"${SZ[$c.$SHORT]}/${SZ[$c.$LONG]}"
done
for c in $configs; do
	[ "$c" = stock ] && continue
	eval "p=\$P_$c f=\$F_$c"
	echo "$c/stock: per task sample $(echo "scale=3; $p / $P_stock" | bc)" \
		"(target <= 0.25), fixed per step" \
		"$(echo "scale=3; $f / $F_stock" | bc) (target <= 1)"
done
