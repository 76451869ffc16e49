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
