#!/usr/bin/python3
"""sync_check.py - independent checks of `sh5merge sync` output.

Usage:
  sync_check.py same IN OUT            every line equal except event times
  sync_check.py offset IN OUT          OUT is exactly IN's offset
                                       interpolation (own implementation)
  sync_check.py violations OUT [--mu-inter N --mu-intra N]
                                       print p2p and collective violations
                                       (contract semantics); exit 1 if any
  sync_check.py order IN OUT           local order kept (non-decreasing,
                                       strict where the input is strict)
  sync_check.py truth OUT TRUTH        print min and max of OUT - TRUTH

Written apart from the C code (plain Python, exact integer/Fraction
arithmetic) so that the tool is checked against a second reading of the
contract, not against itself.
"""
import sys
from fractions import Fraction

ROOTED_1TON = {"BCAST", "SCATTER"}
ROOTED_NTO1 = {"GATHER", "REDUCE"}


def read(path):
    with open(path, newline="") as f:
        return f.read().split("\n")


def parse(lines):
    """Events (file order) and directives."""
    ev, comms, nodes, mu = [], {}, {}, {}
    for no, line in enumerate(lines, 1):
        s = line.rstrip("\r")
        if not s.strip():
            continue
        if s.startswith("#"):
            w = s.split()
            if w[0] == "#comm":
                comms[int(w[1])] = [int(x) for x in w[2:]]
            elif w[0] == "#node":
                for x in w[2:]:
                    nodes[int(x)] = w[1]
            elif w[0] in ("#mu", "#mu-intra"):
                mu[w[0]] = int(w[1])
            continue
        f = s.split(",")
        assert len(f) == 8, (no, s)
        ev.append(dict(line=no, loc=int(f[0]), t=int(f[1]), kind=f[2],
                       peer=f[3], tag=f[4], comm=f[5], root=f[6]))
    return ev, comms, nodes, mu


def cmd_same(a, b):
    la, lb = read(a), read(b)
    if len(la) != len(lb):
        sys.exit("line count differs: %d vs %d" % (len(la), len(lb)))
    for no, (x, y) in enumerate(zip(la, lb), 1):
        if x == y:
            continue
        fx, fy = x.split(","), y.split(",")
        if (x.startswith("#") or len(fx) != 8 or len(fy) != 8 or
                fx[2] == "OFFSET" or fx[:1] + fx[2:] != fy[:1] + fy[2:]):
            sys.exit("line %d differs beyond the time: %r vs %r"
                     % (no, x, y))
    print("same: ok, %d lines" % len(la))


def rnd(q):
    """Round a Fraction to the nearest integer, halves away from zero."""
    n, d = q.numerator, q.denominator
    a = abs(n)
    r = (2 * a + d) // (2 * d)
    return r if n >= 0 else -r


def offmap(pts, t):
    if not pts:
        return t
    if len(pts) == 1 or all(p[0] == pts[0][0] for p in pts):
        return t + pts[-1][1]
    # last index with local <= t
    a = -1
    for i, p in enumerate(pts):
        if p[0] <= t:
            a = i
    if a < 0:
        a = max(i for i, p in enumerate(pts) if p[0] == pts[0][0])
    if a + 1 < len(pts):
        pa, pb = pts[a], pts[a + 1]
    else:
        pb = pts[-1]
        pa = [p for p in pts if p[0] < pb[0]][-1]
    q = Fraction((pb[1] - pa[1]) * (t - pa[0]), pb[0] - pa[0])
    return t + pa[1] + rnd(q)


def cmd_offset(a, b):
    ia, ib = parse(read(a))[0], parse(read(b))[0]
    pts = {}
    for e in ia:
        if e["kind"] == "OFFSET":
            pts.setdefault(e["loc"], []).append((e["t"], int(e["peer"])))
    bad = 0
    for x, y in zip(ia, ib):
        want = x["t"] if x["kind"] == "OFFSET" else offmap(
            pts.get(x["loc"], []), x["t"])
        if y["t"] != want:
            bad += 1
            if bad < 5:
                print("line %d: got %d, want %d" % (x["line"], y["t"], want))
    if bad:
        sys.exit("offset: %d events differ" % bad)
    print("offset: ok, %d lines exact" % len(ia))


