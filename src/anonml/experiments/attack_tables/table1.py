"""Table 1: membership inference against undefended, anonymized and DP models. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from anonml._errors import InputError
from anonml._install import install_hint
from anonml.experiments.attack_tables._constants import (
    _ALL_ATTACKS,
    AG_PAPER,
    ATTACKS,
    DATASETS,
    MODELS,
)
from anonml.experiments.attack_tables._data import TableData, load_data
from anonml.experiments.attack_tables._models import AnonymizeThenTrain, _Config, make_model


# =============================================================================================
# one row of Table 1
# =============================================================================================
@contextlib.contextmanager
def _one_torch_thread(kind: str):
    """Torch on one thread while a network trains in a (possibly parallel) task; restored."""
    if kind not in ("nn", "dp-sgd"):
        yield
        return
    try:
        import torch
    except ImportError:  # pragma: no cover - checked before the tasks start
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _quiet_fit(model: Any, X: Any, y: Any) -> Any:
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # Opacus's notices (seeded, non-secure RNG; RDP order range; torch's backward-hook note)
        warnings.filterwarnings(
            "ignore", message=r".*(Secure RNG|Optimal order|Full backward hook).*"
        )
        return model.fit(X, y)


def _membership_attacks(
    model: Any, data: TableData, seed: int, cfg: _Config, model_kind: str, shadow: Any
) -> dict:
    """Run the requested membership attacks on a released model; one dict of figures."""
    from anonml.attacks import LiRA, MembershipInferenceBlackBox, Target, WorstCaseMembership

    target = Target(model, data.X_train, data.y_train, data.X_test, data.y_test)
    out: dict[str, Any] = {}
    notes = []
    t0 = time.perf_counter()
    if "blackbox" in cfg.attacks:
        r = MembershipInferenceBlackBox(
            attack_model=cfg.mia_model, random_state=seed, n_jobs=1
        ).run(target)
        out.update(
            **_classification_figures("mia", r),
            mia_auc=r.auc,
            mia_advantage=r.advantage,
            mia_tpr_fpr0_1pct=r.tpr_at_fpr(0.001),
        )
    if "worstcase" in cfg.attacks:
        r = WorstCaseMembership(
            n_reps=cfg.worstcase_reps,
            attack_model=cfg.worstcase_model,
            n_dummy_reps=0,
            random_state=seed,
        ).run(target)
        out.update(worstcase_auc=r.extra["mean_auc"], worstcase_auc_std=r.extra["std_auc"])
    t1 = time.perf_counter()
    n_shadow = int(cfg.lira_shadows.get(model_kind, 0))
    lira_seed_ok = cfg.lira_seeds is None or seed in cfg.lira_seeds
    if "lira" in cfg.attacks:
        if n_shadow >= 2 and lira_seed_ok:
            r = LiRA(
                n_shadow=n_shadow,
                online=True,
                fix_variance=n_shadow < 64,
                shadow_estimator=shadow,
                n_jobs=1,
                random_state=seed,
            ).run(target)
            out.update(
                lira_auc=r.auc,
                lira_tpr_fpr0_1pct=r.tpr_at_fpr(0.001),
                lira_tpr_fpr1pct=r.tpr_at_fpr(0.01),
                lira_n_shadow=n_shadow,
            )
        elif n_shadow < 2:
            notes.append(f"LiRA skipped for {model_kind} (lira_shadows={n_shadow})")
    t2 = time.perf_counter()
    if "rmia" in cfg.attacks and n_shadow >= 2 and lira_seed_ok:
        from anonml.attacks import RMIA

        r = RMIA(
            n_reference=cfg.rmia_references, shadow_estimator=shadow, n_jobs=1, random_state=seed
        ).run(target)
        out.update(
            rmia_auc=r.auc,
            rmia_tpr_fpr0_1pct=r.tpr_at_fpr(0.001),
            rmia_tpr_fpr1pct=r.tpr_at_fpr(0.01),
        )
    out.update(seconds_attacks=round(t1 - t0, 2), seconds_lira=round(t2 - t1, 2))
    if notes:
        out["note"] = "; ".join(notes)
    return out


def majority_share(y: np.ndarray) -> float:
    """Share of the most common label: the accuracy of always guessing it."""
    _, counts = np.unique(np.asarray(y), return_counts=True)
    return float(counts.max() / counts.sum())


def _accuracies(model: Any, data: TableData) -> dict:
    return {
        "train_acc": float(np.mean(model.predict(data.X_train) == data.y_train)),
        "test_acc": float(np.mean(model.predict(data.X_test) == data.y_test)),
        "test_majority_acc": majority_share(data.y_test),
    }


def _classification_figures(prefix: str, result: Any) -> dict:
    """An attack's accuracy, precision and recall as ``<prefix>_accuracy`` ... (table columns)."""
    return {f"{prefix}_{name}": getattr(result, name) for name in ("accuracy", "precision", "recall")}


