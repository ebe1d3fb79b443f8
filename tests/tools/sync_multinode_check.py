#!/usr/bin/python3
"""Checks of tests/e2e/sync_multinode.sh.

The truth.  libfaketime with FAKETIME="<off>s x<rate>" makes a process
read, at real time t, faked(t) = t0 + off + rate * (t - t0), where t0 is
the real time at which the library initialised in that process (its
constructor, at exec: a process inherits the environment and starts its
own t0 unless the environment names a shared start time; the offset is
not scaled).  Debian's libfaketime 0.9.10 creates that shared start time
in the first process and exports FAKETIME_SHARED, so slurmstepd, started
by slurmd with slurmd's environment, continues slurmd's timeline: t0 is
when slurmd's libfaketime initialised (measured with a x1.2 rate: slurmd's
start + 24 ms, to the microsecond).  So a sample stamped E (faked) by
slurmstepd was taken at real time

    truth(E) = t0 + (E - t0 - off) / rate.

t0 is estimated from /proc/<pid>/stat's start time of slurmd (clock ticks
since boot, 10 ms) converted to CLOCK_REALTIME, plus 20 ms; it lies within
tens of ms of that, and an error d in t0 moves the truth by
d * |1 - 1/rate|: at most 50 ms * 1000 ppm = 50 us for the rates used.

  sync_multinode_check.py model SPEC PROBE_OUTPUT [--t0-only]
      the output of tests/tools/sh5_fakeclock under FAKETIME=SPEC: every
      faked reading is within 100 us of the model with t0 = start + 5 ms
      (with --t0-only, for a large rate: the t0 each reading implies is
      the same for all, and 0-50 ms after the start).
  sync_multinode_check.py job SYNC.h5 NONE.h5 NODE=OFF_NS,RATE,T0_NS ...
      every sample of every node: |SyncTimeNs - truth| < 1 ms in the job
      file merged with --sync offset; in the one merged with --sync none
      the error EpochTimeNs - truth is the injected skew, off + (rate - 1)
      * (truth - t0), to 1 ms; the node's drift record matches the rate.
"""
import sys
from fractions import Fraction

import h5py
import numpy as np

T0_PAD = 5000000   # ns added to a probe's /proc start time
SLURMD_PAD = 20000000  # ns added to slurmd's (its start-up before the
                       # first time call; measured about 25 ms)
FAILS = []


def fail(msg):
    FAILS.append(msg)
    if len(FAILS) <= 20:
        print("FAIL:", msg, file=sys.stderr)


def parse_spec(spec):
    off, rate = spec.split()
    assert off.endswith("s") and rate.startswith("x")
    return int(Fraction(off[:-1]) * 10**9), Fraction(rate[1:])


def truth(e, off, rate, t0):
    """Real time of faked reading e (exact, rounded to ns)."""
    return round(t0 + (Fraction(e) - t0 - off) / rate)


def faked(t, off, rate, t0):
    return round(t0 + off + rate * (Fraction(t) - t0))


