#!/usr/bin/python3
"""events_check.py - checks of `sh5merge events` and `merge --sync clc`
against the truth events_mkjob.py wrote (plain Python, apart from the C
code).

  events_check.py raw RAW.csv TRUTH.json
      the raw trace holds exactly the recorded local times of every task
      in order, every message of the truth per pair (count and bytes),
      one #comm line per communicator with the truth's members, #node
      lines, OFFSET lines non-decreasing with the events
  events_check.py barriers RAW.csv SYNC.csv TRUTH.json
      corrected ends of every MPI_COMM_WORLD barrier within 1 ms across
      nodes; raw ends spread by at least half the skews' spread
  events_check.py job JOB.h5 SYNC.csv TRUTH.json
      /Merge's clc records (messages matched = truth, events, 0
      violations after, some before) and Events/SyncTimeNs equal to the
      corrected trace's times
Exit 0 when every check holds, 1 with a message otherwise.
"""
import json
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def parse(path):
    comms, nodes, ev = {}, {}, []
    with open(path) as f:
        lines = f.read().split("\n")
    if lines[0] != "#sh5-trace 1":
        fail("%s: first line %r" % (path, lines[0]))
    if lines[-1] != "":
        fail("%s: no final LF" % path)
    for ln in lines[1:-1]:
        if ln.startswith("#comm "):
            w = ln.split()
            comms[int(w[1])] = [int(x) for x in w[2:]]
        elif ln.startswith("#node "):
            w = ln.split()
            nodes[int(w[1])] = [int(x) for x in w[2:]]
        elif ln.startswith("#"):
            fail("%s: unexpected directive %r" % (path, ln))
        else:
            f = ln.split(",")
            if len(f) != 8:
                fail("%s: %r: want 8 fields" % (path, ln))
            ev.append((int(f[0]), int(f[1]), f[2], f[3], f[4], f[5], f[6],
                       f[7]))
    return comms, nodes, ev


def check_raw(raw, truth):
    tr = json.load(open(truth))
    comms, nodes, ev = parse(raw)
    per = {}
    last = {}
    pairs = {}
    for (loc, t, kind, peer, tag, comm, root, nb) in ev:
        if t < last.get(loc, -2**63):
            fail("location %d: time goes backwards at %d" % (loc, t))
        last[loc] = t
        if kind == "OFFSET":
            continue
        per.setdefault(loc, []).append(t)
        if kind == "SEND":
            k = "%d->%s" % (loc, peer)
            p = pairs.setdefault(k, [0, 0])
            p[0] += 1
            p[1] += int(nb)
        if kind == "INT" and (peer or tag or comm or root or nb):
            fail("INT line with fields")
        if kind in ("CBEGIN", "CEND") and not comm:
            fail("collective without comm")
    for t, times in tr["local_ns"].items():
        if per.get(int(t)) != times:
            fail("task %s: raw times differ from the recorded ones "
                 "(%d vs %d events)" % (t, len(per.get(int(t), [])),
                                        len(times)))
    want = {k: [v["messages"], v["bytes"]] for k, v in tr["pairs"].items()}
    if pairs != want:
        fail("messages per pair %s, truth %s" % (pairs, want))
    wr = tr["world_rank"]
    task_of = {w: t for t, w in enumerate(wr)}
    for g, members in tr["comms"].items():
        locs = [task_of[r] for r in members]
        if comms.get(int(g)) != locs:
            fail("#comm %s: %s, truth %s" % (g, comms.get(int(g)), locs))
    byn = {}
    for t, n in enumerate(tr["node_of_task"]):
        byn.setdefault(n, []).append(t)
    if sorted(nodes.values()) != sorted(byn.values()):
        fail("#node lines %s, truth %s" % (nodes, byn))
    print("raw: %d events, %d messages in %d pairs, %d comms, %d nodes: "
          "as recorded" % (sum(len(v) for v in per.values()),
                           sum(v[0] for v in pairs.values()), len(pairs),
                           len(comms), len(nodes)))


