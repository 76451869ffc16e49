"""Accuracy vs k on Adult (Goldsteen et al., 2022, Fig. 2, accuracy-guided curves).

Protocol: the published Adult train/test split; the paper's 12 attributes (``fnlwgt`` and
``education`` dropped); QI sets 12, 10 and 8; the paper's neural network; for each seed, the
network is trained on the original data, its predictions on the training data guide the
anonymization, and a fresh network with the same seed is retrained on the anonymized data with
the true labels. Test accuracy is measured on raw test rows (``accuracy``) and on test rows
mapped through the anonymizer's ``transform`` (``accuracy_mapped``, the paper's future work).

Variants (``--variants``) change one option at a time from the paper's method:

* ``paper``: majority-label medoid, Gini, exact tree on the QIs, no refinement (the paper);
* ``anonml``: the library's defaults (``AccuracyGuidedAnonymizer()``: the paper plus
  ``refine="mondrian"`` and the histogram tree from 100,000 rows on; the representative is the
  paper's majority-label medoid again since issue 19, the per-feature rule from issue 13 to 19,
  so runs recorded in between used that);
* ``medoid``: representative = plain medoid;
* ``per_feature`` / ``majority_per_feature``: representative = per-feature values (each QI's
  median-closest or most frequent value of the group, IBM's toolkit's rule; the second on the
  records with the majority label); ``anonml_per_feature`` / ``anonml_majority_medoid``: the
  library's defaults with that representative rule;
* ``entropy``: entropy split criterion;
* ``hist``: anonml's histogram tree (native categorical splits);
* ``depth8``: tree depth limited to 8;
* ``all_features``: the tree reads every feature, not only the QIs;
* ``refine``: large pure leaves are cut further by median partitioning (``refine="mondrian"``);
* ``refine_medoid``: ``refine`` with the plain-medoid representative;
* ``labels``: the tree is fitted on the true labels (workload-aware) instead of predictions;
* ``proba``: the tree is a regression tree on the model's probability of the positive class
  (representative: medoid), ``proba_hist`` the same with the histogram tree;
* ``hist_refine``: histogram tree and Mondrian refinement.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from anonml._errors import InputError
from anonml.anonymize import AccuracyGuidedAnonymizer
from anonml.experiments._data import Split, adult_split
from anonml._models import paper_nn

__all__ = ["VARIANTS", "run", "summarize", "write_outputs"]

_PAPER = {"representative": "majority_medoid", "tree": "exact", "refine": "none"}  # Gini by default
VARIANTS: dict[str, dict[str, Any]] = {
    "paper": _PAPER,
    "anonml": {},
    "medoid": {**_PAPER, "representative": "medoid"},
    "per_feature": {**_PAPER, "representative": "per_feature"},
    "majority_per_feature": {**_PAPER, "representative": "majority_per_feature"},
    "anonml_per_feature": {"representative": "per_feature"},
    "anonml_majority_medoid": {"representative": "majority_medoid"},
    "entropy": {**_PAPER, "criterion": "entropy"},
    "hist": {**_PAPER, "tree": "hist"},
    "depth8": {**_PAPER, "max_depth": 8},
    "all_features": {**_PAPER, "features": "all"},
    "refine": {**_PAPER, "refine": "mondrian"},
    "labels": {**_PAPER, "guide": "labels"},
    "proba": {**_PAPER, "guide": "proba"},
    "proba_hist": {**_PAPER, "guide": "proba", "tree": "hist"},
    "hist_refine": {**_PAPER, "tree": "hist", "refine": "mondrian"},
}


@dataclass
class _Data(Split):
    qi_sets: dict


def _load(n_train: int | None) -> _Data:
    d, split = adult_split(n_train)
    return _Data(**vars(split), qi_sets={k: list(v) for k, v in d.qi_sets.items()})


def _fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _baseline(data: _Data, seed: int) -> tuple[float, dict[str, np.ndarray]]:
    model = _fit_quiet(paper_nn(data.categorical, data.numeric, random_state=seed), data.X_train, data.y_train)
    guides = {
        "predictions": model.predict(data.X_train),
        "proba": model.predict_proba(data.X_train)[:, 1],
        "labels": data.y_train.to_numpy(),
    }
    return float(model.score(data.X_test, data.y_test)), guides


def _one(data: _Data, seed: int, qi_set: str, k: int, variant: str, guides: dict) -> dict:
    params = dict(VARIANTS[variant])
    guide = guides[params.pop("guide", "predictions")]
    t0 = time.perf_counter()
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=data.qi_sets[qi_set], random_state=seed, **params)
    X_anon = ag.fit_transform(data.X_train, guide)
    t_anon = time.perf_counter() - t0
    model = _fit_quiet(paper_nn(data.categorical, data.numeric, random_state=seed), X_anon, data.y_train)
    mapped = ag.set_params(handle_unknown="ignore").transform(data.X_test)
    return {
        "qi_set": qi_set,
        "k": k,
        "seed": seed,
        "variant": variant,
        "accuracy": float(model.score(data.X_test, data.y_test)),
        "accuracy_mapped": float(model.score(mapped, data.y_test)),
        "n_groups": int(ag.n_groups_),
        "min_class_size": int(ag.min_class_size_),
        "seconds_anonymize": round(t_anon, 4),
    }


def run(
    qi_sets: Sequence[str] = ("12", "10", "8"),
    ks: Sequence[int] = (10, 50, 100, 200, 500, 1000),
    seeds: Sequence[int] = (0, 1, 2),
    variants: Sequence[str] = ("paper",),
    ablation_qi_sets: Sequence[str] = ("12",),
    n_train: int | None = None,
    n_jobs: int = 2,
) -> pd.DataFrame:
    """Run the grid and return one row per (qi_set, k, seed, variant), baselines included.

    The ``paper`` variant runs on every QI set; the other variants on ``ablation_qi_sets``.
    """
    from joblib import Parallel, delayed

    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise InputError(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    data = _load(n_train)
    par = Parallel(n_jobs=n_jobs)
    base = par(delayed(_baseline)(data, s) for s in seeds)
    tasks = []
    for s, (_, pred) in zip(seeds, base):
        for q in qi_sets:
            for v in variants:
                if v != "paper" and q not in ablation_qi_sets:
                    continue
                for k in ks:
                    tasks.append(delayed(_one)(data, s, q, k, v, pred))
    rows = par(tasks)
    for s, (acc, _) in zip(seeds, base):
        for q in qi_sets:
            rows.append({"qi_set": q, "k": 0, "seed": s, "variant": "baseline", "accuracy": acc,
                         "accuracy_mapped": acc, "n_groups": len(data.X_train), "min_class_size": 1,
                         "seconds_anonymize": 0.0})
    return pd.DataFrame(rows)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds, and the loss against each seed's own baseline, in points."""
    base = results[results.variant == "baseline"].set_index(["qi_set", "seed"])["accuracy"]
    r = results[results.variant != "baseline"].copy()
    key = pd.MultiIndex.from_frame(r[["qi_set", "seed"]])
    r["loss"] = 100 * (base.reindex(key).to_numpy() - r["accuracy"].to_numpy())
    r["loss_mapped"] = 100 * (base.reindex(key).to_numpy() - r["accuracy_mapped"].to_numpy())
    g = r.groupby(["qi_set", "variant", "k"])
    out = g.agg(
        accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        mapped_mean=("accuracy_mapped", "mean"), mapped_std=("accuracy_mapped", "std"),
        loss_mean=("loss", "mean"), loss_mapped_mean=("loss_mapped", "mean"),
        groups=("n_groups", "mean"), seeds=("seed", "nunique"),
    ).reset_index()
    b = results[results.variant == "baseline"].groupby("qi_set")["accuracy"].agg(["mean", "std"])
    out["baseline_mean"] = out["qi_set"].map(b["mean"])
    out["baseline_std"] = out["qi_set"].map(b["std"])
    return out


