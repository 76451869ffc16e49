"""Accuracy-guided vs classic k-anonymity: the figures of Goldsteen et al. (2022) and Malle et al.

    A. Goldsteen et al., "Anonymizing Machine Learning Models", DPM 2021, Figs. 2-5 / App. B.
    B. Malle, P. Kieseberg, E. Weippl, A. Holzinger, "The right to be forgotten: towards machine
    learning on perturbed knowledge bases", CD-ARES 2016 (SaNGreeA on Adult).

Protocol (every figure): train the model on the original training data; anonymize the training
data with each method at each k; retrain a fresh model with the same seed on the anonymized data
and the true labels; score it on the raw test rows (``accuracy``) and on the test rows mapped
through the anonymizer's ``transform`` (``accuracy_mapped``). Every method recodes a group by one
real record (the data keep their domain, so the models retrain unchanged): accuracy-guided (AG)
picks the majority-prediction medoid, as in the paper; the classic methods, which know nothing
of the model, the plain medoid. ``gcp`` is the information loss of the groups (Global Certainty
Penalty, :func:`anonml.privacy.gcp`), ``ngil`` SaNGreeA's normalized GIL.

Figures (``--figures``):

* ``fig2``: Adult, NN, QI sets 8/10/12: AG vs Median Mondrian, R+-tree, Hilbert (+ baseline);
* ``fig3``: Adult, 8 QI, after feature selection (a random forest's importances, median
  threshold, on the training data), for a decision tree, a random forest and, when the
  ``xgboost`` package is installed, XGBoost;
* ``fig4``: Loan (our Lending Club stand-in, 11 of the paper's 18 QIs), NN;
* ``fig5``: AG on the model's predictions vs the workload-aware variant (AG on the true labels,
  entropy splits) and InfoGain Mondrian, NN on Adult (12 QI) and Loan;
* ``malle``: SaNGreeA on Adult (all 12 features as QIs, with the shipped hierarchies) at k = 3, 7, 11, 15, 19 for the weight
  vectors equal / age 0.88 / race 0.88, with the accuracy of four classifiers (logistic
  regression, linear SVM, random forest, gradient boosting) and the NGIL.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.datasets import load_loan
from anonml.experiments._data import Split, adult_split
from anonml._models import paper_nn, preprocessor

__all__ = ["FIGURES", "METHODS", "run", "run_malle", "summarize", "write_outputs", "write_malle"]

FIGURES = ("fig2", "fig3", "fig4", "fig5")
CLASSIC = ("mondrian", "rtree", "hilbert")
METHODS = ("ag", "mondrian", "rtree", "hilbert", "workload", "infogain", "sangreea")
MALLE_K = (3, 7, 11, 15, 19)
MALLE_WEIGHTS = {
    "equal": None,
    "age": ("age", 0.88, 0.01),
    "race": ("race", 0.88, 0.01),
}


# -- data and models --------------------------------------------------------------------------------
@dataclass
class _Data(Split):
    name: str
    qi_sets: dict


def _adult() -> _Data:
    d, split = adult_split()
    return _Data(**vars(split), name="adult", qi_sets={k: list(v) for k, v in d.qi_sets.items()})


def _loan() -> _Data:
    d = load_loan()
    X = d.X.copy()
    # revol_util has 50 missing values; numeric QIs must be complete, so impute the median
    # (a public-data preprocessing step, applied before any anonymization)
    for c in X.columns:
        if pd.api.types.is_numeric_dtype(X[c].dtype) and X[c].isna().any():
            X[c] = X[c].fillna(X[c].median())
    y = (d.y == "Charged Off").astype(int)
    X_train, X_test, y_train, y_test = _split(X, y)
    cat = list(d.categorical_features)
    num = [c for c in X.columns if c not in set(cat)]
    return _Data(X_train, X_test, y_train, y_test, cat, num, name="loan",
                 qi_sets={"paper": list(d.qi_sets["paper"])})


def _split(X: pd.DataFrame, y: pd.Series):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)


def _model(name: str, data: _Data, seed: int, features: Sequence[Any] | None = None):
    cols = set(features) if features is not None else None
    cat = [c for c in data.categorical if cols is None or c in cols]
    num = [c for c in data.numeric if cols is None or c in cols]
    if name == "nn":
        return paper_nn(cat, num, random_state=seed)
    if name == "dt":
        return make_pipeline(preprocessor(cat, num), DecisionTreeClassifier(random_state=seed))
    if name == "rf":
        return make_pipeline(
            preprocessor(cat, num), RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=seed)
        )
    if name == "xgb":
        from xgboost import XGBClassifier

        return make_pipeline(
            preprocessor(cat, num),
            XGBClassifier(n_estimators=200, max_depth=6, learning_rate=0.1, n_jobs=1, random_state=seed),
        )
    if name == "logreg":
        return make_pipeline(preprocessor(cat, num), LogisticRegression(max_iter=1000))
    if name == "svm":
        return make_pipeline(preprocessor(cat, num), LinearSVC(C=0.1, random_state=seed))
    if name == "gb":
        return make_pipeline(
            preprocessor(cat, num, dense=True), HistGradientBoostingClassifier(random_state=seed)
        )
    raise InputError(f"unknown model {name!r}")


def _fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _xgboost_available() -> bool:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return False
    return True


def _select_features(data: _Data, seed: int) -> list:
    """Features kept by a random forest's importances (median threshold), as in Fig. 3."""
    from sklearn.feature_selection import SelectFromModel

    pre = preprocessor(data.categorical, data.numeric)
    M = pre.fit_transform(data.X_train)
    sel = SelectFromModel(
        RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=1), threshold="median"
    ).fit(M, data.y_train)
    names = pre.get_feature_names_out()
    keep = set()
    for name, on in zip(names, sel.get_support()):
        if on:  # "onehotencoder__workclass_Private" -> workclass; "standardscaler__age" -> age
            raw = name.split("__", 1)[1]
            for c in data.X_train.columns:
                if raw == c or raw.startswith(f"{c}_"):
                    keep.add(c)
    return [c for c in data.X_train.columns if c in keep]


