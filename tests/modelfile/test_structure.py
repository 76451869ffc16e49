"""Structural measures against hand counts, slow references and definitions."""

from __future__ import annotations

import importlib.util
import json
import math
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.stats import ks_2samp
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError, NotFittedError
from anonml.modelfile import _structure
from anonml.modelfile._structure import count_params, group_rows, structural_measures


def slow_groups(M):
    """Reference: group sizes of identical rows with a Python dict."""
    sizes: dict[tuple, int] = {}
    for row in np.asarray(M).reshape(len(M), -1).tolist():
        key = tuple(0.0 if v == 0 else v for v in row)  # -0.0 == 0.0
        sizes[key] = sizes.get(key, 0) + 1
    return sorted(sizes.values())


def check_grouping(M):
    inverse, counts, first = group_rows(M)
    M2 = np.asarray(M).reshape(len(M), -1)
    assert sorted(counts.tolist()) == slow_groups(M2)
    assert np.array_equal(np.bincount(inverse, minlength=counts.size), counts)
    # every row equals its group's first row; first rows are distinct
    assert np.array_equal(M2, M2[first[inverse]])
    assert np.array_equal(inverse[first], np.arange(counts.size))


def _noisy(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, "yes", "no")
    return X, y


# --- the 3-leaf tree by hand -------------------------------------------------------------------
@pytest.fixture(scope="module")
def three_leaves():
    # x = 0: 4 records, all "a"; x = 1: 5 records, all "b"; x = 2: 11 records, 8 "a" and 3 "b"
    X = np.array([[0.0]] * 4 + [[1.0]] * 5 + [[2.0]] * 11)
    y = np.array(["a"] * 4 + ["b"] * 5 + ["a"] * 8 + ["b"] * 3)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert tree.get_n_leaves() == 3 and tree.tree_.node_count == 5
    return tree, X, y


def test_three_leaf_tree_by_hand(three_leaves):
    tree, X, y = three_leaves
    r = structural_measures(tree, X, y)
    assert r["equivalence_method"] == "leaves"
    assert (r["n_samples"], r["n_groups"], r["min_group_size"], r["min_leaf_size"]) == (20, 3, 4, 4)
    # groups of 4 and 5 are below 10
    assert r["n_small_groups"] == 2 and r["share_records_small_groups"] == pytest.approx(9 / 20)
    # the pure leaves (4 x "a", 5 x "b") have a zero probability; both are small
    assert r["zero_probability_groups"] == 2 and r["class_disclosure_groups"] == 2
    # cells 4, 5 and (8, 3): every leaf has a count in (0, 10)
    assert r["small_group_risk_groups"] == 3
    # 2 internal nodes x 2 + 3 leaves x (2 classes - 1)
    assert r["n_params"] == 7 and r["residual_dof"] == 13
    assert r["train_accuracy"] == pytest.approx(17 / 20)
    assert r["test_accuracy"] is None and r["generalisation_gap"] is None
    assert r["loss_ks_pvalue"] is None and r["gen_error_risk"] is None
    assert r["k_anonymity_risk"] and r["class_disclosure_risk"] and r["small_group_risk"]
    assert r["dof_risk"] is False


def test_three_leaf_tree_thresholds(three_leaves):
    tree, X, y = three_leaves
    r = structural_measures(tree, X, y, threshold=5, dof_threshold=14)
    assert r["n_small_groups"] == 1 and r["class_disclosure_groups"] == 1  # only the leaf of 4
    assert r["zero_probability_groups"] == 2  # SACRO-ML's count ignores size
    assert r["small_group_risk_groups"] == 2  # 4 "a" and 3 "b" are below 5; 5 "b" is not
    assert r["dof_risk"] is True  # 13 < 14
    r = structural_measures(tree, X, y, threshold=4)
    assert r["n_small_groups"] == 0 and r["k_anonymity_risk"] is False
    assert r["class_disclosure_groups"] == 0 and r["zero_probability_groups"] == 2
    assert r["small_group_risk_groups"] == 1  # 3 "b" in the big leaf


def test_dataframe_input_and_subclass(three_leaves):
    tree, X, y = three_leaves

    class SafeTree(DecisionTreeClassifier):  # as anonml's wrappers subclass the estimators
        pass

    frame = pd.DataFrame(X, columns=["x"])
    safe = SafeTree(random_state=0).fit(frame, pd.Series(y))
    r = structural_measures(safe, frame, pd.Series(y))
    assert r == structural_measures(tree, X, y)


