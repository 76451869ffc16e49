"""Tamper fingerprints: every change after fit is named, nothing else is."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.base import BaseEstimator, clone
from sklearn.ensemble import (
    BaggingClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.modelfile._fingerprint import diff_fingerprints, fingerprint


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def data():
    return _data()


class Holder(BaseEstimator):
    """A minimal estimator whose learned state the tests set by hand."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha


class Opaque:
    """An object of no known kind (pickled for the fingerprint)."""

    def __init__(self, payload):
        self.payload = payload


# --- tampering ---------------------------------------------------------------------------------
def test_set_params_after_fit_is_detected(data):
    X, y = data
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    before = fingerprint(tree)
    tree.set_params(max_depth=10)
    assert diff_fingerprints(before, fingerprint(tree)) == ["params"]


def test_leaf_value_edit_in_place_is_detected_and_is_real(data):
    X, y = data
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    before = fingerprint(tree)
    proba = tree.predict_proba(X)
    leaf = int(np.flatnonzero(tree.tree_.children_left == -1)[0])
    # tree_.value is a view of the tree's own memory: the edit changes predictions ...
    tree.tree_.value[leaf, 0, :] = tree.tree_.value[leaf, 0, ::-1] + 0.25
    assert not np.allclose(tree.predict_proba(X), proba)
    # ... and the fingerprint names the tree
    assert diff_fingerprints(before, fingerprint(tree)) == ["tree_"]


def test_threshold_edit_is_detected(data):
    X, y = data
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    before = fingerprint(tree)
    tree.tree_.threshold[0] += 1.0
    assert diff_fingerprints(before, fingerprint(tree)) == ["tree_"]


def test_tree_tampering_through_setstate_is_detected(data):
    X, y = data
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    before = fingerprint(tree)
    state = tree.tree_.__getstate__()
    values = state["values"].copy()
    values[-1, 0, :] = values[-1, 0, ::-1]
    nodes = state["nodes"].copy()
    tree.tree_.__setstate__({**state, "values": values, "nodes": nodes})
    assert diff_fingerprints(before, fingerprint(tree)) == ["tree_"]


def test_one_forest_leaf_edit_names_that_tree(data):
    X, y = data
    forest = RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0).fit(X, y)
    before = fingerprint(forest)
    t = forest.estimators_[4].tree_
    leaf = int(np.flatnonzero(t.children_left == -1)[-1])
    t.value[leaf, 0, 0] += 0.5
    assert diff_fingerprints(before, fingerprint(forest)) == ["estimators_[4].tree_"]


def test_replacing_a_forest_tree_is_detected(data):
    X, y = data
    forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    before = fingerprint(forest)
    forest.estimators_[2] = DecisionTreeClassifier(max_depth=1).fit(X, y)
    changed = diff_fingerprints(before, fingerprint(forest))
    assert "estimators_[2].tree_" in changed and "estimators_[2].params" in changed
    assert all(name.startswith("estimators_[2].") for name in changed)


def test_dropping_a_forest_tree_is_detected(data):
    X, y = data
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    before = fingerprint(forest)
    del forest.estimators_[-1]
    changed = diff_fingerprints(before, fingerprint(forest))
    assert changed and all(name.startswith("estimators_[2].") for name in changed)


def test_mlp_coefficient_edit_is_detected(data):
    X, y = data
    mlp = MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0)
    with pytest.warns(Warning):  # not converged in 30 iterations
        mlp.fit(X, y)
    before = fingerprint(mlp)
    mlp.coefs_[0][1, 2] += 1e-9
    assert diff_fingerprints(before, fingerprint(mlp)) == ["coefs_[0]"]
    mlp.intercepts_[1][0] = 3.0
    assert diff_fingerprints(before, fingerprint(mlp)) == ["coefs_[0]", "intercepts_[1]"]


def test_gradient_boosting_object_array_parts(data):
    X, y = data
    gb = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    before = fingerprint(gb)
    assert "estimators_[1, 0].tree_" in before["parts"]
    gb.estimators_[1, 0].tree_.value[-1, 0, 0] += 1.0
    assert diff_fingerprints(before, fingerprint(gb)) == ["estimators_[1, 0].tree_"]


