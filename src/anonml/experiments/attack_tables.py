"""Privacy attacks on anonymized and differentially private models (Goldsteen et al., 2022).

Reproduces the two attack tables of

    A. Goldsteen, G. Ezov, R. Shmelkin, M. Moffie & A. Farkash, "Anonymizing Machine Learning
    Models", DPM 2021 / CBT 2021, LNCS 13140 (arXiv:2007.13086), Tables 1 and 2,

with anonml's attacks (:mod:`anonml.attacks`) and DP baselines (:mod:`anonml.dp`).

Table 1: membership inference
-----------------------------
Data. Adult (``load_adult``: the published split, 32,561 training and 16,281 test rows,
the paper's 12 features, target ``income == ">50K"`` = 1) and Loan (``load_loan``: the
LendingClub 2007-2011 stand-in for the paper's 2015 excerpt; the 50 missing ``revol_util`` are
set to the column's median before anything else; target ``loan_status == "Charged Off"`` = 1;
one fixed stratified 80/20 split, ``random_state=0``).

Targets. ``"rf"``: scikit-learn's ``RandomForestClassifier(n_estimators=100)`` (fully grown
trees, so it overfits: training accuracy about 0.98 on Adult, 1.0 on Loan) on ordinal codes of
the categorical columns and the raw numeric columns (codes instead of one-hot: same accuracy,
ten times faster on sparse one-hot input, which matters for the shadow models). ``"nn"``: the
fully connected tanh network of the membership-inference literature (1024-512-256 units, Adam,
learning rate 1e-4, :class:`anonml.dp.MLPTorchClassifier`, the non-private twin of the DP-SGD
model) on one-hot categorical and standardized numeric columns; for Loan, the 823 three-digit
zip codes enter the networks as their first digit (10 regions), which keeps the input layer (and
DP-SGD's per-example gradients) small.

Defenses (one row each, per seed):

* ``none``: the target trained on the original data.
* ``ag`` at ``k``: :class:`anonml.AccuracyGuidedAnonymizer` as in the paper (majority-label
  medoid, exact Gini tree on the QIs, no refinement) fitted on the undefended target's
  *predictions* on its training data; every feature is a QI on Adult, the 11 of the paper's 18
  QIs that the Loan stand-in has (``load_loan().qi_sets["paper"]``) on Loan; the same model
  (same seed) is then retrained on the anonymized table with the true labels and released.
* ``dp`` at ``epsilon``: for ``"rf"``, diffprivlib's ε-DP random forest
  (:class:`anonml.dp.DPRandomForestClassifier`, 30 random trees of depth 8: diffprivlib's
  10 trees of depth 5 predict the majority class for every Adult record) at ε = 1 and 10;
  for ``"nn"``, the same network trained with DP-SGD (:class:`anonml.dp.DPSGDClassifier`,
  Opacus, PRV accountant) at (ε = 3, δ = 1e-5). Their inputs are encoded with *public*
  knowledge only (see "Public knowledge for the DP models").

Columns. Training accuracy (on the original training records, raw), test accuracy (raw test
rows), and the membership attacks on the released model with the **original** training records
as members and the test records as non-members:

* ``mia_*``: the black-box attack of the paper (:class:`~anonml.attacks.MembershipInferenceBlackBox`,
  the attacker knows half of the members and as many non-members; attack model a random
  forest on the probabilities and the one-hot true label, the stronger of anonml's options;
  decision at probability 0.5): accuracy, precision and recall of the member class on a
  balanced evaluation set, AUC and TPR at 0.1 % FPR.
* ``lira_*``: LiRA (Carlini et al., 2022), online, with ``lira_shadows`` shadow models that
  repeat the *whole training procedure* of the released model (for ``ag``: train, anonymize
  along the predictions, retrain: :class:`AnonymizeThenTrain`; for ``dp``: the DP model), so the
  attacker knows the algorithm and only the data differ; one global variance per side when
  fewer than 64 shadows (the paper's advice). AUC and TPR at 0.1 % and 1 % FPR.
* ``worstcase_auc``: the SACRO-ML worst-case attack (:class:`~anonml.attacks.WorstCaseMembership`),
  mean AUC over ``worstcase_reps`` random 80/20 splits of the model's outputs on members and
  non-members (the attacker is told most memberships: an upper bound for black-box attacks on
  these outputs).

Table 2: attribute inference
----------------------------
Nursery (``load_nursery``, one fixed stratified 80/20 split, ``random_state=0``), a scikit-learn
``DecisionTreeClassifier`` on one-hot features; undefended, and AG at k = 100 with every feature
a QI (guided by the tree's predictions, tree retrained). Columns: test accuracy; the black-box
attribute attack (:class:`~anonml.attacks.AttributeInferenceBlackBox` on ``social``, positive value
``"problematic"``: accuracy, precision and recall on the training records it did not train on),
the same attack model without the target's output (:class:`~anonml.attacks.AttributeInferenceBaseline`,
what the other features alone reveal), and the worst-case attribute risk ratio ARR of ``social``
(:class:`~anonml.attacks.WorstCaseAttribute`: share of training records whose ``social`` the model
singles out over that share among test records, with its one-sided Fisher p-value).

Public knowledge for the DP models
----------------------------------
The DP guarantees hold only if no encoding step reads the private table. Category lists are
the values of the whole public file (training and test part), standing in for a codebook.
Numeric columns are clipped to fixed ranges (:data:`PUBLIC_RANGES`), with money amounts on a
log scale, and scaled to [0, 1]. Adult's ranges are the survey's documented limits (age 17-90,
education-num 1-16, CPS top-codes 99,999 for capital gain and 99 for hours); the capital-loss
cap (5,000) and every Loan cap are round numbers we chose, having seen the file's ranges: they
are not derived from the training rows, but they are not from a codebook either. Values beyond a
range are clipped, which costs accuracy, not privacy. The number of rows and the list of
classes are not protected (as usual).

Simplifications
---------------
* One fixed split per dataset; the seeds vary the models, the anonymizer's tie-breaks and the
  attacks (3 seeds: mean ± standard deviation).
* LiRA on the networks is skipped by default (``lira_shadows={"rf": 16, "nn": 0}``): 8
  shadow networks per row would multiply the network part of the run by about 8. The
  black-box and worst-case attacks cover the networks. The published run (:func:`reproduce`)
  used 8 shadow models for the forests, on seed 0 only (on a loaded 2-core machine one
  AG shadow, i.e. train, anonymize, retrain, took 12 s on Adult and 25 s on Loan).
* The network is trained for ``nn_epochs`` epochs (default 3) at the literature's learning
  rate 1e-4. On Adult its accuracy plateaus by then (training / test accuracy 0.852 / 0.853
  after 3 epochs, 0.852 / 0.851 after 5, 0.864 / 0.860 after 40, measured while choosing
  the budget) and it does not overfit: overfitting at this learning rate would need well over
  40 epochs, many times the run's budget, so the
  attacks on the network are near chance even undefended (the paper's network gave attack
  accuracy 0.53). DP-SGD runs ``dpsgd_epochs`` epochs (default 1) at learning rate 1e-3, for
  the seeds in ``dpsgd_seeds``: Opacus's per-example gradients of this network cost about 20x
  a plain epoch on a CPU.
* The paper's 2015 LendingClub excerpt and 7 of its 18 QIs are not available (``load_loan``).

Usage
-----
>>> from anonml.experiments import attack_tables as at                    # doctest: +SKIP
>>> t1 = at.run_table1(datasets=("adult",), models=("rf",), seeds=(0,))  # doctest: +SKIP
>>> t2 = at.run_table2(seeds=(0, 1, 2))                                 # doctest: +SKIP
>>> at.write_outputs(t1, t2, "docs/results")                           # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError
from anonml._install import install_hint

__all__ = [
    "ATTACKS",
    "DATASETS",
    "MODELS",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "PUBLIC_RANGES",
    "AnonymizeThenTrain",
    "PublicRangeScaler",
    "TableData",
    "load_data",
    "majority_share",
    "make_model",
    "markdown_table1",
    "markdown_table2",
    "reproduce",
    "run_table1",
    "run_table2",
    "summarize_table1",
    "summarize_table2",
    "write_outputs",
]

DATASETS = ("adult", "loan")
MODELS = ("rf", "nn")
ATTACKS = ("blackbox", "lira", "worstcase")
_ALL_ATTACKS = ("blackbox", "lira", "worstcase", "rmia")

#: The paper's AG method (as ``paper_accuracy``'s ``paper`` variant).
AG_PAPER = {"representative": "majority_medoid", "tree": "exact", "refine": "none"}

#: Public (lower, upper, log-scale) ranges of the numeric columns for the DP models; see the
#: module docstring for where they come from.
PUBLIC_RANGES: dict[str, dict[str, tuple[float, float, bool]]] = {
    "adult": {
        "age": (17, 90, False),
        "education-num": (1, 16, False),
        "capital-gain": (0, 99_999, True),
        "capital-loss": (0, 5_000, True),
        "hours-per-week": (1, 99, False),
    },
    "loan": {
        "loan_amnt": (0, 40_000, True),
        "annual_inc": (1_000, 10_000_000, True),
        "delinq_2yrs": (0, 20, False),
        "inq_last_6mths": (0, 10, False),
        "open_acc": (0, 50, False),
        "pub_rec": (0, 10, False),
        "revol_bal": (0, 1_000_000, True),
        "revol_util": (0, 100, False),
        "total_acc": (0, 100, False),
    },
}

#: The paper's figures the issue compares with (Goldsteen et al., 2022, Tables 1 and 2).
PAPER_TABLE1 = pd.DataFrame(
    [
        {
            "dataset": "adult",
            "model": "rf",
            "defense": "none",
            "k": 0,
            "train_acc": 0.98,
            "test_acc": 0.83,
            "mia_accuracy": 0.58,
        },
        {
            "dataset": "adult",
            "model": "rf",
            "defense": "ag",
            "k": 50,
            "train_acc": 0.85,
            "test_acc": 0.83,
            "mia_accuracy": 0.51,
        },
        {
            "dataset": "adult",
            "model": "nn",
            "defense": "none",
            "k": 0,
            "train_acc": math.nan,
            "test_acc": 0.89,
            "mia_accuracy": 0.53,
        },
        {
            "dataset": "adult",
            "model": "nn",
            "defense": "ag",
            "k": 25,
            "train_acc": math.nan,
            "test_acc": 0.82,
            "mia_accuracy": 0.50,
        },
    ]
)
PAPER_TABLE2 = pd.DataFrame(
    [
        {
            "dataset": "nursery",
            "model": "dt",
            "defense": "none",
            "k": 0,
            "test_acc": 0.68,
            "attr_accuracy": 0.61,
        },
        {
            "dataset": "nursery",
            "model": "dt",
            "defense": "ag",
            "k": 100,
            "test_acc": 0.74,
            "attr_accuracy": 0.56,
        },
    ]
)

_TARGETS = {"adult": ("income", ">50K"), "loan": ("loan_status", "Charged Off")}
_LOAN_WIDE = "zip_code"  # enters the networks as its first digit


# =============================================================================================
# data
# =============================================================================================
@dataclass
class TableData:
    """One dataset of the tables: a fixed split plus what the encoders may know publicly.

    Attributes
    ----------
    name : str
    X_train, X_test : DataFrame
        Raw records (training = members, test = non-members).
    y_train, y_test : ndarray
        Labels: 0/1 for Adult and Loan (1 = ``>50K`` / ``Charged Off``), class names for Nursery.
    categorical, numeric : list of str
    qi : list of str
        The quasi-identifiers AG anonymizes.
    classes : list
        The public list of classes.
    categories : dict
        Public category list per categorical column (values of the whole public file).
    ranges : dict
        Public (lower, upper, log) per numeric column (:data:`PUBLIC_RANGES`).
    """

    name: str
    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: np.ndarray
    y_test: np.ndarray
    categorical: list
    numeric: list
    qi: list
    classes: list
    categories: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)


def _categories(frame: pd.DataFrame, columns: Sequence[str]) -> dict:
    return {c: sorted(frame[c].unique().tolist()) for c in columns}


def load_data(name: str, n_train: int | None = None, n_test: int | None = None) -> TableData:
    """The fixed split of ``"adult"``, ``"loan"`` or ``"nursery"`` (see the module docstring).

    ``n_train`` / ``n_test`` keep only the first rows of each part (for quick checks).
    """
    from sklearn.model_selection import train_test_split

    from anonml.datasets import load_adult, load_loan, load_nursery

    if name == "adult":
        d = load_adult()
        frame = d.frame
        X_train, X_test, y_train, y_test = d.train_test_split()
        positive = _TARGETS["adult"][1]
        y_train, y_test = (y_train == positive).astype(int), (y_test == positive).astype(int)
        qi, classes = list(d.feature_names), [0, 1]
    elif name == "loan":
        d = load_loan()
        frame = d.frame
        # the 50 missing revol_util: the column's median, before anything else
        frame["revol_util"] = frame["revol_util"].fillna(frame["revol_util"].median())
        y = (frame[d.target] == _TARGETS["loan"][1]).astype(int)
        X_train, X_test, y_train, y_test = train_test_split(
            frame[list(d.feature_names)], y, test_size=0.2, stratify=y, random_state=0
        )
        qi, classes = list(d.qi_sets["paper"]), [0, 1]
    elif name == "nursery":
        d = load_nursery()
        frame = d.frame
        X_train, X_test, y_train, y_test = train_test_split(
            frame[list(d.feature_names)],
            frame[d.target],
            test_size=0.2,
            stratify=frame[d.target],
            random_state=0,
        )
        qi, classes = list(d.feature_names), sorted(frame[d.target].unique().tolist())
    else:
        raise InputError(f"unknown dataset {name!r}; choose from adult, loan, nursery")
    for what, n in (("n_train", n_train), ("n_test", n_test)):
        if n is not None and (
            isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 20
        ):
            raise InputError(f"{what}={n!r} must be None (all rows) or an integer >= 20")
    if n_train is not None:
        X_train, y_train = X_train.iloc[:n_train], y_train.iloc[:n_train]
    if n_test is not None:
        X_test, y_test = X_test.iloc[:n_test], y_test.iloc[:n_test]
    cat = list(d.categorical_features)
    num = [c for c in d.feature_names if c not in set(cat)]
    return TableData(
        name=name,
        X_train=X_train.reset_index(drop=True),
        X_test=X_test.reset_index(drop=True),
        y_train=np.asarray(y_train),
        y_test=np.asarray(y_test),
        categorical=cat,
        numeric=num,
        qi=qi,
        classes=classes,
        categories=_categories(frame, cat),
        ranges=dict(PUBLIC_RANGES.get(name, {})),
    )


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


class AnonymizeThenTrain(ClassifierMixin, BaseEstimator):
    """Train, k-anonymize the training data along the model's predictions, retrain.

    The whole accuracy-guided procedure of Goldsteen et al. (2022) as one estimator, so an
    attack that trains shadow models (LiRA, RMIA) can repeat it on other data: it knows the
    algorithm, only the records differ.

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
        first = clone(self.estimator).fit(X, y)
        guide = first.predict(X)
        ag = AccuracyGuidedAnonymizer(
            k=self.k,
            quasi_identifiers=self.quasi_identifiers,
            random_state=self.random_state,
            **params,
        )
        X_anon = ag.fit_transform(X, guide)
        self.initial_estimator_ = first
        self.anonymizer_ = ag
        self.estimator_ = clone(self.estimator).fit(X_anon, y)
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)


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
            mia_accuracy=r.accuracy,
            mia_precision=r.precision,
            mia_recall=r.recall,
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
                "note": "network rows skipped: PyTorch is not installed "
                f"({install_hint('torch')})",
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


