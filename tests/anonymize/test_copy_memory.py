"""The in-memory fit's memory (issue 21 item 6, session 9): what changed must not change what
is released.

* ``copy=True`` checks the output's columns one at a time (as ``copy=False`` does) and builds
  the new table last, after the routing tree: the returned table must carry exactly the k, l
  and t the fit reports, measured here on the table itself by the public functions, and the
  caller's frame must never be written into (with and without pandas' copy-on-write);
* the histogram tree may be given the row-major bins it routes with (the refinement reuses
  them): the same tree;
* the class codes are held in the smallest integer dtype: the same partition, and the exact
  tree still gets int64 classes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import anonml
from anonml import AccuracyGuidedAnonymizer as AG
from anonml.anonymize import _pipeline
from anonml.anonymize._hist_tree import HistTree
from anonml.datasets import load_adult
from anonml.privacy import k_anonymity, l_diversity, t_closeness

PANDAS_MAJOR = int(pd.__version__.split(".")[0])


@pytest.fixture(scope="module")
def adult():
    data = load_adult()
    X = data.X.iloc[:800].reset_index(drop=True)
    y = pd.Series(np.asarray(data.y)[:800], name="income")
    return X, y, list(data.qi_sets["8"])[:4] + ["age"]


@pytest.mark.parametrize("name", ["MondrianAnonymizer", "HilbertAnonymizer", "RTreeAnonymizer",
                                  "SaNGreeAAnonymizer", "AccuracyGuidedAnonymizer"])
def test_copy_true_table_carries_the_reported_k_l_t(adult, name) -> None:
    """The table copy=True returns, measured by k_anonymity / l_diversity / t_closeness on its
    own columns: the k, l and t the fit reports (checked before the table existed)."""
    X, y, qi = adult
    cls = getattr(anonml, name)
    sensitive = next(c for c in X.columns if c not in qi and not
                     pd.api.types.is_numeric_dtype(X[c].dtype))
    for extra in ({}, {"sensitive": sensitive, "l": 2}, {"sensitive": "income", "t": 0.5}):
        a = cls(k=20, quasi_identifiers=qi, random_state=0, **extra)
        out = a.fit_transform(X, y)
        assert k_anonymity(out, qi) == a.min_class_size_ >= 20
        if "l" in extra:
            assert l_diversity(out, qi, sensitive) == pytest.approx(a.privacy_["l"], abs=0)
            assert a.privacy_["l"] >= 2
        if "t" in extra:
            table = out[qi].copy()
            table["income"] = y.to_numpy()
            assert t_closeness(table, qi, "income") == pytest.approx(a.privacy_["t"], abs=1e-12)
            assert a.privacy_["t"] <= 0.5


def _cow_settings() -> list:
    if PANDAS_MAJOR >= 3:
        return [None]  # copy-on-write always on
    return [False, True]


@pytest.mark.parametrize("cow", _cow_settings())
def test_copy_true_never_writes_into_x(adult, cow) -> None:
    """copy=True leaves the caller's frame as it was, and writing into the returned table
    (a QI column, a non-QI column) does not reach it, with or without copy-on-write."""
    X, y, qi = adult
    X = X.copy(deep=True)
    original = X.copy(deep=True)
    other = next(c for c in X.columns if c not in qi and
                 pd.api.types.is_numeric_dtype(X[c].dtype))
    context = (pd.option_context("mode.copy_on_write", cow) if cow is not None
               else _nullcontext())
    with context:
        out = AG(k=20, quasi_identifiers=qi, random_state=0).fit_transform(X, y)
        assert out is not X
        pd.testing.assert_frame_equal(X, original)
        for c in qi:
            if isinstance(out[c].dtype, np.dtype):
                assert not np.shares_memory(out[c].to_numpy(), X[c].to_numpy())
        out.loc[0, other] = -12345
        out.loc[0, "age"] = -12345
        out[other] += 1
    pd.testing.assert_frame_equal(X, original)


def _nullcontext():
    import contextlib

    return contextlib.nullcontext()


def test_copy_true_builds_the_table_after_the_check_and_the_routing(adult, monkeypatch) -> None:
    """The new table is made once the fit is complete (its routing tree built): the fit's
    working memory is gone before the output's columns are allocated."""
    X, y, qi = adult
    seen = []
    original = _pipeline.Recoding.new_frame

    def spy(self, frame, *args, **kwargs):
        seen.append("route_" in ag.__dict__ and "representatives_" in ag.__dict__)
        return original(self, frame, *args, **kwargs)

    monkeypatch.setattr(_pipeline.Recoding, "new_frame", spy)
    ag = AG(k=20, quasi_identifiers=qi, random_state=0)
    out = ag.fit_transform(X, y)
    assert seen == [True]
    assert "write" in ag.timings_ and out.shape == X.shape


