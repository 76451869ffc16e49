"""Tests of anonml.encoding: categorical detection, schema checks, codes and bins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonml._errors import InputError
from anonml.encoding import (
    TableEncoder,
    _bin_thresholds,
    as_frame,
    check_table,
    detect_categorical,
    from_frame,
    resolve_columns,
)


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


@pytest.fixture
def mixed() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "obj": pd.Series(["b", "a", None, "b"], dtype=object),
            "string": pd.Series(["b", "a", None, "b"], dtype="str"),
            "cat": pd.Series(["b", "a", None, "b"], dtype="category"),
            "flag": [True, False, True, True],
            "nflag": pd.Series([True, None, False, True], dtype="boolean"),
            "int": [1, 2, 3, 4],
            "float": [1.0, 2.5, 3.0, 4.0],
            "uint8": np.array([1, 2, 3, 4], dtype=np.uint8),
            "Int64": pd.Series([1, 2, 3, 4], dtype="Int64"),
        }
    )


# -- categorical detection ---------------------------------------------------------------------
def test_detect_categorical_from_dtype(mixed: pd.DataFrame) -> None:
    cols = list(mixed.columns)
    assert detect_categorical(mixed, cols, None) == ["obj", "string", "cat", "flag", "nflag"]


def test_detect_categorical_restricted_to_columns(mixed: pd.DataFrame) -> None:
    assert detect_categorical(mixed, ["int", "cat", "float"], None) == ["cat"]


def test_detect_categorical_given_list(mixed: pd.DataFrame) -> None:
    # a numeric column may be declared categorical; the list is restricted to `columns`
    assert detect_categorical(mixed, ["int", "float"], ["int", "obj"]) == ["int"]


def test_detect_categorical_given_list_missing_a_string_column(mixed: pd.DataFrame) -> None:
    with pytest.raises(InputError) as info:
        detect_categorical(mixed, ["obj", "int"], ["int"])
    msg = _one_line(info)
    assert "'obj'" in msg and "categorical_features" in msg


def test_detect_categorical_given_list_unknown_column(mixed: pd.DataFrame) -> None:
    with pytest.raises(InputError) as info:
        detect_categorical(mixed, ["int"], ["nope"])
    assert "'nope' is not a column" in _one_line(info)


# -- frames, columns -------------------------------------------------------------------------
def test_as_frame_numpy_has_integer_columns() -> None:
    frame, was_array = as_frame(np.arange(6).reshape(3, 2))
    assert was_array and list(frame.columns) == [0, 1]
    frame, was_array = as_frame(pd.DataFrame({"a": [1]}))
    assert not was_array


def test_as_frame_object_array_infers_numbers() -> None:
    frame, _ = as_frame(np.array([["a", 1], ["b", 2]], dtype=object))
    assert pd.api.types.is_integer_dtype(frame[1].dtype)
    assert detect_categorical(frame, [0, 1], None) == [0]


@pytest.mark.parametrize(
    "bad, pattern",
    [
        (np.arange(3), "2-D"),
        (pd.Series([1, 2]), "Series"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), "duplicate column names a"),
    ],
)
def test_as_frame_errors(bad, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern) as info:
        as_frame(bad)
    _one_line(info)


def test_from_frame_round_trip() -> None:
    arr = np.array([[1, 2], [3, 4]], dtype=np.int32)
    frame, _ = as_frame(arr)
    out = from_frame(frame, arr)
    assert isinstance(out, np.ndarray) and out.dtype == np.int32
    np.testing.assert_array_equal(out, arr)
    df = pd.DataFrame({"a": [1]})
    assert from_frame(df, df) is df


def test_resolve_columns() -> None:
    df = pd.DataFrame({"a": [1], "b": [2], "c": [3]})
    assert resolve_columns(df, None) == ["a", "b", "c"]
    assert resolve_columns(df, "b") == ["b"]
    assert resolve_columns(df, ("c", "a")) == ["c", "a"]
    with pytest.raises(InputError, match="empty"):
        resolve_columns(df, [])
    with pytest.raises(InputError, match="'d' is not a column; columns are: a, b, c"):
        resolve_columns(df, ["a", "d"])


# -- schema checks -----------------------------------------------------------------------------
def test_check_table_accepts_clean_table(mixed: pd.DataFrame) -> None:
    cols = list(mixed.columns)
    assert check_table(mixed, cols, detect_categorical(mixed, cols, None)) is None


@pytest.mark.parametrize(
    "values", [[1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [1.0, -np.inf, 2.0]]
)
def test_check_table_nan_inf_in_numeric_column(values) -> None:
    df = pd.DataFrame({"ok": [1, 2, 3], "income": values})
    with pytest.raises(InputError) as info:
        check_table(df, ["ok", "income"], [])
    msg = _one_line(info)
    assert "'income'" in msg
    n_nan = int(np.isnan(values).sum())
    assert f"{n_nan} missing and {1 - n_nan} infinite" in msg


def test_check_table_nullable_int_missing_is_an_error() -> None:
    df = pd.DataFrame({"n": pd.Series([1, None, 3], dtype="Int64")})
    with pytest.raises(InputError, match="'n' has 1 missing"):
        check_table(df, ["n"], [])


def test_check_table_nan_in_unchecked_numeric_column_is_fine() -> None:
    df = pd.DataFrame({"qi": [1, 2, 3], "other": [1.0, np.nan, 2.0]})
    assert check_table(df, ["qi"], []) is None  # 'other' is not read


def test_check_table_missing_in_categorical_is_fine() -> None:
    df = pd.DataFrame({"c": ["a", None, np.nan]}, dtype=object)
    assert check_table(df, ["c"], ["c"]) is None


def test_check_table_mixed_types() -> None:
    df = pd.DataFrame({"zip": pd.Series(["1234", 5678, None], dtype=object)})
    with pytest.raises(InputError) as info:
        check_table(df, ["zip"], detect_categorical(df, ["zip"], None))
    msg = _one_line(info)
    assert "'zip'" in msg and "int" in msg and "str" in msg and "astype(str)" in msg


def test_check_table_complex_numbers_are_an_error() -> None:
    df = pd.DataFrame({"z": np.array([1 + 1j, 2 + 0j, 3 - 2j])})
    with pytest.raises(InputError) as info:
        check_table(df, ["z"], detect_categorical(df, ["z"], None))
    msg = _one_line(info)
    assert "'z'" in msg and "omplex" in msg


@pytest.mark.parametrize(
    "df, pattern",
    [(pd.DataFrame({"a": pd.Series([], dtype=int)}), "no rows"), (pd.DataFrame(index=[0, 1]), "no columns")],
)
def test_check_table_empty(df: pd.DataFrame, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern) as info:
        check_table(df, list(df.columns), [])
    _one_line(info)


# -- category codes ------------------------------------------------------------------------------
@pytest.mark.parametrize("column", ["obj", "string", "cat"])
def test_codes_known_sorted_missing_and_unknown(mixed: pd.DataFrame, column: str) -> None:
    enc = TableEncoder([column], [column]).fit(mixed)
    spec = enc.cats_[column]
    assert list(spec.categories) == ["a", "b"] and spec.has_missing and spec.n_codes == 3
    # known values 0..m-1 in sorted order, missing m
    np.testing.assert_array_equal(enc.codes(mixed, column), [1, 0, 2, 1])
    new = pd.DataFrame({column: pd.Series(["a", "zz", None, "b"], dtype=mixed[column].dtype.name)})
    if column == "cat":
        new[column] = pd.Categorical(["a", "zz", None, "b"])
    # unknown m+1 with 'ignore'
    np.testing.assert_array_equal(enc.codes(new, column, "ignore"), [0, 3, 2, 1])


def test_codes_unknown_value_error_names_column_and_value(mixed: pd.DataFrame) -> None:
    enc = TableEncoder(["obj"], ["obj"]).fit(mixed)
    new = pd.DataFrame({"obj": ["a", "zebra", "zebra"]})
    with pytest.raises(InputError) as info:
        enc.codes(new, "obj")
    msg = _one_line(info)
    assert "'obj'" in msg and "'zebra'" in msg and "(2 rows)" in msg
    assert "handle_unknown='ignore'" in msg


def test_codes_missing_unseen_in_fit_is_not_unknown() -> None:
    df = pd.DataFrame({"c": ["a", "b"]})
    enc = TableEncoder(["c"], ["c"]).fit(df)
    assert not enc.cats_["c"].has_missing
    np.testing.assert_array_equal(enc.codes(pd.DataFrame({"c": [None, "a"]}), "c"), [2, 0])


def test_codes_bool_columns(mixed: pd.DataFrame) -> None:
    enc = TableEncoder(["flag", "nflag"], ["flag", "nflag"]).fit(mixed)
    assert list(enc.cats_["flag"].categories) == [False, True]
    np.testing.assert_array_equal(enc.codes(mixed, "flag"), [1, 0, 1, 1])
    np.testing.assert_array_equal(enc.codes(mixed, "nflag"), [1, 2, 0, 1])


def test_codes_memoized_within_block(mixed: pd.DataFrame) -> None:
    enc = TableEncoder(["obj"], ["obj"]).fit(mixed)
    with enc.memoize(mixed):
        first = enc.codes(mixed, "obj")
        # computed once and kept in 1 byte a row; every call gets its own int64 copy
        kept = enc._memo[("obj", "error")]
        assert kept.dtype == np.int8
        second = enc.codes(mixed, "obj")
        assert enc._memo[("obj", "error")] is kept
        assert first is not second and first.dtype == second.dtype == np.int64
        np.testing.assert_array_equal(first, kept)
        np.testing.assert_array_equal(second, kept)
    assert not enc._memo
    assert enc.codes(mixed, "obj") is not enc.codes(mixed, "obj")


@pytest.mark.parametrize("nan", [False, True])
def test_fit_within_a_block_gives_the_same_views(mixed: pd.DataFrame, nan: bool) -> None:
    """Fitted inside ``memoize``, the encoder keeps the fit frame's ranks and category codes
    from its own factorization: the same values, categories, ranks, codes and one-hot matrix
    as an encoder fitted outside (-0.0 and 0.0 one value; with a NaN nothing is kept)."""
    frame = mixed.assign(x=[3.0, -0.0, np.nan if nan else 1e308, 0.0],
                         string=pd.Series(["b", "a", None, "é"], dtype="str"))
    cols = ["x", "int", "float", "obj", "string", "cat", "flag"]
    cat = ["obj", "string", "cat", "flag"]
    plain = TableEncoder(cols, cat).fit(frame)
    enc = TableEncoder(cols, cat)
    with enc.memoize(frame):
        enc.fit(frame)
        assert (("x", "rank") in enc._memo) is not nan
        for c in ["x", "int", "float"]:
            np.testing.assert_array_equal(enc.values_[c], plain.values_[c])
            np.testing.assert_array_equal(enc.ranks(frame, c), plain.ranks(frame, c))
        for c in cat:
            np.testing.assert_array_equal(enc.cats_[c].categories, plain.cats_[c].categories)
            np.testing.assert_array_equal(enc.codes(frame, c), plain.codes(frame, c))
        np.testing.assert_array_equal(enc.onehot(frame), plain.onehot(frame))
        rows = np.array([3, 0, 0, 2])  # some rows only, in any order
        np.testing.assert_array_equal(enc.onehot(frame, rows=rows), plain.onehot(frame)[rows])
        for a, b in zip(enc.bins(frame), plain.bins(frame)):
            np.testing.assert_array_equal(a, b)


def test_fit_keeps_ranks_of_few_distinct_values_only() -> None:
    """Ranks are kept in 1-2 bytes a row: a column of more distinct values has none kept, and
    the same ranks and bins either way."""
    from anonml.encoding import _RANK_MEMO_MAX

    x = np.arange(_RANK_MEMO_MAX + 2, dtype=np.float64)[::-1]
    frame = pd.DataFrame({"many": x, "few": x % 100})
    plain = TableEncoder(["many", "few"], []).fit(frame)
    enc = TableEncoder(["many", "few"], [])
    with enc.memoize(frame):
        enc.fit(frame)
        assert ("many", "rank") not in enc._memo
        assert enc._memo[("few", "rank")].dtype == np.int8
        for c in ["many", "few"]:
            np.testing.assert_array_equal(enc.ranks(frame, c), plain.ranks(frame, c))
        np.testing.assert_array_equal(enc.bins(frame)[0], plain.bins(frame)[0])


def test_onehot_layout() -> None:
    df = pd.DataFrame({"x": [1.5, 2.0, 3.0], "c": ["b", "a", None], "d": ["u", "v", "u"]})
    enc = TableEncoder(["x", "c", "d"], ["c", "d"]).fit(df)
    M = enc.onehot(df)
    # rank of x | c=a c=b c=missing | d=u d=v
    expected = [[0, 0, 1, 0, 1, 0], [1, 1, 0, 0, 0, 1], [2, 0, 0, 1, 1, 0]]
    np.testing.assert_array_equal(M, np.array(expected, dtype=np.float32))
    # unknown values (and missing, when unseen in fit) are all-zero blocks; a number not seen
    # in fit ranks between its neighbours (i - 0.5, i = the number of fit values below it)
    new = pd.DataFrame({"x": [0.0, 2.5], "c": ["zz", "a"], "d": ["u", None]})
    np.testing.assert_array_equal(
        enc.onehot(new, "ignore"),
        np.array([[-0.5, 0, 0, 0, 1, 0], [1.5, 1, 0, 0, 0, 0]], np.float32),
    )


def test_onehot_ranks_keep_the_order_of_extreme_and_subnormal_floats() -> None:
    # float32 (scikit-learn's tree dtype) overflows at 3.4e38 and flushes subnormals to 0
    x = [1.7e308, -1.7e308, 5e-324, 0.0, -5e-324, 1e-323]
    df = pd.DataFrame({"x": x})
    M = TableEncoder(["x"], []).fit(df).onehot(df)
    assert np.isfinite(M).all()
    np.testing.assert_array_equal(M[:, 0], np.argsort(np.argsort(x)).astype(np.float32))


def test_extreme_floats_have_finite_zscores_and_bins() -> None:
    df = pd.DataFrame({"x": [1.79e308, -1.79e308, 0.0, 1e308, 5e-324]})
    enc = TableEncoder(["x"], []).fit(df)
    z = enc.zscores(df)
    assert np.isfinite(z).all()
    assert np.argsort(z[:, 0]).tolist() == np.argsort(df["x"].to_numpy()).tolist()
    B, _, n_bins = enc.bins(df)
    assert n_bins.tolist() == [5] and sorted(B[:, 0].tolist()) == [0, 1, 2, 3, 4]
    assert np.isfinite(enc.thresholds_["x"]).all()


def test_zscores() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "k": [5, 5, 5]})
    enc = TableEncoder(["x", "k"], []).fit(df)
    sd = np.std([1.0, 2.0, 3.0])
    np.testing.assert_allclose(enc.zscores(df), np.c_[[-1 / sd, 0, 1 / sd], [0, 0, 0]])


# -- bins ------------------------------------------------------------------------------------------
def test_bin_thresholds_are_midpoints_of_distinct_values() -> None:
    np.testing.assert_array_equal(_bin_thresholds(np.array([3.0, 1.0, 2.0, 2.0]), 255), [1.5, 2.5])
    assert _bin_thresholds(np.array([7.0, 7.0, 7.0]), 255).size == 0


def test_bin_thresholds_quantiles_when_too_many_values() -> None:
    np.testing.assert_array_equal(_bin_thresholds(np.arange(10.0), 2), [4.5])
    np.testing.assert_array_equal(_bin_thresholds(np.arange(10.0), 4), [2.5, 4.5, 6.5])


@pytest.mark.parametrize("max_bins", [2, 3, 7, 255])
def test_bins_respect_max_bins_and_order(max_bins: int) -> None:
    rng = np.random.default_rng()
    x = np.round(rng.normal(size=500), 1)
    df = pd.DataFrame({"x": x})
    enc = TableEncoder(["x"], [], max_bins=max_bins).fit(df)
    B, is_cat, n_bins = enc.bins(df)
    assert n_bins[0] <= max_bins and not is_cat[0]
    assert B.min() >= 0 and B.max() < n_bins[0]
    # bins are monotone in the value: a larger value never gets a smaller bin
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(B[order, 0]) >= 0)
    if len(np.unique(x)) <= max_bins:  # one bin per distinct value
        assert len(np.unique(B[:, 0])) == len(np.unique(x))


def test_bins_small_example_with_categorical() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0, 2.0, 3.0], "c": ["b", "a", None, "b"]})
    enc = TableEncoder(["x", "c"], ["c"]).fit(df)
    B, is_cat, n_bins = enc.bins(df)
    np.testing.assert_array_equal(B, [[0, 1], [1, 0], [1, 2], [2, 1]])
    np.testing.assert_array_equal(is_cat, [False, True])
    np.testing.assert_array_equal(n_bins, [3, 4])  # 2 thresholds; a, b, missing, unknown
    # values outside the training range fall in the end bins; unknown category -> last code
    new = pd.DataFrame({"x": [-10.0, 99.0], "c": ["zz", "a"]})
    np.testing.assert_array_equal(enc.bins(new, "ignore")[0], [[0, 3], [2, 0]])
