#!/usr/bin/python3
"""Write a small job file with application events, in the job-file layout
(src/events/evstore.h: /Steps/<step>/Nodes/<node>/Events/<task>, Regions,
Comms), plus Task series, and a truth JSON of what the exports must find.

The program simulated (every rank, SPMD, 4 ranks on 2 nodes by default):

  phase 0  MPI_Bcast from rank 0 (4096 B), compute
  Pcontrol(1) mark, phase 1: MPI_Scatter from rank 2 (256 B each)
  Pcontrol(2) mark, phase 2: MPI_Reduce to rank 1 (16 B)
  Pcontrol(3) mark (not on the last rank), phase 3
  every phase: compute (a user region with a nested "solve"), two declared
  objects per rank, a ring of sends (tag = phase) with known bytes, an
  MPI_Allreduce (8 B); rank 0 sends one message in phase 1 that rank 1
  receives only in phase 2 (tag 99); rank 2 sends one message nobody
  receives (tag 55, unmatched).

Times are in ns from a fixed start; every duration is known, so the
truth is computed here independently of sh5merge: per-phase time outside
MPI (intervals), matched edges per phase, object loads, region durations.
"""
import argparse
import json

import h5py
import numpy as np

REC = np.dtype([("TimeNs", "<i8"), ("Kind", "u1"), ("Op", "u1"),
                ("Flags", "<u2"), ("Id", "<u4"), ("Peer", "<i4"),
                ("Tag", "<i4"), ("Bytes", "<u8"), ("Value", "<f8")])
REGION = np.dtype([("Task", "<u4"), ("Region", "<u4"), ("Flags", "<u4"),
                   ("Name", "S128")])
COMM = np.dtype([("Task", "<u4"), ("Local", "<u4"), ("Global", "<u8"),
                 ("Size", "<i4"), ("Rank", "<i4")])
TASK_FIELDS = [("ElapsedTime", "<u8"), ("EpochTime", "<u8"),
               ("CPUTime", "<f8"), ("CPUUtilization", "<f8"),
               ("RSS", "<u8"), ("VMSize", "<u8"), ("ReadMB", "<f8"),
               ("WriteMB", "<f8"), ("EpochTimeNs", "<i8")]

ENTER, EXIT, PHASE, SEND, RECV, CBEGIN, CEND, OBJECT, RANK = range(1, 10)
OP_BCAST, OP_SCATTER, OP_REDUCE, OP_ALLREDUCE = 2, 3, 5, 6
F_MPI, F_PCONTROL = 0x1, 0x20

# region ids (per process, the same on every rank here)
REGIONS = [(1, "MPI_Send", F_MPI), (2, "MPI_Recv", F_MPI),
           (3, "MPI_Bcast", F_MPI), (4, "MPI_Scatter", F_MPI),
           (5, "MPI_Reduce", F_MPI), (6, "MPI_Allreduce", F_MPI),
           (7, "MPI_Pcontrol", F_MPI), (10, "compute", 0),
           (11, "solve", 0)]
RNAME = {i: (n, f) for i, n, f in REGIONS}
START = 1700000000 * 1000000000 + 500000000


class Rank:
    def __init__(self, r, n):
        self.r, self.n = r, n
        self.t = START + 1000 * r
        self.recs = []
        self.phase = 0
        self.stack = []
        self.calls = []          # (counter, duration s)
        self.mpi = []            # [t0, t1] of MPI regions
        self.marks = [(0, None)]  # (phase, time)

    def rec(self, kind, **kw):
        d = dict(TimeNs=self.t, Kind=kind, Op=0, Flags=0, Id=0, Peer=-1,
                 Tag=0, Bytes=0, Value=0.0)
        d.update(kw)
        self.recs.append(tuple(d[k] for k in REC.names))

    def adv(self, ns):
        self.t += int(ns)

    def enter(self, rid):
        self.rec(ENTER, Id=rid)
        self.stack.append((rid, self.t))

    def exit(self, rid):
        self.rec(EXIT, Id=rid)
        er, t0 = self.stack.pop()
        assert er == rid
        name, fl = RNAME[rid]
        self.calls.append((("MPI." if fl & F_MPI else "Region.") + name,
                           t0, self.t))
        if fl & F_MPI:
            self.mpi.append((t0, self.t))


