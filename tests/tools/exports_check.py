#!/usr/bin/python3
"""Check sh5merge lbdata / counters output against an independent
computation from the job file with h5py and numpy.

  exports_check.py lbdata JOB.h5 DIR PHASE_LENGTH [SUMMARY.txt] [--stem S]
  exports_check.py counters JOB.h5 STATS.json SIGMA [SUMMARY.txt]

Exit 0 when every value matches, 1 with a message otherwise.
"""
import json
import math
import os
import re
import sys

import h5py
import numpy as np

TIME_MEMBERS = ("ElapsedTime", "EpochTime", "EpochTimeNs", "SyncTimeNs")
RUNSTATS_KEYS = ["count", "accumulate", "minimum", "maximum", "mean",
                 "stddev", "skewness", "kurtosis"]
FAILS = []


def fail(msg):
    FAILS.append(msg)
    if len(FAILS) < 20:
        print("FAIL:", msg, file=sys.stderr)


def close(got, want, rel=1e-9, what=""):
    if not (abs(got - want) <= rel * max(1.0, abs(want))):
        fail("%s: got %r want %r" % (what, got, want))


def times_ns(a):
    names = a.dtype.names
    if "SyncTimeNs" in names:
        return a["SyncTimeNs"].astype(np.int64)
    if "EpochTimeNs" in names:
        return a["EpochTimeNs"].astype(np.int64)
    return a["EpochTime"].astype(np.int64) * 1000000000


def attr_str(v):
    """An attribute as text: first element of an array, bytes decoded."""
    if isinstance(v, np.ndarray):
        v = v.flat[0]
    if isinstance(v, bytes):
        v = v.decode()
    return str(v)


def step_names(f):
    def key(s):
        return (0, int(s), "") if s.isdigit() else (1, 0, s)
    return sorted(f["Steps"].keys(), key=key)


def nodes_of(f, step):
    nodes = []
    for g, grp in f["Steps/%s/Nodes" % step].items():
        idx = int(np.asarray(grp.attrs["Node Index"]).flat[0]) \
            if "Node Index" in grp.attrs else None
        name = attr_str(grp.attrs.get("Node Name", g))
        nodes.append((idx, g, name, grp))
    nodes.sort(key=lambda n: (n[0] is None, n[0] if n[0] is not None else 0, n[1]))
    return [(i if idx is None else idx, g, name, grp)
            for i, (idx, g, name, grp) in enumerate(nodes)]


def runstats(x):
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return dict(count=0.0, accumulate=0.0, minimum=0.0, maximum=0.0,
                    mean=0.0, stddev=0.0, skewness=0.0, kurtosis=0.0)
    mean = x.mean()
    d = x - mean
    m2, m3, m4 = (d ** 2).sum(), (d ** 3).sum(), (d ** 4).sum()
    flat = n < 2 or m2 <= 0 or m2 <= 1e-28 * n * mean * mean
    return dict(count=float(n), accumulate=float(x.sum()),
                minimum=float(x.min()), maximum=float(x.max()),
                mean=float(mean),
                stddev=float(math.sqrt(m2 / (n - 1))) if n > 1 else 0.0,
                skewness=0.0 if flat else float(math.sqrt(n) * m3 / m2 ** 1.5),
                kurtosis=0.0 if flat else float(n * m4 / (m2 * m2) - 3))


def check_runstats(got, want, what, rel=1e-9):
    if list(got.keys()) != RUNSTATS_KEYS:
        fail("%s: keys %s" % (what, list(got.keys())))
        return
    for k in RUNSTATS_KEYS:
        if type(got[k]) is not float:
            fail("%s.%s is %s, not a JSON float" % (what, k, type(got[k]).__name__))
        tol = rel
        if k in ("skewness", "kurtosis"):
            tol = 1e-6
        close(got[k], want[k], tol, "%s.%s" % (what, k))


# ------------------------------------------------------------ lbdata

