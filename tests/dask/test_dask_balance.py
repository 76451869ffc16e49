"""Balancing the Dask tree's local subtrees (anonml.dask._balance): no cluster needed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask")

from anonml.anonymize._hist_tree import HistTree  # noqa: E402
from anonml.dask._balance import auto_local_rows, level_order, pack_nodes  # noqa: E402
from anonml.dask._tree import _stitch  # noqa: E402


def test_pack_nodes_spreads_rows_evenly_and_deterministically():
    rng = np.random.default_rng(0)
    rows = rng.integers(100, 1_000_000, size=40)
    part, n_out = pack_nodes(rows, threads=2)
    assert n_out == 8 and set(part.tolist()) == set(range(8))
    load = np.bincount(part, weights=rows, minlength=n_out)
    # list scheduling: the fullest partition got its last node when it was the emptiest
    assert load.max() - load.min() <= rows.max()
    assert load.max() < 1.2 * rows.sum() / n_out  # and here, 5 nodes a partition: close
    again, _ = pack_nodes(rows, threads=2)
    np.testing.assert_array_equal(part, again)
    # fewer nodes than partitions: one node each, the largest in partition 0
    part, n_out = pack_nodes(np.array([5, 9, 1]), threads=2)
    assert n_out == 3 and part.tolist() == [1, 0, 2]
    # a cap: partitions of about cap / 2 rows at most (32 nodes of 3M rows, cap 4M: one each)
    part, n_out = pack_nodes(np.full(32, 3_000_000), threads=2, cap=4_000_000)
    assert n_out == 32 and sorted(part.tolist()) == list(range(32))
    part, n_out = pack_nodes(np.full(40, 100_000), threads=2, cap=1_000_000)
    assert n_out == 8 and np.bincount(part).tolist() == [5] * 8
    part, n_out = pack_nodes(np.array([7]), threads=4)
    assert n_out == 1 and part.tolist() == [0]


def test_auto_local_rows_bounds():
    assert auto_local_rows(10_000_000, 2) == 625_000
    assert auto_local_rows(100_000_000, 2) == 4_000_000
    assert auto_local_rows(300_000, 2) == 50_000
    assert auto_local_rows(10_000_000, 0) == 1_250_000  # unknown threads: one


def _grow(B, y, n_bins, is_cat, k, init=None):
    t = HistTree(k, None, "gini")
    leaf = t.fit_apply(B, is_cat, n_bins, y, init=init)
    return t, leaf


def test_level_order_of_grafted_subtrees_is_the_tree_grown_in_one_piece():
    """Two subtrees grown apart (roots 0 and 1 of a two-root tree), grafted in either order,
    renumbered level by level: the node arrays of the tree grown in one piece."""
    rng = np.random.default_rng(1)
    n = 3000
    n_bins = np.array([8, 5, 6])
    is_cat = np.array([False, True, False])
    B = np.column_stack([rng.integers(0, nb, n) for nb in n_bins]).astype(np.uint8)
    y = (B[:, 0] + rng.integers(0, 3, n) > 5).astype(np.int64)
    init = (B[:, 2] > 2).astype(np.int64)
    whole, _ = _grow(B, y, n_bins, is_cat, 20, init)
    root_tree = {key: np.full(2, -1, dtype=np.int64) for key in
                 ("feature", "threshold", "left", "right", "offset")}
    root_tree["flat"] = np.zeros(0, dtype=bool)
    subs = []
    for r in (0, 1):
        t, _ = _grow(B[init == r], y[init == r], n_bins, is_cat, 20)
        subs.append({"roots": np.array([r]), "feature": t.feature_, "threshold": t.threshold_,
                     "left": t.children_left_, "right": t.children_right_,
                     "offset": t.offset_, "flat": t.flat_})
    for order in ([0, 1], [1, 0]):
        tree, _ = _stitch(root_tree, np.arange(2), [subs[i] for i in order])
        got, new_id = level_order(tree, 2, n_bins)
        assert sorted(new_id.tolist()) == list(range(whole.n_nodes_))
        for key, want in (("feature", whole.feature_), ("threshold", whole.threshold_),
                          ("left", whole.children_left_), ("right", whole.children_right_),
                          ("offset", whole.offset_), ("flat", whole.flat_)):
            np.testing.assert_array_equal(got[key], want, err_msg=key)


@pytest.mark.parametrize("n_in,n_out", [(40, 40), (50, 36), (3, 45), (45, 3)])
def test_shuffle_to_moves_every_row_once_to_its_partition(n_in, n_out) -> None:
    """shuffle_to with Dask's in-memory task shuffle: every row in the output partition its
    column names, the rows unchanged, with fewer or more outputs than inputs, staged or not
    (past Dask's max_branch of 32)."""
    import dask
    import dask.dataframe as dd
    import pandas as pd

    from anonml.dask._balance import shuffle_to

    rng = np.random.default_rng(n_in * 100 + n_out)
    n = 4000
    frame = pd.DataFrame({"v": np.arange(n), "_partitions": rng.integers(0, n_out, n)})
    ddf = dd.from_pandas(frame, npartitions=n_in, sort=False)
    assert ddf.npartitions == n_in
    out = shuffle_to(ddf, "_partitions", n_out, "tasks")
    with dask.config.set(scheduler="sync"):
        parts = [p.compute() for p in out.to_delayed()]
    assert len(parts) == n_out
    for i, p in enumerate(parts):
        assert (p["_partitions"] == i).all()
    got = pd.concat(parts).sort_values("v")
    np.testing.assert_array_equal(got["v"].to_numpy(), np.arange(n))
    np.testing.assert_array_equal(got["_partitions"].to_numpy(), frame["_partitions"].to_numpy())