# =============================================================================================
# Table 2
# =============================================================================================
def _attribute_row(data: TableData, seed: int, k: int, cfg_feature: str, positive: Any) -> dict:
    from anonml.anonymize import AccuracyGuidedAnonymizer
    from anonml.attacks import (
        AttributeInferenceBaseline,
        AttributeInferenceBlackBox,
        Target,
        WorstCaseAttribute,
    )

    t0 = time.perf_counter()
    model = clone(make_model("dt", data, seed)).fit(data.X_train, data.y_train)
    row: dict[str, Any] = {
        "dataset": data.name,
        "model": "dt",
        "defense": "none",
        "k": 0,
        "epsilon": math.nan,
        "seed": seed,
    }
    if k:
        guide = model.predict(data.X_train)
        ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=data.qi, random_state=seed, **AG_PAPER)
        X_anon = ag.fit_transform(data.X_train, guide)
        model = clone(make_model("dt", data, seed)).fit(X_anon, data.y_train)
        row.update(
            defense="ag", k=k, n_groups=int(ag.n_groups_), min_class_size=int(ag.min_class_size_)
        )
    row.update(_accuracies(model, data), seconds_train=round(time.perf_counter() - t0, 2))
    target = Target(model, data.X_train, data.y_train, data.X_test, data.y_test)
    bb = AttributeInferenceBlackBox(
        cfg_feature, positive_value=positive, random_state=seed, n_jobs=1
    ).run(target)
    base = AttributeInferenceBaseline(
        cfg_feature, positive_value=positive, random_state=seed, n_jobs=1
    ).run(target)
    wc = WorstCaseAttribute(features=[cfg_feature]).run(target)[cfg_feature]
    row.update(
        attr_accuracy=bb.accuracy,
        attr_precision=bb.precision,
        attr_recall=bb.recall,
        attr_nonmember_accuracy=bb.nonmember_accuracy,
        attr_baseline_accuracy=base.accuracy,
        attr_baseline_precision=base.precision,
        attr_baseline_recall=base.recall,
        attr_majority_accuracy=bb.baseline_accuracy,
        arr=wc.arr,
        arr_pvalue=wc.pvalue,
        arr_train_rate=wc.train_rate,
        arr_test_rate=wc.test_rate,
        seconds_total=round(time.perf_counter() - t0, 2),
    )
    return row


