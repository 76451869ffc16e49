"""The linear-time per-group medians of the representative step equal pandas' groupby median."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonml.anonymize._pipeline import _distance_to_median, recode
from anonml.encoding import TableEncoder
from anonml.anonymize._medians import numeric_group_medians


def _column(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":  # every value distinct: every bin holds several values
        return rng.normal(size=n)
    if kind == "few":  # fewer values than bins: every bin holds one value
        return rng.integers(0, 5, n).astype(float)
    if kind == "skewed":  # mostly zero, like capital-gain
        return np.where(rng.random(n) < 0.8, 0.0, rng.normal(1000, 300, n).round())
    return rng.integers(-500, 500, n).astype(float)


@pytest.mark.parametrize("kind", ["normal", "few", "skewed", "ints"])
@pytest.mark.parametrize("max_bins", [2, 3, 16, 255])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_medians_equal_pandas(kind: str, max_bins: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    per_group = int(rng.choice([2, 5, 50, 400]))  # small groups take the pandas fallback
    groups = np.unique(rng.integers(0, max(1, n // per_group), n), return_inverse=True)[1]
    n_groups = int(groups.max()) + 1
    df = pd.DataFrame({"a": _column(kind, n, rng)})
    enc = TableEncoder(["a"], [], max_bins=max_bins).fit(df)
    z = enc.zscores(df)[:, 0]
    want = pd.DataFrame(z).groupby(groups, sort=True).median().to_numpy()[:, 0]
    size = np.bincount(groups, minlength=n_groups)
    values = df["a"].to_numpy()
    rows = (z, values, enc.thresholds_["a"], groups)
    got = numeric_group_medians(size, rows=rows)  # in memory: exact
    np.testing.assert_array_equal(got, want)  # bit for bit, so representatives do not move
    order = np.argsort(groups, kind="stable")  # counted in group order: the same medians
    got = numeric_group_medians(size, rows=rows, order=order, g_sorted=groups[order])
    np.testing.assert_array_equal(got, want)

    # out of core (the Dask engine): the same search on the merged sparse histogram, at bin
    # resolution: the value of the bin that holds the lower middle row
    thr = enc.thresholds_["a"]
    n_bins = len(thr) + 1
    b = np.searchsorted(thr, values, side="left")
    keys, counts = np.unique(groups * n_bins + b, return_counts=True)
    bin_values = np.full(n_bins, np.nan)
    bin_values[b[::-1]] = values[::-1]  # each bin's first value
    got = numeric_group_medians(size, histogram=(keys, counts, n_bins, bin_values))
    lower = np.array([np.sort(values[groups == g])[(size[g] - 1) // 2]
                      for g in range(n_groups)])
    np.testing.assert_array_equal(got, bin_values[np.searchsorted(thr, lower, side="left")])
    if len(np.unique(values)) <= max_bins:  # one value per bin: the exact lower median
        np.testing.assert_array_equal(got, lower)


def _reference_distance(frame, enc, qi, groups, n_groups):
    """The former implementation: z-score matrix, pandas groupby median, one-hot medians."""
    cat = set(enc.categorical)
    num = [c for c in qi if c not in cat]
    dist = np.zeros(len(frame))
    Z = enc.zscores(frame, num)
    med = pd.DataFrame(Z).groupby(groups, sort=True).median().to_numpy()
    dist += ((Z - med[groups]) ** 2).sum(axis=1)
    size = np.bincount(groups, minlength=n_groups).astype(float)
    for c in qi:
        if c in cat:
            codes = enc.codes(frame, c)
            m = enc.cats_[c].n_codes + 1
            counts = np.bincount(groups * m + codes, minlength=n_groups * m).reshape(n_groups, m)
            twice = 2.0 * counts
            md = np.where(twice > size[:, None], 1.0, np.where(twice == size[:, None], 0.5, 0.0))
            dist += (md**2).sum(axis=1)[groups] - 2.0 * md[groups, codes] + 1.0
    return dist


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("direct_cells", [1 << 20, 0, 150])
def test_distance_to_median_unchanged(seed: int, direct_cells: int, monkeypatch) -> None:
    """The same distances whether a categorical QI's (group, category) table is counted in row
    order (it fits the cache) or walking the rows in group order (``direct_cells`` 0: every
    one; 150: the 2-category column directly, the others in group order)."""
    import anonml.anonymize._pipeline as pipeline

    monkeypatch.setattr(pipeline, "_DIRECT_CELLS", direct_cells)
    rng = np.random.default_rng(seed)
    n = 3000
    frame = pd.DataFrame({
        "x": rng.normal(size=n), "i": rng.integers(0, 40, n), "s": _column("skewed", n, rng),
        "c": rng.choice(["a", "b", "c"], n), "w": rng.uniform(size=n),
        "d": rng.choice(list("abcdefgh"), n), "e": rng.choice(["u", "v"], n),
    })
    qi = ["x", "c", "i", "d", "s", "e", "w"]
    enc = TableEncoder(qi, ["c", "d", "e"], max_bins=32).fit(frame)
    groups = rng.integers(0, 50, n)
    got = _distance_to_median(frame, enc, qi, groups, 50)
    np.testing.assert_array_equal(got, _reference_distance(frame, enc, qi, groups, 50))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 300), c=st.integers(1, 20), wide=st.booleans(), seed=st.integers(0, 99))
def test_in_group_order_takes_every_column(n: int, c: int, wide: bool, seed: int) -> None:
    """Packed into items of 4, 8 or 16 bytes (or wider: a void type), taken, transposed back:
    each column equals its own ``take``, for every width and dtype, extreme codes included."""
    from anonml.anonymize._medians import in_group_order

    rng = np.random.default_rng(seed)
    dtype = np.uint16 if wide else np.uint8
    top = np.iinfo(dtype).max
    cols = [rng.integers(0, top, n, endpoint=True).astype(dtype) for _ in range(c)]
    if n:
        cols[0][0] = top  # the largest code and 0 occur
        cols[-1][-1] = 0
    order = rng.permutation(n)
    got = in_group_order(cols, dtype, order)
    assert got.shape == (c, n) and got.dtype == dtype
    for j in range(c):
        np.testing.assert_array_equal(got[j], cols[j].take(order))


@pytest.mark.parametrize("kind", ["normal", "few", "skewed"])
def test_group_medians_from_given_bins(kind: str) -> None:
    """``bins=(row order, group order)`` given by the caller: the same medians, also past one
    block of rows and with groups whose middle falls in a bin of several values."""
    from anonml.anonymize._medians import _BLOCK, group_order, in_group_order

    rng = np.random.default_rng(5)
    n = _BLOCK + 4321
    groups = rng.integers(0, 3000, n)
    df = pd.DataFrame({"a": _column(kind, n, rng)})
    enc = TableEncoder(["a"], [], max_bins=16).fit(df)
    z = enc.zscores(df)[:, 0]
    size = np.bincount(groups, minlength=3000)
    values = df["a"].to_numpy()
    thr = enc.thresholds_["a"]
    order = group_order(groups, 3000)
    b = np.searchsorted(thr, values, side="left").astype(np.uint8)
    rows = (z, values, thr, groups)
    want = numeric_group_medians(size, rows=rows, order=order)
    got = numeric_group_medians(size, rows=rows, order=order,
                                bins=(b, in_group_order([b], np.uint8, order)[0]))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        got, pd.Series(z).groupby(groups, sort=True).median().to_numpy())


def test_recode_keeps_dtypes_and_leaves_the_input_alone() -> None:
    frame = pd.DataFrame({
        "o": pd.Series(["x", "y", "z"], dtype=object), "i": [1, 2, 3],
        "c": pd.Series(["p", "q", "p"], dtype="category"), "other": [7.0, 8.0, 9.0],
    })
    before = frame.copy()
    reps = frame[["o", "i", "c"]].iloc[[2, 0]].reset_index(drop=True)
    out = recode(frame, ["o", "i", "c"], np.array([1, 0, 1]), reps)
    pd.testing.assert_frame_equal(frame, before)  # the input is never written into
    assert list(out.dtypes) == list(frame.dtypes)
    assert out["o"].tolist() == ["x", "z", "x"] and out["i"].tolist() == [1, 3, 1]
    assert out["c"].tolist() == ["p", "p", "p"] and out["other"].tolist() == [7.0, 8.0, 9.0]
    out.loc[0, "other"] = -1.0  # and the output does not share writes with it
    assert frame.loc[0, "other"] == 7.0


@pytest.mark.parametrize("n_groups", [1, 7, 65_536, 65_537, 200_000])
def test_group_order_is_a_stable_sort(n_groups: int) -> None:
    from anonml.anonymize._pipeline import _group_order

    rng = np.random.default_rng(n_groups)
    groups = rng.integers(0, n_groups, 50_000)
    groups[:2] = n_groups - 1  # the largest id occurs
    np.testing.assert_array_equal(_group_order(groups, n_groups), np.argsort(groups, kind="stable"))


# -- recode: the casts on the groups' values (session 8) ------------------------------------------
def _recode_before(frame, qi, groups, representatives, *, cast=True):
    """``recode`` as it was before the in-place option (main ``c88fdad``): the representatives
    gathered to the rows, then every row cast; the reference of the property below."""
    from anonml.anonymize._pipeline import _nullable

    out = frame.copy()
    for c in qi:
        col = representatives[c]
        taken = (col.to_numpy().take(groups) if isinstance(col.dtype, np.dtype)
                 else col.array.take(groups))
        values = pd.Series(taken, index=out.index, name=col.name, dtype=col.dtype, copy=False)
        if not cast:
            out[c] = pd.Series(values.to_numpy(dtype=object), index=out.index, dtype=object)
            continue
        target = frame[c].dtype
        if isinstance(target, np.dtype) and values.isna().any():
            target = _nullable(target)
        if isinstance(target, pd.CategoricalDtype):
            seen = pd.Index(pd.unique(values.dropna().to_numpy(dtype=object)))
            extra = seen.difference(target.categories)
            if len(extra):
                target = pd.CategoricalDtype(target.categories.append(extra), target.ordered)
            values = values.astype(target)
        elif values.dtype != target:
            values = values.astype(target)
        out[c] = values.set_axis(out.index)
    return out


_POOLS = {
    "int64": ([-3, 0, 7, np.iinfo(np.int64).max, np.iinfo(np.int64).min], "int64"),
    "uint8": ([0, 1, 255], "uint8"),
    "float": ([-1.5, 0.0, 2.0, 1e308, -1e308, np.nan], "float64"),
    "Int64": ([-3, 0, 40, None], "Int64"),
    "bool": ([True, False], "bool"),
    "boolean": ([True, False, None], "boolean"),
    "object": (["a", "b", None], object),
    "str": (["a", "b", None], "str"),
    "string": (["a", "b", None], "string"),
    "datetime": ([pd.Timestamp("2020-01-01"), pd.Timestamp("1677-09-22"), pd.NaT],
                 "datetime64[ns]"),
    "category": (["a", "b", None], pd.CategoricalDtype(["c", "a", "b"])),
}
#: values a representative may hold that its column's dtype lacks (new categories, mixed types)
_FOREIGN = ["new", "zz", 5, "a b"]


@st.composite
def recode_cases(draw):
    n = draw(st.integers(1, 30))
    n_groups = draw(st.integers(1, 8))
    groups = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)),
                      dtype=np.int64)  # some groups may not occur (transform of a few rows)
    kinds = draw(st.lists(st.sampled_from(sorted(_POOLS)), min_size=1, max_size=4))
    frame, reps = {}, {}
    for j, kind in enumerate(kinds):
        pool, dtype = _POOLS[kind]
        present = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
        frame[f"q{j}"] = pd.Series(draw(st.lists(st.sampled_from(present), min_size=n,
                                                 max_size=n)), dtype=dtype)
        # foreign values: new categories (in any order of types), or a failed cast elsewhere
        how = draw(st.sampled_from(["same", "same", "suppressed", "foreign"]))
        rep_pool = list(present) + ([None] if how == "suppressed" else []) + (
            _FOREIGN if how == "foreign" else [])
        values = draw(st.lists(st.sampled_from(rep_pool), min_size=n_groups, max_size=n_groups))
        if how == "foreign":  # at least two of them (their order is the point)
            values[:2] = draw(st.permutations(_FOREIGN))[:2]
        reps[f"q{j}"] = (pd.Series(values, dtype=dtype) if how == "same"
                         else pd.Series(values, dtype=object))
    frame["other"] = np.arange(n) * 0.5
    frame = pd.DataFrame(frame)
    if draw(st.booleans()):
        frame.index = np.arange(n) // 2  # a duplicated index
    reps = pd.DataFrame(reps)
    reps.index.name = "group"
    qi = draw(st.permutations([c for c in frame.columns if c != "other"]))
    return frame, list(qi), groups, reps, draw(st.booleans())


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(recode_cases())
def test_recode_casts_groups_as_the_rows_were_cast(case) -> None:
    """The casts done once per group (``recode_plan``) give the table of the casts done per row
    (the code before): values, dtypes, categories and their order, the index; and writing the
    same columns into the table itself (``copy=False``) gives it too, or fails alike before
    anything is written."""
    from anonml.anonymize._pipeline import recode_plan

    frame, qi, groups, reps, cast = case
    before = frame.copy(deep=True)
    try:
        expected = _recode_before(frame, qi, groups, reps, cast=cast)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            recode(frame, qi, groups, reps, cast=cast)
        target = frame.copy(deep=True)
        with pytest.raises(type(exc)):
            recode_plan(target, qi, groups, reps, cast=cast).write_into(target)
        pd.testing.assert_frame_equal(target, before)
        return
    got = recode(frame, qi, groups, reps, cast=cast)
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_categorical=True)
    pd.testing.assert_frame_equal(frame, before)  # recode never writes into its input
    target = frame.copy(deep=True)
    returned = recode_plan(target, qi, groups, reps, cast=cast).write_into(target)
    assert returned is target
    pd.testing.assert_frame_equal(target, expected, check_exact=True)