# --- class disclosure on a hand-made probability table -----------------------------------------
class TableModel:
    """predict_proba looks the row's probabilities up by the value of column 0."""

    classes_ = np.array([10, 20])
    table: ClassVar[dict] = {0: [1.0, 0.0], 1: [0.5, 0.5], 2: [0.0, 1.0], 3: [0.95, 0.05]}

    def predict_proba(self, X):
        return np.array([self.table[int(v)] for v in np.asarray(X)[:, 0]])


def test_class_disclosure_on_hand_example():
    # group sizes: x=0: 3, x=1: 12, x=2: 15, x=3: 20
    X = np.repeat([0, 1, 2, 3], [3, 12, 15, 20])[:, None]
    y = np.where(X[:, 0] == 2, 20, 10)
    r = structural_measures(TableModel(), X, y)
    assert r["equivalence_method"] == "probabilities"
    assert r["n_groups"] == 4 and r["min_group_size"] == 3 and r["n_small_groups"] == 1
    assert r["min_leaf_size"] is None
    assert r["zero_probability_groups"] == 2  # x=0 and x=2
    assert r["class_disclosure_groups"] == 1  # only x=0 has fewer than 10 records
    # cells: (3, 0) yes; (6, 6) yes; (0, 15) no; (19, 1) yes
    assert r["small_group_risk_groups"] == 3
    assert r["n_params"] is None and r["residual_dof"] is None and r["dof_risk"] is None
    # predictions: x=0 -> 10 (right), x=1 -> 10 (tie, first class; right), x=2 -> 20, x=3 -> 10
    assert r["train_accuracy"] == 1.0


# --- generalisation ----------------------------------------------------------------------------
def test_generalisation_gap_sign_and_ks():
    X, y = _noisy(600)
    Xt, yt = _noisy(600, seed=1)
    deep = DecisionTreeClassifier(random_state=0).fit(X, y)  # memorizes noisy labels
    r = structural_measures(deep, X, y, Xt, yt)
    assert r["train_accuracy"] == 1.0
    assert r["test_accuracy"] == pytest.approx(np.mean(deep.predict(Xt) == yt))
    assert (
        r["generalisation_gap"] == pytest.approx(1.0 - r["test_accuracy"])
        and r["generalisation_gap"] > 0
    )
    assert r["loss_ks_pvalue"] < 0.05 and r["gen_error_risk"] is True
    # the KS p-value is that of the per-record log-losses
    col = {c: i for i, c in enumerate(deep.classes_)}
    p_tr = deep.predict_proba(X)[np.arange(len(y)), [col[v] for v in y]]
    p_te = deep.predict_proba(Xt)[np.arange(len(yt)), [col[v] for v in yt]]
    loss = lambda p: -np.log(np.clip(p, 1e-15, 1))
    assert r["loss_ks_pvalue"] == pytest.approx(ks_2samp(loss(p_tr), loss(p_te)).pvalue)
    # the same data as "test" data: no gap, identical loss distributions
    r = structural_measures(deep, X, y, X, y)
    assert r["generalisation_gap"] == 0.0 and r["loss_ks_pvalue"] == 1.0


def test_unknown_test_label_counts_as_wrong(three_leaves):
    tree, X, y = three_leaves
    yt = y.copy()
    yt[0] = "zzz"
    r = structural_measures(tree, X, y, X, yt)
    assert r["test_accuracy"] == pytest.approx(16 / 20)


# --- leaf signatures ---------------------------------------------------------------------------
def test_forest_groups_equal_slow_leaf_signature_reference():
    X, y = _noisy(300)
    forest = RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, y)
    r = structural_measures(forest, X, y, threshold=5)
    sizes = slow_groups(forest.apply(X))
    assert r["equivalence_method"] == "leaf_signature"
    assert r["n_groups"] == len(sizes) and r["min_group_size"] == sizes[0]
    assert r["n_small_groups"] == sum(s < 5 for s in sizes)
    assert r["share_records_small_groups"] == pytest.approx(sum(s for s in sizes if s < 5) / 300)
    # smallest leaf occupied in any tree, by a dict per tree
    per_tree = [min(slow_groups(forest.apply(X)[:, [j]])) for j in range(6)]
    assert r["min_leaf_size"] == min(per_tree)
    # leaf signature refines the probability partition
    assert r["n_groups"] >= len(slow_groups(np.round(forest.predict_proba(X), 12)))
    # parameters: sum over trees of 2 x internal + (classes - 1) x leaves
    expected = sum(
        2 * (e.tree_.node_count - e.get_n_leaves()) + e.get_n_leaves() for e in forest.estimators_
    )
    assert r["n_params"] == expected and r["residual_dof"] == 300 - expected


