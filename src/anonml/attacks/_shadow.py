"""Shadow / reference models shared by :class:`~anonml.attacks.LiRA` and :class:`~anonml.attacks.RMIA`.

Both attacks train many copies of the target's estimator on random halves of a *pool* of
records (the target's members followed by its non-members) and read each copy's probability of
the true label on the records under attack. This module holds that machinery:

* :func:`balanced_membership`: which pool records each model trains on. Models come in
  complementary pairs (model ``2j`` trains on a random half, model ``2j+1`` on the other half),
  so every record is IN for exactly ``n_models / 2`` models when ``n_models`` is even and every
  model trains on ``floor(n/2)`` or ``ceil(n/2)`` records.
* :func:`true_class_scores`: the probability of the true class and its numerically stable
  logit ``log p_y − log Σ_{c≠y} p_c`` (Carlini et al., 2022, Sec. IV-B).
* :func:`shadow_scores`: train the models in parallel with joblib and score the requested pool
  records with one batched ``predict_proba`` per model.

References
----------
Carlini, Chien, Nasr, Song, Terzis & Tramèr (2022). Membership inference attacks from first
principles. IEEE S&P. arXiv:2112.03570.
Zarifzadeh, Liu, Shokri & Ghosh (2024). Low-cost high-power membership inference attacks.
ICML. arXiv:2312.03262.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from anonml.attacks._membership import check_n_jobs  # noqa: F401 - shared check, re-exported
from anonml._errors import InputError
from anonml._utils import n_rows as _n_rows
from anonml.attacks._core import AttackResult, attack_result, balanced_indices, counter

__all__ = [
    "PROB_EPS",
    "Pool",
    "balanced_membership",
    "build_pool",
    "check_n_jobs",
    "evaluated_records",
    "resolve_estimator",
    "shadow_result",
    "shadow_scores",
    "shadow_timings",
    "take_rows",
    "true_class_scores",
]

#: default floor of the probabilities before taking logs, so the logit of the true class lies
#: in about ±13.8. Trees output exact 0 and 1; a smaller floor (Carlini et al. use 1e-45 for
#: neural networks) puts those 0/1 outputs tens of units away from every graded output and
#: distorts the Gaussian fits of LiRA (on Adult with a 30-tree forest, 16 shadows: AUC 0.71 at
#: 1e-6, 0.68 at 1e-15, 0.63 at 1e-300; benchmarks/bench_lira.py, docstring of LiRA).
PROB_EPS = 1e-6

#: rows per predict_proba call
_BATCH_ROWS = 65_536


# ---------------------------------------------------------------------------------------------
# which records each model trains on
# ---------------------------------------------------------------------------------------------
def balanced_membership(n_records: int, n_models: int, rng: np.random.Generator) -> np.ndarray:
    """Training sets of ``n_models`` models on a pool of ``n_records`` records.

    Models are drawn in complementary pairs: for pair ``j`` a uniformly random half ``H`` of the
    records is drawn; model ``2j`` trains on ``H`` and model ``2j+1`` on the rest. When
    ``n_records`` is odd the extra record goes to either side with probability 1/2. With an odd
    ``n_models`` the last model trains on a random half of its own.

    Parameters
    ----------
    n_records, n_models : int
        Pool size and number of models (both at least 1).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of bool, shape (n_models, n_records)
        ``M[m, i]`` is True when record ``i`` is in the training set of model ``m`` ("IN").
        Every column has exactly ``n_models // 2`` True values when ``n_models`` is even
        (``n_models // 2`` or ``n_models // 2 + 1`` when it is odd); every row has
        ``n_records // 2`` or ``n_records - n_records // 2`` True values.
    """
    n_pairs = (n_models + 1) // 2
    # rank of each record in an independent random order per pair: rank < h is the half H
    ranks = np.argsort(rng.random((n_pairs, n_records)), axis=1).argsort(axis=1)
    half = np.full(n_pairs, n_records // 2)
    if n_records % 2:
        half += rng.integers(0, 2, n_pairs)
    first = ranks < half[:, None]
    out = np.empty((n_models, n_records), dtype=bool)
    out[0::2] = first
    out[1::2] = ~first[: n_models // 2]
    return out


# ---------------------------------------------------------------------------------------------
# scores of the true class
# ---------------------------------------------------------------------------------------------
def true_class_scores(proba: np.ndarray, codes: np.ndarray,
                      eps: float = PROB_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Probability of the true class and its logit ``φ = log p_y − log Σ_{c≠y} p_c``.

    Both terms are clipped below at ``eps`` (default :data:`PROB_EPS`), so ``|φ| <= log(1/eps)``
    for probabilities summing to 1. The other classes are summed directly (not ``1 − p_y``), so
    ``φ`` keeps its precision for ``p_y`` close to 1.

    Parameters
    ----------
    proba : ndarray of shape (n, n_classes)
    codes : ndarray of int, shape (n,)
        Column of the true class of each row.

    Returns
    -------
    p_true, phi : ndarray of float64, shape (n,)
    """
    proba = np.asarray(proba, dtype=np.float64)
    rows = np.arange(proba.shape[0])
    p_true = proba[rows, codes].copy()
    others = proba.sum(axis=1) - p_true
    # precise sum of the other classes where p_true is close to 1 (cancellation otherwise)
    close = p_true > 0.5
    if close.any():
        rest = proba[close].copy()
        rest[np.arange(rest.shape[0]), codes[close]] = 0.0
        others[close] = rest.sum(axis=1)
    phi = np.log(np.maximum(p_true, eps)) - np.log(np.maximum(others, eps))
    return np.clip(p_true, 0.0, 1.0), phi


# ---------------------------------------------------------------------------------------------
# the pool of records
# ---------------------------------------------------------------------------------------------
def take_rows(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a DataFrame/Series, sparse matrix or array (positional)."""
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return X.iloc[idx]
    return X[idx]


class Pool:
    """The target's members followed by its non-members, as one table.

    Attributes
    ----------
    X : DataFrame, sparse matrix or ndarray
        Features of the ``n_members + n_nonmembers`` records.
    y : ndarray
        Their true labels (as given to the target).
    codes : ndarray of int64
        Labels as column indices into ``classes``.
    classes : ndarray
        The target's sorted classes.
    n_members : int
        Records ``0 .. n_members-1`` are the members (the target's training set).
    """

    def __init__(self, X: Any, y: np.ndarray, codes: np.ndarray, classes: np.ndarray,
                 n_members: int) -> None:
        self.X = X
        self.y = y
        self.codes = codes
        self.classes = classes
        self.n_members = n_members

    @property
    def n(self) -> int:
        return int(self.y.shape[0])


def build_pool(target: Any, attack: str) -> Pool:
    """Stack the target's member and non-member records; InputError when they cannot be used."""
    X_train, X_test = target.X("train"), target.X("test")
    missing = [n for n, v in (("X_train", X_train), ("X_test", X_test)) if v is None]
    if missing:
        raise InputError(
            f"{attack} trains shadow models on the target's records, but the Target has no "
            f"{' and '.join(missing)}; build it with Target(model, X_train, y_train, X_test, y_test)"
        )
    frames = [isinstance(X, pd.DataFrame) for X in (X_train, X_test)]
    if any(frames):
        if not all(frames):
            raise InputError(
                f"{attack}: X_train and X_test must be of the same kind (both DataFrames or both "
                "arrays); convert one of them"
            )
        if list(X_train.columns) != list(X_test.columns):
            raise InputError(
                f"{attack}: X_train and X_test have different columns "
                f"({list(X_train.columns)[:5]} ... vs {list(X_test.columns)[:5]} ...); pass the "
                "non-members with the members' columns, in the same order"
            )
        X = pd.concat([X_train, X_test], axis=0, ignore_index=True)
    else:
        from scipy import sparse

        if sparse.issparse(X_train) or sparse.issparse(X_test):
            X = sparse.vstack([sparse.csr_matrix(X_train), sparse.csr_matrix(X_test)], format="csr")
        else:
            X = np.concatenate([np.asarray(X_train), np.asarray(X_test)], axis=0)
    y = np.concatenate([target.y("train"), target.y("test")])
    codes = np.concatenate([target.label_codes("train"), target.label_codes("test")])
    return Pool(X, y, codes, np.asarray(target.classes_), target.n("train"))


def evaluated_records(target: Any, pool: Pool, rng: np.random.Generator) -> tuple:
    """The records a shadow-model attack scores: as many members as non-members.

    Returns ``(member_idx, nonmember_idx, evaluated, labels)``: the indices among the target's
    training and test records, the same records' indices in ``pool`` (members first) and their
    labels (1 member, 0 non-member).
    """
    member_idx, nonmember_idx = balanced_indices(target.n("train"), target.n("test"), rng)
    evaluated = np.concatenate([member_idx, pool.n_members + nonmember_idx])
    labels = np.concatenate([np.ones(member_idx.size, np.int64),
                             np.zeros(nonmember_idx.size, np.int64)])
    return member_idx, nonmember_idx, evaluated, labels


# ---------------------------------------------------------------------------------------------
# training and scoring the models
# ---------------------------------------------------------------------------------------------
def resolve_estimator(target: Any, shadow_estimator: Any, attack: str) -> Any:
    """The unfitted estimator to train shadow models with: ``shadow_estimator`` or a clone
    of the target's model. InputError for a probabilities-only target without one."""
    from sklearn.base import clone

    if shadow_estimator is None:
        if not target.has_model:
            raise InputError(
                f"{attack} trains shadow models like the target, but this Target has "
                "probabilities only (no model to clone); pass the fitted model as "
                "Target(model, ...) or an unfitted estimator of the same kind as "
                "shadow_estimator="
            )
        base, what = target.model, "the target's model"
    else:
        base, what = shadow_estimator, "shadow_estimator"
    try:
        return clone(base)
    except (TypeError, RuntimeError) as exc:
        raise InputError(
            f"{attack} cannot clone {what} ({type(base).__name__}: {exc}); pass "
            "shadow_estimator= an unfitted scikit-learn estimator like the target's"
        ) from None


def _aligned_proba(model: Any, X: Any, classes: np.ndarray) -> np.ndarray:
    """``model.predict_proba(X)`` in batches, columns mapped onto ``classes``.

    A shadow model that never saw a class (it was not in its half of the pool) gets
    probability 0 for that class.
    """
    n = _n_rows(X)
    parts = [
        np.asarray(model.predict_proba(take_rows(X, np.arange(s, min(s + _BATCH_ROWS, n)))),
                   dtype=np.float64)
        for s in range(0, n, _BATCH_ROWS)
    ]
    P = np.concatenate(parts, axis=0)
    model_classes = getattr(model, "classes_", None)
    if model_classes is None:
        if P.shape[1] != classes.size:
            raise InputError(
                f"a shadow model returned {P.shape[1]} probability columns for {classes.size} "
                "classes and has no classes_ to map them; use an estimator with classes_"
            )
        return P
    model_classes = np.asarray(model_classes)
    if model_classes.shape == classes.shape and np.array_equal(model_classes, classes):
        return P
    pos = np.searchsorted(classes, model_classes)
    pos = np.clip(pos, 0, classes.size - 1)
    if not np.array_equal(classes[pos], model_classes):
        raise InputError(
            "a shadow model learned classes the target does not have "
            f"({model_classes[:5]}); pass labels from the target's classes"
        )
    out = np.zeros((n, classes.size))
    out[:, pos] = P
    return out


def _seed_params(estimator: Any) -> list[str]:
    """Names of every ``random_state`` parameter of an estimator (nested ones included)."""
    if not hasattr(estimator, "get_params"):
        return []
    return [k for k in estimator.get_params(deep=True)
            if k == "random_state" or k.endswith("__random_state")]


def _fit_score_chunk(estimators: list, seeds: list, train_sets: list, X: Any, y: np.ndarray,
                     pred_idx: np.ndarray, codes: np.ndarray, classes: np.ndarray,
                     eps: float) -> list:
    """Fit a few models and score the rows ``pred_idx`` with each (runs in a joblib worker)."""
    X_pred = take_rows(X, pred_idx)
    out = []
    for est, seed, train_idx in zip(estimators, seeds, train_sets):
        cpu = time.thread_time()
        start = time.perf_counter()
        names = _seed_params(est)
        if names:
            est.set_params(**{name: int(seed) for name in names})
        est.fit(take_rows(X, train_idx), y[train_idx])
        fitted = time.perf_counter()
        p_true, phi = true_class_scores(_aligned_proba(est, X_pred, classes), codes, eps)
        out.append((p_true, phi, fitted - start, time.perf_counter() - fitted,
                    time.thread_time() - cpu))
    return out


def shadow_scores(
    estimator: Any,
    pool: Pool,
    membership: np.ndarray,
    pred_idx: np.ndarray,
    seeds: np.ndarray,
    n_jobs: Any,
    eps: float = PROB_EPS,
    *,
    progress: Any = None,
    label: str = "reference models",
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train one clone of ``estimator`` per row of ``membership`` and score ``pred_idx``.

    The models are split into ``2 × workers`` chunks and trained with
    ``joblib.Parallel(n_jobs, prefer="threads")``: scikit-learn's tree builders and
    ``predict_proba`` release the GIL, and threads need no process start-up and no copy of the
    pool (on Adult, 16 decision-tree shadows took 11.5 s with threads and 24.5 s with fresh
    loky processes on the same loaded 2 cores). For an estimator that holds the GIL, choose
    processes with ``joblib.parallel_config(backend="loky")`` around the attack; the pool is
    then pickled once per chunk. Each model scores every requested record with
    batched ``predict_proba`` calls, and only the scores come back (the models are dropped).
    Every ``random_state`` parameter of a clone (nested ones included) is set to its own seed
    from ``seeds``, so shadow models differ in their randomness as well as in their data, and a
    run is reproducible.

    Returns
    -------
    p_true, phi : ndarray of shape (n_models, len(pred_idx))
        Probability of the true class and its logit (probabilities clipped at ``eps``), for
        every model and requested record.
    timings : dict of ndarray of shape (n_models,)
        ``fit`` and ``predict``: wall seconds of each model's ``fit`` and ``predict_proba``
        calls; ``cpu``: CPU seconds of the thread that ran them (``time.thread_time``; threads
        started by the estimator itself are not counted). ``cpu.sum()`` over the wall time of
        the whole call above 1 shows models running at the same time.

    ``progress(label, done, total)``, when given, is called with ``done = 0`` first and then
    from this (the calling) thread as each chunk of models comes back, ``done`` counting the
    models trained and scored so far (``total = n_models``); workers never report.
    """
    from joblib import effective_n_jobs
    from sklearn.base import clone
    from sklearn.utils.parallel import Parallel, delayed  # propagates sklearn's config

    n_models = membership.shape[0]
    workers = max(1, min(effective_n_jobs(n_jobs), n_models))
    n_chunks = n_models if workers == 1 else min(n_models, 2 * workers)
    chunks = np.array_split(np.arange(n_models), n_chunks)
    codes = pool.codes[pred_idx]
    train_sets = [np.flatnonzero(membership[m]) for m in range(n_models)]
    tick = counter(progress, label, n_models)
    results = []
    # chunks come back in order as they complete; the count is reported from this thread
    for chunk, res in zip(chunks, Parallel(n_jobs=workers, prefer="threads",
                                           return_as="generator")(
        delayed(_fit_score_chunk)(
            [clone(estimator) for _ in chunk],
            [int(seeds[m]) for m in chunk],
            [train_sets[m] for m in chunk],
            pool.X, pool.y, pred_idx, codes, pool.classes, eps,
        )
        for chunk in chunks
    )):
        results.append(res)
        tick(len(chunk))
    flat = [r for chunk in results for r in chunk]
    p_true = np.stack([r[0] for r in flat])
    phi = np.stack([r[1] for r in flat])
    timings = {"fit": np.array([r[2] for r in flat]), "predict": np.array([r[3] for r in flat]),
               "cpu": np.array([r[4] for r in flat])}
    return p_true, phi, timings


# ---------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------
def shadow_timings(start: float, shadow_wall: float, times: dict, per: str) -> dict:
    """Seconds of a shadow-model attack: in all since ``start``, training and scoring the
    models (wall clock), fitting and predicting per model (``fit_per_<per>``,
    ``predict_per_<per>``) and the CPU seconds per wall-clock second of the models."""
    return {
        "total": time.perf_counter() - start,
        "shadow_wall": shadow_wall,
        f"fit_per_{per}": float(times["fit"].mean()),
        f"predict_per_{per}": float(times["predict"].mean()),
        "cpu_per_wall": float(times["cpu"].sum() / max(shadow_wall, 1e-9)),
    }


def shadow_result(name: str, labels: np.ndarray, scores: np.ndarray, extra: dict,
                  threshold: float) -> AttackResult:
    """:func:`~anonml.attacks._core.attack_result` with the TPR at 0.1 % and 1 % FPR added to
    ``extra`` (``tpr_at_0.1%_fpr``, ``tpr_at_1%_fpr``; Carlini et al., 2022)."""
    result = attack_result(name, labels, scores, extra=extra, threshold=threshold)
    result.extra["tpr_at_0.1%_fpr"] = result.tpr_at_fpr(0.001)
    result.extra["tpr_at_1%_fpr"] = result.tpr_at_fpr(0.01)
    return result