# -- anonymizers ----------------------------------------------------------------------------------------
def _anonymizer(method: str, k: int, qi: list, seed: int, hierarchies: dict | None):
    from anonml.anonymize import (
        AccuracyGuidedAnonymizer,
        HilbertAnonymizer,
        MondrianAnonymizer,
        RTreeAnonymizer,
    )

    if method == "ag":
        return AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, random_state=seed), "predictions"
    if method == "workload":
        return AccuracyGuidedAnonymizer(
            k=k, quasi_identifiers=qi, criterion="entropy", random_state=seed
        ), "labels"
    if method == "mondrian":
        return MondrianAnonymizer(k=k, quasi_identifiers=qi, representative="medoid"), None
    if method == "infogain":
        return MondrianAnonymizer(
            k=k, quasi_identifiers=qi, criterion="infogain", representative="medoid"
        ), "labels"
    if method == "hilbert":
        return HilbertAnonymizer(k=k, quasi_identifiers=qi, representative="medoid",
                                 hierarchies=hierarchies), None
    if method == "rtree":
        return RTreeAnonymizer(k=k, quasi_identifiers=qi, representative="medoid"), None
    raise InputError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")


def _gcp(X: pd.DataFrame, groups: np.ndarray, qi: list, hierarchies: dict | None) -> float:
    from anonml.privacy import gcp

    return float(gcp(X, groups, qi, hierarchies=hierarchies))


# -- one cell of a figure ----------------------------------------------------------------------------
@dataclass
class _Cell:
    figure: str
    data: _Data
    model: str
    qi_set: str
    features: list | None  # None: all columns


def _baseline(cell: _Cell, seed: int) -> dict:
    X_tr, X_te = _cols(cell, cell.data.X_train), _cols(cell, cell.data.X_test)
    m = _fit_quiet(_model(cell.model, cell.data, seed, cell.features), X_tr, cell.data.y_train)
    return {
        "accuracy": float(m.score(X_te, cell.data.y_test)),
        "predictions": m.predict(X_tr),
    }


