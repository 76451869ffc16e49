"""Speed (and strength) of LiRA with 64 shadow models on Adult, and of RMIA with 4 references.

Target: a scikit-learn Pipeline (OrdinalEncoder on the 7 text columns, the 5 numeric columns
passed through) + a fully grown DecisionTreeClassifier, trained on a random half of Adult's
published training split (16,280 members); the other half (16,281 rows) are the non-members.
Every shadow model is a clone of that pipeline trained on half of the 32,561-row pool and scores
the 32,560 evaluated records (16,280 per side).

Runs, in order:

1. LiRA(64, online), n_jobs=2 (threads, the attack's default): the issue's target,
   <= 120 s on 2 cores;
2. the same with n_jobs=1, to show the parallel speed-up;
3. the same with n_jobs=2 in processes, ``joblib.parallel_config(backend="loky")`` (fresh
   workers: their start-up is included);
4. RMIA(4, online) and RMIA(4, offline), n_jobs=2;
5. with ``--rf``: LiRA(64) on a RandomForest(30 trees, n_jobs=1) pipeline, n_jobs=2.

The machine's load average (``os.getloadavg``) is recorded before and after each run, since the
figures depend on what else runs on the cores.

Usage::

    python benchmarks/bench_lira.py            # runs 1-4 (about 2-3 minutes on 2 idle cores)
    python benchmarks/bench_lira.py --rf       # also run 5
    python benchmarks/bench_lira.py --n-shadow 16 --skip-serial   # a quick look

Writes benchmarks/results/lira.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import parallel_config
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml.attacks import RMIA, LiRA, Target
from anonml.datasets import load_adult


def make_model(X: pd.DataFrame, kind: str) -> Pipeline:
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    enc = ColumnTransformer(
        [("cat", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), cat)],
        remainder="passthrough",
    )
    clf = (DecisionTreeClassifier(random_state=0) if kind == "dt"
           else RandomForestClassifier(n_estimators=30, n_jobs=1, random_state=0))
    return Pipeline([("enc", enc), ("clf", clf)])


def make_target(kind: str, seed: int = 0) -> Target:
    X, _, y, _ = load_adult().train_test_split()
    order = np.random.default_rng(seed).permutation(len(X))
    half = len(X) // 2
    mem, non = order[:half], order[half:]
    model = make_model(X, kind).fit(X.iloc[mem], y.iloc[mem])
    return Target(model, X.iloc[mem].reset_index(drop=True), y.iloc[mem],
                  X.iloc[non].reset_index(drop=True), y.iloc[non], name=f"adult-{kind}")


def run(label: str, attack, target: Target, backend: str | None = None) -> dict:
    load_before = os.getloadavg()
    start = time.perf_counter()
    if backend is None:
        result = attack.run(target)
        backend = "threads (default)" if attack.n_jobs not in (1, None) else "none"
    else:
        with parallel_config(backend=backend):
            result = attack.run(target)
    wall = time.perf_counter() - start
    t = attack.timings_
    n_models = result.extra.get("n_shadow", result.extra.get("n_reference"))
    fit_key = "fit_per_shadow" if "fit_per_shadow" in t else "fit_per_reference"
    pred_key = "predict_per_shadow" if "predict_per_shadow" in t else "predict_per_reference"
    row = {
        "run": label,
        "attack": result.attack,
        "n_models": n_models,
        "n_jobs": attack.n_jobs,
        "backend": backend,
        "seconds": wall,
        "shadow_wall": t["shadow_wall"],
        "fit_per_model": t[fit_key],
        "predict_per_model": t[pred_key],
        "model_seconds_per_wall_second": n_models * (t[fit_key] + t[pred_key]) / t["shadow_wall"],
        "cpu_per_wall": t["cpu_per_wall"],
        "auc": result.auc,
        "tpr_at_0.1%_fpr": result.tpr_at_fpr(0.001),
        "tpr_at_1%_fpr": result.tpr_at_fpr(0.01),
        "advantage": result.advantage,
        "n_evaluated": int(result.labels.size),
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }
    print(f"| {label} | {row['backend']} | {row['n_jobs']} | {row['seconds']:.1f} | "
          f"{row['fit_per_model']:.3f} | {row['predict_per_model']:.3f} | "
          f"{row['cpu_per_wall']:.2f} | {row['auc']:.3f} | "
          f"{row['tpr_at_0.1%_fpr']:.3f} | {row['tpr_at_1%_fpr']:.3f} | "
          f"{load_before[0]:.1f} / {row['load_after'][0]:.1f} |", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-shadow", type=int, default=64)
    parser.add_argument("--rf", action="store_true", help="also attack a random forest")
    parser.add_argument("--skip-serial", action="store_true", help="skip the n_jobs=1 run")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "lira.json"))
    args = parser.parse_args()

    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__,
                    "load_at_start": os.getloadavg()},
        "setup": "Adult train split, random half members (16,280) / half non-members (16,281); "
                 "Pipeline(OrdinalEncoder on text columns, passthrough) + classifier; "
                 "shadow models train on half of the 32,561-row pool",
        "runs": [],
    }
    start = time.perf_counter()
    target = make_target("dt")
    record["target_seconds"] = time.perf_counter() - start
    record["target_train_accuracy"] = float(np.mean(
        target.proba("train").argmax(1) == target.label_codes("train")))
    record["target_test_accuracy"] = float(np.mean(
        target.proba("test").argmax(1) == target.label_codes("test")))

    n = args.n_shadow
    print(f"target: DT pipeline, train acc {record['target_train_accuracy']:.3f}, "
          f"test acc {record['target_test_accuracy']:.3f}; load {os.getloadavg()}\n")
    print("| run | backend | n_jobs | seconds | fit / model | predict / model | "
          "CPU-s per wall-s | AUC | TPR@0.1% | TPR@1% | load 1-min before / after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    runs = record["runs"]
    runs.append(run(f"LiRA-{n} DT", LiRA(n, n_jobs=2, random_state=0), target))
    if not args.skip_serial:
        runs.append(run(f"LiRA-{n} DT", LiRA(n, n_jobs=1, random_state=0), target))
    runs.append(run(f"LiRA-{n} DT", LiRA(n, n_jobs=2, random_state=0), target, "loky"))
    runs.append(run("RMIA-4 DT", RMIA(4, n_jobs=2, random_state=0), target))
    runs.append(run("RMIA-4 offline DT", RMIA(4, online=False, n_jobs=2, random_state=0),
                    target))
    if args.rf:
        rf = make_target("rf")
        runs.append(run(f"LiRA-{n} RF30", LiRA(n, n_jobs=2, random_state=0), rf))

    by = {(r["run"], r["backend"], r["n_jobs"]): r for r in runs}
    par = by.get((f"LiRA-{n} DT", "threads (default)", 2))
    ser = by.get((f"LiRA-{n} DT", "none", 1))
    if par and ser:
        record["speedup_n_jobs_2_vs_1"] = ser["seconds"] / par["seconds"]
        print(f"\nspeed-up n_jobs=2 vs 1: {record['speedup_n_jobs_2_vs_1']:.2f}x")
    record["load_at_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
