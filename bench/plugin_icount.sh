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
# writer's calls are counted: the inclusive instructions of every
# sh5_writer_* function (create, attributes, series, append, flush,
# close) less those they call of each other, from callgrind_annotate
# (--toggle-collect='sh5_writer_*' would stop counting inside the flush
# sh5_writer_close makes itself).  stock:
# bench/stock_copy writes them as Slurm 22.05's hdf5 plugin does
# (H5PTappend of each record into 10-record packet tables); only its HDF5
# calls on the output are counted (H5Fcreate, make_group, the attribute
# helpers, the record types' H5Tcreate and H5Tinsert, H5PT*, H5Fclose).
# Reading the input counts in neither.
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
# RECOMPRESS=1 (the writer's recompress option, sh5_replay -R: the
# previous method, for the sh5 build only); LEVEL (the deflate level,
# ProfileSH5Compression; default the writer's); BASE=BUILD_DIR also
# counts another build's sh5_replay (before/after).
# REAL=FILE also runs on a real node-step file (ours or stock, e.g. one
# kept by `KEEP=DIR bench/filesize_real.sh`): the whole file as the long
# input, its first REAL_SHORT seconds (default 60) as the short one (a
# copy with every series cut there); the samples counted are the records
# of every series (task and node samples), and its table is printed after
# the synthetic one.
set -eu
B=$(cd "${1:-$PWD}" && pwd)
SHORT=${SHORT:-60}
LONG=${LONG:-600}
FLUSH=${FLUSH:-10}
REAL_SHORT=${REAL_SHORT:-60}
PY=/usr/bin/python3
W=$(mktemp -d /tmp/sh5-icount.XXXXXX)
trap 'rm -rf "$W"' EXIT
command -v valgrind >/dev/null || { echo "valgrind missing" >&2; exit 1; }

# records FILE: the records of every series dataset (a compound with
# ElapsedTime) of FILE.
records() {
	$PY - "$1" <<'PYEOF'
import sys, h5py
n = 0
def visit(name, obj):
    global n
    if isinstance(obj, h5py.Dataset) and obj.dtype.names and \
            "ElapsedTime" in obj.dtype.names:
        n += obj.shape[0]
h5py.File(sys.argv[1], "r").visititems(visit)
print(n)
PYEOF
}

# cut IN OUT SECONDS: a copy of IN whose series keep their records with
# ElapsedTime < SECONDS.
cut() {
	cp "$1" "$2"
	$PY - "$2" "$3" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
ds = []
f.visititems(lambda n, o: ds.append(o) if isinstance(o, h5py.Dataset)
             and o.dtype.names and "ElapsedTime" in o.dtype.names else None)
for d in ds:
    t = d["ElapsedTime"]
    d.resize((int(np.count_nonzero(t < int(sys.argv[2]))),))
PYEOF
}

set_inputs() { # KIND: fills $W/KIND.short and $W/KIND.long
	local k=$1
	mkdir -p "$W/$k.short" "$W/$k.long"
	if [ "$k" = syn ]; then
		"$B/bench/gen_job" -d "$W/$k.short" -j 1 -n 1 -t 2 -f sh5 \
			-s "$SHORT" >/dev/null
		"$B/bench/gen_job" -d "$W/$k.long" -j 1 -n 1 -t 2 -f sh5 \
			-s "$LONG" >/dev/null
	else
		cut "$REAL" "$W/$k.short/in.h5" "$REAL_SHORT"
		cp "$REAL" "$W/$k.long/in.h5"
	fi
}

