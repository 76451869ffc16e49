"""CPU (user, system) and page faults of building an anonymized table's new columns
(``Recoding.new_frame``), with the output's pages as the fit makes them since session 15
(``small_pages``: 4 KB pages) and as before (transparent huge pages allowed), alternating, each
build in a fresh process.

The table is that of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI: 5 numeric,
7 text); its rows are put in groups of about 100 at random (as a k=100 partition leaves them in
row order), each group's representative is its first row, and the plan is
:func:`anonml.anonymize._pipeline.recode_plan`'s. Only ``new_frame`` is measured.

Usage::

    PYTHONPATH=src python benchmarks/bench_output_pages.py --rows 1M 20M --reps 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def child(n: int, small: bool) -> dict:
    import numpy as np

    import anonml.anonymize._pipeline as pipeline
    from bench_memory_scale import build_table, settle

    X, _, qi = build_table(n)
    rng = np.random.default_rng(0)
    n_groups = max(n // 100, 1)
    groups = rng.integers(0, n_groups, n)
    first = np.full(n_groups, n, dtype=np.int64)
    np.minimum.at(first, groups, np.arange(n))
    used = first < n
    remap = np.cumsum(used) - 1
    groups, first = remap[groups], first[used]
    reps = X.iloc[first][qi].reset_index(drop=True)
    plan = pipeline.recode_plan(X, qi, groups, reps)
    settle()
    if not small:  # the code before session 15: huge pages allowed
        pipeline.small_pages = lambda n_rows=None: contextlib.nullcontext()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = plan.new_frame(X)
    r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    assert out.shape == X.shape
    per = 1e6 / n
    return {"rows": n, "small_pages": small, "wall_s": wall,
            "user_s_per_1M": (r1.ru_utime - r0.ru_utime) * per,
            "system_s_per_1M": (r1.ru_stime - r0.ru_stime) * per,
            "faults": r1.ru_minflt - r0.ru_minflt}


def main() -> None:
    from bench_memory_scale import parse_size, run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["1M", "20M"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "results" / "output_pages.json"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--small", default="true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.small == "true")))
        return
    runs = []
    print("| rows | output pages | CPU s per 1M rows (user + system) | page faults | wall s "
          "| load average |")
    print("|---:|---|---|---:|---:|---|")
    for text in args.rows:
        for _ in range(args.reps):
            for small in (False, True):
                r = run_child(__file__, ["--child", parse_size(text), "--small",
                                         "true" if small else "false"])
                runs.append(r)
                load = r["loadavg"]
                print(f"| {r['rows']:,} | {'4 KB (small_pages)' if small else 'huge allowed'} "
                      f"| {r['user_s_per_1M'] + r['system_s_per_1M']:.3f} "
                      f"({r['user_s_per_1M']:.3f} + {r['system_s_per_1M']:.3f}) "
                      f"| {r['faults']:,} | {r['wall_s']:.2f} | {load} |", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": runs}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
