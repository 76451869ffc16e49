"""Refits from a schema: every vetted estimator rebuilds, hostile parameters are refused or
clipped, and the docs table of bounds is the schema's."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.feature_selection import (
    SelectKBest,
    SelectPercentile,
    VarianceThreshold,
    chi2,
    f_classif,
)
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    KBinsDiscretizer,
    LabelBinarizer,
    LabelEncoder,
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    PowerTransformer,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC
from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)

from anonml._errors import InputError
from anonml.dp._diffprivlib import (
    DPLogisticRegression,
    DPRandomForestClassifier,
    import_diffprivlib,
)
from anonml.dp._svc import DPSVC
from anonml.modelfile import _refit_schema as rs
from anonml.modelfile._refit_schema import (
    MEMORY_BUDGET_BYTES,
    NOT_REFITTED,
    REFIT_SCHEMA,
    bounds_table,
    rebuild_for_refit,
    refit_params,
)
from anonml.modelfile._skops_vet import VETTED_OBJECTS
from anonml.safemodel import _optional, _wrappers

xgboost = pytest.importorskip("xgboost")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"

RNG = np.random.default_rng(0)
X = RNG.random((40, 4))
Y = np.array([0, 1] * 20)


_key = rs._key


def _frame():
    return pd.DataFrame({"c": list("abcd") * 10, "x": RNG.random(40), "z": RNG.random(40)})


def _dpl():
    return import_diffprivlib().models


def _factories():
    """One small model per class of REFIT_SCHEMA: (make, fit kind)."""
    safe_xgb = _optional.SafeXGBClassifier
    dp_rf = dict(epsilon=1.0, bounds=(0.0, 1.0), classes=[0, 1], n_estimators=3, max_depth=3)
    dp_lr = dict(epsilon=1.0, data_norm=2.0, classes=[0, 1])
    dp_svc = dict(epsilon=1.0, bounds=(0.0, 1.0), classes=[0, 1], gamma=0.5, n_components=8,
                  lam=0.1, random_state=3)
    # n_jobs of the process-parallel meta-estimators: not the auditor's (2), and small, since
    # each fit here starts that many worker processes (60 took ~25 s a test on 2 cores); the
    # hostile values are test_n_jobs_anywhere_becomes_the_auditors'
    ct = lambda: ColumnTransformer(  # noqa: E731
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["c"]),
         ("num", StandardScaler(), ["x"]), ("gone", "drop", ["z"])], n_jobs=3)
    return {
        DecisionTreeClassifier: (lambda: DecisionTreeClassifier(max_depth=3), "xy"),
        ExtraTreeClassifier: (lambda: ExtraTreeClassifier(max_depth=3), "xy"),
        DecisionTreeRegressor: (lambda: DecisionTreeRegressor(max_depth=3), "xr"),
        ExtraTreeRegressor: (lambda: ExtraTreeRegressor(max_depth=3), "xr"),
        RandomForestClassifier: (lambda: RandomForestClassifier(5, n_jobs=2000), "xy"),
        ExtraTreesClassifier: (lambda: ExtraTreesClassifier(5, warm_start=True), "xy"),
        GradientBoostingClassifier: (lambda: GradientBoostingClassifier(n_estimators=5), "xy"),
        HistGradientBoostingClassifier: (lambda: HistGradientBoostingClassifier(max_iter=5),
                                         "xy"),
        MLPClassifier: (lambda: MLPClassifier((5,), max_iter=30, verbose=True), "xy"),
        LogisticRegression: (lambda: LogisticRegression(C=0.5), "xy"),
        DummyClassifier: (lambda: DummyClassifier(strategy="constant", constant=1), "xy"),
        Pipeline: (lambda: Pipeline([("sc", StandardScaler()), ("lr", LogisticRegression())]),
                   "xy"),
        ColumnTransformer: (ct, "frame"),
        OneHotEncoder: (lambda: OneHotEncoder(categories=[list("abcd")]), "cat"),
        OrdinalEncoder: (lambda: OrdinalEncoder(handle_unknown="use_encoded_value",
                                                unknown_value=-1), "cat"),
        StandardScaler: (lambda: StandardScaler(with_mean=False), "x"),
        MinMaxScaler: (lambda: MinMaxScaler(feature_range=(-1, 1)), "x"),
        MaxAbsScaler: (lambda: MaxAbsScaler(), "x"),
        RobustScaler: (lambda: RobustScaler(quantile_range=(10.0, 90.0)), "x"),
        SimpleImputer: (lambda: SimpleImputer(strategy="constant", fill_value=0.0), "x"),
        FunctionTransformer: (lambda: FunctionTransformer(), "x"),
        LabelEncoder: (lambda: LabelEncoder(), "y"),
        LabelBinarizer: (lambda: LabelBinarizer(neg_label=-1), "y"),
        DPRandomForestClassifier: (lambda: DPRandomForestClassifier(**dp_rf, n_jobs=2000), "xy"),
        DPLogisticRegression: (lambda: DPLogisticRegression(**dp_lr), "xy"),
        DPSVC: (lambda: DPSVC(**dp_svc), "xy"),
        _dpl().RandomForestClassifier: (lambda: _dpl().RandomForestClassifier(**dp_rf), "xy"),
        _dpl().DecisionTreeClassifier: (lambda: _dpl().DecisionTreeClassifier(
            epsilon=1.0, bounds=(0.0, 1.0), classes=[0, 1], max_depth=3), "xy"),
        xgboost.XGBClassifier: (lambda: xgboost.XGBClassifier(n_estimators=3, max_depth=2,
                                                              n_jobs=2000), "xy"),
        _wrappers.SafeModel: (lambda: _wrappers.SafeModel(LogisticRegression()), "xy"),
        _wrappers.SafeDecisionTreeClassifier: (
            lambda: _wrappers.SafeDecisionTreeClassifier(max_depth=3), "xy"),
        _wrappers.SafeRandomForestClassifier: (
            lambda: _wrappers.SafeRandomForestClassifier(5, n_jobs=2000), "xy"),
        _wrappers.SafeExtraTreesClassifier: (
            lambda: _wrappers.SafeExtraTreesClassifier(5), "xy"),
        _wrappers.SafeGradientBoostingClassifier: (
            lambda: _wrappers.SafeGradientBoostingClassifier(n_estimators=5), "xy"),
        _wrappers.SafeHistGradientBoostingClassifier: (
            lambda: _wrappers.SafeHistGradientBoostingClassifier(max_iter=5), "xy"),
        _wrappers.SafeMLPClassifier: (lambda: _wrappers.SafeMLPClassifier((5,), max_iter=30),
                                      "xy"),
        _wrappers.SafeLogisticRegression: (lambda: _wrappers.SafeLogisticRegression(), "xy"),
        safe_xgb: (lambda: safe_xgb(n_estimators=3, max_depth=2), "xy"),
        _optional.SafeDPRandomForestClassifier: (
            lambda: _optional.SafeDPRandomForestClassifier(**dp_rf), "xy"),
        _optional.SafeDPLogisticRegression: (
            lambda: _optional.SafeDPLogisticRegression(**dp_lr), "xy"),
        _optional.SafeDPSVC: (lambda: _optional.SafeDPSVC(**dp_svc), "xy"),
        # the data-only types of ordinary pipelines (issue 23)
        KBinsDiscretizer: (lambda: KBinsDiscretizer(n_bins=3, encode="ordinal"), "x"),
        PolynomialFeatures: (lambda: PolynomialFeatures((1, 2), include_bias=False), "x"),
        FeatureUnion: (lambda: FeatureUnion([("s", StandardScaler()), ("d", "drop")],
                                            n_jobs=3), "x"),
        VarianceThreshold: (lambda: VarianceThreshold(0.01), "x"),
        SelectKBest: (lambda: SelectKBest(chi2, k=2), "xy"),
        SelectPercentile: (lambda: SelectPercentile(f_classif, percentile=50), "xy"),
        MissingIndicator: (lambda: MissingIndicator(features="all"), "x"),
        Normalizer: (lambda: Normalizer("l1"), "x"),
        Binarizer: (lambda: Binarizer(threshold=0.5), "x"),
        PowerTransformer: (lambda: PowerTransformer(standardize=False), "x"),
    }


def _fit(est, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence, the safe wrappers' rule warnings
        if kind == "xy":
            return est.fit(X, Y)
        if kind == "xr":
            return est.fit(X, Y.astype(float))
        if kind == "x":
            return est.fit(X)
        if kind == "y":
            return est.fit(Y)
        if kind == "cat":
            return est.fit(np.array(list("abcd") * 10).reshape(-1, 1))
        return est.fit(_frame(), Y)


FACTORIES = _factories()


def test_every_refittable_class_has_a_round_trip_case():
    assert {_key(make()) for make, _ in FACTORIES.values()} == set(REFIT_SCHEMA)


def test_every_vetted_class_is_either_refitted_or_listed_with_a_reason():
    assert set(REFIT_SCHEMA) | set(NOT_REFITTED) == set(VETTED_OBJECTS)
    assert not set(REFIT_SCHEMA) & set(NOT_REFITTED)


@pytest.mark.parametrize("key", sorted(REFIT_SCHEMA), ids=lambda k: f"{k[0]}.{k[1]}")
def test_schema_names_only_real_parameters_and_accounts_for_the_rest(key):
    cls = rs._class_for(key)
    names = rs._param_names(cls)
    schema = set(REFIT_SCHEMA[key])
    assert schema <= names, schema - names
    assert names - schema - set(rs._FIXED) <= rs.DEFAULTED


@pytest.mark.parametrize("cls", list(FACTORIES), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_round_trip_fitted_model_rebuilds_unfitted_and_refits(cls):
    make, kind = FACTORIES[cls]
    fitted = _fit(make(), kind)
    rebuilt, adjustments = rebuild_for_refit(fitted, n_jobs=2)
    assert type(rebuilt) is type(fitted) and rebuilt is not fitted
    assert adjustments == []
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(rebuilt))
    params = rebuilt.get_params(deep=False)
    for name in REFIT_SCHEMA[_key(fitted)]:
        if name not in ("steps", "transformers", "remainder", "estimator", "accountant",
                        "transformer_list"):
            assert _same(params[name], fitted.get_params(deep=False)[name]), name
    _fit(rebuilt, kind)
    json.dumps(refit_params(fitted), allow_nan=False)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(b, tuple | list | np.ndarray):
        return list(np.asarray(a, dtype=object).ravel()) == list(
            np.asarray(b, dtype=object).ravel())
    return a == b


def test_unwrap_builds_the_wrapped_estimator():
    safe = _wrappers.SafeModel(_wrappers.SafeRandomForestClassifier(5))
    plain, _ = rebuild_for_refit(safe, unwrap=True)
    assert type(plain) is RandomForestClassifier and plain.n_estimators == 5
    pipe = Pipeline([("sc", StandardScaler()), ("m", _wrappers.SafeMLPClassifier((7,)))])
    assert type(rebuild_for_refit(pipe, unwrap=True)[0].steps[1][1]) is MLPClassifier


def test_pipeline_memory_is_dropped_and_nothing_is_written(tmp_path):
    pipe = Pipeline([("sc", StandardScaler()), ("lr", LogisticRegression())],
                    memory=str(tmp_path), verbose=True)
    rebuilt, _ = rebuild_for_refit(pipe)
    assert rebuilt.memory is None and rebuilt.verbose is False
    rebuilt.fit(X, Y)
    assert list(tmp_path.iterdir()) == []


def test_n_jobs_anywhere_becomes_the_auditors():
    inner = Pipeline([("sc", StandardScaler()),
                      ("rf", RandomForestClassifier(3, n_jobs=2000))])
    ct = ColumnTransformer([("num", StandardScaler(), ["x", "z"]),
                            ("cat", OneHotEncoder(), ["c"])], n_jobs=60)
    pipe = Pipeline([("ct", ct), ("m", _wrappers.SafeModel(
        xgboost.XGBClassifier(n_jobs=2000, nthread=2000)))])
    for model in (inner, pipe):
        rebuilt, _ = rebuild_for_refit(model, n_jobs=3)
        jobs = {k: v for k, v in rebuilt.get_params(deep=True).items()
                if k.endswith("n_jobs")}
        assert jobs and set(jobs.values()) == {3}, jobs
    xgb = rebuild_for_refit(pipe, n_jobs=3)[0].steps[1][1].estimator
    assert "nthread" not in xgb.get_params() and xgb.device == "cpu" and xgb.verbosity == 0


def test_hostile_defaults_are_not_copied():
    xgb = xgboost.XGBClassifier(callbacks=[object()], early_stopping_rounds=5,
                                eval_metric="auc", device="cuda")
    rebuilt, _ = rebuild_for_refit(xgb)
    assert rebuilt.callbacks is None and rebuilt.early_stopping_rounds is None
    assert rebuilt.eval_metric is None and rebuilt.device == "cpu"
    mlp = rebuild_for_refit(MLPClassifier(warm_start=True, verbose=True))[0]
    assert mlp.warm_start is False and mlp.verbose is False


def test_huge_mlp_is_refused_with_one_line_naming_the_parameter():
    with pytest.raises(InputError) as err:
        rebuild_for_refit(MLPClassifier(hidden_layer_sizes=(100000, 100000)))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("MLPClassifier.hidden_layer_sizes=(100000, 100000) is outside the "
                           "refit bounds (at most 2,000,000 weights")
    assert "fix:" in text


@pytest.mark.parametrize("model,param", [
    (MLPClassifier(max_iter=10**6, early_stopping=False), "max_iter"),
    (HistGradientBoostingClassifier(max_iter=10**6, early_stopping=False), "max_iter"),
    (LogisticRegression(max_iter=10**6), "max_iter"),
    (RandomForestClassifier(n_estimators=10**6), "n_estimators"),
    (xgboost.XGBClassifier(n_estimators=500, num_parallel_tree=10), "n_estimators"),
    (MLPClassifier((1024, 1024), max_iter=200), "max_iter"),
])
def test_costly_iteration_counts_are_refused(model, param):
    with pytest.raises(InputError, match=rf"^{type(model).__name__}\.{param}=\d+ is outside "
                       r"the refit bounds \(.*\); fix: "):
        rebuild_for_refit(model)


def test_nested_refusal_names_the_path():
    pipe = Pipeline([("sc", StandardScaler()), ("mlp", MLPClassifier(max_iter=10**6))])
    with pytest.raises(InputError, match=r"^Pipeline/mlp:MLPClassifier\.max_iter=1000000 "):
        rebuild_for_refit(pipe)


def test_clip_sets_the_bound_and_reports_each_change():
    pipe = Pipeline([("sc", StandardScaler()), ("mlp", MLPClassifier(
        hidden_layer_sizes=(100000, 100000), max_iter=10**6))])
    rebuilt, adjustments = rebuild_for_refit(pipe, clip=True)
    mlp = rebuilt.steps[1][1]
    weights, units = rs._mlp_cost(mlp.hidden_layer_sizes)
    assert weights <= rs.MLP_MAX_WEIGHTS and units <= rs.MLP_MAX_UNITS
    assert weights * mlp.max_iter <= rs.MLP_MAX_WEIGHT_EPOCHS
    assert [(a["path"], a["parameter"]) for a in adjustments] == [
        ("Pipeline/mlp:MLPClassifier", "max_iter"),
        ("Pipeline/mlp:MLPClassifier", "hidden_layer_sizes"),
        ("Pipeline/mlp:MLPClassifier", "max_iter")]
    assert adjustments[0] == {"class": "MLPClassifier", "path": "Pipeline/mlp:MLPClassifier",
                              "parameter": "max_iter", "file_value": 10**6, "value_used": 1000}
    assert adjustments[1]["file_value"] == [100000, 100000]
    json.dumps(adjustments, allow_nan=False)
    hgb, adj = rebuild_for_refit(HistGradientBoostingClassifier(max_leaf_nodes=None),
                                 clip=True)
    assert hgb.max_leaf_nodes == 1024 and adj[0]["file_value"] is None
    gb, adj = rebuild_for_refit(GradientBoostingClassifier(max_depth=None), clip=True)
    assert gb.max_depth == 8


def test_unvetted_classes_are_refused():
    class Evil(ClassifierMixin, BaseEstimator):
        def __init__(self, n_jobs=1):
            self.n_jobs = n_jobs

    class RandomForestClassifier2(RandomForestClassifier):
        pass

    RandomForestClassifier2.__qualname__ = "RandomForestClassifier"
    for model in (Evil(), SVC(), RandomForestClassifier2(),
                  Pipeline([("sc", StandardScaler()), ("svc", SVC())])):
        with pytest.raises(InputError, match=r"cannot be refitted: it is not on anonml's list"):
            rebuild_for_refit(model)
    from anonml.anonymize._mondrian import MondrianAnonymizer

    with pytest.raises(InputError, match=r"MondrianAnonymizer .* cannot be refitted: a fitted "
                       "anonymizer"):
        rebuild_for_refit(MondrianAnonymizer())


@pytest.mark.parametrize("model", [
    RandomForestClassifier(n_estimators=True),
    DecisionTreeClassifier(max_depth=True),
    MLPClassifier(hidden_layer_sizes=(True, 3)),
    MLPClassifier(batch_size=False),
    xgboost.XGBClassifier(max_depth=True),
])
def test_bool_is_not_an_int(model):
    with pytest.raises(InputError, match=r"=\(?True|=False"):
        rebuild_for_refit(model, clip=True)


@pytest.mark.parametrize("model,param", [
    (LogisticRegression(C=float("nan")), "C"),
    (MLPClassifier(alpha=float("inf")), "alpha"),
    (RandomForestClassifier(max_features=float("nan")), "max_features"),
    (GradientBoostingClassifier(learning_rate=float("-inf")), "learning_rate"),
    (LogisticRegression(class_weight={0: float("nan")}), "class_weight"),
])
def test_nan_and_inf_are_refused_even_with_clip(model, param):
    with pytest.raises(InputError, match=rf"\.{param}=.*(not a finite|not accepted)"):
        rebuild_for_refit(model, clip=True)


@pytest.mark.parametrize("columns", [
    lambda df: ["x"], make_column_selector(pattern="(a+)+$"), [object()],
    make_column_selector(dtype_include=[object()]), ["x", 1], {"x": 1},
])
def test_column_specs_other_than_names_indices_masks_slices_are_refused(columns):
    ct = ColumnTransformer([("num", StandardScaler(), columns)])
    with pytest.raises(InputError, match=r"^ColumnTransformer\.transformers="):
        rebuild_for_refit(ct)


def test_column_specs_accepted():
    specs = [["x", "z"], [1, 2], [False, True, True], slice(1, 3), slice("x", "z"), "x", 1,
             np.array([1, 2])]
    for cols in specs:
        ct = ColumnTransformer([("num", StandardScaler(), cols), ("rest", "passthrough", [0])],
                               remainder="drop")
        rebuilt = rebuild_for_refit(ct)[0]
        got = rebuilt.transformers[0][2]
        assert got == cols if not isinstance(cols, np.ndarray) else got == [1, 2]
    sel = make_column_selector(pattern="^x$|^z", dtype_include="number", dtype_exclude=[bool])
    got = rebuild_for_refit(ColumnTransformer([("num", StandardScaler(), sel)]))[0]
    got = got.transformers[0][2]  # a new selector with the same plain settings
    assert got is not sel and vars(got) == vars(sel)
    ct = ColumnTransformer([("n", StandardScaler(), list(range(rs.MAX_FEATURES + 1)))])
    with pytest.raises(InputError, match=r"at most 100,000 columns"):
        rebuild_for_refit(ct)


def test_random_state_objects_are_replaced_and_reported():
    rebuilt, adj = rebuild_for_refit(RandomForestClassifier(
        3, random_state=np.random.RandomState(0)))
    assert rebuilt.random_state is None
    assert adj == [{"class": "RandomForestClassifier", "path": "RandomForestClassifier",
                    "parameter": "random_state", "file_value": "RandomState",
                    "value_used": None}]


def test_refit_params_are_plain_numbers():
    params = refit_params(RandomForestClassifier(n_estimators=np.int64(50), max_depth=7))
    assert params["n_estimators"] == 50 and type(params["n_estimators"]) is int
    assert params["max_depth"] == 7
    nested = refit_params(Pipeline([("sc", SimpleImputer()), ("m", LogisticRegression())]))
    assert nested["steps"][0] == ["sc", {"class": "SimpleImputer", "params": {
        "missing_values": "nan", "strategy": "mean", "fill_value": None, "copy": True,
        "add_indicator": False, "keep_empty_features": False}}]
    with pytest.raises(InputError):
        refit_params(MLPClassifier(max_iter=10**6))
    assert refit_params(MLPClassifier(max_iter=10**6), clip=True)["max_iter"] == 1000


def test_auditor_n_jobs_is_checked():
    assert rebuild_for_refit(RandomForestClassifier(), n_jobs=None)[0].n_jobs == 1
    assert rebuild_for_refit(RandomForestClassifier(), n_jobs=-1)[0].n_jobs == -1
    for bad in (0, -2, True, 10**6, 2.0):
        with pytest.raises(InputError, match="n_jobs="):
            rebuild_for_refit(LogisticRegression(), n_jobs=bad)


def test_function_transformer_with_a_function_is_refused():
    with pytest.raises(InputError, match=r"FunctionTransformer\.func="):
        rebuild_for_refit(FunctionTransformer(func=np.log1p))


@settings(max_examples=60, deadline=None)
@given(st.integers(-10**12, 10**12))
def test_forest_size_is_kept_clipped_or_refused(n):
    model = RandomForestClassifier(n_estimators=n)
    if 1 <= n <= 400:
        assert rebuild_for_refit(model)[0].n_estimators == n
    else:
        with pytest.raises(InputError, match=r"n_estimators=.* is outside the refit bounds"):
            rebuild_for_refit(model)
    assert rebuild_for_refit(model, clip=True)[0].n_estimators == min(max(n, 1), 400)


def _docs_rows():
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Refit bounds", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith(("| class ", "| ---"))]
    return section, [tuple(cell.strip().replace("\\|", "|") for cell in row) for row in rows]


def test_docs_table_is_the_schema():
    section, rows = _docs_rows()
    expected = [tuple(cell.replace("`", "") for cell in row) for row in bounds_table()]
    assert [tuple(cell.replace("`", "") for cell in row) for row in rows] == expected
    assert f"{MEMORY_BUDGET_BYTES // 2**30} GiB" in section
    assert re.search(r"MEMORY_BUDGET_BYTES", section)


@pytest.mark.parametrize("model,param", [
    (LogisticRegression(C=10**400), "C"),
    (LogisticRegression(class_weight={0: 10**400}), "class_weight"),
    (RandomForestClassifier(n_estimators=10**5000), "n_estimators"),
    (MLPClassifier(hidden_layer_sizes=(10**5000,)), "hidden_layer_sizes"),
])
def test_huge_ints_give_one_line(model, param):
    with pytest.raises(InputError) as err:
        rebuild_for_refit(model)
    assert f".{param}=" in str(err.value) and len(str(err.value)) < 600
    if param in ("n_estimators", "hidden_layer_sizes"):
        _, adj = rebuild_for_refit(model, clip=True)
        json.dumps(adj, allow_nan=False)


def test_a_pipeline_that_holds_itself_is_refused():
    pipe = Pipeline([("sc", StandardScaler()), ("lr", LogisticRegression())])
    pipe.steps[1] = ("again", pipe)
    with pytest.raises(InputError, match=r"nested deeper than 20 levels"):
        rebuild_for_refit(pipe)