def _cols(cell: _Cell, X: pd.DataFrame) -> pd.DataFrame:
    return X if cell.features is None else X[cell.features]


def _qi(cell: _Cell) -> list:
    qi = cell.data.qi_sets[cell.qi_set]
    return qi if cell.features is None else [c for c in qi if c in set(cell.features)]


def _one(cell: _Cell, method: str, k: int, seed: int, predictions: np.ndarray,
         hierarchies: dict | None) -> dict:
    data = cell.data
    X_tr, X_te = _cols(cell, data.X_train), _cols(cell, data.X_test)
    qi = _qi(cell)
    anon, guide = _anonymizer(method, k, qi, seed, hierarchies)
    y_guide = {"predictions": predictions, "labels": data.y_train.to_numpy(), None: None}[guide]
    t0 = time.perf_counter()
    X_anon = anon.fit_transform(X_tr, y_guide) if y_guide is not None else anon.fit_transform(X_tr)
    t_anon = time.perf_counter() - t0
    m = _fit_quiet(_model(cell.model, data, seed, cell.features), X_anon, data.y_train)
    mapped = anon.set_params(handle_unknown="ignore").transform(X_te)
    return {
        **_key(cell),
        "method": method,
        "k": k,
        "seed": seed,
        "accuracy": float(m.score(X_te, data.y_test)),
        "accuracy_mapped": float(m.score(mapped, data.y_test)),
        "n_groups": int(anon.n_groups_),
        "min_class_size": int(anon.min_class_size_),
        "gcp": _gcp(X_tr, anon.groups_, qi, hierarchies),
        "seconds_anonymize": round(t_anon, 4),
    }


def _key(cell: _Cell) -> dict:
    return {"figure": cell.figure, "dataset": cell.data.name, "model": cell.model,
            "qi_set": cell.qi_set, "n_qi": len(_qi(cell))}


def _cells(figures: Sequence[str], seed0: int = 0) -> list[tuple[_Cell, tuple[str, ...]]]:
    adult = _adult() if set(figures) & {"fig2", "fig3", "fig5"} else None
    loan = _loan() if set(figures) & {"fig4", "fig5"} else None
    cells: list[tuple[_Cell, tuple[str, ...]]] = []
    for fig in figures:
        if fig == "fig2":
            for q in ("8", "10", "12"):
                cells.append((_Cell(fig, adult, "nn", q, None), ("ag", *CLASSIC)))
        elif fig == "fig3":
            feats = _select_features(adult, seed0)
            models = ["dt", "rf"] + (["xgb"] if _xgboost_available() else [])
            for m in models:
                cells.append((_Cell(fig, adult, m, "8", feats), ("ag", *CLASSIC)))
        elif fig == "fig4":
            cells.append((_Cell(fig, loan, "nn", "paper", None), ("ag", *CLASSIC)))
        elif fig == "fig5":
            cells.append((_Cell(fig, adult, "nn", "12", None), ("ag", "workload", "infogain")))
            cells.append((_Cell(fig, loan, "nn", "paper", None), ("ag", "workload", "infogain")))
        else:
            raise InputError(f"unknown figure {fig!r}; choose from {', '.join(FIGURES)} (or malle)")
    return cells


