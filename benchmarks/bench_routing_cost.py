"""What building the released mapping's routing tree costs at fit, up to 1M rows.

Every anonymizer with a minimal release copy (issue 19) builds ``route_`` at the end of
``fit``: splits on raw values with thresholds moved to the roundest number in their gap, and
categorical splits that name only the categories the anonymized table shows. This measures
that step (``timings_["routing"]``) against the whole ``fit_transform``, on Adult resampled with
jitter (``bench_accuracy_guided.resample``) to 100k and 1M rows, 12 quasi-identifiers, k=100,
for each method; and the routing tree's size (nodes). One fit per point (the shares are
stable; the machine is shared: the load average is printed).

Prints and records benchmarks/results/routing_cost.json.

    PYTHONPATH=src python benchmarks/bench_routing_cost.py [--sizes 100000 1000000]
        [--methods ag_hist ...] [--out benchmarks/results/routing_cost.json]

(``--out`` keeps a peer's figures apart, e.g. main's with ``PYTHONPATH=../anonml-main/src`` (a checkout of main beside this one).)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_accuracy_guided import resample  # noqa: E402

import anonml  # noqa: E402
from anonml import (  # noqa: E402
    AccuracyGuidedAnonymizer,
    HilbertAnonymizer,
    MondrianAnonymizer,
    RTreeAnonymizer,
)
from anonml.datasets import load_adult  # noqa: E402

K = 100
METHODS = {
    "ag_hist": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi, tree="hist"),
    "ag_exact": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi, tree="exact",
                                                    random_state=0),
    "mondrian": lambda qi: MondrianAnonymizer(k=K, quasi_identifiers=qi),
    "hilbert": lambda qi: HilbertAnonymizer(k=K, quasi_identifiers=qi),
    "rtree": lambda qi: RTreeAnonymizer(k=K, quasi_identifiers=qi),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "routing_cost.json")
    args = ap.parse_args()
    d = load_adult()
    X, y = d.X, d.y
    qi = list(d.qi_sets["12"])
    rows = []
    print(f"load average at start: {os.getloadavg()}")
    print("| method | rows | groups | fit s | routing s | routing share | route nodes |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        Xn, yn = resample(X, y, n)
        for name in args.methods:
            est = METHODS[name](qi)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est.fit_transform(Xn, yn)
                total = time.perf_counter() - t0
            routing = float(est.timings_.get("routing", float("nan")))
            nodes = int(len(est.route_.feature_)) if getattr(est, "route_", None) is not None \
                else None
            row = {"method": name, "rows": n, "groups": int(est.n_groups_),
                   "fit_s": round(total, 2), "routing_s": round(routing, 2),
                   "routing_share": round(routing / total, 3), "route_nodes": nodes}
            rows.append(row)
            print(f"| {name} | {n:,} | {row['groups']:,} | {row['fit_s']} | {row['routing_s']} "
                  f"| {row['routing_share']:.1%} | {nodes} |", flush=True)
    out = {"k": K, "anonml_source": str(Path(anonml.__file__).parent),
           "quasi_identifiers": len(qi), "load_average_end": os.getloadavg(),
           "machine": platform.platform(), "cpus": os.cpu_count(), "rows": rows}
    path = args.out
    path.write_text(json.dumps(out, indent=2))
    print(f"load average at end: {os.getloadavg()}; wrote {path}")


if __name__ == "__main__":
    main()
