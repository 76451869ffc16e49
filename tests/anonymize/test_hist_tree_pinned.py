"""The histogram tree's output, pinned: a change made for speed must leave the tree, the groups,
the representatives and the released table bit for bit as they were.

The digests were computed with the code of ``3fb33b4`` (before the 32-bit row indices and the
per-level routing tables of issue 21, item 6). A digest that changes means the output changed:
if that is intended, say why in the commit and recompute them with the old code's output.
The "squared_error" tree's digests were recomputed with ``019985c``'s code when its target
became machine-independent (``age * sqrt(age)``, see ``_regression_target``).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from anonml import AccuracyGuidedAnonymizer
from anonml.anonymize._hist_tree import HistTree
from anonml.datasets import load_adult


def _digest(*arrays: np.ndarray) -> str:
    d = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        d.update(str(a.dtype).encode())
        d.update(str(a.shape).encode())
        d.update(a.tobytes())
    return d.hexdigest()[:16]


def _tree(t: HistTree) -> str:
    return _digest(t.feature_, t.threshold_, t.children_left_, t.children_right_, t.offset_, t.flat_)


def _frame(df: pd.DataFrame) -> str:
    """Every column's name, codes and distinct values as text (the same under pandas 2's object
    and pandas 3's ``str`` columns), and the index."""
    d = hashlib.sha256(repr(list(df.index[:3])).encode() + str(len(df)).encode())
    for c in df.columns:
        codes, uniques = pd.factorize(df[c], use_na_sentinel=True)
        d.update(f"{c}|{[str(u) for u in uniques]}".encode())
        d.update(np.asarray(codes, dtype=np.int64).tobytes())
    return d.hexdigest()[:16]


@pytest.fixture(scope="module")
def adult():
    data = load_adult()
    X, _, y, _ = data.train_test_split()
    return X, y, list(data.qi_sets["12"])


@pytest.mark.parametrize("criterion, k, max_depth, rule, expected", [
    ("gini", 10, None, "majority_medoid",
     ("8b7c54424cf9c299", "7bb9a4872ea72c96", "dda84570e02cde5e", "8305816cff91c91b",
      "a52479b8986283d8")),
    ("entropy", 50, None, "per_feature",
     ("c8ddc5464832d071", "3a808ad1e41055c8", "9d5e8bcfd27d0456", "95147d33517748bb",
      "6bdfb12b9ce4e313")),
    ("gini", 5, 6, "per_feature_joint",
     ("40316253556dd792", "45ab470de3b3ba46", "3c69fd422cf79383", "d365ee521ab36306",
      "f2bf81446fd15486")),
    ("gini", 100, None, "medoid",
     ("3d81685fa37772be", "4f01bbf3af378067", "02280fa607d4911c", "53023b3c94f37b8b",
      "201d0e71aa722cc4")),
])
def test_accuracy_guided_hist_output_is_unchanged(adult, criterion, k, max_depth, rule, expected):
    X, y, qi = adult
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree="hist", criterion=criterion,
                                  max_depth=max_depth, representative=rule, random_state=0)
    out = ag.fit_transform(X, y)
    got = (_tree(ag.tree_), _tree(ag.refine_tree_), _digest(ag.groups_),
           _frame(ag.representatives_), _frame(out))
    assert got == expected


@pytest.fixture(scope="module")
def adult_bins(adult):
    X, _, qi = adult
    enc_cols = [c for c in qi if c != "hours-per-week"]
    ag = AccuracyGuidedAnonymizer(k=20, quasi_identifiers=enc_cols, tree="hist", random_state=0)
    ag.fit(X, _regression_target(X))
    return ag.encoder_.bins(X[ag.encoder_.columns])


def _regression_target(X: pd.DataFrame) -> np.ndarray:
    # age ** 1.5 as age * sqrt(age): numpy's power is not correctly rounded where it uses
    # AVX-512's vector library, so its last bit (and a near-tie between two splits) depended on
    # the machine; sqrt and * are correctly rounded everywhere
    age = X["age"].to_numpy(dtype=float)
    return X["hours-per-week"].to_numpy(dtype=float) * 1.37 + age * np.sqrt(age)


def test_accuracy_guided_hist_regression_output_is_unchanged(adult):
    X, _, qi = adult
    ag = AccuracyGuidedAnonymizer(k=20, quasi_identifiers=[c for c in qi if c != "hours-per-week"],
                                  tree="hist", random_state=0)
    out = ag.fit_transform(X, _regression_target(X))
    assert (_digest(ag.groups_), _frame(out)) == ("af85586244c5f3f1", "bcdab81ee77270e2")


@pytest.mark.parametrize("criterion, expected", [
    ("gini", ("644fdf50f89ae611", "84e9e46375058db6", "fdc84a04faeeda77")),
    ("entropy", ("575b154e9e60e591", "e713cc0d7ad44515", "5791eda082277513")),
    ("squared_error", ("dcb14ecc2b873f11", "555ce232e9d8c669", "e0f58f31fcc33065")),
    ("mondrian", ("fcc244aaa1f71051", "a791a087cd39349f", "4aa6c41204081ba1")),
])
def test_hist_tree_fit_and_apply_are_unchanged(adult, adult_bins, criterion, expected):
    X, y, _ = adult
    B, is_cat, n_bins = adult_bins
    target = {"gini": np.asarray(pd.factorize(y)[0]),
              "entropy": (X["age"].to_numpy() // 10) % 5,
              "squared_error": _regression_target(X), "mondrian": None}[criterion]
    init = (X["age"].to_numpy() > 40).astype(np.int64) if criterion == "mondrian" else None
    tree = HistTree(7, None, criterion)
    leaves = tree.fit_apply(B, is_cat, n_bins, target, init=init)
    again = tree.apply(B[::-1], init=None if init is None else init[::-1])
    assert (_tree(tree), _digest(leaves), _digest(again)) == expected
