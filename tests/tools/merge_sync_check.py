#!/usr/bin/python3
"""Check `sh5merge merge --sync offset` against an independent computation
from the node-step files (h5py, exact integer arithmetic).

  merge_sync_check.py JOB.h5 [--method offset|none] [--csv EXTRACT.csv]

For every node group of the job file, the input named in /Merge/Inputs is
read; its /<node>/ClockOffsets (measurements of a synchronised server,
stratum 1-15, round trip >= 0) define the map local -> reference:
piecewise linear through (LocalTimeNs, OffsetNs), the end segments
extended, a single point a constant shift, none the identity.  Checked:
SyncTimeNs of every sample (to 1 ns), EpochTimeNs unchanged, the node's
Sync attributes, the totals' FirstTimeNs/LastTimeNs, /Merge's record, and
(with --csv) the SyncTimeNs column of `sh5merge extract`.
"""
import csv
import sys
from fractions import Fraction

import h5py
import numpy as np

FAILS = []


def fail(msg):
    FAILS.append(msg)
    if len(FAILS) <= 20:
        print("FAIL:", msg, file=sys.stderr)


def s(v):
    if isinstance(v, np.ndarray):
        v = v.flat[0]
    return v.decode() if isinstance(v, bytes) else str(v)


def points(node_grp):
    if "ClockOffsets" not in node_grp:
        return [], 0
    c = node_grp["ClockOffsets"][()]
    keep = (c["Stratum"] >= 1) & (c["Stratum"] <= 15) & \
        (c["RoundTripNs"].astype(np.int64) >= 0)
    c = c[keep]
    if len(c):
        r = sorted(int(x) for x in c["RoundTripNs"])
        lo, hi = r[(len(r) - 1) // 2], r[len(r) // 2]
        med = lo + (hi - lo) // 2
        c = c[c["RoundTripNs"].astype(np.int64) <= 4 * med + 50000]
    pts = sorted(zip((int(x) for x in c["LocalTimeNs"]),
                     (int(x) for x in c["OffsetNs"])), key=lambda p: p[0])
    err = max((int(x) // 2 for x in c["RoundTripNs"]), default=0)
    return pts, err


def round_half_away(fr):
    n, d = fr.numerator, fr.denominator
    q, r = divmod(abs(n), d)
    if 2 * r >= d:
        q += 1
    return q if n >= 0 else -q


def mapped(pts, t):
    if not pts:
        return t
    if len(pts) == 1:
        return t + pts[0][1]
    # the segment: last one whose start <= t, clamped to the ends
    i = 0
    while i + 2 < len(pts) and pts[i + 1][0] <= t:
        i += 1
    (x0, y0), (x1, y1) = pts[i], pts[i + 1]
    if x1 == x0:
        return t + y1
    off = Fraction(y0) + Fraction((y1 - y0) * (t - x0), x1 - x0)
    return t + round_half_away(off)


def series_paths(grp, prefix=""):
    for k, v in grp.items():
        if k in ("Totals", "ClockOffsets"):
            continue
        if isinstance(v, h5py.Group):
            yield from series_paths(v, prefix + k + "/")
        elif v.dtype.names and "EpochTime" in v.dtype.names:
            yield prefix + k


def main():
    args = sys.argv[1:]
    job = args.pop(0)
    method = "offset"
    csvpath = None
    while args:
        a = args.pop(0)
        if a == "--method":
            method = args.pop(0)
        elif a == "--csv":
            csvpath = args.pop(0)
        else:
            sys.exit("usage: merge_sync_check.py JOB.h5 [--method M] [--csv F]")
    f = h5py.File(job, "r")
    inputs = {}
    for r in f["Merge/Inputs"][()]:
        inputs[(s(r["Step"]), s(r["Node"]))] = s(r["File"])
    m = f["Merge"].attrs
    if s(m["Sync Method"]) != method:
        fail("/Merge Sync Method %s, want %s" % (s(m["Sync Method"]), method))
    want_sync = {}          # (step, node, path) -> array of SyncTimeNs
    total_corr = 0
    total_err = 0
    corrected = unmeasured = 0
    nsamples = 0
    for step in f["Steps"]:
        for node, g in f["Steps/%s/Nodes" % step].items():
            src = h5py.File(inputs[(step, node)], "r")
            ing = src[node]
            pts, err = points(ing)
            node_corr = 0
            step_first = step_last = None
            for p in series_paths(g):
                d = g[p][()]
                e_in = ing[p][()]["EpochTimeNs"].astype(np.int64)
                e = d["EpochTimeNs"].astype(np.int64)
                if not np.array_equal(e, e_in):
                    fail("%s/%s/%s: EpochTimeNs changed" % (step, node, p))
                has = "SyncTimeNs" in d.dtype.names
                if method == "none":
                    if has:
                        fail("%s/%s/%s: SyncTimeNs without sync" % (step, node, p))
                    continue
                if not has:
                    fail("%s/%s/%s: no SyncTimeNs" % (step, node, p))
                    continue
                if d.dtype["SyncTimeNs"] != np.dtype("<u8"):
                    fail("SyncTimeNs stored as %s" % d.dtype["SyncTimeNs"])
                got = d["SyncTimeNs"].astype(np.int64)
                want = np.array([mapped(pts, int(t)) for t in e], dtype=np.int64)
                nsamples += len(e)
                bad = np.nonzero(np.abs(got - want) > 1)[0]
                if len(bad):
                    i = bad[0]
                    fail("%s/%s/%s row %d: SyncTimeNs %d, want %d" %
                         (step, node, p, i, got[i], want[i]))
                want_sync[(step, node, p)] = got
                if len(e):
                    node_corr = max(node_corr, int(np.abs(want - e).max()))
                    tot = g["Totals/" + p][()]
                    if int(tot["FirstTimeNs"][0]) != int(got.min()) or \
                            int(tot["LastTimeNs"][0]) != int(got.max()):
                        fail("%s/%s totals %s: %d..%d, want %d..%d" % (
                            step, node, p, tot["FirstTimeNs"][0],
                            tot["LastTimeNs"][0], got.min(), got.max()))
            if method == "none":
                if "Sync Method" in g.attrs:
                    fail("%s/%s: Sync attributes without sync" % (step, node))
                continue
            a = g.attrs
            want_m = "offset" if pts else "none"
            if s(a["Sync Method"]) != want_m:
                fail("%s/%s: Sync Method %s want %s" % (step, node,
                                                       s(a["Sync Method"]), want_m))
            if int(a["Sync Measurements"]) != len(pts):
                fail("%s/%s: Sync Measurements %d want %d" % (
                    step, node, a["Sync Measurements"], len(pts)))
            if abs(int(a["Sync Max Correction ns"]) - node_corr) > 1:
                fail("%s/%s: Sync Max Correction ns %d want %d" % (
                    step, node, a["Sync Max Correction ns"], node_corr))
            if int(a["Sync Error Bound ns"]) != err:
                fail("%s/%s: Sync Error Bound ns %d want %d" % (
                    step, node, a["Sync Error Bound ns"], err))
            if len(pts) >= 2:
                drift = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) * 1e6
                if abs(float(a["Sync Drift ppm"]) - drift) > 1e-6 * max(1, abs(drift)):
                    fail("%s/%s: drift %r want %r" % (step, node,
                                                      a["Sync Drift ppm"], drift))
            corrected += 1 if pts else 0
            unmeasured += 0 if pts else 1
            total_corr = max(total_corr, node_corr)
            total_err = max(total_err, err)
    if method == "offset":
        for k, v in (("Sync Nodes Corrected", corrected),
                     ("Sync Nodes Unmeasured", unmeasured),
                     ("Sync Error Bound ns", total_err)):
            if int(m[k]) != v:
                fail("/Merge %s %d want %d" % (k, m[k], v))
        if abs(int(m["Sync Max Correction ns"]) - total_corr) > 1:
            fail("/Merge Sync Max Correction ns %d want %d" %
                 (m["Sync Max Correction ns"], total_corr))
    if csvpath:
        rows = 0
        with open(csvpath) as fh:
            for r in csv.DictReader(fh):
                key = (r["Step"], r["Node"], "Tasks/" + r["Task"])
                arr = want_sync.get(key)
                if arr is None:
                    fail("csv: no series %s" % (key,))
                    break
                i = int(r["ElapsedTime"])
                # rows of one series come in order; find by EpochTimeNs
                e = int(r["EpochTimeNs"])
                d = f["Steps/%s/Nodes/%s/%s" % key][()]
                idx = np.nonzero(d["EpochTimeNs"].astype(np.int64) == e)[0]
                if not len(idx) or int(r["SyncTimeNs"]) != int(arr[idx[0]]):
                    fail("csv %s elapsed %d: SyncTimeNs %s" % (key, i, r["SyncTimeNs"]))
                rows += 1
        if not rows:
            fail("csv: no rows")
    print("sync %s: %d samples checked, %d nodes corrected, %d unmeasured, "
          "max correction %.6f s" % (method, nsamples, corrected, unmeasured,
                                     total_corr / 1e9))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
