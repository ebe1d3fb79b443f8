#!/usr/bin/python3
"""Check the exports of a job file with events against the truth written
by events_mkjobfile.py.

  exports_events_check.py lbdata DIR TRUTH.json [--windows]
  exports_events_check.py counters STATS.json TRUTH.json

lbdata: every rank file validates against vt's schema (lbdata_schema.py,
python3-schema); an LBAF-style load (all rank files 0..n-1, the same
phase ids in each, every communication endpoint present as a task of
that phase); communications equal the truth's (per phase, type, from,
to: messages and bytes); phase ids equal the marks; object loads and rank
times equal the declared/computed ones.  With --windows (no marks) only
the schema, the load and the byte totals per type are checked.
counters: every Region./MPI. counter's count and mean equal the truth.
Prints "ok: ..." lines; exits 1 on the first group that fails.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lbdata_schema import LBDatafile_schema  # noqa: E402

fails = 0


def bad(msg):
    global fails
    print("FAIL: " + msg)
    fails += 1


def close(a, b, rel=1e-9, ab=1e-12):
    return math.isclose(a, b, rel_tol=rel, abs_tol=ab)


def load_ranks(d, n):
    """LBAF's way: <stem>.<rank>.json for ranks 0..n-1."""
    files = []
    for r in range(n):
        p = os.path.join(d, "data.%d.json" % r)
        if not os.path.exists(p):
            bad("%s missing" % p)
            continue
        with open(p) as f:
            files.append(json.load(f))
    return files


def seq(e):
    return e.get("seq_id", e.get("id"))


def lbdata(d, truth, windows):
    n = truth["nranks"]
    files = load_ranks(d, n)
    for r, doc in enumerate(files):
        try:
            LBDatafile_schema.validate(doc)
        except Exception as ex:  # schema.SchemaError
            bad("rank %d: schema: %s" % (r, ex))
    if fails:
        return
    print("ok: %d rank files validate against vt's schema" % len(files))
    ids = [[p["id"] for p in doc["phases"]] for doc in files]
    if any(i != ids[0] for i in ids):
        bad("phase ids differ between rank files: %s" % ids)
        return
    if not windows and ids[0] != truth["phases"]:
        bad("phase ids %s, marks give %s" % (ids[0], truth["phases"]))
    print("ok: every rank file holds phases %s" % ids[0])
    # LBAF-style: tasks per phase over all ranks; endpoints present
    tasks = {}
    comms = []
    for r, doc in enumerate(files):
        for p in doc["phases"]:
            for t in p["tasks"]:
                k = (p["id"], seq(t["entity"]))
                if k in tasks:
                    bad("phase %d: entity %s twice" % k)
                tasks[k] = (r, t)
            for c in p.get("communications", []):
                comms.append((p["id"], r, c))
    for ph, r, c in comms:
        for end in ("from", "to"):
            e = c[end]
            if e["type"] == "node":
                continue
            if (ph, seq(e)) not in tasks:
                bad("phase %d: %s endpoint %s of a %s edge (rank file "
                    "%d) is not a task of the phase" %
                    (ph, end, seq(e), c["type"], r))
    if not comms:
        bad("no communications")
    # LBAF (offline_lb_compatible) carries each phase's entities over to
    # the next phase of the same rank file and fails on one that vanished.
    for r, doc in enumerate(files):
        ph = doc["phases"]
        for a, b in zip(ph, ph[1:]):
            gone = {seq(t["entity"]) for t in a["tasks"]} - \
                {seq(t["entity"]) for t in b["tasks"]}
            if gone:
                bad("rank %d: entities %s of phase %d missing from phase "
                    "%d" % (r, sorted(gone)[:5], a["id"], b["id"]))
    if fails:
        return
    print("ok: %d communications, every endpoint a task of its phase, "
          "every entity kept in the later phases" % len(comms))
    # communications against the truth
    got = {}
    for ph, r, c in comms:
        to = c["to"]["id"] if c["to"]["type"] == "node" else seq(c["to"])
        k = (ph, c["type"], seq(c["from"]), to)
        m, b = got.get(k, (0, 0.0))
        got[k] = (m + c["messages"], b + c["bytes"])
    want = {(e["phase"], e["type"], e["frm"], e["to"]):
            (e["messages"], e["bytes"]) for e in truth["edges"]}
    if windows:
        def totals(x):
            s = {}
            for (ph, ty, f, t), (m, b) in x.items():
                s[ty] = s.get(ty, 0.0) + b
            return s
        if totals(got) != totals(want):
            bad("byte totals %s, truth %s" % (totals(got), totals(want)))
        else:
            print("ok: byte totals per type equal the truth: %s" %
                  totals(got))
        return
    if got != want:
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                bad("edge %s: got %s, truth %s" % (k, got.get(k),
                                                   want.get(k)))
    else:
        tot = sum(b for m, b in got.values())
        print("ok: %d edges equal the truth (%g bytes in all)" %
              (len(got), tot))
    # objects
    nobj = 0
    for o in truth["objects"]:
        s = ((o["rank"] + 1) << 32) + o["id"]
        k = (o["phase"], s)
        if k not in tasks:
            bad("object %s not in phase %d" % (o, o["phase"]))
            continue
        r, t = tasks[k]
        if r != o["rank"] or not close(t["time"], o["load"]):
            bad("object %s: rank file %d, time %r" % (o, r, t["time"]))
        nobj += 1
    if nobj == len(truth["objects"]):
        print("ok: %d object loads equal the declared ones" % nobj)
    # rank times
    for key, v in truth["rank_time"].items():
        r, ph = map(int, key.split(":"))
        t = tasks.get((ph, r))
        if not t or not close(t[1]["time"], v, 1e-9, 1e-9):
            bad("rank %d phase %d: time %s, truth %r" %
                (r, ph, t and t[1]["time"], v))
    print("ok: %d rank times (outside MPI minus objects) equal the truth" %
          len(truth["rank_time"]))


def counters(path, truth):
    with open(path) as f:
        doc = json.load(f)
    app = "%s.%s" % (truth["job"], truth["step"])
    got = {c["counter"]: c["stats"] for c in doc.get("counter_stats", [])
           if c["app"] == app}
    for name, w in truth["counters"].items():
        s = got.get(name)
        if not s:
            bad("counter %s missing" % name)
            continue
        if s["count"] != float(w["count"]) or \
                not close(s["mean"], w["mean"], 1e-9, 1e-15):
            bad("%s: count %r mean %r, truth %r %r" %
                (name, s["count"], s["mean"], w["count"], w["mean"]))
    extra = [n for n in got if n.split(".")[0] in ("Region", "MPI") and
             n not in truth["counters"]]
    if extra:
        bad("counters not in the truth: %s" % extra)
    if not fails:
        print("ok: %d region and MPI-call counters: counts and means "
              "equal the truth" % len(truth["counters"]))
    if len(sys.argv) > 4 and sys.argv[4] == "--sigma3":
        n = sum(len(a["data"]) for a in doc["anomaly_stats"]["anomaly"]
                if a["key"].endswith(":regions"))
        if n != truth["anomalies_sigma3"] or n == 0:
            bad("%d call anomalies at 3 sigma, truth %d" %
                (n, truth["anomalies_sigma3"]))
        else:
            print("ok: %d call anomalies at 3 sigma, as the truth" % n)


def main():
    with open(sys.argv[3]) as f:
        truth = json.load(f)
    if sys.argv[1] == "lbdata":
        lbdata(sys.argv[2], truth, "--windows" in sys.argv[4:])
    else:
        counters(sys.argv[2], truth)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
