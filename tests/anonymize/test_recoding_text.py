"""The recoded text columns gathered through their distinct values
(:func:`anonml.anonymize._pipeline._distinct_text`, BENCHMARKS.md "Session 16"): the same
values, missing values and dtype as pandas' own gather of one value per group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonml.anonymize import _pipeline
from anonml.anonymize._pipeline import Recoding, _distinct_text

pytest.importorskip("pyarrow")  # the path under test is for Arrow-backed text only


def _arrow_backed(dtype: str) -> bool:
    """Whether this pandas holds ``dtype`` in Arrow: pandas 3's "str" is, pandas 2's is a
    NumPy object column (the plain gather)."""
    return isinstance(pd.array(["a"], dtype=dtype), pd.arrays.ArrowStringArray)


TEXT_DTYPES = [pytest.param(d, marks=pytest.mark.skipif(
    not _arrow_backed(d), reason=f"{d!r} is not Arrow-backed in this pandas"))
    for d in ("str", "string[pyarrow]")]


def _plain(values, groups) -> pd.Series:
    return pd.Series(values.take(groups), dtype=values.dtype)


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_text_column_through_distinct_values_is_the_plain_gather(dtype, data) -> None:
    """Random per-group text (missing values, empty strings, non-ASCII, one value only, up to
    a quarter of the groups distinct) gathered for 2^16 rows or more: equal to ``take``."""
    words = data.draw(st.lists(st.one_of(st.none(), st.text(max_size=6)), min_size=1,
                               max_size=12))
    n_groups = data.draw(st.integers(4 * len(words), 4 * len(words) + 300))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    per = pd.array(np.array(words, dtype=object)[rng.integers(0, len(words), n_groups)],
                   dtype=dtype)
    groups = rng.integers(0, n_groups, _pipeline._TEXT_MIN_ROWS + 17)
    plan = Recoding(groups, pd.RangeIndex(groups.size), {"c": per})
    got = plan.column("c")
    assert plan._text["c"] is not None  # the path under test ran
    pd.testing.assert_series_equal(got, _plain(per, groups), check_names=False)
    assert got.dtype == per.dtype


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_text_column_chunked_values(dtype) -> None:
    """Per-group values held in several Arrow chunks give the same column."""
    import pyarrow as pa

    one = pd.array(["x", None, "yy"] * 50, dtype=dtype)
    chunked = type(one)(pa.chunked_array([one.__arrow_array__().combine_chunks()] * 2),
                        **({"dtype": one.dtype} if "dtype" in type(one).__init__.__code__
                           .co_varnames else {}))
    if chunked.dtype != one.dtype:
        pytest.skip("this pandas builds the array with another dtype")
    groups = np.random.default_rng(3).integers(0, len(chunked), _pipeline._TEXT_MIN_ROWS)
    plan = Recoding(groups, pd.RangeIndex(groups.size), {"c": chunked})
    pd.testing.assert_series_equal(plan.column("c"), _plain(chunked, groups),
                                   check_names=False)


def test_text_column_plain_gather_where_it_does_not_pay() -> None:
    """Below 2^16 rows, with many distinct values, or for columns not held by Arrow (object,
    numbers, python strings), the plain gather runs."""
    rng = np.random.default_rng(0)
    many = pd.array([f"v{i}" for i in range(1000)], dtype="string[pyarrow]")
    assert _distinct_text(many, 1 << 20) is None  # every group its own value
    few = pd.array(["a", "b"] * 500, dtype="string[pyarrow]")
    assert _distinct_text(few, (1 << 16) - 1) is None
    assert _distinct_text(few, 1 << 16) is not None
    assert _distinct_text(pd.array(["a", "b"] * 500, dtype="string[python]"), 1 << 20) is None
    assert _distinct_text(np.array(["a", "b"] * 500, dtype=object), 1 << 20) is None
    assert _distinct_text(np.arange(1000.0), 1 << 20) is None
    assert _distinct_text(pd.array([], dtype="string[pyarrow]"), 1 << 20) is None
    codes = _distinct_text(pd.array(["a"] * 1000, dtype="string[pyarrow]"), 1 << 20)[1]
    assert codes.dtype == np.int8 and not codes.any()
    groups = rng.integers(0, 1000, 1 << 16)
    plan = Recoding(groups, pd.RangeIndex(groups.size), {"c": many})
    pd.testing.assert_series_equal(plan.column("c"), _plain(many, groups), check_names=False)


def test_fit_on_text_columns_gives_the_plain_gathers_table(monkeypatch) -> None:
    """A fit on 80,000 rows (text QIs with missing values) releases the same table with
    the text columns gathered through their distinct values as with the plain gather."""
    from anonml import AccuracyGuidedAnonymizer
    from anonml.datasets import load_adult

    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["8"])
    rng = np.random.default_rng(5)
    pick = rng.integers(0, X.shape[0], 80_000)
    X = X[qi].iloc[pick].reset_index(drop=True)
    y = np.asarray(y)[pick]
    text = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    assert text
    for c in text:  # Arrow-backed (pandas 2 reads text as object), some missing values
        if not isinstance(X[c].array, pd.arrays.ArrowStringArray):
            X[c] = X[c].astype("string[pyarrow]")
        X.loc[rng.random(X.shape[0]) < 0.03, c] = None
    calls = []
    real = _pipeline._distinct_text

    def spy(values, n_rows):
        out = real(values, n_rows)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_pipeline, "_distinct_text", spy)
    got = AccuracyGuidedAnonymizer(k=50, quasi_identifiers=qi, tree="hist",
                                   random_state=0).fit_transform(X, y)
    assert any(calls)
    monkeypatch.setattr(_pipeline, "_distinct_text", lambda values, n_rows: None)
    want = AccuracyGuidedAnonymizer(k=50, quasi_identifiers=qi, tree="hist",
                                    random_state=0).fit_transform(X, y)
    pd.testing.assert_frame_equal(got, want)
    for c in text:
        assert got[c].dtype == X[c].dtype
