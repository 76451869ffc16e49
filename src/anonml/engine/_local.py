"""Engine-neutral kernels of the nodes finished in memory (split from
:mod:`anonml.engine._kernels`, step 6 of its list).

:func:`active_rows` / :func:`node_rows`, :func:`local_subtree`, :func:`leaf_frame`,
:func:`assign_leaves`: nodes small enough to finish in memory have their rows gathered by node
(the engine's own shuffle), their subtrees grown by ``HistTree``, which knows each row's leaf;
the leaves are sent back to the rows' partitions by a second shuffle.
(The tests' reference, in tests/dask/test_dask_engine.py, routes rows down grafted subtrees
instead, walking every row level by level.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.engine._levels import PartState, _regression

__all__ = ["active_rows", "node_rows", "local_subtree", "subtree_arrays", "leaf_frame",
           "parts_in", "assign_leaves"]


def active_rows(state: PartState, can: np.ndarray, part_index: int = 0,
                out: np.ndarray | None = None, with_y: bool = True) -> pd.DataFrame:
    """The rows of the frontier nodes that may split (``can``, per frontier position): their
    frontier position, class code and bins, as a frame that an engine's own shuffle can gather
    by node (``"__node"``), with each row's place ``"__at"`` = partition << 32 | row, so that
    its leaf can be sent back (:func:`local_subtree`, :func:`assign_leaves`). With ``out`` (per
    frontier position), each row's output partition of the shuffle, ``"_partitions"``."""
    if state.y.size >= 2**31:  # a row's position is sent back as 32 bits
        raise InputError(f"a partition holds {state.y.size} rows, more than 2**31 - 1; split "
                         "its file into smaller files")
    act, pos = state.growing()
    sel = np.flatnonzero(can[pos])
    return _rows_frame(state, act.take(sel), pos.take(sel), part_index, out, with_y)


def node_rows(state: PartState, leaf: np.ndarray, out: np.ndarray, part_index: int = 0,
              with_y: bool = True) -> pd.DataFrame:
    """:func:`active_rows` of the rows whose node (``leaf``: each row's node id, from
    :func:`finish`) has an output partition (``out``, per node id, -1: none), with
    ``"__node"`` the node id: the nodes set aside by the level-wise growth, gathered in one
    shuffle once it ends."""
    leaf = np.asarray(leaf, dtype=np.int64)
    out = np.asarray(out, dtype=np.int64)
    act = np.flatnonzero(out[leaf] >= 0)
    return _rows_frame(state, act, leaf[act], part_index, out, with_y)


def _rows_frame(state: PartState, act: np.ndarray, node: np.ndarray, part_index: int,
                out: np.ndarray | None, with_y: bool = True) -> pd.DataFrame:
    """The frame of :func:`active_rows` / :func:`node_rows`: ``"__node"`` (int32 while the
    node ids fit), ``"__y"`` (only ``with_y``: Mondrian reads no class), ``"__at"``, the
    bins ``"__b<j>"`` and, with ``out``, ``"_partitions"``."""
    if state.y.size >= 2**31:  # a row's position is sent back as 32 bits
        raise InputError(f"a partition holds {state.y.size} rows, more than 2**31 - 1; split "
                         "its file into smaller files")
    cols = {"__node": node.astype(np.int32 if out is None or out.size < 2**31 else np.int64)}
    if with_y:  # Mondrian (the refinement) grows on the bins alone
        y = state.y[act]
        cols["__y"] = y if _regression(state) else y.astype(np.int64)
    cols["__at"] = (np.int64(part_index) << np.int64(32)) | act.astype(np.int64)
    for j in range(state.B.shape[1]):
        cols[f"__b{j}"] = state.B[act, j]
    if out is not None:
        cols["_partitions"] = np.asarray(out, dtype=np.int64)[node]
    return pd.DataFrame(cols)


def local_subtree(
    rows: pd.DataFrame, is_cat: np.ndarray, n_bins: np.ndarray, k: int, criterion: str,
    max_depth: int | None,
) -> dict:
    """Grow the subtrees of the frontier nodes whose rows are all in ``rows`` with the in-memory
    :class:`~anonml.anonymize._hist_tree.HistTree` (the same splits as level-wise growth: every
    node's split depends only on its own rows). Returns the subtree arrays, ``roots`` (the
    frontier position of each root), and for each row its place ``at`` (:func:`active_rows`)
    and its leaf in the subtree ``leaf`` (found while growing: ``HistTree.fit_apply``).

    For ``"squared_error"`` the rows are first put in (node, y) order: the engine's shuffle
    delivers them in an order that may change between runs, and float sums depend on the order
    of their terms; in this order every histogram cell sums its targets in increasing order, so
    a rerun grows the same subtree."""
    from anonml.anonymize._hist_tree import HistTree

    if criterion == "squared_error" and rows.shape[0]:
        rows = rows.iloc[np.lexsort((rows["__y"].to_numpy(), rows["__node"].to_numpy()))]
    roots, init = np.unique(rows["__node"].to_numpy(), return_inverse=True)
    out: dict = {"roots": roots}
    if roots.size == 0:
        return out
    B = np.column_stack([rows[f"__b{j}"].to_numpy() for j in range(len(n_bins))])
    y = None if criterion == "mondrian" else rows["__y"].to_numpy()
    t = HistTree(k, max_depth, criterion)
    leaf = t.fit_apply(B, is_cat, n_bins, y, init=init)
    if t.feature_.size < 2**31:  # held until the leaves are sent back: 4 bytes a row
        leaf = leaf.astype(np.int32)
    out.update(feature=t.feature_, threshold=t.threshold_, left=t.children_left_,
               right=t.children_right_, offset=t.offset_, flat=t.flat_,
               at=rows["__at"].to_numpy(dtype=np.int64), leaf=leaf)
    return out


def subtree_arrays(sub: dict) -> dict:
    """The node arrays of a :func:`local_subtree` result (what the client grafts), without the
    rows' leaves (which stay on the workers)."""
    return {key: v for key, v in sub.items() if key not in ("at", "leaf")}


def leaf_frame(sub: dict, gid: np.ndarray | None, dtype: Any) -> pd.DataFrame:
    """The rows of a :func:`local_subtree` result with their leaf's id in the grafted tree
    (``gid``: subtree node -> tree node), by partition (``"__part"``) and row (``"__row"``)."""
    if "at" not in sub or gid is None:
        at, leaf = np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        at, leaf = sub["at"], gid[sub["leaf"]]
    part = (at >> np.int64(32)).astype(np.int32)
    return pd.DataFrame({"__part": part, "__row": (at & np.int64(0xFFFFFFFF)).astype(np.int32),
                         "__leaf": leaf.astype(dtype), "_partitions": part.astype(np.int64)})


def parts_in(frame: pd.DataFrame) -> np.ndarray:
    """The partitions whose rows ``frame`` (a part of :func:`leaf_frame`'s shuffle) holds."""
    return np.unique(frame["__part"].to_numpy())


def assign_leaves(leaf: np.ndarray, part_index: int, *frames: pd.DataFrame) -> np.ndarray:
    """The final node of every row of partition ``part_index``: its node in the level-wise tree
    (``leaf``, :func:`finish`), replaced for the rows finished in a local subtree by their leaf
    there (``frames``: the parts of the shuffled :func:`leaf_frame` holding this partition)."""
    node = np.asarray(leaf).astype(np.int64)
    for f in frames:
        mine = f["__part"].to_numpy() == part_index
        node[f["__row"].to_numpy()[mine]] = f["__leaf"].to_numpy()[mine]
    return node.astype(np.int32) if node.size and node.max() < 2**31 - 1 else node