def run(
    figures: Sequence[str] = FIGURES,
    ks: Sequence[int] = (10, 50, 100, 200, 500, 1000),
    seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    methods: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    n_train: int | None = None,
) -> pd.DataFrame:
    """Run the figures' grids; one row per (figure, model, QI set, method, k, seed) plus the
    baselines (``method == "baseline"``, ``k == 0``). ``methods`` restricts the methods;
    ``n_train`` keeps only the first training rows (for quick checks)."""
    from joblib import Parallel, delayed

    cells = _cells(figures, seeds[0])
    if n_train is not None:
        for data in {id(c.data): c.data for c, _ in cells}.values():
            data.X_train, data.y_train = data.X_train.iloc[:n_train], data.y_train.iloc[:n_train]
    par = Parallel(n_jobs=n_jobs)
    # one baseline per distinct (dataset, model, features, seed); several cells share one
    uniq: dict[tuple, _Cell] = {}
    for cell, _ in cells:
        uniq.setdefault((cell.data.name, cell.model, tuple(cell.features or ())), cell)
    keys = [(key, s) for key in uniq for s in seeds]
    if progress:
        progress(f"{len(keys)} baselines")
    base_out = par(delayed(_baseline)(uniq[key], s) for key, s in keys)
    base = dict(zip(keys, base_out))
    # a run shared by two figures (AG on Adult 12 QI in fig2 and fig5, ...) is computed once
    tasks: dict[tuple, Any] = {}
    wanted: list[tuple[_Cell, tuple]] = []
    rows = []
    for cell, cell_methods in cells:
        key = (cell.data.name, cell.model, tuple(cell.features or ()))
        for s in seeds:
            b = base[(key, s)]
            rows.append({**_key(cell), "method": "baseline", "k": 0, "seed": s,
                         "accuracy": b["accuracy"], "accuracy_mapped": b["accuracy"],
                         "n_groups": len(cell.data.X_train), "min_class_size": 1, "gcp": 0.0,
                         "seconds_anonymize": 0.0})
            for meth in cell_methods:
                if methods is not None and meth not in methods:
                    continue
                for k in ks:
                    run_key = (*key, cell.qi_set, meth, k, s)
                    if run_key not in tasks:
                        tasks[run_key] = delayed(_one)(cell, meth, k, s, b["predictions"], None)
                    wanted.append((cell, run_key))
    if progress:
        progress(f"{len(tasks)} anonymize-and-retrain runs")
    done = dict(zip(tasks, par(tasks.values())))
    rows.extend({**done[run_key], **_key(cell)} for cell, run_key in wanted)
    return pd.DataFrame(rows)


# -- Malle et al.: SaNGreeA ------------------------------------------------------------------------------
def _weights(name: str, qi: list) -> dict | None:
    spec = MALLE_WEIGHTS[name]
    if spec is None:
        return None
    heavy, w_heavy, w_rest = spec
    return {c: (w_heavy if c == heavy else w_rest) for c in qi}


def _malle_one(data: _Data, qi: list, k: int, weights: str, seeds: Sequence[int],
               hierarchies: dict) -> list[dict]:
    from anonml.anonymize import SaNGreeAAnonymizer

    t0 = time.perf_counter()
    anon = SaNGreeAAnonymizer(k=k, quasi_identifiers=qi, hierarchies=hierarchies,
                              weights=_weights(weights, qi), representative="medoid")
    X_anon = anon.fit_transform(data.X_train)
    t_anon = time.perf_counter() - t0
    mapped = anon.set_params(handle_unknown="ignore").transform(data.X_test)
    gcp = _gcp(data.X_train, anon.groups_, qi, hierarchies)
    rows = []
    for model in ("logreg", "svm", "rf", "gb"):
        for s in seeds:
            m = _fit_quiet(_model(model, data, s), X_anon, data.y_train)
            rows.append({"k": k, "weights": weights, "model": model, "seed": s,
                         "accuracy": float(m.score(data.X_test, data.y_test)),
                         "accuracy_mapped": float(m.score(mapped, data.y_test)),
                         "ngil": float(anon.ngil_), "gcp": gcp, "n_groups": int(anon.n_groups_),
                         "seconds_anonymize": round(t_anon, 3)})
    return rows


def _malle_baseline(data: _Data, seeds: Sequence[int]) -> list[dict]:
    rows = []
    for model in ("logreg", "svm", "rf", "gb"):
        for s in seeds:
            m = _fit_quiet(_model(model, data, s), data.X_train, data.y_train)
            acc = float(m.score(data.X_test, data.y_test))
            rows.append({"k": 0, "weights": "baseline", "model": model, "seed": s, "accuracy": acc,
                         "accuracy_mapped": acc, "ngil": 0.0, "gcp": 0.0,
                         "n_groups": len(data.X_train), "seconds_anonymize": 0.0})
    return rows


