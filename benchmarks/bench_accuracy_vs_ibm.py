"""Accuracy loss of accuracy-guided anonymization: anonml against IBM's ai-privacy-toolkit 0.2.1,
side by side in one run (anonml issue 13, section 1).

Protocol (that of anonml.experiments.paper_accuracy and docs/results.md): Adult, published split,
the paper's 12 attributes, QI sets 12/10/8, the paper's NN (100 ReLU, early stopping). Per seed,
the NN is trained on the raw training data; its predictions on the training rows guide both
anonymizers; a fresh NN with the same seed is retrained on each anonymized table (true labels) and
scored on the raw test rows (and, for anonml, on test rows mapped through ``transform``). Only the
anonymization differs between the two columns.

apt 0.2.1 needs scikit-learn < 1.4, so it runs in its own venv (see bench_vs_ibm_apt.py for how
it is built): ``benchmarks/_apt_anonymize.py`` is run by ``--apt-python`` on a CSV of the training
table and of the predictions, and writes apt's anonymized tables; they are checked for
k-anonymity here before use. apt runs with its defaults (``train_only_QI=False``: its tree reads
all 12 features even for 10 and 8 QIs; only the QIs are recoded).

    PYTHONPATH=src python benchmarks/bench_accuracy_vs_ibm.py   # full grid, 40 min, 2 cores
    PYTHONPATH=src python benchmarks/bench_accuracy_vs_ibm.py --seeds 0 --qi-sets 12 --ks 100,1000

Writes benchmarks/results/accuracy_vs_ibm.json and .csv (one row per seed, QI set, k, method) and
prints the mean loss in points (baseline minus accuracy, per seed, then mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.anonymize import AccuracyGuidedAnonymizer
from anonml._models import paper_nn
from anonml.experiments.paper_accuracy import _fit_quiet, _load
from anonml.privacy import k_anonymity

HERE = Path(__file__).resolve().parent
APT_HELPER = HERE / "_apt_anonymize.py"

# anonml methods: AccuracyGuidedAnonymizer parameters on top of the defaults
METHODS = {  # "anonml" (the defaults) is the same fit as the rule that is the default: not rerun
    "anonml_majority_medoid": {"representative": "majority_medoid"},
    "anonml_per_feature": {"representative": "per_feature"},
    "anonml_majority_per_feature": {"representative": "majority_per_feature"},
}
EXTRA = {  # partition study (--methods): one option changed from the defaults
    "anonml": {},
    "anonml_norefine": {"refine": "none"},
    "anonml_hist": {"tree": "hist"},
    "anonml_entropy": {"criterion": "entropy"},
    "anonml_all_features": {"features": "all"},
}


def _baseline(data, seed):
    model = _retrain(data, data.X_train, seed)
    return float(model.score(data.X_test, data.y_test)), model.predict(data.X_train)


def _retrain(data, X_anon, seed):
    nn = paper_nn(data.categorical, data.numeric, random_state=seed)
    return _fit_quiet(nn, X_anon, data.y_train)


def _partition_stats(groups, pred):
    sizes = np.bincount(groups)
    pos = np.bincount(groups, weights=pred)
    purity = float(np.maximum(pos, sizes - pos).sum() / sizes.sum())
    return int(sizes.size), int(sizes.min()), purity


def _one_anonml(data, seed, qi_name, k, method, params, pred):
    t0 = time.perf_counter()
    qi = data.qi_sets[qi_name]
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, random_state=seed, **params)
    X_anon = ag.fit_transform(data.X_train, pred)
    seconds = time.perf_counter() - t0
    model = _retrain(data, X_anon, seed)
    mapped = ag.set_params(handle_unknown="ignore").transform(data.X_test)
    n_groups, smallest, purity = _partition_stats(ag.groups_, pred)
    return {"seed": seed, "qi_set": qi_name, "k": k, "method": method,
            "representative": ag.representative, "tree": ag.tree_method_, "refine": ag.refine,
            "accuracy": float(model.score(data.X_test, data.y_test)),
            "accuracy_mapped": float(model.score(mapped, data.y_test)),
            "groups": n_groups, "classes": int(X_anon[qi].drop_duplicates().shape[0]),
            "min_class_size": int(ag.min_class_size_), "purity": purity,
            "seconds_anonymize": round(seconds, 3)}


def _one_apt(data, seed, qi_name, k, path, pred, seconds):
    qi = data.qi_sets[qi_name]
    X_anon = pd.read_csv(path)
    X_anon = X_anon.astype({c: data.X_train[c].dtype for c in X_anon.columns})
    X_anon.index = data.X_train.index
    smallest = int(k_anonymity(X_anon, qi))
    if smallest < k:
        raise RuntimeError(
            f"apt's output at k={k}, {qi_name} QI, seed {seed} has a class of {smallest} rows")
    # the non-QI columns must be untouched
    rest = [c for c in data.X_train.columns if c not in set(qi)]
    if rest and not X_anon[rest].equals(data.X_train[rest]):
        raise RuntimeError("apt changed a non-QI column")
    model = _retrain(data, X_anon, seed)
    classes = X_anon.groupby(qi, dropna=False).ngroup().to_numpy()
    n_groups, _, purity = _partition_stats(classes, pred)
    return {"seed": seed, "qi_set": qi_name, "k": k, "method": "ibm_apt", "representative": "apt",
            "tree": "sklearn", "refine": "none",
            "accuracy": float(model.score(data.X_test, data.y_test)), "accuracy_mapped": np.nan,
            "groups": n_groups, "classes": n_groups, "min_class_size": smallest, "purity": purity,
            "seconds_anonymize": round(seconds, 3)}


def _run_apt(apt_python, work, seed, qi_sets, ks):
    subprocess.run([apt_python, str(APT_HELPER), str(work), str(seed), json.dumps(qi_sets),
                    ",".join(map(str, ks))], check=True, capture_output=True, text=True)
    return json.loads((work / f"apt_{seed}_times.json").read_text())


def _default(methods) -> str:
    """The method whose rows are anonml's defaults."""
    if "anonml" in methods:
        return "anonml"
    return f"anonml_{AccuracyGuidedAnonymizer().representative}"


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    base = rows[rows.method == "baseline"].set_index("seed")["accuracy"]
    r = rows[rows.method != "baseline"].copy()
    r["loss"] = 100 * (r.seed.map(base) - r.accuracy)
    r["loss_mapped"] = 100 * (r.seed.map(base) - r.accuracy_mapped)
    return r.groupby(["qi_set", "k", "method"]).agg(
        loss_mean=("loss", "mean"), loss_std=("loss", "std"),
        loss_mapped_mean=("loss_mapped", "mean"), loss_mapped_std=("loss_mapped", "std"),
        groups=("groups", "mean"), purity=("purity", "mean"), seeds=("seed", "nunique"),
    ).reset_index()


