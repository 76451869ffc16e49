# ruff: noqa: F811 -- the fixtures adult and folder are imported from test_dask_engine
"""AG's refinement grown in the guided tree's own local-subtree tasks
(:func:`anonml.dask._fused.refined_groups`): the same trees and groups as growing the guided
tree, then the refinement after gathering the rows again (and as the in-memory HistTree), with
every node finished in memory, some of them, or none; in rounds; and end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import dask.dataframe as dd  # noqa: E402

from anonml.dask import _api as ad  # noqa: E402
from anonml.dask._fused import refined_groups  # noqa: E402
from anonml.dask._tree import compact, grow  # noqa: E402
from anonml.engine import _kernels as K  # noqa: E402

from test_dask_engine import _binned_states, adult, folder  # noqa: E402,F401

LOCAL = [
    {"local_cells": 1, "local_rows": "auto"},  # the root itself finished in memory
    {"local_rows": 600, "local_cells": None},  # level-wise leaves and subtrees, mixed
    {"local_cells": 3000, "local_rows": "auto"},  # level-wise until the histograms are full
    {},  # the defaults: on this sample nothing is finished in memory
]


def _two_pass(client, states, spec, k, criterion, opts):
    tree, leaves = grow(client, states, spec.is_cat, spec.n_bins, spec.n_classes, k, criterion,
                        **opts)
    groups, G, sizes = compact(client, leaves, tree.n_nodes_)
    rtree, leaves = grow(client, states, spec.is_cat, spec.n_bins, 1, k, "mondrian",
                         init=groups, n_roots=G, root_counts=sizes)
    groups, G, sizes = compact(client, leaves, rtree.n_nodes_)
    return tree, rtree, np.concatenate(client.gather(groups)), G, sizes


def _same_tree(a, b):
    for name in ("feature_", "threshold_", "children_left_", "children_right_", "offset_",
                 "flat_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("criterion,k,local", [
    *(("gini", 10, local) for local in LOCAL), ("entropy", 20, LOCAL[1]), ("gini", 40, LOCAL[2]),
])
def test_refined_groups_are_the_two_pass_and_in_memory_groups(client, adult, criterion, k,
                                                              local):
    X, y, qi = adult
    expected, spec, _, states = _binned_states(client, X, y, qi, k, criterion, True)
    tree, rtree, groups, G, sizes = refined_groups(client, states, spec.is_cat, spec.n_bins,
                                                   spec.n_classes, k, criterion, **local)
    got = np.concatenate(client.gather(groups))
    np.testing.assert_array_equal(got, expected)
    assert G == expected.max() + 1
    np.testing.assert_array_equal(sizes, np.bincount(expected))
    t2, r2, g2, G2, s2 = _two_pass(client, states, spec, k, criterion, local)
    _same_tree(tree, t2)
    _same_tree(rtree, r2)
    np.testing.assert_array_equal(got, g2)


def test_refined_groups_in_rounds(client, adult, monkeypatch):
    """The rows gathered and the leaves sent back in several rounds: the same groups."""
    import anonml.dask._tree as T

    monkeypatch.setattr(T, "rounds", lambda client, nbytes: 3)
    X, y, qi = adult
    expected, spec, _, states = _binned_states(client, X, y, qi, 10, "gini", True)
    for local in LOCAL[:2]:
        _, _, groups, _, _ = refined_groups(client, states, spec.is_cat, spec.n_bins,
                                            spec.n_classes, 10, "gini", **local)
        np.testing.assert_array_equal(np.concatenate(client.gather(groups)), expected)


@pytest.mark.parametrize("local", LOCAL[:2])
def test_refined_groups_with_a_regression_guide(client, adult, local):
    """A float guide (squared_error): the same trees and groups as the two passes."""
    X, y, qi = adult
    _, spec, _, _ = _binned_states(client, X, y, qi, 10, "gini", True)
    spec.regression = True
    spec.classes = None
    price = X["age"].to_numpy(dtype=np.float64) * 0.25 + (y.to_numpy() == y.iloc[0]) * 3.0
    parts = dd.from_pandas(X.assign(price=price), npartitions=5).to_delayed()
    states = client.compute([dask.delayed(K.bin_partition)(p, spec, p["price"]) for p in parts])
    tree, rtree, groups, G, sizes = refined_groups(client, states, spec.is_cat, spec.n_bins,
                                                   0, 10, "squared_error", **local)
    t2, r2, g2, G2, s2 = _two_pass(client, states, spec, 10, "squared_error", local)
    _same_tree(tree, t2)
    _same_tree(rtree, r2)
    np.testing.assert_array_equal(np.concatenate(client.gather(groups)), g2)
    assert G == G2 and np.bincount(g2).min() >= 10


def test_anonymize_dataset_fused_and_two_pass_write_the_same(client, adult, folder, tmp_path,
                                                             monkeypatch):
    """End to end, with the guided tree's nodes finished in memory: the run that refines in the
    subtrees' tasks and the one that gathers the rows again (a saved mapping makes it take that
    path) write the same table."""
    import anonml.dask._fused as F
    import anonml.dask._tree as T

    X, y, qi = adult
    real = T.grow

    def small_cells(*args, **kwargs):  # every grow() of the run: tiny histogram budget
        kwargs.setdefault("local_cells", 3000)
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "grow", small_cells)
    monkeypatch.setattr(F, "grow", small_cells)
    monkeypatch.setattr(ad, "grow", small_cells)
    calls = []
    real_rg = F.refined_groups
    monkeypatch.setattr(F, "refined_groups", lambda *a, **kw: calls.append(1) or real_rg(*a, **kw))
    fused = ad.anonymize_dataset(folder, tmp_path / "fused", k=10, quasi_identifiers=qi,
                                 label="label", client=client)
    assert calls, "the fused path was not taken"
    two = ad.anonymize_dataset(folder, tmp_path / "two", k=10, quasi_identifiers=qi,
                               label="label", client=client,
                               save_mapping=tmp_path / "m.skops")
    assert len(calls) == 1
    a, b = pd.read_parquet(tmp_path / "fused"), pd.read_parquet(tmp_path / "two")
    pd.testing.assert_frame_equal(a, b)
    assert fused.n_groups == two.n_groups and fused.min_class_size == two.min_class_size >= 10


def _rows(n_roots=4, per=400, seed=0):
    """A local-subtree task's rows: ``n_roots`` nodes (ids 10, 13, ...), bins of 3 features,
    two classes; node 13 pure."""
    rng = np.random.default_rng(seed)
    n = n_roots * per
    node = np.repeat(10 + 3 * np.arange(n_roots), per).astype(np.int32)
    y = rng.integers(0, 2, n)
    y[node == 13] = 1
    frame = {"__node": node, "__y": y.astype(np.int64),
             "__at": np.arange(n, dtype=np.int64)[::-1].copy()}
    for j in range(3):
        frame[f"__b{j}"] = rng.integers(0, 8, n).astype(np.uint8)
    return pd.DataFrame(frame)


IS_CAT, N_BINS = np.array([False, True, False]), np.array([8, 8, 8])


def test_local_subtree_fixed_roots_stay_leaves_and_are_refined():
    """``leaf_nodes``: those roots stay leaves of the guided subtree (whatever its split
    search says), the others grow as alone, and every root's rows are refined as one root."""
    from anonml.anonymize._hist_tree import HistTree
    from anonml.engine._local import local_subtree

    rows = _rows()
    k = 20
    got = local_subtree(rows, IS_CAT, N_BINS, k, "gini", None, refine_k=k,
                        leaf_nodes=np.array([13, 16]))
    np.testing.assert_array_equal(got["roots"], [10, 13, 16, 19])
    feature, left = got["feature"], got["left"]
    assert feature[1] == feature[2] == -1  # the fixed roots (13 impure too: 16) are leaves
    assert feature[0] >= 0 and feature[3] >= 0  # the others split (impure, 400 rows, k=20)
    # the grown part is the tree of the other roots' rows alone
    keep = rows["__node"].isin([10, 19]).to_numpy()
    B = rows[[f"__b{j}" for j in range(3)]].to_numpy()
    alone = HistTree(k, None, "gini")
    alone_leaf = alone.fit_apply(B[keep], IS_CAT, N_BINS, rows["__y"].to_numpy()[keep],
                                 init=(rows["__node"].to_numpy()[keep] == 19).astype(np.int64))
    assert feature.size == alone.feature_.size + 2
    assert (feature >= 0).sum() == (alone.feature_ >= 0).sum()
    assert np.all((left[feature >= 0] >= 4))  # children after the 4 roots
    # the refinement: one root per guided leaf, every row refined within its leaf
    ref = got["refined"]
    assert ref["counts"].sum() == len(rows) and ref["leaf"].size == len(rows)
    assert np.isin([1, 2], ref["roots"]).all()  # the fixed roots are refinement roots
    leaves_of_fixed = {int(x) for x in np.unique(alone_leaf)}
    assert len(ref["roots"]) == 2 + len(leaves_of_fixed)
    # each fixed root refined exactly as a Mondrian tree of its rows alone
    for r, nid in ((1, 13), (2, 16)):
        mine = rows["__node"].to_numpy() == nid
        m = HistTree(k, None, "mondrian")
        m_leaf = m.fit_apply(B[mine], IS_CAT, N_BINS, None)
        assert len(np.unique(ref["leaf"][mine])) == len(np.unique(m_leaf))
    # without fixed roots: node 13 (pure) is a leaf anyway, and 16 splits
    free = local_subtree(rows, IS_CAT, N_BINS, k, "gini", None, refine_k=k)
    assert free["feature"][1] == -1 and free["feature"][2] >= 0


def test_local_subtree_all_roots_fixed():
    from anonml.engine._local import local_subtree

    rows = _rows(n_roots=2)
    got = local_subtree(rows, IS_CAT, N_BINS, 20, "gini", None, refine_k=20,
                        leaf_nodes=np.array([10, 13]))
    np.testing.assert_array_equal(got["feature"], [-1, -1])
    assert got["refined"]["counts"].tolist() == [400, 400]
    assert (got["refined"]["feature"] >= 0).any()  # 400 rows, k=20: the refinement splits
