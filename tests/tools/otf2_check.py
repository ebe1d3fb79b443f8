#!/usr/bin/python3
"""otf2_check.py ARCHIVE.otf2 JOB.h5 STEP [rank|node] - read an archive of `sh5merge
otf2` back with python3-otf2 and check it against the job file: event
counts per kind, per-location timestamps equal to the records'
SyncTimeNs and non-decreasing, every MpiSend has its MpiRecv, locations
grouped by node in the system tree (and the location groups: one per
rank, or one per node with "node"), clock properties.  Prints one line
per check; exit 1 on any failure."""
import collections
import sys

import h5py
import numpy as np
import otf2

KINDS = {1: "Enter", 2: "Leave", 3: "ParameterInt", 4: "MpiSend",
         5: "MpiRecv", 6: "MpiCollectiveBegin", 7: "MpiCollectiveEnd"}
fails = 0


def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        fails += 1


def job_events(path, step):
    """task -> (node name, kinds array, SyncTimeNs array)"""
    out = {}
    with h5py.File(path, "r") as f:
        for g in f["Steps/%s/Nodes" % step].values():
            if "Events" not in g:
                continue
            name = g.attrs.get("Node Name", b"")
            name = name.decode() if isinstance(name, bytes) else str(name)
            ev = g["Events"]
            for k in ev:
                if not k.isdigit():
                    continue
                d = ev[k][()]
                sync = ev["SyncTimeNs"][k][()]
                out[int(k)] = (name or g.name.split("/")[-1], d["Kind"],
                               sync)
    return out


def main():
    arch, job, step = sys.argv[1:4]
    groups = sys.argv[4] if len(sys.argv) > 4 else "rank"
    truth = job_events(job, step)
    want = collections.Counter()
    for _, kinds, _ in truth.values():
        for k, n in zip(*np.unique(kinds, return_counts=True)):
            if int(k) in KINDS:
                want[KINDS[int(k)]] += int(n)
    got = collections.Counter()
    times = collections.defaultdict(list)
    sends, recvs = collections.Counter(), collections.Counter()
    with otf2.reader.open(arch) as tr:
        defs = tr.definitions
        cp = defs.clock_properties
        locs = {l.name: l for l in defs.locations}
        check(len(locs) == len(truth),
              "one location per rank (%d)" % len(locs))
        bad = [n for n, l in locs.items()
               if l.group.system_tree_parent.name !=
               truth[int(n.split()[1])][0]]
        check(not bad, "locations grouped by node (system tree)")
        lg = list(defs.location_groups)
        nodes = {v[0] for v in truth.values()}
        if groups == "node":
            check(len(lg) == len(nodes) and all(
                l.group.name == truth[int(n.split()[1])][0]
                for n, l in locs.items()),
                "a location group per node (%d)" % len(lg))
        else:
            check(len(lg) == len(truth) and all(
                g.location_group_type == otf2.LocationGroupType.PROCESS
                for g in lg), "a location group (process) per rank")

        def comm_loc(comm, rank):
            m = comm.group.members[rank]
            if isinstance(m, int):      # index into the locations group
                for g in defs.groups:
                    if g.group_type == otf2.GroupType.COMM_LOCATIONS:
                        return g.members[m].name
            return m.name
        for loc, ev in tr.events:
            name = type(ev).__name__
            got[name] += 1
            times[loc.name].append(ev.time)
            if name == "MpiSend":
                sends[(loc.name, comm_loc(ev.communicator, ev.receiver),
                       ev.communicator.name, ev.msg_tag)] += 1
            elif name == "MpiRecv":
                recvs[(comm_loc(ev.communicator, ev.sender), loc.name,
                       ev.communicator.name, ev.msg_tag)] += 1
    check(dict(got) == dict(want),
          "event counts per kind equal the job file's: %s" % dict(got))
    dec = [n for n, t in times.items() if any(np.diff(t) < 0)]
    check(not dec, "timestamps non-decreasing on every location")
    same = all(sorted(times["task %d" % t]) ==
               sorted(int(s) for k, s in zip(kinds, sync) if int(k) in KINDS)
               for t, (_, kinds, sync) in truth.items())
    check(same, "timestamps are the records' SyncTimeNs")
    check(sends == recvs and sum(sends.values()) == want["MpiSend"],
          "every send has its receive (%d)" % sum(sends.values()))
    allt = [x for t in times.values() for x in t]
    check(cp.timer_resolution == 10**9 and cp.global_offset == min(allt)
          and cp.trace_length >= max(allt) - min(allt)
          and cp.realtime_timestamp == cp.global_offset,
          "clock properties (1 ns, offset = first event)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
