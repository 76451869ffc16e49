"""Proof by inventory: a released mapping holds no training value the anonymized table hides
(issue 19), for every method, through save_model -> load_model -> inventory."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from anonml import AccuracyGuidedAnonymizer, MondrianAnonymizer, anonymize_model
from anonml.anonymize._hilbert import HilbertAnonymizer
from anonml.anonymize._model import release_copy
from anonml.anonymize._rtree import RTreeAnonymizer
from anonml.datasets import load_adult
from anonml.modelfile._inventory import leaked_total
from anonml.safemodel import inventory, load_model, save_model

pytest.importorskip("skops.io")

METHODS = {
    "ag_exact": lambda k, qi: AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree="exact",
                                                       random_state=0),
    "ag_hist": lambda k, qi: AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree="hist"),
    "ag_exact_no_refine": lambda k, qi: AccuracyGuidedAnonymizer(
        k=k, quasi_identifiers=qi, tree="exact", refine="none", random_state=0),
    "mondrian": lambda k, qi: MondrianAnonymizer(k=k, quasi_identifiers=qi),
    "mondrian_relaxed": lambda k, qi: MondrianAnonymizer(k=k, quasi_identifiers=qi,
                                                         mode="relaxed"),
    "hilbert": lambda k, qi: HilbertAnonymizer(k=k, quasi_identifiers=qi),
    "rtree": lambda k, qi: RTreeAnonymizer(k=k, quasi_identifiers=qi),
}


@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    X = d.X.iloc[:8000].reset_index(drop=True)
    y = d.y.iloc[:8000].reset_index(drop=True)
    return X, y, list(d.qi_sets["12"])


@pytest.fixture(scope="module")
def singletons():
    """Many values held by one row only: continuous floats, wide integers, rare categories."""
    rng = np.random.default_rng(7)
    n = 3000
    X = pd.DataFrame({
        "income": np.round(rng.lognormal(10, 1, n), 2),  # nearly all distinct
        "age": rng.integers(16, 100, n),
        "score": rng.normal(0, 1e-6, n),  # tiny values
        "debt": -rng.integers(0, 10**9, n).astype(np.int64),  # negative, huge, singletons
        "town": [f"town-{int(v)}" for v in rng.zipf(1.6, n) % 400],  # rare categories
        "job": rng.choice(["a", "b", "c", "d", "e"], n),
    })
    y = pd.Series((X["income"] > X["income"].median()).astype(int) ^ (X["job"] == "c"))
    return X, y, list(X.columns)


def _round_trip(anonymizer, X, y, tmp_path):
    X_anon = anonymizer.fit_transform(X, y)
    path = save_model(anonymizer, tmp_path / "mapping.skops")
    back = load_model(path, isolate=False)
    return X_anon, back


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("table", ["adult", "singletons"])
def test_released_mapping_holds_no_hidden_training_value(method, table, request, tmp_path):
    X, y, qi = request.getfixturevalue(table)
    k = 100 if table == "adult" else 25
    anonymizer = METHODS[method](k, qi)
    X_anon, back = _round_trip(anonymizer, X, y, tmp_path)
    # the training rows map through the released copy exactly as in fit_transform
    pd.testing.assert_frame_equal(back.transform(X), X_anon)
    rows = inventory(back, X, X_anon)
    assert json.loads(json.dumps(rows)) == rows  # plain JSON-safe data
    leaked = [(r["path"], r["training_values_not_shown"]) for r in rows
              if r["training_values_not_shown"]]
    assert leaked == [] and leaked_total(rows) == 0
    names = {r["path"].split("[")[0] for r in rows}
    for gone in ("encoder_", "tree_", "group_sizes_", "refine_tree_", "_grid", "_tree",
                 "dims_", "model_", "min_class_size_", "_boundary_digits"):
        assert not any(n == gone or n.startswith(gone + ".") for n in names), gone
    # thresholds were checked, and the representatives are the only training values held
    assert any(r["path"].startswith("route_.threshold_") and r["values_checked"] for r in rows)
    # the earlier release copy held them (the inventory sees the leak)
    if table == "singletons":
        assert leaked_total(inventory(release_copy(anonymizer, _legacy=True), X, X_anon)) > 0


def test_new_rows_route_by_the_rounded_thresholds(singletons, tmp_path):
    X, y, qi = singletons
    a = MondrianAnonymizer(k=25, quasi_identifiers=qi)
    X_anon, back = _round_trip(a, X, y, tmp_path)
    rt = back.route_
    thr = rt.threshold_[rt.feature_ >= 0]
    thr = thr[np.isfinite(thr)]
    assert thr.size
    # a new row exactly at a threshold goes left, just above it right: the rounded cut decides
    i = int(np.flatnonzero((rt.feature_ >= 0) & np.isfinite(rt.threshold_))[0])
    col = rt.columns[int(rt.feature_[i])]
    probe = X.iloc[[0, 0]].reset_index(drop=True).copy()
    t = rt.threshold_[i]
    probe[col] = np.array([t, np.nextafter(t, np.inf)]).astype(X[col].dtype)
    out = back.transform(probe)
    assert out.shape == probe.shape
    # the fitted anonymizer and its released copy map new rows alike
    new = X.sample(300, random_state=1).reset_index(drop=True)
    new["income"] = new["income"] * 1.01
    pd.testing.assert_frame_equal(back.transform(new), a.transform(new))


def test_unseen_categories_follow_the_default_branch(adult, tmp_path):
    X, y, qi = adult
    a = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist")
    X_anon, back = _round_trip(a, X, y, tmp_path)
    new = X.iloc[:50].copy()
    new["native-country"] = "Atlantis"
    new["workclass"] = "Unheard-of"
    back.set_params(handle_unknown="ignore")
    out = back.transform(new)
    assert out.shape == new.shape and not out[qi].isna().all().all()


def test_released_pipeline_inventory_lists_mapping_and_model(adult, tmp_path):
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X, y, qi = adult
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    model = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), cat), remainder="passthrough"),
        RandomForestClassifier(n_estimators=5, min_samples_leaf=20, random_state=0))
    r = anonymize_model(model, X, 100, qi, y=y, tree="exact", random_state=0)
    path = save_model(r.pipeline, tmp_path / "p.skops")
    rows = inventory(load_model(path, isolate=False), X, r.X_anonymized)
    parts = {r_["part"] for r_ in rows}
    assert parts == {"mapping", "model"}
    assert leaked_total(rows, "mapping") == 0
    for row in rows:
        assert set(row) == {"path", "part", "what", "type", "shape", "size", "column",
                            "values_checked", "training_values_not_shown"}


def test_inventory_without_tables_lists_members_only(adult):
    X, y, qi = adult
    a = MondrianAnonymizer(k=100, quasi_identifiers=qi).fit(X, y)
    rows = inventory(release_copy(a))
    assert rows and all(r["training_values_not_shown"] is None for r in rows)
    assert any(r["path"] == "route_.left_" for r in rows)


def test_release_copy_holds_exactly_its_listed_attributes(adult):
    from anonml.anonymize._model import RELEASE_ATTRIBUTES, RELEASE_OPTIONAL
    from anonml.anonymize._routing import ROUTING_ATTRIBUTES

    X, y, qi = adult
    for make in (METHODS["ag_hist"], METHODS["mondrian"], METHODS["hilbert"], METHODS["rtree"]):
        a = make(100, qi).fit(X, y)
        copy = release_copy(a)
        listed = set(a.get_params(deep=False)) | set(RELEASE_ATTRIBUTES[type(a).__name__])
        assert listed <= set(vars(copy)) <= listed | set(RELEASE_OPTIONAL)
        assert set(vars(copy.route_)) == set(ROUTING_ATTRIBUTES)
