"""Tests of anonml.datasets: bundled data, loaders and the Dataset container."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonml._errors import InputError
from anonml.datasets import Dataset, load_adult, load_loan, load_nursery

ADULT_12 = (
    "age", "workclass", "education-num", "marital-status", "occupation", "relationship",
    "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
)  # fmt: skip
LOAN_PAPER = (
    "emp_length", "home_ownership", "annual_inc", "zip_code", "delinq_2yrs",
    "inq_last_6mths", "open_acc", "total_acc", "pub_rec", "revol_bal", "revol_util",
)  # fmt: skip
LOADERS = {"adult": load_adult, "nursery": load_nursery, "loan": load_loan}
DATA_FILES = ("adult.csv.gz", "nursery.csv.gz", "loan.csv.gz")
SRC_ANONML = Path(__file__).resolve().parents[1] / "src" / "anonml"


@pytest.fixture(scope="module")
def adult() -> Dataset:
    return load_adult()


@pytest.fixture(scope="module")
def nursery() -> Dataset:
    return load_nursery()


@pytest.fixture(scope="module")
def loan() -> Dataset:
    return load_loan()


@pytest.fixture(scope="module", params=sorted(LOADERS))
def any_dataset(request: pytest.FixtureRequest) -> Dataset:
    return LOADERS[request.param]()


# -- generic structure ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows"), [("adult", 48_842), ("nursery", 12_960), ("loan", 39_786)]
)
def test_row_counts_and_index(name: str, rows: int) -> None:
    ds = LOADERS[name]()
    assert ds.name == name
    assert len(ds.frame) == rows
    assert ds.frame.index.equals(pd.RangeIndex(rows))
    assert list(ds.frame.columns) == [*ds.feature_names, ds.target]


def test_qi_sets_are_read_only_feature_columns(any_dataset: Dataset) -> None:
    assert any_dataset.qi_sets
    for name, qis in any_dataset.qi_sets.items():
        assert isinstance(qis, tuple) and qis, name
        assert len(set(qis)) == len(qis)
        for col in qis:
            assert col in any_dataset.frame.columns
            assert col in any_dataset.feature_names
    with pytest.raises(TypeError):
        any_dataset.qi_sets["new"] = ("x",)  # type: ignore[index]


def test_categorical_detection_matches_dtype(any_dataset: Dataset) -> None:
    frame = any_dataset.frame
    expected = tuple(
        c for c in any_dataset.feature_names if not pd.api.types.is_numeric_dtype(frame[c])
    )
    assert any_dataset.categorical_features == expected
    for col in any_dataset.categorical_features:
        assert frame[col].map(type).eq(str).all(), col  # strings only, no NaN


def test_x_y_and_metadata(any_dataset: Dataset) -> None:
    assert list(any_dataset.X.columns) == list(any_dataset.feature_names)
    assert any_dataset.y.name == any_dataset.target
    assert any_dataset.target not in any_dataset.feature_names
    assert any_dataset.description and any_dataset.citation and any_dataset.license
    with pytest.raises(dataclasses.FrozenInstanceError):
        any_dataset.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_second_load_is_independent_copy(name: str) -> None:
    first = LOADERS[name]()
    col = first.feature_names[0]
    original = first.frame[col].iloc[0]
    first.frame.loc[0, col] = "mutated" if isinstance(original, str) else -12345
    first.frame.loc[1, first.target] = "mutated"
    first.frame["extra"] = 1
    if first.split is not None:
        first.split.iloc[0] = "test"
    second = LOADERS[name]()
    assert second.frame is not first.frame
    assert second.frame[col].iloc[0] == original
    assert second.frame.loc[1, second.target] != "mutated"
    assert "extra" not in second.frame.columns
    if second.split is not None:
        assert second.split.iloc[0] == "train"


# -- Adult -------------------------------------------------------------------------------


def test_adult_features_and_dtypes(adult: Dataset) -> None:
    assert adult.target == "income"
    assert adult.feature_names == ADULT_12
    assert "fnlwgt" not in adult.frame.columns and "education" not in adult.frame.columns
    numeric = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
    for col in numeric:
        assert adult.frame[col].dtype == np.int64, col
    assert adult.categorical_features == tuple(c for c in ADULT_12 if c not in numeric)
    assert adult.missing_quasi_identifiers == ()


def test_adult_labels_cleaned_and_class_counts(adult: Dataset) -> None:
    assert set(adult.y.unique()) == {"<=50K", ">50K"}
    counts = adult.y.groupby(adult.split).value_counts()
    assert counts[("train", "<=50K")] == 24_720
    assert counts[("train", ">50K")] == 7_841
    assert counts[("test", "<=50K")] == 12_435
    assert counts[("test", ">50K")] == 3_846


def test_adult_missing_values_stay_question_mark(adult: Dataset) -> None:
    assert not adult.frame.isna().any().any()
    missing = (adult.frame == "?").sum()
    assert missing["workclass"] == 2_799
    assert missing["occupation"] == 2_809
    assert missing["native-country"] == 857


def test_adult_qi_sets(adult: Dataset) -> None:
    assert set(adult.qi_sets) == {"12", "10", "8"}
    assert adult.qi_sets["12"] == ADULT_12
    assert adult.qi_sets["10"] == tuple(
        c for c in ADULT_12 if c not in ("capital-gain", "capital-loss")
    )
    assert adult.qi_sets["8"] == (
        "workclass", "marital-status", "occupation", "relationship", "race", "sex",
        "native-country", "education-num",
    )  # fmt: skip


def test_adult_published_split(adult: Dataset) -> None:
    assert adult.split is not None
    assert adult.split.index.equals(adult.frame.index)
    assert adult.split.value_counts().to_dict() == {"train": 32_561, "test": 16_281}
    assert (adult.split.iloc[:32_561] == "train").all()
    X_train, X_test, y_train, y_test = adult.train_test_split(test_size=0.5, random_state=3)
    assert (len(X_train), len(X_test), len(y_train), len(y_test)) == (32_561, 16_281) * 2
    assert X_test.index.equals(adult.split.index[adult.split == "test"])
    assert X_train.index.equals(y_train.index) and X_test.index.equals(y_test.index)
    assert list(X_train.columns) == list(ADULT_12)


# -- Nursery -----------------------------------------------------------------------------


def test_nursery(nursery: Dataset) -> None:
    assert nursery.target == "class"
    assert len(nursery.feature_names) == 8
    assert nursery.categorical_features == nursery.feature_names
    assert "social" in nursery.feature_names
    assert dict(nursery.qi_sets) == {"all": nursery.feature_names}
    assert nursery.split is None
    assert nursery.y.value_counts().to_dict() == {
        "not_recom": 4_320, "priority": 4_266, "spec_prior": 4_044, "very_recom": 328,
        "recommend": 2,
    }  # fmt: skip
    assert not nursery.frame.duplicated(subset=list(nursery.feature_names)).any()


@settings(max_examples=10, deadline=None)
@given(test_size=st.floats(0.05, 0.95), seed=st.integers(0, 2**31 - 1))
def test_random_split_is_stratified_partition(test_size: float, seed: int) -> None:
    ds = load_nursery()
    X_train, X_test, y_train, y_test = ds.train_test_split(test_size, random_state=seed)
    assert len(X_train) + len(X_test) == len(ds.frame)
    assert X_train.index.intersection(X_test.index).empty
    assert X_train.index.equals(y_train.index) and X_test.index.equals(y_test.index)
    assert abs(len(X_test) - test_size * len(ds.frame)) <= 1
    big = ds.y.value_counts().index[0]
    assert abs((y_test == big).mean() - (ds.y == big).mean()) < 0.01
    again = ds.train_test_split(test_size, random_state=seed)
    assert again[1].index.equals(X_test.index)


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, 12_960, True, "a"])
def test_random_split_rejects_bad_test_size(nursery: Dataset, bad: object) -> None:
    with pytest.raises(InputError):
        nursery.train_test_split(test_size=bad)  # type: ignore[arg-type]


# -- Lending Club ------------------------------------------------------------------------


def test_loan_structure(loan: Dataset) -> None:
    assert loan.target == "loan_status"
    assert loan.y.value_counts().to_dict() == {"Fully Paid": 34_116, "Charged Off": 5_670}
    assert loan.feature_names == tuple(c for c in loan.frame.columns if c != "loan_status")
    assert len(loan.feature_names) == 15
    assert loan.categorical_features == (
        "term", "emp_length", "home_ownership", "verification_status", "zip_code", "addr_state",
    )  # fmt: skip
    assert loan.split is None
    assert loan.qi_sets["paper"] == LOAN_PAPER
    assert loan.qi_sets["all"] == loan.feature_names
    assert loan.missing_quasi_identifiers == (
        "purpose", "dti", "mths_since_last_delinq", "mths_since_last_record", "hardship_flag",
        "last_pymnt_amnt", "installment",
    )  # fmt: skip
    assert not set(loan.missing_quasi_identifiers) & set(loan.frame.columns)
    assert len(loan.qi_sets["paper"]) + len(loan.missing_quasi_identifiers) == 18


def test_loan_values(loan: Dataset) -> None:
    first = loan.frame.iloc[0]
    assert first["loan_amnt"] == 5000 and first["annual_inc"] == 24000
    assert (first["term"], first["emp_length"]) == ("36 months", "10+ years")
    assert (first["home_ownership"], first["zip_code"], first["addr_state"]) == (
        "RENT", "860xx", "AZ",
    )  # fmt: skip
    assert (loan.frame["emp_length"] == "n/a").sum() == 1_078  # kept, not turned into NaN
    assert loan.frame["zip_code"].str.fullmatch(r"\d{3}xx").all()
    numeric = set(loan.feature_names) - set(loan.categorical_features)
    assert numeric >= {"annual_inc", "revol_bal", "revol_util", "loan_amnt", "total_acc"}


def test_loan_revol_util_parsed(loan: Dataset) -> None:
    util = loan.frame["revol_util"]
    assert util.dtype == np.float64
    assert int(util.isna().sum()) == 50
    assert util.iloc[0] == pytest.approx(83.7)
    assert util.iloc[1] == pytest.approx(9.4)
    assert util.min() >= 0 and util.max() <= 200
    assert loan.frame.drop(columns="revol_util").notna().all().all()


# -- package data and provenance ---------------------------------------------------------


def _attribution() -> str:
    return (resources.files("anonml.datasets") / "data" / "ATTRIBUTION.md").read_text("utf-8")


def test_data_files_match_attribution_sha256() -> None:
    row = re.compile(r"^\|\s*([\w.]+\.csv\.gz)\s*\|.*\|\s*([0-9a-f]{64})\s*\|", re.M)
    stated = dict(row.findall(_attribution()))
    assert set(stated) == set(DATA_FILES)
    for name in DATA_FILES:
        blob = (resources.files("anonml.datasets") / "data" / name).read_bytes()
        assert hashlib.sha256(blob).hexdigest() == stated[name], name


def test_attribution_states_provenance() -> None:
    text = _attribution()
    for needle in ("10.24432/C5XW20", "10.24432/C5P88W", "CC BY 4.0", "Becker", "Kohavi",
                   "Rajkovic", "LendingClub", "2015", "unclear"):  # fmt: skip
        assert needle in text, needle


def test_no_module_reads_the_shared_source_data() -> None:
    modules = sorted(SRC_ANONML.rglob("*.py"))
    assert SRC_ANONML / "datasets" / "_loaders.py" in modules
    for path in modules:
        text = path.read_text("utf-8")
        for needle in ("shared/datasets", "../shared"):
            assert needle not in text, f"{path} references {needle!r}"