def test_hist_gradient_boosting_private_trees(data):
    X, y = data
    hgb = HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(X, y)
    before = fingerprint(hgb)
    assert before["fallback"] == [] and "_predictors[1][0]" in before["parts"]
    assert fingerprint(clone(hgb).fit(X, y))["digest"] == before["digest"]
    assert fingerprint(pickle.loads(pickle.dumps(hgb))) == before
    nodes = hgb._predictors[1][0].nodes
    proba = hgb.predict_proba(X)
    nodes["value"][np.flatnonzero(nodes["is_leaf"])[0]] += 1.0  # the trees live in private state
    assert not np.allclose(hgb.predict_proba(X), proba)
    assert diff_fingerprints(before, fingerprint(hgb)) == ["_predictors[1][0]"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_label_binarizer_is_state(data):
    X, y = data
    mlp = MLPClassifier(hidden_layer_sizes=(3,), max_iter=500, random_state=0).fit(X, y)
    before = fingerprint(mlp)
    mlp._label_binarizer.classes_ = mlp._label_binarizer.classes_[::-1].copy()  # swaps labels
    assert diff_fingerprints(before, fingerprint(mlp)) == ["_label_binarizer.classes_"]


def test_xgboost_param_and_booster_tampering(data):
    xgb = pytest.importorskip("xgboost")
    X, y = data
    model = xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1, random_state=0).fit(X, y)
    before = fingerprint(model)
    assert "_Booster" in before["parts"]
    model.set_params(max_depth=5)
    assert diff_fingerprints(before, fingerprint(model)) == ["params"]
    model.set_params(max_depth=2)
    assert diff_fingerprints(before, fingerprint(model)) == []
    model._Booster = model.get_booster()[0:2]  # drop the last two trees
    assert diff_fingerprints(before, fingerprint(model)) == ["_Booster"]
    # pickle round trip keeps the digest
    fresh = xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(fresh))
    assert fingerprint(again)["digest"] == before["digest"]


def test_nested_estimator_parameter_is_detected(data):
    X, y = data
    bag = BaggingClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=3, random_state=0)
    bag.fit(X, y)
    before = fingerprint(bag)
    bag.estimator.set_params(max_depth=9)  # the template, a parameter of the bag
    changed = diff_fingerprints(before, fingerprint(bag))
    # scikit-learn keeps the template itself (not a copy) as estimator_
    assert changed[0] == "params" and set(changed) <= {"params", "estimator_.params"}


def test_new_and_removed_learned_attributes(data):
    X, y = data
    lr = LogisticRegression().fit(X, y)
    before = fingerprint(lr)
    lr.extra_ = np.zeros(3)
    assert diff_fingerprints(before, fingerprint(lr)) == ["extra_"]
    del lr.extra_
    del lr.n_iter_
    assert diff_fingerprints(before, fingerprint(lr)) == ["n_iter_"]


def test_private_and_anonml_attributes_are_not_state(data):
    X, y = data
    lr = LogisticRegression().fit(X, y)
    before = fingerprint(lr)
    lr.anonml_fingerprint_ = {"anything": 1}
    lr._cache = np.ones(2)
    lr.report_ = "checked"
    assert diff_fingerprints(before, fingerprint(lr, exclude={"report_"})) == []
    assert diff_fingerprints(before, fingerprint(lr)) == ["report_"]
    assert diff_fingerprints(before, fingerprint(lr, exclude="report_")) == []


# --- no false alarms ---------------------------------------------------------------------------
def test_unchanged_model_has_empty_diff(data):
    X, y = data
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    before = fingerprint(forest)
    forest.predict_proba(X)
    forest.score(X, y)
    after = fingerprint(forest)
    assert diff_fingerprints(before, after) == []
    assert after == before


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeClassifier(random_state=3),
        lambda: RandomForestClassifier(n_estimators=4, random_state=3),
        lambda: GradientBoostingClassifier(n_estimators=3, random_state=3),
        lambda: LogisticRegression(),
    ],
)
def test_deterministic_across_clone_refit_and_pickle(data, make):
    X, y = data
    a = make().fit(X, y)
    b = clone(a).fit(X, y)
    c = pickle.loads(pickle.dumps(a))
    fa = fingerprint(a)
    assert fingerprint(b)["digest"] == fa["digest"]
    assert fingerprint(c) == fa
    assert fa["fallback"] == [] and fa["unhashable"] == []


def test_different_fit_gives_different_digest(data):
    X, y = data
    a = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    b = RandomForestClassifier(n_estimators=3, random_state=1).fit(X, y)
    assert fingerprint(a)["digest"] != fingerprint(b)["digest"]
    assert fingerprint(a)["params"] != fingerprint(b)["params"]


def test_result_is_plain_json(data):
    X, y = data
    fp = fingerprint(RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y))
    assert json.loads(json.dumps(fp)) == fp
    assert fp["digest"].startswith("sha256:") and len(fp["digest"]) == 7 + 64
    assert all(len(h) == 64 for h in fp["parts"].values())


# --- parameters --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, 1.0),
        (1, True),
        ((1, 2), [1, 2]),
        ("1", 1),
        (None, "None"),
        ({"x": 1}, {"x": 2}),
        (np.array([1, 2]), np.array([1, 3])),
        (np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.int64)),
        (np.random.RandomState(0), np.random.RandomState(1)),
        (np.log, np.exp),
        (DecisionTreeClassifier(max_depth=1), DecisionTreeClassifier(max_depth=2)),
    ],
)
def test_distinct_parameter_values_hash_differently(a, b):
    assert fingerprint(Holder(alpha=a))["params"] != fingerprint(Holder(alpha=b))["params"]


def test_equal_parameter_values_hash_equally():
    for value in [np.float64(0.5), {"b": 1, "a": (2, 3)}, np.random.RandomState(7), len]:
        copy = pickle.loads(pickle.dumps(value))
        assert (
            fingerprint(Holder(alpha=value))["params"] == fingerprint(Holder(alpha=copy))["params"]
        )


