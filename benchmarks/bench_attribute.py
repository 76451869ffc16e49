"""Attribute inference: speed of the worst-case attack on Adult, black-box attack on Nursery.

1. ``WorstCaseAttribute`` over all 7 categorical features of Adult (published split, 32,561
   members and 16,281 non-members, 86 candidate values in all: 4.2 million completions), on a
   ``Pipeline(ColumnTransformer(OneHotEncoder), DecisionTreeClassifier)`` target (issue target:
   <= 30 s on 2 cores). Median of 3 runs, with the per-attribute ARR; then once with
   ``label="true"`` and once on a 30-tree random forest.
2. ``AttributeInferenceBlackBox`` on Nursery (80/20 split, seed 0), decision-tree target,
   ``attack_feature="social"``, positive value ``"problematic"``, 5 attack seeds; next to
   ``AttributeInferenceBaseline`` (no target output). Twice: ``social`` with its 3 values, and
   made binary (``"problematic"`` vs ``"other"``, what ART's Nursery loader does with
   ``transform_social=True`` for its attribute-inference examples; that the paper used this
   setting is our assumption), the target retrained on that table.
   Paper (Goldsteen et al. 2022, Sec. 4.4): attack accuracy 0.61 on the undefended tree.

    python benchmarks/bench_attribute.py [--mlp]

Writes benchmarks/results/attribute.json and prints Markdown tables. The machine is shared:
the load average (``os.getloadavg``) is recorded with every timing.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml.attacks._attribute import AttributeInferenceBaseline, AttributeInferenceBlackBox
from anonml.attacks._attribute_worst_case import WorstCaseAttribute
from anonml.attacks._core import Target
from anonml.datasets import load_adult, load_nursery

#: also try an MLP attack model on Nursery (ART's default attack model is a neural network);
#: slow: minutes on a loaded machine
MLP = "--mlp" in sys.argv


def pipeline(categorical, estimator):
    return make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), categorical), remainder="passthrough"
        ),
        estimator,
    )


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class TimedModel:
    """Forwards ``predict_proba`` to a model and adds up the seconds spent in it."""

    def __init__(self, model):
        self.model, self.classes_, self.seconds, self.rows = model, model.classes_, 0.0, 0

    def predict_proba(self, X):
        t = time.perf_counter()
        out = self.model.predict_proba(X)
        self.seconds += time.perf_counter() - t
        self.rows += len(X)
        return out


def adult_worst_case() -> dict:
    ds = load_adult()
    X_tr, X_te, y_tr, y_te = ds.train_test_split()
    cat = list(ds.categorical_features)
    out: dict = {"features": cat, "n_train": len(X_tr), "n_test": len(X_te)}
    n_values = {c: len(set(X_tr[c]) | set(X_te[c])) for c in cat}
    out["candidates"] = n_values
    out["completions"] = (len(X_tr) + len(X_te)) * sum(n_values.values())

    def timed(model, **kw) -> dict:
        """Wall and CPU seconds of one attack (fresh Target, so the real records are asked
        too), the seconds inside the model, and the load average before."""
        wrapped = TimedModel(model)
        target = Target(wrapped, X_tr, y_tr, X_te, y_te)
        load_before = load()
        wall, cpu = time.perf_counter(), time.process_time()
        res = WorstCaseAttribute(features=cat, **kw).run(target)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {"seconds": wall, "cpu_seconds": cpu, "model_seconds": wrapped.seconds,
                "model_rows": wrapped.rows, "load_before": load_before, "result": res}

    dt = pipeline(cat, DecisionTreeClassifier(random_state=0)).fit(X_tr, y_tr)
    runs = [timed(dt) for _ in range(3)]
    med = sorted(runs, key=lambda r: r["seconds"])[1]
    out["dt"] = {
        **{k: v for k, v in med.items() if k != "result"},
        "runs": [{k: v for k, v in r.items() if k != "result"} for r in runs],
        "train_accuracy": float(dt.score(X_tr, y_tr)), "test_accuracy": float(dt.score(X_te, y_te)),
        "result": med["result"].to_dict(),
    }
    run = timed(dt, label="true")
    out["dt_true_label"] = {**run, "result": run["result"].to_dict()}
    rf = pipeline(cat, RandomForestClassifier(n_estimators=30, random_state=0, n_jobs=2))
    rf.fit(X_tr, y_tr)
    run = timed(rf)
    out["rf30"] = {
        **run, "result": run["result"].to_dict(),
        "train_accuracy": float(rf.score(X_tr, y_tr)), "test_accuracy": float(rf.score(X_te, y_te)),
    }
    return out


def nursery_blackbox(binary: bool, seeds=range(5)) -> dict:
    ds = load_nursery()
    X_tr, X_te, y_tr, y_te = ds.train_test_split(test_size=0.2, random_state=0)
    if binary:
        X_tr, X_te = X_tr.copy(), X_te.copy()
        for X in (X_tr, X_te):
            X["social"] = np.where(X["social"] == "problematic", "problematic", "other")
    cat = list(X_tr.columns)
    dt = pipeline(cat, DecisionTreeClassifier(random_state=0)).fit(X_tr, y_tr)
    target = Target(dt, X_tr, y_tr, X_te, y_te)
    rows = []
    t = time.perf_counter()
    for seed in seeds:
        kw = {"positive_value": "problematic", "random_state": seed}
        bb = AttributeInferenceBlackBox("social", **kw).run(target)
        base = AttributeInferenceBaseline("social", **kw).run(target)
        rows.append({"seed": seed, "blackbox": bb.to_dict(), "baseline_attack": base.to_dict()})
    sec = time.perf_counter() - t

    def stat(key, part="blackbox"):
        vals = [r[part][key] for r in rows]
        return {"mean": statistics.mean(vals), "sd": statistics.stdev(vals)}

    # sensitivity to the attack model (seed 0): the default forest memorizes the Nursery
    # design (see the module docstring); smoother models end near the majority guess
    models = {
        "RF(min_samples_leaf=20)": RandomForestClassifier(100, min_samples_leaf=20, random_state=0),
        "LogisticRegression": LogisticRegression(max_iter=1000),
        "HistGradientBoosting": HistGradientBoostingClassifier(random_state=0),
    }
    if MLP:
        models["MLP(100)"] = MLPClassifier((100,), max_iter=300, random_state=0)
    sensitivity = {}
    for name, model in models.items():
        kw = {"positive_value": "problematic", "attack_model": model, "random_state": 0}
        bb = AttributeInferenceBlackBox("social", **kw).run(target)
        base = AttributeInferenceBaseline("social", **kw).run(target)
        sensitivity[name] = {"blackbox": bb.to_dict(), "baseline_attack": base.to_dict()}
    return {
        "attack_model_sensitivity": sensitivity,
        "binary_social": binary,
        "target_train_accuracy": float(dt.score(X_tr, y_tr)),
        "target_test_accuracy": float(dt.score(X_te, y_te)),
        "seconds_all_seeds": sec,
        "load_before": load(),
        "summary": {
            "accuracy": stat("accuracy"), "precision": stat("precision"), "recall": stat("recall"),
            "majority_accuracy": stat("baseline_accuracy"),
            "nonmember_accuracy": stat("nonmember_accuracy"),
            "baseline_attack_accuracy": stat("accuracy", "baseline_attack"),
            "baseline_attack_precision": stat("precision", "baseline_attack"),
            "baseline_attack_recall": stat("recall", "baseline_attack"),
        },
        "runs": rows,
    }


def main() -> None:
    results = {"cpu_count": os.cpu_count(), "load_start": load()}
    adult = adult_worst_case()
    results["adult_worst_case"] = adult
    print(f"Adult worst-case attribute attack, {adult['completions']:,} completions, "
          f"load at start {results['load_start']}")
    print("| target | wall s | CPU s | of which in the model, s | load before |")
    print("|---|---:|---:|---:|---|")
    for name, r in [*((f"DT run {i}", r) for i, r in enumerate(adult["dt"]["runs"], 1)),
                    ("DT label=true", adult["dt_true_label"]), ("RF-30", adult["rf30"])]:
        print(f"| {name} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
              f"{r['model_seconds']:.1f} | {r['load_before']} |")
    print()
    print("| feature | values | DT train risky | DT test risky | DT ARR | p | "
          "DT (true label) ARR | p | RF-30 ARR | p |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    def fmt(v):
        return "n/a" if v is None else f"{v:.2f}"

    for a, b, c in zip(adult["dt"]["result"]["attributes"],
                       adult["dt_true_label"]["result"]["attributes"],
                       adult["rf30"]["result"]["attributes"]):
        print(f"| {a['feature']} | {a['n_candidates']} | {a['train_risky']} | {a['test_risky']} "
              f"| {fmt(a['arr'])} | {a['pvalue']:.2g} | {fmt(b['arr'])} | {b['pvalue']:.2g} "
              f"| {fmt(c['arr'])} | {c['pvalue']:.2g} |")

    results["nursery"] = [nursery_blackbox(False), nursery_blackbox(True)]
    print("\nNursery black-box attack on `social` (positive: problematic), 5 seeds, mean ± sd")
    print("| social | target test acc | attack accuracy | precision | recall | majority guess "
          "| attack on non-members | no-output baseline attack |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results["nursery"]:
        s = r["summary"]

        def ms(k, s=s):
            return f"{s[k]['mean']:.3f} ± {s[k]['sd']:.3f}"

        print(f"| {'binary' if r['binary_social'] else '3 values'} | "
              f"{r['target_test_accuracy']:.3f} | {ms('accuracy')} | {ms('precision')} | "
              f"{ms('recall')} | {ms('majority_accuracy')} | {ms('nonmember_accuracy')} | "
              f"{ms('baseline_attack_accuracy')} |")
    print("\nAttack-model sensitivity (seed 0): accuracy / precision / recall; no-output baseline "
          "attack accuracy")
    print("| social | attack model | accuracy | precision | recall | baseline attack accuracy |")
    print("|---|---|---:|---:|---:|---:|")
    for r in results["nursery"]:
        for name, v in r["attack_model_sensitivity"].items():
            b = v["blackbox"]
            print(f"| {'binary' if r['binary_social'] else '3 values'} | {name} | "
                  f"{b['accuracy']:.3f} | {b['precision']:.3f} | {b['recall']:.3f} | "
                  f"{v['baseline_attack']['accuracy']:.3f} |")
    results["load_end"] = load()
    out = Path(__file__).parent / "results" / "attribute.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nload at end {results['load_end']}; wrote {out}")


if __name__ == "__main__":
    main()