def _markdown(summary: pd.DataFrame) -> str:
    lines = []
    for (q, v), part in summary.groupby(["qi_set", "variant"], sort=False):
        b = part.iloc[0]
        lines.append(f"\n### {q} QI, variant `{v}` (baseline {b.baseline_mean:.4f} ± {b.baseline_std:.4f}, "
                     f"{int(b.seeds)} seeds)\n")
        lines.append("| k | groups | accuracy (raw test) | loss, points | accuracy (mapped test) | loss, points |")
        lines.append("|---:|---:|---:|---:|---:|---:|")
        for _, r in part.sort_values("k").iterrows():
            lines.append(
                f"| {int(r.k)} | {r.groups:.0f} | {r.accuracy_mean:.4f} ± {r.accuracy_std:.4f} | "
                f"{r.loss_mean:+.2f} | {r.mapped_mean:.4f} ± {r.mapped_std:.4f} | {r.loss_mapped_mean:+.2f} |"
            )
    return "\n".join(lines) + "\n"


def write_outputs(results: pd.DataFrame, out_dir: str | Path, name: str = "accuracy_vs_k") -> dict[str, Path]:
    """Write the raw rows (CSV), the summary (CSV and Markdown) and a plot (PNG, if matplotlib)."""
    from anonml.experiments._output import write_summarized

    return write_summarized(out_dir, name, results, summarize(results), _markdown, _plot)


def _plot(summary: pd.DataFrame, plt):
    from anonml.experiments._output import finish_k_panel, plot_raw_and_mapped

    shown = [v for v in ("paper", "anonml") if v in set(summary.variant)]
    if not shown:
        return None
    qsets = sorted(set(summary.qi_set), key=lambda q: -int(q) if str(q).isdigit() else 0)
    fig, axes = plt.subplots(1, len(qsets), figsize=(5 * len(qsets), 4), sharey=True, squeeze=False)
    styles = {"paper": ("tab:blue", "AG (paper)"), "anonml": ("tab:green", "AG (anonml defaults)")}
    for ax, q in zip(axes[0], qsets):
        for v in shown:
            part = summary[(summary.qi_set == q) & (summary.variant == v)].sort_values("k")
            if part.empty:
                continue
            color, label = styles[v]
            plot_raw_and_mapped(ax, part, label, color, capsize=3)
        finish_k_panel(ax, summary[summary.qi_set == q].baseline_mean.iloc[0],
                       "baseline (no anonymization)", "k", f"Adult, NN, {q} quasi-identifiers")
    axes[0][0].set_ylabel("test accuracy")
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig
