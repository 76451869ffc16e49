"""Which functions' CPU grows per row from a small to a large in-memory AccuracyGuidedAnonymizer
fit: ``cProfile`` of one ``fit_transform`` at each size, in its own process, own time per
function in CPU seconds per 1M rows, sorted by the growth (session 16).

The table is that of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100,
``tree="hist"``), built and settled first. For numpy's and Arrow's ``take`` (and ``argsort``)
the script also splits the time by calling function, where a gather's table outgrows the
cache. ``cProfile`` adds a little to every Python call, not to the array work inside one:
read the growth, not the totals.

Usage::

    PYTHONPATH=src python benchmarks/profile_fit_growth.py --rows 1M 20M
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SPLIT = ("<method 'take' of 'numpy.ndarray' objects>", "take",
         "<method 'argsort' of 'numpy.ndarray' objects>")


def _where(path: str, line: int, name: str) -> str:
    return f"{path.split('site-packages/')[-1].split('src/')[-1]}:{line}:{name}"


def child(n: int) -> dict:
    import cProfile
    import pstats
    import time

    from anonml import AccuracyGuidedAnonymizer
    from bench_memory_scale import build_table, settle

    X, y, qi = build_table(n)
    settle()
    ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0)
    prof = cProfile.Profile()
    t0 = time.process_time()
    prof.enable()
    ag.fit_transform(X, y)
    prof.disable()
    cpu = time.process_time() - t0
    per = 1e6 / n
    rows = {}
    for (path, line, name), (_, calls, own, _, callers) in pstats.Stats(prof).stats.items():
        row = {"own": own * per, "calls": calls}
        if name in SPLIT:
            row["by_caller"] = {_where(*c): v[2] * per for c, v in callers.items()}
        rows[_where(path, line, name)] = row
    return {"rows": n, "cpu": cpu * per, "functions": rows}


def main() -> None:
    from bench_memory_scale import parse_size, run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs=2, default=["1M", "20M"], metavar=("SMALL", "LARGE"))
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--out", default=str(HERE / "results" / "fit_growth.json"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    small, large = (run_child(__file__, ["--child", parse_size(r)]) for r in args.rows)
    print(f"{small['rows']:,} rows (load {small['loadavg']}): {small['cpu']:.3f} CPU s per 1M "
          f"rows under cProfile; {large['rows']:,} rows (load {large['loadavg']}): "
          f"{large['cpu']:.3f}")
    a, b = small["functions"], large["functions"]
    zero = {"own": 0.0, "calls": 0}
    growth = sorted(((b.get(k, zero)["own"] - a.get(k, zero)["own"], k) for k in set(a) | set(b)),
                    reverse=True)
    print("\n| growth | small | large | function (own CPU s per 1M rows) |\n|---:|---:|---:|---|")
    for g, k in growth[:args.top]:
        print(f"| {g:+.3f} | {a.get(k, zero)['own']:.3f} | {b.get(k, zero)['own']:.3f} | `{k}` |")
    for k in sorted(k for k in b if "by_caller" in b[k]):
        ca, cb = a.get(k, {}).get("by_caller", {}), b[k]["by_caller"]
        split = sorted(((cb.get(c, 0) - ca.get(c, 0), c) for c in set(ca) | set(cb)),
                       reverse=True)
        if split and split[0][0] > 0.005:
            print(f"\n`{k}` by caller (growth, small -> large):")
            for g, c in split[:8]:
                print(f"  {g:+.3f}  {ca.get(c, 0):.3f} -> {cb.get(c, 0):.3f}  {c}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"small": small, "large": large}, indent=1))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
