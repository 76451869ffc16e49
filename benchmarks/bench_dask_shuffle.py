"""Dask's p2p shuffle against its in-memory task shuffle, as the Dask tree's local subtrees use
them (issue 21, session 8): rows of the shape ``kernels.active_rows`` makes (node, class,
position, 12 uint8 bins) sent to the output partition given in a column
(:func:`anonml.dask._balance.shuffle_to`), on a LocalCluster of 2 workers x 4 GB, one thread
each. Prints and records the wall and the workers' CPU seconds per method, interleaved::

    python benchmarks/bench_dask_shuffle.py --rows-per-part 1000000 --parts 5 --out <json>
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd


def make(i: int, n: int, n_out: int) -> pd.DataFrame:
    rng = np.random.default_rng(i)
    d = {"__node": rng.integers(0, 2 * n_out, n), "__y": rng.integers(0, 2, n),
         "__at": np.arange(n, dtype=np.int64)}
    for j in range(12):
        d[f"__b{j}"] = rng.integers(0, 200, n).astype(np.uint8)
    d["_partitions"] = d["__node"] % n_out
    return pd.DataFrame(d)


def main() -> None:
    import dask
    import dask.dataframe as dd
    import distributed
    import psutil

    from anonml.dask._balance import shuffle_to

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-per-part", type=int, default=1_000_000)
    ap.add_argument("--parts", type=int, default=5)
    ap.add_argument("--n-out", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    client = distributed.Client(distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, memory_limit="4GB"))
    procs = [psutil.Process(p) for p in client.run(os.getpid).values()]

    def cpu() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in procs)

    load0 = os.getloadavg()
    runs = []
    for _ in range(a.repeats):
        for method in ("p2p", "tasks"):
            frames = [dask.delayed(make)(i, a.rows_per_part, a.n_out) for i in range(a.parts)]
            df = dd.from_delayed(frames, meta=make(0, 0, a.n_out), verify_meta=False).persist()
            distributed.wait(df)
            c0, t0 = cpu(), time.perf_counter()
            out = shuffle_to(df, "_partitions", a.n_out, method)
            lens = client.gather(client.compute([dask.delayed(len)(p) for p in out.to_delayed()]))
            run = dict(method=method, wall_s=round(time.perf_counter() - t0, 3),
                       worker_cpu_s=round(cpu() - c0, 3), rows=int(sum(lens)))
            print(run, flush=True)
            runs.append(run)
            del df, out
    res = dict(rows=a.rows_per_part * a.parts, parts=a.parts, n_out=a.n_out, runs=runs,
               loadavg_before=load0, loadavg_after=os.getloadavg())
    print(res["loadavg_before"], "->", res["loadavg_after"])
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    client.close()


if __name__ == "__main__":
    main()
