#!/usr/bin/python3
"""events_mkjob.py - synthetic node-step files WITH events.

Writes DIR/<job>_<step>_node<N>.h5 for N = 1..--nodes in the layout of
src/events/evstore.h (/<node>/Events/<task>, Regions, Comms, CommMembers)
beside the usual node attributes and a Task series (so that `sh5merge
merge` takes them), and a JSON of the truth (--truth).

The program is simulated on one true clock; each node's clock is the true
one plus a skew and a drift (--skew-ms, --drift-ppm), and its
/<node>/ClockOffsets describes that clock with a measurement error of at
most --offset-error-ns (a round trip of twice that).  Event times are the
node's clock.  Every message and collective respects the clock condition
on the true clock (latency >= --lat-intra-ns within a node, --lat-inter-ns
between nodes).

Per iteration (= phase): PHASE marks, a user region "compute" with OBJECT
records, a blocking ring (MPI_Send/MPI_Recv), non-blocking exchanges
(MPI_Isend/MPI_Irecv + MPI_Waitall), wildcard receives at rank 0
(MPI_ANY_SOURCE, MPI_ANY_TAG), messages on a sub-communicator, and every
collective operation (rooted ones with a root moving with the iteration)
on MPI_COMM_WORLD and on the even/odd sub-communicators.

--damage WHAT spoils node 1's events: kind (a record of kind 99), type
(Events/<task> an int array), members (CommMembers one row too many), region
(an ENTER of an undefined region), huge (a task dataset claiming 2^40
records), notgroup (Events a dataset).

Values are deterministic for a given --seed.
"""
import argparse
import json
import os

import h5py
import numpy as np

K_ENTER, K_EXIT, K_PHASE, K_SEND, K_RECV, K_CBEGIN, K_CEND = 1, 2, 3, 4, 5, 6, 7
K_OBJECT, K_RANK, K_LOST = 8, 9, 10
OPS = ["NONE", "BARRIER", "BCAST", "SCATTER", "GATHER", "REDUCE",
       "ALLREDUCE", "ALLGATHER", "ALLTOALL", "REDUCE_SCATTER", "SCAN",
       "EXSCAN"]
ROOTED = {"BCAST", "SCATTER", "GATHER", "REDUCE"}
F_MPI, F_NONBLOCKING, F_ANY_SOURCE, F_ANY_TAG, F_PCONTROL = 1, 4, 8, 16, 32

REC = np.dtype([("TimeNs", "<i8"), ("Kind", "u1"), ("Op", "u1"),
                ("Flags", "<u2"), ("Id", "<u4"), ("Peer", "<i4"),
                ("Tag", "<i4"), ("Bytes", "<u8"), ("Value", "<f8")])
REGION = np.dtype([("Task", "<u4"), ("Region", "<u4"), ("Flags", "<u4"),
                   ("Name", "S128")])
COMM = np.dtype([("Task", "<u4"), ("Local", "<u4"), ("Global", "<u8"),
                 ("Size", "<i4"), ("Rank", "<i4")])
MEMBER = np.dtype([("Global", "<u8"), ("Rank", "<i4"), ("WorldRank", "<i4")])
CLOCK = np.dtype([("LocalTimeNs", "<i8"), ("OffsetNs", "<i8"),
                  ("RoundTripNs", "<i8"), ("Stratum", "<u4"),
                  ("Phase", "<u4")])
TASK = np.dtype([("ElapsedTime", "<u8"), ("EpochTime", "<u8"),
                 ("CPUFrequency", "<u8"), ("CPUTime", "<f8"),
                 ("CPUUtilization", "<f8"), ("RSS", "<u8"),
                 ("VMSize", "<u8"), ("Pages", "<u8"), ("ReadMB", "<f8"),
                 ("WriteMB", "<f8"), ("EpochTimeNs", "<u8")])
TASK_KINDS = [b"time", b"time", b"level", b"delta", b"level", b"level",
              b"level", b"level", b"delta", b"delta", b"time"]
TASK_UNITS = [b"s", b"s", b"kHz", b"s", b"%", b"KiB", b"KiB", b"pages",
              b"MiB", b"MiB", b"ns"]

REGIONS = ["compute", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv",
           "MPI_Waitall"] + ["MPI_" + o.capitalize() for o in OPS[1:]]


