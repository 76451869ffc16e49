"""Speed of the information-loss metrics and of Hierarchy look-ups on Adult.

1. ``information_loss`` (GCP, NCP, DM, GIL, NGIL, C_AVG, CM in one call) on all 48,842 Adult
   rows with the 12 features as QIs (10 with a shipped hierarchy, 2 numeric by range), for a
   partition into classes of about k = 10 and k = 100 rows (rows sorted by the QIs, then cut
   into consecutive runs: a realistic, non-trivial partition).
2. The same on Adult resampled to 1,000,000 rows.
3. ``Hierarchy.leaf_codes`` and ``Hierarchy.common_ancestor`` alone (native-country) on 1M rows.

Usage::

    python benchmarks/bench_metrics.py           # about half a minute on one core
    python benchmarks/bench_metrics.py --quick   # Adult only

Writes benchmarks/results/metrics.json and prints a Markdown table (median of the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from anonml.datasets import load_adult, load_adult_hierarchies
from anonml.privacy._metrics import information_loss


def median_time(fn, repeats):
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return float(np.median(runs)), runs


def runs_of(frame, qi, k):
    order = np.lexsort([frame[c].rank(method="dense").to_numpy() for c in reversed(qi)])
    groups = np.empty(len(frame), dtype=np.int64)
    groups[order] = np.arange(len(frame)) // k
    return groups


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    adult = load_adult()
    X, y = adult.X, adult.y
    qi = list(adult.feature_names)
    hs = load_adult_hierarchies()
    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()}, "rows": []}
    sizes = [("adult", X, y)]
    if not args.quick:
        rng = np.random.default_rng(0)
        idx = rng.integers(0, len(X), 1_000_000)
        sizes.append(
            ("adult x1M", X.iloc[idx].reset_index(drop=True), y.iloc[idx].reset_index(drop=True))
        )
    print("| data | rows | k | classes | GCP | NGIL | seconds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, frame, labels in sizes:
        for k in (10, 100):
            groups = runs_of(frame, qi, k)
            out = {}

            def call(frame=frame, groups=groups, labels=labels, k=k, out=out):
                out.update(information_loss(frame, groups, qi, k=k, labels=labels, hierarchies=hs))

            seconds, runs = median_time(call, args.repeats if len(frame) < 100_000 else 3)
            results["rows"].append(
                {
                    "data": name,
                    "rows": len(frame),
                    "k": k,
                    "seconds": seconds,
                    "runs": runs,
                    "metrics": out,
                }
            )
            print(
                f"| {name} | {len(frame):,} | {k} | {out['n_classes']:,} | {out['gcp']:.4f} "
                f"| {out['ngil']:.4f} | {seconds:.3f} |"
            )
    if not args.quick:
        h = hs["native-country"]
        values = sizes[-1][1]["native-country"]
        codes = h.leaf_codes(values)
        groups = runs_of(sizes[-1][1], qi, 100)
        t_codes, _ = median_time(lambda: h.leaf_codes(values), 3)
        t_lca, _ = median_time(lambda: h.common_ancestor(codes, groups, int(groups.max()) + 1), 3)
        results["hierarchy_1M"] = {"leaf_codes_seconds": t_codes, "common_ancestor_seconds": t_lca}
        print(
            f"\nnative-country on 1M rows: leaf_codes {t_codes:.3f} s, "
            f"common_ancestor (10,000 groups) {t_lca:.3f} s"
        )
    out_path = Path(__file__).parent / "results" / "metrics.json"
    out_path.write_text(json.dumps(results, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
