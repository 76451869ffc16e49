"""Accuracy vs ε: masked data, output perturbation and input perturbation (Pham et al. 2019).

For each dataset, training size, ε, λ and repetition, three ε-DP ways to share data for learning
are compared on the same L2-regularized logistic regression (anonml.dp._logistic):

* ``masked``: :class:`~anonml.dp.MaskedDataGenerator` releases a dataset; the recipient trains
  the regularized model on it;
* ``output``: :class:`~anonml.dp.OutputPerturbationLogisticRegression` releases the noisy model;
* ``input``: :class:`~anonml.dp.InputPerturbation` releases noisy records (ε split 0.9 / 0.1
  between features and labels); the recipient trains the regularized model on them.

``nonprivate`` is the same model on the clean training rows. Test accuracy on held-out rows.
λ is a hyperparameter (less noise with larger λ, more bias): every λ of the grid is run, and the
summary also reports each method at its best λ (an optimistic choice, the same for every
method, made on test accuracy; a DP deployment would have to tune λ privately or fix it).

Datasets and their public bounds (the bounds are schema knowledge, fixed before seeing data):

* ``adult``, ``loan``: categorical columns one-hot, numeric columns min–max scaled to [0, 1]
  with the column's range treated as public; each row has norm ≤ √(number of attributes).
* ``nursery``: 8 categorical attributes one-hot; binarized target ``priority`` vs the rest
  (``not_recom`` vs the rest is decided by one attribute, ``health``, and is too easy).
* ``breast_cancer``, ``wine`` (sklearn): min–max scaled to [0, 1]; norm ≤ √d.
* ``digits`` (sklearn): digits 0, 1, 2; PCA to 25 dimensions fitted on the *other* digits
  (public); pixels are 0..16, so a row's norm is at most 128 before PCA: coordinates are
  divided by 128 and rows have norm ≤ 1.

Two training sizes per dataset (20 % and 100 % of its training split) test the claim that the
output-perturbation family (masked, output) gains more from more data than input perturbation,
whose per-record noise does not shrink with n.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from anonml._errors import AnonmlWarning, InputError

__all__ = ["DATASETS", "load", "run", "summarize", "write_outputs"]

DATASETS = ("adult", "nursery", "loan", "breast_cancer", "wine", "digits")


@dataclass
class Task:
    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    data_norm: float
    bounds: tuple[float, float]
    classes: np.ndarray


def _onehot_minmax(frame: pd.DataFrame, categorical: Sequence[str]) -> tuple[np.ndarray, float]:
    parts = []
    for c in frame.columns:
        if c in categorical:
            parts.append(pd.get_dummies(frame[c].astype(str), dtype=float).to_numpy())
        else:
            v = frame[c].to_numpy(dtype=float)
            lo, hi = v.min(), v.max()
            parts.append(((v - lo) / (hi - lo if hi > lo else 1.0))[:, None])
    return np.hstack(parts), float(np.sqrt(frame.shape[1]))


def _split(X, y, seed, test_size=0.3):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)


def load(name: str, seed: int = 0) -> Task:
    """Encode one dataset with its public bound (module docstring) and split it."""
    from anonml import datasets

    if name == "adult":
        d = datasets.load_adult()
        X, B = _onehot_minmax(d.X, d.categorical_features)
        y = (d.y == ">50K").to_numpy().astype(int)
        train = (d.split == "train").to_numpy()
        return Task(name, X[train], y[train], X[~train], y[~train], B, (0.0, 1.0), np.array([0, 1]))
    if name == "nursery":
        d = datasets.load_nursery()
        X, B = _onehot_minmax(d.X, d.categorical_features)
        y = (d.y == "priority").to_numpy().astype(int)
    elif name == "loan":
        d = datasets.load_loan()
        frame = d.frame.dropna(subset=["revol_util"])
        cols = [c for c in d.feature_names if c not in ("zip_code", "addr_state")]
        cat = [c for c in d.categorical_features if c in cols]
        X, B = _onehot_minmax(frame[cols], cat)
        y = (frame[d.target] == "Charged Off").to_numpy().astype(int)
    elif name in ("breast_cancer", "wine"):
        from sklearn.datasets import load_breast_cancer, load_wine

        raw = (load_breast_cancer if name == "breast_cancer" else load_wine)()
        X, B = _onehot_minmax(pd.DataFrame(raw.data), [])
        y = raw.target
    elif name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.decomposition import PCA

        raw = load_digits()
        private = np.isin(raw.target, [0, 1, 2])
        pca = PCA(n_components=25, random_state=0).fit(raw.data[~private])  # public digits
        X = (raw.data[private] - pca.mean_) @ pca.components_.T / 128.0
        y, B = raw.target[private], 1.0
        X = X * np.minimum(1.0, B / np.maximum(np.linalg.norm(X, axis=1), 1e-12))[:, None]
        X_tr, X_te, y_tr, y_te = _split(X, y, seed)
        return Task(name, X_tr, y_tr, X_te, y_te, B, (-1.0, 1.0), np.array([0, 1, 2]))
    else:
        raise InputError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    X_tr, X_te, y_tr, y_te = _split(X, y, seed)
    return Task(name, X_tr, y_tr, X_te, y_te, B, (0.0, 1.0), np.unique(y))


def _one(task: Task, size: str, eps: float, lam: float, rep: int, n_samples: int) -> list[dict]:
    from anonml.dp import InputPerturbation, MaskedDataGenerator, OutputPerturbationLogisticRegression
    from anonml.dp._logistic import RegularizedLogisticRegression

    rng = np.random.default_rng(10_000 * rep + 17)
    n_full = len(task.y_train)
    n = n_full if size == "full" else max(int(0.2 * n_full), 40)
    idx = rng.choice(n_full, n, replace=False) if n < n_full else np.arange(n_full)
    X, y = task.X_train[idx], task.y_train[idx]
    base = {"dataset": task.name, "size": size, "n_train": n, "epsilon": eps, "lam": lam, "rep": rep}
    rows = []

    def score(model):
        return float(np.mean(model.predict(task.X_test) == task.y_test))

    t = time.perf_counter()
    out = OutputPerturbationLogisticRegression(eps, lam=lam, data_norm=task.data_norm, random_state=rng).fit(X, y)
    rows.append({**base, "method": "output", "accuracy": score(out), "seconds": time.perf_counter() - t})

    t = time.perf_counter()
    gen = MaskedDataGenerator(eps, lam=lam, data_norm=task.data_norm, n_samples=n_samples,
                              classes=task.classes, max_iter=50, random_state=rng).fit(X, y)
    rec = RegularizedLogisticRegression(lam, task.data_norm).fit(gen.X_masked_, gen.y_masked_)
    rows.append({**base, "method": "masked", "accuracy": score(rec), "seconds": time.perf_counter() - t,
                 "n_masked": len(gen.y_masked_), "stopped_by": gen.stopped_by_,
                 "gradient_norm": gen.gradient_norm_,
                 "recovery_error": float(np.linalg.norm(rec.coef_ - gen.coef_) / np.linalg.norm(gen.coef_))})

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnonmlWarning)
        Xn, yn = InputPerturbation(eps, bounds=task.bounds, classes=task.classes,
                                   random_state=rng).fit_resample(X, y)
    if np.unique(yn).size < 2:  # randomized response can, at tiny ε and n, leave one class
        acc = float(np.mean(task.y_test == yn[0]))
    else:
        acc = score(RegularizedLogisticRegression(lam, task.data_norm).fit(Xn, yn))
    rows.append({**base, "method": "input", "accuracy": acc, "seconds": time.perf_counter() - t})
    return rows


def _nonprivate(task: Task, size: str, lam: float) -> dict:
    from anonml.dp._logistic import RegularizedLogisticRegression

    rng = np.random.default_rng(17)
    n_full = len(task.y_train)
    n = n_full if size == "full" else max(int(0.2 * n_full), 40)
    idx = rng.choice(n_full, n, replace=False) if n < n_full else np.arange(n_full)
    model = RegularizedLogisticRegression(lam, task.data_norm).fit(task.X_train[idx], task.y_train[idx])
    acc = float(np.mean(model.predict(task.X_test) == task.y_test))
    return {"dataset": task.name, "size": size, "n_train": n, "epsilon": np.inf, "lam": lam, "rep": 0,
            "method": "nonprivate", "accuracy": acc, "seconds": 0.0}


def run(
    datasets: Sequence[str] = DATASETS,
    epsilons: Sequence[float] = (0.01, 0.1, 1.0, 10.0),
    lams: Sequence[float] = (1e-3, 1e-4),
    reps: int = 10,
    sizes: Sequence[str] = ("small", "full"),
    n_samples: int = 200,
    n_jobs: int = 2,
) -> pd.DataFrame:
    """Run the grid; one row per (dataset, size, ε, repetition, method)."""
    from joblib import Parallel, delayed

    for s in sizes:
        if s not in ("small", "full"):
            raise InputError(f"size {s!r}; use 'small' (20 % of the training split) or 'full'")
    tasks = [load(name) for name in datasets]
    jobs = []
    for task in tasks:
        for size in sizes:
            for lam in lams:
                jobs.append(delayed(_nonprivate)(task, size, float(lam)))
                for eps in epsilons:
                    per_class = n_samples if task.classes.size == 2 else max(n_samples // 2, 30)
                    for rep in range(reps):
                        jobs.append(delayed(_one)(task, size, float(eps), float(lam), rep, per_class))
    results = Parallel(n_jobs=n_jobs)(jobs)
    rows = []
    for r in results:
        rows.extend(r if isinstance(r, list) else [r])
    return pd.DataFrame(rows)


def summarize(results: pd.DataFrame, best_lam: bool = True) -> pd.DataFrame:
    """Mean ± std of test accuracy over repetitions, per dataset, size, method, ε and λ; with
    ``best_lam``, only the λ of highest mean accuracy for each dataset, size, method and ε."""
    g = results.groupby(["dataset", "size", "n_train", "method", "epsilon", "lam"])
    out = g.agg(accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
                reps=("rep", "nunique")).reset_index()
    if best_lam:
        keys = ["dataset", "size", "n_train", "method", "epsilon"]
        out = out.loc[out.groupby(keys)["accuracy_mean"].idxmax()].reset_index(drop=True)
    return out


def _markdown(summary: pd.DataFrame) -> str:
    lines = []
    for (ds, size, n), part in summary.groupby(["dataset", "size", "n_train"], sort=False):
        piv = part.pivot(index="epsilon", columns="method", values="accuracy_mean")
        sd = part.pivot(index="epsilon", columns="method", values="accuracy_std")
        ref = piv.get("nonprivate")
        lines.append(f"\n### {ds}, {size} training set (n = {n})"
                     + (f"; non-private {ref.dropna().iloc[0]:.3f}" if ref is not None else "") + "\n")
        methods = [m for m in ("masked", "output", "input") if m in piv.columns]
        lines.append("| ε | " + " | ".join(methods) + " |")
        lines.append("|---:|" + "---:|" * len(methods))
        for eps in [e for e in piv.index if np.isfinite(e)]:
            cells = [f"{piv.loc[eps, m]:.3f} ± {sd.loc[eps, m]:.3f}" for m in methods]
            lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(results: pd.DataFrame, out_dir: str | Path, name: str = "dp_accuracy") -> dict[str, Path]:
    """Write raw rows and summary (CSV), a Markdown table, and a plot (PNG, if matplotlib)."""
    from anonml.experiments._output import write_bundle

    summary = summarize(results)
    return write_bundle(out_dir, name, results, summarize(results, best_lam=False).round(5),
                        _markdown(summary), lambda plt: _plot(summary, plt), dpi=100)


def _plot(summary: pd.DataFrame, plt):
    names = list(dict.fromkeys(summary.dataset))
    sizes = list(dict.fromkeys(summary["size"]))
    fig, axes = plt.subplots(len(sizes), len(names), figsize=(3.4 * len(names), 3.0 * len(sizes)),
                             squeeze=False, sharex=True)
    colors = {"masked": "tab:green", "output": "tab:blue", "input": "tab:red"}
    for i, size in enumerate(sizes):
        for j, ds in enumerate(names):
            ax = axes[i][j]
            part = summary[(summary.dataset == ds) & (summary["size"] == size)]
            for m, color in colors.items():
                p = part[part.method == m].sort_values("epsilon")
                if len(p):
                    ax.errorbar(p.epsilon, p.accuracy_mean, yerr=p.accuracy_std, color=color, marker="o",
                                ms=3, capsize=2, label=m, ls="--" if m == "output" else "-")
            ref = part[part.method == "nonprivate"]
            if len(ref):
                ax.axhline(ref.accuracy_mean.iloc[0], color="black", ls=":", label="non-private")
            ax.set_xscale("log")
            ax.set_title(f"{ds}, {size} (n={part.n_train.iloc[0]})", fontsize=9)
            ax.grid(alpha=0.3)
            if i == len(sizes) - 1:
                ax.set_xlabel("ε")
            if j == 0:
                ax.set_ylabel("test accuracy")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig
