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
# STREAM="influx1 json" (or one of them) also counts live streaming: the
# same replay with -S (the plugin's push of every record, src/stream/
# record.h, and the sender thread: one POST per flush interval of
# samples, as the plugin with 1 s sampling, see STREAM_FLUSH) to a real
# server on loopback started here and stopped by its pid: Debian's
# influxd for influx1 (tests/lib/influxd.sh), tests/tools/
# sh5_http_receiver.py for json.  Counted: the writer's calls as above
# plus sh5_stream_create (curl's global init, the handles, the queue,
# the thread), sh5_stream_push_record (the enqueue on the sampling path),
# the sender thread (sender_main: formatting, curl, the POSTs) and
# sh5_stream_close.  Printed: the stream's own instructions (the rest)
# per sample, per POST and fixed, and the ratio of the whole to the file
# only run: the target streaming <= 1.5x file-only (user-space
# instructions only: the kernel's share of the POSTs, the wake-ups and
# the socket, is not seen; nor is the part of the file-only plugin's
# cost that is not the writer's: bench/plugin_bench.sh times it all).
# So two ratios: to the writer's instructions alone (an upper bound),
# and to the file-only plugin's user-space work, estimated as the
# writer's plus loading: the dynamic linking of sh5_replay, whose
# libraries are the plugin's (HDF5, libcurl and its TLS and
# authentication libraries, yajl, brotli), less that of /bin/true (libc,
# which slurmstepd has loaded already), plus HDF5's library init
# (H5_init_library).  The stream loads nothing more: libcurl is linked
# either way.  STREAM_FLUSH=N: one POST every N seconds of samples
# (ProfileSH5StreamFlush=N*1000; default: the stream's default).
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
TOP=$(cd "$(dirname "$0")/.." && pwd)
RX_PID=
cleanup() {
	[ -f "$W/influx/influxd.pid" ] && "$TOP/tests/lib/influxd.sh" stop "$W/influx"
	[ -n "$RX_PID" ] && kill "$RX_PID" 2>/dev/null && wait "$RX_PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
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
# count_fns NAME REGEX PROG ARGS...: the inclusive instructions of the
# functions whose names match REGEX, less those they call of each other
# (the flush of sh5_writer_close): each call counted once.
count_fns() {
	local out=$W/cg.$1 re=$2
	shift 2
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
		>/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	callgrind_annotate --threshold=100 --tree=calling --inclusive=yes \
		"$out" 2>/dev/null | awk -v re="$re" '
	function v(s) { s = $1; gsub(",", "", s); return s + 0 }
	/^ *[0-9,]+ \([ 0-9.]+%\)  \*  / {
		m = $0 ~ (":(" re ") \\[")
		if (m) t += v()
		next
	}
	/^$/ { m = 0; next }
	m && /^ *[0-9,]+ \([ 0-9.]+%\)  >   / && $0 ~ (":(" re ") ") { t -= v() }
	END { printf "%d\n", t }'
}
writer_fns='sh5_writer_[a-z0-9_]+'
# the writer's and the stream's: creation (curl's global init, the
# handles, the queue, the thread), the enqueue, the sender thread, close
stream_fns="$writer_fns|sh5_stream_create|sh5_stream_push_record|sender_main|sh5_stream_close"
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
			I[$k.$c.$n]=$(count_fns "$k.$c.$n" "$writer_fns" \
				"$b/bench/sh5_replay" -F "$FLUSH" \
				${LEVEL:+-c "$LEVEL"} $opt \
				"$W/$k.$n"/*.h5 "$W/$k.$c.$n.h5")
		fi
		SZ[$k.$c.$n]=$(stat -c %s "$W/$k.$c.$n.h5")
	done
}

# server FORMAT: start the server of FORMAT once; its URL in $URL.
declare -A URLS
server() {
	local port
	if [ -z "${URLS[$1]:-}" ]; then
		case $1 in
		influx1 | influx2)
			read -r port _ < <("$TOP/tests/lib/influxd.sh" start "$W/influx") ||
				{ echo "influxd did not start" >&2; exit 1; }
			curl -s -o /dev/null -XPOST "http://127.0.0.1:$port/query" \
				--data-urlencode "q=CREATE DATABASE bench"
			URLS[influx1]="http://127.0.0.1:$port/write?db=bench"
			URLS[influx2]=${URLS[influx1]}
			;;
		json)
			mkdir -p "$W/rx"
			$PY "$TOP/tests/tools/sh5_http_receiver.py" "$W/rx" &
			RX_PID=$!
			for _ in $(seq 100); do [ -s "$W/rx/port" ] && break; sleep 0.1; done
			URLS[json]="http://127.0.0.1:$(cat "$W/rx/port")/"
			;;
		*) echo "unknown STREAM format $1" >&2; exit 1 ;;
		esac
	fi
	URL=${URLS[$1]}
}

# load: instructions of loading the plugin's libraries and of HDF5's
# init (see the top), in $LOAD.
load() {
	local all libc
	valgrind --tool=callgrind --callgrind-out-file="$W/cg.load" \
		--toggle-collect=_dl_start --toggle-collect=H5_init_library \
		"$B/bench/sh5_replay" "$W/syn.short"/*.h5 "$W/load.h5" \
		>/dev/null 2>&1 || { echo "failed: load" >&2; exit 1; }
	all=$(sed -n 's/^summary: //p' "$W/cg.load")
	valgrind --tool=callgrind --callgrind-out-file="$W/cg.true" \
		--toggle-collect=_dl_start /bin/true >/dev/null 2>&1
	libc=$(sed -n 's/^summary: //p' "$W/cg.true")
	LOAD=$((all - libc))
}

declare -A POSTS
run_stream() { # KIND FORMAT BUILD
	local k=$1 f=$2 b=$3 n
	server "$f"
	for n in short long; do
		I[$k.$f.$n]=$(count_fns "$k.$f.$n" "$stream_fns" \
			"$b/bench/sh5_replay" -F "$FLUSH" ${LEVEL:+-c "$LEVEL"} \
			-S "$URL" -T "$f" ${STREAM_FLUSH:+-W "$STREAM_FLUSH"} \
			"$W/$k.$n"/*.h5 "$W/$k.$f.$n.h5")
		# the replay's stream counters (stderr of an uncounted run)
		POSTS[$k.$f.$n]=$("$b/bench/sh5_replay" -F "$FLUSH" \
			${LEVEL:+-c "$LEVEL"} -S "$URL" -T "$f" \
			${STREAM_FLUSH:+-W "$STREAM_FLUSH"} "$W/$k.$n"/*.h5 \
			"$W/$k.$f.$n.h5" 2>&1 >/dev/null |
			sed -n 's/.*POSTs \([0-9]*\),.*/\1/p')
	done
}

# report_stream KIND: the stream's instructions beyond the file-only
# run, per sample, per POST and fixed, and the ratio to file only.
report_stream() {
	local k=$1 f ns nl s_s s_l per fixed pp
	ns=$(records "$W/$k.short"/*.h5)
	nl=$(records "$W/$k.long"/*.h5)
	printf '%-8s %11s %11s %9s %9s %11s %7s %7s %7s %7s %7s\n' stream \
		"S short" "S long" "S/sample" "S/POST" "fixed S" "POSTs" \
		"short" "long" "+load s" "+load l"
	for f in $STREAM; do
		s_s=$((I[$k.$f.short] - I[$k.sh5.short]))
		s_l=$((I[$k.$f.long] - I[$k.sh5.long]))
		per=$(( (s_l - s_s) / (nl - ns) ))
		pp=$(( (s_l - s_s) / (POSTS[$k.$f.long] - POSTS[$k.$f.short]) ))
		fixed=$(( s_s - per * ns ))
		printf '%-8s %11d %11d %9d %9d %11d %7s %7s %7s %7s %7s\n' "$f" \
			"$s_s" "$s_l" "$per" "$pp" "$fixed" \
			"${POSTS[$k.$f.short]}/${POSTS[$k.$f.long]}" \
			"$(echo "scale=2; ${I[$k.$f.short]} / ${I[$k.sh5.short]}" | bc)" \
			"$(echo "scale=2; ${I[$k.$f.long]} / ${I[$k.sh5.long]}" | bc)" \
			"$(echo "scale=2; ($LOAD + ${I[$k.$f.short]}) / ($LOAD + ${I[$k.sh5.short]})" | bc)" \
			"$(echo "scale=2; ($LOAD + ${I[$k.$f.long]}) / ($LOAD + ${I[$k.sh5.long]})" | bc)"
	done
	echo "(S: the stream's instructions, the file-only run's subtracted; one POST per ${STREAM_FLUSH:-default flush interval, see POSTs}${STREAM_FLUSH:+ s} of samples;"
	echo " short, long: streaming/file-only, the writer's instructions alone; +load: with loading, $LOAD I, added to"
	echo " both (the file-only plugin's user-space work); target <= 1.5)"
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
	[ -n "${STREAM:-}" ] && [ -z "${LOAD:-}" ] && load
	run "$k" stock "$B"
	[ -n "${BASE:-}" ] && run "$k" base "$BASE"
	run "$k" sh5 "$B"
	for f in ${STREAM:-}; do
		run_stream "$k" "$f" "$B"
	done
done

head="node-step writer only, flush every $FLUSH s"
head="$head, level ${LEVEL:-default}${RECOMPRESS:+, sh5 recompress}"
report syn "callgrind, synthetic input (gen_job, 2 tasks x $SHORT and" \
	"$LONG samples), $head"
[ -n "${STREAM:-}" ] && report_stream syn
if [ -n "${REAL:-}" ]; then
	echo
	ns=$(records "$W/real.short"/*.h5)
	nl=$(records "$W/real.long"/*.h5)
	report real "callgrind, real input ($(basename "$REAL"): its first" \
		"$REAL_SHORT s and all of it, $ns and $nl samples), $head"
	[ -n "${STREAM:-}" ] && report_stream real
fi
