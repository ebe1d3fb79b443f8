#!/bin/bash
# merge_values.sh: merge generated jobs (stock, ours, mixed) and compare
# every value, total and CSV cell with an independent h5py read.
. "$top_srcdir/tests/tools/merge_lib.sh"

mkdir -p prof/alice
# A site that switched plugins: odd nodes ours, even nodes stock.
$GEN -d prof/alice -j 501 -n 4 -t 3 -s 50 -S batch,extern,0,1 -f mixed -E -G -r 3 ||
	fail "gen_job"
inputs=$(ls prof/alice/501_*.h5)

$SH5MERGE merge -q -j 501 -p prof -u alice || fail "merge exit $?"
[ -f job_501.h5 ] || fail "no ./job_501.h5"
no_temp .
$CHECK job job_501.h5 $inputs || fail "job file values"
for f in $inputs; do [ -f "$f" ] || fail "input $f removed without --remove-inputs"; done

# CSV: every row and value of each series, totals, aligned fields.
$SH5MERGE extract -i job_501.h5 -o tasks.csv || fail "extract tasks"
$CHECK csv job_501.h5 tasks.csv Tasks || fail "tasks csv"
SH5MERGE_NO_FORK=1 $SH5MERGE extract -i job_501.h5 -o tasks1.csv || fail "extract, one process"
cmp tasks.csv tasks1.csv || fail "extract in one process differs"
SH5_NO_LIBDEFLATE=1 $SH5MERGE extract -i job_501.h5 -o tasks2.csv || fail "extract with zlib"
cmp tasks.csv tasks2.csv || fail "extract with zlib differs"
$SH5MERGE extract -i job_501.h5 -S Energy > energy.csv || fail "extract energy"
$CHECK csv job_501.h5 energy.csv Energy || fail "energy csv"
$SH5MERGE extract -i job_501.h5 -l totals -o tt.csv || fail "extract totals"
$CHECK totals job_501.h5 tt.csv Tasks || fail "totals csv"
$SH5MERGE extract -i job_501.h5 -l totals -S Energy -o te.csv || fail "extract energy totals"
$CHECK totals job_501.h5 te.csv Energy || fail "energy totals csv"
$SH5MERGE extract -i job_501.h5 -s 1 -F RSS -o rss.csv || fail "extract field"
$CHECK field job_501.h5 rss.csv Tasks RSS 1 || fail "field csv"
# Small column buffers: rows cross buffer refills.
SH5MERGE_EXTRACT_BUFFER=100 $SH5MERGE extract -i job_501.h5 -s 1 -F RSS -o rss2.csv ||
	fail "extract field, small buffers"
cmp rss.csv rss2.csv || fail "field csv depends on the buffer size"
$SH5MERGE extract -i job_501.h5 -S Energy -F Power -o power.csv || fail "extract power"
$CHECK field job_501.h5 power.csv Energy Power || fail "power csv"
head -1 rss.csv | grep -q '^EpochTime,node1:0,node1:1,node1:2,node2:3,' ||
	fail "field header: $(head -1 rss.csv)"
# Generic series: a node-level one (GPU) and a group (Sensors/Fan1, Fan2).
for ser in GPU Sensors; do
	$SH5MERGE extract -i job_501.h5 -S $ser -o g.csv || fail "extract $ser"
	$CHECK csv job_501.h5 g.csv $ser || fail "$ser csv"
	$SH5MERGE extract -i job_501.h5 -S $ser -l totals -o gt.csv || fail "$ser totals"
	$CHECK totals job_501.h5 gt.csv $ser || fail "$ser totals csv"
done
head -1 g.csv | grep -q '^Step,Node,Series,ElapsedTime,' || fail "group key column: $(head -1 g.csv)"
$SH5MERGE extract -i job_501.h5 -S Sensors -t Fan2 -F RPM -s 0 -o gf.csv || fail "group field"
$CHECK field job_501.h5 gf.csv Sensors RPM 0 || fail "group field csv"
# Filters.
$SH5MERGE extract -i job_501.h5 -s extern -n node2 -t 4 -o one.csv || fail "filter"
[ "$(wc -l < one.csv)" -eq 51 ] || fail "filtered rows: $(wc -l < one.csv)"
[ "$(cut -d, -f1-3 one.csv | sort -u | grep -vc Step)" -eq 1 ] || fail "filter keys"
$SH5MERGE extract -i job_501.h5 -n nosuch >/dev/null 2>err && fail "unknown node accepted"
grep -q 'sh5merge: job_501.h5: no series' err || fail "unknown node message"
echo "ok: extract"