def test_lambdas_differ_by_code():
    assert (
        fingerprint(Holder(alpha=lambda v: v + 1))["params"]
        != fingerprint(Holder(alpha=lambda v: v + 2))["params"]
    )


# --- values ------------------------------------------------------------------------------------
def test_pandas_values_index_and_dtype_count():
    h = Holder()
    h.table_ = pd.DataFrame({"a": [1, 2, 3], "b": pd.Series(["x", "y", "z"], dtype="category")})
    before = fingerprint(h)
    h.table_ = h.table_.copy()
    assert diff_fingerprints(before, fingerprint(h)) == []
    h.table_.loc[1, "a"] = 5
    assert diff_fingerprints(before, fingerprint(h)) == ["table_"]
    h.table_ = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})  # not categorical
    assert diff_fingerprints(before, fingerprint(h)) == ["table_"]
    h.table_ = pd.DataFrame(
        {"a": [1, 2, 3], "b": pd.Series(["x", "y", "z"], dtype="category")}, index=[0, 1, 5]
    )
    assert diff_fingerprints(before, fingerprint(h)) == ["table_"]


def test_object_arrays_and_structured_arrays():
    h = Holder()
    h.names_ = np.array(["age", "sex", None], dtype=object)
    # aligned: 8 + 1 bytes of fields, 7 bytes of padding per record
    h.aligned_ = np.zeros(3, dtype=np.dtype([("a", "<i8"), ("b", "u1")], align=True))
    before = fingerprint(h)
    raw = h.aligned_.view(np.uint8).reshape(3, -1)
    raw[:, 9:] = 0xAB  # write into the padding bytes only
    assert diff_fingerprints(before, fingerprint(h)) == []
    h.aligned_["b"][2] = 1
    h.names_[2] = "race"
    assert diff_fingerprints(before, fingerprint(h)) == ["aligned_", "names_"]


def test_unknown_objects_use_pickle_and_are_listed():
    h = Holder()
    h.thing_ = Opaque([1, 2, 3])
    before = fingerprint(h)
    assert before["fallback"] == ["thing_"]
    assert diff_fingerprints(before, fingerprint(h)) == []
    h.thing_.payload.append(4)
    assert diff_fingerprints(before, fingerprint(h)) == ["thing_"]


def test_unpicklable_objects_are_listed_as_unhashable():
    h = Holder()
    h.thing_ = Opaque(lambda v: v)  # a lambda cannot be pickled
    fp = fingerprint(h)
    assert fp["unhashable"] == ["thing_"] and "thing_" in fp["parts"]


def test_torch_module_weights(data):
    torch = pytest.importorskip("torch")
    h = Holder()
    gen = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.rand(p.shape, generator=gen))
    h.model_ = net
    before = fingerprint(h)
    assert fingerprint(pickle.loads(pickle.dumps(h))) == before
    with torch.no_grad():
        net[2].bias[1] += 1e-6
    assert diff_fingerprints(before, fingerprint(h)) == ["model_"]
    with torch.no_grad():
        net[2].bias[1] -= 1e-6
    net.train(False)  # eval mode is a behaviour change too
    assert diff_fingerprints(before, fingerprint(h)) == ["model_"]


@settings(max_examples=40, deadline=None)
@given(
    arr=hnp.arrays(
        dtype=st.sampled_from([np.float64, np.float32, np.int64, np.uint8, np.bool_]),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
    ),
    pos=st.integers(min_value=0),
)
def test_any_single_element_change_is_detected(arr, pos):
    h = Holder()
    h.w_ = arr.copy()
    before = fingerprint(h)
    h.w_ = np.asfortranarray(arr.copy())  # memory order does not matter
    assert diff_fingerprints(before, fingerprint(h)) == []
    flat = h.w_.reshape(-1, order="C").copy()
    i = pos % flat.size
    with np.errstate(all="ignore"):  # uint8 255 + 1 wraps, float max + 1 stays
        flat[i] = (not flat[i]) if arr.dtype == np.bool_ else flat[i] + 1
    if flat.tobytes() == arr.reshape(-1).tobytes():  # +1 absorbed (inf, nan, rounding)
        return
    h.w_ = flat.reshape(arr.shape)
    assert diff_fingerprints(before, fingerprint(h)) == ["w_"]
    h.w_ = arr.reshape(-1).copy()  # same bytes, other shape
    if arr.ndim > 1:
        assert diff_fingerprints(before, fingerprint(h)) == ["w_"]


# --- errors ------------------------------------------------------------------------------------
def test_bad_inputs():
    with pytest.raises(InputError, match="get_params"):
        fingerprint(np.zeros(3))
    with pytest.raises(InputError, match="DecisionTreeClassifier|estimator"):
        fingerprint(DecisionTreeClassifier)
    with pytest.raises(InputError, match="not a fingerprint"):
        diff_fingerprints({"params": "x"}, fingerprint(Holder()))