class Sim:
    def __init__(self, a):
        self.a = a
        self.rng = np.random.default_rng(a.seed)
        self.ntasks = a.nodes * a.tasks
        n = self.ntasks
        # world rank of each task (srun's numbering, or reversed)
        self.wr = [n - 1 - t if a.reverse_ranks else t for t in range(n)]
        self.task_of = {self.wr[t]: t for t in range(n)}
        self.node = [t // a.tasks for t in range(n)]
        self.t0 = 1700000000 * 10**9 + 123456789
        self.now = [self.t0 + int(self.rng.integers(0, 20000))
                    for _ in range(n)]
        self.recs = [[] for _ in range(n)]     # (true_ns, fields...)
        self.truth = {"messages": 0, "bytes": 0, "pairs": {}, "phases": {},
                      "collectives": {}, "barriers": 0}
        self.phase = 0
        # sub-communicators: even and odd world ranks, in world rank order
        self.comms = {0: list(range(n))}       # global -> world ranks
        self.local = {}                        # (task, global) -> local id
        for par in (0, 1):
            members = [r for r in range(n) if r % 2 == par]
            if len(members) < 1:
                continue
            g = ((members[0] + 1) << 32) | 1
            self.comms[g] = members
            for r in members:
                self.local[(self.task_of[r], g)] = 2
        for t in range(n):
            self.local[(t, 0)] = 0
        self.sub = [g for g in self.comms if g]

    def lat(self, a, b):
        base = (self.a.lat_intra_ns if self.node[a] == self.node[b]
                else self.a.lat_inter_ns)
        return base + int(self.rng.integers(0, 400))

    def rec(self, t, kind, op=0, flags=0, id=0, peer=-1, tag=0, nbytes=0,
            value=0.0, at=None):
        if at is None:
            at = self.now[t]
        assert at >= self.now[t]
        self.now[t] = at
        self.recs[t].append((at, kind, op, flags, id, peer, tag, nbytes,
                             value))

    def adv(self, t, lo=200, hi=2000):
        self.now[t] += int(self.rng.integers(lo, hi))

    def region(self, name):
        return REGIONS.index(name) + 1

    def count_msg(self, s, d, nbytes):
        tr = self.truth
        tr["messages"] += 1
        tr["bytes"] += nbytes
        k = "%d->%d" % (s, d)
        p = tr["pairs"].setdefault(k, {"messages": 0, "bytes": 0})
        p["messages"] += 1
        p["bytes"] += nbytes
        ph = tr["phases"].setdefault(str(self.phase),
                                     {"messages": 0, "bytes": 0})
        ph["messages"] += 1
        ph["bytes"] += nbytes

    # ---- point to point: a list of (src task, dst task, tag, bytes, g)
    def exchange(self, msgs, nonblocking=False, wildcard=False):
        sname = "MPI_Isend" if nonblocking else "MPI_Send"
        rname = "MPI_Irecv" if nonblocking else "MPI_Recv"
        flags = F_NONBLOCKING if nonblocking else 0
        sent = []
        for (s, d, tag, nb, g) in msgs:
            self.adv(s)
            self.rec(s, K_ENTER, id=self.region(sname))
            self.adv(s, 50, 200)
            ts = self.now[s]
            self.rec(s, K_SEND, flags=flags, id=self.local[(s, g)],
                     peer=self.wr[d], tag=tag, nbytes=nb)
            self.adv(s, 50, 300)
            self.rec(s, K_EXIT, id=self.region(sname))
            sent.append((ts + self.lat(s, d), s, d, tag, nb, g))
            self.count_msg(s, d, nb)
        # receives in the order each receiver posted (non-overtaking per
        # channel); wildcard receivers take them in arrival order
        by_dst = {}
        for m in sent:
            by_dst.setdefault(m[2], []).append(m)
        for d, ms in sorted(by_dst.items()):
            if wildcard:
                ms.sort()
            for (arr, s, _, tag, nb, g) in ms:
                self.adv(d)
                self.rec(d, K_ENTER, id=self.region(rname))
                self.adv(d, 50, 200)
                f = flags | (F_ANY_SOURCE | F_ANY_TAG if wildcard else 0)
                self.rec(d, K_RECV, flags=f, id=self.local[(d, g)],
                         peer=self.wr[s], tag=tag, nbytes=nb,
                         at=max(self.now[d], arr))
                self.adv(d, 50, 300)
                self.rec(d, K_EXIT, id=self.region(rname))
            if nonblocking:
                self.rec(d, K_ENTER, id=self.region("MPI_Waitall"))
                self.adv(d, 50, 300)
                self.rec(d, K_EXIT, id=self.region("MPI_Waitall"))

    # ---- collectives on communicator g (members: world ranks)
    def collective(self, op, g, root_rank=None):
        members = [self.task_of[r] for r in self.comms[g]]
        name = OPS[op]
        rg = self.region("MPI_" + name.capitalize())
        root = None if name not in ROOTED else members[root_rank]
        nb = 64 * (op + 1)
        beg = {}
        for t in members:
            self.adv(t)
            self.rec(t, K_ENTER, id=rg)
            self.adv(t, 50, 200)
            beg[t] = self.now[t]
            self.rec(t, K_CBEGIN, op=op, id=self.local[(t, g)],
                     peer=self.wr[root] if root is not None else -1,
                     nbytes=nb)
        for i, t in enumerate(members):
            if name in ("BARRIER", "ALLREDUCE", "ALLGATHER", "ALLTOALL",
                        "REDUCE_SCATTER"):
                src = members
            elif name in ("BCAST", "SCATTER"):
                src = [root] if t != root else []
            elif name in ("GATHER", "REDUCE"):
                src = members if t == root else []
            elif name == "SCAN":
                src = members[:i + 1]
            else:
                src = members[:i]
            end = beg[t] + 100
            for s in src:
                end = max(end, beg[s] + self.lat(s, t))
            self.rec(t, K_CEND, op=op, id=self.local[(t, g)],
                     peer=self.wr[root] if root is not None else -1,
                     nbytes=nb, at=max(self.now[t], end))
            self.adv(t, 50, 200)
            self.rec(t, K_EXIT, id=rg)
        c = self.truth["collectives"].setdefault(name, 0)
        self.truth["collectives"][name] = c + 1
        if name == "BARRIER" and g == 0:
            self.truth["barriers"] += 1

    def run(self):
        n = self.ntasks
        for t in range(n):
            self.rec(t, K_RANK, id=n, peer=self.wr[t])
        for it in range(self.a.iterations):
            self.phase = it + 1
            for t in range(n):
                self.adv(t)
                self.rec(t, K_PHASE, flags=F_PCONTROL if it % 2 else 0,
                         id=it + 1, tag=1 if it % 2 else -1)
                self.rec(t, K_ENTER, id=self.region("compute"))
                self.adv(t, 10000, 200000)
                for o in range(2):
                    self.rec(t, K_OBJECT, id=it + 1, nbytes=t * 10 + o,
                             value=float(self.rng.random()))
                self.rec(t, K_EXIT, id=self.region("compute"))
            r = [self.task_of[k] for k in range(n)]   # by world rank
            # blocking ring in world rank order
            self.exchange([(r[k], r[(k + 1) % n], 1, 1024 + k, 0)
                           for k in range(n)] if n > 1 else [])
            # non-blocking: each to the one half the world away
            self.exchange([(r[k], r[(k + n // 2) % n], 2, 4096, 0)
                           for k in range(n)] if n > 1 else [],
                          nonblocking=True)
            # wildcard at world rank 0
            self.exchange([(r[k], r[0], 3 + k % 2, 8 + k, 0)
                           for k in range(1, n)], wildcard=True)
            # on the sub-communicators: a ring of each
            msgs = []
            for g in self.sub:
                ms = self.comms[g]
                if len(ms) > 1:
                    msgs += [(self.task_of[ms[k]],
                              self.task_of[ms[(k + 1) % len(ms)]], 7, 256,
                              g) for k in range(len(ms))]
            self.exchange(msgs)
            for op in range(1, len(OPS)):
                self.collective(op, 0, it % n)
            for g in self.sub:
                for op in (1, 2, 5, 6, 10):
                    self.collective(op, g, it % len(self.comms[g]))
        for t in range(n):
            self.adv(t)


def node_clock(sim, a):
    rng = np.random.default_rng(a.seed + 1000)
    skews, drifts = [], []
    for k in range(a.nodes):
        if a.skew_ms is not None:
            v = [float(x) for x in a.skew_ms.split(",")]
            s = v[k % len(v)]
        else:
            s = float(rng.uniform(-5, 5))
        skews.append(int(s * 1e6))
        drifts.append(float(rng.uniform(-a.drift_ppm, a.drift_ppm)))
    return skews, drifts


def local_of(true_ns, skew, drift, t0):
    return true_ns + skew + int(round(drift * (true_ns - t0) / 1e6))


def write_node(a, sim, k, skew, drift, path, damage):
    rng = np.random.default_rng(a.seed + 7 * k)
    name = "node%d" % (k + 1)
    tasks = [t for t in range(sim.ntasks) if sim.node[t] == k]
    first = min(sim.recs[t][0][0] for t in tasks)
    last = max(sim.recs[t][-1][0] for t in tasks)
    with h5py.File(path, "w") as f:
        f.attrs["sh5 Format Version"] = np.int32(1)
        g = f.create_group(name)
        at = g.attrs
        at["CPUs per Task"] = np.int32(1)
        at["Cluster"] = np.bytes_("evcluster")
        at["Job ID"] = np.uint32(a.job)
        at["Node Index"] = np.int32(k)
        at["Node Name"] = np.bytes_(name)
        at["Number of Nodes"] = np.uint32(a.nodes)
        at["Number of Tasks"] = np.int32(len(tasks))
        at["Plugin Version"] = np.bytes_("0.1.0")
        at["Slurm Version"] = np.bytes_("22.05.8")
        at["Start Time"] = np.bytes_("Tue Nov 14 22:13:20 2023")
        at["Start Time UTC"] = np.bytes_("2023-11-14T22:13:20Z")
        at["Start Time ns"] = np.int64(sim.t0 - sim.t0 % 10**9)
        at["Step ID"] = np.bytes_(a.step)
        at["Step Number"] = np.uint32(int(a.step) if a.step.isdigit() else 0)
        at["Step Tasks"] = np.uint32(sim.ntasks)
        at["UID"] = np.uint32(1000)
        at["User"] = np.bytes_("evuser")
        # a Task series: samples every 0.5 s of the node's clock
        tg = g.create_group("Tasks")
        for t in tasks:
            ns = 3
            ts = np.array([local_of(first + i * 500000000, skew, drift,
                                    sim.t0) for i in range(ns)], np.int64)
            arr = np.zeros(ns, dtype=TASK)
            arr["EpochTimeNs"] = ts
            arr["EpochTime"] = ts // 10**9
            arr["ElapsedTime"] = (ts - ts[0]) // 10**9
            arr["CPUFrequency"] = 2400000
            arr["CPUTime"] = 0.5
            arr["CPUUtilization"] = 50 + rng.random(ns)
            arr["RSS"] = 1000 + t
            arr["VMSize"] = 5000
            arr["ReadMB"] = rng.random(ns)
            arr["WriteMB"] = rng.random(ns)
            d = tg.create_dataset(str(t), data=arr, chunks=(600,),
                                  maxshape=(None,))
            d.attrs["Series"] = np.bytes_("Task")
            d.attrs["Field Kinds"] = np.array(TASK_KINDS, dtype="S5")
            d.attrs["Field Units"] = np.array(TASK_UNITS, dtype="S5")
        # clock offsets (reference = true clock), with measurement error
        if not a.no_offsets:
            m = max(2, a.measurements)
            span = last - first
            recs = []
            for i in range(m):
                # from 1 s before the first event to 1 s after the last
                tt = first - 10**9 + (span + 2 * 10**9) * i // (m - 1)
                lo = local_of(tt, skew, drift, sim.t0)
                err = int(rng.integers(-a.offset_error_ns,
                                       a.offset_error_ns + 1))
                rtt = 2 * a.offset_error_ns + int(rng.integers(0, 1000))
                recs.append((lo, tt - lo + err, rtt, 2, 0 if i == 0 else 1))
            g.create_dataset("ClockOffsets", data=np.array(recs, CLOCK))
        if damage == "notgroup":
            g.create_dataset("Events", data=np.zeros(3))
            return
        ev = g.create_group("Events")
        ev.attrs["Events Format Version"] = np.int32(1)
        regions, comms, members = [], [], []
        for t in tasks:
            rs = sim.recs[t]
            arr = np.zeros(len(rs), dtype=REC)
            for i, r in enumerate(rs):
                arr[i] = (local_of(r[0], skew, drift, sim.t0),) + r[1:]
            if damage == "kind" and t == tasks[0]:
                arr["Kind"][len(rs) // 2] = 99
            if damage == "region" and t == tasks[0]:
                i = int(np.nonzero(arr["Kind"] == K_ENTER)[0][0])
                arr["Id"][i] = 9999
            if damage == "type" and t == tasks[0]:
                ev.create_dataset(str(t), data=np.arange(10))
                continue
            if damage == "huge" and t == tasks[0]:
                ev.create_dataset(str(t), shape=(2**40,), dtype=REC,
                                  chunks=(4096,))
                continue
            d = ev.create_dataset(str(t), data=arr,
                                  chunks=(min(4096, len(rs)),),
                                  shuffle=True, compression="gzip",
                                  fletcher32=True)
            d.attrs["Task"] = np.uint32(t)
            d.attrs["Pid"] = np.uint32(10000 + t)
            d.attrs["World Rank"] = np.int32(sim.wr[t])
            d.attrs["World Size"] = np.int32(sim.ntasks)
            d.attrs["Library Version"] = np.bytes_("0.1.0")
            d.attrs["Spill File"] = np.bytes_("%s_%s_%s.%d.%d.sh5ev" % (
                a.job, a.step, name, t, 10000 + t))
            d.attrs["Blocks"] = np.uint32(1 + len(rs) // 1600)
            d.attrs["Blocks Dropped"] = np.uint32(0)
            d.attrs["Records Rejected"] = np.uint64(0)
            d.attrs["Events Lost"] = np.uint64(0)
            d.attrs["Torn Tail"] = np.int32(0)
            d.attrs["Truncated"] = np.int32(0)
            d.attrs["Problem"] = np.bytes_("")
            for i, rn in enumerate(REGIONS):
                regions.append((t, i + 1, F_MPI if rn.startswith("MPI_")
                                else 0, rn.encode()))
            comms.append((t, 0, 0, sim.ntasks, sim.wr[t]))
            for gl in sim.sub:
                if (t, gl) in sim.local:
                    ms = sim.comms[gl]
                    comms.append((t, 2, gl, len(ms), ms.index(sim.wr[t])))
        for gl in sim.sub:
            ms = sim.comms[gl]
            if any((t, gl) in sim.local for t in tasks):
                rows = [(gl, i, w) for i, w in enumerate(ms)]
                if damage == "members":
                    rows.append((gl, len(ms), ms[0]))
                members += rows
        ev.create_dataset("Regions", data=np.array(regions, REGION))
        ev.create_dataset("Comms", data=np.array(comms, COMM))
        ev.create_dataset("CommMembers", data=np.array(members, MEMBER))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--job", default="4343")
    p.add_argument("--step", default="0")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--tasks", type=int, default=2, help="tasks per node")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--skew-ms", help="per-node skews, comma-separated "
                   "(default: random in +-5 ms)")
    p.add_argument("--drift-ppm", type=float, default=20.0)
    p.add_argument("--offset-error-ns", type=int, default=20000)
    p.add_argument("--measurements", type=int, default=5)
    p.add_argument("--no-offsets", action="store_true")
    p.add_argument("--lat-intra-ns", type=int, default=1500)
    p.add_argument("--lat-inter-ns", type=int, default=6000)
    p.add_argument("--reverse-ranks", action="store_true",
                   help="world rank = ntasks - 1 - task")
    p.add_argument("--damage", choices=["kind", "type", "members", "region",
                                        "huge", "notgroup"])
    p.add_argument("--truth", help="write the truth as JSON here")
    a = p.parse_args()
    sim = Sim(a)
    sim.run()
    skews, drifts = node_clock(sim, a)
    os.makedirs(a.dir, exist_ok=True)
    for k in range(a.nodes):
        path = os.path.join(a.dir, "%s_%s_node%d.h5" % (a.job, a.step, k + 1))
        write_node(a, sim, k, skews[k], drifts[k], path,
                   a.damage if k == 0 else None)
    if a.truth:
        tr = sim.truth
        tr["tasks"] = sim.ntasks
        tr["nodes"] = a.nodes
        tr["world_rank"] = sim.wr
        tr["node_of_task"] = sim.node
        tr["skew_ns"] = skews
        tr["drift_ppm"] = drifts
        tr["events"] = sum(len(r) for r in sim.recs)
        tr["true_ns"] = {str(t): [r[0] for r in sim.recs[t]]
                         for t in range(sim.ntasks)}
        tr["local_ns"] = {str(t): [local_of(r[0], skews[sim.node[t]],
                                            drifts[sim.node[t]], sim.t0)
                                   for r in sim.recs[t]]
                          for t in range(sim.ntasks)}
        tr["kinds"] = {str(t): [r[1] for r in sim.recs[t]]
                       for t in range(sim.ntasks)}
        tr["comms"] = {str(g): m for g, m in sim.comms.items()}
        with open(a.truth, "w") as f:
            json.dump(tr, f)


if __name__ == "__main__":
    main()
