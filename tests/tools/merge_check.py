#!/usr/bin/python3
"""merge_check.py - independent checks of sh5merge's output with h5py.

  merge_check.py job JOBFILE INPUT.h5...      every value, every total,
                                              /Merge, root attributes
  merge_check.py csv JOBFILE CSV SERIES       extract's time series CSV
  merge_check.py field JOBFILE CSV SERIES F [STEP]  extract --field CSV
  merge_check.py totals JOBFILE CSV SERIES    extract --level totals CSV
  merge_check.py sh5util JOBFILE CSV SERIES   sh5util -E Node:TimeSeries CSV
  merge_check.py salvage JOBFILE STEP NODE ORIG  salvaged rows equal ORIG's
  merge_check.py inputs JOBFILE               print /Merge

Exit 0 when everything matches, 1 with the first differences printed.
"""
import csv
import os
import re
import sys
import zlib

import h5py
import numpy as np

DELTA = {
    "Task": {"CPUTime", "ReadMB", "WriteMB"},
    "Energy": set(),
    "Filesystem": {"Reads", "ReadMB", "Writes", "WriteMB"},
    "Network": {"PacketsIn", "PacketsOut", "InMB", "OutMB"},
}
TIME = {"ElapsedTime", "EpochTime", "EpochTimeNs", "SyncTimeNs"}
SPECIAL = {"4294967290": "interactive", "4294967291": "batch",
           "4294967292": "extern", "4294967293": "pending"}
errors = []


def err(msg):
    errors.append(msg)
    if len(errors) <= 20:
        print("MISMATCH:", msg)


def kind_of(parent, name):
    if parent == "Tasks":
        return "Task"
    return name if name in DELTA else "Generic"


def series_of(group, prefix=""):
    """(relative path, parent, name, dataset) of the series in a node
    group (one level of subgroups, leaving out Totals)."""
    out = []
    for k in sorted(group.keys()):
        obj = group[k]
        if isinstance(obj, h5py.Group):
            if k == "Totals" or prefix:
                continue
            for p, par, n, d in series_of(obj, k):
                out.append((p, par, n, d))
        elif obj.dtype.names and "EpochTime" in obj.dtype.names:
            out.append((prefix + "/" + k if prefix else k, prefix, k, obj))
    return out


def times_ns(a):
    if "EpochTimeNs" in a.dtype.names:
        return a["EpochTimeNs"].astype(np.int64)
    return a["EpochTime"].astype(np.int64) * 1000000000


def fields(a):
    return [n for n in a.dtype.names if n not in TIME]


def expect_total(a, kind):
    t = {"Samples": len(a)}
    if len(a):
        ts = times_ns(a)
        t["FirstTimeNs"], t["LastTimeNs"] = int(ts.min()), int(ts.max())
    for f in fields(a):
        v = a[f].astype(np.float64)
        if len(v):
            t[f + ".Min"], t[f + ".Max"] = v.min(), v.max()
            t[f + ".Mean"] = v.sum() / len(v)
            if f in DELTA.get(kind, set()):
                t[f + ".Sum"] = v.sum()
        t[f + ".delta"] = f in DELTA.get(kind, set())
    return t


def merge_totals(ts):
    out = {"Samples": sum(t["Samples"] for t in ts)}
    nz = [t for t in ts if t["Samples"]]
    if not nz:
        return out
    out["FirstTimeNs"] = min(t["FirstTimeNs"] for t in nz)
    out["LastTimeNs"] = max(t["LastTimeNs"] for t in nz)
    for k in nz[0]:
        if k.endswith(".Min"):
            out[k] = min(t[k] for t in nz)
        elif k.endswith(".Max"):
            out[k] = max(t[k] for t in nz)
        elif k.endswith(".Sum"):
            out[k] = sum(t[k] for t in nz)
        elif k.endswith(".Mean"):
            out[k] = sum(t[k] * t["Samples"] for t in nz) / out["Samples"]
        elif k.endswith(".delta"):
            out[k] = nz[0][k]
    return out


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def compare_total(where, stored, exp):
    rec = stored[0]
    names = stored.dtype.names
    if int(rec["Samples"]) != exp["Samples"]:
        err("%s: Samples %d, expected %d" % (where, rec["Samples"],
                                             exp["Samples"]))
        return
    if not exp["Samples"]:
        return
    for k in ("FirstTimeNs", "LastTimeNs"):
        if int(rec[k]) != exp[k]:
            err("%s: %s %d, expected %d" % (where, k, rec[k], exp[k]))
    for k, v in exp.items():
        if k.endswith(".delta"):
            f = k[:-6]
            if (f + ".Sum" in names) != v:
                err("%s: %s.Sum %s" % (where, f,
                                       "missing" if v else "present"))
        elif "." in k and not close(float(rec[k]), v):
            err("%s: %s = %r, expected %r" % (where, k, float(rec[k]), v))


def step_of(fname):
    m = re.match(r"^(\d+)_([^_]+)_(.+)\.h5$", os.path.basename(fname))
    step = m.group(2)
    return SPECIAL.get(step, step), m.group(3)


def check_job(jobfile, inputs):
    job = h5py.File(jobfile, "r")
    if int(job.attrs["sh5 Format Version"]) != 1:
        err("root: sh5 Format Version")
    steps = {}
    for inp in inputs:
        step, node = step_of(inp)
        steps.setdefault(step, []).append((node, inp))
    if int(job.attrs["Number of Steps"]) != len(steps):
        err("root: Number of Steps %d, expected %d" %
            (job.attrs["Number of Steps"], len(steps)))
    if sorted(job["Steps"].keys()) != sorted(steps):
        err("steps %s, expected %s" % (sorted(job["Steps"].keys()),
                                       sorted(steps)))
    nvalues = 0
    for step, nodes in steps.items():
        sg = job["Steps"][step]
        if int(sg.attrs["Number of Nodes"]) != len(nodes):
            err("step %s: Number of Nodes" % step)
        step_parts = {}
        for node, inp in nodes:
            src = h5py.File(inp, "r")[node]
            dst = sg["Nodes"][node]
            for k, v in src.attrs.items():
                if k not in dst.attrs or \
                        np.asarray(dst.attrs[k]).tolist() != \
                        np.asarray(v).tolist():
                    err("%s/%s: attribute %s" % (step, node, k))
            task_totals = []
            for path, parent, name, d in series_of(src):
                a = d[()]
                where = "%s/%s/%s" % (step, node, path)
                if path not in dst:
                    err(where + ": missing in the job file")
                    continue
                b = dst[path][()]
                if len(a) != len(b):
                    err("%s: %d rows, expected %d" % (where, len(b), len(a)))
                    continue
                if set(a.dtype.names) != set(b.dtype.names):
                    err("%s: members %s, expected %s" %
                        (where, b.dtype.names, a.dtype.names))
                    continue
                for f in a.dtype.names:
                    if not np.array_equal(a[f], b[f]):
                        err("%s: field %s differs" % (where, f))
                    nvalues += len(a)
                kind = kind_of(parent, name)
                exp = expect_total(a, kind)
                compare_total(where + " (Totals)",
                              dst["Totals/" + path][()], exp)
                if kind == "Task":
                    task_totals.append(exp)
                    step_parts.setdefault("AllTasks", []).append(exp)
                else:
                    step_parts.setdefault(path, []).append(exp)
            if task_totals:
                compare_total("%s/%s (Totals/AllTasks)" % (step, node),
                              dst["Totals/AllTasks"][()],
                              merge_totals(task_totals))
            for k in src.keys():
                if k not in dst:
                    err("%s/%s: object %s not copied" % (step, node, k))
        for key, parts in step_parts.items():
            compare_total("%s (step Totals/%s)" % (step, key),
                          sg["Totals"][key][()], merge_totals(parts))
    rows = job["Merge/Inputs"][()]
    if len(rows) != len(inputs):
        err("/Merge/Inputs: %d rows, expected %d" % (len(rows), len(inputs)))
    byfile = {r["File"].decode() if isinstance(r["File"], bytes)
              else r["File"]: r for r in rows}
    for inp in inputs:
        r = None
        for k, v in byfile.items():
            if os.path.basename(k) == os.path.basename(inp):
                r = v
        if r is None:
            err("/Merge/Inputs: %s missing" % inp)
            continue
        data = open(inp, "rb").read()
        if int(r["Size"]) != len(data):
            err("/Merge/Inputs: %s size" % inp)
        if int(r["CRC32"]) != zlib.crc32(data):
            err("/Merge/Inputs: %s CRC32" % inp)
    print("checked %d values in %d steps" % (nvalues, len(steps)))


def job_series(jobfile, series):
    """{(step, node, name): array} of a series in a job file: the members
    of the group `series` (Tasks, Sensors, ...) or the node-level series
    of that name."""
    job = h5py.File(jobfile, "r")
    out, grouped = {}, {}
    for step in job["Steps"]:
        for node, g in job["Steps"][step]["Nodes"].items():
            for path, parent, name, d in series_of(g):
                if parent == series:
                    grouped[(step, node, name)] = d[()]
                elif not parent and name == series:
                    out[(step, node, name)] = d[()]
    return grouped if grouped or series == "Tasks" else out


def is_group(jobfile, series):
    job = h5py.File(jobfile, "r")
    for step in job["Steps"]:
        for node, g in job["Steps"][step]["Nodes"].items():
            if series in g and isinstance(g[series], h5py.Group):
                return True
    return series == "Tasks"


def num(s):
    return float(s) if s != "" else None


def check_csv(jobfile, csvfile, series):
    data = job_series(jobfile, series)
    rd = csv.reader(open(csvfile))
    head = next(rd)
    keycols = 3 if is_group(jobfile, series) else 2
    seen = {}
    n = 0
    for row in rd:
        key = tuple(row[:keycols]) if keycols == 3 else \
            (row[0], row[1], series)
        a = data.get(key)
        if a is None:
            err("csv: unknown series %s" % (key,))
            continue
        i = seen.get(key, 0)
        seen[key] = i + 1
        if i >= len(a):
            err("csv: too many rows for %s" % (key,))
            continue
        for col, val in zip(head[keycols:], row[keycols:]):
            if col == "EpochTimeNs":
                want = int(times_ns(a[i:i + 1])[0])
                if int(val) != want:
                    err("csv %s row %d: EpochTimeNs %s != %d" %
                        (key, i, val, want))
            elif a.dtype[col].kind == "f":
                if float(val) != float(a[col][i]):
                    err("csv %s row %d: %s %s != %r" %
                        (key, i, col, val, float(a[col][i])))
            elif int(val) != int(a[col][i]):
                err("csv %s row %d: %s %s != %d" % (key, i, col, val,
                                                   a[col][i]))
        n += 1
    for k, a in data.items():
        if seen.get(k, 0) != len(a):
            err("csv: %s has %d rows, expected %d" % (k, seen.get(k, 0),
                                                      len(a)))
    print("checked %d csv rows" % n)


def check_field(jobfile, csvfile, series, field, only_step=None):
    data = job_series(jobfile, series)
    if only_step:
        data = {k: v for k, v in data.items() if k[0] == only_step}
    rd = csv.reader(open(csvfile))
    head = next(rd)
    cols = []
    for h in head[1:]:
        parts = h.split(":")
        if is_group(jobfile, series):
            node, task = parts[-2], parts[-1]
        else:
            node, task = parts[-1], series
        step = parts[0] if len(parts) > (2 if is_group(jobfile, series)
                                         else 1) \
            else None
        match = [k for k in data if k[1] == node and k[2] == task and
                 (step is None or k[0] == step)]
        if len(match) != 1:
            err("field: column %s matches %d series" % (h, len(match)))
            return
        cols.append(match[0])
    expect = {}
    for c, key in enumerate(cols):
        a = data[key]
        for t, v in zip(a["EpochTime"], a[field]):
            expect.setdefault(int(t), {})[c] = float(v)
    rows = 0
    for row in rd:
        t = int(row[0])
        want = expect.pop(t, None)
        if want is None:
            err("field: unexpected time %d" % t)
            continue
        for c, val in enumerate(row[1:]):
            if c in want:
                if val == "" or float(val) != want[c]:
                    err("field: t=%d col %s: %r != %r" %
                        (t, head[c + 1], val, want[c]))
            elif val != "":
                err("field: t=%d col %s: value %s where none" %
                    (t, head[c + 1], val))
        rows += 1
    if expect:
        err("field: %d times missing" % len(expect))
    print("checked %d aligned rows x %d columns" % (rows, len(cols)))


