"""What a mapping read from a file is, and the bounds on every route its ``transform`` follows.

A mapping is an anonml anonymizer, alone or as the first step of a released
``Pipeline([("mapping", ...), ("model", ...)])`` (:func:`is_released_pipeline`).
:func:`check_routes` bounds every tree ``transform`` descends (depth, node count; a Hilbert
curve's order and boundaries) before any row is routed, so that no accepted mapping makes
``transform`` slow or loop; a mapping past a bound is refused in one line. The checks of what a
mapping claims are in :mod:`anonml.modelfile._mapping`, which calls this first.

References
----------
Sweeney, L. (2002). k-anonymity: a model for protecting privacy. *IJUFKS* 10(5), 557-570.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml.modelfile._limits import exact_int as _exact_int

__all__ = ["MAX_ROUTE_DEPTH", "MAX_ROUTE_NODES", "check_routes", "is_released_pipeline"]


def _is_anonymizer(obj: Any) -> bool:
    from anonml.anonymize._base import BaseAnonymizer

    return isinstance(obj, BaseAnonymizer)


def is_released_pipeline(obj: Any) -> bool:
    """True for a scikit-learn ``Pipeline`` whose first step is an anonml anonymizer."""
    from sklearn.pipeline import Pipeline

    return isinstance(obj, Pipeline) and len(obj.steps) >= 2 and _is_anonymizer(obj.steps[0][1])


def _refuse(where: str, text: str) -> InputError:
    return InputError(f"{where} is refused: {text}; fix: save the pipeline again from the "
                      "result of anonml.anonymize_model (its .pipeline)")


# ----------------------------------------------------------------------------- route bounds
#: deepest route ``transform`` may follow through a mapping's tree (from a root to a leaf).
#: ``transform`` routes all rows one vectorized step per level, so a tree's depth is its cost
#: per row: a hand-made chain 200,000 levels deep made ``transform`` of one table run for many
#: minutes. A k-anonymous partition never needs a deep tree: halving cuts reach groups of k
#: rows from n <= 2^63 rows within 63 levels. anonml's own trees are not balanced (the
#: accuracy-guided tree follows the model; an R+-tree with ``min_fill=0`` peels rows off a
#: node's edge), so the bound leaves them room: on Adult (48,842 rows, 12 quasi-identifiers,
#: k = 2) the deepest are 46 levels (exact tree), 41 (histogram tree), 20 (its refinement),
#: 24 (Mondrian), 28 (R+-tree, the default ``min_fill=0.2``) and 127 (R+-tree, ``min_fill=0``).
#: At 256 levels, ``transform`` of 1,000,000 rows through any accepted tree takes seconds
#: (benchmarks/bench_mapping_transform.py).
MAX_ROUTE_DEPTH = 256
#: most nodes (or cuts) in one routing tree: a binary tree whose leaves each hold at least one
#: of n training rows has fewer than 2n nodes; 2^28 covers 100 million rows at k = 2
MAX_ROUTE_NODES = 1 << 28


def _route_depth(where: str, what: str, n: int, roots: np.ndarray, expand: Any) -> int:
    """Depth of the tree ``what`` below ``roots``, one vectorized step per level: ``expand``
    gives the children of the inner nodes of a level. Refused past :data:`MAX_ROUTE_DEPTH`
    levels, on a child outside the ``n`` nodes, or on a level of more than ``n`` nodes (a node
    reached twice: not a tree). The work is at most ``MAX_ROUTE_DEPTH * n``."""
    if n > MAX_ROUTE_NODES:
        raise _refuse(where, f"its {what} has {n:,} nodes (anonml reads at most "
                      f"{MAX_ROUTE_NODES:,})")
    frontier = np.unique(np.asarray(roots, dtype=np.int64))
    if frontier.size and (frontier[0] < 0 or frontier[-1] >= n):
        raise _refuse(where, f"its {what} starts outside its {n:,} nodes")
    depth = 0
    while True:
        kids = np.asarray(expand(frontier), dtype=np.int64)
        if kids.size == 0:
            return depth
        depth += 1
        if depth > MAX_ROUTE_DEPTH:
            raise _refuse(where, f"its {what} has a route deeper than {MAX_ROUTE_DEPTH} levels "
                          f"(anonml's bound on any route transform follows)")
        if (kids < 0).any() or (kids >= n).any():
            raise _refuse(where, f"its {what} has a child outside its {n:,} nodes")
        if kids.size > n:
            raise _refuse(where, f"its {what} reaches a node twice (not a tree)")
        frontier = kids


def _loop(where: str, what: str) -> InputError:
    return _refuse(where, f"its {what} has a node whose child is not after its node (a loop "
                   "transform would follow for ever)")


def _binary(inner: np.ndarray, left: np.ndarray, right: np.ndarray, where: str,
            what: str) -> Any:
    def expand(frontier: np.ndarray) -> np.ndarray:
        f = frontier[inner[frontier]]
        kids = np.concatenate([left[f], right[f]])
        if (kids <= np.concatenate([f, f])).any():  # children lie after their parent
            raise _loop(where, what)
        return kids
    return expand


def _cut_tree_expand(t: Any, where: str) -> tuple[int, Any]:
    from anonml.anonymize._rtree import _ranges

    feature = np.asarray(t.feature_, dtype=np.int64)
    n = feature.shape[0]
    arrays = [np.asarray(getattr(t, a)) for a in ("kind_", "child_offset_", "largest_",
                                                  "lca_size_")]
    if feature.ndim != 1 or any(a.shape != (n,) for a in arrays):
        raise _refuse(where, "its cut tree's node arrays differ in length")
    kind, off, largest, size = (a.astype(np.int64) for a in arrays)
    nodes = np.asarray(t.child_nodes_, dtype=np.int64)
    width = np.where(kind == 2, size, 2)  # a hierarchy cut has lca_size_ children
    inner = feature >= 0
    bad = inner & ((off < 0) | (width < 1) | (off + width > nodes.size))
    if bad.any():
        raise _refuse(where, f"cut {int(np.argmax(bad))}'s children lie outside its child array")

    def expand(frontier: np.ndarray) -> np.ndarray:
        f = frontier[inner[frontier]]
        if f.size > n:
            return np.zeros(n + 1, dtype=np.int64)  # refused by the caller
        if int(width[f].sum()) > n:  # more children than nodes: refused by the caller
            return np.zeros(n + 1, dtype=np.int64)
        if f.size == 0:
            return f
        pos, ordinal, _ = _ranges(off[f], width[f])
        if (nodes[pos] <= f[ordinal]).any() or (largest[f] <= f).any():
            raise _loop(where, "cut tree")
        # unseen values go to ``largest_``, one of the node's children in a genuine tree
        return np.unique(np.concatenate([nodes[pos], largest[f]]))
    return n, expand


def check_routes(obj: Any, where: str = "the mapping") -> list:
    """Bound every route a mapping's ``transform`` follows, before any row is routed.

    Each tree ``transform`` descends (the accuracy-guided exact or histogram tree and its
    refinement, Mondrian's cut tree, the R+-tree's split tree) must be a tree of at most
    :data:`MAX_ROUTE_NODES` nodes and :data:`MAX_ROUTE_DEPTH` levels (the docstring of
    :data:`MAX_ROUTE_DEPTH` says why that is ample); a Hilbert mapping's curve has at most 32
    bits per axis and one boundary key per group.

    Returns
    -------
    list of str
        One line per tree: its depth and node count.

    Raises
    ------
    InputError
        One line naming the tree and the bound.
    """
    m = obj.steps[0][1] if is_released_pipeline(obj) else obj
    d = m.__dict__
    out = []
    tree = d.get("tree_")
    inner_tree = getattr(tree, "tree_", None)
    if inner_tree is not None and hasattr(inner_tree, "children_left"):  # scikit-learn's tree
        left = np.asarray(inner_tree.children_left, dtype=np.int64)
        right = np.asarray(inner_tree.children_right, dtype=np.int64)
        trees = [("tree", left.size, [0], _binary(left != -1, left, right, where, "tree"))]
    elif type(tree).__name__ == "HistTree":
        left = np.asarray(tree.children_left_, dtype=np.int64)
        trees = [("tree", left.size, [0],
                  _binary(np.asarray(tree.feature_) >= 0, left,
                          np.asarray(tree.children_right_, dtype=np.int64), where, "tree"))]
    elif type(tree).__name__ == "_CutTree":
        n, expand = _cut_tree_expand(tree, where)
        trees = [("cut tree", n, [0], expand)]
    else:
        trees = []
    refine = d.get("refine_tree_")
    if refine is not None:
        left = np.asarray(refine.children_left_, dtype=np.int64)
        l2g = np.asarray(d.get("leaf_to_group_"), dtype=np.int64)
        roots = np.arange(int(l2g.max()) + 1 if l2g.size else 1)  # one root per tree group
        trees.append(("refinement tree", left.size, roots,
                      _binary(np.asarray(refine.feature_) >= 0, left,
                              np.asarray(refine.children_right_, dtype=np.int64), where,
                              "refinement tree")))
    route = d.get("route_")
    if route is not None and "encoder_" not in d:  # a minimal release copy's routing tree
        feature = np.asarray(route.feature_, dtype=np.int64)
        left = np.asarray(route.left_, dtype=np.int64)
        right = np.asarray(route.right_, dtype=np.int64)
        if feature.ndim != 1 or left.shape != feature.shape or right.shape != feature.shape:
            raise _refuse(where, "its routing tree's arrays differ in length")
        group = np.asarray(route.group_, dtype=np.int64)
        leaves = feature < 0
        if group.shape != feature.shape or (group[leaves] < 0).any() or \
                (group[leaves] >= int(d.get("n_groups_", 0))).any():
            raise _refuse(where, "its routing tree's leaves point outside the groups")
        trees.append(("routing tree", feature.size, [0],
                      _binary(feature >= 0, left, right, where, "routing tree")))
    split = d.get("_tree")
    if isinstance(split, dict):  # the R+-tree's split tree
        axis = np.asarray(split.get("axis"), dtype=np.int64)
        left = np.asarray(split.get("left"), dtype=np.int64)
        right = np.asarray(split.get("right"), dtype=np.int64)
        if axis.ndim != 1 or left.shape != axis.shape or right.shape != axis.shape:
            raise _refuse(where, "its split tree's arrays differ in length")
        trees.append(("split tree", axis.size, [0],
                      _binary(axis >= 0, left, right, where, "split tree")))
    for what, n, roots, expand in trees:
        if n < 1:
            raise _refuse(where, f"its {what} has no nodes")
        depth = _route_depth(where, what, int(n), np.asarray(roots), expand)
        out.append(f"{what}: {depth} levels, {int(n):,} nodes (bounds {MAX_ROUTE_DEPTH} and "
                   f"{MAX_ROUTE_NODES:,})")
    if "_boundary_digits" in d:  # Hilbert: one boundary key per group, curve order <= 32
        from anonml.anonymize._hilbert import _MAX_BITS

        bits = d.get("bits_")
        keys = np.asarray(d["_boundary_digits"])
        n_axes = len(d.get("qi_") or ())
        if not _exact_int(bits) or not 1 <= int(bits) <= _MAX_BITS:
            raise _refuse(where, f"its curve order bits_ {str(bits)[:20]} is not between 1 and "
                          f"{_MAX_BITS}")
        want = (-(-n_axes * int(bits) // 16), int(d.get("n_groups_", -1)))
        if keys.shape != want or keys.dtype != np.uint16:
            raise _refuse(where, f"its curve boundaries have shape {keys.shape}, not {want} "
                          "(one 16-bit key per group)")
        out.append(f"curve: {int(bits)} bits per axis, {want[1]:,} boundaries")
    return out
