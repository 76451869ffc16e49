"""The train/test split every experiment starts from, and Adult's published one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["Split", "adult_split"]


@dataclass
class Split:
    """Training and test records with their labels, and which features are categorical.

    Each experiment's data class extends it with what that experiment needs (quasi-identifier
    sets, a ranking, public codebooks).
    """

    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: Any
    y_test: Any
    categorical: list
    numeric: list


def adult_split(n_train: int | None = None, n_test: int | None = None) -> tuple[Any, Split]:
    """Adult (:func:`anonml.datasets.load_adult`) and its published train/test split, labels
    1 for income ``>50K`` and 0 otherwise (integer labels: the networks' early stopping needs
    them before scikit-learn 1.9), keeping only the first ``n_train`` / ``n_test`` rows of a
    part when given."""
    from anonml.datasets import load_adult

    d = load_adult()
    X_train, X_test, y_train, y_test = d.train_test_split()
    y_train, y_test = (y_train == ">50K").astype(int), (y_test == ">50K").astype(int)
    if n_train is not None and n_train < len(X_train):
        X_train, y_train = X_train.iloc[:n_train], y_train.iloc[:n_train]
    if n_test is not None and n_test < len(X_test):
        X_test, y_test = X_test.iloc[:n_test], y_test.iloc[:n_test]
    cat = list(d.categorical_features)
    num = [c for c in d.feature_names if c not in set(cat)]
    return d, Split(X_train, X_test, y_train, y_test, cat, num)
