"""Speed and information loss of HilbertAnonymizer and RTreeAnonymizer.

1. Adult train (32,561 rows, 12 QI), k = 10 and 100: seconds of ``fit_transform`` (median of
   several runs, wall clock and CPU time of this process), the steps' shares (``timings_``), the
   number of groups and the GCP (mean NCP, Ghinita et al. 2007) of: Hilbert with the dynamic
   program and with the greedy cut, R-tree with the default sampled split search and with the
   exact one (``split_sample=None``).
2. Scale: Adult train resampled with jitter to 100k, 300k and 1M rows (as in
   ``bench_accuracy_guided.py``), k = 100: seconds and seconds per million rows.

The machine's load average is recorded with the figures: on a shared machine the wall clock
exceeds the CPU time by the share of the cores taken by other processes.

Usage::

    python benchmarks/bench_hilbert_rtree.py            # everything (several minutes)
    python benchmarks/bench_hilbert_rtree.py --quick    # Adult only

Writes benchmarks/results/hilbert_rtree.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.anonymize._hilbert import HilbertAnonymizer
from anonml.anonymize._rtree import RTreeAnonymizer
from anonml.datasets import load_adult

sys.path.insert(0, str(Path(__file__).parent))
from bench_accuracy_guided import resample

VARIANTS = {
    "hilbert-dp": lambda k, qi: HilbertAnonymizer(k=k, quasi_identifiers=qi),
    "hilbert-greedy": lambda k, qi: HilbertAnonymizer(k=k, quasi_identifiers=qi, method="greedy"),
    "rtree": lambda k, qi: RTreeAnonymizer(k=k, quasi_identifiers=qi),
    "rtree-exact": lambda k, qi: RTreeAnonymizer(k=k, quasi_identifiers=qi, split_sample=None),
}


def time_fit(name, X, qi, k, repeats):
    runs = []
    for _ in range(repeats):
        est = VARIANTS[name](k, qi)
        w, c = time.perf_counter(), time.process_time()
        est.fit_transform(X)
        runs.append((time.perf_counter() - w, time.process_time() - c, dict(est.timings_)))
    order = sorted(range(repeats), key=lambda i: runs[i][0])
    wall, _cpu, steps = runs[order[len(order) // 2]]
    return {
        "seconds": wall,
        "cpu_seconds": min(r[1] for r in runs),
        "steps": steps,
        "groups": int(est.n_groups_),
        "gcp": float(est.gcp_),
        "max_group": int(est.group_sizes_.max()),
        "runs": [r[0] for r in runs],
        "cpu_runs": [r[1] for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "hilbert_rtree.json"))
    args = parser.parse_args()

    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["12"])
    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__,
                    "load_average_start": os.getloadavg()},
        "adult": [], "scale": [],
    }
    print(f"## Adult train, 32,561 rows, 12 QI (median of {args.repeats} runs; CPU: least)\n")
    print("| method | k | groups | largest | GCP | wall s | CPU s | partition share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in (10, 100):
        for name in VARIANTS:
            reps = args.repeats if name != "rtree-exact" else max(1, args.repeats // 2)
            r = time_fit(name, X, qi, k, reps)
            record["adult"].append({"method": name, "k": k, **r})
            share = r["steps"]["partition"] / sum(
                r["steps"][s] for s in ("check_and_encode", "partition", "representatives", "recode", "verify")
            )
            print(f"| {name} | {k} | {r['groups']} | {r['max_group']} | {r['gcp']:.4f} | "
                  f"{r['seconds']:.3f} | {r['cpu_seconds']:.3f} | {share:.0%} |")

    if not args.quick:
        print("\n## Scale: Adult resampled with jitter, k=100\n")
        print("| method | rows | groups | GCP | wall s | CPU s | CPU s per 1M rows |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for n in (100_000, 300_000, 1_000_000):
            Xn, _ = resample(X, y, n)
            for name in ("hilbert-dp", "rtree"):
                r = time_fit(name, Xn, qi, 100, 3 if n < 1_000_000 else 2)
                record["scale"].append({"method": name, "rows": n, "k": 100, **r})
                print(f"| {name} | {n:,} | {r['groups']} | {r['gcp']:.4f} | {r['seconds']:.2f} | "
                      f"{r['cpu_seconds']:.2f} | {r['cpu_seconds'] / n * 1e6:.2f} |")

    record["machine"]["load_average_end"] = os.getloadavg()
    print(f"\nload average (1, 5, 15 min) at start {record['machine']['load_average_start']}, "
          f"at end {record['machine']['load_average_end']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
