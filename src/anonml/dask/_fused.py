"""AG's Mondrian refinement grown in the guided tree's own local-subtree tasks (issue 21, item 5).

The accuracy-guided tree finishes its smaller nodes in memory: their rows are gathered by a
shuffle, one task grows each node's subtree (:func:`anonml.engine._local.local_subtree`), and the
rows' leaves are sent back by a second shuffle. The refinement (Mondrian from one root per
leaf, ``HistTree(k, None, "mondrian")``, as ``AccuracyGuidedAnonymizer``) then gathered the same
rows again, by leaf, grew each leaf's refinement, and sent the refined leaves back: two more
shuffles of nearly every row (on 100M rows the 4 GB workers spill during these moves,
BENCHMARKS.md, "Session 18").

A leaf's refinement depends only on its own rows, and the task that grew the leaf holds them all,
so here that task refines its leaves too: the guided leaves of those rows are never sent back,
and their rows are gathered and sent back once. The leaves of the level-wise part of the guided
tree that the refinement splits (at least ``2k`` rows) are gathered in the same shuffle, as
roots that stay leaves there (``leaf_nodes``), and refined in the same tasks; the refinement's
own call then gathers nothing and only sends the refined leaves back. The trees, groups and
their numbers are those of the two-pass path: the grafted trees are numbered level by level
(:func:`anonml.dask._balance.level_order`) whatever grew where, and the groups are the leaves
with rows in node order (:func:`anonml.dask._tree.compact`); the 11 output digests of
``benchmarks/check_dask_output_identity.py`` are unchanged.

Measured (BENCHMARKS.md, "Session 18"): on the Adult benchmark the guided tree is level-wise
almost to its leaves at 10M rows, so the shuffles are the same there; at 100M the change
removes one gather and one send-back of the guided tree's local rows, and CPU per row moved by
less than the noise between runs (no gain is claimed).

Not used with a saved mapping (which keeps each row's guided group) or ``max_depth`` (whose
subtrees are launched during the growth): those take the two-pass path.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from anonml.dask._tree import _leaf_counts, _map_ids, _put, compact, grow, tree_reduce
from anonml.engine import _kernels as K
from anonml.engine import _local as L

__all__ = ["refined_groups"]


def refined_groups(client: Any, states: list, is_cat: np.ndarray, n_bins: np.ndarray,
                   n_classes: int, k: int, criterion: str,
                   progress: Callable | None = None, **opts: Any) -> tuple:
    """The guided tree (``criterion``) and its Mondrian refinement over ``states``, as
    :func:`~anonml.dask._tree.grow` then :func:`~anonml.dask._tree.compact` twice would make
    them. Returns ``(tree, rtree, groups, n_groups, sizes)``: the two trees, each row's
    refined group per partition (futures), the number of groups and their sizes. ``opts``
    (``local_cells``, ``local_rows``) go to the guided tree's :func:`grow`."""
    tree, leaves, fused = grow(client, states, is_cat, n_bins, n_classes, k, criterion, None,
                               progress=progress, stage="tree", refine_k=k, **opts)
    n_nodes = tree.n_nodes_
    # rows per guided leaf: the level-wise rows (the subtrees' rows are at n_nodes: dropped)
    # and the subtrees' refinement roots (their leaves), by final node id
    counts = client.gather(tree_reduce(
        client, [client.submit(_leaf_counts, lf, n_nodes + 1, pure=False) for lf in leaves],
        K.sum_arrays))[:n_nodes].astype(np.int64)
    held = client.gather([client.submit(L.refined_counts, s, pure=False) for s, _ in fused])
    for (roots, c), (_, gid) in zip(held, fused):
        np.add.at(counts, gid[roots], c)
    used = np.flatnonzero(counts)
    n_groups = int(used.size)
    group_of = np.full(n_nodes + 1, -1, dtype=np.int64)
    group_of[used] = np.arange(n_groups)
    sizes = counts[used]
    done = np.zeros(n_groups, dtype=bool)
    premade, rows = [], 0
    for (roots, c), (s, gid) in zip(held, fused):
        if roots.size:
            g = group_of[gid[roots]]
            done[g] = True
            rows += int(c.sum())
            premade.append(client.submit(L.refined_subtree, s, g, pure=False))
    # the subtrees' rows: any refined root (they are not gathered again; their refined
    # leaves replace it when sent back)
    group_of[n_nodes] = int(np.flatnonzero(done)[0]) if done.any() else 0
    group_of_f = _put(client, group_of)
    groups = [client.submit(_map_ids, lf, group_of_f, pure=False) for lf in leaves]
    del leaves
    rtree, rleaves = grow(client, states, is_cat, n_bins, 1, k, "mondrian", None, init=groups,
                          n_roots=n_groups, progress=progress, stage="refine",
                          root_counts=sizes, done=done,
                          premade=[(rows, np.arange(n_groups), premade)] if premade else None)
    del groups
    groups, n_final, final_sizes = compact(client, rleaves, rtree.n_nodes_)
    return tree, rtree, groups, n_final, final_sizes
