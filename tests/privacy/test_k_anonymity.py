"""Tests of anonml.privacy.k_anonymity and equivalence_classes on hand-computed tiny tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonml._errors import InputError
from anonml.privacy import equivalence_classes, k_anonymity


@pytest.fixture
def table() -> pd.DataFrame:
    # classes on (age, sex): (30,F) x3, (40,M) x1, (30,M) x2; zip is not a QI
    return pd.DataFrame(
        {
            "age": [30, 30, 40, 30, 30, 30],
            "sex": ["F", "F", "M", "M", "F", "M"],
            "zip": ["a", "b", "c", "d", "e", "f"],
        }
    )


def test_smallest_class_size(table: pd.DataFrame) -> None:
    assert k_anonymity(table, ["age", "sex"]) == 1
    assert k_anonymity(table, ["age"]) == 1  # 40 occurs once
    assert k_anonymity(table, ["sex"]) == 3  # F x3, M x3
    assert k_anonymity(table.drop(index=2), ["age", "sex"]) == 2


def test_all_columns_when_qi_is_none(table: pd.DataFrame) -> None:
    assert k_anonymity(table[["sex"]], None) == 3
    assert k_anonymity(table, None) == 1  # zip is unique


def test_equivalence_classes_in_order_of_first_appearance(table: pd.DataFrame) -> None:
    class_of_row, sizes = equivalence_classes(table, ["age", "sex"])
    np.testing.assert_array_equal(class_of_row, [0, 0, 1, 2, 0, 2])
    np.testing.assert_array_equal(sizes, [3, 1, 2])
    assert class_of_row.dtype.kind == "i" and sizes.dtype.kind == "i"


def test_single_string_qi_is_one_column(table: pd.DataFrame) -> None:
    assert k_anonymity(table, "sex") == 3


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["a", None, np.nan, "a", None], dtype=object),
        pd.Series(["a", None, np.nan, "a", None], dtype="str"),
        pd.Series(["a", None, np.nan, "a", None], dtype="category"),
        pd.Series([1.0, np.nan, np.nan, 1.0, np.nan]),
        pd.Series([1, None, None, 1, None], dtype="Int64"),
    ],
    ids=["object", "str", "category", "float", "Int64"],
)
def test_missing_values_count_as_one_value(column: pd.Series) -> None:
    t = pd.DataFrame({"c": column, "d": [1, 1, 1, 1, 1]})
    class_of_row, sizes = equivalence_classes(t, ["c", "d"])
    # 'a' x2 and missing x3 (None and NaN are the same missing value)
    np.testing.assert_array_equal(class_of_row, [0, 1, 1, 0, 1])
    np.testing.assert_array_equal(sizes, [2, 3])
    assert k_anonymity(t, ["c", "d"]) == 2


def test_missing_does_not_collide_with_other_values() -> None:
    # a mixed code that treated missing as -1 would merge (x, NaN) with (w, last value)
    t = pd.DataFrame({"a": ["w", "x", "w", "x"], "b": ["p", np.nan, "q", "q"]}, dtype=object)
    assert k_anonymity(t, ["a", "b"]) == 1
    _, sizes = equivalence_classes(t, ["a", "b"])
    assert sizes.tolist() == [1, 1, 1, 1]


def test_numpy_input_with_int_positions() -> None:
    arr = np.array([[1, 5, 0], [1, 5, 1], [2, 6, 2], [2, 6, 3], [2, 7, 4]])
    assert k_anonymity(arr, [0]) == 2
    assert k_anonymity(arr, [0, 1]) == 1
    assert k_anonymity(arr, 1) == 1
    class_of_row, sizes = equivalence_classes(arr, [0, 1])
    np.testing.assert_array_equal(class_of_row, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(sizes, [2, 2, 1])
    smallest, violations = k_anonymity(arr, [0, 1], k=2, return_violations=True)
    assert smallest == 1
    assert list(violations.columns) == [0, 1, "count"]
    assert violations.values.tolist() == [[2, 7, 1]]


def test_numpy_object_array() -> None:
    arr = np.array([["a", 1], ["a", 1], ["b", 2]], dtype=object)
    assert k_anonymity(arr, [0, 1]) == 1
    assert k_anonymity(arr[:2], [0, 1]) == 2


def test_return_violations_contents_and_order() -> None:
    t = pd.DataFrame(
        {
            "age": [20, 30, 30, 40, 40, 40, 50, 50, 60],
            "sex": ["F", "M", "M", "F", "F", "F", "M", "M", "F"],
            "other": range(9),
        },
        index=[f"r{i}" for i in range(9)],
    )
    # classes in order of appearance: (20,F)=1, (30,M)=2, (40,F)=3, (50,M)=2, (60,F)=1
    smallest, v = k_anonymity(t, ["age", "sex"], k=3, return_violations=True)
    assert smallest == 1
    assert list(v.columns) == ["age", "sex", "count"]
    # smallest first; equal counts keep the order of first appearance
    assert v.to_dict("list") == {
        "age": [20, 60, 30, 50],
        "sex": ["F", "F", "M", "M"],
        "count": [1, 1, 2, 2],
    }
    assert list(v.index) == [0, 1, 2, 3]
    assert v["age"].dtype == t["age"].dtype


def test_return_violations_empty_when_k_holds(table: pd.DataFrame) -> None:
    smallest, v = k_anonymity(table, ["sex"], k=3, return_violations=True)
    assert smallest == 3
    assert len(v) == 0
    assert list(v.columns) == ["sex", "count"]


def test_return_violations_keeps_missing_values() -> None:
    t = pd.DataFrame({"c": ["a", "a", None]}, dtype=object)
    smallest, v = k_anonymity(t, ["c"], k=2, return_violations=True)
    assert smallest == 1
    assert len(v) == 1 and pd.isna(v.loc[0, "c"]) and v.loc[0, "count"] == 1


def test_return_violations_needs_k(table: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="k=") as info:
        k_anonymity(table, ["age"], return_violations=True)
    assert "\n" not in str(info.value)
    assert "return_violations" in str(info.value)


def test_empty_table_is_zero() -> None:
    empty = pd.DataFrame({"age": pd.Series([], dtype=int), "sex": pd.Series([], dtype=object)})
    assert k_anonymity(empty, ["age", "sex"]) == 0
    class_of_row, sizes = equivalence_classes(empty, ["age"])
    assert class_of_row.size == 0 and sizes.size == 0
    smallest, v = k_anonymity(empty, ["age"], k=2, return_violations=True)
    assert smallest == 0 and len(v) == 0
    assert k_anonymity(np.zeros((0, 2)), [0, 1]) == 0


def test_unknown_qi_is_an_input_error(table: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="'zipcode' is not a column") as info:
        k_anonymity(table, ["age", "zipcode"])
    assert "\n" not in str(info.value)
    assert "age, sex, zip" in str(info.value)


def test_qi_listed_twice_is_an_input_error(table: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="listed twice"):
        k_anonymity(table, ["age", "age"])


def test_many_columns_do_not_overflow_the_mixed_code() -> None:
    # 80 binary columns: 2**80 combinations, more than an int64 holds
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(40, 80))
    bits = np.vstack([bits, bits[:20]])  # rows 0..19 occur twice, 20..39 once
    t = pd.DataFrame(bits)
    _, sizes = equivalence_classes(t, None)
    assert sorted(sizes.tolist()) == [1] * 20 + [2] * 20
    assert k_anonymity(t, None) == 1
    assert k_anonymity(t.iloc[:20], None) == 1
    assert k_anonymity(pd.concat([t.iloc[:20], t.iloc[:20]]), None) == 2


@settings(max_examples=60, deadline=None, database=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", None]),
            st.sampled_from([1.0, 2.0, np.nan]),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_agrees_with_pandas_groupby(rows: list[tuple]) -> None:
    t = pd.DataFrame(rows, columns=["s", "f", "i"])
    t["s"] = t["s"].astype(object)
    expected = t.groupby(["s", "f", "i"], dropna=False, sort=False).size()
    class_of_row, sizes = equivalence_classes(t, ["s", "f", "i"])
    assert sorted(sizes.tolist()) == sorted(expected.tolist())
    assert k_anonymity(t, ["s", "f", "i"]) == int(expected.min())
    # rows in one class agree on every QI; rows in different classes differ
    key = t.fillna({"s": "<NA>", "f": -1.0}).apply(tuple, axis=1)
    for c in range(sizes.size):
        assert key[class_of_row == c].nunique() == 1
    assert key.nunique() == sizes.size


def test_classes_of_integer_columns_coded_by_rank_equal_pandas_groups():
    # integer and bool columns of small range are coded by rank (no hash table); the classes
    # and their numbering (first appearance) are those of a pandas groupby on the same columns
    from anonml.privacy import equivalence_classes

    rng = np.random.default_rng(7)
    n = 5000
    df = pd.DataFrame({
        "neg": rng.integers(-50, 50, n),
        "small": rng.integers(0, 4, n).astype(np.uint8),
        "flag": rng.random(n) < 0.3,
        "wide": rng.integers(0, 2**40, n),  # range too large: pd.factorize
        "huge": (rng.integers(0, 3, n).astype(np.uint64) + np.uint64(2**63)),
        "text": rng.choice(["a", "b", None], n),
    })
    for cols in (["neg", "small", "flag"], ["neg", "text"], ["wide", "small"], ["huge", "flag"]):
        got, sizes = equivalence_classes(df, cols)
        ref = df.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(sizes, np.bincount(ref))


_NAN_PAYLOAD = np.frombuffer(np.array([0x7FF8000000000001, 0xFFF8000000000000],
                                      dtype=np.uint64).tobytes(), dtype=np.float64)
_FLOAT_EDGES = [0.0, -0.0, np.nan, _NAN_PAYLOAD[0], _NAN_PAYLOAD[1], np.inf, -np.inf,
                5e-324, -5e-324, np.finfo(np.float64).max, -np.finfo(np.float64).max, 1.0]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_factorize_codes_is_pandas_factorize(data):
    """Arrow's dictionary encoding (with floats made canonical) gives pandas' codes: the same
    numbers in the same order of first appearance, NaNs one value, -0.0 equal to 0.0."""
    import anonml.privacy._k_anonymity as ka

    kind = data.draw(st.sampled_from(["f", "i", "u"]))
    n = data.draw(st.integers(0, 300))
    if kind == "f":
        pool = np.array(_FLOAT_EDGES + data.draw(st.lists(
            st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20)))
    elif kind == "i":
        info = np.iinfo(np.int64)
        pool = np.array([info.min, info.max, 0, -1] + data.draw(st.lists(
            st.integers(info.min, info.max), min_size=1, max_size=20)), dtype=np.int64)
    else:
        pool = np.array([0, 2**64 - 1, 2**63] + data.draw(st.lists(
            st.integers(0, 2**64 - 1), min_size=1, max_size=20)), dtype=np.uint64)
    picks = data.draw(st.lists(st.integers(0, pool.size - 1), min_size=n, max_size=n))
    values = pool[np.asarray(picks, dtype=np.int64)]
    old = ka._ARROW_MIN
    ka._ARROW_MIN = 1  # Arrow's path for every size (the default keeps it for long arrays)
    try:
        codes, n_distinct = ka.factorize_codes(values)
    finally:
        ka._ARROW_MIN = old
    expected, uniques = pd.factorize(values, use_na_sentinel=False)
    np.testing.assert_array_equal(codes, expected)
    assert n_distinct == len(uniques)
    assert values.size == 0 or codes.dtype.kind == "i"


def test_factorize_codes_uses_arrow_for_long_arrays_and_pandas_without_it(monkeypatch):
    import builtins

    import anonml.privacy._k_anonymity as ka

    pytest.importorskip("pyarrow")
    values = np.tile(np.array([3.5, -0.0, np.nan, 0.0, _NAN_PAYLOAD[0]]), ka._ARROW_MIN)
    codes, n = ka.factorize_codes(values)
    assert codes.dtype == np.int32  # Arrow's indices
    np.testing.assert_array_equal(codes[:5], [0, 1, 2, 1, 2])
    assert n == 3
    real_import = builtins.__import__

    def no_arrow(name, *args, **kwargs):
        if name == "pyarrow":
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_arrow)
    codes_pd, n_pd = ka.factorize_codes(values)
    assert codes_pd.dtype == np.intp and n_pd == 3
    np.testing.assert_array_equal(codes_pd, codes)


@pytest.mark.parametrize("dtype", ["<f2", ">f8", ">i4", "<f4", "<i1", "<u2"])
def test_factorize_codes_on_every_numeric_layout(dtype):
    """Half floats go to pandas, byte-swapped arrays are read in native order first (pandas'
    hash table refuses them), the others go to Arrow: the codes are pandas' in every case."""
    import anonml.privacy._k_anonymity as ka

    base = np.array([3, 0, 7, 3, 1, 0, 7, 7, 2] * (ka._ARROW_MIN // 9 + 1))
    values = base.astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[5] = -values[5]  # -0.0
        values[8] = np.nan
    codes, n = ka.factorize_codes(values)
    native = values.astype(values.dtype.newbyteorder("="))  # (pandas' own needs it)
    expected, uniques = pd.factorize(native, use_na_sentinel=False)
    np.testing.assert_array_equal(codes, expected)
    assert n == len(uniques)
    frame = pd.DataFrame({"a": values, "b": base % 2})
    classes, sizes = equivalence_classes(frame, ["a", "b"])
    assert sizes.sum() == values.size and classes.max() + 1 == sizes.size


def test_first_of_codes_is_each_codes_first_position() -> None:
    """first_of_codes on codes numbered by first appearance: the first position of every code,
    in code order (np.unique's return_index), for pandas' and Arrow's codes alike."""
    from anonml.privacy._k_anonymity import factorize_codes, first_of_codes

    rng = np.random.default_rng(7)
    for n, d in [(1, 1), (50, 3), (100_000, 900)]:
        values = rng.integers(0, d, n)
        for codes in (pd.factorize(values)[0], factorize_codes(values)[0]):
            _, want = np.unique(codes, return_index=True)
            np.testing.assert_array_equal(first_of_codes(codes), want)
    assert first_of_codes(np.zeros(0, dtype=np.int64)).size == 0