def markdown(summary: pd.DataFrame, methods) -> str:
    def cell(q, k, m, col="loss"):
        s = summary[(summary.qi_set == q) & (summary.k == k) & (summary.method == m)]
        if s.empty or np.isnan(s[f"{col}_mean"].iloc[0]):
            return "", np.nan
        r = s.iloc[0]
        std = r[f"{col}_std"]
        mean = r[f"{col}_mean"]
        return f"{mean:.2f} ± {0 if np.isnan(std) else std:.2f} ({r.groups:.0f})", mean

    default = _default(methods)
    others = [m for m in methods if m != default]
    head = ["QI", "k", "IBM apt", "anonml (default)", "anonml − IBM"] + others + ["anonml mapped"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for q in sorted(summary.qi_set.unique(), key=lambda v: -int(v)):
        for k in sorted(summary.k.unique()):
            ibm, li = cell(q, k, "ibm_apt")
            ours, lo = cell(q, k, default)
            diff = f"{lo - li:+.2f}" if not (np.isnan(lo) or np.isnan(li)) else ""
            extra = [cell(q, k, m)[0] for m in others]
            lines.append("| " + " | ".join([q, str(k), ibm, ours, diff, *extra,
                                            cell(q, k, default, "loss_mapped")[0]]) + " |")
    return "\n".join(lines) + "\n"


def figure(summary: pd.DataFrame, methods, path: Path) -> None:
    """Loss (points) against k, one panel per QI set: IBM's toolkit and anonml (defaults, raw and
    mapped test rows), the other anonml rules thin."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    default = _default(methods)
    qsets = sorted(summary.qi_set.unique(), key=lambda v: -int(v))
    fig, axes = plt.subplots(1, len(qsets), figsize=(5 * len(qsets), 4), sharey=True, squeeze=False)
    for ax, q in zip(axes[0], qsets):
        part = summary[summary.qi_set == q]

        def line(m, col, **kw):
            r = part[part.method == m].sort_values("k")
            if len(r) and r[f"{col}_mean"].notna().any():
                ax.errorbar(r.k, r[f"{col}_mean"], yerr=r[f"{col}_std"].fillna(0), capsize=3, **kw)

        line("ibm_apt", "loss", color="tab:red", marker="o", label="IBM ai-privacy-toolkit 0.2.1")
        name = "anonml defaults" + (f" ({default[7:]})" if default != "anonml" else "")
        line(default, "loss", color="tab:green", marker="o", label=name)
        line(default, "loss_mapped", color="tab:green", marker="s", ls="--",
             label="anonml defaults, test rows mapped")
        others = [m for m in methods if m != default]
        for m, c in zip(others, ["tab:blue", "tab:purple", "tab:gray"]):
            line(m, "loss", color=c, marker=".", lw=0.8, alpha=0.7,
                 label=m.replace("anonml_", "anonml, "))
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_title(f"Adult, NN, {q} quasi-identifiers")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy loss, points (raw test rows unless marked)")
    axes[0][0].legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main(argv=None) -> None:
    from joblib import Parallel, delayed

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--qi-sets", default="12,10,8")
    p.add_argument("--ks", default="10,50,100,200,500,1000")
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"anonml methods: {', '.join([*METHODS, *EXTRA])}")
    p.add_argument("--no-apt", action="store_true", help="skip IBM's toolkit")
    p.add_argument("--apt-python", default="/tmp/apt/bin/python")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--from-csv", help="only summarize the rows of an earlier run (its .csv)")
    p.add_argument("--figure", help="also draw the loss against k to this PNG (needs matplotlib)")
    p.add_argument("--out", default=str(HERE / "results" / "accuracy_vs_ibm"))
    a = p.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    qi_names = a.qi_sets.split(",")
    ks = [int(k) for k in a.ks.split(",")]
    methods = a.methods.split(",")
    table = {**METHODS, **EXTRA}
    unknown = [m for m in methods if m not in table]
    if unknown:
        sys.exit(f"unknown method {unknown[0]!r}; choose from {', '.join(table)}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    if a.from_csv:
        results = pd.read_csv(a.from_csv, dtype={"qi_set": str})
        methods = [m for m in results.method.unique() if m not in ("baseline", "ibm_apt")]
        summary = summarize(results)
        print(markdown(summary, methods))
        if a.figure:
            figure(summary, methods, Path(a.figure))
        return
    t_start = time.perf_counter()
    data = _load(None)
    par = Parallel(n_jobs=a.n_jobs)
    base = dict(zip(seeds, par(delayed(_baseline)(data, s) for s in seeds)))
    rows = [{"seed": s, "qi_set": "all", "k": 0, "method": "baseline", "accuracy": acc,
             "accuracy_mapped": acc} for s, (acc, _) in base.items()]
    with tempfile.TemporaryDirectory(prefix="anonml_vs_apt_") as tmp:
        work = Path(tmp)
        apt_times: dict = {}
        if not a.no_apt:
            data.X_train.to_csv(work / "train.csv", index=False)
            for s in seeds:
                pd.DataFrame({"pred": base[s][1]}).to_csv(work / f"pred_{s}.csv", index=False)
            qi_json = {q: data.qi_sets[q] for q in qi_names}
            times = par(delayed(_run_apt)(a.apt_python, work, s, qi_json, ks) for s in seeds)
            apt_times = dict(zip(seeds, times))
        tasks = []
        for s in seeds:
            for q in qi_names:
                for k in ks:
                    for m in methods:
                        tasks.append(delayed(_one_anonml)(data, s, q, k, m, table[m], base[s][1]))
                    if not a.no_apt:
                        tasks.append(delayed(_one_apt)(data, s, q, k, work / f"apt_{s}_{q}_{k}.csv",
                                                       base[s][1], apt_times[s][f"{q}_{k}"]))
        rows += par(tasks)
    results = pd.DataFrame(rows)
    summary = summarize(results)
    default_rule = AccuracyGuidedAnonymizer().representative
    md = markdown(summary, methods)
    print(f"loss in points on raw test rows, mean ± std over seeds {seeds} (groups); "
          f"anonml default representative: {default_rule}\n")
    print(md)
    for path, text in (
        (out.with_suffix(".csv"), results.to_csv(index=False)),
        (Path(str(out) + "_summary.csv"), summary.round(4).to_csv(index=False)),
        (out.with_suffix(".json"), json.dumps({
            "protocol": "Adult, published split, paper NN (100 ReLU, early stopping), NN "
                        "predictions "
                        "as guide, retrained on the anonymized table, raw test rows",
            "anonml_default_representative": default_rule,
            "ai_privacy_toolkit": "0.2.1 (defaults, train_only_QI=False)",
            "seeds": seeds, "ks": ks, "qi_sets": qi_names, "methods": methods,
            "seconds_total": round(time.perf_counter() - t_start, 1),
            "summary": json.loads(summary.round(4).to_json(orient="records")),
            "rows": json.loads(results.round(5).to_json(orient="records")),
        }, indent=1) + "\n"),
        (Path(str(out) + ".md"), md),
    ):
        tmp_path = str(path) + ".tmp"
        Path(tmp_path).write_text(text)
        os.replace(tmp_path, path)
    if a.figure:
        figure(summary, methods, Path(a.figure))


if __name__ == "__main__":
    main()
