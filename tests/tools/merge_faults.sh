#!/bin/bash
# merge_faults.sh: each kind of bad input gets "sh5merge: FILE: reason"
# and exit 1 with no job file; with --allow-partial a warning, exit 0, and
# a job file that marks what is missing and holds every salvaged sample.
. "$top_srcdir/tests/tools/merge_lib.sh"

J=600
fresh() { # fresh NAME: a clean profile dir prof-NAME/u with job $J
	rm -rf "prof-$1"
	mkdir -p "prof-$1/u"
	$GEN -d "prof-$1/u" -j $J -n 4 -t 2 -s 120 -S extern,0 -f mixed -E -r 9 ||
		fail "gen_job"
	P="prof-$1"
	D="prof-$1/u"
}
partial_ok() { # partial_ok NAME OUT ARGS...: --allow-partial succeeds
	local name=$1 out=$2
	shift 2
	$SH5MERGE merge -j $J -u u -o "$out" --allow-partial "$@" 2>"$T/err" ||
		{ cat "$T/err"; fail "$name: --allow-partial exit $?"; }
	grep -q '^sh5merge: warning: ' "$T/err" || fail "$name: no warning"
	[ "$(h5attr "$out" /Merge Partial)" = 1 ] || fail "$name: Partial != 1"
	$CHECK inputs "$out" > "$T/inputs" || fail "$name: /Merge"
	echo "ok: $name --allow-partial"
}

# No files at all.
fresh none
expect_fail "no files" "prof-none/u: no node-step files of job 999" \
	$SH5MERGE merge -j 999 -p $P -u u
expect_fail "no directory" "nosuchdir/u: No such file" \
	$SH5MERGE merge -j $J -p nosuchdir -u u

# A node listed in the step but absent: node indexes and task ids tell.
fresh missing
rm $D/${J}_0_node2.h5
expect_fail "missing node" "prof-missing/u: step 0: node index 1 missing" \
	$SH5MERGE merge -j $J -p $P -u u
grep -q "step 0: 2 tasks missing" err || fail "missing tasks not reported"
[ ! -e job_$J.h5 ] || fail "job file written despite a missing node"
no_temp .
partial_ok "missing node" miss.h5 -p $P
grep -q "missing: step 0: node index 1 missing" inputs || fail "/Merge/Missing"
$CHECK job miss.h5 $D/*.h5 || fail "missing node: values of the others"
# The last node missing: only "Number of Nodes" (our files) tells.
fresh lastnode
rm $D/${J}_0_node4.h5
expect_fail "missing last node" "step 0: node index 3 missing" \
	$SH5MERGE merge -j $J -p $P -u u

# Truncated file (a killed writer, a full disk): salvage what is there.
fresh trunc
for f in ${J}_0_node3.h5 ${J}_0_node2.h5; do # stock, ours
	cp $D/$f orig-$f
done
truncate -s $(( $(stat -c %s $D/${J}_0_node3.h5) * 70 / 100 )) $D/${J}_0_node3.h5
# Ours: cut after the first half of its stored chunks (the end of the
# file holds the writer's totals, not samples).
$PY - $D/${J}_0_node2.h5 <<'PY' || fail "cutting node2"
import os, sys, h5py
ends = []
with h5py.File(sys.argv[1], "r") as f:
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.chunks and "Totals" not in name:
            for i in range(obj.id.get_num_chunks()):
                c = obj.id.get_chunk_info(i)
                ends.append(c.byte_offset + c.size)
    f.visititems(visit)
ends.sort()
os.truncate(sys.argv[1], ends[len(ends) // 2 - 1])
PY
expect_fail "truncated" "prof-trunc/u/${J}_0_node3.h5: damaged: truncated" \
	$SH5MERGE merge -j $J -p $P -u u
grep -q "${J}_0_node2.h5: damaged: truncated" err || fail "2nd truncated file"
[ ! -e job_$J.h5 ] || fail "job file written despite damage"
partial_ok "truncated" trunc.h5 -p $P
for n in 2 3; do
	out=$($CHECK salvage trunc.h5 0 node$n orig-${J}_0_node$n.h5) ||
		fail "salvaged values node$n"
	kept=$(echo "$out" | sed -n 's/^kept \([0-9]*\) lost.*/\1/p')
	[ "${kept:-0}" -gt 0 ] || fail "nothing salvaged from node$n: $out"
	grep -q "^${J}_0_node$n.h5 salvaged [1-9]" inputs ||
		fail "/Merge/Inputs does not mark node$n salvaged"
	# The samples /Merge counts lost are those the warning said.
	said=$(sed -n "s/.*${J}_0_node$n.h5: damaged: .*; \([0-9]*\) of [0-9]* samples lost.*/\1/p" err)
	lost=$(sed -n "s/^${J}_0_node$n.h5 salvaged \([0-9]*\) .*/\1/p" inputs)
	[ -n "$said" ] && [ "$said" = "$lost" ] ||
		fail "node$n: /Merge/Inputs counts $lost lost, the warning said $said"
