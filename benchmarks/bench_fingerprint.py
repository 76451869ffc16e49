"""Speed of the safe-release tamper fingerprint and of the structural measures on Adult.

A random forest (100 trees, scikit-learn defaults: fully grown trees) is fitted on the published
Adult training split (32,561 rows; categorical columns as integer codes), then:

1. ``fingerprint(forest)`` (SHA-256 over parameters and every tree's nodes and values);
2. ``diff_fingerprints`` after editing one leaf value of one tree in place;
3. ``structural_measures(forest, X_train, y_train, X_test, y_test)`` (leaf-signature
   equivalence classes over the 100 trees, parameter count, accuracies, KS test);
4. the same two on a 300-round XGBoost model (depth 6) when xgboost is installed.

Usage::

    python benchmarks/bench_fingerprint.py            # about a minute on one core
    python benchmarks/bench_fingerprint.py --repeats 3

Writes benchmarks/results/fingerprint.json and prints a Markdown table (median of the runs).
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
from sklearn.ensemble import RandomForestClassifier

from anonml.datasets import load_adult
from anonml.modelfile._fingerprint import diff_fingerprints, fingerprint
from anonml.modelfile._structure import structural_measures


def median_time(fn, repeats):
    runs, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t)
    return float(np.median(runs)), runs, out


def codes(frame: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for c in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[c]):
            cats = pd.Index(sorted(reference[c].dropna().astype(str).unique()))
            out[c] = cats.get_indexer(frame[c].astype(str)).astype(np.int64)
    return out.astype(np.float64)


def measure(name, model, X_tr, y_tr, X_te, y_te, repeats, edit) -> dict:
    t, runs_fp, fp = median_time(lambda: fingerprint(model), repeats)
    edit(model)
    t_diff = time.perf_counter()
    changed = diff_fingerprints(fp, fingerprint(model))
    t_diff = time.perf_counter() - t_diff
    edit(model, undo=True)
    assert diff_fingerprints(fp, fingerprint(model)) == []
    t_s, runs_s, sm = median_time(
        lambda: structural_measures(model, X_tr, y_tr, X_te, y_te), repeats
    )
    return {
        "model": name,
        "fingerprint_s": t,
        "fingerprint_runs_s": runs_fp,
        "n_parts": len(fp["parts"]),
        "fallback_parts": len(fp["fallback"]),
        "tamper_detected": changed,
        "fingerprint_and_diff_s": t_diff,
        "structural_s": t_s,
        "structural_runs_s": runs_s,
        "structural": sm,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    adult = load_adult()
    X_train, X_test, y_train, y_test = adult.train_test_split()
    X_tr, X_te = codes(X_train, X_train), codes(X_test, X_train)
    rows = []

    t = time.perf_counter()
    forest = RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1).fit(X_tr, y_train)
    fit_s = time.perf_counter() - t

    def edit_forest(model, undo=False):
        value = model.estimators_[3].tree_.value
        leaf = int(np.flatnonzero(model.estimators_[3].tree_.children_left == -1)[0])
        if not undo:
            edit_forest.saved = value[leaf].copy()
            value[leaf, 0, :] = value[leaf, 0, ::-1]
        else:
            value[leaf] = edit_forest.saved

    row = measure(
        "RandomForest(100)", forest, X_tr, y_train, X_te, y_test, args.repeats, edit_forest
    )
    row["fit_s"] = fit_s
    row["total_nodes"] = int(sum(e.tree_.node_count for e in forest.estimators_))
    rows.append(row)

    try:
        import xgboost as xgb
    except ImportError:
        xgb = None
    if xgb is not None:
        y_tr_i = (np.asarray(y_train) == sorted(set(y_train))[1]).astype(int)
        y_te_i = (np.asarray(y_test) == sorted(set(y_train))[1]).astype(int)
        t = time.perf_counter()
        booster = xgb.XGBClassifier(n_estimators=300, max_depth=6, n_jobs=1, random_state=0)
        booster.fit(X_tr, y_tr_i)
        fit_s = time.perf_counter() - t

        def edit_xgb(model, undo=False):
            model.set_params(max_depth=6 if undo else 7)

        row = measure(
            "XGBoost(300, depth 6)", booster, X_tr, y_tr_i, X_te, y_te_i, args.repeats, edit_xgb
        )
        row["fit_s"] = fit_s
        rows.append(row)

    results = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "data": {"train_rows": len(X_tr), "test_rows": len(X_te)},
        "repeats": args.repeats,
        "rows": rows,
    }
    out = Path(__file__).parent / "results" / "fingerprint.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        "| model | fit s | fingerprint s | parts | tamper seen | structural_measures s | groups "
        "(method) | min group | min leaf | n_params |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["structural"]
        print(
            f"| {r['model']} | {r['fit_s']:.2f} | {r['fingerprint_s']:.3f} | {r['n_parts']} | "
            f"{', '.join(r['tamper_detected'])} | {r['structural_s']:.2f} | {s['n_groups']} "
            f"({s['equivalence_method']}) | {s['min_group_size']} | {s['min_leaf_size']} | "
            f"{s['n_params']} |"
        )


if __name__ == "__main__":
    main()