def violations(ev, comms, nodes, mu_inter, mu_intra):
    def mu(a, b):
        na, nb = nodes.get(a, ("own", a)), nodes.get(b, ("own", b))
        return mu_intra if na == nb else mu_inter

    ev = [e for e in ev if e["kind"] != "OFFSET"]
    sends, p2p = {}, 0
    for e in ev:
        if e["kind"] == "SEND":
            k = (e["loc"], int(e["peer"]), e["tag"], e["comm"])
            sends.setdefault(k, []).append(e)
    used = {}
    for e in ev:
        if e["kind"] == "RECV":
            k = (int(e["peer"]), e["loc"], e["tag"], e["comm"])
            i = used.get(k, 0)
            used[k] = i + 1
            s = sends[k][i]
            if e["t"] < s["t"] + mu(s["loc"], e["loc"]):
                p2p += 1
    locs = sorted({e["loc"] for e in ev})
    seq = {}
    for e in ev:
        if e["kind"] in ("CBEGIN", "CEND"):
            seq.setdefault((int(e["comm"]), e["loc"]), []).append(e)
    coll = 0
    for c in {k[0] for k in seq}:
        mem = comms.get(c, locs if c == 0 else None)
        n = len(seq[(c, mem[0])]) // 2
        for k in range(n):
            b = [seq[(c, m)][2 * k] for m in mem]
            e = [seq[(c, m)][2 * k + 1] for m in mem]
            op = b[0]["peer"]
            root = mem.index(int(b[0]["root"])) if b[0]["root"] else None
            for i in range(len(mem)):
                if op in ROOTED_1TON:
                    deps = [] if i == root else [root]
                elif op in ROOTED_NTO1:
                    deps = range(len(mem)) if i == root else []
                elif op == "SCAN":
                    deps = range(i + 1)
                elif op == "EXSCAN":
                    deps = range(i)
                else:
                    deps = range(len(mem))
                if any(e[i]["t"] < b[j]["t"] + mu(mem[j], mem[i])
                       for j in deps):
                    coll += 1
    return p2p, coll


def cmd_violations(path, args):
    ev, comms, nodes, mu = parse(read(path))
    mu_inter = mu.get("#mu", 0)
    mu_intra = mu.get("#mu-intra", 0)
    if "--mu-inter" in args:
        mu_inter = int(args[args.index("--mu-inter") + 1])
    if "--mu-intra" in args:
        mu_intra = int(args[args.index("--mu-intra") + 1])
    p2p, coll = violations(ev, comms, nodes, mu_inter, mu_intra)
    print("violations: p2p %d collective %d (mu inter %d intra %d)"
          % (p2p, coll, mu_inter, mu_intra))
    if p2p or coll:
        sys.exit(1)


def cmd_order(a, b):
    ia, ib = parse(read(a))[0], parse(read(b))[0]
    last = {}
    bad = 0
    for x, y in zip(ia, ib):
        if x["kind"] == "OFFSET":
            continue
        if x["loc"] in last:
            px, py = last[x["loc"]]
            if y["t"] < py or (x["t"] > px and y["t"] <= py):
                bad += 1
                if bad < 5:
                    print("line %d: local order broken" % x["line"])
        last[x["loc"]] = (x["t"], y["t"])
    if bad:
        sys.exit("order: %d events out of local order" % bad)
    print("order: ok")


def cmd_truth(out, truth):
    ev = [e for e in parse(read(out))[0] if e["kind"] != "OFFSET"]
    with open(truth) as f:
        tt = [int(x) for x in f.read().split()]
    assert len(tt) == len(ev), (len(tt), len(ev))
    d = [e["t"] - t for e, t in zip(ev, tt)]
    print("%d %d" % (min(d), max(d)))


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == "same":
        cmd_same(a[1], a[2])
    elif a[0] == "offset":
        cmd_offset(a[1], a[2])
    elif a[0] == "violations":
        cmd_violations(a[1], a[2:])
    elif a[0] == "order":
        cmd_order(a[1], a[2])
    elif a[0] == "truth":
        cmd_truth(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
