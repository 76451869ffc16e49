"""The reference for the Dask tree's local-subtree leaves (issue 21): every row walked from its
node down a grafted tree. The engine no longer does this (the leaves ``HistTree`` found are
sent back, :func:`anonml.engine._local.assign_leaves`); the tests check the engine's leaves
against it (tests/dask/test_dask_engine.py)."""

from __future__ import annotations

import numpy as np

from anonml.engine._kernels import PartState

__all__ = ["descend"]


def descend(state: PartState, leaf: np.ndarray, tree: dict) -> np.ndarray:
    """Walk every row from its node ``leaf`` down ``tree`` (node arrays) to a leaf: rows that
    stopped at the root of a subtree grown later reach that subtree's leaves."""
    node = np.asarray(leaf, dtype=np.int64).copy()
    n = state.B.shape[0]
    Bf = state.B.ravel(order="F")
    feature, threshold, offset = tree["feature"], tree["threshold"], tree["offset"]
    flat = tree["flat"] if tree["flat"].size else np.zeros(1, dtype=bool)
    rows = np.arange(n)
    while rows.size:
        rows = rows[feature[node[rows]] >= 0]
        if not rows.size:
            break
        nd = node[rows]
        b = Bf[feature[nd] * n + rows].astype(np.int64)
        go_left = b <= threshold[nd]
        off = offset[nd]
        cat = off >= 0
        if cat.any():
            go_left = np.where(cat, flat[np.where(cat, off + b, 0)], go_left)
        node[rows] = np.where(go_left, tree["left"][nd], tree["right"][nd])
    return node.astype(np.int32) if node.size and node.max() < 2**31 - 1 else node
