"""Fixtures shared by the test modules.

* ``adult_sample``: a fixed 3,000-row training and 600-row test sample of the bundled Adult
  data (X_train, X_test, y_train, y_test), built once per session.
* ``expected_failed_checks``: scikit-learn's ``parametrize_with_checks`` arguments for
  anonml's estimators (see ``tests/test_estimator_contract.py``).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def adult_sample():
    from anonml.datasets import load_adult

    d = load_adult()
    Xtr, Xte, ytr, yte = d.train_test_split()
    return (Xtr.iloc[:3000].reset_index(drop=True), Xte.iloc[:600].reset_index(drop=True),
            ytr.iloc[:3000].reset_index(drop=True), yte.iloc[:600].reset_index(drop=True))
