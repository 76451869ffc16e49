"""Which partition generalizes better at high k (anonml issue 13, section 1, question 2)?

Adult, the protocol of bench_accuracy_vs_ibm.py (paper NN, its predictions as guide, retrained on
the anonymized table, raw and mapped test rows), at k = 500 and 1000, 12 QIs, seeds 0-4.
Partitions, each recoded with two representative rules (the record rule ``majority_medoid`` and
the per-feature rule ``per_feature``), so that partition and representative effects separate:

* ``exact_refine``: anonml's default below 100,000 rows (scikit-learn's exact tree on numeric
  ranks + one-hot categorical QIs, then Mondrian refinement of pure leaves of >= 2k rows);
* ``exact``: the same tree, no refinement (the paper);
* ``hist``: anonml's histogram tree (native categorical subset splits; at k >= 500 its leaves
  are too small for the refinement to cut, so ``hist`` + refine is the same partition);
* ``apt_tree``: the tree of IBM's ai-privacy-toolkit 0.2.1 rebuilt here
  (``DecisionTreeClassifier(random_state=10, min_samples_leaf=k)`` on raw numeric and one-hot
  categorical columns of *every* feature, apt's default ``train_only_QI=False``).

Per partition: groups, purity (share of rows whose guide label is their group's majority), the
features the tree splits on, and the retrained accuracy. Writes
benchmarks/results/partition_high_k.json and .csv and prints Markdown tables.

    PYTHONPATH=src python benchmarks/bench_partition_high_k.py
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml.anonymize import AccuracyGuidedAnonymizer
from anonml.anonymize._pipeline import recode, representative_values, select_representatives
from anonml.encoding import TableEncoder
from anonml._models import paper_nn
from anonml.experiments.paper_accuracy import _fit_quiet, _load

HERE = Path(__file__).resolve().parent
PARTITIONS = {
    "exact_refine": {"tree": "exact", "refine": "mondrian"},
    "exact": {"tree": "exact", "refine": "none"},
    "hist": {"tree": "hist", "refine": "none"},
    "apt_tree": None,
}
# representative rules retrained per partition (the default partition's majority_medoid,
# per_feature and majority_per_feature runs are in bench_accuracy_vs_ibm.py; apt's tree is
# compared with anonml's exact tree row by row instead of retrained)
RULES = {
    "exact_refine": ("proba_match",),
    "exact": ("majority_medoid", "per_feature"),
    "hist": ("majority_medoid", "per_feature"),
    "apt_tree": (),
}


def _proba_match(data, groups, n_groups, proba):
    """Exploration (not a library rule): the record whose original-model probability of the
    positive class is closest to its group's share of positive training labels (what the
    retrained model learns at the representative); ties to the first row."""
    y = data.y_train.to_numpy()
    sizes = np.bincount(groups, minlength=n_groups)
    share = np.bincount(groups, weights=y, minlength=n_groups) / sizes
    gap = np.abs(proba - share[groups])
    order = np.lexsort((gap, groups))
    starts = np.r_[0, np.cumsum(np.bincount(groups, minlength=n_groups))[:-1]]
    return order[starts]


def _apt_tree(data, k, pred):
    cols = list(data.X_train.columns)
    cat = [c for c in cols if c in set(data.categorical)]
    num = [c for c in cols if c not in set(cat)]
    enc = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(data.X_train[cat])
    M = np.hstack([data.X_train[num].to_numpy(float), enc.transform(data.X_train[cat])])
    names = num + [c for c, cats in zip(cat, enc.categories_) for _ in cats]
    tree = DecisionTreeClassifier(random_state=10, min_samples_split=2, min_samples_leaf=k)
    tree.fit(M, pred)
    leaves = tree.apply(M)
    groups = np.unique(leaves, return_inverse=True)[1]
    split = Counter(names[f] for f in tree.tree_.feature if f >= 0)
    return groups, split


def _ag_split_features(ag):
    enc = ag.encoder_
    if ag.tree_method_ == "exact":
        names = list(enc.numeric)
        for c in enc.categorical:
            spec = enc.cats_[c]
            names += [c] * (spec.n_codes if spec.has_missing else spec.n_codes - 1)
        feats = ag.tree_.tree_.feature
    else:
        names = list(enc.columns)
        feats = ag.tree_.feature_
    return Counter(names[f] for f in feats if f >= 0)


def _one(data, seed, pred, proba, qi_name, k, part):
    qi = data.qi_sets[qi_name]
    cat = [c for c in qi if c in set(data.categorical)]
    ag = None
    same_as_exact = np.nan
    if PARTITIONS[part] is None:
        groups, split = _apt_tree(data, k, pred)
        exact = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, random_state=seed, tree="exact",
                                         refine="none", features="all").fit(data.X_train, pred)
        # the same partition: every (apt group, anonml group) pair is one-to-one
        pairs = np.unique(np.c_[groups, exact.groups_], axis=0)
        same_as_exact = float(len(pairs) == groups.max() + 1 == exact.n_groups_)
    else:
        ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, random_state=seed,
                                      **PARTITIONS[part])
        ag.fit(data.X_train, pred)
        groups, split = ag.groups_, _ag_split_features(ag)
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups)
    pos = np.bincount(groups, weights=pred)
    purity = float(np.maximum(pos, sizes - pos).sum() / sizes.sum())
    enc = TableEncoder(list(qi), cat).fit(data.X_train)
    rows = [{"seed": seed, "qi_set": qi_name, "k": k, "partition": part, "rule": "-",
             "groups": n_groups, "min_size": int(sizes.min()), "purity": purity,
             "split_features": dict(split), "n_splits": int(sum(split.values())),
             "same_as_exact": same_as_exact, "accuracy": np.nan, "accuracy_mapped": np.nan}]
    for rule in RULES[part]:
        if rule == "proba_match":
            rep_rows = _proba_match(data, groups, n_groups, proba)
        else:
            rep_rows = select_representatives(
                data.X_train, enc, qi, groups, n_groups, pred.astype(np.int64), rule)
        rep = representative_values(data.X_train, qi, rep_rows)
        X_anon = recode(data.X_train, qi, groups, rep)
        model = _nn(data, X_anon, seed)
        mapped = np.nan
        if ag is not None:
            ag.set_params(handle_unknown="ignore")
            test_groups = ag._assign(data.X_test)
            mapped = float(model.score(recode(data.X_test, qi, test_groups, rep), data.y_test))
        rows.append({"seed": seed, "qi_set": qi_name, "k": k, "partition": part, "rule": rule,
                     "groups": n_groups, "min_size": int(sizes.min()), "purity": purity,
                     "split_features": dict(split), "n_splits": int(sum(split.values())),
                     "same_as_exact": same_as_exact,
                     "accuracy": float(model.score(data.X_test, data.y_test)),
                     "accuracy_mapped": mapped})
    return rows


def _nn(data, X, seed):
    nn = paper_nn(data.categorical, data.numeric, random_state=seed)
    return _fit_quiet(nn, X, data.y_train)


def _markdown(res: pd.DataFrame, summ: pd.DataFrame) -> str:
    lines = ["| QI | k | partition | rule | groups | purity | loss raw, points "
             "| loss mapped, points |",
             "|---:|---:|---|---|---:|---:|---:|---:|"]
    for _, r in summ.iterrows():
        head = f"| {r.qi_set} | {r.k} | {r.partition} |"
        if r.rule == "-":
            same = "" if np.isnan(r.same_as_exact) else (
                f", same partition as anonml's exact tree (features='all') in "
                f"{r.same_as_exact:.0%} of seeds")
            lines.append(f"{head} (partition only{same}) | {r.groups:.1f} | {r.purity:.4f} | | |")
            continue
        mapped = "" if np.isnan(r.loss_mapped_mean) else (
            f"{r.loss_mapped_mean:.2f} ± {r.loss_mapped_std:.2f}")
        lines.append(f"{head} {r.rule} | {r.groups:.1f} | {r.purity:.4f} | "
                     f"{r.loss_mean:.2f} ± {r.loss_std:.2f} | {mapped} |")
    # the features split on, summed over seeds (one row per partition: rule "-")
    feats = res[res.rule == "-"].groupby(["qi_set", "k", "partition"], sort=False)
    feats = feats["split_features"].agg(
        lambda s: dict(sum((Counter(d) for d in s), Counter()).most_common()))
    lines += ["", "| QI | k | partition | splits per feature, summed over seeds |",
              "|---:|---:|---|---|"]
    for (q, k, part), d in feats.items():
        splits = ", ".join(f"{f} {n}" for f, n in d.items())
        lines.append(f"| {q} | {k} | {part} | {splits} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    from joblib import Parallel, delayed

    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--qi-sets", default="12")
    p.add_argument("--ks", default="500,1000")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--out", default=str(HERE / "results" / "partition_high_k"))
    a = p.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    t0 = time.perf_counter()
    data = _load(None)
    par = Parallel(n_jobs=a.n_jobs)

    def base(seed):
        m = _nn(data, data.X_train, seed)
        proba = m.predict_proba(data.X_train)[:, 1]
        return float(m.score(data.X_test, data.y_test)), m.predict(data.X_train), proba

    bases = dict(zip(seeds, par(delayed(base)(s) for s in seeds)))
    tasks = [delayed(_one)(data, s, bases[s][1], bases[s][2], q, int(k), part)
             for s in seeds for q in a.qi_sets.split(",") for k in a.ks.split(",")
             for part in PARTITIONS]
    res = pd.DataFrame([r for rows in par(tasks) for r in rows])
    res["baseline"] = res.seed.map({s: b[0] for s, b in bases.items()})
    res["loss"] = 100 * (res.baseline - res.accuracy)
    res["loss_mapped"] = 100 * (res.baseline - res.accuracy_mapped)
    summ = res.groupby(["qi_set", "k", "partition", "rule"], sort=False).agg(
        groups=("groups", "mean"), purity=("purity", "mean"), n_splits=("n_splits", "mean"),
        same_as_exact=("same_as_exact", "mean"),
        loss_mean=("loss", "mean"), loss_std=("loss", "std"),
        loss_mapped_mean=("loss_mapped", "mean"), loss_mapped_std=("loss_mapped", "std"),
    ).reset_index()
    md = _markdown(res, summ)
    print(md)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"seeds": seeds, "seconds_total": round(time.perf_counter() - t0, 1),
              "summary": json.loads(summ.round(4).to_json(orient="records")),
              "rows": json.loads(res.round(5).to_json(orient="records"))}
    for path, text in ((out.with_suffix(".csv"),
                        res.drop(columns="split_features").to_csv(index=False)),
                       (Path(str(out) + ".md"), md),
                       (out.with_suffix(".json"), json.dumps(record, indent=1) + "\n")):
        Path(str(path) + ".tmp").write_text(text)
        os.replace(str(path) + ".tmp", path)


if __name__ == "__main__":
    main()
