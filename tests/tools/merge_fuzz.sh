#!/bin/bash
# merge_fuzz.sh: damaged inputs (random bytes overwritten, files cut
# short) never crash or hang sh5merge: merge --allow-partial exits 0 or 1,
# and list/extract of what it wrote exit 0 or 1.  Deterministic (seeded).
. "$top_srcdir/tests/tools/merge_lib.sh"

mkdir -p base/u
$GEN -d base/u -j 77 -n 2 -t 2 -s 200 -E -G -f mixed || fail "gen_job"
SH5MERGE_READ_TIMEOUT=3 $PY - "$SH5MERGE" "${FUZZ_RUNS:-25}" <<'PY' || fail "fuzz"
import os, random, shutil, subprocess, sys
sh5merge, runs = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261122)
bad = 0
for it in range(runs):
    shutil.rmtree("w", ignore_errors=True)
    shutil.copytree("base", "w")
    f = "w/u/" + rng.choice(sorted(os.listdir("w/u")))
    d = bytearray(open(f, "rb").read())
    for _ in range(rng.randint(1, 8)):
        d[rng.randrange(len(d))] = rng.randrange(256)
    if rng.random() < 0.3:
        d = d[:rng.randrange(len(d))]
    open(f, "wb").write(d)
    cmds = [["merge", "-j", "77", "-p", "w", "-u", "u", "-o", "out.h5", "-f",
             "--allow-partial"],
            ["list", "-i", "out.h5"], ["extract", "-i", "out.h5"],
            ["extract", "-i", "out.h5", "-l", "totals"],
            ["extract", "-i", "out.h5", "-S", "Sensors", "-F", "RPM"]]
    for c in cmds:
        try:
            r = subprocess.run([sh5merge, "-q"] + c, capture_output=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            print("run %d: %s hangs" % (it, c[0]))
            bad += 1
            break
        if r.returncode not in (0, 1):
            print("run %d: %s exits %d: %s" % (it, c[0], r.returncode,
                                               r.stderr.decode()[-200:]))
            bad += 1
        if c[0] == "merge" and r.returncode:
            break
print("%d damaged inputs, %d failures" % (runs, bad))
sys.exit(1 if bad else 0)
PY
exit 0
