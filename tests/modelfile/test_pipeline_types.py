"""Ordinary scikit-learn pipelines load without --trust-model (issue 23), each part validated,
and hostile column selectors are refused in one line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_selector as selector
from sklearn.compose import make_column_transformer
from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                              RandomForestClassifier)
from sklearn.feature_selection import (SelectKBest, SelectPercentile, VarianceThreshold, chi2,
                                       f_classif, mutual_info_classif)
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import (Binarizer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler,
                                   Normalizer, OneHotEncoder, OrdinalEncoder, PolynomialFeatures,
                                   PowerTransformer, QuantileTransformer, RobustScaler,
                                   StandardScaler, TargetEncoder)
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.cli import main
from anonml.datasets import load_adult
from anonml.modelfile._refit_schema import rebuild_for_refit
from anonml.safemodel import load_model, open_model, save_model

pytest.importorskip("skops")

NUM = selector(dtype_include="number")
CAT = selector(dtype_include=object)


def _iterative():
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer

    return IterativeImputer


def _ohe():
    return OneHotEncoder(handle_unknown="ignore")


#: a dozen ordinary pipelines, as users write them
PIPELINES = {
    "issue_23": lambda: make_pipeline(
        make_column_transformer((_ohe(), CAT), remainder="passthrough"),
        RandomForestClassifier(10, min_samples_leaf=5, random_state=0)),
    "scale_and_ordinal": lambda: make_pipeline(make_column_transformer(
        (StandardScaler(), NUM),
        (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
         selector(dtype_exclude="number"))), LogisticRegression(max_iter=300)),
    "pattern_impute_scale": lambda: make_pipeline(make_column_transformer(
        (make_pipeline(SimpleImputer(), RobustScaler()), selector(pattern="^age$|^hours")),
        (_ohe(), selector(pattern="^sex$|^race$"))), LogisticRegression()),
    "imputer_indicator": lambda: make_pipeline(make_column_transformer(
        (SimpleImputer(add_indicator=True), NUM)), DecisionTreeClassifier(max_depth=4)),
    "kbins_ordinal": lambda: make_pipeline(make_column_transformer(
        (KBinsDiscretizer(n_bins=5, encode="ordinal"), NUM)), DecisionTreeClassifier()),
    "kbins_onehot": lambda: make_pipeline(make_column_transformer(
        (KBinsDiscretizer(n_bins=4, strategy="uniform"), NUM), (_ohe(), CAT)),
        LogisticRegression(max_iter=300)),
    "polynomial": lambda: make_pipeline(make_column_transformer(
        (make_pipeline(MaxAbsScaler(), PolynomialFeatures(2)), NUM)),
        LogisticRegression(max_iter=300)),
    "feature_union": lambda: make_pipeline(make_column_transformer(
        (FeatureUnion([("std", StandardScaler()), ("minmax", MinMaxScaler())]), NUM)),
        RandomForestClassifier(10, random_state=0)),
    "variance_threshold": lambda: make_pipeline(
        make_column_transformer((_ohe(), CAT), remainder="passthrough"),
        VarianceThreshold(0.01), DecisionTreeClassifier(max_depth=5)),
    "select_k_best": lambda: make_pipeline(
        make_column_transformer((_ohe(), CAT), remainder="passthrough"),
        SelectKBest(f_classif, k=10), DecisionTreeClassifier(max_depth=5)),
    "select_percentile_chi2": lambda: make_pipeline(
        make_column_transformer((_ohe(), CAT)), SelectPercentile(chi2, percentile=50),
        LogisticRegression()),
    "mutual_info_boosting": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(handle_unknown="use_encoded_value",
                                                unknown_value=-1), CAT),
                                remainder="passthrough"),
        SelectKBest(mutual_info_classif, k=6), GradientBoostingClassifier(n_estimators=10)),
    "power_normalize_binarize": lambda: make_pipeline(make_column_transformer(
        (PowerTransformer(), selector(pattern="^age$|^hours")),
        (Normalizer(), selector(pattern="^capital")),
        (Binarizer(threshold=0.5), selector(pattern="^capital-gain$"))),
        LogisticRegression()),
    "hist_boosting": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(handle_unknown="use_encoded_value",
                                                unknown_value=-1), CAT),
                                (StandardScaler(), NUM)),
        HistGradientBoostingClassifier(max_iter=10)),
}


@pytest.fixture(scope="module")
def adult():
    X, X_test, y, _ = load_adult().train_test_split()
    return X.iloc[:400].reset_index(drop=True), y.iloc[:400], X_test.iloc[:200]


@pytest.fixture(scope="module")
def saved(adult, tmp_path_factory):
    X, y, _ = adult
    folder = tmp_path_factory.mktemp("pipelines")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in PIPELINES.items():
            model = make().fit(X, y)
            save_model(model, folder / f"{name}.skops")
            out[name] = (model, folder / f"{name}.skops")
    return out


@pytest.mark.parametrize("name", list(PIPELINES))
def test_ordinary_pipeline_loads_untrusted_and_predicts_the_same(name, saved, adult):
    model, path = saved[name]
    _, _, X_test = adult
    back = load_model(path, isolate=False)  # the worker's read: vet, build, validate
    np.testing.assert_array_equal(back.predict(X_test), model.predict(X_test))
    np.testing.assert_allclose(back.predict_proba(X_test), model.predict_proba(X_test))


@pytest.mark.parametrize("name", ["issue_23", "select_k_best", "feature_union"])
def test_ordinary_pipeline_opens_in_the_sandbox(name, saved, adult):
    model, path = saved[name]
    _, _, X_test = adult
    boxed = open_model(path)
    try:
        np.testing.assert_array_equal(boxed.predict(X_test), model.predict(X_test))
        np.testing.assert_allclose(boxed.predict_proba(X_test), model.predict_proba(X_test))
    finally:
        boxed.close()


@pytest.mark.parametrize("name", list(PIPELINES))
def test_ordinary_pipeline_is_rebuilt_for_refits(name, saved, adult):
    """The audit's reference models refit the pipeline from the bounded schema: selectors,
    bins, unions and score functions included."""
    model, _ = saved[name]
    X, y, X_test = adult
    rebuilt, adjustments = rebuild_for_refit(model)
    assert adjustments == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rebuilt.fit(X, y)
    assert rebuilt.predict(X_test).shape == (len(X_test),)


def test_cli_anonymize_and_audit_with_a_selector_pipeline(saved, adult, tmp_path, capsys):
    _, path = saved["issue_23"]
    X, y, X_test = adult
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    X.assign(income=y.to_numpy()).to_csv(train, index=False)
    X_test.assign(income="<=50K").to_csv(test, index=False)
    out = tmp_path / "anon.csv"
    code = main([str(a) for a in ["anonymize", train, "--k", 20, "--qi", "age,sex,race",
                                  "--target", "income", "--model", path, "-o", out, "-q"]])
    assert code == 0, capsys.readouterr().err
    assert pd.read_csv(out).groupby(["age", "sex", "race"]).size().min() >= 20
    report = tmp_path / "report"
    code = main([str(a) for a in ["audit", "--model", path, "--train", train, "--test", test,
                                  "--target", "income", "--attacks", "worst_case",
                                  "--formats", "json", "-o", report, "-q"]])
    assert code in (0, 3), capsys.readouterr().err
    doc = json.loads((report / "report.json").read_text())
    assert "verdict" in json.dumps(doc)


def _hostile(saved, tmp_path, sel):
    """The issue's pipeline with its fitted column transformer's selector replaced."""
    import copy

    model, _ = saved["issue_23"]
    evil = copy.deepcopy(model)
    ct = evil.steps[0][1]
    name, enc, _ = ct.transformers[0]
    ct.transformers = [(name, enc, sel), *ct.transformers[1:]]
    path = tmp_path / "evil.skops"
    save_model(evil, path)
    return path


@pytest.mark.parametrize("sel, needle", [
    (selector(pattern="a" * 100_000), "100,000 characters"),
    (selector(pattern="(a+)+$"), "literal alternation"),
    (selector(dtype_include=DecisionTreeClassifier()), "not a dtype"),
    (selector(dtype_include=["x" * 200]), "is not a dtype name"),
])
def test_hostile_column_selector_is_refused_in_one_line(saved, tmp_path, sel, needle):
    path = _hostile(saved, tmp_path, sel)
    with pytest.raises(InputError) as err:
        load_model(path, isolate=False)
    message = str(err.value)
    assert "\n" not in message and needle in message and "column selector" in message
    assert "fix:" in message


@pytest.mark.parametrize("step, cols, needle", [
    (KNNImputer, NUM, r"KNNImputer.*stores its training rows"),
    (lambda: QuantileTransformer(n_quantiles=100), NUM,
     r"QuantileTransformer.*training values of every column"),
    (TargetEncoder, CAT, r"TargetEncoder.*mean label of every category"),
    (lambda: _iterative()(max_iter=2), NUM, r"IterativeImputer.*fitted regressor"),
])
def test_parts_that_store_training_values_are_refused_with_the_reason(adult, tmp_path, step,
                                                                      cols, needle):
    X, y, _ = adult
    model = make_pipeline(make_column_transformer((step(), cols)),
                          DecisionTreeClassifier()).fit(X, y)
    path = tmp_path / "part.skops"
    save_model(model, path)
    with pytest.raises(InputError, match=needle) as err:
        load_model(path, isolate=False)
    assert "\n" not in str(err.value)


def test_a_function_is_accepted_only_as_a_named_score_function(saved, tmp_path):
    """f_classif is read as a SelectKBest's score_func; the same name elsewhere, or another
    function there, is refused."""
    import copy

    from sklearn.preprocessing import FunctionTransformer

    model, _ = saved["select_k_best"]
    other = copy.deepcopy(model)
    other.steps[1][1].score_func = np.log1p
    path = tmp_path / "other.skops"
    save_model(other, path)
    with pytest.raises(InputError, match="function"):
        load_model(path, isolate=False)
    moved = make_pipeline(FunctionTransformer(f_classif))
    path = tmp_path / "moved.skops"
    save_model(moved, path)
    with pytest.raises(InputError, match="function"):
        load_model(path, isolate=False)


def test_discretizer_edges_are_validated(saved, tmp_path):
    import copy

    model, _ = saved["kbins_ordinal"]
    evil = copy.deepcopy(model)
    kbd = evil.steps[0][1].transformers_[0][1]
    kbd.bin_edges_[0] = kbd.bin_edges_[0][::-1].copy()
    path = tmp_path / "edges.skops"
    save_model(evil, path)
    with pytest.raises(InputError, match="finite increasing edges"):
        load_model(path, isolate=False)
