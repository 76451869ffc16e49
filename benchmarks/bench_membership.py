"""Speed and strength of the black-box and worst-case membership attacks on Adult.

Targets: a scikit-learn Pipeline (OrdinalEncoder on the 7 text columns, the 5 numeric columns
passed through) + a classifier, trained on a random half of Adult's published training split
(16,280 members); the other half (16,281 rows) are the non-members. Classifiers: a fully grown
DecisionTreeClassifier (memorizes), a RandomForest (30 trees) and a LogisticRegression on the
same encoding (generalizes; little to find).

Attacks:

* MembershipInferenceBlackBox, attack_train_ratio 0.5 (8,140 + 8,140 known records, 8,140 +
  8,140 evaluated): "rf", "gb" and "nn" (the paper's network with ART's defaults: 100 epochs,
  batch 100, learning rate 1e-4; skipped when PyTorch is missing);
* WorstCaseMembership with SACRO-ML's defaults (10 repetitions, 20 % held out, the depth-5
  forest) and one permuted-label baseline run, n_jobs=2.

The machine's load average is recorded, since the figures depend on what else runs.

Usage::

    python benchmarks/bench_membership.py            # all (a few minutes on 2 idle cores)
    python benchmarks/bench_membership.py --quick    # the tree target only, no nn

Writes benchmarks/results/membership.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from anonml.attacks import MembershipInferenceBlackBox, Target, WorstCaseMembership
from anonml.datasets import load_adult


def make_model(X: pd.DataFrame, kind: str) -> Pipeline:
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    num = [c for c in X.columns if c not in cat]
    if kind == "lr":
        enc = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                                 ("num", StandardScaler(), num)])
        return Pipeline([("enc", enc), ("clf", LogisticRegression(max_iter=1000))])
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


def run(target_name: str, label: str, attack, target: Target) -> dict:
    target.proba("train"), target.proba("test")  # cached before timing
    load_before = os.getloadavg()
    start = time.perf_counter()
    result = attack.run(target)
    wall = time.perf_counter() - start
    row = {
        "target": target_name,
        "attack": label,
        "seconds": wall,
        "auc": result.auc,
        "auc_pvalue": result.auc_pvalue,
        "advantage": result.advantage,
        "accuracy": result.accuracy,
        "tpr_at_1%_fpr": result.tpr_at_fpr(0.01),
        "n_evaluated": int(result.labels.size),
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }
    if "mean_auc" in result.extra:
        e = result.extra
        row.update(mean_auc=e["mean_auc"], std_auc=e["std_auc"],
                   n_significant_bh=e["n_significant_bh"],
                   n_significant_bonferroni=e["n_significant_bonferroni"],
                   baseline_mean_auc=e["baseline"]["mean_auc"],
                   baseline_n_significant_bh=e["baseline"]["n_significant_bh"])
    extra = (f"mean {row['mean_auc']:.3f} ± {row['std_auc']:.3f}, BH {row['n_significant_bh']}"
             f"/10, baseline {row['baseline_mean_auc']:.3f}" if "mean_auc" in row else "")
    print(f"| {target_name} | {label} | {wall:.1f} | {row['auc']:.3f} | {row['advantage']:.3f} | "
          f"{row['accuracy']:.3f} | {row['tpr_at_1%_fpr']:.3f} | {extra} | "
          f"{load_before[0]:.1f} / {row['load_after'][0]:.1f} |", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tree target only, no nn")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "membership.json"))
    args = parser.parse_args()
    has_torch = importlib.util.find_spec("torch") is not None and not args.quick

    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__,
                    "load_at_start": os.getloadavg()},
        "setup": "Adult train split, random half members (16,280) / half non-members (16,281); "
                 "Pipeline(encoder, classifier)",
        "targets": {},
        "runs": [],
    }
    print("| target | attack | seconds | AUC | advantage | accuracy | TPR@1% | repetitions | "
          "load 1-min before / after |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for kind in (("dt",) if args.quick else ("dt", "rf", "lr")):
        target = make_target(kind)
        record["targets"][kind] = {
            "train_accuracy": float(np.mean(target.proba("train").argmax(1)
                                            == target.label_codes("train"))),
            "test_accuracy": float(np.mean(target.proba("test").argmax(1)
                                           == target.label_codes("test"))),
        }
        attacks = [("blackbox-rf", MembershipInferenceBlackBox("rf", n_jobs=2, random_state=0)),
                   ("blackbox-gb", MembershipInferenceBlackBox("gb", random_state=0))]
        if has_torch:
            attacks.append(("blackbox-nn (100 epochs)",
                            MembershipInferenceBlackBox("nn", random_state=0)))
        attacks.append(("worst-case (10 reps + baseline)",
                        WorstCaseMembership(n_jobs=2, random_state=0)))
        for label, attack in attacks:
            record["runs"].append(run(kind, label, attack, target))
    for kind, acc in record["targets"].items():
        print(f"target {kind}: train acc {acc['train_accuracy']:.3f}, "
              f"test acc {acc['test_accuracy']:.3f}")
    record["load_at_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
