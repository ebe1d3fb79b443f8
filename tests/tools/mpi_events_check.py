#!/usr/bin/python3
"""mpi_events_check.py - checks of a real MPI job's events against what
the program says it did (tests/tools/sh5_mpitest -j TRUTH.json).

Usage:
  mpi_events_check.py csv RAW.csv CORR.csv TRUTH.json [--skew S]
                        [--clock NODE=OFF_NS,RATE,T0_NS ...]
      RAW and CORR (sh5merge events --raw / without) differ in event times
      only; every SEND is matched by its RECV (MPI's non-overtaking rule);
      messages and bytes per (from, to) equal the program's; collective
      calls per operation and rank equal the program's; after the
      correction no clock-condition violation is left and local order is
      kept.  The correction is checked against the real time of every
      event: without --clock the nodes run on the real clock (a corrected
      time is within 1 ms of the raw one); with --clock (node index of the
      #node lines = libfaketime's model of that node's clock, faked(t) =
      t0 + off + rate (t - t0); unlisted nodes are real) every corrected
      time is within 1 ms of real time, and the corrected ends of every
      MPI_COMM_WORLD barrier lie as far apart as their real ends, to 1 ms
      (so within 1 ms of each other where the real ends are).  With --skew
      S (seconds, the largest difference between the nodes' clocks): the
      raw file has violations and the raw barrier ends spread over S
      within 10 %.
  mpi_events_check.py lbdata DIR TRUTH.json
      the rank files data.<rank>.json hold the same phases; their SendRecv
      communications carry exactly the program's messages and bytes per
      (from, to) pair and phase.
  mpi_events_check.py counters STATS.json TRUTH.json
      per-MPI-call statistics: MPI.MPI_<Op> counts equal the program's
      calls of each collective, summed over ranks.

Locations are Slurm task ids; under srun they equal MPI_COMM_WORLD ranks.
"""
import json
import os
import sys
from collections import defaultdict, deque
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sync_check  # noqa: E402  (the contract's reading of the CSV)

OPS = ["BARRIER", "BCAST", "SCATTER", "GATHER", "REDUCE", "ALLREDUCE",
       "ALLGATHER", "ALLTOALL", "REDUCE_SCATTER", "SCAN", "EXSCAN"]