def run_malle(
    ks: Sequence[int] = MALLE_K,
    weights: Sequence[str] = tuple(MALLE_WEIGHTS),
    seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    qi_set: str = "12",
) -> pd.DataFrame:
    """SaNGreeA on Adult (Malle et al. 2016): accuracy of 4 classifiers and NGIL per k and
    weight vector. SaNGreeA itself is deterministic; the seeds vary the classifiers."""
    from joblib import Parallel, delayed

    from anonml.datasets import load_adult_hierarchies

    data = _adult()
    qi = data.qi_sets[qi_set]
    hierarchies = {c: h for c, h in load_adult_hierarchies().items() if c in set(qi)}
    unknown = [w for w in weights if w not in MALLE_WEIGHTS]
    if unknown:
        raise InputError(f"unknown weight vector {unknown[0]!r}; choose from {', '.join(MALLE_WEIGHTS)}")
    par = Parallel(n_jobs=n_jobs)
    parts = par([delayed(_malle_baseline)(data, seeds)]
                + [delayed(_malle_one)(data, qi, k, w, seeds, hierarchies) for w in weights for k in ks])
    return pd.DataFrame([r for part in parts for r in part])


# -- outputs -----------------------------------------------------------------------------------------------
def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds per (figure, dataset, model, QI set, method, k), with the loss in
    points against each seed's own baseline."""
    keys = ["figure", "dataset", "model", "qi_set"]
    base = results[results.method == "baseline"].set_index(keys + ["seed"])["accuracy"]
    r = results[results.method != "baseline"].copy()
    idx = pd.MultiIndex.from_frame(r[keys + ["seed"]])
    b = base.reindex(idx).to_numpy()
    r["loss"] = 100 * (b - r["accuracy"].to_numpy())
    r["loss_mapped"] = 100 * (b - r["accuracy_mapped"].to_numpy())
    out = r.groupby(keys + ["n_qi", "method", "k"]).agg(
        accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        mapped_mean=("accuracy_mapped", "mean"), mapped_std=("accuracy_mapped", "std"),
        loss_mean=("loss", "mean"), loss_mapped_mean=("loss_mapped", "mean"),
        gcp_mean=("gcp", "mean"), groups=("n_groups", "mean"),
        seconds=("seconds_anonymize", "mean"), seeds=("seed", "nunique"),
    ).reset_index()
    bs = results[results.method == "baseline"].groupby(keys)["accuracy"].agg(["mean", "std"])
    bkey = pd.MultiIndex.from_frame(out[keys])
    out["baseline_mean"] = bs["mean"].reindex(bkey).to_numpy()
    out["baseline_std"] = bs["std"].reindex(bkey).to_numpy()
    return out


_LABEL = {"ag": "AG (predictions)", "mondrian": "Median Mondrian", "rtree": "R+-tree",
          "hilbert": "Hilbert", "workload": "workload-aware (AG on labels)",
          "infogain": "InfoGain Mondrian"}


