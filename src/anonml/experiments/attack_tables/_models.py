"""The tables' models (random forest, networks, DP models) and the anonymize-then-train procedure. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError
from anonml.anonymize._then_fit import AnonymizeThenFit
from anonml.experiments.attack_tables._constants import _LOAN_WIDE, AG_PAPER, ATTACKS
from anonml.experiments.attack_tables._data import TableData


# =============================================================================================
# models
# =============================================================================================
class PublicRangeScaler(TransformerMixin, BaseEstimator):
    """Clip numeric columns to public ranges and scale them to [0, 1]; learns nothing from data.

    Parameters
    ----------
    lower, upper : sequence of float
        Public bounds per column (on the original scale).
    log : sequence of bool, optional
        Columns taken as ``log1p(x)`` (money amounts) before scaling (bounds mapped the same way).
    """

    def __init__(
        self,
        lower: Sequence[float] = (),
        upper: Sequence[float] = (),
        log: Sequence[bool] | None = None,
    ):
        self.lower = lower
        self.upper = upper
        self.log = log

    def _bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lo = np.asarray(self.lower, dtype=np.float64)
        hi = np.asarray(self.upper, dtype=np.float64)
        log = np.zeros(lo.shape, bool) if self.log is None else np.asarray(self.log, dtype=bool)
        if lo.shape != hi.shape or lo.shape != log.shape or lo.ndim != 1 or np.any(hi <= lo):
            raise InputError(
                "PublicRangeScaler needs lower < upper (and log) with one entry per column"
            )
        f_lo = np.where(log, np.log1p(np.maximum(lo, 0)), lo)
        f_hi = np.where(log, np.log1p(np.maximum(hi, 0)), hi)
        return f_lo, f_hi, log

    def fit(self, X: Any, y: Any = None) -> PublicRangeScaler:
        f_lo, _, _ = self._bounds()
        n = np.asarray(X).shape[1]
        if n != f_lo.size:
            raise InputError(f"PublicRangeScaler has bounds for {f_lo.size} columns, X has {n}")
        self.n_features_in_ = n
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "n_features_in_")
        f_lo, f_hi, log = self._bounds()
        A = np.asarray(X, dtype=np.float64)
        A = np.where(log, np.log1p(np.maximum(A, 0)), A)
        return (np.clip(A, f_lo, f_hi) - f_lo) / (f_hi - f_lo)


def _first_char(X: Any) -> np.ndarray:
    """First character of every value (Loan's zip code ``"860xx"`` -> region ``"8"``)."""
    frame = pd.DataFrame(X)
    return np.column_stack(
        [frame[c].astype(str).str[0].to_numpy(dtype=object) for c in frame.columns]
    )


def _encoder(data: TableData, kind: str):
    """Column encoders: ``ordinal`` (forests), ``onehot_std`` (network), ``dp_ordinal`` (DP
    forest) and ``dp_onehot`` (DP-SGD): the DP ones use public knowledge only."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (
        FunctionTransformer,
        OneHotEncoder,
        OrdinalEncoder,
        StandardScaler,
    )

    cat, num = list(data.categorical), list(data.numeric)
    cats = [data.categories[c] for c in cat]
    parts: list = []
    if kind in ("ordinal", "dp_ordinal"):
        if cat:
            parts.append(
                (
                    "cat",
                    OrdinalEncoder(
                        categories=cats, handle_unknown="use_encoded_value", unknown_value=-1
                    ),
                    cat,
                )
            )
    elif kind in ("onehot_std", "dp_onehot"):
        narrow = [c for c in cat if c != _LOAN_WIDE or data.name != "loan"]
        if narrow:
            parts.append(
                (
                    "cat",
                    OneHotEncoder(
                        categories=[data.categories[c] for c in narrow],
                        handle_unknown="ignore",
                        sparse_output=False,
                    ),
                    narrow,
                )
            )
        if data.name == "loan" and _LOAN_WIDE in cat:
            regions = sorted({str(v)[0] for v in data.categories[_LOAN_WIDE]})
            parts.append(
                (
                    "region",
                    make_pipeline(
                        FunctionTransformer(_first_char),
                        OneHotEncoder(
                            categories=[regions], handle_unknown="ignore", sparse_output=False
                        ),
                    ),
                    [_LOAN_WIDE],
                )
            )
    else:  # pragma: no cover - internal
        raise InputError(f"unknown encoder {kind!r}")
    if num:
        if kind == "ordinal":
            parts.append(("num", "passthrough", num))
        elif kind == "onehot_std":
            parts.append(("num", StandardScaler(), num))
        else:
            missing = [c for c in num if c not in data.ranges]
            if missing:
                raise InputError(
                    f"no public range for numeric column {missing[0]!r} of {data.name!r}; add it to "
                    "PUBLIC_RANGES (from a codebook, never from the private rows)"
                )
            r = [data.ranges[c] for c in num]
            parts.append(
                (
                    "num",
                    PublicRangeScaler(
                        [a for a, _, _ in r], [b for _, b, _ in r], [g for _, _, g in r]
                    ),
                    num,
                )
            )
    return ColumnTransformer(parts, sparse_threshold=0.0)


def _dp_rf_bounds(data: TableData) -> tuple[list, list]:
    """Public bounds of the ``dp_ordinal`` encoding: codes 0..n-1, scaled numerics 0..1."""
    lo = [0.0] * len(data.categorical) + [0.0] * len(data.numeric)
    hi = [float(max(len(data.categories[c]) - 1, 1)) for c in data.categorical] + [1.0] * len(
        data.numeric
    )
    return lo, hi


@dataclass(frozen=True)
class _Config:
    attacks: tuple = ATTACKS
    mia_model: Any = "rf"
    worstcase_model: Any = "rf"
    worstcase_reps: int = 5
    lira_shadows: Mapping[str, int] = field(default_factory=lambda: {"rf": 16, "nn": 0})
    lira_seeds: tuple | None = None
    rmia_references: int = 4
    rf_trees: int = 100
    nn_epochs: int = 3
    nn_batch_size: int = 256
    dpsgd_epochs: int = 1
    dpsgd_learning_rate: float = 1e-3
    dpsgd_seeds: tuple | None = None
    dp_rf_epsilons: tuple = (1.0, 10.0)
    dp_rf_trees: int = 30
    dp_rf_depth: int = 8
    dpsgd_epsilon: float = 3.0
    dpsgd_delta: float = 1e-5
    ag_params: Mapping[str, Any] = field(default_factory=lambda: dict(AG_PAPER))


def make_model(
    kind: str,
    data: TableData,
    seed: int,
    *,
    rf_trees: int = 100,
    nn_epochs: int = 3,
    nn_batch_size: int = 256,
    epsilon: float | None = None,
    delta: float = 1e-5,
    dpsgd_epochs: int = 1,
    dpsgd_learning_rate: float = 1e-3,
    dp_rf_trees: int = 30,
    dp_rf_depth: int = 8,
):
    """An unfitted pipeline on raw tables: ``"rf"``, ``"nn"``, ``"dt"``, ``"dp-rf"`` (needs
    ``epsilon``; ``dp_rf_trees`` random trees of depth ``dp_rf_depth``) or ``"dp-sgd"`` (needs
    ``epsilon``; ``delta``, ``dpsgd_epochs``, ``dpsgd_learning_rate``)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    if kind == "rf":
        return Pipeline(
            [
                ("encode", _encoder(data, "ordinal")),
                (
                    "model",
                    RandomForestClassifier(n_estimators=rf_trees, random_state=seed, n_jobs=1),
                ),
            ]
        )
    if kind == "dt":
        cats = [data.categories[c] for c in data.categorical]
        if data.numeric:
            raise InputError("the 'dt' model is for all-categorical data (Nursery)")
        return Pipeline(
            [
                ("encode", OneHotEncoder(categories=cats, handle_unknown="ignore")),
                ("model", DecisionTreeClassifier(random_state=seed)),
            ]
        )
    if kind == "nn":
        from anonml.dp._dpsgd import MLPTorchClassifier

        return Pipeline(
            [
                ("encode", _encoder(data, "onehot_std")),
                (
                    "model",
                    MLPTorchClassifier(
                        epochs=nn_epochs, batch_size=nn_batch_size, random_state=seed
                    ),
                ),
            ]
        )
    if kind in ("dp-rf", "dp-sgd"):
        if epsilon is None:
            raise InputError(f"model {kind!r} needs epsilon, e.g. epsilon=1.0")
        if kind == "dp-rf":
            from anonml.dp._diffprivlib import DPRandomForestClassifier

            lo, hi = _dp_rf_bounds(data)
            return Pipeline(
                [
                    ("encode", _encoder(data, "dp_ordinal")),
                    (
                        "model",
                        DPRandomForestClassifier(
                            epsilon,
                            bounds=(lo, hi),
                            classes=data.classes,
                            n_estimators=dp_rf_trees,
                            max_depth=dp_rf_depth,
                            random_state=seed,
                        ),
                    ),
                ]
            )
        from anonml.dp._dpsgd import DPSGDClassifier

        return Pipeline(
            [
                ("encode", _encoder(data, "dp_onehot")),
                (
                    "model",
                    DPSGDClassifier(
                        epsilon=epsilon,
                        delta=delta,
                        classes=data.classes,
                        epochs=dpsgd_epochs,
                        batch_size=nn_batch_size,
                        learning_rate=dpsgd_learning_rate,
                        random_state=seed,
                    ),
                ),
            ]
        )
    raise InputError(f"unknown model {kind!r}; choose from rf, nn, dt, dp-rf, dp-sgd")


class AnonymizeThenTrain(AnonymizeThenFit):
    """Train, k-anonymize the training data along the model's predictions, retrain: the
    paper's accuracy-guided procedure (Goldsteen et al., 2022) as
    :class:`anonml.anonymize.AnonymizeThenFit` with the paper's anonymizer built from ``k``,
    ``quasi_identifiers`` and ``anonymizer_params``.

    Parameters
    ----------
    estimator : classifier
        Unfitted; cloned for the first model and for the released one.
    k : int, default 10
    quasi_identifiers : list, optional
        QI columns; None: every column.
    anonymizer_params : dict, optional
        Further :class:`~anonml.AccuracyGuidedAnonymizer` parameters (default: the paper's
        method, :data:`AG_PAPER`).
    random_state : int or None
        Seed of the anonymizer's tree (the estimator keeps its own ``random_state``).

    Attributes
    ----------
    initial_estimator_ : the model trained on the original data (its predictions guide AG)
    anonymizer_ : the fitted AccuracyGuidedAnonymizer
    estimator_ : the released model, trained on the anonymized data with the true labels
    classes_ : ndarray
    """

    def __init__(
        self,
        estimator: Any = None,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        anonymizer_params: Mapping[str, Any] | None = None,
        random_state: Any = None,
    ):
        self.estimator = estimator
        self.k = k
        self.quasi_identifiers = quasi_identifiers
        self.anonymizer_params = anonymizer_params
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> AnonymizeThenTrain:
        from anonml.anonymize import AccuracyGuidedAnonymizer

        if self.estimator is None:
            raise InputError("AnonymizeThenTrain needs estimator=, an unfitted classifier")
        params = dict(AG_PAPER if self.anonymizer_params is None else self.anonymizer_params)
        ag = AccuracyGuidedAnonymizer(k=self.k, quasi_identifiers=self.quasi_identifiers,
                                      **params)
        return self._fit(ag, False, X, y)
