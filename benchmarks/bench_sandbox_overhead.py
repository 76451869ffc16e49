"""The sandbox's cost on an Adult audit (issue 18): the same audit with the model held in a
sandbox worker (``open_model``: every call, the structure facts and the RMIA reference refits in
worker processes) and with the model read into this process (``load_model``, the pre-sandbox
path), interleaved A/B in one run so that both see the same machine load.

The audit is ``request_release`` with the default attacks (worst case, RMIA with 4 reference
models, the attribute attack) on all of Adult (32,561 / 16,281 rows) and the README's model
(one-hot pipeline, random forest, ``min_samples_leaf=5``). Prints and records
(``benchmarks/results/sandbox_overhead.json``) each run's wall seconds, the median ratio
sandbox / in-process, and the 1-minute load average before and after.

    PYTHONPATH=src python benchmarks/bench_sandbox_overhead.py [--repeats 2] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from anonml.attacks import Target
from anonml.datasets import load_adult
from anonml.safemodel import load_model, open_model, request_release, save_model


def audit(path: Path, sandbox: bool, data: tuple, n_jobs: int) -> tuple[float, dict]:
    Xtr, Xte, ytr, yte = data
    t0 = time.perf_counter()
    model = open_model(path) if sandbox else load_model(path)
    decision = request_release(Target(model, Xtr, ytr, Xte, yte), n_jobs=n_jobs, random_state=0)
    seconds = time.perf_counter() - t0
    if sandbox:
        model.close()
    return seconds, decision.measures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                         "sandbox_overhead.json"))
    args = ap.parse_args()
    d = load_adult()
    data = d.train_test_split()
    Xtr, _, ytr, _ = data
    cat = [c for c in Xtr.columns if not pd.api.types.is_numeric_dtype(Xtr[c])]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        RandomForestClassifier(min_samples_leaf=5, random_state=0))
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.skops"
        save_model(model.fit(Xtr, ytr), path)
        for rep in range(args.repeats):
            for sandbox in ((False, True) if rep % 2 == 0 else (True, False)):
                seconds, measures = audit(path, sandbox, data, args.n_jobs)
                row = {"repeat": rep, "sandbox": sandbox, "seconds": round(seconds, 2),
                       "load_1min": round(os.getloadavg()[0], 2),
                       "rmia_auc": measures.get("membership.rmia.auc"),
                       "worst_case_auc": measures.get("membership.worst_case.auc")}
                rows.append(row)
                print(json.dumps(row), flush=True)
    ratio = [next(r["seconds"] for r in rows if r["repeat"] == i and r["sandbox"]) /
             next(r["seconds"] for r in rows if r["repeat"] == i and not r["sandbox"])
             for i in range(args.repeats)]
    out = {"runs": rows, "ratio_sandbox_over_inprocess": [round(r, 3) for r in ratio],
           "median_ratio": round(statistics.median(ratio), 3),
           "load_1min_before": round(load_before, 2), "load_1min_after":
           round(os.getloadavg()[0], 2), "n_jobs": args.n_jobs, "cpus": os.cpu_count()}
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
