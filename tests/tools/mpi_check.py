"""mpi_check.py - compare the events libsh5mpi recorded for sh5_mpitest
with what the program says it did (tests/tools/mpi_preload.sh).

    mpi_check.py JSON DUMP...

JSON is sh5_mpitest's -j file; each DUMP is sh5ev_dump's text of one
spill file.  Checks: one file per rank (RANK records), SEND totals per
(from, to, phase) equal the program's, every receive matched (RECV totals
per pair equal SEND totals), wildcard receives resolved, CBEGIN/CEND per
operation and rank equal the program's, communicator definitions agree
across ranks, every id used is defined, MPI regions present and ENTER/EXIT
balanced, one PHASE mark from MPI_Pcontrol per iteration, nothing dropped.
Prints "FAIL: ..." per problem; exit 0 pass, 1 fail.
"""
import collections
import json
import sys

OPS = ["barrier", "bcast", "scatter", "gather", "reduce", "allreduce",
       "allgather", "alltoall", "reduce_scatter", "scan", "exscan"]
ROOTED = {"bcast", "scatter", "gather", "reduce"}
F_MPI, F_MEMBERS, F_NB, F_ANYSRC, F_ANYTAG, F_PCONTROL = 1, 2, 4, 8, 16, 32
# The calls sh5_mpitest makes (all wrapped).
USED = ["Finalize", "Pcontrol", "Send", "Recv", "Isend", "Irecv",
        "Wait", "Waitall", "Testall", "Waitany", "Waitsome", "Sendrecv",
        "Comm_split", "Comm_dup", "Comm_free", "Cart_create", "Cart_sub",
        "Comm_split_type", "Comm_create", "Comm_create_group", "Barrier", "Bcast",
        "Scatter", "Scatterv", "Gather", "Gatherv", "Reduce", "Allreduce",
        "Allgather", "Allgatherv", "Alltoall", "Alltoallv",
        "Reduce_scatter", "Scan", "Exscan", "Ssend", "Issend", "Bsend",
        "Testany", "Testsome", "Sendrecv_replace", "Comm_dup_with_info",
        "Rsend", "Irsend", "Ibsend", "Request_free", "Intercomm_merge",
        "Graph_create", "Dist_graph_create", "Dist_graph_create_adjacent"]
# ... of which these with one rank.
SINGLE = ["Finalize", "Pcontrol", "Sendrecv", "Comm_split",
          "Comm_dup", "Comm_free", "Barrier", "Allreduce", "Cart_create",
          "Cart_sub", "Comm_split_type", "Comm_create", "Comm_create_group",
          "Sendrecv_replace", "Comm_dup_with_info"]

fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def parse(path):
    """One dump: regions, comms, events, info."""
    d = {"path": path, "regions": {}, "comms": {}, "events": [],
         "info": None, "order_ok": True}
    defined_comms = {0, 1}
    defined_regions = set()
    with open(path) as f:
        for line in f:
            w = line.rstrip("\n").split(" ")
            if w[0] == "REGION":
                d["regions"][int(w[1])] = (int(w[2]), " ".join(w[3:]))
                defined_regions.add(int(w[1]))
            elif w[0] == "COMM":
                local = int(w[1])
                d["comms"][local] = {
                    "global": int(w[2]), "size": int(w[3]),
                    "rank": int(w[4]), "members": [int(x) for x in w[5:]]}
                defined_comms.add(local)
            elif w[0] == "EV":
                ev = {"t": int(w[1]), "kind": w[2], "op": int(w[3]),
                      "flags": int(w[4]), "id": int(w[5]),
                      "peer": int(w[6]), "tag": int(w[7]),
                      "bytes": int(w[8])}
                if ev["kind"] in ("SEND", "RECV", "CBEGIN", "CEND") and \
                        ev["id"] not in defined_comms:
                    fail("%s: %s on comm %d before its definition"
                         % (path, ev["kind"], ev["id"]))
                if ev["kind"] in ("ENTER", "EXIT") and \
                        ev["id"] not in defined_regions:
                    fail("%s: %s of region %d before its definition"
                         % (path, ev["kind"], ev["id"]))
                d["events"].append(ev)
            elif w[0] == "INFO":
                d["info"] = dict(x.split("=", 1) for x in w[1:] if "=" in x)
    return d


def main():
    prog = json.load(open(sys.argv[1]))
    n = prog["world_size"]
    dumps = [parse(p) for p in sys.argv[2:]]
    by_rank = {}
    for d in dumps:
        info = d["info"] or {}
        for k in ("bad", "torn", "truncated", "rejected", "lost"):
            if info.get(k, "?") != "0":
                fail("%s: INFO %s=%s" % (d["path"], k, info.get(k)))
        ranks = [e for e in d["events"] if e["kind"] == "RANK"]
        if len(ranks) != 1:
            fail("%s: %d RANK records" % (d["path"], len(ranks)))
            continue
        if ranks[0]["id"] != n:
            fail("%s: RANK world size %d, program says %d"
                 % (d["path"], ranks[0]["id"], n))
        by_rank[ranks[0]["peer"]] = d
    if sorted(by_rank) != list(range(n)):
        fail("RANK records name ranks %s, want 0..%d"
             % (sorted(by_rank), n - 1))
        return

    want = collections.Counter()
    for m in prog["p2p"]:
        want[(m["from"], m["to"], m["phase"])] += m["messages"]
        want[(m["from"], m["to"], m["phase"], "b")] += m["bytes"]
    sent = collections.Counter()
    recvd = collections.Counter()
    wild = 0
    comms = collections.defaultdict(dict)  # global -> rank -> def
    all_names = set()
    for r, d in by_rank.items():
        regions = d["regions"]
        phase = 0
        phases = []
        depth = collections.Counter()
        coll = collections.Counter()
        cend = collections.Counter()
        for e in d["events"]:
            k = e["kind"]
            if k == "PHASE":
                phase = e["id"]
                phases.append(e)
            elif k == "SEND":
                if not 0 <= e["peer"] < n:
                    fail("rank %d: SEND to %d" % (r, e["peer"]))
                sent[(r, e["peer"], phase)] += 1
                sent[(r, e["peer"], phase, "b")] += e["bytes"]
            elif k == "RECV":
                if not 0 <= e["peer"] < n or e["tag"] < 0:
                    fail("rank %d: RECV source %d tag %d unresolved"
                         % (r, e["peer"], e["tag"]))
                if e["flags"] & (F_ANYSRC | F_ANYTAG):
                    wild += 1
                recvd[(e["peer"], r)] += 1
                recvd[(e["peer"], r, "b")] += e["bytes"]
            elif k in ("CBEGIN", "CEND"):
                if not 1 <= e["op"] <= len(OPS):
                    fail("rank %d: %s op %d" % (r, k, e["op"]))
                    continue
                op = OPS[e["op"] - 1]
                rooted = 0 <= e["peer"] < n
                if rooted != (op in ROOTED):
                    fail("rank %d: %s %s root %d" % (r, k, op, e["peer"]))
                (coll if k == "CBEGIN" else cend)[op] += 1
            elif k in ("ENTER", "EXIT"):
                depth[e["id"]] += 1 if k == "ENTER" else -1
        for op in OPS:
            if coll[op] != prog["collectives"][op][r]:
                fail("rank %d: %d CBEGIN %s, program made %d"
                     % (r, coll[op], op, prog["collectives"][op][r]))
            if cend[op] != coll[op]:
                fail("rank %d: %d CEND %s, %d CBEGIN"
                     % (r, cend[op], op, coll[op]))
        # MPI_Finalize's EXIT comes after PMPI_Finalize: still recorded.
        for rid, v in depth.items():
            if v != 0:
                fail("rank %d: region %s ENTER-EXIT %d"
                     % (r, regions.get(rid, (0, rid))[1], v))
        names = {name for flags, name in regions.values() if flags & F_MPI}
        all_names.update(names)
        init = "Init_thread" if prog["init_thread"] else "Init"
        for c in (init, "Finalize", "Pcontrol", "Barrier"):
            if "MPI_" + c not in names:
                fail("rank %d: no region MPI_%s" % (r, c))
        if "mpitest_iteration" not in {nm for _, nm in regions.values()}:
            fail("rank %d: no region mpitest_iteration (sh5_ev_region)" % r)
        pc = [p for p in phases if p["flags"] & F_PCONTROL]
        if len(pc) != prog["iterations"] or \
                [p["id"] for p in pc] != list(range(1, len(pc) + 1)) or \
                any(p["tag"] != 1 for p in pc):
            fail("rank %d: PHASE marks %s, want 1..%d level 1"
                 % (r, [(p["id"], p["tag"]) for p in pc],
                    prog["iterations"]))
        for local, c in d["comms"].items():
            comms[c["global"]][r] = dict(c, local=local)
        globals_ = [c["global"] for c in d["comms"].values()]
        if len(set(globals_)) != len(globals_):
            fail("rank %d: one global id for two communicators" % r)

    for c in USED:
        if "MPI_" + c not in all_names and (n > 1 or c in SINGLE):
            fail("no rank has region MPI_%s" % c)
    if sent != want:
        for k in sorted(set(sent) | set(want), key=str):
            if sent[k] != want[k]:
                fail("SEND %s: recorded %d, program %d"
                     % (k, sent[k], want[k]))
    total = collections.Counter()
    for k, v in want.items():
        total[(k[0], k[1]) + (("b",) if len(k) == 4 else ())] += v
    if +recvd != +total:
        fail("RECV totals per pair %s differ from SEND totals %s"
             % (dict(recvd), dict(total)))
    if wild != prog["wildcard_receives"]:
        fail("%d wildcard RECV, program made %d"
             % (wild, prog["wildcard_receives"]))

    ncomm = 0
    for g, defs in comms.items():
        ncomm += 1
        sizes = {c["size"] for c in defs.values()}
        if len(sizes) != 1:
            fail("comm %x: sizes %s" % (g, sizes))
            continue
        size = sizes.pop()
        if len(defs) != size:
            fail("comm %x: defined by %d ranks, size %d"
                 % (g, len(defs), size))
        heads = [c for c in defs.values() if c["rank"] == 0]
        if len(heads) != 1 or len(heads[0]["members"]) != size:
            fail("comm %x: no member list from its rank 0" % g)
            continue
        members = heads[0]["members"]
        if (g >> 32) - 1 != members[0]:
            fail("comm %x: global id names rank %d, rank 0 is %d"
                 % (g, (g >> 32) - 1, members[0]))
        for r, c in defs.items():
            if members[c["rank"]] != r:
                fail("comm %x: rank %d is member %d, list says %d"
                     % (g, r, c["rank"], members[c["rank"]]))
            if c["members"] and c["rank"] != 0:
                fail("comm %x: members from rank %d" % (g, c["rank"]))
    if ncomm != sum(prog["communicators_made"]):
        fail("%d communicators defined, the program made %d"
             % (ncomm, sum(prog["communicators_made"])))
    for r in range(n):
        mine = sum(1 for g in comms if (g >> 32) - 1 == r)
        if mine != prog["communicators_made"][r]:
            fail("rank %d is rank 0 of %d communicators, program says %d"
                 % (r, mine, prog["communicators_made"][r]))
    if not fails:
        print("ok: %d ranks, %d sends, %d receives, %d communicators"
              % (n, sum(v for k, v in sent.items() if len(k) == 3),
                 sum(v for k, v in recvd.items() if len(k) == 2), ncomm))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
