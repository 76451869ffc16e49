"""The frontier's 95 % bootstrap intervals against the spread of two seeds, on small tables.

Two small tables (a few hundred rows: the regime where the issue saw recommendations flip
between seeds): Adult (600 training / 300 test rows) and Nursery (600 / 300, the two
three-valued "recommend"/"very_recom" classes merged out: "priority" vs the rest). For each,
the frontier runs with seeds 0 and 1 (random forest, AG and Mondrian at k = 5, 10, 25, 50,
no DP) and prints per point: accuracy, mapped accuracy and RMIA AUC with their intervals for
seed 0, the seed-to-seed difference, and both seeds' recommendation at a 2-point budget.

Run: ``PYTHONPATH=src python benchmarks/bench_frontier_intervals.py``; prints the load average.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import anonml
from anonml.datasets import load_adult, load_nursery


def tables():
    d = load_adult()
    f = d.frame
    tr = f[d.split == "train"].sample(600, random_state=7)
    te = f[d.split == "test"].sample(300, random_state=7)
    yield ("adult 600/300", tr.drop(columns="income"), tr["income"], te.drop(columns="income"),
           te["income"], ["age", "sex", "race", "marital-status", "education-num"])
    n = load_nursery().frame
    n = n.assign(cls=np.where(n["class"] == "priority", "priority", "other"))
    s = n.sample(900, random_state=7)
    tr, te = s.iloc[:600], s.iloc[600:]
    X = lambda t: t.drop(columns=["class", "cls"])  # noqa: E731
    yield ("nursery 600/300", X(tr), tr["cls"], X(te), te["cls"],
           ["parents", "has_nurs", "form", "children"])


def _load() -> str:
    return Path("/proc/loadavg").read_text().strip()


def main() -> None:
    print("load average:", _load())
    record = {"load_before": _load(), "tables": {}}
    for name, X, y, Xt, yt, qi in tables():
        runs = []
        for seed in (0, 1):
            t0 = time.perf_counter()
            r = anonml.frontier(X, y, Xt, yt, quasi_identifiers=qi, estimator="random_forest",
                                methods=("ag", "mondrian"), ks=(5, 10, 25, 50), dp=False,
                                worst_case_reps=2, max_attribute_records=200,
                                random_state=seed)
            runs.append((r, time.perf_counter() - t0))
        (a, ta), (b, tb) = runs
        print(f"\n== {name}: seconds {ta:.0f} + {tb:.0f}")
        print(f"{'point':>14} | {'accuracy (seed 0)':>24} | {'Δ seed1':>7} | "
              f"{'mapped (seed 0)':>24} | {'Δ seed1':>7} | {'RMIA AUC (seed 0)':>22} | "
              f"{'Δ seed1':>7}")
        for (_, p), (_, q) in zip(a.table.iterrows(), b.table.iterrows()):
            pt = "undefended" if p["method"] == "none" else f"{p['method']} k={int(p['k'])}"

            def c(col, s=100, d=2):
                if np.isnan(p[col]):
                    return "–"
                return f"{s * p[col]:.{d}f} [{s * p[col + '_lo']:.{d}f}, {s * p[col + '_hi']:.{d}f}]"

            def delta(col, s=100, d=2):
                return "–" if np.isnan(p[col]) else f"{s * (q[col] - p[col]):+.{d}f}"

            print(f"{pt:>14} | {c('accuracy'):>24} | {delta('accuracy'):>7} | "
                  f"{c('accuracy_mapped'):>24} | {delta('accuracy_mapped'):>7} | "
                  f"{c('attack_auc', 1, 3):>22} | {delta('attack_auc', 1, 3):>7}")
        record["tables"][name] = {}
        for seed, r in ((0, a), (1, b)):
            print(f"seed {seed}: {r.recommend(accuracy_budget=0.02)}")
            record["tables"][name][f"seed {seed}"] = r.to_dict()
    record["load_after"] = _load()
    print("\nload average:", record["load_after"])
    out = Path(__file__).parent / "results" / "frontier_intervals.json"
    out.write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