def model(spec, path, t0_only):
    off, rate = parse_spec(spec)
    lines = open(path).read().split("\n")
    start = int(lines[0].split()[1])
    rows = [tuple(map(int, l.split())) for l in lines[1:] if l.strip()]
    if len(rows) < 3:
        fail("probe: %d readings" % len(rows))
        return
    if t0_only:
        t0s = [(f - off - rate * t) / (1 - rate) for t, f, _ in rows]
        lo, hi = float(min(t0s) - start), float(max(t0s) - start)
        print("model %s: implied t0 - start %.3f .. %.3f ms" %
              (spec, lo / 1e6, hi / 1e6))
        if hi - lo > 50000:
            fail("implied t0 varies by %.0f us: not one t0" % ((hi - lo) / 1e3))
        if lo < 0 or hi > 50e6:
            fail("t0 %.3f..%.3f ms after the process start" % (lo / 1e6, hi / 1e6))
        return
    t0 = start + T0_PAD
    err = max(abs(f - faked(t, off, rate, t0)) - b // 2 for t, f, b in rows)
    print("model %s: largest |faked - model| %.1f us over %d readings" %
          (spec, err / 1e3, len(rows)))
    if err > 100000:
        fail("model %s: faked clock %.1f us off the model" % (spec, err / 1e3))


def series(grp, prefix=""):
    for k, v in grp.items():
        if k in ("Totals", "ClockOffsets"):
            continue
        if isinstance(v, h5py.Group):
            yield from series(v, prefix + k + "/")
        elif v.dtype.names and "EpochTimeNs" in v.dtype.names:
            yield prefix + k


def job(sync_path, none_path, specs):
    fs = h5py.File(sync_path, "r")
    fn = h5py.File(none_path, "r")
    step = "0"
    for arg in specs:
        node, rest = arg.split("=")
        off_s, rate_s, t0_s = rest.split(",")
        off, rate, t0 = int(off_s), Fraction(rate_s), int(t0_s) + SLURMD_PAD
        gs = fs["Steps/%s/Nodes/%s" % (step, node)]
        gn = fn["Steps/%s/Nodes/%s" % (step, node)]
        worst_sync = 0
        worst_skew = 0
        worst_raw = 0
        n = 0
        for p in series(gs):
            a = gs[p][()]
            b = gn[p][()]
            e = [int(x) for x in a["EpochTimeNs"]]
            if [int(x) for x in b["EpochTimeNs"]] != e:
                fail("%s %s: EpochTimeNs differs between the job files" % (node, p))
            if "SyncTimeNs" not in a.dtype.names:
                fail("%s %s: no SyncTimeNs" % (node, p))
                continue
            if "SyncTimeNs" in b.dtype.names:
                fail("%s %s: SyncTimeNs with --sync none" % (node, p))
            for k, ek in enumerate(e):
                tr = truth(ek, off, rate, t0)
                d = int(a["SyncTimeNs"][k]) - tr
                worst_sync = max(worst_sync, abs(d))
                raw = ek - tr
                worst_raw = max(worst_raw, abs(raw))
                skew = off + (rate - 1) * (tr - t0)
                worst_skew = max(worst_skew, abs(raw - skew))
                n += 1
        if not n:
            fail("%s: no samples" % node)
            continue
        if rate != 1:
            # diagnostic: the t0 the corrected times imply
            t0s = sorted((Fraction(int(x)) - off - rate * int(y)) / (1 - rate)
                         for p in series(gs)
                         for x, y in zip(gs[p][()]["EpochTimeNs"],
                                         gs[p][()]["SyncTimeNs"]))
            print("%s: t0 implied by SyncTimeNs - t0 estimated: %.1f ms" %
                  (node, float(t0s[len(t0s) // 2] - t0) / 1e6))
        meas = int(gs.attrs["Sync Measurements"])
        drift = float(gs.attrs.get("Sync Drift ppm", float("nan")))
        want_drift = float((1 / rate - 1) * 10**6)
        print("%s: off %+.3f s rate %s: %d samples, |SyncTimeNs - truth| <= "
              "%.3f ms, |EpochTimeNs - truth| <= %.6f s (skew model to %.3f "
              "ms), %d measurements, drift %.1f ppm (want %.1f), error "
              "bound %.3f ms" % (node, off / 1e9, rate, n, worst_sync / 1e6,
                                 worst_raw / 1e9, worst_skew / 1e6, meas,
                                 drift, want_drift,
                                 int(gs.attrs["Sync Error Bound ns"]) / 1e6))
        if worst_sync >= 1000000:
            fail("%s: SyncTimeNs %.3f ms from the truth" % (node, worst_sync / 1e6))
        if worst_skew >= 1000000:
            fail("%s: unsynchronized error differs from the injected skew "
                 "by %.3f ms" % (node, worst_skew / 1e6))
        if off and worst_raw < abs(off) // 2:
            fail("%s: without sync only %.3f s off" % (node, worst_raw / 1e9))
        if meas < 3:
            fail("%s: %d clock measurements (start, periodic, end)" % (node, meas))
        if not abs(drift - want_drift) <= 50:
            fail("%s: drift %.1f ppm, want %.1f" % (node, drift, want_drift))
        if str(gs.attrs["Sync Method"].decode()
               if isinstance(gs.attrs["Sync Method"], bytes)
               else gs.attrs["Sync Method"]) != "offset":
            fail("%s: Sync Method" % node)


def main():
    a = sys.argv[1:]
    if a and a[0] == "model" and len(a) in (3, 4):
        model(a[1], a[2], len(a) == 4 and a[3] == "--t0-only")
    elif a and a[0] == "job" and len(a) >= 4:
        job(a[1], a[2], a[3:])
    else:
        sys.exit(__doc__)
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
