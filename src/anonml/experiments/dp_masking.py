"""Data masking with privacy guarantees: the two illustrative experiments of Pham et al. (2019).

    A. T. Pham, S. Ghosh and V. Yegneswaran, "Data masking with privacy guarantees",
    arXiv:1901.02185, 2019.

The mechanism is :class:`anonml.dp.MaskedDataGenerator` (derivation in the docstring of
:mod:`anonml.dp._masking`): it computes ε-DP logistic-regression weights w̃ from the private
data and then generates, from a *public* initial set, a dataset on which the same regularized
logistic regression recovers w̃. Both experiments mask one "sensitive" class through an initial
set that does not look like it.

Toy (:func:`run_toy`)
---------------------
Three 2-D Gaussian classes with unit covariance and means (−2, 0), (2, 0), (0, 2.5),
``n_per_class`` private records each. The public initial set has ``n_init`` points per class:
classes 0 and 1 are *fresh* draws from their own distributions (not the private records);
class 2, the sensitive one, is drawn from the distribution shifted by ``shift`` = (+3, +3).
The public norm bound is ``data_norm = 8``: a constant fixed from how the data are generated
(the private classes lie within ≈ 2.5 + 3.5σ ≈ 6 of the origin, the shifted initial set
within ≈ 6.3 + 1.7σ ≈ 8), not read from the private draws, so nothing is clipped.

Digits (:func:`run_digits`)
---------------------------
scikit-learn's bundled ``load_digits()`` (8×8 images, pixels 0..16). Digits 0, 1, 2 are the
private classes; a stratified 30% of them is held out for testing. Pixels are divided by 16
(their public range) and projected to 25 dimensions by a PCA fitted on the *other* digits
(3..9, public), so the projection learns nothing from the private ones. The public bound is
``data_norm = 3``: the largest projected norm among the public digits is 2.79, rounded up (a
statistic of public data only). The initial set has ``n_init`` points per class: classes 0 and 1
uniform in the ball of radius 3 (as ``init="uniform"`` would draw them), class 2 (digit 2, the
sensitive one) images of digit 7 projected the same way and *labelled 2*.

What is measured (one row per ε)
--------------------------------
``n_generated``, ``stopped_by``, ``gradient_norm`` (‖∇J(w̃)‖ over the masked set) and its
consequence ``recovery_bound = gradient_norm / λ`` (strong convexity bounds how far the retrained
weights can be from w̃); test accuracy of the non-private model (``acc_nonprivate``, fitted on
the private data), of the ε-DP model w̃ itself (``acc_dp``) and of the model a recipient
retrains on the masked data (``acc_masked``); Frobenius distances between the weight matrices
(``recovery_error`` = ‖w_masked − w̃‖, ``dp_noise_norm`` = ‖w̃ − w*‖,
``masked_to_nonprivate`` = ‖w_masked − w*‖, w* the non-private weights). Disclosure: the
distance from each *generated* sample to its nearest private training record
(``nn_generated_*``) next to the leave-one-out nearest-neighbour distance among the private
records (``nn_private_*``) and from fresh records of the same population to the private ones
(``nn_fresh_*``: the toy's test draws, the digits' held-out split), the number of masked rows
equal to a private record (``n_private_copies``), the fraction of generated rows on the public
bound ‖x‖ = B, and how often the non-private model assigns the generated rows to the class they
are labelled with (``gen_agree_nonprivate``; for the sensitive class alone
``gen_sensitive_agree_nonprivate``, and ``init_sensitive_agree_nonprivate`` for its initial
set): does the masked data show what the sensitive class looks like? The toy
also records ``target_in_hull``: whether −λw̃ lies in the convex hull of the per-sample
gradient contributions over a grid of the public disc — exact masking is possible only then
(see "When the tolerance cannot be reached" in :mod:`anonml.dp._masking`).

Every ε uses the same ``random_state``, so the noise vectors of different ε have the same
direction and radii proportional to 1/ε (common random numbers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linprog
from scipy.spatial import cKDTree
from scipy.special import expit

from anonml.dp import MaskedDataGenerator
from anonml.dp._noise import uniform_ball
from anonml.dp._logistic import RegularizedLogisticRegression, augment, signs

__all__ = ["MaskingResult", "run_toy", "run_digits", "write_outputs"]

TOY_MEANS = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
TOY_DATA_NORM = 8.0
DIGITS_DATA_NORM = 3.0
DIGITS_PRIVATE = (0, 1, 2)
DIGITS_MASK_DIGIT = 7


@dataclass
class MaskingResult:
    """One experiment: the table (one row per ε) and what the figures need."""

    table: pd.DataFrame
    X_private: np.ndarray  # the private training records (for the figures and the checks)
    y_private: np.ndarray
    X_init: np.ndarray  # the public initial set
    y_init: np.ndarray
    data_norm: float
    lam: float
    masked: dict[float, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # ε -> (X, y)
    nonprivate: Any = None  # RegularizedLogisticRegression on the private data
    retrained: dict[float, Any] = field(default_factory=dict)  # ε -> model retrained on masked data
    dp_coef: dict[float, np.ndarray] = field(default_factory=dict)  # ε -> the ε-DP weights w̃
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the PCA of the digits experiment


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------
def _nn_distances(X_gen: np.ndarray, X_priv: np.ndarray, X_fresh: np.ndarray) -> dict[str, float]:
    """Nearest-private-record distances of the generated rows, and two references: the private
    records among themselves (leave one out) and fresh records of the same population."""
    tree = cKDTree(X_priv)
    loo = tree.query(X_priv, k=2)[0][:, 1]  # nearest *other* private record
    fresh = tree.query(X_fresh, k=1)[0]
    out = {"nn_private_min": float(loo.min()), "nn_private_median": float(np.median(loo)),
           "nn_fresh_min": float(fresh.min()), "nn_fresh_median": float(np.median(fresh))}
    if len(X_gen):
        gen = tree.query(X_gen, k=1)[0]
        out.update(nn_generated_min=float(gen.min()), nn_generated_median=float(np.median(gen)))
    else:
        out.update(nn_generated_min=np.nan, nn_generated_median=np.nan)
    return out


def _n_copies(X_masked: np.ndarray, X_priv: np.ndarray) -> int:
    private_rows = {np.ascontiguousarray(r).tobytes() for r in X_priv.astype(np.float64)}
    return int(sum(np.ascontiguousarray(r).tobytes() in private_rows for r in X_masked.astype(np.float64)))


def _accuracy_of_weights(W: np.ndarray, classes: np.ndarray, X: np.ndarray, y: np.ndarray, B: float) -> float:
    scores = augment(X, B) @ W.T
    pred = classes[(scores[:, 0] > 0).astype(int)] if scores.shape[1] == 1 else classes[scores.argmax(1)]
    return float(np.mean(pred == y))


def _mask_one(eps, X, y, X_test, y_test, X0, y0, lam, B, n_samples, seed, nonprivate) -> tuple[dict, Any, Any]:
    t = time.perf_counter()
    gen = MaskedDataGenerator(eps, lam=lam, n_samples=n_samples, data_norm=B, init=(X0, y0),
                              random_state=seed).fit(X, y)
    seconds = time.perf_counter() - t
    retrained = RegularizedLogisticRegression(lam, B).fit(gen.X_masked_, gen.y_masked_)
    X_gen, y_gen = gen.X_masked_[len(X0):], gen.y_masked_[len(X0):]
    sensitive = gen.classes_[-1]
    is_s = y_gen == sensitive
    row = {
        "epsilon": float(eps), "lam": lam, "data_norm": B, "n_private": len(X), "n_test": len(X_test),
        "n_initial": len(X0), "n_generated": gen.n_generated_, "stopped_by": gen.stopped_by_,
        "gradient_norm": gen.gradient_norm_, "recovery_bound": gen.gradient_norm_ / lam,
        "acc_nonprivate": float(nonprivate.score(X_test, y_test)),
        "acc_dp": _accuracy_of_weights(gen.coef_, gen.classes_, X_test, y_test, B),
        "acc_masked": float(retrained.score(X_test, y_test)),
        "recovery_error": float(np.linalg.norm(retrained.coef_ - gen.coef_)),
        "dp_noise_norm": float(np.linalg.norm(gen.coef_ - nonprivate.coef_)),
        "masked_to_nonprivate": float(np.linalg.norm(retrained.coef_ - nonprivate.coef_)),
        **_nn_distances(X_gen, X, X_test),
        "n_private_copies": _n_copies(gen.X_masked_, X),
        "frac_generated_at_bound": float(np.mean(np.linalg.norm(X_gen, axis=1) > B * (1 - 1e-6)))
        if len(X_gen) else np.nan,
        # does the non-private model put the generated rows in their labelled class?
        "gen_agree_nonprivate": float(np.mean(nonprivate.predict(X_gen) == y_gen)) if len(X_gen) else np.nan,
        "n_generated_sensitive": int(is_s.sum()),
        "gen_sensitive_agree_nonprivate": float(np.mean(nonprivate.predict(X_gen[is_s]) == sensitive))
        if is_s.any() else np.nan,
        "init_sensitive_agree_nonprivate": float(np.mean(nonprivate.predict(X0[y0 == sensitive]) == sensitive)),
        "seconds": seconds,
    }
    return row, gen, retrained


def _target_in_hull(W: np.ndarray, lam: float, B: float, n_classes: int, grid: int) -> bool:
    """Is −λw̃ a convex combination of per-sample contributions a(x, c), x on a grid of the disc?

    A masked set D' has ∇J(w̃; D') = 0 iff the mean of a(x̃ⱼ, cⱼ) (all binary problems stacked)
    equals −λw̃, so exact masking needs −λw̃ in their convex hull. Feasible on the grid implies
    reachable; infeasible means not reachable up to the grid's resolution. 2-D data only.
    """
    u = np.linspace(-B, B, grid)
    pts = np.array(np.meshgrid(u, u)).reshape(2, -1).T
    pts = pts[np.linalg.norm(pts, axis=1) <= B]
    angle = np.linspace(0, 2 * np.pi, 4 * grid, endpoint=False)
    pts = np.vstack([pts, B * np.column_stack([np.cos(angle), np.sin(angle)])])
    Xt = augment(pts, B)
    cols = []
    for c in range(n_classes):
        S = signs(np.full(len(pts), c), n_classes)  # (n, K')
        q = expit(-S * (Xt @ W.T))
        cols.append((-(S * q))[:, :, None] * Xt[:, None, :])  # (n, K', D)
    A = np.concatenate(cols).reshape(len(cols) * len(pts), -1).T  # (K'·D, N)
    target = (-lam * W).ravel()
    A_eq = np.vstack([A, np.ones((1, A.shape[1]))])
    b_eq = np.concatenate([target, [1.0]])
    res = linprog(np.zeros(A.shape[1]), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    return bool(res.status == 0)


# ---------------------------------------------------------------------------------------------
# the experiments
# ---------------------------------------------------------------------------------------------
def _sweep(result: MaskingResult, experiment: str, epsilons: Sequence[float], X_test: Any,
           y_test: Any, n_samples: int, seed: int, in_hull: Any) -> MaskingResult:
    """Mask ``result``'s private set at every epsilon and record each run in ``result``: its
    table row (``experiment``; ``target_in_hull`` from ``in_hull(dp_coef)``), the masked set,
    the model retrained on it and the DP coefficients."""
    rows = []
    for eps in epsilons:
        row, gen, retrained = _mask_one(eps, result.X_private, result.y_private, X_test, y_test,
                                        result.X_init, result.y_init, result.lam,
                                        result.data_norm, n_samples, seed, result.nonprivate)
        row["target_in_hull"] = in_hull(gen.coef_)
        rows.append({"experiment": experiment, **row})
        result.masked[float(eps)] = (gen.X_masked_, gen.y_masked_)
        result.retrained[float(eps)] = retrained
        result.dp_coef[float(eps)] = gen.coef_
    result.table = pd.DataFrame(rows)
    return result


def run_toy(
    epsilons: Sequence[float] = (1.0, 100.0),
    *,
    n_per_class: int = 300,
    n_init: int = 10,
    shift: Sequence[float] = (3.0, 3.0),
    n_samples: int = 300,
    n_test: int = 1000,
    lam: float = 0.01,
    data_norm: float = TOY_DATA_NORM,
    hull_grid: int = 81,
    seed: int = 0,
) -> MaskingResult:
    """Three 2-D Gaussian classes; class 2 masked through a shifted initial set (module docstring)."""
    rng = np.random.default_rng(seed)
    K = len(TOY_MEANS)

    def draw(n, offsets=None):
        offs = np.zeros_like(TOY_MEANS) if offsets is None else offsets
        X = np.vstack([rng.normal(m + o, 1.0, size=(n, 2)) for m, o in zip(TOY_MEANS, offs)])
        return X, np.repeat(np.arange(K), n)

    X, y = draw(n_per_class)
    X_test, y_test = draw(n_test)
    offsets = np.zeros_like(TOY_MEANS)
    offsets[2] = shift
    X0, y0 = draw(n_init, offsets)  # fresh public draws; class 2 from the shifted distribution
    nonprivate = RegularizedLogisticRegression(lam, data_norm).fit(X, y)
    result = MaskingResult(pd.DataFrame(), X, y, X0, y0, data_norm, lam, nonprivate=nonprivate)
    return _sweep(result, "toy", epsilons, X_test, y_test, n_samples, seed,
                  lambda coef: _target_in_hull(coef, lam, data_norm, K, hull_grid))


def run_digits(
    epsilons: Sequence[float] = (1.0, 10.0, 100.0),
    *,
    n_init: int = 10,
    n_components: int = 25,
    n_samples: int = 150,
    lam: float = 0.01,
    data_norm: float = DIGITS_DATA_NORM,
    test_size: float = 0.3,
    seed: int = 0,
) -> MaskingResult:
    """Digits 0, 1, 2 private; digit 2 masked by images of 7 (module docstring)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seed)
    pixels, labels = load_digits(return_X_y=True)
    pixels = pixels / 16.0  # public pixel range
    private = np.isin(labels, DIGITS_PRIVATE)
    pca = PCA(n_components, random_state=seed).fit(pixels[~private])  # public digits only
    Z, yz = pca.transform(pixels[private]), labels[private]
    X, X_test, y, y_test = train_test_split(Z, yz, test_size=test_size, stratify=yz, random_state=seed)
    sensitive = DIGITS_PRIVATE[-1]
    pool = pca.transform(pixels[labels == DIGITS_MASK_DIGIT])
    X0 = np.vstack([uniform_ball(n_init, n_components, data_norm, rng) for _ in DIGITS_PRIVATE[:-1]]
                   + [pool[rng.choice(len(pool), n_init, replace=False)]])
    y0 = np.concatenate([np.full(n_init, c) for c in DIGITS_PRIVATE[:-1]] + [np.full(n_init, sensitive)])
    nonprivate = RegularizedLogisticRegression(lam, data_norm).fit(X, y)
    result = MaskingResult(pd.DataFrame(), X, y, X0, y0, data_norm, lam, nonprivate=nonprivate,
                           extra={"pca": pca, "public_max_norm": float(np.linalg.norm(
                               pca.transform(pixels[~private]), axis=1).max())})
    # target_in_hull: not checkable by a grid in 25 dimensions
    return _sweep(result, "digits", epsilons, X_test, y_test, n_samples, seed,
                  lambda coef: np.nan)


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------
def _share(frac: float, n: int) -> str:
    return f"— of {int(n)}" if pd.isna(frac) else f"{round(frac * n):.0f} of {int(n)}"


