#!/usr/bin/python3
"""Generate a job file in the shape `sh5merge merge` writes (or, with
--stock, the shape of Slurm's stock sh5util: no EpochTimeNs/SyncTimeNs).

Values are deterministic for a given --seed.  --spike NODE:TASK:SAMPLE
multiplies CPUUtilization of that sample of that task by 50 (an anomaly).
"""
import argparse

import h5py
import numpy as np

TASK_FIELDS = [("CPUFrequency", "<u8"), ("CPUTime", "<f8"),
               ("CPUUtilization", "<f8"), ("RSS", "<u8"), ("VMSize", "<u8"),
               ("Pages", "<u8"), ("ReadMB", "<f8"), ("WriteMB", "<f8")]
ENERGY_FIELDS = [("Power", "<u8"), ("CPUFrequency", "<u8")]


def series_dtype(fields, stock, sync):
    d = [("ElapsedTime", "<u8"), ("EpochTime", "<u8")] + fields
    if not stock:
        d.append(("EpochTimeNs", "<i8"))
        if sync:
            d.append(("SyncTimeNs", "<i8"))
    return np.dtype(d)


def times(n, start_ns, interval, jitter_ns, rng):
    t = start_ns + np.arange(n, dtype=np.int64) * int(interval * 1e9)
    if jitter_ns:
        t = t + rng.integers(0, jitter_ns, n)
    return t


def fill_times(a, t, start_ns, stock, sync, sync_shift):
    a["EpochTime"] = t // 1000000000
    a["ElapsedTime"] = (t - start_ns) // 1000000000
    if not stock:
        a["EpochTimeNs"] = t
        if sync:
            a["SyncTimeNs"] = t + sync_shift


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--tasks", type=int, default=2, help="tasks per node")
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--steps", default="0")
    p.add_argument("--stock", action="store_true")
    p.add_argument("--sync", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--spike", action="append", default=[])
    p.add_argument("--job", default="4242")
    p.add_argument("--skip-task", type=int, action="append", default=[],
                   help="leave this global task id out (a gap)")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    start_ns = 1700000000 * 1000000000 + 250000000
    spikes = set()
    for s in a.spike:
        n, t, i = s.split(":")
        spikes.add((int(n), int(t), int(i)))
    with h5py.File(a.out, "w") as f:
        f.attrs["sh5 Format Version"] = np.int32(1)
        f.attrs["Job ID"] = a.job
        for step in a.steps.split(","):
            nodes = f.create_group("Steps/%s/Nodes" % step)
            for ni in range(a.nodes):
                # group names deliberately not in index order
                g = nodes.create_group("node%02d" % (a.nodes - 1 - ni))
                g.attrs["Node Index"] = np.int32(ni)
                g.attrs["Node Name"] = "cn%03d" % ni
                g.attrs["Number of Tasks"] = np.int32(a.tasks)
                tasks = g.create_group("Tasks")
                for k in range(a.tasks):
                    tid = ni * a.tasks + k
                    if tid in a.skip_task:
                        continue
                    dt = series_dtype(TASK_FIELDS, a.stock, a.sync)
                    arr = np.zeros(a.samples, dtype=dt)
                    t = times(a.samples, start_ns, a.interval, 20000000, rng)
                    fill_times(arr, t, start_ns, a.stock, a.sync, 1000 * ni)
                    load = 0.5 + 0.1 * tid + 0.05 * ni
                    util = np.clip(rng.normal(60 + 5 * tid, 3, a.samples), 0, None)
                    for si in range(a.samples):
                        if (ni, tid, si) in spikes:
                            util[si] *= 50
                    arr["CPUFrequency"] = 2400000 + rng.integers(0, 1000, a.samples)
                    arr["CPUTime"] = load * a.interval * (1 + 0.1 * rng.random(a.samples))
                    arr["CPUUtilization"] = util
                    arr["RSS"] = 100000 + tid * 1000 + rng.integers(0, 5000, a.samples)
                    arr["VMSize"] = 400000 + rng.integers(0, 5000, a.samples)
                    arr["Pages"] = rng.integers(0, 3, a.samples)
                    arr["ReadMB"] = rng.random(a.samples) * 2
                    arr["WriteMB"] = rng.random(a.samples)
                    tasks.create_dataset(str(tid), data=arr,
                                         chunks=(min(1024, a.samples),))
                dt = series_dtype(ENERGY_FIELDS, a.stock, a.sync)
                arr = np.zeros(a.samples, dtype=dt)
                t = times(a.samples, start_ns, a.interval, 0, rng)
                fill_times(arr, t, start_ns, a.stock, a.sync, 1000 * ni)
                arr["Power"] = 200 + rng.integers(0, 20, a.samples)
                arr["CPUFrequency"] = 2400000
                g.create_dataset("Energy", data=arr)
                # not series: must be skipped
                tot = g.create_group("Totals")
                tot.create_dataset("Task", data=np.zeros(3))
                g.create_dataset("ClockOffsets", data=np.zeros(
                    4, dtype=[("EpochTimeNs", "<i8"), ("OffsetNs", "<i8")]))


if __name__ == "__main__":
    main()
