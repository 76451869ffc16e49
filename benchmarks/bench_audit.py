"""Time the release audit (request_release + the three report files) on Adult.

    python benchmarks/bench_audit.py                 # SafeRandomForest, default attacks
    python benchmarks/bench_audit.py --model dt      # an overfit decision tree
    python benchmarks/bench_audit.py --model plain-rf  # a forest trained without the wrapper

Prints the stage times and the verdict, writes the report to --out (default a temporary
directory) and the figures to benchmarks/results/audit_<model>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder

from anonml.attacks import Target
from anonml.datasets import load_adult
from anonml.safemodel import (
    SafeDecisionTreeClassifier,
    SafeRandomForestClassifier,
    request_release,
)

MODELS = {
    "rf": lambda: SafeRandomForestClassifier(min_samples_leaf=5, n_jobs=2, random_state=0),
    "dt": lambda: SafeDecisionTreeClassifier(random_state=0),
    "plain-rf": lambda: RandomForestClassifier(min_samples_leaf=5, n_jobs=2, random_state=0),
}


def adult_pipeline(estimator, categorical):
    enc = ColumnTransformer(
        [("cat", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
          list(categorical))], remainder="passthrough")
    return Pipeline([("encode", enc), ("model", estimator)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="rf")
    ap.add_argument("--out", default=None, help="report directory (default: a temporary one)")
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args(argv)

    ds = load_adult()
    X = ds.frame[list(ds.feature_names)]
    y = ds.frame[ds.target]
    train, test = ds.split == "train", ds.split == "test"
    model = adult_pipeline(MODELS[args.model](), ds.categorical_features)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the overfit tree warns at fit, on purpose
        model.fit(X[train], y[train])
    fit_s = time.perf_counter() - t0

    def say(msg):
        print(f"  [{time.perf_counter() - t1:6.1f} s] {msg}", file=sys.stderr, flush=True)

    t1 = time.perf_counter()
    decision = request_release(
        Target(model, X[train], y[train], X[test], y[test]), target_name="income",
        dataset_name="adult", categorical_features=list(ds.categorical_features),
        n_jobs=args.n_jobs, progress=say)
    audit_s = time.perf_counter() - t1
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="anonml_audit_"))
    out.mkdir(parents=True, exist_ok=True)
    t2 = time.perf_counter()
    paths = decision.write(out)
    write_s = time.perf_counter() - t2
    print(f"{args.model}: {decision.verdict.label}; fit {fit_s:.1f} s, audit {audit_s:.1f} s, "
          f"reports {write_s:.2f} s -> {out}")
    print(decision.verdict.summary)
    figures = {"model": args.model, "decision": decision.decision, "fit_seconds": fit_s,
               "audit_seconds": audit_s, "report_seconds": write_s,
               "stages": decision.report["timings"]["stages"],
               "measures": decision.measures, "cpu_count": os.cpu_count(),
               "load_1min": os.getloadavg()[0], "files": {k: str(v) for k, v in paths.items()}}
    res = Path(__file__).parent / "results"
    res.mkdir(exist_ok=True)
    (res / f"audit_{args.model}.json").write_text(json.dumps(figures, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