def test_copy_true_failed_routing_returns_nothing(adult, monkeypatch) -> None:
    """A failure after the check (the routing tree) still returns no table, unfitted."""
    from anonml._errors import NotFittedError
    from anonml.anonymize import _base

    X, y, qi = adult

    def failing(*args, **kwargs):
        raise RuntimeError("simulated: the routing tree failed")

    monkeypatch.setattr(_base, "anonymizer_routing", failing)
    ag = AG(k=20, quasi_identifiers=qi, random_state=0)
    with pytest.raises(RuntimeError, match="simulated"):
        ag.fit_transform(X, y)
    with pytest.raises(NotFittedError):
        ag.transform(X)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_hist_tree_given_its_row_major_bins_or_none_grows_the_same_tree(criterion) -> None:
    rng = np.random.default_rng(3)
    B = np.asfortranarray(rng.integers(0, 7, size=(3000, 5)).astype(np.uint8))
    is_cat = np.array([False, True, False, True, False])
    n_bins = np.full(5, 8)
    y = (B[:, 0] + rng.integers(0, 3, 3000) > 4).astype(np.int8)  # int8 codes, as a fit holds
    a = HistTree(30, None, criterion)
    leaves_a = a.fit_apply(B, is_cat, n_bins, y.astype(np.int64))
    b = HistTree(30, None, criterion)
    leaves_b = b.fit_apply(B, is_cat, n_bins, y, B_rows=np.ascontiguousarray(B))
    np.testing.assert_array_equal(leaves_a, leaves_b)
    c = HistTree(30, None, criterion)  # routed on the column-major bins, no row-major copy
    leaves_c = c.fit_apply(B, is_cat, n_bins, y, narrow=True, route_on_columns=True)
    assert leaves_c.dtype == np.int32
    np.testing.assert_array_equal(leaves_a, leaves_c)
    for attr in ("feature_", "threshold_", "children_left_", "children_right_", "offset_",
                 "flat_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
        np.testing.assert_array_equal(getattr(a, attr), getattr(c, attr))


def test_class_codes_held_small_and_the_exact_tree_gets_int64(adult) -> None:
    X, y, qi = adult
    ag = AG(k=20, quasi_identifiers=qi, random_state=0)
    codes, same = ag._check_target(y, X.shape[0])
    assert codes is same and codes.dtype == np.int8
    np.testing.assert_array_equal(ag.classes_[codes], y.to_numpy())
    exact = AG(k=20, quasi_identifiers=qi, random_state=0, tree="exact").fit(X, y)
    assert exact.tree_.classes_.dtype == np.int64
    hist = AG(k=20, quasi_identifiers=qi, random_state=0, tree="hist").fit(X, y)
    assert hist.n_groups_ >= 2


def test_release_free_memory_gives_back_arrows_pool(monkeypatch) -> None:
    """The heap trim between the fit's steps also asks Arrow's pool (pandas' text columns)
    to give back its unused pages."""
    pa = pytest.importorskip("pyarrow")
    from anonml._utils import release_free_memory

    calls = []

    class Pool:
        def release_unused(self):
            calls.append(1)

    monkeypatch.setattr(pa, "default_memory_pool", lambda: Pool())
    release_free_memory()
    assert calls == [1]
    # a small table's steps (a transform of a few rows) do not pay a trim per column
    from anonml._utils import RELEASE_MIN_ROWS

    assert release_free_memory(RELEASE_MIN_ROWS - 1) is False and calls == [1]
    release_free_memory(RELEASE_MIN_ROWS)
    assert calls == [1, 1]


@pytest.mark.parametrize("block", [7, 1000])
def test_group_medians_in_blocks_of_rows_are_pandas_medians(monkeypatch, block) -> None:
    """numeric_group_medians' passes over the rows, and its counts per block of whole groups
    (in group order), give pandas' per-group medians whatever the block size."""
    from anonml.anonymize import _medians

    monkeypatch.setattr(_medians, "_BLOCK", block)
    rng = np.random.default_rng(block)
    for _ in range(25):
        n, G = int(rng.integers(1, 5000)), int(rng.integers(1, 200))
        groups = rng.integers(0, G, n)
        groups[:min(G, n)] = np.arange(min(G, n))
        G = int(groups.max()) + 1
        values = np.round(rng.normal(size=n) * rng.choice([1, 5, 1000]), int(rng.integers(0, 3)))
        z = (values - values.mean()) / (values.std() or 1)
        thresholds = np.unique(np.quantile(values, np.linspace(0, 1, int(rng.integers(3, 60)))[1:-1]))
        size = np.bincount(groups, minlength=G)
        expected = pd.Series(z).groupby(groups, sort=True).median().to_numpy()
        order = _medians.group_order(groups, G)
        for kw in ({}, {"order": order}, {"order": order,
                                          "g_sorted": np.repeat(np.arange(G), size)}):
            got = _medians.numeric_group_medians(size, rows=(z, values, thresholds, groups), **kw)
            np.testing.assert_array_equal(got, expected)


def test_mondrian_tree_given_its_bins_handed_over_grows_the_same_tree() -> None:
    """The refinement's bins handed over in a list are released by the tree (the list is
    emptied) and give the same tree and leaves; ``narrow`` leaves are int32, the default int64
    (what the out-of-core engine reads)."""
    rng = np.random.default_rng(5)
    B = rng.integers(0, 9, size=(4000, 4)).astype(np.uint8)
    is_cat, n_bins = np.array([False, True, False, False]), np.full(4, 10)
    init = rng.integers(0, 6, 4000)
    a = HistTree(20, None, "mondrian")
    leaves_a = a.fit_apply(B.copy(), is_cat, n_bins, None, init=init)
    handed = [B.copy()]
    b = HistTree(20, None, "mondrian")
    leaves_b = b.fit_apply(handed, is_cat, n_bins, None, init=init, narrow=True)
    assert handed == [] and leaves_a.dtype == np.int64 and leaves_b.dtype == np.int32
    np.testing.assert_array_equal(leaves_a, leaves_b)
    for attr in ("feature_", "threshold_", "children_left_", "children_right_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))


@pytest.mark.parametrize("params", [{"tree": "hist"}, {"tree": "exact"},
                                    {"tree": "hist", "refine": "none"},
                                    {"tree": "hist", "sensitive": "income", "l": 2}])
def test_leaves_kept_by_group_are_the_trees_leaves(adult, monkeypatch, params) -> None:
    """The rows' first-tree and refinement leaves, kept as the rows' groups and a table per
    group until the routing tree is built, are the leaves the trees give every row."""
    from anonml.anonymize import _base

    X, y, qi = adult
    seen = {}
    original = _base.anonymizer_routing

    def spy(anonymizer, frame, groups, merge_map, factorized=None):
        seen["kept"] = anonymizer.__dict__["_fit_leaves"]
        return original(anonymizer, frame, groups, merge_map, factorized)

    monkeypatch.setattr(_base, "anonymizer_routing", spy)
    ag = AG(k=20, quasi_identifiers=qi, random_state=0, **params).fit(X, y)
    first, refined = seen["kept"].arrays()
    enc = ag.encoder_
    if ag.tree_method_ == "exact":
        expected_first = ag.tree_.apply(enc.onehot(X))
    else:
        expected_first = ag.tree_.apply(enc.bins(X)[0])
    np.testing.assert_array_equal(first, expected_first)
    if ag.refine_tree_ is None:
        assert refined is None
        return
    qB = enc.bins(X, columns=ag.qi_)[0]
    expected_refined = ag.refine_tree_.apply(qB, init=ag.leaf_to_group_[expected_first])
    np.testing.assert_array_equal(refined, expected_refined)