# list: steps, nodes, series, fields, units, counts, spans.
$SH5MERGE list -i job_501.h5 > list.txt || fail "list"
for want in 'step batch: 1 node' 'step extern: 4 nodes, 12 tasks' \
	'node node2 \(index 1, 3 tasks, sh5\)' 'node node1 \(index 0, 3 tasks, stock\)' \
	'Tasks/11 .* 50 samples' 'CPUTime\[s,delta\]' 'Power\[W,level\]' \
	'2023-11-14T22:13:21Z .. 2023-11-14T22:14:10Z \(49 s\)'; do
	grep -Eq "$want" list.txt || { cat list.txt; fail "list lacks '$want'"; }
done
echo "ok: list"

# Step selection, several steps, readable step names.
$SH5MERGE merge -q -j 501.0,501.extern -p prof -u alice -o sel.h5 || fail "merge steps"
[ "$(h5attr sel.h5 / 'Number of Steps')" = 2 ] || fail "selected steps"
$CHECK job sel.h5 prof/alice/501_0_*.h5 $(ls prof/alice/501_*extern*.h5 prof/alice/501_4294967292_*.h5 2>/dev/null) ||
	fail "selected steps values"
echo "ok: step selection"

# An existing output is kept without --force.
sum=$(md5sum < job_501.h5)
expect_fail "existing output" 'job_501.h5: exists' \
	$SH5MERGE merge -q -j 501 -p prof -u alice
[ "$(md5sum < job_501.h5)" = "$sum" ] || fail "existing output changed"
$SH5MERGE merge -q -f -j 501 -p prof -u alice || fail "--force"
no_temp .
echo "ok: --force"

# Pure stock and pure sh5 jobs; default profile dir from acct_gather.conf.
mkdir -p conf prof2/bob
printf 'ProfileHDF5Dir=/nonexistent\nProfileSH5Dir = %s/prof2 # ours\n' "$T" > conf/acct_gather.conf
$GEN -d prof2/bob -j 502 -n 3 -t 2 -s 30 -f stock -E || fail gen
$GEN -d prof2/bob -j 503 -n 3 -t 2 -s 30 -f sh5 -E || fail gen
SLURM_CONF=$T/conf/slurm.conf $SH5MERGE merge -q -j 502,503 --user bob ||
	fail "merge with acct_gather.conf"
$CHECK job job_502.h5 prof2/bob/502_*.h5 || fail "stock values"
$CHECK job job_503.h5 prof2/bob/503_*.h5 || fail "sh5 values"
echo "ok: stock and sh5 jobs"

# Intact files of our writer are copied whole (no decoding: their stored
# totals, chunk checksums); the values and totals are the same.
$SH5MERGE merge -j 503 -p prof2 -u bob -o whole.h5 2>err || fail "merge 503"
grep -q '3 node files (3 copied whole)' err || { cat err; fail "not copied whole"; }
$CHECK job whole.h5 prof2/bob/503_*.h5 || fail "whole: values and totals"
# Stored totals that do not cover the dataset, or miss a task, send the
# file the normal way.
mkdir -p prof4/bob && cp prof2/bob/503_* prof4/bob/
$PY - prof4/bob/503_0_node2.h5 prof4/bob/503_0_node3.h5 <<'PY' || fail "editing totals"
import sys, h5py, numpy
with h5py.File(sys.argv[1], "r+") as f:
    t = f["node2/Totals/Tasks"]
    k = sorted(t)[0]
    t[k].attrs["Rows"] = numpy.uint64(t[k].attrs["Rows"] - 1)
with h5py.File(sys.argv[2], "r+") as f:
    f["node3/Totals/AllTasks"].attrs["Series Count"] = numpy.int32(1)
PY
$SH5MERGE merge -j 503 -p prof4 -u bob -o notwhole.h5 2>err || fail "merge edited"
grep -q '3 node files (1 copied whole)' err || { cat err; fail "edited totals trusted"; }
$CHECK job notwhole.h5 prof4/bob/503_*.h5 || fail "not whole: values and totals"
# Early and normal second passes write the same job file.
SH5MERGE_NO_EARLY=1 $SH5MERGE merge -q -j 503 -p prof2 -u bob -o late.h5 || fail "no early"
cmp <($SH5MERGE extract -i late.h5 -l totals) <($SH5MERGE extract -i whole.h5 -l totals) ||
	fail "early and normal second passes differ"