def _markdown(toy: MaskingResult | None, digits: MaskingResult | None) -> str:
    lines = []
    for title, res in (("Toy 2-D, class 2 masked by a shifted initial set", toy),
                       ("Digits 0/1/2 (PCA 25), digit 2 masked by images of 7", digits)):
        if res is None:
            continue
        lines.append(f"\n### {title} (λ = {res.lam:g}, data_norm = {res.data_norm:g})\n")
        lines.append("| ε | generated | stopped by | ‖∇J(w̃)‖ | bound ‖∇J‖/λ | ‖w_masked − w̃‖ | ‖w̃ − w*‖ "
                     "| acc non-private | acc w̃ | acc masked-retrained | NN gen→private (min / median) "
                     "| NN private↔private (min / median) | NN fresh→private (min / median) | private copies "
                     "| gen. sensitive predicted sensitive | −λw̃ in hull |")
        lines.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for _, r in res.table.iterrows():
            hull = "n/a" if pd.isna(r.target_in_hull) else ("yes" if r.target_in_hull else "no")
            lines.append(
                f"| {r.epsilon:g} | {int(r.n_generated)} | {r.stopped_by} | {r.gradient_norm:.2e} | "
                f"{r.recovery_bound:.3g} | {r.recovery_error:.3g} | {r.dp_noise_norm:.3g} | "
                f"{r.acc_nonprivate:.4f} | {r.acc_dp:.4f} | {r.acc_masked:.4f} | "
                f"{r.nn_generated_min:.3f} / {r.nn_generated_median:.3f} | "
                f"{r.nn_private_min:.3f} / {r.nn_private_median:.3f} | "
                f"{r.nn_fresh_min:.3f} / {r.nn_fresh_median:.3f} | {int(r.n_private_copies)} | "
                f"{_share(r.gen_sensitive_agree_nonprivate, r.n_generated_sensitive)} | {hull} |"
            )
    return "\n".join(lines) + "\n"


_COLORS = ("tab:blue", "tab:orange", "tab:green")


def _plot_toy(res: MaskingResult, plt):
    eps_list = sorted(res.masked)
    B = res.data_norm
    fig, axes = plt.subplots(1, len(eps_list), figsize=(6.2 * len(eps_list), 6), squeeze=False)
    u = np.linspace(-B - 0.5, B + 0.5, 400)
    gx, gy = np.meshgrid(u, u)
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D

    cmap = ListedColormap(["#dbe8f5", "#fde5cc", "#d8f0d8"])
    priv_regions = res.nonprivate.predict(grid).reshape(gx.shape)
    n0 = len(res.X_init)
    for ax, eps in zip(axes[0], eps_list):
        Xm, ym = res.masked[eps]
        masked_regions = res.retrained[eps].predict(grid).reshape(gx.shape)
        dp_regions = (augment(grid, B) @ res.dp_coef[eps].T).argmax(1).reshape(gx.shape)
        ax.contourf(gx, gy, masked_regions, levels=[-0.5, 0.5, 1.5, 2.5], cmap=cmap)
        ax.contour(gx, gy, priv_regions, levels=[0.5, 1.5], colors="black", linewidths=1.5)
        ax.contour(gx, gy, dp_regions, levels=[0.5, 1.5], colors="purple", linewidths=1.2, linestyles=":")
        ax.contour(gx, gy, masked_regions, levels=[0.5, 1.5], colors="crimson", linewidths=1.5,
                   linestyles="--")
        for c, color in enumerate(_COLORS):
            P = res.X_private[res.y_private == c]
            ax.scatter(P[:, 0], P[:, 1], s=6, color=color, alpha=0.35, linewidths=0)
            I = res.X_init[res.y_init == c]
            ax.scatter(I[:, 0], I[:, 1], s=45, facecolors="none", edgecolors=color, marker="s", linewidths=1.4)
            G = Xm[n0:][ym[n0:] == c]
            ax.scatter(G[:, 0], G[:, 1], s=30, color=color, marker="^", edgecolors="black", linewidths=0.4)
        ax.add_patch(plt.Circle((0, 0), B, fill=False, color="gray", ls=":"))
        row = res.table[res.table.epsilon == eps].iloc[0]
        ax.set_title(f"ε = {eps:g}: {int(row.n_generated)} generated, stopped by {row.stopped_by}\n"
                     f"acc non-private {row.acc_nonprivate:.3f}, masked-retrained {row.acc_masked:.3f}, "
                     f"‖w_masked − w̃‖ = {row.recovery_error:.3g}", fontsize=9)
        ax.set_xlim(u[0], u[-1])
        ax.set_ylim(u[0], u[-1])
        ax.set_aspect("equal")
    handles = [Line2D([], [], ls="", marker="o", color="gray", alpha=0.5, label="private (true) samples"),
               Line2D([], [], ls="", marker="s", mfc="none", color="gray", label="initial (public) samples"),
               Line2D([], [], ls="", marker="^", color="gray", mec="black", label="generated masked samples"),
               Line2D([], [], color="black", label="boundary: non-private LR on private data"),
               Line2D([], [], color="crimson", ls="--", label="boundary (and shading): LR retrained on masked"),
               Line2D([], [], color="purple", ls=":", label="boundary: the ε-DP weights w̃ (target)"),
               Line2D([], [], color="gray", ls=":", label=f"public bound ‖x‖ = {B:g}")]
    handles += [Line2D([], [], ls="", marker="o", color=c, label=f"class {k}" + (" (sensitive)" if k == 2 else ""))
                for k, c in enumerate(_COLORS)]
    axes[0][0].legend(handles=handles, loc="lower left", fontsize=7, framealpha=0.9)
    fig.tight_layout()
    return fig