def _model_kwargs(cfg: _Config) -> dict:
    return {
        "rf_trees": cfg.rf_trees,
        "nn_epochs": cfg.nn_epochs,
        "nn_batch_size": cfg.nn_batch_size,
    }


def _undefended(
    data: TableData, model_kind: str, seed: int, cfg: _Config
) -> tuple[dict, np.ndarray]:
    with _one_torch_thread(model_kind):
        t0 = time.perf_counter()
        base = make_model(model_kind, data, seed, **_model_kwargs(cfg))
        model = _quiet_fit(clone(base), data.X_train, data.y_train)
        t_fit = time.perf_counter() - t0
        guide = model.predict(data.X_train)
        row = {
            "dataset": data.name,
            "model": model_kind,
            "defense": "none",
            "k": 0,
            "epsilon": math.nan,
            "seed": seed,
            **_accuracies(model, data),
            "seconds_train": round(t_fit, 2),
        }
        row.update(_membership_attacks(model, data, seed, cfg, model_kind, base))
    return row, guide


def _anonymized(
    data: TableData, model_kind: str, seed: int, k: int, guide: np.ndarray, cfg: _Config
) -> dict:
    from anonml.anonymize import AccuracyGuidedAnonymizer

    with _one_torch_thread(model_kind):
        t0 = time.perf_counter()
        base = make_model(model_kind, data, seed, **_model_kwargs(cfg))
        ag = AccuracyGuidedAnonymizer(
            k=k, quasi_identifiers=data.qi, random_state=seed, **dict(cfg.ag_params)
        )
        X_anon = ag.fit_transform(data.X_train, guide)
        t_anon = time.perf_counter() - t0
        model = _quiet_fit(clone(base), X_anon, data.y_train)
        t_fit = time.perf_counter() - t0 - t_anon
        row = {
            "dataset": data.name,
            "model": model_kind,
            "defense": "ag",
            "k": k,
            "epsilon": math.nan,
            "seed": seed,
            **_accuracies(model, data),
            "train_acc_anonymized": float(np.mean(model.predict(X_anon) == data.y_train)),
            "n_groups": int(ag.n_groups_),
            "min_class_size": int(ag.min_class_size_),
            "seconds_anonymize": round(t_anon, 2),
            "seconds_train": round(t_fit, 2),
        }
        shadow = AnonymizeThenTrain(
            base,
            k=k,
            quasi_identifiers=data.qi,
            anonymizer_params=dict(cfg.ag_params),
            random_state=seed,
        )
        row.update(_membership_attacks(model, data, seed, cfg, model_kind, shadow))
    return row


def _private(data: TableData, model_kind: str, seed: int, epsilon: float, cfg: _Config) -> dict:
    dp_kind = "dp-rf" if model_kind == "rf" else "dp-sgd"
    with _one_torch_thread(dp_kind):
        t0 = time.perf_counter()
        base = make_model(
            dp_kind,
            data,
            seed,
            epsilon=epsilon,
            delta=cfg.dpsgd_delta,
            dpsgd_epochs=cfg.dpsgd_epochs,
            dpsgd_learning_rate=cfg.dpsgd_learning_rate,
            dp_rf_trees=cfg.dp_rf_trees,
            dp_rf_depth=cfg.dp_rf_depth,
            **_model_kwargs(cfg),
        )
        model = _quiet_fit(clone(base), data.X_train, data.y_train)
        t_fit = time.perf_counter() - t0
        inner = model.named_steps["model"]
        row = {
            "dataset": data.name,
            "model": model_kind,
            "defense": "dp",
            "k": 0,
            "epsilon": float(epsilon),
            "seed": seed,
            **_accuracies(model, data),
            "epsilon_spent": float(inner.epsilon_spent_),
            "delta": float(cfg.dpsgd_delta) if dp_kind == "dp-sgd" else 0.0,
            "seconds_train": round(t_fit, 2),
        }
        if dp_kind == "dp-sgd":
            row["noise_multiplier"] = float(inner.noise_multiplier_)
        row.update(_membership_attacks(model, data, seed, cfg, model_kind, base))
    return row