done
echo "ok: salvaged rows equal the originals"

# Writers killed before closing (like slurmstepd under kill -9): the files
# hold what the last flush wrote and merge cleanly.
rm -rf prof-killed && mkdir -p prof-killed/u
$GEN -d prof-killed/u -j $J -n 3 -t 2 -s 40 -E -K -f sh5 || fail "gen_job -K"
$SH5MERGE merge -q -j $J -p prof-killed -u u -o killed.h5 || fail "killed writers: exit $?"
$CHECK job killed.h5 prof-killed/u/*.h5 || fail "killed writers: values"
echo "ok: files of killed writers"

# Corrupt data: a compressed chunk of ours overwritten.
fresh corrupt
cp $D/${J}_0_node2.h5 orig.h5
$PY - $D/${J}_0_node2.h5 <<'PY' || fail "corrupting"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
d = f["node2/Tasks/2"]
info = d.id.get_chunk_info(0)
f.close()
with open(sys.argv[1], "r+b") as fh:
    fh.seek(info.byte_offset)
    fh.write(b"\xff" * min(64, info.size))
PY
expect_fail "corrupt chunk" "${J}_0_node2.h5: damaged: Tasks/2" \
	$SH5MERGE merge -j $J -p $P -u u
[ ! -e job_$J.h5 ] || fail "job file written despite corruption"
no_temp .
partial_ok "corrupt chunk" corrupt.h5 -p $P
$CHECK salvage corrupt.h5 0 node2 orig.h5 | grep -q '^kept [1-9][0-9]* lost [1-9]' ||
	fail "corrupt chunk: salvage"
# A damaged global heap (string attributes of earlier builds) makes HDF5
# 1.10 read out of bounds and crash: that must only mark the file.
fresh heap
vlen_heap $D/${J}_0_node2.h5 crash
expect_fail "file crashing HDF5" "${J}_0_node2.h5: corrupt: reading it crashes HDF5" \
	$SH5MERGE merge -j $J -p $P -u u
partial_ok "file crashing HDF5" heap.h5 -p $P
grep -q "^${J}_0_node2.h5 skipped" inputs || fail "crashing file not marked skipped"
# ... and a heap object overrunning the free space makes it loop forever:
# the reading child is stopped after SH5MERGE_READ_TIMEOUT seconds.
fresh loop
vlen_heap $D/${J}_0_node2.h5 loop
SH5MERGE_READ_TIMEOUT=2 expect_fail "file looping HDF5" \
	"${J}_0_node2.h5: corrupt: HDF5 does not finish reading it" \
	timeout 60 $SH5MERGE merge -j $J -p $P -u u
SH5MERGE_READ_TIMEOUT=2 partial_ok "file looping HDF5" loop.h5 -p $P
# Corrupt superblock.
fresh sb
printf '\377%.0s' $(seq 1 40) | dd of=$D/${J}_0_node1.h5 bs=1 seek=8 conv=notrunc 2>/dev/null
expect_fail "corrupt superblock" "${J}_0_node1.h5: corrupt HDF5 file" \
	$SH5MERGE merge -j $J -p $P -u u

# Foreign files that carry a node-step name.
fresh foreign
$PY -c "import h5py; f = h5py.File('$D/${J}_0_node9.h5', 'w'); f['x'] = [1, 2]" ||
	fail "h5py"
echo "not hdf5" > $D/${J}_0_node8.h5
expect_fail "foreign HDF5" "${J}_0_node9.h5: not a node-step file of node node9" \
	$SH5MERGE merge -j $J -p $P -u u
grep -q "${J}_0_node8.h5: not an HDF5 file" err || fail "non-HDF5 file"
partial_ok "foreign files" foreign.h5 -p $P
grep -q "^${J}_0_node9.h5 skipped" inputs || fail "foreign not marked skipped"

# A file of another job under this job's name (ours carry the job id).
fresh other
mkdir -p oj/u
$GEN -d oj/u -j 77 -n 2 -t 2 -s 10 -S 0 -f sh5 || fail gen
cp oj/u/77_0_node2.h5 $D/${J}_0_node5.h5
# node5 would be index 4: rename the group so only the job id differs.
$PY -c "
import h5py
f = h5py.File('$D/${J}_0_node5.h5', 'r+')
f.move('node2', 'node5')" || fail "h5py move"
expect_fail "other job" "${J}_0_node5.h5: belongs to job 77, not $J" \
	$SH5MERGE merge -j $J -p $P -u u

# An empty step: files without samples.
fresh empty
$GEN -d $D -j $J -n 2 -t 2 -s 0 -S 3 -f stock || fail gen
expect_fail "empty step" "step 3: empty step" $SH5MERGE merge -j $J -p $P -u u
partial_ok "empty step" empty.h5 -p $P

# Permission denied (as an unprivileged user: root reads everything).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	fresh perm
	chmod 755 "$T"
	chmod -R a+rX $P
	# nobody runs a copy: the build tree may be closed to it (a clone
	# in a 0700 home).
	mkdir -p "$T/bin" && chmod 755 "$T/bin"
	# Under tests/tools/sanitizer_run.sh the sanitizers' options name
	# suppression and log files in the build tree, which nobody may not
	# read: its copy runs with defaults (no leak check: LeakSanitizer
	# cannot stop the world of a process that changed user).
	asnobody() {
		runuser -u nobody -- env -u LSAN_OPTIONS -u UBSAN_OPTIONS \
			ASAN_OPTIONS=detect_leaks=0 "$@"
	}
	install -m 755 "$SH5MERGE" "$T/bin/sh5merge" || fail "copy sh5merge"
	asnobody "$T/bin/sh5merge" --help >/dev/null 2>&1 ||
		fail "nobody cannot run $T/bin/sh5merge (is $T reachable?)"
	chmod 000 $D/${J}_0_node1.h5
	mkdir -p outn && chmod 777 outn
	expect_fail "permission denied" "${J}_0_node1.h5: Permission denied" \
		asnobody $T/bin/sh5merge merge -j $J -p $T/$P -u u -o $T/outn/p.h5
	[ ! -e outn/p.h5 ] || fail "job file written despite unreadable input"
	asnobody $T/bin/sh5merge merge -j $J -p $T/$P -u u -o $T/outn/p2.h5 \
		--allow-partial 2>/dev/null || fail "permission: --allow-partial"
	# The output directory is not writable.
	chmod 000 $D/${J}_0_node1.h5
	chmod 644 $D/${J}_0_node1.h5
	mkdir -p ro && chmod 555 ro
	expect_fail "unwritable output dir" "ro/.*Permission denied|ro/.*cannot create" \
		asnobody $T/bin/sh5merge merge -j $J -p $T/$P -u u -o $T/ro/p.h5
fi

# A full output disk: a small tmpfs when we may mount, else a file size
# limit (the same write error for HDF5).
fresh full
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	mkdir -p small
	expect_fail "full disk" "No space left|cannot|write" unshare -m sh -c \
		"mount -t tmpfs -o size=200k tmpfs small && $SH5MERGE merge -j $J -p $P -u u -o small/full.h5; rc=\$?; ls -a small > ls-small; exit \$rc"
	! grep -q 'full.h5' ls-small || fail "full disk: output or temporary left: $(cat ls-small)"
fi
expect_fail "file size limit" "File too large|cannot|write" \
	bash -c "ulimit -f 100; exec $SH5MERGE merge -j $J -p $P -u u -o fsz.h5"
[ ! -e fsz.h5 ] || fail "file size limit: output left"
no_temp .

# Usage errors exit 2.
$SH5MERGE merge -p x >/dev/null 2>&1; [ $? -eq 2 ] || fail "no -j: exit 2"
$SH5MERGE merge -j abc >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad job: exit 2"
$SH5MERGE extract >/dev/null 2>&1; [ $? -eq 2 ] || fail "extract: exit 2"
$SH5MERGE list >/dev/null 2>&1; [ $? -eq 2 ] || fail "list: exit 2"
for c in merge extract list; do
	$SH5MERGE $c --help | grep -q "^Usage: sh5merge $c" || fail "$c --help"
done
expect_fail "extract of a non-job file" "orig.h5: not a job file" \
	$SH5MERGE extract -i orig.h5
echo "ok: usage"
exit 0