def phase_of(t, t0, L, n):
    off = t - t0
    if off <= 0:
        return 0
    return min((off - 1) // L, n - 1)


def expected_lbdata(f, step, phase_length):
    tasks = {}
    nodes = nodes_of(f, step)
    for idx, g, name, grp in nodes:
        if "Tasks" not in grp:
            continue
        ids = sorted(grp["Tasks"].keys(), key=int)
        for lr, tid in enumerate(ids):
            a = grp["Tasks"][tid][()]
            tasks[int(tid)] = dict(a=a, t=times_ns(a), node=idx,
                                   node_name=name, local=lr,
                                   size=len(ids))
    t0 = min(int(v["t"][0]) for v in tasks.values() if len(v["t"]))
    tend = max(int(v["t"][-1]) for v in tasks.values() if len(v["t"]))
    L = int(round(phase_length * 1e9)) if phase_length > 0 else max(tend - t0, 1000000000)
    n = (tend - t0 - 1) // L + 1 if tend > t0 else 1
    for tid, v in tasks.items():
        acc = [dict(cpu=0.0, read=0.0, write=0.0, rss=0.0, vm=0.0,
                    util=0.0, n=0) for _ in range(n)]
        a, t = v["a"], v["t"]
        for i in range(len(t)):
            b = int(t[i])
            prev = int(t[i - 1]) if i else b
            for fld, key in (("CPUTime", "cpu"), ("ReadMB", "read"),
                             ("WriteMB", "write")):
                d = float(a[fld][i])
                if b <= prev:
                    acc[phase_of(b, t0, L, n)][key] += d
                    continue
                ka, kb = phase_of(prev + 1, t0, L, n), phase_of(b, t0, L, n)
                for k in range(ka, kb + 1):
                    lo = prev if k == ka else t0 + k * L
                    hi = b if k == kb else t0 + (k + 1) * L
                    if hi > lo:
                        acc[k][key] += d * (hi - lo) / (b - prev)
            p = acc[phase_of(b, t0, L, n)]
            p["rss"] = max(p["rss"], float(a["RSS"][i]))
            p["vm"] = max(p["vm"], float(a["VMSize"][i]))
            p["util"] += float(a["CPUUtilization"][i])
            p["n"] += 1
        v["acc"] = acc
    return tasks, nodes, t0, L, n


def is_json_float(v):
    return type(v) is float


def check_lbdata(job, outdir, phase_length, summary, stem):
    with h5py.File(job, "r") as f:
        step = step_names(f)[0]
        tasks, nodes, t0, L, n = expected_lbdata(f, step, phase_length)
    maxrank = max(tasks)
    files = sorted(os.listdir(outdir))
    want = sorted("%s.%d.json" % (stem, r) for r in range(maxrank + 1))
    if files != want:
        fail("files %s, want %s" % (files, want))
    seqs = set()
    for r in range(maxrank + 1):
        with open(os.path.join(outdir, "%s.%d.json" % (stem, r))) as fp:
            d = json.load(fp)
        if d.get("type") != "LBDatafile" or d["metadata"].get("type") != "LBDatafile":
            fail("rank %d: type" % r)
        md = d["metadata"]
        if md["rank"] != r:
            fail("rank %d: metadata.rank %r" % (r, md["rank"]))
        ph = md["phases"]
        if ph["count"] != n or ph["skipped"] != {"list": [], "range": []} or \
                ph["identical_to_previous"] != {"list": [], "range": []}:
            fail("rank %d: metadata.phases %r" % (r, ph))
        if [p["id"] for p in d["phases"]] != list(range(n)):
            fail("rank %d: phase ids %r" % (r, [p["id"] for p in d["phases"]]))
        if r not in tasks:
            if "shared_node" in md or any(p["tasks"] for p in d["phases"]):
                fail("rank %d (no data): must have empty tasks, no shared_node" % r)
            continue
        v = tasks[r]
        sn = md["shared_node"]
        if sn != {"id": v["node"], "size": v["size"], "rank": v["local"],
                  "num_nodes": len(nodes)}:
            fail("rank %d: shared_node %r" % (r, sn))
        for k, p in enumerate(d["phases"]):
            close(p["user_defined"]["start_time"], (t0 + k * L) / 1e9, 1e-15,
                  "rank %d phase %d start" % (r, k))
            if len(p["tasks"]) != 1:
                fail("rank %d phase %d: %d tasks" % (r, k, len(p["tasks"])))
                continue
            t = p["tasks"][0]
            e = t["entity"]
            if e != {"type": "object", "seq_id": r, "collection_id": 1,
                     "home": v["node"], "migratable": True}:
                fail("rank %d: entity %r" % (r, e))
            seqs.add(e["seq_id"])
            if t["node"] != v["node"] or t["resource"] != "cpu":
                fail("rank %d: node/resource" % r)
            if not is_json_float(t["time"]):
                fail("rank %d phase %d: time %r not float" % (r, k, t["time"]))
            a = v["acc"][k]
            close(t["time"], a["cpu"], 1e-9, "rank %d phase %d time" % (r, k))
            u = t["user_defined"]
            for key, val in (("read_mb", a["read"]), ("write_mb", a["write"]),
                             ("rss_max_kib", a["rss"]), ("vmsize_max_kib", a["vm"]),
                             ("task_footprint_bytes", a["rss"] * 1024),
                             ("cpu_utilization_mean", a["util"] / a["n"] if a["n"] else 0.0)):
                if not is_json_float(u[key]):
                    fail("rank %d: %s not float" % (r, key))
                close(u[key], val, 1e-9, "rank %d phase %d %s" % (r, k, key))
            if u["samples"] != a["n"]:
                fail("rank %d phase %d samples %r != %r" % (r, k, u["samples"], a["n"]))
    # total CPU time is conserved by the phase split
    for r, v in tasks.items():
        close(sum(p["cpu"] for p in v["acc"]), float(v["a"]["CPUTime"].sum()),
              1e-9, "rank %d total cpu" % r)
    if summary:
        rows = {}
        with open(summary) as fp:
            for line in fp:
                m = re.match(r"^(\d+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.-]+)\s+(\d+)"
                             r"\s+([\d.]+)\s+([\d.]+)\s+([\d.-]+)\s+(\S+)\((\d+)\)$",
                             line.strip())
                if m:
                    rows[int(m.group(1))] = m.groups()
        if sorted(rows) != list(range(n)):
            fail("summary phases %r" % sorted(rows))
        for k in range(n):
            if k not in rows:
                continue
            loads = {r: tasks[r]["acc"][k]["cpu"] for r in tasks}
            rmax = max(loads.values())
            ravg = sum(loads.values()) / (maxrank + 1)
            nl = {}
            for r, v in tasks.items():
                nl[v["node"]] = nl.get(v["node"], 0.0) + loads[r]
            nmax = max(nl.values())
            navg = sum(nl.values()) / len(nodes)
            g = rows[k]
            close(float(g[1]), rmax, 0.0006, "summary phase %d rank max" % k)
            close(float(g[2]), ravg, 0.0006, "summary phase %d rank avg" % k)
            close(float(g[3]), rmax / ravg - 1, 0.0006, "summary imbalance %d" % k)
            if int(g[4]) != max(loads, key=lambda r: (loads[r], -r)):
                fail("summary phase %d slowest rank %s" % (k, g[4]))
            close(float(g[5]), nmax, 0.0006, "summary phase %d node max" % k)
            close(float(g[6]), navg, 0.0006, "summary phase %d node avg" % k)
            if int(g[9]) != max(nl, key=lambda i: (nl[i], -i)):
                fail("summary phase %d slowest node %s" % (k, g[9]))


# ------------------------------------------------------------ counters

def series_of(f, step):
    """(key, rank, series name, node index, data) in the walker's order."""
    out = []
    for idx, g, name, grp in nodes_of(f, step):
        if "Tasks" in grp:
            for tid in sorted(grp["Tasks"].keys(), key=int):
                out.append(("%s:%s" % (name, tid), int(tid), "Task",
                            grp["Tasks"][tid][()]))
        for ds in sorted(grp.keys()):
            obj = grp[ds]
            if ds == "ClockOffsets" or not isinstance(obj, h5py.Dataset):
                continue
            out.append(("%s:%s" % (name, ds), idx, ds, obj[()]))
    return out


def fields_of(a):
    return [n for n in a.dtype.names if n not in TIME_MEMBERS and
            a.dtype[n].kind in "uif"]


def check_counters(job, out, sigma, summary):
    with open(out) as fp:
        d = json.load(fp)
    if list(d.keys()) != ["version", "created_at", "counter_stats", "anomaly_stats"]:
        fail("top keys %r" % list(d.keys()))
    if d["version"] != 2 or type(d["created_at"]) is not int:
        fail("version/created_at")
    got_stats = {(c["app"], c["counter"]): c["stats"] for c in d["counter_stats"]}
    if len(got_stats) != len(d["counter_stats"]):
        fail("duplicate counter_stats entries")
    got_anom = {}
    for e in d["anomaly_stats"]["anomaly"]:
        if not e["data"]:
            fail("anomaly entry %s without data" % e["key"])
            continue
        got_anom[(e["data"][0]["app"], e["key"])] = e
    if d["anomaly_stats"]["func"] != [] or type(d["anomaly_stats"]["created_at"]) is not int:
        fail("anomaly_stats func/created_at")
    want_stats = {}
    want_anom = {}
    total = 0
    top = []
    with h5py.File(job, "r") as f:
        job_id = attr_str(f.attrs.get("Job ID", ""))
        for step in step_names(f):
            app = "%s.%s" % (job_id, step) if str(job_id) else step
            ser = series_of(f, step)
            values = {}
            for key, rank, sname, a in ser:
                for fld in fields_of(a):
                    values.setdefault("%s.%s" % (sname, fld), []).append(
                        a[fld].astype(np.float64))
            models = {}
            for c, parts in values.items():
                models[c] = runstats(np.concatenate(parts))
                want_stats[(app, c)] = models[c]
            for key, rank, sname, a in ser:
                t = times_ns(a)
                flds = fields_of(a)
                per_row = np.zeros(len(a), dtype=np.int64)
                scores = [[] for _ in range(len(a))]
                for fld in flds:
                    m = models["%s.%s" % (sname, fld)]
                    if m["count"] < 2 or m["stddev"] <= 0:
                        continue
                    x = a[fld].astype(np.float64)
                    dev = np.abs(x - m["mean"])
                    hit = dev > sigma * m["stddev"]
                    for i in np.nonzero(hit)[0]:
                        per_row[i] += 1
                        scores[i].append(dev[i] / m["stddev"])
                        top.append((dev[i] / m["stddev"], "%s.%s" % (sname, fld),
                                    key, float(x[i])))
                if per_row.sum() == 0:
                    continue
                total += int(per_row.sum())
                data = []
                for i in np.nonzero(per_row)[0]:
                    data.append(dict(app=app, rank=rank, step=int(i),
                                     min_timestamp=int(t[i - 1] if i else t[i]) // 1000,
                                     max_timestamp=int(t[i]) // 1000,
                                     n_anomalies=int(per_row[i]),
                                     scores=runstats(scores[i])))
                want_anom[(app, key)] = dict(data=data, stats=runstats(per_row))
    if set(got_stats) != set(want_stats):
        fail("counters %r vs %r" % (sorted(got_stats), sorted(want_stats)))
    for k in want_stats:
        if k in got_stats:
            check_runstats(got_stats[k], want_stats[k], "%s %s" % k)
    if set(got_anom) != set(want_anom):
        fail("anomaly keys %r vs %r" % (sorted(got_anom), sorted(want_anom)))
    for k, w in want_anom.items():
        if k not in got_anom:
            continue
        g = got_anom[k]
        if list(g.keys()) != ["key", "data", "stats"]:
            fail("entry keys %r" % list(g.keys()))
        check_runstats(g["stats"], w["stats"], "%s %s stats" % k)
        if len(g["data"]) != len(w["data"]):
            fail("%s %s: %d data, want %d" % (k + (len(g["data"]), len(w["data"]))))
            continue
        for gd, wd in zip(g["data"], w["data"]):
            for f_ in ("app", "rank", "step", "min_timestamp", "max_timestamp",
                       "n_anomalies"):
                if gd[f_] != wd[f_]:
                    fail("%s %s: %s %r != %r" % (k + (f_, gd[f_], wd[f_])))
            check_runstats(gd["outlier_scores"], wd["scores"], "%s %s scores" % k, 1e-7)
    if summary:
        with open(summary) as fp:
            text = fp.read()
        m = re.search(r"counters: (\d+) anomalies beyond", text)
        if not m or int(m.group(1)) != total:
            fail("summary anomaly count %r, want %d" % (m and m.group(1), total))
        top.sort(key=lambda x: -x[0])
        lines = [l for l in text.splitlines() if re.match(r"^\d{4}-\d\d-\d\dT", l)]
        if len(lines) != min(10, len(top)):
            fail("summary lists %d anomalies, want %d" % (len(lines), min(10, len(top))))
        for l, w in zip(lines, top):
            parts = l.split()
            close(float(parts[-1]), w[0], 0.006, "top score")
            if parts[-3] != w[1]:
                fail("top counter %s != %s" % (parts[-3], w[1]))
    return total


def main():
    args = sys.argv[1:]
    stem = "data"
    if "--stem" in args:
        i = args.index("--stem")
        stem = args[i + 1]
        del args[i:i + 2]
    if args[0] == "lbdata":
        check_lbdata(args[1], args[2], float(args[3]),
                     args[4] if len(args) > 4 else None, stem)
    elif args[0] == "counters":
        total = check_counters(args[1], args[2], float(args[3]),
                               args[4] if len(args) > 4 else None)
        print("anomalies:", total)
    else:
        sys.exit("usage")
    if FAILS:
        print("%d mismatches" % len(FAILS), file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
