#!/bin/bash
# End to end: a cluster whose acct_gather.conf names a seal key
# (ProfileSH5SealKey, root's, 0600: the job user cannot read it).  The
# plugin seals the node-step file it closed; root's `sh5merge merge
# --seal-key` copies it on its verified seal into a job file equal to the
# one checked in full (no key); a copy changed after its seal is caught
# (a warning naming it, checked in full, its damage reported as without a
# key).  A key others can read is refused by the plugin: logged naming
# it, the file written unsealed, the step fine.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"
. "$top_srcdir/tests/e2e/plugin_lib.sh"

SH5MERGE=$top_builddir/sh5merge/sh5merge
SAME="$PY $top_srcdir/tests/tools/h5_same.py"
CHECK="$PY $top_srcdir/tests/tools/merge_check.py"
[ -x "$SH5MERGE" ] || fail "$SH5MERGE not built"
need_root
KEYDIR=$(mktemp -d /tmp/sh5-sealkey.XXXXXX)
chmod 700 "$KEYDIR"
KEY=$KEYDIR/seal.key
head -c 64 /dev/urandom >"$KEY"
chmod 600 "$KEY"
plugin_cluster_setup "ProfileSH5SealKey=$KEY"
trap 'rm -rf "$KEYDIR"; cluster_cleanup' EXIT

scontrol show config 2>/dev/null | grep -q "ProfileSH5SealKey *= *$KEY" ||
	fail "scontrol show config lacks ProfileSH5SealKey"
as_user srun -n1 --profile=task "$WORKLOAD" 3 16 4 "$SCRATCH" \
	>"$CLUSTER_DIR/srun.out" 2>&1 || fail "srun: $(cat "$CLUSTER_DIR/srun.out")"
job=$(last_job_id)
[ -n "$job" ] || fail "no job id"
D=$PROFDIR/$JOBUSER
f=$D/${job}_0_$NODE.h5
assert_file "$f"
tail -c 80 "$f" | head -c 8 | grep -q SH5SEAL ||
	fail "$f: not sealed ($(cluster_log_tail 20))"
# The key is root's alone: the job user cannot read it.
runuser -u "$JOBUSER" -- cat "$KEY" >/dev/null 2>&1 &&
	fail "the job user can read the seal key"
h5dump -H "$f" >/dev/null || fail "h5dump of the sealed file"

"$SH5MERGE" merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" -o "$CLUSTER_DIR/sealed.h5" \
	--seal-key "$KEY" 2>"$CLUSTER_DIR/s.err" || { cat "$CLUSTER_DIR/s.err"; fail "merge with the key"; }
grep -q '1 node file (1 copied whole, 1 on a verified seal)' "$CLUSTER_DIR/s.err" ||
	{ cat "$CLUSTER_DIR/s.err"; fail "not merged on the seal"; }
"$SH5MERGE" merge -j "$job" -p "$PROFDIR" -u "$JOBUSER" -o "$CLUSTER_DIR/checked.h5" \
	--seal-key none 2>"$CLUSTER_DIR/c.err" || { cat "$CLUSTER_DIR/c.err"; fail "merge without a key"; }
grep -q 'verified seal' "$CLUSTER_DIR/c.err" && fail "seal used without a key"
$SAME "$CLUSTER_DIR/sealed.h5" "$CLUSTER_DIR/checked.h5" ||
	fail "sealed and checked job files differ"
$CHECK job "$CLUSTER_DIR/sealed.h5" "$f" || fail "job file values"
echo "ok: the plugin's seal verifies, the same job file"

# A copy changed after its seal: caught, checked in full.
T=$CLUSTER_DIR/t/$JOBUSER
mkdir -p "$T"
cp "$D"/${job}_*.h5 "$T/"
$PY - "$T/${job}_0_$NODE.h5" "$NODE" <<'PY' || fail "tampering"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f[sys.argv[2] + "/Tasks"]
off = g[sorted(g)[0]].id.get_chunk_info(0).byte_offset
f.close()
b = bytearray(open(sys.argv[1], "rb").read())
b[off + 10] ^= 0xff
open(sys.argv[1], "wb").write(b)
PY
"$SH5MERGE" merge -j "$job" -p "$CLUSTER_DIR/t" -u "$JOBUSER" -o "$CLUSTER_DIR/t1.h5" \
	--allow-partial --seal-key "$KEY" 2>"$CLUSTER_DIR/t1.err"
grep -q "${job}_0_$NODE.h5: seal does not match .*: checked in full" "$CLUSTER_DIR/t1.err" ||
	{ cat "$CLUSTER_DIR/t1.err"; fail "tampering not caught"; }
grep -q "${job}_0_$NODE.h5: damaged" "$CLUSTER_DIR/t1.err" ||
	{ cat "$CLUSTER_DIR/t1.err"; fail "damage not reported"; }
"$SH5MERGE" merge -j "$job" -p "$CLUSTER_DIR/t" -u "$JOBUSER" -o "$CLUSTER_DIR/t2.h5" \
	--allow-partial --seal-key none 2>"$CLUSTER_DIR/t2.err"
diff <(grep -v 'seal does not match' "$CLUSTER_DIR/t1.err" | sed 's/t1\.h5/X/') \
	<(sed 's/t2\.h5/X/' "$CLUSTER_DIR/t2.err") || fail "reports differ from the checked merge's"
$SAME "$CLUSTER_DIR/t1.h5" "$CLUSTER_DIR/t2.h5" || fail "tampered: job files differ"
echo "ok: a tampered copy is caught"

# The key readable by others: the next step's slurmstepd refuses it.
chmod 644 "$KEY"
as_user srun -n1 --profile=task "$WORKLOAD" 2 8 2 "$SCRATCH" \
	>"$CLUSTER_DIR/srun2.out" 2>&1 || fail "srun with a refused key: $(cat "$CLUSTER_DIR/srun2.out")"
job2=$(last_job_id)
f2=$D/${job2}_0_$NODE.h5
assert_file "$f2"
tail -c 80 "$f2" | head -c 8 | grep -q SH5SEAL && fail "$f2: sealed with a refused key"
grep -q "ProfileSH5SealKey: $KEY: readable or writable by group or others.*node-step files are not sealed" \
	"$(cluster_log slurmd)" || { cluster_log_tail 30; fail "refusal not logged"; }
h5dump -H "$f2" >/dev/null || fail "h5dump of the unsealed file"
echo "merge of sealed files end-to-end ok (jobs $job, $job2)"
