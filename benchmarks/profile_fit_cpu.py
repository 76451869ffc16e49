"""User and system CPU, and page faults, of each step of an in-memory AccuracyGuidedAnonymizer
fit, per 1M rows (session 15: what grows from 1M to 20M rows).

The table is that of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100,
``tree="hist"``), built and settled first. The fit's own step marks (the ``time.perf_counter``
calls that give ``timings_``) are where ``getrusage`` is read: the module's ``time`` is
replaced, for this process only, by one that records the usage at each mark. Steps: check and
encode, partition, representatives, recode, verify, routing, write.

Usage::

    PYTHONPATH=src python benchmarks/profile_fit_cpu.py --rows 1M 20M
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

STEPS = ["check_and_encode", "partition", "representatives", "recode", "verify", "routing",
         "(between)", "write"]


def child(n: int, copy: bool) -> dict:
    import anonml.anonymize._base as base
    from anonml import AccuracyGuidedAnonymizer
    from bench_memory_scale import build_table, settle

    X, y, qi = build_table(n)
    settle()
    marks: list = []

    class _Clock:
        def __getattr__(self, name):
            return getattr(time, name)

        def perf_counter(self) -> float:
            r = resource.getrusage(resource.RUSAGE_SELF)
            marks.append((time.perf_counter(), r.ru_utime, r.ru_stime, r.ru_minflt))
            return marks[-1][0]

    base.time = _Clock()
    ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0,
                                  **({} if copy else {"copy": False}))
    ag.fit_transform(X, y)
    per = 1e6 / n
    steps = {}
    for name, a, b in zip(STEPS, marks, marks[1:]):
        steps[name] = {"user": (b[1] - a[1]) * per, "system": (b[2] - a[2]) * per,
                       "faults": (b[3] - a[3]) * per}
    return {"rows": n, "copy": copy, "steps": steps,
            "user": (marks[-1][1] - marks[0][1]) * per,
            "system": (marks[-1][2] - marks[0][2]) * per}


def main() -> None:
    from bench_memory_scale import parse_size, run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["1M", "20M"])
    parser.add_argument("--copy", default="true", choices=["true", "false"])
    parser.add_argument("--out", default=str(HERE / "results" / "fit_cpu_steps.json"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.copy == "true")))
        return
    runs = []
    for text in args.rows:
        r = run_child(__file__, ["--child", parse_size(text), "--copy", args.copy])
        runs.append(r)
        load = r["loadavg"]
        print(f"{r['rows']:,} rows (load {load}): user {r['user']:.3f} + system "
              f"{r['system']:.3f} CPU s per 1M rows")
        for name, s in r["steps"].items():
            if name != "(between)":
                print(f"  {name:<17} user {s['user']:.3f}  system {s['system']:.3f}  "
                      f"faults per 1M rows {s['faults']:,.0f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": runs}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
