"""Balancing the local subtrees of the distributed tree over the cluster's threads (issue 21).

The frontier nodes finished in memory (:func:`anonml.dask._tree._launch_local`) are gathered by
one Dask shuffle. A shuffle that hashes the node id gives output partitions of very different
sizes (5 nodes in 5 partitions: some empty, some with two nodes), and a single large node can
hold a worker thread long after the others are idle. Here the nodes are assigned to output
partitions by their row counts, which the client knows from the level's class counts: the
largest first, each to the partition with the fewest rows so far (LPT, Graham 1969, "Bounds on
multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2)), and the shuffle sends every row to
the partition of its node (:func:`shuffle_to`). The subtrees grown are the same whatever the
assignment (a node's subtree depends only on its own rows); only the order in which they are
grafted, hence the node ids, differ, and :func:`anonml.dask._tree.grow` numbers the grafted nodes
in an order that does not depend on the assignment.

With ``local_rows="auto"`` the tree grows level-wise as long as its histograms fit, and
:func:`auto_local_rows` (an eighth of the rows per worker thread, at most 4 × 10⁶ rows, at
least 50,000) bounds the rows of a local-subtree partition: enough of them for every thread,
none that dominates the tail or a worker's memory.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

__all__ = ["auto_local_rows", "n_threads", "pack_nodes", "rounds", "shuffle_budget",
           "shuffle_method", "shuffle_to"]

MAX_LOCAL_ROWS = 4_000_000  # the largest node grown in memory on one worker thread
MIN_LOCAL_ROWS = 50_000
SHARES_PER_THREAD = 4  # local subtrees per worker thread, at least, once nodes go local


def n_threads(client: Any) -> int:
    """Worker threads of the cluster behind ``client`` (a ``Watched`` or a ``Client``); 1
    when unknown."""
    try:
        return max(1, int(sum(getattr(client, "client", client).nthreads().values())))
    except Exception:  # noqa: BLE001 - no information: plan for one thread
        return 1


TASKS_SHARE = 8  # Dask's in-memory task shuffle up to 1/8 of the workers' memory, else p2p


def shuffle_budget(client: Any) -> int | None:
    """The bytes a shuffle may move with Dask's in-memory task shuffle: 1/``TASKS_SHARE`` of
    the workers' memory limits together; None when a limit is unknown."""
    try:
        limits = [w.get("memory_limit") or 0 for w in
                  getattr(client, "client", client).scheduler_info()["workers"].values()]
    except Exception:  # noqa: BLE001 - no information: Dask's default
        return None
    if not limits or min(limits) <= 0:
        return None
    return int(sum(limits)) // TASKS_SHARE


def shuffle_method(client: Any, nbytes: int) -> str | None:
    """``"tasks"`` (Dask's in-memory shuffle: about half the CPU of p2p's, measured on 5M rows
    of 16 columns, BENCHMARKS.md "Dask cost, session 8") when ``nbytes`` is at most
    :func:`shuffle_budget`; else None (Dask's default, p2p, which keeps the shuffled rows on
    disk)."""
    budget = shuffle_budget(client)
    return "tasks" if budget is not None and nbytes <= budget else None


