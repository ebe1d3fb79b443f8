#!/usr/bin/python3
"""Compare the samples of sh5 node-step files with what InfluxDB holds.

    sh5_stream_compare.py INFLUX_BASE_URL DB FILE...

INFLUX_BASE_URL is e.g. http://127.0.0.1:8086 (no auth).  For every series
dataset of every file (/<node>/Tasks/<task>, /<node>/<series>), every
sample must be in InfluxDB: measurement = the dataset's "Series" attribute
(the dataset name for generic series), tags job, step, node (and task for
Tasks), time = EpochTimeNs, and every field with the same value (uint64
values above 2^63-1 are not sent: Slurm's "no value").  The number of
points per series must match too (nothing extra).  Prints a summary; exits
0 when everything matches, 1 otherwise.
"""
import json
import sys
import urllib.parse
import urllib.request

import h5py
import numpy as np

TIME_MEMBERS = ("ElapsedTime", "EpochTime", "EpochTimeNs", "SyncTimeNs")


def query(base, db, q):
    url = "%s/query?%s" % (base, urllib.parse.urlencode(
        {"db": db, "q": q, "epoch": "ns"}))
    with urllib.request.urlopen(url, timeout=30) as r:
        res = json.load(r)["results"][0]
    if "error" in res:
        raise RuntimeError(res["error"])
    return res.get("series", [])


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def step_name(f, node):
    g = f[node]
    return text(g.attrs["Step ID"]), text(g.attrs["Job ID"])


def compare_dataset(base, db, d, series, tags):
    where = " AND ".join("\"%s\" = '%s'" % (k, v) for k, v in tags.items())
    fields = [n for n in d.dtype.names if n not in TIME_MEMBERS]
    rows = query(base, db, 'SELECT * FROM "%s" WHERE %s' % (series, where))
    got = {}
    for s in rows:
        cols = s["columns"]
        for v in s["values"]:
            got[v[0]] = dict(zip(cols, v))
    data = d[...]
    errors = []
    if len(got) != len(data):
        errors.append("%s %s: %d samples in the file, %d in InfluxDB"
                      % (series, tags, len(data), len(got)))
    for rec in data:
        t = int(rec["EpochTimeNs"])
        p = got.get(t)
        if p is None:
            errors.append("%s %s: sample at %d missing" % (series, tags, t))
            continue
        for fld in fields:
            want = rec[fld]
            if d.dtype[fld].kind == "u":
                want = int(want)
                if want > 2**63 - 1:
                    if p.get(fld) is not None:
                        errors.append("%s %s %d: %s sent although 'no value'"
                                      % (series, tags, t, fld))
                    continue
                ok = p.get(fld) == want
            else:
                want = float(want)
                ok = (p.get(fld) is not None and float(p[fld]) == want) or \
                    (np.isnan(want) and p.get(fld) is None)
            if not ok:
                errors.append("%s %s %d: %s = %r in InfluxDB, %r in the file"
                              % (series, tags, t, fld, p.get(fld), want))
    return len(data), errors


def main():
    if len(sys.argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    base, db, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    total, errors = 0, []
    for path in files:
        f = h5py.File(path, "r")
        for node in f:
            if not isinstance(f[node], h5py.Group):
                continue
            step, job = step_name(f, node)
            g = f[node]
            for name in g:
                obj = g[name]
                if isinstance(obj, h5py.Group) and name == "Tasks":
                    for task in obj:
                        n, e = compare_dataset(base, db, obj[task], "Task",
                                               {"job": job, "step": step,
                                                "node": node, "task": task})
                        total += n
                        errors += e
                elif isinstance(obj, h5py.Dataset) and name != "ClockOffsets" \
                        and "Series" in obj.attrs \
                        and obj.dtype.names and "EpochTimeNs" in obj.dtype.names:
                    n, e = compare_dataset(base, db, obj,
                                           text(obj.attrs["Series"]),
                                           {"job": job, "step": step,
                                            "node": node})
                    total += n
                    errors += e
    for e in errors[:20]:
        print("MISMATCH:", e)
    print("compared %d samples of %d file(s): %d mismatches"
          % (total, len(files), len(errors)))
    return 1 if errors or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