def simulate(nranks, truth):
    ranks = [Rank(r, nranks) for r in range(nranks)]
    sends = []     # (src, dst, tag, phase, bytes) in send order
    recvs = []     # (src, dst, tag) in receive order
    coll = []      # (kind, root, member, phase, bytes)
    objects = []
    for k in ranks:
        k.rec(RANK, Id=nranks, Peer=k.r)
        k.adv(1000)

    def mpi_call(k, rid, body, dur):
        k.enter(rid)
        k.adv(dur // 2)
        body()
        k.adv(dur - dur // 2)
        k.exit(rid)

    def send(k, dst, tag, nbytes):
        def body():
            k.rec(SEND, Id=0, Peer=dst, Tag=tag, Bytes=nbytes)
            sends.append((k.r, dst, tag, k.phase, nbytes))
        mpi_call(k, 1, body, 3000 + 100 * k.r)

    def recv(k, src, tag, nbytes):
        def body():
            k.rec(RECV, Id=0, Peer=src, Tag=tag, Bytes=nbytes)
            recvs.append((src, k.r, tag))
        mpi_call(k, 2, body, 5000 + 70 * k.r)

    def collective(k, rid, op, root, nbytes):
        def body():
            k.rec(CBEGIN, Op=op, Id=0, Peer=root, Bytes=nbytes)
            k.adv(400)
            k.rec(CEND, Op=op, Id=0, Peer=root, Bytes=nbytes)
            coll.append((op, root, k.r, k.phase, nbytes))
        mpi_call(k, rid, body, 9000 + 300 * k.r)

    nph = 4
    for p in range(nph):
        for k in ranks:
            if p > 0 and not (p == 3 and k.r == nranks - 1):
                k.enter(7)
                k.adv(500)
                k.rec(PHASE, Id=p, Tag=p, Flags=F_PCONTROL)
                k.phase = p
                k.marks.append((p, k.t))
                k.adv(700)
                k.exit(7)
            # compute with a nested solve
            k.enter(10)
            k.adv(200000 + 10000 * k.r + 5000 * p)
            k.enter(11)
            # one slow solve (rank 2, phase 2): the anomaly
            k.adv(50000 * (k.r + 1) * (100 if (k.r, p) == (2, 2) else 1))
            k.exit(11)
            k.adv(30000)
            k.exit(10)
            for j in range(2):
                oid = k.r * 10 + j
                load = 0.00001 * (1 + k.r + j) * (p + 1)
                k.rec(OBJECT, Id=k.phase, Bytes=oid, Value=load)
                objects.append((k.r, k.phase, oid, load))
            # ring: send to next, receive from previous
            send(k, (k.r + 1) % nranks, p, 1000 * (k.r + 1) + p)
            if p == 1 and k.r == 0:
                send(k, 1, 99, 777)
            if p == 1 and k.r == 2:
                send(k, 0, 55, 5555)       # never received
        for k in ranks:
            src = (k.r - 1) % nranks
            recv(k, src, p, 1000 * (src + 1) + p)
            if p == 2 and k.r == 1:
                recv(k, 0, 99, 777)        # the late receive
            if p == 0:
                collective(k, 3, OP_BCAST, 0, 4096)
            if p == 1:
                collective(k, 4, OP_SCATTER, 2, 256)
            if p == 2:
                collective(k, 5, OP_REDUCE, 1, 16)
            collective(k, 6, OP_ALLREDUCE, -1, 8)
            k.adv(20000)
    for k in ranks:
        k.last = k.recs[-1][0]       # the last event's time
        k.end = k.t
    return ranks, sends, recvs, coll, objects


def sync_of(t, node):
    """SyncTimeNs of --sync: a node offset and a 0.2 % drift, so that
    durations differ from the raw ones (the exports must use these)."""
    return t + 3000 * node + (t - START) // 500


def truth_of(truth, ranks, sends, recvs, coll, objects, nranks, f):
    # p2p: match per (src, dst, tag) in order
    edges = {}
    queue = {}
    for s in sends:
        queue.setdefault((s[0], s[1], s[2]), []).append(s)
    matched = 0
    for (src, dst, tag) in recvs:
        s = queue[(src, dst, tag)].pop(0)
        key = (s[3], "SendRecv", src, dst)
        m, b = edges.get(key, (0, 0.0))
        edges[key] = (m + 1, b + s[4])
        matched += 1
    unmatched = sum(len(v) for v in queue.values())
    rootphase = {}
    for op, root, member, ph, nb in coll:
        if member == root:
            rootphase.setdefault((op, root), []).append(ph)
    seen = {}
    for op, root, member, ph, nb in coll:
        if root < 0 or member == root:
            continue
        i = seen.get((op, root, member), 0)
        seen[(op, root, member)] = i + 1
        if op in (OP_BCAST, OP_SCATTER):
            key = (rootphase[(op, root)][i], "Broadcast", root, member)
        else:
            key = (ph, "CollectionToNode", member, root)
        m, b = edges.get(key, (0, 0.0))
        edges[key] = (m + 1, b + nb)
    objs = {}
    for r, ph, oid, load in objects:
        objs[(r, ph, oid)] = objs.get((r, ph, oid), 0.0) + load
    # rank time: outside MPI minus objects, per phase
    nph = 1 + max(max(p for p, _ in k.marks) for k in ranks)
    rank_time = {}
    for k in ranks:
        b = [f(k, t) for t in
             [k.recs[0][0]] + [t for p, t in k.marks[1:]] + [k.last]]
        for p in range(len(k.marks)):
            lo, hi = b[p], b[p + 1]
            wall = (hi - lo) / 1e9
            mpi = sum(max(0, min(hi, f(k, t1)) - max(lo, f(k, t0)))
                      for t0, t1 in k.mpi) / 1e9
            ol = sum(v for (r, ph, _), v in objs.items()
                     if r == k.r and ph == p)
            rank_time["%d:%d" % (k.r, p)] = max(0.0, wall - mpi - ol)
    calls = {}
    for k in ranks:
        for name, t0, t1 in k.calls:
            calls.setdefault(name, []).append((f(k, t1) - f(k, t0)) / 1e9)
    truth["nranks"] = nranks
    truth["phases"] = list(range(nph))
    truth["edges"] = [dict(phase=p, type=ty, frm=f, to=t, messages=m,
                           bytes=b)
                      for (p, ty, f, t), (m, b) in sorted(edges.items())]
    truth["p2p_matched"] = matched
    truth["unmatched_sends"] = unmatched
    truth["objects"] = [dict(rank=r, phase=p, id=o, load=v)
                        for (r, p, o), v in sorted(objs.items())]
    truth["rank_time"] = rank_time
    truth["reached"] = {str(k.r): len(k.marks) for k in ranks}
    truth["counters"] = {n: dict(count=len(v), mean=float(np.mean(v)))
                         for n, v in sorted(calls.items())}
    # SSTD at 3 sigma against the whole step (sample stddev)
    nan = 0
    for v in calls.values():
        v = np.array(v)
        sd = v.std(ddof=1) if len(v) > 1 else 0.0
        if sd > 0:
            nan += int(np.sum(np.abs(v - v.mean()) > 3 * sd))
    truth["anomalies_sigma3"] = nan


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("truth")
    p.add_argument("--job", default="5151")
    p.add_argument("--step", default="0")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--tasks", type=int, default=2, help="per node")
    p.add_argument("--no-marks", action="store_true",
                   help="drop the PHASE records (fixed windows)")
    p.add_argument("--sync", action="store_true",
                   help="add Events/SyncTimeNs (+3 us per node)")
    a = p.parse_args()
    n = a.nodes * a.tasks
    truth = {"job": a.job, "step": a.step}
    ranks, sends, recvs, coll, objects = simulate(n, truth)
    if a.sync:
        def f(k, t):
            return sync_of(t, k.r // a.tasks)
    else:
        def f(k, t):
            return t
    truth_of(truth, ranks, sends, recvs, coll, objects, n, f)
    with h5py.File(a.out, "w") as f:
        f.attrs["sh5 Format Version"] = np.int32(1)
        f.attrs["Job ID"] = a.job
        nodes = f.create_group("Steps/%s/Nodes" % a.step)
        for ni in range(a.nodes):
            g = nodes.create_group("node%02d" % (a.nodes - 1 - ni))
            g.attrs["Node Index"] = np.int32(ni)
            g.attrs["Node Name"] = "cn%03d" % ni
            g.attrs["Number of Tasks"] = np.int32(a.tasks)
            ev = g.create_group("Events")
            ev.attrs["Events Format Version"] = np.int32(1)
            tasks = g.create_group("Tasks")
            regs, comms = [], []
            for k in ranks[ni * a.tasks:(ni + 1) * a.tasks]:
                recs = np.array(k.recs, dtype=REC)
                if a.no_marks:
                    recs = recs[recs["Kind"] != PHASE]
                d = ev.create_dataset(str(k.r), data=recs)
                d.attrs["Task"] = np.uint32(k.r)
                d.attrs["World Rank"] = np.int32(k.r)
                d.attrs["World Size"] = np.int32(n)
                if a.sync:
                    sg = ev.require_group("SyncTimeNs")
                    sg.create_dataset(str(k.r),
                                      data=sync_of(recs["TimeNs"], ni))
                for rid, name, fl in REGIONS:
                    regs.append((k.r, rid, fl, name.encode()))
                comms.append((k.r, 0, 0, n, k.r))
                comms.append((k.r, 1, (k.r + 1) << 32, 1, 0))
                # Task samples: 1 s apart over the run (the run is short:
                # one sample before, one after)
                ts = np.array([START - 10**9, k.end + 10**9], dtype="<i8")
                arr = np.zeros(2, dtype=np.dtype(TASK_FIELDS))
                arr["EpochTimeNs"] = ts
                arr["EpochTime"] = ts // 10**9
                arr["CPUTime"] = [0.0, 0.5 + 0.1 * k.r]
                arr["CPUUtilization"] = 50.0
                arr["RSS"] = 1000 + k.r
                arr["VMSize"] = 4000
                tasks.create_dataset(str(k.r), data=arr)
            ev.create_dataset("Regions", data=np.array(regs, dtype=REGION))
            ev.create_dataset("Comms", data=np.array(comms, dtype=COMM))
    with open(a.truth, "w") as fp:
        json.dump(truth, fp, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