def fail(msg):
    print("mpi_events_check: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    return sync_check.parse(sync_check.read(path))


def truth_pairs(truth, by_phase):
    out = defaultdict(lambda: [0, 0])
    for m in truth["p2p"]:
        k = (m["from"], m["to"], m["phase"]) if by_phase else \
            (m["from"], m["to"])
        out[k][0] += m["messages"]
        out[k][1] += m["bytes"]
    return out


def bytes_of(path):
    """SEND/RECV bytes per line (sync_check's parse keeps no bytes)."""
    b = {}
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            x = line.rstrip("\n").split(",")
            if x[2] in ("SEND", "RECV"):
                b[no] = int(x[7])
    return b


def match(ev, nbytes):
    """Pairs (send, recv) by channel, FIFO; unmatched lists."""
    sends = defaultdict(deque)
    pairs, unmatched = [], []
    for e in ev:
        if e["kind"] == "SEND":
            sends[(e["loc"], int(e["peer"]), e["tag"], e["comm"])].append(e)
    for e in ev:
        if e["kind"] != "RECV":
            continue
        q = sends[(int(e["peer"]), e["loc"], e["tag"], e["comm"])]
        if not q:
            unmatched.append(e)
            continue
        s = q.popleft()
        if nbytes[s["line"]] != nbytes[e["line"]]:
            fail("line %d: SEND of %d bytes received as %d (line %d)" %
                 (s["line"], nbytes[s["line"]], nbytes[e["line"]],
                  e["line"]))
        pairs.append((s, e))
    for q in sends.values():
        unmatched.extend(q)
    return pairs, unmatched


def barrier_ends(ev):
    """World barrier instances: list of {loc: CEND time}."""
    n = defaultdict(int)
    inst = defaultdict(dict)
    for e in ev:
        if e["kind"] == "CEND" and e["peer"] == "BARRIER" and \
                e["comm"] == "0":
            inst[n[e["loc"]]][e["loc"]] = e["t"]
            n[e["loc"]] += 1
    return [inst[i] for i in sorted(inst)]


def real_time(e, model):
    """Real time of raw time e on a clock faked by (off, rate, t0)."""
    if model is None:
        return e
    off, rate, t0 = model
    return round(t0 + (Fraction(e) - t0 - off) / rate)


def cmd_csv(raw, corr, truthf, skew, clocks):
    truth = json.load(open(truthf))
    sync_check.cmd_same(raw, corr)  # exits when they differ beyond times
    ev, comms, nodes, _ = load(raw)
    cev, _, _, _ = load(corr)
    nbytes = bytes_of(raw)
    pairs, unmatched = match(ev, nbytes)
    if unmatched:
        fail("%d unmatched SEND/RECV, first at line %d" %
             (len(unmatched), unmatched[0]["line"]))
    if not pairs:
        fail("no point-to-point message in %s" % raw)
    got = defaultdict(lambda: [0, 0])
    for s, _ in pairs:
        k = (s["loc"], int(s["peer"]))
        got[k][0] += 1
        got[k][1] += nbytes[s["line"]]
    want = truth_pairs(truth, False)
    if dict(got) != dict(want):
        fail("messages per (from, to) differ: events %s, program %s" %
             (sorted(got.items())[:6], sorted(want.items())[:6]))
    calls = defaultdict(lambda: defaultdict(int))
    for e in ev:
        if e["kind"] == "CBEGIN":
            calls[e["peer"]][e["loc"]] += 1
    for i, op in enumerate(OPS):
        w = truth["collectives"][op.lower()]
        g = [calls[op][r] for r in range(len(w))]
        if g != w:
            fail("%s calls per rank: events %s, program %s" % (op, g, w))
    # Clock condition, local order, barriers.
    rp, rc = sync_check.violations(ev, comms, nodes, 0, 0)
    cp, cc = sync_check.violations(cev, comms, nodes, 0, 0)
    print("violations raw: %d p2p, %d collective; corrected: %d, %d" %
          (rp, rc, cp, cc))
    if cp or cc:
        fail("%d + %d violations left after the correction" % (cp, cc))
    for a, b in zip(ev, cev):
        a["ct"] = b["t"]
    last = {}
    for e in ev:
        if e["kind"] == "OFFSET":
            continue
        p = last.get(e["loc"])
        if p is not None:
            if e["ct"] < p["ct"] or (e["t"] > p["t"] and e["ct"] <= p["ct"]):
                fail("local order of location %d broken at line %d" %
                     (e["loc"], e["line"]))
        last[e["loc"]] = e
    # Every event against its real time.
    worst = (0, None)
    for e in ev:
        if e["kind"] == "OFFSET":
            continue
        node = int(nodes.get(e["loc"], -1))
        e["real"] = real_time(e["t"], clocks.get(node))
        d = abs(e["ct"] - e["real"])
        if d > worst[0]:
            worst = (d, e)
    print("corrected - real: at most %.3f ms (line %s)" %
          (worst[0] / 1e6, worst[1]["line"] if worst[1] else "-"))
    if worst[0] >= 1000000:
        fail("line %d: corrected time %d ns from the real time" %
             (worst[1]["line"], worst[0]))
    rb, cb = barrier_ends(ev), barrier_ends(cev)
    if not rb:
        fail("no MPI_COMM_WORLD barrier")
    real = {(e["loc"], e["t"]): e["real"] for e in ev if "real" in e}
    cspread = [max(x.values()) - min(x.values()) for x in cb]
    rspread = [max(x.values()) - min(x.values()) for x in rb]
    tspread = [max(real[(l, t)] for l, t in x.items()) -
               min(real[(l, t)] for l, t in x.items()) for x in rb]
    print("barriers: %d; corrected ends spread %.3f to %.3f ms, real ends "
          "%.3f to %.3f ms; raw %.3f to %.3f s" %
          (len(cb), min(cspread) / 1e6, max(cspread) / 1e6,
           min(tspread) / 1e6, max(tspread) / 1e6, min(rspread) / 1e9,
           max(rspread) / 1e9))
    for i, (c, t) in enumerate(zip(cspread, tspread)):
        if abs(c - t) >= 1000000:
            fail("barrier %d: corrected ends %d ns apart, real ends %d ns"
                 % (i, c, t))
    if skew is not None:
        if not rp + rc:
            fail("the raw events show no clock-condition violation")
        lo, hi = 0.9 * skew * 1e9, 1.1 * skew * 1e9
        if not all(lo <= s <= hi for s in rspread):
            fail("raw barrier ends spread %s s, not about the skew %s s" %
                 ([s / 1e9 for s in rspread], skew))
    print("%d messages matched, %d collective calls" %
          (len(pairs), sum(sum(v.values()) for v in calls.values())))


def cmd_lbdata(d, truthf):
    truth = json.load(open(truthf))
    n = truth["world_size"]
    phases = None
    got = defaultdict(lambda: [0, 0.0])
    for r in range(n):
        f = json.load(open(os.path.join(d, "data.%d.json" % r)))
        ids = [p["id"] for p in f["phases"]]
        if phases is None:
            phases = ids
        elif ids != phases:
            fail("rank %d has phases %s, rank 0 %s" % (r, ids, phases))
        for p in f["phases"]:
            tasks = set()
            for t in p["tasks"]:
                e = t["entity"]
                tasks.add(e.get("seq_id", e.get("id")))
            for c in p.get("communications", []):
                if c["type"] != "SendRecv":
                    continue
                for end in ("from", "to"):
                    k = c[end].get("seq_id", c[end].get("id"))
                    if c[end]["type"] == "object" and k not in tasks and \
                            end == "from":
                        fail("rank %d phase %d: sender %s not a task" %
                             (r, p["id"], k))
                k = (c["from"]["seq_id"], c["to"]["seq_id"], p["id"])
                got[k][0] += c["messages"]
                got[k][1] += c["bytes"]
    want = truth_pairs(truth, True)
    if not got:
        fail("no SendRecv communication in %s" % d)
    if {k: [v[0], int(v[1])] for k, v in got.items()} != dict(want):
        fail("communications differ: LBDatafile %s, program %s" %
             (sorted(got.items())[:6], sorted(want.items())[:6]))
    if max(k[2] for k in want) > max(phases):
        fail("program phases up to %d, LBDatafile %s" %
             (max(k[2] for k in want), phases))
    print("lbdata: %d phases, %d (from, to, phase) edges, %d bytes" %
          (len(phases), len(got), int(sum(v[1] for v in got.values()))))


def cmd_counters(path, truthf):
    truth = json.load(open(truthf))
    st = json.load(open(path))
    cs = {c["counter"]: c["stats"] for c in st.get("counter_stats", [])}
    for op in OPS:
        want = sum(truth["collectives"][op.lower()])
        # The program counts MPI_Scatterv among "scatter" and so on.
        name = "MPI.MPI_" + op.capitalize()
        if want == 0:
            continue
        if name not in cs:
            fail("%s: no counter %s (have %s)" %
                 (path, name, sorted(k for k in cs if k.startswith("MPI."))))
        got = sum(int(cs[n]["count"]) for n in (name, name + "v") if n in cs)
        # sh5_mpitest also calls MPI_Barrier once per rank on an
        # intercommunicator: a call (counted here) without a collective
        # event (intercommunicators are not recorded), so not in its
        # report's collectives.
        extra = truth["world_size"] if op == "BARRIER" and \
            truth["world_size"] > 1 else 0
        if got != want + extra:
            fail("%s: %s(v) count %d, program made %d calls" %
                 (path, name, got, want + extra))
    print("counters: %d MPI call counters" %
          len([k for k in cs if k.startswith("MPI.")]))


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "csv":
        skew = float(a[a.index("--skew") + 1]) if "--skew" in a else None
        clocks = {}
        for i, w in enumerate(a):
            if w == "--clock":
                node, spec = a[i + 1].split("=")
                off, rate, t0 = spec.split(",")
                clocks[int(node)] = (int(off), Fraction(rate), int(t0))
        cmd_csv(a[1], a[2], a[3], skew, clocks)
    elif len(a) == 3 and a[0] == "lbdata":
        cmd_lbdata(a[1], a[2])
    elif len(a) == 3 and a[0] == "counters":
        cmd_counters(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