# A node missing from a job of whole copies: refused, or with
# --allow-partial written (without starting over) and marked.
mkdir -p prof5/bob && cp prof2/bob/503_* prof5/bob/ && rm prof5/bob/503_0_node2.h5
expect_fail "missing node of whole copies" "step 0: node index 1 missing" \
	$SH5MERGE merge -j 503 -p prof5 -u bob -o miss.h5
[ ! -e miss.h5 ] || fail "job file written despite a missing node"
$SH5MERGE merge -j 503 -p prof5 -u bob -o miss.h5 --allow-partial 2>err ||
	fail "--allow-partial: exit $?"
grep -q '2 node files (2 copied whole)' err || { cat err; fail "missing node: not copied whole"; }
[ "$(h5attr miss.h5 /Merge Partial)" = 1 ] || fail "missing node: Partial != 1"
$CHECK job miss.h5 prof5/bob/503_*.h5 || fail "missing node: values"
echo "ok: files copied whole"

# --remove-inputs: inputs go only after the verified rename.
$SH5MERGE merge -q -j 503 -p prof2 -u bob -o rm.h5 --remove-inputs || fail "--remove-inputs"
[ -z "$(ls prof2/bob/503_* 2>/dev/null)" ] || fail "inputs not removed"
# The inputs are gone: compare with the job file merged from them earlier.
cmp <($SH5MERGE extract -i rm.h5) <($SH5MERGE extract -i job_503.h5) ||
	fail "removed-inputs job differs"
echo "ok: --remove-inputs"

# sh5util (Slurm's own) reads our job file.
if [ -x /usr/bin/sh5util ]; then
	printf 'ClusterName=t\nSlurmctldHost=localhost\nAcctGatherProfileType=acct_gather_profile/hdf5\n' > conf/slurm.conf
	printf 'ProfileHDF5Dir=%s/prof\n' "$T" > conf/acct_gather.conf
	SLURM_CONF=$T/conf/slurm.conf sh5util -j 501 -E -i job_501.h5 \
		-l Node:TimeSeries -s Tasks -o su.csv >/dev/null 2>&1 ||
		fail "sh5util -E on our job file"
	$CHECK sh5util job_501.h5 su.csv Tasks || fail "sh5util tasks"
	SLURM_CONF=$T/conf/slurm.conf sh5util -j 501 -E -i job_501.h5 \
		-l Node:TimeSeries -s Energy -o sue.csv >/dev/null 2>&1 ||
		fail "sh5util -E energy"
	$CHECK sh5util job_501.h5 sue.csv Energy || fail "sh5util energy"
	echo "ok: sh5util -E reads the job file"
	# ... and we read sh5util's job files (no totals: computed).
	# (sh5util wants a user that exists: the files under our own name;
	# numbered steps only: sh5util files extern as step "-4", or as step
	# 0 when the file says "extern")
	mkdir -p "prof3/$(id -un)" && cp prof/alice/501_[01]_* "prof3/$(id -un)"
	$SH5MERGE merge -q -j 501.0,501.1 -p prof -u alice -o num.h5 || fail "merge 0,1"
	$SH5MERGE extract -i num.h5 -l totals -o tt.csv || fail "totals 0,1"
	SLURM_CONF=$T/conf/slurm.conf sh5util -j 501 -p "$T/prof3" -S \
		-o su.h5 >/dev/null 2>&1 || fail "sh5util -j"
	$SH5MERGE extract -i su.h5 -o sut.csv || fail "extract of sh5util's job file"
	$CHECK csv su.h5 sut.csv Tasks || fail "sh5util job file csv"
	$SH5MERGE extract -i su.h5 -l totals -o sutt.csv || fail "totals of sh5util's job file"
	$CHECK totals su.h5 sutt.csv Tasks || fail "sh5util job file totals"
	cmp <(tail -n +2 tt.csv | sort) <(tail -n +2 sutt.csv | sort) ||
		fail "totals computed from sh5util's job file differ from ours"
	$SH5MERGE list -i su.h5 | grep -q 'no /Merge' || fail "list of sh5util's job file"
	echo "ok: sh5util's job files"
fi
exit 0
