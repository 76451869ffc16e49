"""The split search on the nodes that may split only (``choose_splits(can=)``, session 11).

Grows :class:`anonml.anonymize._hist_tree.HistTree` (gini, k=100, Adult's 12 QIs binned with
255 bins at most, the ``income`` label) on Adult train resampled with jitter to ``--rows``
rows (``bench_memory_scale.build_table``), from 1 root and from the rows cut into ``R`` equal
roots (``--roots``: 170 and 1,700 roots of 2M rows are nodes of about 12,000 and 1,200 rows,
where the Dask engine's local subtrees start at 100M and at 10M rows). Each configuration is
timed with the search over every frontier node ("all", as before) and over the nodes that may
split ("can"), alternately, ``--repeats`` times each, in one process; the trees must be the
same (node arrays and every row's leaf).

Usage::

    python benchmarks/bench_choose_splits.py --rows 2M --roots 1 170 1700 --repeats 3 \\
        --out benchmarks/results/session11/choose_splits.json

Prints a Markdown table (median seconds and the ratio) and writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M")
    parser.add_argument("--roots", nargs="+", type=int, default=[1, 170, 1700])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/choose_splits.json")
    args = parser.parse_args()

    import anonml.anonymize._hist_tree as HT
    from anonml.encoding import TableEncoder
    from bench_memory_scale import build_table, parse_size

    n = parse_size(args.rows)
    import pandas as pd

    X, y, qi = build_table(n)
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    B, is_cat, n_bins = TableEncoder(qi, cat, 255).fit(X[qi]).bins(X[qi])
    codes = np.unique(np.asarray(y).astype(str), return_inverse=True)[1].astype(np.int64)
    search = HT.choose_splits

    def every_node(H_list, cnt, T, is_cat, k, criterion, can=None):
        return search(H_list, cnt, T, is_cat, k, criterion)

    rows = []
    for roots in args.roots:
        init = None if roots <= 1 else (np.arange(n, dtype=np.int64) * roots // n)
        times: dict[str, list[float]] = {"all": [], "can": []}
        trees: dict[str, tuple] = {}
        for _ in range(args.repeats):
            for name, fn in (("all", every_node), ("can", search)):
                HT.choose_splits = fn
                try:
                    tree = HT.HistTree(100, None, "gini")
                    t0 = time.perf_counter()
                    leaf = tree.fit_apply(B, is_cat, n_bins, codes, init=init)
                    times[name].append(time.perf_counter() - t0)
                finally:
                    HT.choose_splits = search
                trees[name] = (leaf, tree.feature_, tree.threshold_, tree.children_left_)
        same = all(np.array_equal(a, b) for a, b in zip(trees["all"], trees["can"]))
        if not same:
            raise SystemExit(f"the trees differ with {roots} roots")
        med = {key: statistics.median(v) for key, v in times.items()}
        rows.append({"roots": roots, "rows_per_root": n // max(roots, 1), "seconds": times,
                     "median_all": med["all"], "median_can": med["can"],
                     "ratio": med["can"] / med["all"], "same_tree": same,
                     "nodes": int(trees["can"][1].size)})
    load = os.getloadavg()
    print(f"{n:,} rows, {len(qi)} QIs, k=100, gini; load {load[0]:.2f} {load[1]:.2f}")
    print("| roots (rows each) | every node s | nodes that may split s | ratio | same tree |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['roots']} ({r['rows_per_root']:,}) | {r['median_all']:.2f} | "
              f"{r['median_can']:.2f} | {r['ratio']:.2f} | {r['same_tree']} |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rows": n, "qi": qi, "load": load, "configs": rows}, indent=1))
    tmp.replace(out)


if __name__ == "__main__":
    main()
