"""The tables' data: Adult and Lending Club with their public codebooks. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.experiments._data import Split
from anonml.experiments.attack_tables._constants import _TARGETS, PUBLIC_RANGES


# =============================================================================================
# data
# =============================================================================================
@dataclass
class TableData(Split):
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
