"""``pd.factorize`` against :func:`anonml.privacy._k_anonymity.factorize_codes` (Arrow's
``dictionary_encode``) on int64 keys with few or many distinct values (session 16).

The Dask verification (``anonml.dask._classes._distinct``) codes each file's QI tuples as one
int64 key a row: at 10M rows a file of 2M rows holds ~67,000 distinct tuples, at 100M ~560,000,
and a merge of two files ~1.1M tuples of ~576,000 distinct. The in-memory check codes 20M rows
of ~200,000. Both codings give the same codes (asserted); the script prints CPU ns a key for
each, the two alternating, ``--reps`` times.

Usage::

    PYTHONPATH=src python benchmarks/bench_factorize_keys.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory_scale import _cpu  # noqa: E402

CASES = [(2_000_000, 67_000), (2_000_000, 560_000), (1_120_000, 576_000),
         (20_000_000, 200_000)]


def main() -> None:
    from anonml.privacy._k_anonymity import factorize_codes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    load = open("/proc/loadavg").read().split()[:3]
    print(f"load {' '.join(load)}")
    print("| keys | distinct | pd.factorize ns a key | factorize_codes ns a key |")
    print("|---:|---:|---|---|")
    rng = np.random.default_rng(0)
    for n, d in CASES:
        key = rng.integers(0, 2**40, d)[rng.integers(0, d, n)]
        pandas_ns, arrow_ns = [], []
        for _ in range(args.reps):
            t = _cpu()
            a, uniques = pd.factorize(key)
            pandas_ns.append((_cpu() - t) / n * 1e9)
            t = _cpu()
            b, m = factorize_codes(key)
            arrow_ns.append((_cpu() - t) / n * 1e9)
            assert np.array_equal(a, b) and len(uniques) == m
            del a, b, uniques
        print(f"| {n:,} | {d:,} | {', '.join(f'{x:.0f}' for x in pandas_ns)} | "
              f"{', '.join(f'{x:.0f}' for x in arrow_ns)} |")


if __name__ == "__main__":
    main()