def _check_choice(name: str, values: Sequence[str], allowed: Sequence[str]) -> tuple:
    if isinstance(values, str):
        values = (values,)
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise InputError(f"{name}={tuple(values)!r}: choose from {', '.join(allowed)}")
    return tuple(values)


def _check_ints(name: str, values: Sequence[int], minimum: int) -> tuple:
    vals = tuple(values)
    if not vals or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= minimum for v in vals
    ):
        raise InputError(f"{name}={vals!r} must be a non-empty list of integers >= {minimum}")
    return tuple(int(v) for v in vals)


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _run_tasks(tasks: list, n_jobs: int, progress: Callable[[str], None] | None, what: str) -> list:
    from joblib import Parallel

    out = []
    start = time.perf_counter()
    for i, res in enumerate(Parallel(n_jobs=n_jobs, return_as="generator")(tasks), 1):
        out.append(res)
        if progress:
            progress(f"{what}: {i}/{len(tasks)} done ({time.perf_counter() - start:.0f}s)")
    return out


def run_table1(
    datasets: Sequence[str] = DATASETS,
    models: Sequence[str] = MODELS,
    ks: Sequence[int] = (25, 50, 100, 200),
    seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    n_train: int | None = None,
    attacks: Sequence[str] = ATTACKS,
    *,
    n_test: int | None = None,
    lira_shadows: Mapping[str, int] | int | None = None,
    lira_seeds: Sequence[int] | None = None,
    mia_model: Any = "rf",
    worstcase_model: Any = "rf",
    worstcase_reps: int = 5,
    rf_trees: int = 100,
    nn_epochs: int = 3,
    nn_batch_size: int = 256,
    dp_rf_epsilons: Sequence[float] = (1.0, 10.0),
    dp_rf_trees: int = 30,
    dp_rf_depth: int = 8,
    dpsgd_epsilon: float | None = 3.0,
    dpsgd_delta: float = 1e-5,
    dpsgd_epochs: int = 1,
    dpsgd_learning_rate: float = 1e-3,
    dpsgd_seeds: Sequence[int] | None = None,
    ag_params: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Table 1: accuracy and membership attacks, undefended vs AG vs DP; one row per run.

    Parameters
    ----------
    datasets : subset of ("adult", "loan")
    models : subset of ("rf", "nn")
        ``"nn"`` needs PyTorch (and DP-SGD Opacus); without torch the network rows are skipped
        and one row per dataset says so in ``note``.
    ks : AG's k values.
    seeds : the seeds (models, anonymizer tie-breaks, attacks).
    n_jobs : parallel runs (joblib processes); every run itself uses one core.
    n_train, n_test : keep only the first rows of each part (quick checks); None: all.
    attacks : subset of ("blackbox", "lira", "worstcase", "rmia").
    lira_shadows : int or {"rf": int, "nn": int}
        Shadow models of LiRA (and reference models of RMIA) per model type; 0 skips LiRA for
        that type with a note. Default ``{"rf": 16, "nn": 0}``.
    lira_seeds : run LiRA (and RMIA) only for these seeds; None: every seed.
    mia_model : attack model of the black-box attack ("rf", "gb", "nn" or a classifier).
    worstcase_model : attack model of the worst-case attack ("rf": SACRO-ML's forest, "gb" or a
        classifier).
    worstcase_reps : repetitions of the worst-case attack.
    rf_trees, nn_epochs, nn_batch_size : the targets' sizes.
    dp_rf_epsilons : ε of the DP forests (rows of ``"rf"``); empty for none.
    dp_rf_trees, dp_rf_depth : size of the DP forests. diffprivlib's defaults (10 trees of depth
        5) predict the majority class for every Adult record; 30 trees of depth 8 reach about
        0.78 (chosen from a 3 x 2 grid on Adult, a choice the privacy accounting does not cover).
    dpsgd_epsilon, dpsgd_delta, dpsgd_epochs, dpsgd_learning_rate : the DP-SGD network (rows of
        ``"nn"``); ``dpsgd_epsilon=None`` for none. The learning rate is 10x the non-private
        one: clipped, noisy gradients learn too slowly at 1e-4.
    dpsgd_seeds : train the DP-SGD network only for these seeds; None: every seed. Opacus's
        per-example gradients of the 1024-512-256 network cost about 20x a plain epoch on CPU.
    ag_params : AccuracyGuidedAnonymizer options; default the paper's (:data:`AG_PAPER`).
    progress : callable(str), optional
        Called after every finished run (the CLI prints it to stderr).

    Returns
    -------
    DataFrame
        One row per (dataset, model, defense, k, ε, seed); see the module docstring for the
        columns. Metrics an attack did not produce are NaN.
    """
    datasets = _check_choice("datasets", datasets, DATASETS)
    models = _check_choice("models", models, MODELS)
    attacks = _check_choice("attacks", attacks, _ALL_ATTACKS)
    ks = _check_ints("ks", ks, 2)
    seeds = _check_ints("seeds", seeds, 0)
    if lira_shadows is None:
        shadows = {"rf": 16, "nn": 0}
    elif isinstance(lira_shadows, (int, np.integer)):
        shadows = {m: int(lira_shadows) for m in MODELS}
    else:
        shadows = {m: int(lira_shadows.get(m, 0)) for m in MODELS}
    cfg = _Config(
        attacks=attacks,
        mia_model=mia_model,
        worstcase_model=worstcase_model,
        worstcase_reps=int(worstcase_reps),
        lira_shadows=shadows,
        lira_seeds=None if lira_seeds is None else tuple(lira_seeds),
        rf_trees=int(rf_trees),
        nn_epochs=int(nn_epochs),
        nn_batch_size=int(nn_batch_size),
        dpsgd_epochs=int(dpsgd_epochs),
        dpsgd_learning_rate=float(dpsgd_learning_rate),
        dpsgd_seeds=None if dpsgd_seeds is None else tuple(dpsgd_seeds),
        dp_rf_epsilons=tuple(float(e) for e in dp_rf_epsilons),
        dp_rf_trees=int(dp_rf_trees),
        dp_rf_depth=int(dp_rf_depth),
        dpsgd_epsilon=None if dpsgd_epsilon is None else float(dpsgd_epsilon),
        dpsgd_delta=float(dpsgd_delta),
        ag_params=dict(AG_PAPER if ag_params is None else ag_params),
    )
    from joblib import delayed

    skipped = []
    if "nn" in models and not _torch_available():
        models = tuple(m for m in models if m != "nn")
        skipped = [
            {
                "dataset": d,
                "model": "nn",
                "defense": "none",
                "k": 0,
                "epsilon": math.nan,
                "seed": -1,
                "note": f"network rows skipped: PyTorch is not installed ({install_hint('torch')})",
            }
            for d in datasets
        ]
    data = {d: load_data(d, n_train, n_test) for d in datasets}
    combos = [(d, m, s) for d in datasets for m in models for s in seeds]
    # networks first: they are the longest runs, so the pool stays busy to the end
    combos.sort(key=lambda c: c[1] != "nn")
    first = [delayed(_undefended)(data[d], m, s, cfg) for d, m, s in combos]
    out = _run_tasks(first, n_jobs, progress, "undefended runs")
    rows = [r[0] for r in out]
    guides = {c: r[1] for c, r in zip(combos, out)}
    dp_nn, dp_rf = [], []
    for d, m, s in combos:
        if m == "rf":
            dp_rf += [delayed(_private)(data[d], m, s, e, cfg) for e in cfg.dp_rf_epsilons]
        elif cfg.dpsgd_epsilon is not None and (cfg.dpsgd_seeds is None or s in cfg.dpsgd_seeds):
            dp_nn.append(delayed(_private)(data[d], m, s, cfg.dpsgd_epsilon, cfg))
    ag_tasks = [
        delayed(_anonymized)(data[d], m, s, k, guides[(d, m, s)], cfg)
        for d, m, s in combos
        for k in ks
    ]
    # DP-SGD first (the longest runs), then the AG runs, then the quick DP forests
    rows += _run_tasks(dp_nn + ag_tasks + dp_rf, n_jobs, progress, "AG and DP runs")
    frame = pd.DataFrame(rows + skipped)
    return _order(frame)


def _order(frame: pd.DataFrame) -> pd.DataFrame:
    rank = frame["defense"].map({"none": 0, "ag": 1, "dp": 2})
    model_rank = frame["model"].map({"rf": 0, "nn": 1, "dt": 2})
    frame = frame.assign(_r=rank, _m=model_rank).sort_values(
        ["dataset", "_m", "_r", "k", "epsilon", "seed"], na_position="first"
    )
    return frame.drop(columns=["_r", "_m"]).reset_index(drop=True)
