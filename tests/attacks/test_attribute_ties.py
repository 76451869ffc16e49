"""The worst-case attribute attack is reproducible to the bit: ties within 1e-9 are ties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from anonml.attacks._attribute_worst_case import TIE_TOL, WorstCaseAttribute, _top_class
from anonml.attacks._core import Target
from anonml.datasets import load_adult


class Jitter:
    """A fitted model whose probabilities move in the last digits from call to call, as a
    forest summing its trees on several threads does."""

    def __init__(self, model, seed):
        self.model, self.rng = model, np.random.default_rng(seed)
        self.classes_ = model.classes_

    def predict_proba(self, X):
        p = self.model.predict_proba(X)
        return p + self.rng.uniform(-4e-16, 4e-16, size=p.shape)

    def predict(self, X):
        return self.model.classes_[np.argmax(self.model.predict_proba(X), axis=1)]


@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    f = d.frame
    cols = ["age", "sex", "race", "marital-status", "education-num", "relationship", "income"]
    tr = f[d.split == "train"].sample(500, random_state=1)[cols]
    te = f[d.split == "test"].sample(500, random_state=1)[cols]
    return (tr.drop(columns="income"), tr["income"], te.drop(columns="income"), te["income"])


def _forest(X, n_jobs):
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    return make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        RandomForestClassifier(n_estimators=60, min_samples_leaf=3, n_jobs=n_jobs,
                               random_state=0))


def _numbers(target, label="true"):
    res = WorstCaseAttribute(["age", "race", "marital-status", "education-num"],
                             categorical_features=["race", "marital-status"], label=label,
                             max_records=300, random_state=0).run(target)
    return [(r.feature, r.train_risky, r.test_risky, r.arr_ci_low) for r in res.attributes]


def test_top_class_ignores_last_digit_noise():
    P = np.array([[0.5, 0.5], [0.5 + 1e-16, 0.5 - 1e-16], [0.5 - 1e-16, 0.5 + 1e-16],
                  [0.4, 0.6], [0.5 - 2 * TIE_TOL, 0.5 + 2 * TIE_TOL]])
    assert _top_class(P).tolist() == [0, 0, 0, 1, 1]


@pytest.mark.parametrize("label", ["true", "predicted"])
def test_last_digit_noise_does_not_move_the_result(adult, label):
    """Fails with exact equality: the jitter breaks the forest's many exact ties at random."""
    X, y, Xt, yt = adult
    model = _forest(X, 1).fit(X, y)
    runs = [_numbers(Target(Jitter(model, seed), X, y, Xt, yt), label) for seed in (1, 2, 3)]
    exact = _numbers(Target(model, X, y, Xt, yt), label)
    assert runs[0] == runs[1] == runs[2] == exact


def test_forest_on_all_cores_gives_identical_numbers(adult):
    X, y, Xt, yt = adult
    first = _numbers(Target(_forest(X, -1).fit(X, y), X, y, Xt, yt))
    second = _numbers(Target(_forest(X, -1).fit(X, y), X, y, Xt, yt))
    assert first == second
