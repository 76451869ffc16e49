"""Speed of AccuracyGuidedAnonymizer.fit_transform (issue targets in BENCHMARKS.md).

1. Adult train (32,561 rows, 12 QI), labels as the guide, k in 10/100/1000, exact and hist trees:
   the median of several runs, with the share of each step (``timings_``).
2. Scale: Adult train resampled with jitter to 100k, 300k and 1M rows, k=100: seconds and
   seconds per million rows, to show linear growth.

Usage::

    python benchmarks/bench_accuracy_guided.py            # everything (about 2 minutes)
    python benchmarks/bench_accuracy_guided.py --quick    # Adult only

Writes benchmarks/results/accuracy_guided.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml import AccuracyGuidedAnonymizer
from anonml.datasets import load_adult

STEPS = ("check_and_encode", "partition", "representatives", "recode", "verify")


def resample(X: pd.DataFrame, y: pd.Series, n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """n rows drawn with replacement; integer QIs jittered by -1/0/+1 so that values vary."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(X), n)
    Xr = X.iloc[idx].reset_index(drop=True)
    for c in ("age", "hours-per-week", "education-num"):
        Xr[c] = np.clip(Xr[c].to_numpy() + rng.integers(-1, 2, n), 1, None)
    for c in ("capital-gain", "capital-loss"):
        v = Xr[c].to_numpy()
        Xr[c] = np.where(v > 0, v + rng.integers(-50, 51, n), 0)
    return Xr, y.iloc[idx].reset_index(drop=True)


def time_fit(X, y, qi, k, tree, repeats):
    runs = []
    for _ in range(repeats):
        ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree=tree, random_state=0)
        t = time.perf_counter()
        ag.fit_transform(X, y)
        runs.append((time.perf_counter() - t, dict(ag.timings_), ag.n_groups_))
    runs.sort(key=lambda r: r[0])
    total, steps, groups = runs[len(runs) // 2]
    return {"seconds": total, "steps": steps, "groups": int(groups), "runs": [r[0] for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "accuracy_guided.json"))
    args = parser.parse_args()

    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["12"])
    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__},
        "adult": [], "scale": [],
    }
    print("## Adult train, 32,561 rows, 12 QI (median of %d runs)\n" % args.repeats)
    print("| tree | k | groups | seconds | tree (partition) share | " + " | ".join(STEPS[2:]) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(STEPS[2:]))
    for tree in ("exact", "hist"):
        for k in (10, 100, 1000):
            r = time_fit(X, y, qi, k, tree, args.repeats)
            record["adult"].append({"tree": tree, "k": k, **r})
            share = r["steps"]["partition"] / r["seconds"]
            rest = " | ".join(f"{r['steps'][s]:.3f}" for s in STEPS[2:])
            print(f"| {tree} | {k} | {r['groups']} | {r['seconds']:.3f} | {share:.0%} | {rest} |")

    if not args.quick:
        print("\n## Scale: Adult resampled with jitter, k=100\n")
        print("| tree | rows | groups | seconds | s per 1M rows | tree share |")
        print("|---|---:|---:|---:|---:|---:|")
        for tree, sizes in (("hist", (100_000, 300_000, 1_000_000)), ("exact", (100_000, 300_000, 1_000_000))):
            for n in sizes:
                Xn, yn = resample(X, y, n)
                r = time_fit(Xn, yn, qi, 100, tree, 3 if n < 1_000_000 else 2)
                record["scale"].append({"tree": tree, "rows": n, "k": 100, **r})
                print(f"| {tree} | {n:,} | {r['groups']} | {r['seconds']:.2f} | "
                      f"{r['seconds'] / n * 1e6:.2f} | {r['steps']['partition'] / r['seconds']:.0%} |")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