@pytest.mark.parametrize(
    "model",
    [
        DecisionTreeClassifier(max_depth=5, random_state=0),
        RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
        ExtraTreesClassifier(n_estimators=4, max_depth=4, random_state=0),
        GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
    ],
    ids=["tree", "forest", "extra", "gb"],
)
def test_tree_groups_have_one_probability_row(model):
    X, y = _noisy(250)
    model.fit(X, y)
    L = model.apply(X).reshape(len(X), -1)
    inverse, counts, first = group_rows(L)
    proba = model.predict_proba(X)
    assert np.allclose(proba, proba[first[inverse]])
    r = structural_measures(model, X, y)
    assert r["n_groups"] == counts.size and r["min_group_size"] == counts.min()


def test_gradient_boosting_three_classes_leaf_signature():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 3))
    y = rng.integers(0, 3, size=150)
    gb = GradientBoostingClassifier(n_estimators=2, max_depth=1, random_state=0).fit(X, y)
    r = structural_measures(gb, X, y)
    assert r["n_groups"] == len(slow_groups(gb.apply(X).reshape(150, -1)))  # (n, 2, 3) flattened
    # 2 stages x 3 classes stumps: (2 x 1 internal + 2 leaves) each, + 2 prior log-odds
    stumps = np.ravel(gb.estimators_)
    assert all(e.tree_.node_count == 3 for e in stumps)
    assert r["n_params"] == 6 * 4 + 2


def test_xgboost_leaf_signature_and_params():
    xgb = pytest.importorskip("xgboost")
    X, y01 = _noisy(200)
    y = (y01 == "yes").astype(int)
    model = xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1, random_state=0).fit(X, y)
    r = structural_measures(model, X, y)
    L = model.apply(X)
    assert r["equivalence_method"] == "leaf_signature"
    assert r["n_groups"] == len(slow_groups(L))
    df = model.get_booster().trees_to_dataframe()
    leaves = int((df.Feature == "Leaf").sum())
    # 2 per split + 1 value per leaf + 1 base score
    assert r["n_params"] == 2 * (len(df) - leaves) + leaves + 1
    # three classes: one tree per class and round, still one scalar per leaf
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    m3 = xgb.XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1, random_state=0).fit(X, y3)
    df = m3.get_booster().trees_to_dataframe()
    leaves = int((df.Feature == "Leaf").sum())
    assert df.Tree.nunique() == 6
    assert count_params(m3) == 2 * (len(df) - leaves) + leaves + 3


# --- parameter counts --------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_param_counts_by_hand():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y2 = (X[:, 0] > 0).astype(int)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    assert count_params(LogisticRegression().fit(X, y2)) == 3 + 1
    assert count_params(LogisticRegression().fit(X, y3)) == 9 + 3
    assert count_params(LogisticRegression(fit_intercept=False).fit(X, y2)) == 3
    mlp = MLPClassifier(hidden_layer_sizes=(5,), max_iter=300, random_state=0).fit(X, y2)
    assert count_params(mlp) == (3 * 5 + 5 * 1) + (5 + 1)
    mlp3 = MLPClassifier(hidden_layer_sizes=(4, 2), max_iter=300, random_state=0).fit(X, y3)
    assert count_params(mlp3) == (3 * 4 + 4 * 2 + 2 * 3) + (4 + 2 + 3)
    # a stump on 3 classes: 1 internal node x 2 + 2 leaves x 2
    stump = DecisionTreeClassifier(max_depth=1).fit(X, y3)
    assert count_params(stump) == 2 + 4
    # histogram boosting, two rounds of one split: 2 x (2 + 2 leaf values) + baseline
    hgb = HistGradientBoostingClassifier(max_iter=2, max_leaf_nodes=2, early_stopping=False)
    hgb.fit(X, y2)
    assert count_params(hgb) == 2 * 4 + 1
    r = structural_measures(hgb, X, y2)
    assert r["equivalence_method"] == "probabilities" and r["min_leaf_size"] is None
    # gradient boosting with init="zero" has no prior
    gbz = GradientBoostingClassifier(n_estimators=2, max_depth=1, init="zero").fit(X, y2)
    assert count_params(gbz) == 2 * 4


def test_dof_risk_follows_threshold():
    X, y = _noisy(100)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    n_params = count_params(tree)
    dof = 100 - n_params
    assert structural_measures(tree, X, y)["residual_dof"] == dof
    assert structural_measures(tree, X, y, dof_threshold=max(dof, 1))["dof_risk"] is (
        dof < max(dof, 1)
    )
    assert structural_measures(tree, X, y, dof_threshold=max(dof + 1, 1))["dof_risk"] is True


