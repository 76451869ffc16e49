"""Which representative rule should accuracy-guided anonymization use by default? (issue 19, 4)

Three rules of :func:`anonml.anonymize._pipeline.select_representatives`, each with AG's other
defaults (``refine="mondrian"``, ``tree="auto"``):

* ``majority_medoid``: one whole real record of the group (the paper's rule);
* ``per_feature``: a real value of the group per QI, each from its own row;
* ``per_feature_joint``: numeric QIs as ``per_feature``, the categorical QIs together from one
  real row of the group (its most frequent categorical combination).

Tables, targets and QIs (all bundled, :mod:`anonml.datasets`):

* Adult: target ``income``, QI set ``"12"`` (all 12 features: 6 numeric, 6 categorical);
* Nursery: target ``class`` (5 classes), QIs all 8 features (all categorical: here
  ``per_feature_joint`` is a whole real record, the group's most frequent one);
* Lending Club 2007-11: target ``loan_status``, the paper's QI set ``"paper"`` (11 QIs: 8
  numeric, 3 categorical: ``emp_length``, ``home_ownership``, ``zip_code``); the model reads
  all 15 features. The 50 rows with a missing ``revol_util`` are dropped.

Protocol, per table and seed: a stratified random 75/25 split of the whole table (seeded, so the
seeds differ in data, not only in tie-breaking; Adult's published split is not used for that
reason), the training part subsampled to at most ``--max-train`` rows (default 20,000: Adult
and Lending Club are subsampled, Nursery is not). The model is a fixed, cheap pipeline: one-hot
categorical and standardized numeric features into a logistic regression (lbfgs, C=1,
``max_iter=2000``); it is deterministic, so the seeds vary the data (``--model nn``: the
paper's NN instead, seeded with the seed). It is trained on the raw
training part; its predictions on the training rows guide AG; a fresh one is trained on each
anonymized table (true labels) and scored on the raw test rows (``accuracy``) and on the test
rows mapped through the anonymizer's ``transform`` (``accuracy_mapped``). Loss is in points,
baseline (raw-trained model) minus accuracy, per seed.

Plausibility, against the training table that was anonymized: the share of output groups
whose representative QI tuple occurs as some row's QI tuple (``plaus_groups``; merged
classes counted once per group) and the share of rows whose released QI tuple occurs
(``plaus_rows``); ``cat_groups`` / ``cat_rows`` do the same for the tuple of categorical QIs
only (an impossible person such as a sex from one record with a marital status from another
shows there).

Criterion for AG's default, fixed before the run: among the rules whose categorical
combination occurs in the input for every group of every run (``cat_groups`` = 100 %), the one
with the smallest mean loss on raw test rows, averaged over the table x k cells (each cell the
mean over seeds). If the best two such rules are within 0.10 points of each other, the one
with the higher mean ``plaus_groups`` wins.

    PYTHONPATH=src python benchmarks/bench_representative_rule.py          # 6-8 min, 2 busy cores
    PYTHONPATH=src python benchmarks/bench_representative_rule.py --seeds 0 --tables nursery
    PYTHONPATH=src python benchmarks/bench_representative_rule.py --model nn --tables adult \
        --out benchmarks/results/representative_rule_nn     # the paper's NN, Adult only, 7 min

Writes benchmarks/results/representative_rule.json (every run and the summary) and .md.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from anonml.anonymize import AccuracyGuidedAnonymizer
from anonml.datasets import load_adult, load_loan, load_nursery
from anonml._models import paper_nn, preprocessor
from anonml.privacy import k_anonymity

HERE = Path(__file__).resolve().parent
RULES = ("majority_medoid", "per_feature", "per_feature_joint")
MARGIN = 0.10  # points: the criterion's tie margin


def _table(name: str):
    if name == "adult":
        d = load_adult()
        frame, qi = d.frame, list(d.qi_sets["12"])
    elif name == "nursery":
        d = load_nursery()
        frame, qi = d.frame, list(d.qi_sets["all"])
    elif name == "loan":
        d = load_loan()
        frame = d.frame[d.frame["revol_util"].notna()]
        qi = list(d.qi_sets["paper"])
    else:
        raise SystemExit(f"unknown table {name!r}; use adult, nursery, loan")
    features = list(d.feature_names)
    cat = [c for c in features if c in set(d.categorical_features)]
    num = [c for c in features if c not in set(cat)]
    return frame.reset_index(drop=True), d.target, features, cat, num, qi


MODELS = {
    "logistic": "one-hot + standardized numeric -> LogisticRegression(C=1, lbfgs, max_iter=2000)",
    "nn": "the paper's NN (anonml._models.paper_nn: 100 ReLU, Adam, early stopping)",
}


def _model(cat, num, kind="logistic", seed=0):
    if kind == "nn":
        return paper_nn(cat, num, random_state=seed)
    return make_pipeline(preprocessor(cat, num),
                         LogisticRegression(C=1.0, max_iter=2000))


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _keys(frame: pd.DataFrame, cols) -> pd.Series:
    """One hashable key per row over ``cols`` (missing values equal each other)."""
    return pd.Series(list(zip(*[frame[c].astype(object).where(frame[c].notna(), "<NA>")
                                 for c in cols])), index=frame.index)


def _plausibility(X_train, ag, cols) -> tuple[float, float]:
    if not cols:
        return float("nan"), float("nan")
    real = set(_keys(X_train, cols))
    reps = ag.representatives_
    held = _keys(reps, cols).isin(real).to_numpy()
    sizes = np.bincount(ag.groups_, minlength=len(reps))
    return float(held.mean()), float((held * sizes).sum() / sizes.sum())


def run_one(name: str, seed: int, ks, max_train: int, kind: str = "logistic") -> list[dict]:
    frame, target, features, cat, num, qi = _table(name)
    # integer labels (the NN's early stopping needs them before scikit-learn 1.9)
    X, y = frame[features], pd.Series(pd.factorize(frame[target], sort=True)[0], name=target)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    if len(X_tr) > max_train:
        X_tr, _, y_tr, _ = train_test_split(X_tr, y_tr, train_size=max_train, random_state=seed,
                                            stratify=y_tr)
    X_tr, y_tr = X_tr.reset_index(drop=True), y_tr.reset_index(drop=True)
    base = _fit(_model(cat, num, kind, seed), X_tr, y_tr)
    base_acc = float(base.score(X_te, y_te))
    pred = base.predict(X_tr)
    qi_cat = [c for c in qi if c in set(cat)]
    rows = []
    for k in ks:
        for rule in RULES:
            t0 = time.perf_counter()
            ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, categorical_features=cat,
                                          representative=rule, random_state=seed)
            X_anon = ag.fit_transform(X_tr, pred)
            sec = time.perf_counter() - t0
            assert k_anonymity(X_anon, qi) >= k
            model = _fit(_model(cat, num, kind, seed), X_anon, y_tr)
            mapped = ag.set_params(handle_unknown="ignore").transform(X_te)
            pg, pr = _plausibility(X_tr, ag, qi)
            cg, cr = _plausibility(X_tr, ag, qi_cat)
            acc = float(model.score(X_te, y_te))
            acc_m = float(model.score(mapped, y_te))
            rows.append({"table": name, "model": kind, "seed": seed, "k": k, "rule": rule,
                         "n_train": len(X_tr), "n_test": len(X_te), "baseline": base_acc,
                         "accuracy": acc, "accuracy_mapped": acc_m,
                         "loss": 100 * (base_acc - acc), "loss_mapped": 100 * (base_acc - acc_m),
                         "groups": int(ag.n_groups_), "plaus_groups": pg, "plaus_rows": pr,
                         "cat_groups": cg, "cat_rows": cr, "seconds_anonymize": round(sec, 2)})
            print(f"{name:8s} seed {seed} k {k:5d} {rule:18s} loss {rows[-1]['loss']:6.2f} "
                  f"mapped {rows[-1]['loss_mapped']:6.2f} plaus {pg:6.1%} cat {cg:6.1%} "
                  f"groups {ag.n_groups_:5d} {sec:5.1f}s", flush=True)
    return rows


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.groupby(["table", "k", "rule"], sort=False).agg(
        loss=("loss", "mean"), loss_std=("loss", "std"),
        loss_mapped=("loss_mapped", "mean"), loss_mapped_std=("loss_mapped", "std"),
        plaus_groups=("plaus_groups", "mean"), plaus_rows=("plaus_rows", "mean"),
        cat_groups=("cat_groups", "mean"), cat_groups_min=("cat_groups", "min"),
        cat_rows=("cat_rows", "mean"), groups=("groups", "mean"), seeds=("seed", "nunique"),
    ).reset_index()


def choose(summary: pd.DataFrame) -> dict:
    """The criterion of the module docstring, applied to the summary."""
    per_rule = summary.groupby("rule", sort=False).agg(
        mean_loss=("loss", "mean"), mean_loss_mapped=("loss_mapped", "mean"),
        plaus_groups=("plaus_groups", "mean"), cat_groups=("cat_groups", "mean"),
        cat_groups_min=("cat_groups_min", "min"))
    ok = per_rule[per_rule.cat_groups_min.fillna(1.0) >= 1.0].sort_values("mean_loss")
    chosen = ok.index[0] if len(ok) else None
    tie = None
    if len(ok) > 1 and ok.mean_loss.iloc[1] - ok.mean_loss.iloc[0] < MARGIN:
        tie = list(ok.index[:2])
        chosen = ok.iloc[:2].sort_values("plaus_groups", ascending=False).index[0]
    return {"per_rule": per_rule.reset_index().to_dict(orient="records"),
            "qualifying": list(ok.index), "tie_within_margin": tie, "chosen": chosen}


def markdown(summary: pd.DataFrame, decision: dict) -> str:
    pct = lambda v: "" if pd.isna(v) else f"{100 * v:.1f} %"  # noqa: E731
    head = ["table", "k", "rule", "groups", "loss raw", "loss mapped",
            "plausible groups (all QI)", "plausible rows (all QI)", "plausible groups (cat. QI)",
            "plausible rows (cat. QI)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 3)]
    for r in summary.itertuples():
        lines.append("| " + " | ".join([
            r.table, str(r.k), r.rule, f"{r.groups:.0f}",
            f"{r.loss:.2f} ± {0 if pd.isna(r.loss_std) else r.loss_std:.2f}",
            f"{r.loss_mapped:.2f} ± {0 if pd.isna(r.loss_mapped_std) else r.loss_mapped_std:.2f}",
            pct(r.plaus_groups), pct(r.plaus_rows), pct(r.cat_groups), pct(r.cat_rows)]) + " |")
    lines += ["", "| rule | mean loss raw | mean loss mapped | plausible groups (all QI) | "
              "plausible groups (cat. QI), mean / min |", "|---|---:|---:|---:|---:|"]
    for r in decision["per_rule"]:
        lines.append(f"| {r['rule']} | {r['mean_loss']:.2f} | {r['mean_loss_mapped']:.2f} | "
                     f"{pct(r['plaus_groups'])} | {pct(r['cat_groups'])} / "
                     f"{pct(r['cat_groups_min'])} |")
    lines += ["", f"Qualifying (every categorical combination real): "
              f"{', '.join(decision['qualifying']) or 'none'}; chosen: **{decision['chosen']}**"
              + (f" (within {MARGIN} points of {decision['tie_within_margin']}: higher "
                 "all-QI plausibility)" if decision["tie_within_margin"] else "")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    from joblib import Parallel, delayed

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default="adult,nursery,loan")
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--ks", default="10,100", help="k values of every table")
    p.add_argument("--adult-extra-ks", default="1000", help="more k values for Adult only")
    p.add_argument("--max-train", type=int, default=20_000)
    p.add_argument("--model", choices=list(MODELS), default="logistic",
                   help="the model retrained on each anonymized table (default: logistic)")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--out", default=str(HERE / "results" / "representative_rule"))
    a = p.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    ks = [int(k) for k in a.ks.split(",")]
    extra = [int(k) for k in a.adult_extra_ks.split(",") if k]
    jobs = [(t, s, ks + (extra if t == "adult" else [])) for t in a.tables.split(",")
            for s in seeds]
    t0 = time.perf_counter()
    parts = Parallel(n_jobs=a.n_jobs)(delayed(run_one)(t, s, kk, a.max_train, a.model)
                                       for t, s, kk in jobs)
    runs = pd.DataFrame([r for part in parts for r in part])
    summary = summarize(runs)
    decision = choose(summary)
    md = markdown(summary, decision)
    print(md)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"model": MODELS[a.model], "tables": a.tables, "seeds": seeds,
            "split": "stratified random 75/25 per seed; training part subsampled to "
                     f"{a.max_train} rows",
            "qi": {"adult": "qi_sets['12']", "nursery": "all 8", "loan": "qi_sets['paper']"},
            "criterion": "smallest mean raw loss among rules with categorical plausibility "
                         f"100 % in every run; within {MARGIN} points: higher all-QI "
                         "plausibility",
            "seconds": round(time.perf_counter() - t0, 1)}
    out.with_suffix(".json").write_text(json.dumps(
        {"meta": meta, "decision": decision, "summary": summary.to_dict(orient="records"),
         "runs": runs.to_dict(orient="records")}, indent=1, default=float))
    out.with_suffix(".md").write_text(md)
    print(f"{meta['seconds']:.0f} s; wrote {out}.json and .md")


if __name__ == "__main__":
    main()