def rounds(client: Any, nbytes: int) -> int:
    """In how many rounds to shuffle ``nbytes`` so that each fits :func:`shuffle_budget`
    (with a tenth to spare; 1 when no budget is known): rows gathered round after round by
    the in-memory shuffle cost a quarter to a half of the CPU of p2p's, through the disk
    (BENCHMARKS.md, "Dask cost, session 8" and "session 9")."""
    budget = shuffle_budget(client)
    if not budget or nbytes <= budget:
        return 1
    return int(-(-int(nbytes) // int(0.9 * budget)))


def auto_local_rows(n_rows: int, threads: int) -> int:
    """The partition bound (``cap``) of ``local_rows="auto"``: ``n_rows / (SHARES_PER_THREAD *
    2 * threads)``, within [``MIN_LOCAL_ROWS``, ``MAX_LOCAL_ROWS``]: a local-subtree partition
    holds about ``cap / 2`` rows at most (:func:`pack_nodes`)."""
    share = int(n_rows) // (SHARES_PER_THREAD * 2 * max(1, int(threads)))
    return int(min(MAX_LOCAL_ROWS, max(MIN_LOCAL_ROWS, share)))


def pack_nodes(rows: np.ndarray, threads: int, cap: int | None = None) -> tuple[np.ndarray, int]:
    """Output partition of each node (``rows``: its row count) and the number of partitions,
    filled by LPT (the largest node first, to the partition with the fewest rows;
    deterministic, ties by node order). At most one partition per node; at least
    ``SHARES_PER_THREAD * threads``, and enough for about ``cap / 2`` rows each (``cap``: the
    largest node a worker grows in memory, ``local_rows``), so that a partition is not much
    more than a node: its subtree task's memory stays bounded."""
    rows = np.asarray(rows, dtype=np.int64)
    n = rows.size
    want = SHARES_PER_THREAD * max(1, int(threads))
    if n and cap:
        want = max(want, -(-2 * int(rows.sum()) // max(int(cap), int(rows.max()), 1)))
    n_out = max(1, min(n, want))
    out = np.zeros(n, dtype=np.int64)
    if n_out == 1:
        return out, 1
    if n_out == n:  # one node per partition, largest first: partition 0 is the longest task
        out[np.argsort(-rows, kind="stable")] = np.arange(n)
        return out, n_out
    heap = [(0, j) for j in range(n_out)]
    for i in np.argsort(-rows, kind="stable").tolist():
        load, j = heapq.heappop(heap)
        out[i] = j
        heapq.heappush(heap, (load + int(rows[i]), j))
    return out, n_out


def shuffle_to(frame: Any, column: str, n_out: int, method: str | None = None) -> Any:
    """Dask's own shuffle of ``frame`` (a dask DataFrame) with row ``r`` sent to output
    partition ``frame[column][r]`` (ints in 0..n_out-1), as ``sort_values`` does it (the
    column may be dropped; ``method``: Dask's shuffle method, None for its default). Falls
    back to hashing the column when this dask has no such shuffle (then partitions may be
    uneven; the rows and the results are the same).

    Dask's in-memory task shuffle stages itself (every row split and moved twice) when both
    the input and the output have more than 32 partitions (its ``max_branch``); in one stage
    (a larger ``max_branch``) it has ``n_in x n_out`` pieces, and at 100M rows that cost more
    than the second move (BENCHMARKS.md, "Session 11"): Dask's default is kept."""
    try:
        from dask.dataframe.dask_expr import new_collection
        from dask.dataframe.dask_expr._shuffle import Shuffle

        return new_collection(Shuffle(frame.expr, column, int(n_out), True, method))
    except (ImportError, AttributeError, TypeError):
        return frame.shuffle(on=column, npartitions=int(n_out), method=method)


def level_order(tree: dict, n_roots: int, n_bins: np.ndarray) -> tuple[dict, np.ndarray]:
    """``tree`` (node arrays: feature, threshold, left, right, offset, flat) renumbered level by
    level, the children of a level's nodes left then right in the order of their parents, with
    the category masks in ``flat`` in the same order: the numbering of a tree grown level-wise
    (:class:`~anonml.anonymize._hist_tree.TreeBuilder`), whichever subtrees were grown apart
    and grafted in whichever order. Returns the tree and ``new_id`` (old node id -> new)."""
    feature, left, right = tree["feature"], tree["left"], tree["right"]
    n = feature.size
    order_parts = []
    level = np.arange(n_roots, dtype=np.int64)
    while level.size:
        order_parts.append(level)
        inner = level[feature[level] >= 0]
        level = np.column_stack([left[inner], right[inner]]).ravel()
    order = np.concatenate(order_parts) if order_parts else np.zeros(0, np.int64)
    if order.size != n:
        raise RuntimeError("internal error: the grafted tree has unreachable nodes; please report")
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    f = feature[order]
    internal = f >= 0
    out = {"feature": f, "threshold": tree["threshold"][order],
           "left": np.where(internal, new_id[np.maximum(left[order], 0)], -1),
           "right": np.where(internal, new_id[np.maximum(right[order], 0)], -1)}
    off = tree["offset"][order]
    cat = np.flatnonzero(off >= 0)
    width = np.asarray(n_bins, dtype=np.int64)[f[cat]]
    new_off = np.full(n, -1, dtype=np.int64)
    new_off[cat] = np.cumsum(width) - width
    out["offset"] = new_off
    if cat.size:  # the masks, gathered in the new order
        start = np.repeat(off[cat] - new_off[cat], width)
        out["flat"] = tree["flat"][start + np.arange(int(width.sum()))]
    else:
        out["flat"] = np.zeros(0, dtype=bool)
    return out, new_id