def _markdown(summary: pd.DataFrame) -> str:
    lines = []
    for (fig, ds, model, q), part in summary.groupby(["figure", "dataset", "model", "qi_set"], sort=False):
        b = part.iloc[0]
        lines.append(f"\n### {fig}: {ds}, {model}, QI set {q} ({int(b.n_qi)} QIs); baseline "
                     f"{b.baseline_mean:.4f} ± {b.baseline_std:.4f} ({int(b.seeds)} seeds)\n")
        methods = list(dict.fromkeys(part.method))
        lines.append("| k | " + " | ".join(_LABEL.get(m, m) for m in methods) + " |")
        lines.append("|---:|" + "---:|" * len(methods))
        for k, row in part.groupby("k"):
            cells = []
            for m in methods:
                r = row[row.method == m]
                cells.append("" if r.empty else
                             f"{r.accuracy_mean.iloc[0]:.4f} ± {r.accuracy_std.iloc[0]:.4f} "
                             f"(mapped {r.mapped_mean.iloc[0]:.4f}; GCP {r.gcp_mean.iloc[0]:.3f})")
            lines.append(f"| {int(k)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _plot(summary: pd.DataFrame, plt):
    panels = list(summary.groupby(["figure", "dataset", "model", "qi_set"], sort=False))
    if not panels:
        return None
    ncol = min(3, len(panels))
    nrow = int(np.ceil(len(panels) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(5 * ncol, 3.8 * nrow), squeeze=False)
    colors = {"ag": "tab:blue", "mondrian": "tab:orange", "rtree": "tab:green", "hilbert": "tab:red",
              "workload": "tab:purple", "infogain": "tab:brown"}
    for ax, ((fig_name, ds, model, q), part) in zip(axes.flat, panels):
        for m, sub in part.groupby("method", sort=False):
            sub = sub.sort_values("k")
            ax.errorbar(sub.k, sub.accuracy_mean, yerr=sub.accuracy_std, marker="o", capsize=3,
                        color=colors.get(m), label=_LABEL.get(m, m))
        ax.axhline(part.baseline_mean.iloc[0], color="black", ls=":", label="baseline")
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("test accuracy (raw test rows)")
        ax.set_title(f"{fig_name}: {ds}, {model}, {int(part.n_qi.iloc[0])} QIs", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def write_outputs(results: pd.DataFrame, out_dir: str | Path, name: str = "classic_vs_ag") -> dict:
    """Raw rows (CSV), summary (CSV, Markdown) and one plot panel per figure cell (PNG)."""
    from anonml.experiments._output import write_summarized

    return write_summarized(out_dir, name, results, summarize(results), _markdown, _plot)


def summarize_malle(results: pd.DataFrame) -> pd.DataFrame:
    return results.groupby(["weights", "model", "k"]).agg(
        accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        mapped_mean=("accuracy_mapped", "mean"), ngil=("ngil", "mean"), gcp=("gcp", "mean"),
        groups=("n_groups", "mean"), seconds=("seconds_anonymize", "mean"),
        seeds=("seed", "nunique"),
    ).reset_index()


def _malle_markdown(summary: pd.DataFrame) -> str:
    lines = ["\n### SaNGreeA on Adult: accuracy (raw test rows) per classifier, and NGIL\n"]
    models = list(dict.fromkeys(summary.model))
    lines.append("| weights | k | NGIL | GCP | seconds | " + " | ".join(models) + " |")
    lines.append("|---|---:|---:|---:|---:|" + "---:|" * len(models))
    for (w, k), part in summary.groupby(["weights", "k"], sort=False):
        r0 = part.iloc[0]
        accs = [f"{part[part.model == m].accuracy_mean.iloc[0]:.4f} ± "
                f"{part[part.model == m].accuracy_std.iloc[0]:.4f}" for m in models]
        lines.append(f"| {w} | {int(k)} | {r0.ngil:.4f} | {r0.gcp:.4f} | {r0.seconds:.1f} | "
                     + " | ".join(accs) + " |")
    return "\n".join(lines) + "\n"


def _malle_plot(summary: pd.DataFrame, plt):
    models = list(dict.fromkeys(summary.model))
    fig, axes = plt.subplots(1, len(models) + 1, figsize=(4.2 * (len(models) + 1), 3.6))
    base = summary[summary.weights == "baseline"]
    for ax, m in zip(axes, models):
        for w, sub in summary[(summary.model == m) & (summary.weights != "baseline")].groupby("weights"):
            sub = sub.sort_values("k")
            ax.errorbar(sub.k, sub.accuracy_mean, yerr=sub.accuracy_std, marker="o", capsize=3, label=w)
        ax.axhline(base[base.model == m].accuracy_mean.iloc[0], color="black", ls=":", label="baseline")
        ax.set_title(f"SaNGreeA, Adult, {m}", fontsize=10)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=7)
    ax = axes[-1]
    for w, sub in summary[(summary.weights != "baseline") & (summary.model == models[0])].groupby("weights"):
        sub = sub.sort_values("k")
        ax.plot(sub.k, sub.ngil, marker="o", label=w)
    ax.set_title("information loss (NGIL)", fontsize=10)
    ax.set_xlabel("k")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def write_malle(results: pd.DataFrame, out_dir: str | Path, name: str = "malle_sangreea") -> dict:
    from anonml.experiments._output import write_summarized

    return write_summarized(out_dir, name, results, summarize_malle(results), _malle_markdown,
                            _malle_plot)
