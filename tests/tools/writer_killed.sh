#!/bin/bash
# writer_killed.sh - a node-step file whose writer never closed it (a
# killed slurmstepd) keeps its last chunk as the last flush wrote it
# (src/profile/zinc.h: the incremental constant-Huffman form, already
# final; the closed file's is the same records re-coded with their own
# code, src/profile/zrecode.h, shorter): h5py (HDF5's
# pipeline), sh5util and sh5merge read every flushed sample of it, the
# same as in the file the writer closes.  Then the same for the writer
# option recompress (sh5_replay -R, the previous method: a partial chunk
# deflated whole at level 1, the closed file's at the configured level).
set -u
. "$top_srcdir/tests/lib/common.sh"
GEN=$top_builddir/bench/gen_job
REPLAY=$top_builddir/bench/sh5_replay
SH5MERGE=$top_builddir/sh5merge/sh5merge
PY=/usr/bin/python3
[ -x "$GEN" ] && [ -x "$REPLAY" ] && [ -x "$SH5MERGE" ] ||
	fail "bench/gen_job, bench/sh5_replay or sh5merge not built"
W=$(mktemp -d /tmp/writer_killed.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/in" "$W/closed/u" "$W/killed/u"
# 1000 samples per task: one complete chunk (600) and a partial one,
# flushed every 7 s of samples (partial chunks grown over many flushes).
# Each method in turn (the loop's body, to its `done`, is not indented:
# it holds here-documents).
"$GEN" -d "$W/in" -j 5 -n 1 -t 2 -f sh5 -s 1000 || fail "gen_job"
in=$W/in/5_0_node1.h5
for method in "" -R; do
rm -rf "$W/closed/u"/* "$W/killed/u"/* "$W/su"*
"$REPLAY" $method -F 7 "$in" "$W/closed/u/5_0_node1.h5" >/dev/null ||
	fail "sh5_replay $method"
"$REPLAY" $method -K -F 7 "$in" "$W/killed/u/5_0_node1.h5" >/dev/null ||
	fail "sh5_replay $method -K"

# h5py: the same records, every chunk through the whole pipeline (filter
# mask 0); by default the complete chunk is the same bytes in both, the
# last one shorter in the closed file (re-coded at close).
"$PY" - "$W/closed/u/5_0_node1.h5" "$W/killed/u/5_0_node1.h5" "$method" <<'PYEOF' ||
import sys, h5py, numpy as np
c, k = (h5py.File(p, "r") for p in sys.argv[1:3])
for t in ("0", "1"):
    x, y = k["node1/Tasks/" + t], c["node1/Tasks/" + t]
    assert x.shape == y.shape == (1000,), (x.shape, y.shape)
    assert np.array_equal(x[:], y[:]), "task %s differs" % t
    for d in (x, y):
        masks = [d.id.get_chunk_info(i).filter_mask
                 for i in range(d.id.get_num_chunks())]
        assert masks == [0, 0], masks
    if sys.argv[3] == "":
        # the complete chunk: re-coded when it completed, in both
        assert x.id.read_direct_chunk((0,)) == \
            y.id.read_direct_chunk((0,)), "chunk 0 differs"
        # the last: zinc's form as the last flush left it; re-coded
        # (zrecode.h), shorter, at close
        kl = len(x.id.read_direct_chunk((600,))[1])
        cl = len(y.id.read_direct_chunk((600,))[1])
        assert cl < kl, (cl, kl)
PYEOF
	fail "h5py: killed file differs from the closed one ($method)"

# sh5util (Slurm's own, through HDF5) merges and extracts the killed file
# as it does the closed one.
if [ -x /usr/bin/sh5util ]; then
	mkdir -p "$W/conf"
	printf 'ClusterName=t\nSlurmctldHost=localhost\nAcctGatherProfileType=acct_gather_profile/hdf5\n' >"$W/conf/slurm.conf"
	printf 'ProfileHDF5Dir=%s/prof\n' "$W" >"$W/conf/acct_gather.conf"
	for k in closed killed; do
		mkdir -p "$W/su$k/$(id -un)"
		cp "$W/$k/u/5_0_node1.h5" "$W/su$k/$(id -un)/"
		(cd "$W" && SLURM_CONF=$W/conf/slurm.conf sh5util -j 5 \
			-p "$W/su$k" -S -o "$W/$k.su.h5" >/dev/null 2>&1 &&
		 SLURM_CONF=$W/conf/slurm.conf sh5util -j 5 -E \
			-i "$W/$k.su.h5" -l Node:TimeSeries -s Tasks \
			-o "$W/$k.su.csv" >/dev/null 2>&1) ||
			fail "sh5util on the $k file"
	done
	[ "$(wc -l <"$W/killed.su.csv")" -ge 2000 ] ||
		fail "sh5util: $(wc -l <"$W/killed.su.csv") lines"
	cmp -s "$W/closed.su.csv" "$W/killed.su.csv" ||
		fail "sh5util: killed file differs from the closed one"
fi

# sh5merge: its own chunk decoder honours the mask.
for k in closed killed; do
	"$SH5MERGE" -q merge -j 5 -p "$W/$k" -u u --allow-partial \
		-o "$W/$k.h5" 2>"$W/$k.err" ||
		{ cat "$W/$k.err"; fail "merge of the $k file"; }
	"$SH5MERGE" extract -i "$W/$k.h5" -o "$W/$k.csv" ||
		fail "extract of the $k file"
done
[ "$(wc -l <"$W/killed.csv")" -eq 2001 ] ||
	fail "extract of the killed file: $(wc -l <"$W/killed.csv") lines, not 2001"
cmp -s "$W/closed.csv" "$W/killed.csv" ||
	fail "sh5merge extract: killed file differs from the closed one"
rm -f "$W"/*.h5 "$W"/*.csv "$W"/*.err
done
echo "ok"
