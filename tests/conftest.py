"""Fixtures shared by the test modules.

* ``adult_split(n_train, n_test)``: the first ``n_train`` rows of the bundled Adult data's
  published training split and the first ``n_test`` of its test split, as
  ``(X_train, X_test, y_train, y_test)`` with fresh indices; the split is read once per session.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def adult_split():
    from anonml.datasets import load_adult

    d = load_adult()
    Xtr, Xte, ytr, yte = d.train_test_split()

    def take(n_train: int, n_test: int):
        return (Xtr.iloc[:n_train].reset_index(drop=True),
                Xte.iloc[:n_test].reset_index(drop=True),
                ytr.iloc[:n_train].reset_index(drop=True),
                yte.iloc[:n_test].reset_index(drop=True))

    return take
