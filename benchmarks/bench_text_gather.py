"""The output's text column gathered from one value per group: pandas' plain ``take`` against
:class:`~anonml.anonymize._pipeline.Recoding`'s gather through the distinct values
(``_distinct_text``; session 16), CPU ns a row, alternating, each in its own process.

A column of Adult's ``workclass``-like words (9 distinct) per group, ``groups`` random over
the rows: 7,107 groups on 1M rows and 118,229 on 20M (the in-memory benchmark's groups), and
576,143 on 2M rows (a Dask write task at 100M rows).

Usage::

    PYTHONPATH=src python benchmarks/bench_text_gather.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = [(7_107, 1_000_000), (118_229, 20_000_000), (576_143, 2_000_000)]
WORDS = ["Private", "Self-emp-not-inc", "Local-gov", "State-gov", "Self-emp-inc",
         "Federal-gov", "Without-pay", "Never-worked", "?"]


def child(n_groups: int, n_rows: int, how: str) -> dict:
    import numpy as np
    import pandas as pd

    from anonml.anonymize import _pipeline
    from bench_memory_scale import _cpu

    rng = np.random.default_rng(0)
    per = pd.array(np.array(WORDS, dtype=object)[rng.integers(0, len(WORDS), n_groups)],
                   dtype="str")
    groups = rng.integers(0, n_groups, n_rows)
    if how == "plain":
        _pipeline._distinct_text = lambda values, n: None
    warm = np.arange(1 << 17) % n_groups  # first calls (imports, pandas' take) not timed
    _pipeline.Recoding(warm, pd.RangeIndex(warm.size), {"c": per}).column("c")
    plan = _pipeline.Recoding(groups, pd.RangeIndex(n_rows), {"c": per})
    t0 = _cpu()
    col = plan.column("c")
    cpu = _cpu() - t0
    assert len(col) == n_rows and (how == "plain") == (plan._text["c"] is None)
    return {"ns_per_row": cpu / n_rows * 1e9}


def main() -> None:
    from bench_memory_scale import run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), int(args.child[1]), args.child[2])))
        return
    print("load " + " ".join(open("/proc/loadavg").read().split()[:3]))
    print("| groups | rows | plain take, ns a row | through the distinct values |")
    print("|---:|---:|---|---|")
    for g, n in CASES:
        got: dict = {"plain": [], "distinct": []}
        for _ in range(args.reps):
            for how in ("plain", "distinct"):
                got[how].append(run_child(__file__, ["--child", g, n, how])["ns_per_row"])
        print(f"| {g:,} | {n:,} | {', '.join(f'{x:.1f}' for x in got['plain'])} | "
              f"{', '.join(f'{x:.1f}' for x in got['distinct'])} |")


if __name__ == "__main__":
    main()