def _plot_digits(res: MaskingResult, plt, per_class: int = 3):
    pca = res.extra["pca"]
    eps_list = sorted(res.masked)
    classes = np.unique(res.y_private)
    n0 = len(res.X_init)

    def pick(X, y, last=False):
        out = []
        for c in classes:
            rows = X[y == c]
            rows = rows[-per_class:] if last else rows[:per_class]
            out.extend(list(rows) + [None] * (per_class - len(rows)))
        return out

    panels = [("private records\n(reference)", pick(res.X_private, res.y_private)),
              ("initial set\n(2 ← images of 7)", pick(res.X_init, res.y_init))]
    for eps in eps_list:
        Xm, ym = res.masked[eps]
        panels.append((f"generated, ε = {eps:g}\n(last {per_class} per class)", pick(Xm[n0:], ym[n0:], last=True)))
    ncol = per_class * len(classes)
    fig, axes = plt.subplots(len(panels), ncol, figsize=(1.05 * ncol + 1.6, 1.15 * len(panels) + 0.4), squeeze=False)
    for r, (label, rows) in enumerate(panels):
        for j, z in enumerate(rows):
            ax = axes[r][j]
            ax.set_xticks([])
            ax.set_yticks([])
            if z is None:  # fewer than per_class rows of this class: an empty, frameless cell
                for spine in ax.spines.values():
                    spine.set_visible(False)
                continue
            img = np.clip(pca.inverse_transform(z[None])[0] * 16.0, 0, 16).reshape(8, 8)
            ax.imshow(img, cmap="gray_r", vmin=0, vmax=16)
            if r == 0:
                ax.set_title(f"class {classes[j // per_class]}", fontsize=8)
        axes[r][0].set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    fig.suptitle("Digits: samples mapped back to 8×8 through the PCA inverse (pixels clipped to 0..16)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def write_outputs(toy: MaskingResult | None, digits: MaskingResult | None, out_dir: str | Path,
                  name: str = "dp_masking") -> dict[str, Path]:
    """Write ``{name}_toy.csv``, ``{name}_digits.csv``, a Markdown table and PNGs (if matplotlib)."""
    from anonml._output import atomic_write, write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for key, res in (("toy", toy), ("digits", digits)):
        if res is not None:
            paths[key] = out / f"{name}_{key}.csv"
            write_table(res.table, paths[key])
    paths["markdown"] = out / f"{name}.md"
    text = _markdown(toy, digits)
    atomic_write(paths["markdown"], lambda p: p.write_text(text))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the plots are optional
        return paths
    for key, res, plot in (("toy", toy, _plot_toy), ("digits", digits, _plot_digits)):
        if res is None or not res.masked:
            continue
        fig = plot(res, plt)
        paths[f"{key}_plot"] = out / f"{name}_{key}.png"
        atomic_write(paths[f"{key}_plot"], lambda p, fig=fig: fig.savefig(p, dpi=110, format="png"))
        plt.close(fig)
    return paths