def check_totals_csv(jobfile, csvfile, series):
    data = job_series(jobfile, series)
    rd = csv.reader(open(csvfile))
    head = next(rd)
    keycols = 3 if is_group(jobfile, series) else 2
    n = 0
    for row in rd:
        step, node = row[0], row[1]
        name = row[2] if keycols == 3 else series
        parts = [(k, a) for k, a in data.items() if k[0] == step and
                 (node == "all" or k[1] == node) and
                 (name == "all" or k[2] == name)]
        if not parts:
            err("totals csv: no series for %s" % row[:keycols])
            continue
        kind = "Task" if series == "Tasks" else kind_of("", series)
        if kind not in DELTA:
            kind = "Generic"
        exp = merge_totals([expect_total(a, kind) for k, a in parts])
        for col, val in zip(head[keycols:], row[keycols:]):
            if col not in exp:
                continue
            if not close(float(val), float(exp[col])):
                err("totals csv %s: %s %s != %r" % (row[:keycols], col, val,
                                                    exp[col]))
        n += 1
    print("checked %d totals rows" % n)


def check_sh5util(jobfile, csvfile, series):
    """sh5util prints doubles with %f: compare to 1e-6."""
    data = job_series(jobfile, series)
    rd = csv.reader(open(csvfile))
    head = next(rd)
    keycols = 3 if "Series" in head else 2
    if keycols == 3 and series != "Tasks" and not is_group(jobfile, series):
        keycols = 2
    seen = {}
    for row in rd:
        key = (row[0], row[1], row[2] if keycols == 3 else series)
        a = data.get(key)
        if a is None:
            # sh5util names steps by number only
            err("sh5util csv: unknown series %s" % (key,))
            continue
        i = seen.get(key, 0)
        seen[key] = i + 1
        for col, val in zip(head[keycols:], row[keycols:]):
            if abs(float(val) - float(a[col][i])) > 1e-6 * max(
                    1, abs(float(a[col][i]))):
                err("sh5util csv %s row %d: %s %s != %r" %
                    (key, i, col, val, a[col][i]))
    for k, a in data.items():
        if seen.get(k, 0) != len(a):
            err("sh5util csv: %s has %d rows, expected %d" %
                (k, seen.get(k, 0), len(a)))
    print("checked sh5util's csv against the job file")


def check_salvage(jobfile, step, node, original):
    """Every row the job file holds of a damaged input equals the
    original's row at the same index; prints rows kept and lost."""
    job = h5py.File(jobfile, "r")
    src = h5py.File(original, "r")[node]
    dst = job["Steps"][step]["Nodes"][node]
    kept = lost = 0
    for path, parent, name, d in series_of(src):
        a = d[()]
        b = dst[path][()] if path in dst else a[:0]
        if len(b) > len(a):
            err("%s: %d rows, the original has %d" % (path, len(b), len(a)))
            continue
        for f in b.dtype.names:
            if not np.array_equal(a[f][:len(b)], b[f]):
                err("%s: salvaged field %s differs" % (path, f))
        kept += len(b)
        lost += len(a) - len(b)
    print("kept %d lost %d" % (kept, lost))


def show_inputs(jobfile):
    job = h5py.File(jobfile, "r")
    for r in job["Merge/Inputs"][()]:
        s = [x.decode() if isinstance(x, bytes) else x for x in r]
        names = job["Merge/Inputs"].dtype.names
        d = dict(zip(names, s))
        print(os.path.basename(d["File"]), d["Status"], d["Lost"],
              d["Reason"])
    for m in job["Merge/Missing"][()]:
        print("missing:", m.decode() if isinstance(m, bytes) else m)
    print("partial:", int(job["Merge"].attrs["Partial"]))


def main():
    cmd = sys.argv[1]
    if cmd == "job":
        check_job(sys.argv[2], sys.argv[3:])
    elif cmd == "csv":
        check_csv(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "field":
        check_field(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                    sys.argv[6] if len(sys.argv) > 6 else None)
    elif cmd == "totals":
        check_totals_csv(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "salvage":
        check_salvage(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "inputs":
        show_inputs(sys.argv[2])
    elif cmd == "sh5util":
        check_sh5util(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown command " + cmd)
    if errors:
        print("%d mismatches" % len(errors))
        sys.exit(1)


main()