# count NAME PROG ARGS...: total instructions callgrind collected.
count() {
	local out=$W/cg.$1
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
		>/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	sed -n 's/^summary: //p' "$out"
}
# count_writer NAME PROG ARGS...: the inclusive instructions of the
# sh5_writer_* functions, less those they call of each other (the flush
# of sh5_writer_close): the writer's calls, each counted once.
count_writer() {
	local out=$W/cg.$1
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
		>/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	callgrind_annotate --threshold=100 --tree=calling --inclusive=yes \
		"$out" 2>/dev/null | awk '
	function v(s) { s = $1; gsub(",", "", s); return s + 0 }
	/^ *[0-9,]+ \([ 0-9.]+%\)  \*  / {
		m = $0 ~ /:sh5_writer_[a-z0-9_]+ \[/
		if (m) t += v()
		next
	}
	/^$/ { m = 0; next }
	m && /^ *[0-9,]+ \([ 0-9.]+%\)  >   .*:sh5_writer_[a-z0-9_]+ / { t -= v() }
	END { printf "%d\n", t }'
}
stock_toggle=(--toggle-collect='H5PT*' --toggle-collect=H5Fcreate
	--toggle-collect=make_group --toggle-collect=put_int
	--toggle-collect=put_str --toggle-collect=H5Tcreate
	--toggle-collect=H5Tinsert --toggle-collect=H5Fclose)

declare -A I SZ N
run() { # KIND CONFIG BUILD
	local k=$1 c=$2 b=$3 n opt=
	[ "$c" = sh5 ] && [ -n "${RECOMPRESS:-}" ] && opt=-R
	for n in short long; do
		if [ "$c" = stock ]; then
			I[$k.$c.$n]=$(count "$k.$c.$n" "${stock_toggle[@]}" \
				"$b/bench/stock_copy" "$W/$k.$n"/*.h5 \
				"$W/$k.$c.$n.h5")
		else
			I[$k.$c.$n]=$(count_writer "$k.$c.$n" \
				"$b/bench/sh5_replay" -F "$FLUSH" \
				${LEVEL:+-c "$LEVEL"} $opt \
				"$W/$k.$n"/*.h5 "$W/$k.$c.$n.h5")
		fi
		SZ[$k.$c.$n]=$(stat -c %s "$W/$k.$c.$n.h5")
	done
}

report() { # KIND TITLE
	local k=$1 c per fixed extra ns nl
	ns=$(records "$W/$k.short"/*.h5)
	nl=$(records "$W/$k.long"/*.h5)
	extra=$((nl - ns))
	echo "${*:2}"
	printf '%-6s %14s %14s %14s %12s %16s\n' config "I short" "I long" \
		"I/sample" "fixed I" "file B short/long"
	for c in $configs; do
		per=$(( (I[$k.$c.long] - I[$k.$c.short]) / extra ))
		fixed=$(( I[$k.$c.short] - per * ns ))
		eval "P_$c=$per F_$c=$fixed"
		printf '%-6s %14d %14d %14d %12d %16s\n' "$c" \
			"${I[$k.$c.short]}" "${I[$k.$c.long]}" "$per" "$fixed" \
			"${SZ[$k.$c.short]}/${SZ[$k.$c.long]}"
	done
	for c in $configs; do
		[ "$c" = stock ] && continue
		eval "p=\$P_$c f=\$F_$c"
		echo "$c/stock: per sample $(echo "scale=3; $p / $P_stock" | bc)" \
			"(target <= 0.25), fixed per step" \
			"$(echo "scale=3; $f / $F_stock" | bc) (target <= 1)"
	done
}

kinds=syn
[ -n "${REAL:-}" ] && kinds="syn real"
configs="stock sh5"
[ -n "${BASE:-}" ] && configs="stock base sh5"
for k in $kinds; do
	set_inputs "$k"
	run "$k" stock "$B"
	[ -n "${BASE:-}" ] && run "$k" base "$BASE"
	run "$k" sh5 "$B"
done

head="node-step writer only, flush every $FLUSH s"
head="$head, level ${LEVEL:-default}${RECOMPRESS:+, sh5 recompress}"
report syn "callgrind, synthetic input (gen_job, 2 tasks x $SHORT and" \
	"$LONG samples), $head"
if [ -n "${REAL:-}" ]; then
	echo
	ns=$(records "$W/real.short"/*.h5)
	nl=$(records "$W/real.long"/*.h5)
	report real "callgrind, real input ($(basename "$REAL"): its first" \
		"$REAL_SHORT s and all of it, $ns and $nl samples), $head"
fi
