"""The Mondrian HistTree grown on rows kept contiguous per node (anonml.anonymize._hist_mondrian)
against the dense per-level search it replaced: every node's (node x bin) histogram of every
feature, cut by ``choose_splits(..., "mondrian")``. Same nodes, numbering, cuts and leaves."""

from __future__ import annotations

import numpy as np
import pytest

from anonml.anonymize._hist_tree import HistTree, TreeBuilder, choose_splits


def _dense_mondrian(B, is_cat, n_bins, init, k, max_depth):
    """The level-wise search on dense histograms (small data only)."""
    F = B.shape[1]
    n_roots = int(init.max()) + 1
    builder = TreeBuilder(n_roots)
    node_of_row = init.astype(np.int64).copy()
    frontier = np.arange(n_roots)
    depth = 0
    while frontier.size and (max_depth is None or depth < max_depth):
        A = frontier.size
        where = {int(v): i for i, v in enumerate(frontier)}
        local = np.array([where.get(int(v), -1) for v in node_of_row])
        act = np.flatnonzero(local >= 0)
        cnt = np.bincount(local[act], minlength=A).astype(np.float64)
        H = []
        for f in range(F):
            h = np.zeros((A, int(n_bins[f]), 1))
            np.add.at(h, (local[act], B[act, f], 0), 1)
            H.append(h)
        gain, bf, bp, _ = choose_splits(H, cnt, cnt[:, None], is_cat, k, "mondrian")
        split = (cnt >= 2 * k) & np.isfinite(gain)
        if not split.any():
            break
        child_left = builder.add_children(frontier, split, bf, bp, {}, is_cat, n_bins)
        first = int(child_left[np.flatnonzero(split)[0]])
        for r in act:
            a = local[r]
            if split[a]:
                node_of_row[r] = child_left[a] + int(B[r, bf[a]] > bp[a])
        frontier = np.arange(first, len(builder.feature))
        depth += 1
    return builder, node_of_row


def _case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 1500))
    F = int(rng.integers(1, 6))
    n_bins = rng.choice([1, 2, 5, 12, 30, 50, 64, 70, 100], size=F)  # every bit width
    is_cat = rng.random(F) < 0.5
    B = np.empty((n, F), dtype=np.uint8)
    for f in range(F):
        if rng.random() < 0.4:  # a spike and a few outliers: the widest feature may admit no cut
            B[:, f] = rng.integers(0, n_bins[f] // 2 + 1)
            out = rng.random(n) < 0.01
            B[out, f] = rng.integers(0, n_bins[f], size=out.sum())
        else:
            B[:, f] = rng.integers(0, n_bins[f], size=n)
    init = rng.integers(0, int(rng.integers(1, 12)), size=n)
    init = np.unique(init, return_inverse=True)[1].astype(np.int64)
    k = int(rng.integers(1, 40))
    max_depth = None if rng.random() < 0.7 else int(rng.integers(1, 5))
    return B, is_cat, n_bins, init, k, max_depth


@pytest.mark.parametrize("seed", range(40))
def test_contiguous_mondrian_equals_the_dense_search(seed):
    B, is_cat, n_bins, init, k, max_depth = _case(seed)
    tree = HistTree(k, max_depth, "mondrian")
    leaves = tree.fit_apply(B, is_cat, n_bins, None, init=init)
    ref, ref_leaves = _dense_mondrian(B, is_cat, n_bins, init, k, max_depth)
    assert tree.feature_.tolist() == ref.feature
    assert tree.threshold_.tolist() == ref.threshold
    assert tree.children_left_.tolist() == ref.left
    assert tree.offset_.tolist() == ref.offset
    assert np.array_equal(tree.flat_, ref.flat())
    assert np.array_equal(leaves, ref_leaves)
    assert np.array_equal(tree.apply(B, init=init), leaves)


def test_every_node_refused_on_its_widest_feature():
    """Each root's widest feature holds all but k - 1 rows in one bin: no cut leaves k rows on
    each side, so every node takes its second widest (the first try fails everywhere)."""
    rng = np.random.default_rng(0)
    k, n = 10, 400
    wide = np.zeros(n, dtype=np.uint8)
    wide[rng.choice(n, k - 1, replace=False)] = 99  # spread 1.0, never cuttable
    B = np.stack([wide, rng.integers(0, 50, n).astype(np.uint8)], 1)
    init = (np.arange(n) % 2).astype(np.int64)
    is_cat, n_bins = np.array([False, False]), np.array([100, 100])
    tree = HistTree(k, None, "mondrian")
    leaves = tree.fit_apply(B, is_cat, n_bins, None, init=init)
    ref, ref_leaves = _dense_mondrian(B, is_cat, n_bins, init, k, None)
    assert tree.feature_[:2].tolist() == [1, 1]
    assert tree.feature_.tolist() == ref.feature and np.array_equal(leaves, ref_leaves)
    assert np.bincount(leaves)[np.bincount(leaves) > 0].min() >= k


@pytest.mark.parametrize("F, dtype", [
    (1, np.uint8), (4, np.uint8), (5, np.uint8), (12, np.uint8), (13, np.uint8),  # 8, 16, void
    (2, np.uint16), (3, np.uint16), (6, np.uint16), (7, np.uint16),
])
def test_contiguous_mondrian_every_item_width(F, dtype):
    """A row's bins and id move as one item of 8 bytes, 16 bytes or more (a ``void``): the
    same tree whatever the item."""
    rng = np.random.default_rng(F * 7 + np.dtype(dtype).itemsize)
    n = 900
    n_bins = rng.choice([2, 5, 40, 64, 70] + ([300, 1000] if dtype is np.uint16 else []), F)
    is_cat = (rng.random(F) < 0.5) & (n_bins <= 100)
    B = np.column_stack([rng.integers(0, nb, n) for nb in n_bins]).astype(dtype)
    init = rng.integers(0, 3, n)
    tree = HistTree(9, None, "mondrian")
    leaves = tree.fit_apply(B, is_cat, n_bins, None, init=init)
    ref, ref_leaves = _dense_mondrian(B, is_cat, n_bins, init, 9, None)
    assert tree.feature_.tolist() == ref.feature
    assert tree.threshold_.tolist() == ref.threshold
    assert np.array_equal(leaves, ref_leaves)
    assert len(set(leaves.tolist())) > 10  # the tree grew
