"""Speed of MaskedDataGenerator: generated samples vs seconds (issue target: 1,000 samples in
20 dimensions in <= 10 s, cost linear in the number of samples).

Binary problem, n = 2,000 private rows in 20 dimensions, ε = 1, λ = 0.01, data_norm = 6;
``tol`` is set to 1e-300 so that generation runs to ``n_samples`` whatever the residual (the
default tolerance usually stops it after a few dozen samples). Also a 3-class problem
(one-vs-rest, blocks of 3 samples). Median of 3 runs.

    python benchmarks/bench_dp_masking.py

Writes benchmarks/results/dp_masking.json and prints a Markdown table.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from anonml.dp import MaskedDataGenerator


def problem(n_classes: int, n: int = 2000, d: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if n_classes == 2:
        y = (X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(int)
    else:
        y = np.argmax(X @ rng.normal(size=(n_classes, d)).T + rng.normal(size=(n, n_classes)), axis=1)
    return X, y


def main() -> None:
    rows = []
    print("| classes | generated samples | seconds | ms per sample |")
    print("|---:|---:|---:|---:|")
    for n_classes, sizes in ((2, (250, 500, 1000)), (3, (100, 200, 400))):
        X, y = problem(n_classes)
        for m in sizes:
            runs = []
            for seed in range(3):
                gen = MaskedDataGenerator(1.0, lam=0.01, n_samples=m, data_norm=6.0, tol=1e-300,
                                          random_state=seed)
                t = time.perf_counter()
                gen.fit(X, y)
                runs.append(time.perf_counter() - t)
                assert gen.n_generated_ == m
            sec = statistics.median(runs)
            rows.append({"classes": n_classes, "samples": m, "seconds": sec, "runs": runs})
            print(f"| {n_classes} | {m} | {sec:.2f} | {1000 * sec / m:.1f} |")
    out = Path(__file__).parent / "results" / "dp_masking.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
