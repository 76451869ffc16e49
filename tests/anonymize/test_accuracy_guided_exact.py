"""AccuracyGuidedAnonymizer's exact tree (scikit-learn's, as in the paper) grown on the
distinct rows weighted by their counts: the same tree, the same leaves, the same estimator as
on every row; and the output's own k check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from anonml import AccuracyGuidedAnonymizer as AG
from anonml.anonymize._accuracy_guided import _distinct_rows
from anonml.datasets import load_adult

TREE_ARRAYS = ("feature", "threshold", "children_left", "children_right", "value",
               "n_node_samples", "weighted_n_node_samples", "impurity", "max_depth",
               "node_count", "n_leaves")


@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    return d.X.iloc[:4000].reset_index(drop=True), d.y.iloc[:4000].reset_index(drop=True), d


def _plain(ag: AG, X: pd.DataFrame, y) -> DecisionTreeClassifier:
    """The tree on every row, as before the weighted fit."""
    with ag.encoder_.memoize(X[ag.encoder_.columns]):
        M = ag.encoder_.onehot(X)
    y_codes = pd.factorize(pd.Series(np.asarray(y)), sort=True)[0]
    return DecisionTreeClassifier(criterion=ag.tree_.criterion, min_samples_leaf=ag.k,
                                  max_depth=ag.max_depth, random_state=ag.random_state
                                  ).fit(M, y_codes), M


@pytest.mark.parametrize(("qi_set", "k", "criterion", "max_depth", "seed", "label"), [
    ("8", 2, "gini", None, 0, "income"),
    ("8", 7, "entropy", None, 1, "income"),
    ("8", 50, "gini", 6, 7, "income"),
    ("12", 5, "log_loss", None, 3, "income"),
    ("10", 10, "gini", None, 0, "three"),  # three classes
    ("8", 3, "gini", None, 11, "three"),
])
def test_weighted_fit_is_the_tree_on_every_row(adult, qi_set, k, criterion, max_depth, seed,
                                               label) -> None:
    X, y, d = adult
    qi = list(d.qi_sets[qi_set])
    if label == "three":  # a label of three classes, repeated rows keep theirs
        y = pd.Series(np.asarray(X["age"]) % 3)
    ag = AG(k=k, quasi_identifiers=qi, criterion=criterion, max_depth=max_depth,
            random_state=seed, tree="exact").fit(X, y)
    first, inverse, counts = _distinct_rows(ag.encoder_, X[qi], ag._check_target(y, len(X))[0])
    assert first.size < len(X)  # rows do repeat: the weighted fit ran
    assert counts.sum() == len(X) and np.array_equal(inverse[first], np.arange(first.size))
    ref, M = _plain(ag, X[qi], y)
    for a in TREE_ARRAYS:
        np.testing.assert_array_equal(getattr(ag.tree_.tree_, a), getattr(ref.tree_, a), a)
    assert ag.tree_.get_params() == ref.get_params()
    assert ag.tree_.min_samples_leaf == k and ag.tree_.min_weight_fraction_leaf == 0.0
    np.testing.assert_array_equal(ag.tree_.classes_, ref.classes_)
    # the training rows' groups are the leaves of the tree on every row
    leaves = ref.apply(M)
    _, groups_of_leaves = np.unique(leaves, return_inverse=True)
    if ag.refine == "mondrian":
        ag_none = AG(k=k, quasi_identifiers=qi, criterion=criterion, max_depth=max_depth,
                     random_state=seed, tree="exact", refine="none").fit(X, y)
        np.testing.assert_array_equal(ag_none.groups_, groups_of_leaves)


def test_no_repeated_rows_fit_every_row() -> None:
    """Distinct rows only: the plain fit (the weights would change nothing)."""
    X = pd.DataFrame({"a": np.arange(40), "b": np.arange(40) % 7})
    y = np.arange(40) % 2
    ag = AG(k=4, quasi_identifiers=["a", "b"], random_state=0, tree="exact").fit(X, y)
    assert ag.tree_.tree_.n_node_samples[0] == 40 and ag.min_class_size_ >= 4


def test_verify_k_anonymity_counts_the_classes_below_k() -> None:
    """The output's own check: the smallest class when it is >= k, else an error naming how
    many classes are below k and the smallest."""
    from anonml._errors import PrivacyViolationError
    from anonml.anonymize._pipeline import verify_k_anonymity

    t = pd.DataFrame({"age": [30, 30, 30, 40, 50, 50], "sex": ["F", "F", "F", "M", "M", "M"]})
    assert verify_k_anonymity(t.iloc[[0, 1, 2, 4, 5]], ["age", "sex"], 2) == 2
    with pytest.raises(PrivacyViolationError, match=r"has 1 equivalence classes smaller than "
                       r"k=2 \(smallest 1\)"):
        verify_k_anonymity(t, ["age", "sex"], 2)
    with pytest.raises(PrivacyViolationError, match=r"has 2 equivalence classes smaller than "
                       r"k=3 \(smallest 1\)"):
        verify_k_anonymity(t, ["age"], 3)
