"""Holes a review of the new code found, each closed and kept closed.

* A mapping's ``sensitive`` (or any other text parameter or column name) was any text of any
  length, and the report repeated it: a place to carry training records out in the file.
* A ``PolynomialFeatures`` whose degrees or width a file sets huge made the exact count of its
  output columns run for ever.
* A dataset folder could pull a Parquet file from outside itself through a link.
* ``DPSVC`` with an epsilon so small its noise overflows gave non-finite weights, and a file
  could state an ``epsilon_spent_`` other than the epsilon its refits use.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.tree import DecisionTreeClassifier

from anonml import MondrianAnonymizer
from anonml._errors import InputError
from anonml.anonymize._model import release_copy
from anonml.dp import DPSVC
from anonml.modelfile._family import _json_scalar
from anonml.modelfile._validate import validate_model
from anonml.safemodel import verify_mapping


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.integers(0, 9, n),
                         "disease": rng.choice(["a", "b", "c"], n)}), rng.integers(0, 2, n)


def _one_line(exc, *words):
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("claim", [{"l": 2}, {}])
def test_long_sensitive_text_is_refused(table, claim):
    X, y = table
    est = MondrianAnonymizer(k=5, quasi_identifiers=["age", "zip"],
                             **({"sensitive": "disease", **claim} if claim else {})).fit(X, y)
    copy = release_copy(est)
    copy.sensitive = "ROWS:" + X.to_csv(index=False)  # the training table, in one parameter
    with pytest.raises(InputError) as err:
        verify_mapping(copy, where="the mapping")
    _one_line(err, "is not a column name or a label name of at most 256 printable characters")
    assert len(str(err.value)) < 400


def test_long_text_parameter_or_column_name_is_refused(table):
    X, y = table
    copy = release_copy(MondrianAnonymizer(k=5, quasi_identifiers=["age", "zip"]).fit(X, y))
    copy.representative = "x" * 5000
    with pytest.raises(InputError) as err:
        verify_mapping(copy, where="the mapping")
    _one_line(err, "its representative holds a text of 5,000 characters")
    copy = release_copy(MondrianAnonymizer(k=5, quasi_identifiers=["age", "zip"]).fit(X, y))
    copy.columns_ = [*copy.columns_[:-1], "secret\n" * 100]
    with pytest.raises(InputError) as err:
        verify_mapping(copy, where="the mapping")
    _one_line(err, "its columns_ holds a text of 700 characters")


def test_hyperparameter_text_in_the_facts_is_bounded():
    assert _json_scalar("short") == "short"
    long = _json_scalar("y" * 10_000)
    assert len(long) == 200 and long.endswith("...")


@pytest.mark.parametrize("lo,hi,nf", [(0, 10**9, 10**6), (0, 6, 3), (3, 2, 3), (True, 2, 3)])
def test_polynomial_degrees_are_bounded_before_counting(lo, hi, nf):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    model = make_pipeline(PolynomialFeatures(2), DecisionTreeClassifier(max_depth=2)).fit(
        X, (X[:, 0] > 0).astype(int))
    poly = model.steps[0][1]
    poly._min_degree, poly._max_degree, poly.n_features_in_ = lo, hi, nf
    t0 = time.monotonic()
    with pytest.raises(InputError) as err:
        validate_model(model, where="model file 'x.skops': model")
    assert time.monotonic() - t0 < 5  # refused at once, not after counting
    _one_line(err, "are not whole numbers 0 <= min <= max <= 5")


def test_dataset_link_outside_the_folder_is_refused(tmp_path):
    pytest.importorskip("pyarrow")
    from anonml.engine._dataset import list_files

    frame = pd.DataFrame({"a": [1, 2, 3]})
    data, other = tmp_path / "data", tmp_path / "other_project"
    data.mkdir()
    other.mkdir()
    frame.to_parquet(data / "part-0.parquet")
    frame.to_parquet(other / "secret.parquet")
    assert list_files(str(data)) == [str(data / "part-0.parquet")]
    os.symlink(other / "secret.parquet", data / "part-1.parquet")
    with pytest.raises(InputError) as err:
        list_files(str(data))
    _one_line(err, "part-1.parquet", "outside the dataset's folder")
    with pytest.raises(InputError) as err:
        list_files(str(data / "*.parquet"))
    _one_line(err, "outside the dataset's folder")


def test_dp_svc_tiny_epsilon_is_refused_not_nan():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(80, 2))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings(), pytest.raises(InputError) as err:
        warnings.simplefilter("ignore")
        DPSVC(epsilon=1e-308, bounds=(-1, 1), classes=[0, 1], random_state=0).fit(X, y)
    _one_line(err, "epsilon=1e-308", "larger epsilon")


def test_dp_svc_epsilon_spent_must_be_its_epsilon():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(80, 2))
    y = (X[:, 0] > 0).astype(int)
    model = DPSVC(epsilon=5.0, bounds=(-1, 1), classes=[0, 1], random_state=0).fit(X, y)
    validate_model(model, where="m")
    model.epsilon = 1000.0  # the refits would use 1000 while the rules read 5
    with pytest.raises(InputError) as err:
        validate_model(model, where="m")
    _one_line(err, "epsilon_spent_ 5.0 is not its epsilon 1000.0")