def barrier_ends(path):
    _, nodes, ev = parse(path)
    node_of = {loc: n for n, locs in nodes.items() for loc in locs}
    ends = {}
    for (loc, t, kind, peer, tag, comm, root, nb) in ev:
        if kind == "CEND" and peer == "BARRIER" and comm == "0":
            ends.setdefault(loc, []).append(t)
    return node_of, ends


def check_barriers(raw, sync, truth):
    tr = json.load(open(truth))
    node_of, re = barrier_ends(raw)
    _, se = barrier_ends(sync)
    n = tr["barriers"]
    skew = tr["skew_ns"]
    want = max(skew) - min(skew)
    if n < 1 or any(len(v) != n for v in se.values()):
        fail("barrier ends per location: %s, truth %d" %
             ({k: len(v) for k, v in se.items()}, n))
    for i in range(n):
        s = [v[i] for v in se.values()]
        r = [v[i] for v in re.values()]
        if max(s) - min(s) > 1000000:
            fail("barrier %d: corrected ends spread %d ns" %
                 (i, max(s) - min(s)))
        if max(r) - min(r) < want // 2:
            fail("barrier %d: raw ends spread only %d ns (skews %s)" %
                 (i, max(r) - min(r), skew))
        print("barrier %d: raw ends spread %d ns, corrected %d ns" %
              (i, max(r) - min(r), max(s) - min(s)))


def check_job(job, sync, truth):
    import h5py
    tr = json.load(open(truth))
    _, _, ev = parse(sync)
    per = {}
    for (loc, t, kind, *_) in ev:
        if kind != "OFFSET":
            per.setdefault(loc, []).append(t)
    with h5py.File(job, "r") as f:
        m = f["Merge"].attrs
        def a(k):
            v = m[k]
            return v.decode() if isinstance(v, bytes) else v
        checks = [("Sync Method", "clc"),
                  ("Sync Messages Matched", tr["messages"]),
                  ("Sync Events", tr["events"]),
                  ("Sync P2P Violations After", 0),
                  ("Sync Collective Violations After", 0),
                  ("Sync Problems", 0), ("Sync Event Steps Synchronized", 1)]
        for k, v in checks:
            if a(k) != v:
                fail("/Merge %s = %r, want %r" % (k, a(k), v))
        if a("Sync P2P Violations Before") + \
                a("Sync Collective Violations Before") == 0:
            fail("no violation before the synchronization")
        for k in ("Sync Mu Intra Source", "Sync Mu Inter Source"):
            if a(k) not in ("estimated", "no messages: 0"):
                fail("/Merge %s = %r" % (k, a(k)))
        seen = 0
        for step in f["Steps"]:
            for node, g in f["Steps"][step]["Nodes"].items():
                if "Events" not in g:
                    continue
                e = g["Events"]
                for name in e:
                    if not name.isdigit():
                        continue
                    st = e["SyncTimeNs"][name]
                    if st.dtype != "<i8" or st.shape != e[name].shape:
                        fail("%s/%s: SyncTimeNs %s %s" % (node, name,
                             st.dtype, st.shape))
                    if list(st[()]) != per[int(name)]:
                        fail("%s/SyncTimeNs/%s differs from the "
                             "corrected trace" % (node, name))
                    seen += 1
        if seen != tr["tasks"]:
            fail("SyncTimeNs of %d tasks, want %d" % (seen, tr["tasks"]))
    print("job: /Merge clc records and SyncTimeNs of %d tasks as the "
          "corrected trace" % seen)


def main():
    a = sys.argv[1:]
    if a[:1] == ["raw"] and len(a) == 3:
        check_raw(a[1], a[2])
    elif a[:1] == ["barriers"] and len(a) == 4:
        check_barriers(a[1], a[2], a[3])
    elif a[:1] == ["job"] and len(a) == 4:
        check_job(a[1], a[2], a[3])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
