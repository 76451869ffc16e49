"""The released mapping before and after issue 19: file size, ``transform`` speed and the
training values it holds that the anonymized table hides.

Adult (48,842 rows, 12 quasi-identifiers), k = 100, every method. "before" is the release copy
as it was (every fitted attribute but the per-row ones: encoder value lists, the fitted tree
with its per-node counts, group sizes; still reachable as ``release_copy(..., _legacy=True)``),
"after" is the minimal copy (representatives + a routing tree on raw values with rounded
thresholds). For each: the ``.skops`` file size, seconds of ``transform`` on 500,000 rows drawn
with replacement from Adult (best of 3), and ``inventory``'s count of hidden training values.
Also the seconds ``fit`` spends building the routing tree.

Prints and records benchmarks/results/minimal_mapping.json.

    PYTHONPATH=src python benchmarks/bench_minimal_mapping.py [--rows 500000]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from anonml import AccuracyGuidedAnonymizer, HilbertAnonymizer, MondrianAnonymizer, RTreeAnonymizer
from anonml.anonymize._model import release_copy
from anonml.datasets import load_adult
from anonml.modelfile._inventory import inventory, leaked_total
from anonml.safemodel import save_model

K = 100
METHODS = {
    "ag_exact": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi, tree="exact",
                                                    random_state=0),
    "ag_hist": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi, tree="hist"),
    "mondrian": lambda qi: MondrianAnonymizer(k=K, quasi_identifiers=qi),
    "hilbert": lambda qi: HilbertAnonymizer(k=K, quasi_identifiers=qi),
    "rtree": lambda qi: RTreeAnonymizer(k=K, quasi_identifiers=qi),
}


def _best(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


def main() -> None:
    import skops.io as sio

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    args = ap.parse_args()
    d = load_adult()
    X, y, qi = d.X, d.y, list(d.qi_sets["12"])
    big = X.sample(args.rows, replace=True, random_state=0).reset_index(drop=True)
    out = {"dataset": "adult", "n_rows": len(X), "k": K, "quasi_identifiers": len(qi),
           "transform_rows": args.rows, "python": platform.python_version(), "methods": {}}
    tmp = Path(tempfile.mkdtemp())
    for name, make in METHODS.items():
        a = make(qi)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X_anon = a.fit_transform(X, y)
        old = release_copy(a, _legacy=True)
        new = release_copy(a)
        p_old, p_new = tmp / f"{name}-before.skops", tmp / f"{name}-after.skops"
        sio.dump(old, p_old)
        save_model(a, p_new)
        same = bool(new.transform(X).equals(X_anon))
        row = {
            "groups": int(a.n_groups_),
            "seconds_fit": round(sum(a.timings_.values()), 3),
            "seconds_routing_build": round(a.timings_["routing"], 3),
            "routing_nodes": int(a.route_.n_nodes),
            "routing_depth": int(a.route_.depth()),
            "categories_named": len(a.route_.categories_),
            "text_thresholds": len(a.route_.text_thresholds_),
            "bytes_before": p_old.stat().st_size,
            "bytes_after": p_new.stat().st_size,
            "seconds_transform_before": _best(lambda: old.transform(big)),
            "seconds_transform_after": _best(lambda: new.transform(big)),
            "hidden_values_before": leaked_total(inventory(old, X, X_anon)),
            "hidden_values_after": leaked_total(inventory(new, X, X_anon)),
            "training_rows_map_as_in_fit": same,
        }
        out["methods"][name] = row
        print(f"{name:9s} groups {row['groups']:4d}  file {row['bytes_before'] / 1e3:7.0f} kB -> "
              f"{row['bytes_after'] / 1e3:7.0f} kB  transform({args.rows:,}) "
              f"{row['seconds_transform_before']:6.2f} s -> {row['seconds_transform_after']:6.2f} s"
              f"  hidden values {row['hidden_values_before']:5d} -> "
              f"{row['hidden_values_after']}  routing build {row['seconds_routing_build']:.2f} s"
              f" ({row['routing_nodes']} nodes, depth {row['routing_depth']})", flush=True)
    dst = Path(__file__).parent / "results" / "minimal_mapping.json"
    dst.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
