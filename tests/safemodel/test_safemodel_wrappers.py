"""Safe wrappers: drop-in behaviour, warnings without silent changes, explicit constraints,
tamper detection after fit, model files."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import AnonmlWarning, InputError, UntrustedModelError
from anonml.safemodel import (
    SafeDecisionTreeClassifier,
    SafeGradientBoostingClassifier,
    SafeHistGradientBoostingClassifier,
    SafeLogisticRegression,
    SafeMLPClassifier,
    SafeModel,
    SafeRandomForestClassifier,
    load_model,
    save_model,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    return X[:200], y[:200], X[200:], y[200:]


SAFE_AND_PLAIN = [
    (SafeDecisionTreeClassifier, DecisionTreeClassifier, {"min_samples_leaf": 5}),
    (SafeRandomForestClassifier, RandomForestClassifier,
     {"min_samples_leaf": 5, "n_estimators": 10}),
]


@pytest.mark.parametrize("safe_cls, plain_cls, params", SAFE_AND_PLAIN)
def test_drop_in_same_params_same_predictions(data, safe_cls, plain_cls, params):
    Xtr, ytr, Xte, _ = data
    safe = safe_cls(random_state=0, **params)
    plain = plain_cls(random_state=0, **params)
    assert safe.get_params() == plain.get_params()
    assert isinstance(safe, plain_cls)
    safe.fit(Xtr, ytr)
    plain.fit(Xtr, ytr)
    np.testing.assert_array_equal(safe.predict_proba(Xte), plain.predict_proba(Xte))
    twin = clone(safe)
    assert type(twin) is safe_cls and twin.get_params() == safe.get_params()
    assert not hasattr(twin, "anonml_fingerprint_")


def test_works_inside_grid_search_and_pipelines(data):
    Xtr, ytr, Xte, _ = data
    grid = GridSearchCV(SafeDecisionTreeClassifier(random_state=0),
                        {"min_samples_leaf": [5, 10]}, cv=2).fit(Xtr, ytr)
    assert grid.best_estimator_.min_samples_leaf in (5, 10)
    assert hasattr(grid.best_estimator_, "anonml_fingerprint_")
    pipe = make_pipeline(StandardScaler(), SafeLogisticRegression()).fit(Xtr, ytr)
    assert pipe.score(Xte, data[3]) > 0.6


def test_fit_warns_and_never_changes_parameters(data):
    Xtr, ytr, _, _ = data
    model = SafeRandomForestClassifier(bootstrap=False, n_estimators=5, random_state=0)
    with pytest.warns(AnonmlWarning, match="rf-bootstrap.*rf-min-samples-leaf") as rec:
        model.fit(Xtr, ytr)
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert model.bootstrap is False and model.min_samples_leaf == 1
    findings = model.preliminary_check(warn=False)
    assert [f.rule_id for f in findings] == ["rf-bootstrap", "rf-min-samples-leaf"]
    assert all(f.fix for f in findings)


def test_compliant_model_fits_silently(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SafeDecisionTreeClassifier(min_samples_leaf=5).fit(*data[:2])


def test_apply_constraints_changes_only_on_request(data):
    model = SafeRandomForestClassifier(bootstrap=False, min_samples_leaf=2, n_estimators=5)
    changes = model.apply_constraints()
    assert changes == {"bootstrap": (False, True), "min_samples_leaf": (2, 5)}
    assert model.bootstrap is True and model.min_samples_leaf == 5
    assert model.preliminary_check(warn=False) == []
    assert model.apply_constraints() == {}
    model.fit(*data[:2])
    with pytest.raises(InputError, match="before fit"):
        model.apply_constraints()


def test_apply_constraints_with_a_tre_file(tmp_path):
    from anonml.safemodel import default_rules_text

    path = tmp_path / "strict.toml"
    path.write_text(default_rules_text().replace(
        'check = { param = "min_samples_leaf", min = 5 }\neffect = "block"\nexplanation = '
        '"A leaf built', 'check = { param = "min_samples_leaf", min = 20 }\neffect = "block"\n'
        'explanation = "A leaf built'))
    model = SafeDecisionTreeClassifier(min_samples_leaf=5)
    assert model.apply_constraints(rules=path) == {"min_samples_leaf": (5, 20)}


def _tamper_cases():
    def set_param(m):
        m.set_params(min_samples_leaf=50)

    def _lopsided_leaf(tree):  # reversing a [0.5, 0.5] leaf would change nothing
        v = tree.value[:, 0, :]
        return np.flatnonzero((tree.children_left == -1) & (v[:, 0] != v[:, -1]))[0]

    def edit_leaf(m):
        leaf = _lopsided_leaf(m.tree_)
        m.tree_.value[leaf] = m.tree_.value[leaf][:, ::-1]

    def edit_threshold(m):
        m.tree_.threshold[0] += 1.0

    def edit_forest_leaf(m):
        tree = m.estimators_[2].tree_
        leaf = _lopsided_leaf(tree)
        tree.value[leaf] = tree.value[leaf][:, ::-1]

    def edit_mlp(m):
        m.coefs_[0][0, 0] += 0.5

    return [
        (lambda: SafeDecisionTreeClassifier(min_samples_leaf=5), set_param, ["params"]),
        (lambda: SafeDecisionTreeClassifier(min_samples_leaf=5), edit_leaf, ["tree_"]),
        (lambda: SafeDecisionTreeClassifier(min_samples_leaf=5), edit_threshold, ["tree_"]),
        (lambda: SafeRandomForestClassifier(min_samples_leaf=5, n_estimators=5, random_state=0),
         edit_forest_leaf, ["estimators_[2].tree_"]),
        (lambda: SafeMLPClassifier(hidden_layer_sizes=(5,), max_iter=50), edit_mlp,
         ["coefs_[0]"]),
    ]


@pytest.mark.parametrize("make, tamper, parts", _tamper_cases())
def test_posthoc_check_detects_tampering(data, make, tamper, parts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence
        model = make().fit(*data[:2])
    before = model.posthoc_check(*data)
    assert before.tamper == "unchanged" and before.changed == []
    assert before.outcomes and {o.rule.id for o in before.outcomes} >= {"tamper-unchanged"}
    tamper(model)
    after = model.posthoc_check(*data)
    assert after.tamper == "changed" and after.changed == parts
    assert not after.ok
    assert any(f.rule_id == "tamper-unchanged" for f in after.findings)


def test_predicting_and_pickling_leave_no_trace(data, tmp_path):
    Xtr, ytr, Xte, yte = data
    model = SafeRandomForestClassifier(min_samples_leaf=5, n_estimators=5).fit(Xtr, ytr)
    model.predict(Xte)
    model.score(Xte, yte)
    twin = pickle.loads(pickle.dumps(model))
    assert twin.posthoc_check().tamper == "unchanged"


def test_structural_checks_in_posthoc(data):
    model = SafeDecisionTreeClassifier(min_samples_leaf=5).fit(*data[:2])
    res = model.posthoc_check(*data)
    assert res.structure["min_leaf_size"] >= 5
    assert res.structure["generalisation_gap"] is not None
    no_data = model.posthoc_check()
    assert no_data.structure == {}
    states = {o.rule.id: o.outcome for o in no_data.outcomes}
    assert states["structure-leaf-size"] == "not_evaluated"


def test_generic_wrapper(data):
    Xtr, ytr, Xte, _ = data
    from sklearn.neighbors import KNeighborsClassifier

    knn = SafeModel(KNeighborsClassifier())
    with pytest.warns(AnonmlWarning, match="no-stored-records"):
        knn.fit(Xtr, ytr)
    assert knn.predict_proba(Xte).shape == (200, 2)
    safe = SafeModel(make_pipeline(StandardScaler(), DecisionTreeClassifier(min_samples_leaf=1)))
    with pytest.warns(AnonmlWarning, match="dt-min-samples-leaf"):
        safe.fit(Xtr, ytr)
    assert safe.posthoc_check().tamper == "unchanged"
    safe.estimator_[0].scale_[0] *= 2  # the preprocessing is covered too
    after = safe.posthoc_check()
    assert after.tamper == "changed" and all(p.startswith("estimator_") for p in after.changed)


def test_other_families_fit(data):
    Xtr, ytr, _, _ = data
    with pytest.warns(AnonmlWarning, match="gb-min-samples-leaf"):
        SafeGradientBoostingClassifier(n_estimators=5).fit(Xtr, ytr)
    m = SafeHistGradientBoostingClassifier(max_iter=5).fit(Xtr, ytr)
    assert m.posthoc_check().tamper == "unchanged"


def test_dp_and_xgboost_wrappers(data):
    Xtr, ytr, _, _ = data
    pytest.importorskip("xgboost")
    from anonml.safemodel import SafeXGBClassifier

    with pytest.warns(AnonmlWarning, match="xgb-min-child-weight"):
        xgb = SafeXGBClassifier(n_estimators=5, max_depth=2).fit(Xtr, ytr)
    assert xgb.posthoc_check().tamper == "unchanged"
    xgb.set_params(max_depth=5)
    assert xgb.posthoc_check().changed == ["params"]


def test_dp_forest_wrapper(data):
    import importlib.util

    if importlib.util.find_spec("diffprivlib") is None:
        pytest.skip("diffprivlib not installed")
    from anonml.safemodel import SafeDPRandomForestClassifier

    Xtr, ytr, _, _ = data
    bounds = (np.full(4, -5.0), np.full(4, 5.0))
    with pytest.warns(AnonmlWarning, match="dp-epsilon"):
        SafeDPRandomForestClassifier(epsilon=50.0, bounds=bounds, classes=[0, 1],
                                     n_estimators=3, random_state=0).fit(Xtr, ytr)
    ok = SafeDPRandomForestClassifier(epsilon=1.0, bounds=bounds, classes=[0, 1],
                                      n_estimators=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnonmlWarning)
        ok.fit(Xtr, ytr)
    assert ok.posthoc_check().tamper == "unchanged"


def test_model_files_without_unpickling(data, tmp_path):
    pytest.importorskip("skops")
    Xtr, ytr, Xte, _ = data
    frame = pd.DataFrame(Xtr, columns=list("abcd"))
    model = SafeRandomForestClassifier(min_samples_leaf=5, n_estimators=5).fit(frame, ytr)
    path = save_model(model, tmp_path / "m.skops")
    back = load_model(path)
    assert back.posthoc_check().tamper == "unchanged"
    np.testing.assert_array_equal(back.predict_proba(pd.DataFrame(Xte, columns=list("abcd"))),
                                  model.predict_proba(pd.DataFrame(Xte, columns=list("abcd"))))
    save_model(model, tmp_path / "m.joblib")
    with pytest.raises(UntrustedModelError, match="--trust-model"):
        load_model(tmp_path / "m.joblib")
    assert load_model(tmp_path / "m.joblib", trust=True).posthoc_check().tamper == "unchanged"
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(InputError, match="unknown format"):
        load_model(tmp_path / "m.txt")