# --- DP models ---------------------------------------------------------------------------------
def test_dp_forest_and_logistic():
    if importlib.util.find_spec("diffprivlib") is None:  # imported by anonml with a shim
        pytest.skip("diffprivlib is not installed")
    from anonml.dp import DPLogisticRegression, DPRandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = np.where(X[:, 0] > 0.5, "hi", "lo")
    forest = DPRandomForestClassifier(
        2.0, bounds=(0, 1), classes=["hi", "lo"], n_estimators=3, max_depth=3, random_state=0
    ).fit(X, y)
    r = structural_measures(forest, X, y)
    L = forest.estimator_.apply(X.astype(np.float32))
    assert r["equivalence_method"] == "leaf_signature" and r["n_groups"] == len(slow_groups(L))
    inverse, _, first = group_rows(L)
    proba = forest.predict_proba(X)
    assert np.allclose(proba, proba[first[inverse]])
    expected = sum(
        2 * (t.tree_.node_count - t.get_n_leaves()) + t.get_n_leaves()
        for t in forest.estimator_.estimators_
    )
    assert r["n_params"] == expected
    lr = DPLogisticRegression(1.0, data_norm=2.0, classes=["hi", "lo"], random_state=0).fit(X, y)
    r = structural_measures(lr, X, y)
    assert r["equivalence_method"] == "probabilities" and r["n_params"] == 4


def test_torch_classifier_params():
    pytest.importorskip("torch")
    from anonml.dp import MLPTorchClassifier

    rng = np.random.default_rng(0)
    X = rng.random((64, 3)).astype(np.float32)
    y = (X[:, 0] > 0.5).astype(int)
    net = MLPTorchClassifier(hidden_layer_sizes=(4,), epochs=1, random_state=0).fit(X, y)
    r = structural_measures(net, X, y)
    assert r["n_params"] == (3 * 4 + 4) + (4 * 2 + 2)
    assert r["equivalence_method"] == "probabilities"


# --- grouping ----------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.int64,
        st.tuples(st.integers(1, 40), st.integers(1, 6)),
        elements=st.integers(-3, 3),
    )
)
def test_group_rows_matches_dict_reference_int(M):
    check_grouping(M)


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 30), st.integers(1, 4)),
        elements=st.sampled_from([0.0, -0.0, 0.5, 1.0, 1e-300, 2.5]),
    )
)
def test_group_rows_matches_dict_reference_float(M):
    check_grouping(M)


def test_group_rows_survives_hash_collisions(monkeypatch):
    monkeypatch.setattr(_structure, "_MULTIPLIERS", np.zeros(8, dtype=np.uint64))  # all collide
    rng = np.random.default_rng(0)
    M = rng.integers(0, 3, size=(200, 5))
    check_grouping(M)


def test_group_rows_edge_cases():
    inverse, counts, first = group_rows(np.zeros((0, 3), dtype=np.int64))
    assert inverse.size == counts.size == first.size == 0
    check_grouping(np.array([7, 7, 1, 7]))  # 1-D: one column
    with pytest.raises(InputError, match="numeric"):
        group_rows(np.array([["a"], ["b"]]))


# --- output and errors -------------------------------------------------------------------------
def test_output_is_counts_only_json():
    X, y = _noisy(200)
    Xt, yt = _noisy(100, seed=3)
    r = structural_measures(
        RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y), X, y, Xt, yt
    )
    assert json.loads(json.dumps(r)) == r
    for value in r.values():
        assert value is None or isinstance(value, (bool, int, float, str))
        assert not isinstance(value, float) or math.isfinite(value)


def test_errors(three_leaves):
    tree, X, y = three_leaves
    with pytest.raises(NotFittedError):
        structural_measures(DecisionTreeClassifier(), X, y)
    with pytest.raises(InputError, match="threshold"):
        structural_measures(tree, X, y, threshold=0)
    with pytest.raises(InputError, match="dof_threshold"):
        structural_measures(tree, X, y, dof_threshold=True)
    with pytest.raises(InputError, match="outside model.classes_"):
        structural_measures(tree, X, np.where(y == "a", "a", "c"))
    with pytest.raises(InputError, match="X_test and y_test"):
        structural_measures(tree, X, y, X_test=X)
    with pytest.raises(InputError, match="one label per row"):
        structural_measures(tree, X, y[:-1])
    with pytest.raises(InputError, match="non-empty"):
        structural_measures(tree, X[:0], y[:0])