def run_table2(
    seeds: Sequence[int] = (0, 1, 2),
    k: int = 100,
    n_jobs: int = 2,
    *,
    attack_feature: str = "social",
    positive_value: Any = "problematic",
    n_train: int | None = None,
    n_test: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Table 2: a decision tree on Nursery, undefended vs AG at ``k``, and attribute attacks.

    Returns one row per (defense, seed) with test accuracy, the black-box attribute attack on
    ``attack_feature`` (accuracy; precision and recall of ``positive_value``), the same attack
    model without the target's output, the majority guess, and the worst-case ARR of
    ``attack_feature`` with its p-value (see the module docstring).
    """
    from joblib import delayed

    seeds = _check_ints("seeds", seeds, 0)
    (k,) = _check_ints("k", (k,), 2)
    data = load_data("nursery", n_train, n_test)
    if attack_feature not in data.X_train.columns:
        raise InputError(
            f"attack_feature {attack_feature!r} is not a Nursery column; use one of "
            f"{', '.join(data.X_train.columns)}"
        )
    tasks = [
        delayed(_attribute_row)(data, s, kk, attack_feature, positive_value)
        for s in seeds
        for kk in (0, k)
    ]
    return _order(pd.DataFrame(_run_tasks(tasks, n_jobs, progress, "Table 2 runs")))


# =============================================================================================
# summaries and outputs
# =============================================================================================
_T1_METRICS = (
    "train_acc",
    "test_acc",
    "test_majority_acc",
    "train_acc_anonymized",
    "mia_accuracy",
    "mia_precision",
    "mia_recall",
    "mia_auc",
    "mia_advantage",
    "mia_tpr_fpr0_1pct",
    "lira_auc",
    "lira_tpr_fpr0_1pct",
    "lira_tpr_fpr1pct",
    "rmia_auc",
    "rmia_tpr_fpr0_1pct",
    "rmia_tpr_fpr1pct",
    "worstcase_auc",
    "n_groups",
    "epsilon_spent",
    "seconds_train",
    "seconds_attacks",
    "seconds_lira",
)
_T2_METRICS = (
    "train_acc",
    "test_acc",
    "attr_accuracy",
    "attr_precision",
    "attr_recall",
    "attr_nonmember_accuracy",
    "attr_baseline_accuracy",
    "attr_baseline_precision",
    "attr_baseline_recall",
    "attr_majority_accuracy",
    "arr",
    "arr_pvalue",
    "arr_train_rate",
    "arr_test_rate",
    "n_groups",
)
_KEYS = ["dataset", "model", "defense", "k", "epsilon"]


def _setting(defense: str, k: Any, epsilon: Any, model: str) -> str:
    if defense == "none":
        return "undefended"
    if defense == "ag":
        return f"AG k={int(k)}"
    if model == "nn":
        return f"DP-SGD ε={epsilon:g}"
    return f"DP forest ε={epsilon:g}"


def _summarize(results: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    r = results[results["seed"] >= 0] if "seed" in results else results
    present = [m for m in metrics if m in r.columns]
    g = r.groupby(_KEYS, dropna=False, sort=False)
    parts = {"n_seeds": g["seed"].nunique()}
    for m in present:
        parts[f"{m}_mean"] = g[m].mean()
        parts[f"{m}_std"] = g[m].std()
    if "lira_auc" in r.columns:
        parts["n_seeds_lira"] = g["lira_auc"].count()
    out = pd.DataFrame(parts).reset_index()
    out.insert(
        5,
        "setting",
        [_setting(d, k, e, m) for d, k, e, m in zip(out.defense, out.k, out.epsilon, out.model)],
    )
    return _order(out.assign(seed=0)).drop(columns="seed")


def summarize_table1(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per (dataset, model, defense, k, ε)."""
    return _summarize(results, _T1_METRICS)


def summarize_table2(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per defense (Nursery, decision tree)."""
    return _summarize(results, _T2_METRICS)


def _cell(row: pd.Series, metric: str, digits: int = 3) -> str:
    m, s = row.get(f"{metric}_mean", math.nan), row.get(f"{metric}_std", math.nan)
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "–"
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


_NAMES = {
    "adult": "Adult",
    "loan": "Loan (LendingClub 2007-2011 stand-in)",
    "nursery": "Nursery",
    "rf": "random forest",
    "nn": "neural network (1024-512-256 tanh)",
    "dt": "decision tree",
}


def markdown_table1(summary: pd.DataFrame, results: pd.DataFrame | None = None) -> str:
    """The Markdown of Table 1: one table per (dataset, model), paper comparison, claim checks."""
    cols = [
        ("train acc", "train_acc"),
        ("test acc", "test_acc"),
        ("MIA acc", "mia_accuracy"),
        ("MIA prec", "mia_precision"),
        ("MIA rec", "mia_recall"),
        ("MIA AUC", "mia_auc"),
        ("MIA TPR@0.1%", "mia_tpr_fpr0_1pct"),
        ("LiRA AUC", "lira_auc"),
        ("LiRA TPR@0.1%", "lira_tpr_fpr0_1pct"),
        ("LiRA TPR@1%", "lira_tpr_fpr1pct"),
        ("worst-case AUC", "worstcase_auc"),
    ]
    if "rmia_auc_mean" in summary.columns:
        cols += [("RMIA AUC", "rmia_auc"), ("RMIA TPR@0.1%", "rmia_tpr_fpr0_1pct")]
    lines = []
    for (d, m), part in summary.groupby(["dataset", "model"], sort=False):
        n = int(part["n_seeds"].max())
        lira = ""
        if (
            "n_seeds_lira" in part.columns
            and part["n_seeds_lira"].max() > 0
            and results is not None
        ):
            ns = results.loc[
                (results.dataset == d) & (results.model == m), "lira_n_shadow"
            ].dropna()
            lira = (
                (
                    f"; LiRA with {int(ns.max())} shadow models on "
                    f"{int(part['n_seeds_lira'].max())} seed(s)"
                )
                if len(ns)
                else ""
            )
        lines.append(
            f"\n### {_NAMES.get(d, d)}, {_NAMES.get(m, m)} ({n} seeds, mean ± std{lira})\n"
        )
        lines.append("| setting | " + " | ".join(c for c, _ in cols) + " | seeds |")
        lines.append("|---|" + "---:|" * (len(cols) + 1))
        for _, row in part.iterrows():
            lines.append(
                f"| {row.setting} | "
                + " | ".join(_cell(row, key) for _, key in cols)
                + f" | {int(row.n_seeds)} |"
            )
        if results is not None and "note" in results.columns:
            notes = (
                results.loc[(results.dataset == d) & (results.model == m), "note"].dropna().unique()
            )
            lines += [f"\n*Note: {x}.*" for x in notes]
    if results is not None and "seed" in results.columns:
        skipped = results[results["seed"] < 0]
        lines += [f"\n*{r.dataset}, {r.model}: {r.note}.*" for r in skipped.itertuples()]
    lines.append(
        _paper_comparison(
            summary,
            PAPER_TABLE1,
            [("train acc", "train_acc"), ("test acc", "test_acc"), ("attack acc", "mia_accuracy")],
        )
    )
    lines.append(_claims_table1(summary))
    return "\n".join(lines) + "\n"


def _paper_comparison(summary: pd.DataFrame, paper: pd.DataFrame, metrics: list) -> str:
    lines = [
        "\n### Comparison with the paper\n",
        "| dataset | model | setting | "
        + " | ".join(f"{n} (paper)" + f" | {n} (ours)" for n, _ in metrics)
        + " |",
        "|---|---|---|" + "---:|---:|" * len(metrics),
    ]
    found = 0
    for p in paper.itertuples():
        hit = summary[
            (summary.dataset == p.dataset)
            & (summary.model == p.model)
            & (summary.defense == p.defense)
            & (summary.k == p.k)
        ]
        if hit.empty:
            continue
        found += 1
        row = hit.iloc[0]
        cells = []
        for _, key in metrics:
            ref = getattr(p, key)
            cells += ["–" if pd.isna(ref) else f"{ref:.2f}", _cell(row, key)]
        lines.append(f"| {p.dataset} | {p.model} | {row.setting} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if found else ""


def _points(x: float) -> str:
    """A difference of accuracies in points, signed, without a negative zero."""
    return f"{round(100 * x, 1) + 0.0:+.1f}"


def _span(values: pd.Series) -> str:
    lo, hi = float(values.min()), float(values.max())
    return f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"


def _claims_table1(summary: pd.DataFrame) -> str:
    """Sentences computed from the numbers: attack figures and accuracy cost of AG and DP."""
    lines = ["\n### What the numbers say about the paper's claims (computed)\n"]
    for (d, m), part in summary.groupby(["dataset", "model"], sort=False):
        base = part[part.defense == "none"]
        if base.empty or "mia_accuracy_mean" not in part.columns:
            continue
        b = base.iloc[0]
        extra = [
            (name, f"{key}_mean")
            for name, key in (("LiRA AUC", "lira_auc"), ("worst-case AUC", "worstcase_auc"))
            if f"{key}_mean" in part.columns
        ]

        def figures(rows: pd.DataFrame, extra: list = extra) -> str:
            out = f"attack accuracy {_span(rows.mia_accuracy_mean)}"
            for name, col in extra:
                if rows[col].notna().any():
                    out += f", {name} {_span(rows[col].dropna())}"
            return out

        text = f"* **{d}, {m}**: undefended: test accuracy {b.test_acc_mean:.3f}, {figures(base)}."
        if "test_majority_acc_mean" in part.columns and not pd.isna(b.test_majority_acc_mean):
            flat = part[(part.test_acc_mean - b.test_majority_acc_mean).abs() < 0.005]
            if len(flat):
                text += (
                    f" Test accuracy within half a point of always guessing the majority class "
                    f"({b.test_majority_acc_mean:.3f}): {', '.join(flat.setting)}; accuracy does not "
                    "show what these models learned."
                )
        ag = part[part.defense == "ag"]
        if not ag.empty:
            change = ag.test_acc_mean - b.test_acc_mean
            text += (
                f" AG (k = {', '.join(str(int(x)) for x in ag.k)}): {figures(ag)}; test accuracy "
                f"change {_points(change.min())} to {_points(change.max())} points."
            )
            near = ag[ag.mia_accuracy_mean <= 0.52]
            if near.empty:
                text += " No k brings the attack accuracy down to 0.52 or below."
            else:
                k0 = int(near.k.min())
                c0 = near[near.k == k0].test_acc_mean.iloc[0] - b.test_acc_mean
                text += (
                    f" The smallest k with attack accuracy at most 0.52 (chance: 0.5) is {k0}, at a "
                    f"test accuracy change of {_points(c0)} points."
                )
        for _, r in part[part.defense == "dp"].iterrows():
            text += (
                f" {r.setting}: test accuracy {r.test_acc_mean:.3f} "
                f"({_points(r.test_acc_mean - b.test_acc_mean)} points), {figures(pd.DataFrame([r]))}."
            )
        lines.append(text)
    return "\n".join(lines)


def markdown_table2(summary: pd.DataFrame) -> str:
    """The Markdown of Table 2 with the paper's figures."""
    cols = [
        ("train acc", "train_acc"),
        ("test acc", "test_acc"),
        ("attack acc", "attr_accuracy"),
        ("attack prec", "attr_precision"),
        ("attack rec", "attr_recall"),
        ("attack acc, non-members", "attr_nonmember_accuracy"),
        ("no-output baseline acc", "attr_baseline_accuracy"),
        ("majority guess", "attr_majority_accuracy"),
        ("worst-case ARR", "arr"),
        ("ARR p-value", "arr_pvalue"),
    ]
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [
        f"\n### Nursery, decision tree, attribute `social` ({n} seeds, mean ± std)\n",
        "| setting | " + " | ".join(c for c, _ in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for _, row in summary.iterrows():
        lines.append(f"| {row.setting} | " + " | ".join(_cell(row, key) for _, key in cols) + " |")
    lines.append(
        _paper_comparison(
            summary, PAPER_TABLE2, [("test acc", "test_acc"), ("attack acc", "attr_accuracy")]
        )
    )
    lines.append(_NURSERY_NOTE)
    return "\n".join(lines) + "\n"


_NURSERY_NOTE = """
*Reading the attack columns.* Nursery is a full factorial design: every combination of the 8
features occurs exactly once, so each combination of the other 7 features occurs once with each of
the 3 values of `social`. An attack model that learns from some training records and is evaluated
on others therefore sees, for the same other features, the *other* values of `social`: it is pushed
below the majority guess (1/3), and the no-output baseline (same attack model without the target's
output) shows how far. The black-box attack reveals something about `social` only by as much as it
beats that baseline, and something about the *training* records only by as much as it beats its own
accuracy on non-members (test records).
"""


_PROTOCOL = """\
Reproduces Goldsteen et al. (2022), "Anonymizing Machine Learning Models", Tables 1 and 2, with
`anonml.attacks` and `anonml.dp`. The protocol, the public knowledge given to the DP models and the
simplifications are in the docstring of `anonml/experiments/attack_tables.py`. In short: fixed
splits (Adult published, Loan and Nursery stratified 80/20 with `random_state=0`); AG is the paper's
method guided by the undefended model's predictions, the model is then retrained on the anonymized
data; every membership attack attacks the released model with the *original* training records as
members and the test records as non-members (balanced); black-box MIA = attacker knows half the
members and as many non-members, random-forest attack model on (probabilities, one-hot label); LiRA
= online, shadows repeat the whole training procedure (train, anonymize, retrain), global variance
below 64 shadows; worst-case = SACRO-ML's attack, mean AUC over random 80/20 splits.
"""


def write_outputs(
    table1: pd.DataFrame | None,
    table2: pd.DataFrame | None,
    out_dir: str | Path,
    name1: str = "attack_table1",
    name2: str = "attack_table2",
    header: str | None = None,
) -> dict[str, Path]:
    """Write each table's raw rows, summary (CSV) and Markdown with :func:`write_bundle`.

    Returns the paths, keys prefixed ``table1_`` / ``table2_``. ``header`` (e.g. the command and
    its wall time) is put at the top of each Markdown file.
    """
    from anonml.experiments._output import write_bundle

    paths: dict[str, Path] = {}
    top = (header.rstrip() + "\n\n") if header else ""
    if table1 is not None:
        s1 = summarize_table1(table1)
        md = f"# Membership attacks: undefended vs AG vs DP (Table 1)\n\n{top}{_PROTOCOL}{markdown_table1(s1, table1)}"
        for key, p in write_bundle(out_dir, name1, table1, s1.round(5), md).items():
            paths[f"table1_{key}"] = p
    if table2 is not None:
        s2 = summarize_table2(table2)
        md = f"# Attribute inference: undefended vs AG (Table 2)\n\n{top}{_PROTOCOL}{markdown_table2(s2)}"
        for key, p in write_bundle(out_dir, name2, table2, s2.round(5), md).items():
            paths[f"table2_{key}"] = p
    return paths


def reproduce(
    out_dir: str | Path = "docs/results",
    *,
    datasets: Sequence[str] = DATASETS,
    models: Sequence[str] = MODELS,
    seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    lira_shadows: Mapping[str, int] | int | None = None,
    lira_seeds: Sequence[int] | None = (0,),
    dpsgd_seeds: Sequence[int] | None = (0,),
    table2: bool = True,
    command: str | None = None,
    progress: Callable[[str], None] | None = None,
    **table1_options: Any,
) -> dict[str, Path]:
    """Both tables in stages (Table 2, then Table 1 one model type at a time), writing the
    outputs after every stage, so an interrupted run leaves its finished part on disk.

    The defaults are the budget of the published run (docs/results/attack_table1.md): LiRA
    with 8 shadow models for the forests on seed 0 only (``lira_shadows={"rf": 8, "nn": 0}``,
    ``lira_seeds=(0,)``), DP-SGD on seed 0 only. ``table1_options`` go to :func:`run_table1`.
    Each Markdown file starts with ``command`` and the wall time at the moment it was written.
    """
    start = time.perf_counter()
    shadows = {"rf": 8, "nn": 0} if lira_shadows is None else lira_shadows
    cmd = f"Command: `{command}`. " if command else ""

    def header(stage: str) -> str:
        return f"{cmd}Wall time {time.perf_counter() - start:.0f} s ({stage})."

    paths: dict[str, Path] = {}
    # check every choice before any work, so a typo writes nothing
    models = _check_choice("models", models, MODELS)
    datasets = _check_choice("datasets", datasets, DATASETS)
    _check_ints("seeds", seeds, 0)
    if table2:
        t2 = run_table2(seeds, n_jobs=n_jobs, progress=progress)
        paths.update(write_outputs(None, t2, out_dir, header=header("Table 2 complete")))
    parts: list[pd.DataFrame] = []
    for i, m in enumerate(models):
        parts.append(
            run_table1(
                datasets,
                (m,),
                seeds=seeds,
                n_jobs=n_jobs,
                lira_shadows=shadows,
                lira_seeds=lira_seeds,
                dpsgd_seeds=dpsgd_seeds,
                progress=progress,
                **table1_options,
            )
        )
        done = ", ".join(models[: i + 1])
        stage = "complete" if i == len(models) - 1 else f"partial: models {done} done"
        paths.update(
            write_outputs(
                _order(pd.concat(parts, ignore_index=True)),
                None,
                out_dir,
                header=header(f"Table 1 {stage}"),
            )
        )
    return paths
