"""What ``save_mapping=`` (``--save-mapping``) costs on the Dask engine (issue 21, item 4).

Adult resampled to N rows (with replacement, 12 quasi-identifiers, the true ``income`` labels
as the guide; ``capital-gain``/``capital-loss`` have more than 255 distinct values, so their
thresholds go through the passes that keep them off every training value), 8 Parquet files,
a LocalCluster of 2 worker processes x 2 GB (one thread each). One run of
:func:`anonml.dask.anonymize_dataset` with ``save_mapping``: the engine's wall seconds per
stage, the mapping stage among them; then the saved file is loaded (as data, vetted) and its
``transform`` of the same N rows in this process is timed and compared with the Dask output.

Usage::

    python benchmarks/bench_dask_mapping.py --rows 1000000 --repeat 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

QI = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
      "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    import distributed

    import anonml.dask as ad
    from anonml.datasets import load_adult
    from anonml.safemodel import load_model

    d = load_adult()
    src = d.X.assign(income=d.y.to_numpy()).dropna().reset_index(drop=True)
    rng = np.random.default_rng(0)
    frame = src.iloc[rng.integers(0, len(src), args.rows)].reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        for i, idx in enumerate(np.array_split(np.arange(len(frame)), 8)):
            frame.iloc[idx].to_parquet(data / f"part-{i}.parquet", index=False)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           memory_limit="2GB", dashboard_address=":0")
        client = distributed.Client(cluster, set_as_default=False)
        try:
            for r in range(args.repeat):
                out_dir, mfile = Path(tmp) / f"out{r}", Path(tmp) / f"m{r}.skops"
                t = time.perf_counter()
                res = ad.anonymize_dataset(data, out_dir, k=args.k, quasi_identifiers=QI,
                                           label="income", client=client, save_mapping=mfile)
                wall = time.perf_counter() - t
                stages = ", ".join(f"{s} {v:.1f}" for s, v in res.seconds.items())
                print(f"run {r}: {args.rows:,} rows, {res.n_groups:,} groups, wall {wall:.1f} s "
                      f"({stages}); mapping {100 * res.seconds['mapping'] / wall:.0f} % of wall; "
                      f"file {mfile.stat().st_size / 1e6:.2f} MB")
                m = load_model(mfile, isolate=False)
                rows = frame.drop(columns=["income"])
                t = time.perf_counter()
                mapped = m.transform(rows)
                sec = time.perf_counter() - t
                out = pd.read_parquet(out_dir)
                same = all((mapped[c].astype(str).to_numpy() == out[c].astype(str).to_numpy())
                           .all() for c in QI)
                print(f"run {r}: in-memory transform of the {args.rows:,} training rows with "
                      f"the saved mapping {sec:.1f} s; equal to the Dask output: {same}")
        finally:
            client.close()
            cluster.close()


if __name__ == "__main__":
    main()
