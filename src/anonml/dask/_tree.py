"""The distributed histogram tree: level-wise growth driven from the client, rows never move.

Each partition's binned QIs and class codes live on its worker as a
:class:`~anonml.engine._kernels.PartState` future. At each level the client sends the last
level's splits (a few small arrays, sent with the tasks), every partition routes its rows and counts
the class histograms of the smaller child of each sibling pair, the histograms are summed by a
tree reduction, and the client runs the *same* split search as the in-memory
:class:`~anonml.anonymize._hist_tree.HistTree` (:func:`~anonml.anonymize._hist_tree.choose_splits`,
:class:`~anonml.anonymize._hist_tree.TreeBuilder`). The larger child's histogram is its parent's
minus the smaller's, and the children's class counts come from the parent's histogram on the split
feature, so a level costs one pass over the rows. Histogram counts are integers held exactly in
float64, so the sums do not depend on the order of the reduction and the tree is identical to the
in-memory one given the same bins.

A regression guide (float targets, ``criterion="squared_error"``) is grown the same way, with
histograms of (count, sum of y) per (node, bin) and node totals (count, sum, sum of squares,
counted in the task that routes the rows: the sum of squares is not in the histograms).
Float sums depend on the order of their terms, so every reduction here adds its parts in a
fixed order, that of the partitions (:func:`tree_reduce` chunks the futures in list order and
:func:`~anonml.engine._kernels.sum_arrays` adds them in argument order, never in order of
completion), and the subtrees finished in memory sort their rows first
(:func:`~anonml.engine._local.local_subtree`): a rerun on the same partitions grows the same
tree, bit for bit. Against the in-memory tree, whose sums run in row order, a split whose gain
ties another's to the last bits may differ; with targets whose sums are exact (e.g. multiples of
1/4 of moderate size) the trees are identical (tests/dask/test_dask_regression.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from anonml.encoding import bins_dtype
from anonml.engine import _kernels as K
from anonml.engine import _levels as LV
from anonml.engine import _local as L
from anonml.anonymize._hist_tree import (TreeBuilder, children_counts, choose_splits,
                                         left_table)
from anonml.dask._balance import (auto_local_rows, level_order, n_threads, pack_nodes,
                                  rounds, shuffle_method, shuffle_to)

__all__ = ["tree_reduce", "grow", "GrownTree"]


# Dask priority of the level-wise tree's tasks: a worker thread freed by a local subtree runs
# the next level's routing first, so the level-wise growth (which the client waits for) is not
# queued behind the local subtrees launched before it
_LEVEL = 10


def tree_reduce(client: Any, futures: list, func: Callable, split_every: int = 8,
                priority: int = 0) -> Any:
    """Reduce futures with ``func(*chunk)`` in a tree of fan-in ``split_every``; one future.

    The chunks are consecutive runs of ``futures`` in list order, so ``func`` always sees its
    parts in the same order, whatever order they complete in: float sums are reproducible."""
    futures = list(futures)
    if not futures:
        raise ValueError("nothing to reduce")
    while len(futures) > 1:
        futures = [
            client.submit(func, *futures[i : i + split_every], pure=False, priority=priority)
            for i in range(0, len(futures), split_every)
        ]
    return futures[0]


_INLINE_BYTES = 1 << 20


def _nbytes(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    return _INLINE_BYTES  # unknown: held by a task


def _identity(obj: Any) -> Any:
    return obj


def _put(client: Any, obj: Any) -> Any:
    """``obj`` itself when small (sent inside the tasks), else one future holding it, made by a
    task that returns it: unlike ``scatter``-ed data, the scheduler can recompute it when the
    worker holding it dies (docs/dask.md, "A lost worker")."""
    if obj is None or _nbytes(obj) < _INLINE_BYTES:
        return obj
    return client.submit(_identity, obj, pure=False)


def _start(state: LV.PartState, init: np.ndarray | None, zero_y: bool) -> LV.PartState:
    s = state.start(init)
    if zero_y:  # one class (integer codes, also in place of a regression guide's floats)
        s = LV.PartState(s.B, np.zeros(s.y.size, dtype=np.int8), s.base, s.active, s.pos,
                        s.stops, shared=("B",))
    return s


def _map_ids(ids: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    out = mapping[ids]
    return out.astype(np.int32) if mapping.size < 2**31 - 1 else out


def _leaf_counts(leaf: np.ndarray, n_nodes: int) -> np.ndarray:
    return np.bincount(leaf, minlength=n_nodes)


class GrownTree:
    """Node arrays of a tree grown by :func:`grow` (as :class:`HistTree`'s ``*_`` attributes)."""

    def __init__(self, builder: TreeBuilder | dict, is_cat: np.ndarray):
        arrays = builder if isinstance(builder, dict) else _arrays(builder)
        self.feature_ = arrays["feature"]
        self.threshold_ = arrays["threshold"]
        self.children_left_ = arrays["left"]
        self.children_right_ = arrays["right"]
        self.offset_ = arrays["offset"]
        self.flat_ = arrays["flat"]
        self.is_cat_ = np.asarray(is_cat, dtype=bool)
        self.n_nodes_ = int(self.feature_.size)
        self.leaves_ = np.flatnonzero(self.feature_ < 0)


def _arrays(builder: TreeBuilder) -> dict:
    return {
        "feature": np.asarray(builder.feature, dtype=np.int64),
        "threshold": np.asarray(builder.threshold, dtype=np.int64),
        "left": np.asarray(builder.left, dtype=np.int64),
        "right": np.asarray(builder.right, dtype=np.int64),
        "offset": np.asarray(builder.offset, dtype=np.int64),
        "flat": builder.flat(),
    }


def _stitch(tree: dict, frontier: np.ndarray, subtrees: list) -> tuple[dict, list]:
    """Graft the locally grown subtrees onto the tree: their roots are frontier nodes, their
    other nodes get new ids after the tree's. Returns the tree and, per subtree, the id in the
    tree of each of its nodes (None for a subtree without rows)."""
    parts = {key: [v] for key, v in tree.items()}
    gids: list = []
    n_nodes = tree["feature"].size
    flat_len = tree["flat"].size
    for sub in subtrees:
        roots = sub["roots"]
        if roots.size == 0 or "feature" not in sub:
            gids.append(None)
            continue
        R, n_sub = roots.size, sub["feature"].size
        gid = np.empty(n_sub, dtype=np.int64)
        gid[:R] = frontier[roots]
        gid[R:] = n_nodes + np.arange(n_sub - R)
        internal = sub["feature"] >= 0
        left = np.where(internal, gid[np.maximum(sub["left"], 0)], -1)
        right = np.where(internal, gid[np.maximum(sub["right"], 0)], -1)
        offset = np.where(sub["offset"] >= 0, sub["offset"] + flat_len, -1)
        for key, v in (("feature", sub["feature"]), ("threshold", sub["threshold"]),
                       ("left", left), ("right", right), ("offset", offset)):
            parts[key][0][gid[:R]] = v[:R]  # the roots were leaves of the tree so far
            parts[key].append(v[R:])
        parts["flat"].append(sub["flat"])
        n_nodes += n_sub - R
        flat_len += sub["flat"].size
        gids.append(gid)
    return {key: np.concatenate(v) for key, v in parts.items()}, gids


def _launch_local(
    client: Any, cur: list, frontier: np.ndarray, loc: np.ndarray, cnt: np.ndarray,
    is_cat: np.ndarray, n_bins: np.ndarray, k: int, criterion: str, depth_left: int | None,
    threads: int = 1, cap: int | None = None, leaves: list | None = None,
) -> tuple[np.ndarray, list]:
    """Start finishing the frontier nodes ``loc`` locally: Dask's own shuffle gathers each
    node's rows in one partition, where the in-memory HistTree grows its subtree; the nodes
    are spread over the partitions by their row counts ``cnt`` (:func:`pack_nodes`, about
    equal rows per partition, a few partitions per worker thread ``threads``). Returns the
    frontier (to map the subtrees' roots to node ids) and the subtrees' futures. With
    ``leaves`` (each row's node id, per partition, once the level-wise growth ended),
    ``frontier`` is every node id and ``loc`` marks the nodes to finish."""
    import dask
    import dask.dataframe as dd
    import pandas as pd

    bdtype = bins_dtype(n_bins)
    ydtype = np.float64 if criterion == "squared_error" else np.int64
    with_y = criterion != "mondrian"  # Mondrian grows on the bins alone
    meta = pd.DataFrame({"__node": np.zeros(0, np.int32 if loc.size < 2**31 else np.int64),
                         **({"__y": np.zeros(0, ydtype)} if with_y else {}),
                         "__at": np.zeros(0, np.int64),
                         **{f"__b{j}": np.zeros(0, bdtype) for j in range(len(n_bins))},
                         "_partitions": np.zeros(0, np.int64)})
    at = np.flatnonzero(loc)
    part, n_out = pack_nodes(cnt[at], threads, cap)
    out = np.full(loc.size, -1, dtype=np.int64)
    out[at] = part
    loc_f, out_f = _put(client, loc), _put(client, out)
    if leaves is None:  # the frontier's nodes, by position
        frames = [client.submit(L.active_rows, s, loc_f, i, out_f, with_y, pure=False)
                  for i, s in enumerate(cur)]
    else:  # nodes set aside during the growth, by node id
        frames = [client.submit(L.node_rows, s, lf, out_f, i, with_y, pure=False)
                  for i, (s, lf) in enumerate(zip(cur, leaves))]
    rows = dd.from_delayed(frames, meta=meta, verify_meta=False)
    method = shuffle_method(client, int(cnt[at].sum()) * _row_bytes(n_bins, criterion))
    shuffled = shuffle_to(rows, "_partitions", n_out, method)
    subs = client.compute([
        dask.delayed(L.local_subtree)(p, is_cat, n_bins, k, criterion, depth_left)
        for p in shuffled.to_delayed()
    ])
    return frontier.copy(), subs


def _row_bytes(n_bins: np.ndarray, criterion: str) -> int:
    """Bytes of a row shuffled to its local subtree: bins, node, class (not Mondrian's), place,
    output partition."""
    width = np.dtype(bins_dtype(n_bins)).itemsize
    return len(n_bins) * width + 20 + 8 * (criterion != "mondrian")


def _wait(client: Any, futures: list) -> None:
    """Wait for ``futures``, checked (the engine's ``Watched`` client; a plain client's own
    wait in the tests)."""
    if hasattr(client, "wait"):
        client.wait(futures)
    else:
        from distributed import wait

        wait(futures)


def _launch_rounds(client: Any, parts: list, frontier: np.ndarray, loc: np.ndarray,
                   cnt: np.ndarray, is_cat: np.ndarray, n_bins: np.ndarray, k: int,
                   criterion: str, threads: int, cap: int | None, leaves: list) -> list:
    """:func:`_launch_local` of the nodes ``loc`` (set aside until the level-wise growth
    ended) in :func:`~anonml.dask._balance.rounds`: runs of nodes of about equal rows, each
    gathered by Dask's in-memory shuffle and its subtrees grown before the next round starts,
    so that no round holds more rows than that shuffle's budget (one round, as before, when
    they fit). Returns the ``launched`` entries (rows, frontier, subtree futures)."""
    at = np.flatnonzero(loc)
    rows = cnt[at]
    total = int(rows.sum())
    n_rounds = rounds(client, total * _row_bytes(n_bins, criterion))
    if n_rounds == 1:
        return [(total, *_launch_local(client, parts, frontier, loc, cnt, is_cat, n_bins, k,
                                       criterion, None, threads, cap, leaves))]
    cuts = np.searchsorted(np.cumsum(rows), total * np.arange(1, n_rounds) / n_rounds)
    out = []
    for sel in np.split(at, cuts):
        if not sel.size:
            continue
        mark = np.zeros(loc.size, dtype=bool)
        mark[sel] = True
        front, subs = _launch_local(client, parts, frontier, mark, cnt, is_cat, n_bins, k,
                                    criterion, None, threads, cap, leaves)
        _wait(client, subs)  # this round's rows gathered and grown: the next round's may come
        out.append((int(cnt[sel].sum()), front, subs))
    return out


def grow(
    client: Any,
    states: list,
    is_cat: np.ndarray,
    n_bins: np.ndarray,
    n_classes: int,
    k: int,
    criterion: str,
    max_depth: int | None = None,
    init: list | None = None,
    n_roots: int = 1,
    progress: Callable | None = None,
    stage: str = "tree",
    local_cells: int | None = 4_000_000,
    local_rows: int | str | None = "auto",
    root_counts: np.ndarray | None = None,
) -> tuple[GrownTree, list]:
    """Grow a :class:`HistTree`-identical tree over partitions; return it and a future per
    partition holding each row's leaf node id.

    ``states``: futures of :class:`PartState` (bins and class codes, or float targets for
    "squared_error"); ``init``: futures of each row's root (ints 0..n_roots-1) or None;
    ``criterion``: "gini", "entropy", "squared_error" (a regression tree, variance reduction;
    ``n_classes`` is ignored) or "mondrian" (then the class codes are ignored).
    ``local_rows``: a splittable node of at most this many rows leaves the level-wise growth;
    its rows are gathered by Dask's own shuffle on the node id
    and its subtree is grown in memory by HistTree (the same splits, since a node's split depends
    only on its rows), in one shuffle once the level-wise growth ends (with ``max_depth``,
    launched at each level, concurrently with the remaining ones); ``"auto"``: no size threshold
    (level-wise while the histograms fit ``local_cells``), the local subtrees packed in
    partitions of about :func:`~anonml.dask._balance.auto_local_rows` / 2 rows. ``local_cells``: when a level's histograms would hold more cells than this
    (nodes x bins x classes), every splittable node is finished that way. The grafted tree is
    numbered level by level (:func:`~anonml.dask._balance.level_order`), as if grown
    level-wise throughout: the node ids, hence the groups' numbers, do not depend on
    ``local_rows``, ``local_cells`` or the cluster.

    ``root_counts`` (Mondrian with ``init`` only): the rows of each root, known to the caller
    (the groups' sizes), so no pass counts them; when every root that may split is finished
    in memory at once (AG's refinement of many leaves), the rows are gathered straight from
    ``states`` and ``init``, with no level-wise state made for them.
    """
    mondrian = criterion == "mondrian"
    reg = criterion == "squared_error"
    C = 1 if mondrian else 2 if reg else int(n_classes)  # histogram width
    builder = TreeBuilder(n_roots)
    frontier = np.arange(n_roots)
    T = None
    if root_counts is not None and mondrian and init is not None:
        T = np.asarray(root_counts, dtype=np.float64).reshape(n_roots, 1)
    threads = n_threads(client)
    if T is not None and max_depth is None and local_rows == "auto" and local_cells is not None \
            and n_roots * int(n_bins.sum()) > local_cells:
        # every root that may split is finished in memory (plan() below, first level)
        if progress is not None:
            progress(stage, 0, None)
        cnt = T[:, 0]
        loc = cnt >= 2 * k
        if progress is not None:
            progress(stage, 0, 0)
        if not loc.any():
            return GrownTree(builder, is_cat), list(init)
        pack_cap = auto_local_rows(int(round(cnt.sum())), threads)
        launched = _launch_rounds(client, states, frontier, loc, cnt, is_cat, n_bins, k,
                                  criterion, threads, pack_cap, list(init))
        return _graft(client, builder, is_cat, n_bins, n_roots, launched, len(states),
                      list(init), progress, stage)
    cur = [
        client.submit(_start, s, None if init is None else init[i], mondrian, pure=False,
                      priority=_LEVEL)
        for i, s in enumerate(states)
    ]
    if T is None:
        T = client.gather(tree_reduce(
            client,
            [client.submit(LV.node_class_counts, s, n_roots, C, pure=False, priority=_LEVEL)
             for s in cur],
            K.sum_arrays, priority=_LEVEL,
        ))
    pack_cap = local_rows
    if local_rows == "auto":  # level-wise while the histograms fit (local_cells), then subtrees
        # in partitions of about auto_local_rows / 2 rows at most
        pack_cap, local_rows = auto_local_rows(int(round(_count(T, reg).sum())), threads), None
    parent_H: list[np.ndarray] | None = None
    launched: list = []  # (rows, frontier, subtree futures) of nodes finished locally
    # (node ids, rows) of the nodes finished locally once the level-wise growth ends: with a
    # thread per worker, subtrees launched during the growth held the threads the next level
    # waited for, and every level's launch was a shuffle of its own
    aside: list = []
    depth = 0

    def plan(T: np.ndarray, first: bool) -> tuple[np.ndarray, np.ndarray, bool]:
        """The level's splittable nodes, those finished locally, and whether the level-wise
        growth needs this level's histograms."""
        A = T.shape[0]
        cnt = _count(T, reg)
        impure = _impure(T) if reg else ((T > 0).sum(1) > 1) | mondrian
        can = impure & (cnt >= 2 * k)
        n_h = A if first else A // 2
        if local_cells is not None and n_h * int(n_bins.sum()) * C > local_cells:
            loc = can.copy()  # too many nodes for histograms: all finish locally
        elif local_rows is not None:
            loc = can & (cnt <= local_rows)
        else:
            loc = np.zeros(A, dtype=bool)
        return can, loc, bool((can & ~loc).any())

    counted: list | None = None  # this level's histogram futures, counted while routing
    Hh = None
    while frontier.size and (max_depth is None or depth < max_depth):
        A = frontier.size
        if reg and counted is not None:  # the routing task counted the node totals too
            Hh = client.gather(tree_reduce(client, counted, K.sum_arrays, priority=_LEVEL))
            T, counted = Hh.pop(), None
        elif reg and np.isnan(T[:, 2]).any() and plan(T, parent_H is None)[0].any():
            # sums of squares still unknown, and a node large enough to split: count them
            T = client.gather(tree_reduce(
                client, [client.submit(LV.node_class_counts, s, A, C, pure=False, priority=_LEVEL)
                         for s in cur],
                K.sum_arrays, priority=_LEVEL))
        cnt = _count(T, reg)
        can, loc, _ = plan(T, parent_H is None)
        if progress is not None:
            progress(stage, depth, None)
        if not can.any():
            break
        if loc.any() and max_depth is None:  # finished after the last level, all at once
            aside.append((frontier[loc], cnt[loc]))
            can = can & ~loc  # their rows stop here in the level-wise tree
            if not can.any():
                break
        elif loc.any():
            launched.append((int(cnt[loc].sum()), *_launch_local(
                client, cur, frontier, loc, cnt, is_cat, n_bins, k, criterion,
                max_depth - depth, threads, pack_cap,
            )))
            can = can & ~loc  # their rows stop here in the level-wise tree
            if not can.any():
                break
        if parent_H is None:
            small_side = None
        else:
            n_pairs = A // 2
            small_side = (cnt[1::2] < cnt[0::2]).astype(np.int64)
            pair_ids = 2 * np.arange(n_pairs)
            small_ids, large_ids = pair_ids + small_side, pair_ids + 1 - small_side
        if Hh is None:
            if counted is None:
                side_f = _put(client, small_side) if small_side is not None else None
                counted = [client.submit(LV.class_histograms, s, n_bins, C, side_f, A, pure=False,
                                         priority=_LEVEL)
                           for s in cur]
            Hh = client.gather(tree_reduce(client, counted, K.sum_arrays, priority=_LEVEL))
            counted = None
        Hh = [np.asarray(h, dtype=np.float64) for h in Hh]  # exact counts, as before
        cur_H = []
        for f in range(len(n_bins)):
            if parent_H is None:
                H = Hh[f]
            else:
                H = np.empty((A, int(n_bins[f]), C))
                H[small_ids] = Hh[f]
                H[large_ids] = parent_H[f] - Hh[f]
            cur_H.append(H)
        Hh = None
        best_gain, best_f, best_pos, best_order = choose_splits(
            cur_H, cnt, T[:, 1] if reg else T, is_cat, k, criterion, can)
        split = can & np.isfinite(best_gain)
        if not split.any():
            break
        split_ids = np.flatnonzero(split)
        T_next = children_counts(cur_H, split_ids, best_f, best_pos, best_order, is_cat, n_bins,
                                  T[:, :2] if reg else T)
        if reg:  # the sums of squares come with the next level's histograms (or a count pass)
            T_next = np.column_stack([T_next, np.full(T_next.shape[0], np.nan)])
        parent_H = [H[split_ids] for H in cur_H]
        child_left = builder.add_children(frontier, split, best_f, best_pos, best_order, is_cat, n_bins)
        first = int(child_left[split_ids[0]])
        feature, threshold, offset, flat = builder.level_tables(frontier)
        step = {
            "split": split, "feature": feature, "threshold": threshold, "offset": offset,
            "flat": flat if flat.size else np.zeros(1, dtype=bool), "node": frontier,
            "child": np.where(split, child_left - first, -1),
        }
        # the level's go-left table, built once here rather than by every partition's task
        table = left_table(feature, threshold, offset, flat, n_bins)
        if table is not None:
            step["table"] = table
        step_f = _put(client, step)
        frontier = np.arange(first, len(builder.feature))
        T = T_next
        depth += 1
        # route and count the next level's histograms in one task per partition, when the
        # next level will grow level-wise (the same decisions as at the top of the loop)
        _, _, grows = plan(T, False)
        if grows and (max_depth is None or depth < max_depth):
            cnt = _count(T, reg)
            nxt_side = (cnt[1::2] < cnt[0::2]).astype(np.int64)
            side_f = _put(client, nxt_side)
            cur = [client.submit(LV.route_histograms, s, step_f, n_bins, C, side_f, T.shape[0],
                                 pure=False, priority=_LEVEL) for s in cur]
            counted = [client.submit(LV.state_histograms, s, pure=False, priority=_LEVEL)
                       for s in cur]
        else:
            cur = [client.submit(LV.route, s, step_f, pure=False, priority=_LEVEL) for s in cur]
    if progress is not None:
        progress(stage, depth, depth)
    frontier_f = _put(client, frontier)
    leaves = [client.submit(LV.finish, s, frontier_f, pure=False) for s in cur]
    n_parts = len(cur)
    # the level-wise states are released once their leaves are made: each row's root, the
    # stopped rows' nodes and the growing rows' positions (8-12 bytes a row: about 0.5 GB a
    # worker at 100M rows on 2 workers) and the last histograms were held through every round
    # of local subtrees before; the rounds read each row's bins and class from the binned
    # ``states``, the same arrays (BENCHMARKS.md, "Session 16")
    del cur, counted
    if aside:
        n_nodes = len(builder.feature)
        ids = np.concatenate([a for a, _ in aside])
        mark = np.zeros(n_nodes, dtype=bool)
        mark[ids] = True
        rows = np.zeros(n_nodes)
        rows[ids] = np.concatenate([c for _, c in aside])
        launched += _launch_rounds(client, states, np.arange(n_nodes), mark, rows, is_cat,
                                   n_bins, k, criterion, threads, pack_cap, leaves)
    if not launched:
        return GrownTree(builder, is_cat), leaves
    return _graft(client, builder, is_cat, n_bins, n_roots, launched, n_parts, leaves,
                  progress, stage)


def _graft(client: Any, builder: TreeBuilder, is_cat: np.ndarray, n_bins: np.ndarray,
           n_roots: int, launched: list, n_parts: int, leaves: list,
           progress: Callable | None, stage: str) -> tuple[GrownTree, list]:
    """The tree with the local subtrees of ``launched`` grafted and numbered level by level,
    and each row's leaf, per partition (``leaves``: the level-wise leaves)."""
    tree = _arrays(builder)
    n_subs = sum(len(subs) for _, _, subs in launched)
    done = 0
    placed: list = []  # (subtree future, its nodes' ids in the tree)
    n_local = sum(n for n, _, _ in launched)
    for _, front, subs in launched:
        # only the node arrays reach the client; every future checked (a cancelled one
        # raises, it is never taken for a subtree)
        subtrees = client.gather([client.submit(L.subtree_arrays, s, pure=False) for s in subs])
        done += len(subs)
        if progress is not None:
            progress(stage + " (local)", done, n_subs)
        tree, gids = _stitch(tree, front, subtrees)
        placed += [(s, g) for s, g in zip(subs, gids) if g is not None]
    del launched
    leaves = _send_back(client, n_parts, leaves, placed, int(tree["feature"].size), n_local)
    tree, new_id = level_order(tree, n_roots, n_bins)
    new_id_f = _put(client, new_id)
    leaves = [client.submit(_map_ids, lf, new_id_f, pure=False) for lf in leaves]
    return GrownTree(tree, is_cat), leaves


def _count(T: np.ndarray, reg: bool) -> np.ndarray:
    """Rows per node from the node totals (class counts, or regression's count, sum, sum2)."""
    return T[:, 0] if reg else T.sum(1)


def _impure(T: np.ndarray) -> np.ndarray:
    """The in-memory HistTree's purity test of a regression node (some target differs from
    another, beyond rounding); a node whose sum of squares is unknown (NaN) counts as impure
    (only to plan the next pass: the test is made on the real totals)."""
    cnt, tot, tot2 = T[:, 0], T[:, 1], T[:, 2]
    with np.errstate(invalid="ignore"):
        impure = tot2 - tot * tot / np.maximum(cnt, 1) > 1e-12 * np.maximum(tot2, 1)
    return impure | np.isnan(tot2)


def _send_back(client: Any, n_parts: int, leaves: list, placed: list, n_nodes: int,
               n_rows: int = 0) -> list:
    """Each row's final node, per partition: the level-wise leaves, with the rows finished in
    local subtrees given the leaf that ``HistTree`` found for them, sent back to their partition
    by Dask's own shuffle on the partition index (the same nodes as routing every row down the
    grafted subtrees, as the tests' reference does, without walking the rows)."""
    import dask.dataframe as dd
    import pandas as pd

    if not placed:
        return leaves
    dtype = np.int32 if n_nodes < 2**31 - 1 else np.int64
    meta = pd.DataFrame({"__part": np.zeros(0, np.int32), "__row": np.zeros(0, np.int32),
                         "__leaf": np.zeros(0, dtype), "_partitions": np.zeros(0, np.int64)})
    n_out = max(1, n_parts)
    # in rounds of subtrees (about equal rows each, balanced by pack_nodes) that fit Dask's
    # in-memory shuffle, each round's leaves assigned before the next round is shuffled
    n_rounds = min(len(placed), rounds(client, n_rows * 24))  # part, row, leaf, partition
    for batch in np.array_split(np.arange(len(placed)), n_rounds):
        frames = [client.submit(L.leaf_frame, placed[j][0], _put(client, placed[j][1]), dtype,
                                pure=False) for j in batch.tolist()]
        # every row to the output partition of its own partition: one part per partition
        back = shuffle_to(dd.from_delayed(frames, meta=meta, verify_meta=False), "_partitions",
                          n_out, shuffle_method(client, n_rows * 24 // n_rounds))
        outs = client.compute(back.to_delayed())
        held = client.gather([client.submit(L.parts_in, o, pure=False) for o in outs])
        where: list = [[] for _ in range(n_parts)]
        for o, ps in zip(outs, held):
            for p in ps.tolist():
                where[p].append(o)
        leaves = [client.submit(L.assign_leaves, lf, i, *where[i], pure=False) if where[i]
                  else lf for i, lf in enumerate(leaves)]
        del frames, back, outs, where
        if n_rounds > 1:
            _wait(client, leaves)
    return leaves


def compact(client: Any, leaves: list, n_nodes: int) -> tuple[list, int, np.ndarray]:
    """Number the leaves that hold rows 0..G-1 (as ``_accuracy_guided._compact``); returns the
    group futures per partition, G, and the group sizes."""
    counts = client.gather(tree_reduce(
        client, [client.submit(_leaf_counts, lf, n_nodes, pure=False) for lf in leaves],
        K.sum_arrays,
    ))
    mapping = np.full(n_nodes, -1, dtype=np.int64)
    used = np.flatnonzero(counts)
    mapping[used] = np.arange(used.size)
    mapping_f = _put(client, mapping)
    groups = [client.submit(_map_ids, lf, mapping_f, pure=False) for lf in leaves]
    return groups, int(used.size), counts[used]


