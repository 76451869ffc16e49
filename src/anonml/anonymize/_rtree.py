"""R-tree k-anonymization: bulk-load a binary R-tree whose leaves hold k .. 2k-1 rows.

    T. Iwuchukwu & J. F. Naughton, "K-anonymization as spatial indexing: toward scalable and
    incremental anonymization", VLDB 2007, 746-757.

    N. Beckmann, H.-P. Kriegel, R. Schneider & B. Seeger, "The R*-tree: an efficient and robust
    access method for points and rectangles", SIGMOD 1990 (the margin criterion and the
    minimum fill of a split).

Iwuchukwu & Naughton observe that k-anonymizing a table is building a spatial index over its
quasi-identifiers (QIs) whose leaves hold at least k records: each leaf's minimum bounding
rectangle (MBR) is an equivalence class. Compact leaves (small MBRs) mean little information
loss, which is what R-tree split heuristics aim for.

What is built here
------------------
The tree is bulk-loaded top-down. The QIs are placed on normalized axes (numeric: value over the
table's range; categorical: rank in hierarchy-leaf order when a hierarchy is given, else in
category-code order, over the largest rank; see :mod:`anonml.anonymize._grid`). A node of at
least ``2k`` rows is split in two along the axis and at the position that minimize the sum of
the two children's normalized MBR margins (the sum of their extents over all axes: the R*-tree
``margin``), among the *allowed* cuts: between two distinct values of the axis (so the leaves'
MBRs are disjoint and new rows can be routed), with at least ``max(k, ceil(min_fill * N))``
rows on each side of a node of N rows (or, if no such cut exists, at least k), and with both
children satisfying the privacy model (``self.model_``: l-diversity, t-closeness). Splitting
stops below ``2k`` rows, so leaves hold ``k .. 2k-1`` rows, except a node that has no allowed
cut at all (for instance ``2k`` or more rows with identical QIs, or where every cut would break
l-diversity), which stays a larger leaf (``n_unsplittable_``). Every level of the tree is
processed at once, vectorized over all its nodes.

``min_fill`` is the R*-tree's minimum fill of a split (Beckmann et al. recommend 40% of a
node). The margin alone favours peeling a few tight rows off a node's edge; without a minimum
fill the tree can be ``n / k`` levels deep. On Adult (12 QI, k = 10) a fill of 0.1, 0.2 and 0.3
gives a GCP of about 0.123, 0.136 and 0.151 at depths 36, 22 and 16.

Where this simplifies the paper
-------------------------------
* No incremental insertion or deletion: the paper's R+-tree is built by inserting records and
  splitting overflowing leaves (and supports updates); here the tree is bulk-loaded from the
  whole table, and :meth:`transform` only routes new rows to existing leaves.
* Binary splits only: internal nodes have two children (no fan-out, no disk pages), which is
  all an anonymization needs: only the leaves are released.
* The split criterion is the R*-tree margin alone (no overlap or area terms: the leaves of a
  top-down split never overlap).
* ``split_sample`` (default 64): a node of more rows than that is judged on that many rows
  evenly spaced in it, sorted along each axis in turn: the axis whose sample split has the least
  margin is chosen, and the node is cut at the allowed cut nearest to the sample's best position
  (scaled to the node's size). If the chosen axis has no allowed cut, the other axes are tried
  in the order of their sample margins. Nodes up to that size, and every node with
  ``split_sample=None``, are searched exactly on every axis and position; this costs
  ``O(n d^2)`` per level against ``O(n d)`` plus the sample's ``O(nodes * sample * d^2)``.

Coordinates are rounded to multiples of ``2^-20`` of the axis range, so margins are exact
integers and ties are broken deterministically: smallest margin, then the most balanced split,
then the smaller left child, then the lowest axis.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml._utils import check_int, check_real
from anonml.anonymize._base import BaseAnonymizer
from anonml.anonymize._grid import QIGrid

__all__ = ["RTreeAnonymizer"]

_COORD_BITS = 20  # coordinates are integers 0 .. 2^20
_COUNT_CELLS = 1 << 22  # running sensitive-value counts computed at once (rows x values)


class RTreeAnonymizer(BaseAnonymizer):
    """k-anonymize a table as the leaves of a bulk-loaded R-tree (Iwuchukwu & Naughton, 2007).

    The rows are split top-down, every node in two along the axis and position that minimize
    the children's summed normalized MBR margins, until every leaf holds ``k .. 2k-1`` rows;
    each leaf is one group. See the module docstring for the allowed cuts, the sampled search
    and the simplifications of the paper.

    Parameters
    ----------
    k : int
        Smallest group size, ``>= 2``.
    quasi_identifiers : list, optional
        QI columns (names for a DataFrame, positions for an array). None means every column.
    categorical_features : list, optional
        Categorical columns. None detects them from dtype (object, ``str``, category, bool).
    split_sample : int or None, default 64
        Nodes with more rows choose their split axis and position on this many evenly spaced
        rows (the cut then moves to the nearest allowed one); None searches every axis and
        position exactly at every node (slower: ``O(n d^2)`` per level). At least 2.
    min_fill : float, default 0.2
        Least share of a node's rows on each side of a cut (at least k rows always), from 0 up
        to below 0.5; a node with no such cut is cut with k rows as the only bound. Smaller
        values allow tighter but deeper trees (lower GCP, slower).
    sensitive, l, l_kind, c, t, t_distance : optional
        Privacy model on top of k (l-diversity or t-closeness of one sensitive column): a split
        is allowed only if both children satisfy it, so some leaves stay larger than 2k-1.
    hierarchies : dict, optional
        ``{column: Hierarchy}``: a QI with a hierarchy is an axis in hierarchy-leaf order.
    recoding : {"representative", "generalize"}, default "representative"
        Output of each group: one real record's QIs, or ranges / hierarchy labels / sets.
    suppression : float, default 0.0
        Share of rows that may be suppressed (the groups of highest NCP first).
    representative : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}, default "majority_medoid"
        Choice of the representative record (the majority rule needs ``y``).
        The per-feature rules (see :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`) give
        each QI its own real value of the group: the one closest to the group's median
        (numeric) or the most frequent (categorical); ``"per_feature_joint"`` takes the
        numeric QIs so and the categorical QIs together from one real record of the group
        (its most frequent categorical combination).
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit: raise, or route it by the routing tree ``route_``
        (the structure a released copy keeps): a split that names categories sends it to the
        side it does not name, a split on a range of categories places it by its text order.
        New numeric values are routed by the routing tree's rounded thresholds.
    random_state : None
        Not used: the algorithm is deterministic. Kept for the common interface.
    copy : bool, default True
        ``False``: recode the quasi-identifier columns of the DataFrame given in place and return
        it (scikit-learn's ``copy`` convention); everything that can fail runs first, so on an
        error ``X`` is unchanged. As in :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`.

    Attributes
    ----------
    groups_ : ndarray of shape (n_rows,)
        Leaf (group) of every training row, numbered 0 .. n_groups_-1 in order of creation.
    n_groups_ : int
    n_nodes_ : int
        Nodes of the split tree (internal nodes and leaves).
    depth_ : int
        Number of split levels.
    n_unsplittable_ : int
        Leaves of ``2k`` rows or more that no allowed split existed for.
    information_loss_ : float
        ``sum_G |G| sum_A NCP_A(G)`` of the groups (NCP as in :mod:`anonml.privacy._metrics`).
    gcp_ : float
        ``information_loss_ / (n_rows * n_QIs)``, the Global Certainty Penalty in [0, 1].
    group_sizes_ : ndarray of shape (n_groups_,)
    representatives_, representative_rows_, min_class_size_, privacy_, qi_, categorical_,
    encoder_, model_ :
        As in every anonymizer (:class:`~anonml.anonymize._base.BaseAnonymizer`).
    timings_ : dict
        Seconds per step of the last fit; ``partition`` splits into ``partition_encode`` and
        ``partition_split``.

    Examples
    --------
    >>> from anonml.anonymize._rtree import RTreeAnonymizer
    >>> from anonml.datasets import load_adult
    >>> data = load_adult()
    >>> X = data.X.iloc[:2000]
    >>> rt = RTreeAnonymizer(k=10, quasi_identifiers=data.qi_sets["8"])
    >>> X_anon = rt.fit_transform(X)
    >>> rt.min_class_size_ >= 10
    True
    """

    _needs_target = False
    _merge_violations = False

    def __init__(
        self,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        split_sample: int | None = 64,
        min_fill: float = 0.2,
        sensitive: Any = None,
        l: float | None = None,
        l_kind: str = "distinct",
        c: float | None = None,
        t: float | None = None,
        t_distance: str = "auto",
        hierarchies: dict | None = None,
        recoding: str = "representative",
        suppression: float = 0.0,
        representative: str = "majority_medoid",
        handle_unknown: str = "error",
        random_state: Any = None,
        copy: bool = True,
    ):
        self.k = k
        self.quasi_identifiers = quasi_identifiers
        self.categorical_features = categorical_features
        self.split_sample = split_sample
        self.min_fill = min_fill
        self.sensitive = sensitive
        self.l = l
        self.l_kind = l_kind
        self.c = c
        self.t = t
        self.t_distance = t_distance
        self.hierarchies = hierarchies
        self.recoding = recoding
        self.suppression = suppression
        self.representative = representative
        self.handle_unknown = handle_unknown
        self.random_state = random_state
        self.copy = copy

    # -- partition -------------------------------------------------------------------------------
    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray | None) -> np.ndarray:
        s = self.split_sample
        if s is not None:
            s = check_int("split_sample", s, low=2, example=64, why="or None for an exact search")
        f = check_real("min_fill", self.min_fill, high=0.5, closed="left", example=0.2,
                       why="the least share of a node's rows on each side of a cut "
                       "(0: only k binds)")
        t0 = time.perf_counter()
        grid = QIGrid(self.qi_, self.categorical_, self.encoder_, self._check_hierarchies(frame))
        ranks = grid.fit_ranks(frame)
        self._grid = grid
        scale = float(1 << _COORD_BITS)
        Q = np.empty((ranks.shape[1], ranks.shape[0]), dtype=np.int64)
        for j, axis in enumerate(grid.axes):
            Q[j] = np.rint(axis.coordinate(ranks[:, j]) * scale)
        t1 = time.perf_counter()
        builder = _Builder(
            ranks, Q, int(self.k), self.model_, None if s is None else int(s), float(f)
        )
        groups, tree = builder.run()
        t2 = time.perf_counter()
        self._tree = tree
        n_groups = int(groups.max()) + 1
        # each row's leaf (one group per leaf), for the routing tree built at fit's end
        is_leaf = np.flatnonzero(tree["group"] >= 0)
        node_of_group = np.empty(n_groups, dtype=np.int64)
        node_of_group[tree["group"][is_leaf]] = is_leaf
        self._fit_leaves = node_of_group[groups]
        self.n_nodes_ = int(tree["axis"].size)
        self.depth_ = builder.depth
        self.n_unsplittable_ = builder.n_unsplittable
        self.group_sizes_ = np.bincount(groups, minlength=n_groups)
        self.information_loss_ = grid.information_loss(ranks, groups, n_groups)
        self.gcp_ = self.information_loss_ / (frame.shape[0] * len(self.qi_))
        self._partition_timings = {"partition_encode": t1 - t0, "partition_split": t2 - t1}
        return groups

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        ranks = self._grid.ranks(frame, self.handle_unknown)
        return _route(self._tree, ranks)


def _route(tree: dict, ranks: np.ndarray) -> np.ndarray:
    """Leaf group of every row: descend the split tree, one level at a time for all rows."""
    axis, thr, left, right, group = (tree[key] for key in ("axis", "thr", "left", "right", "group"))
    node = np.zeros(ranks.shape[0], dtype=np.int64)
    todo = np.flatnonzero(axis[node] >= 0)
    while todo.size:
        nd = node[todo]
        go_left = ranks[todo, axis[nd]] <= thr[nd]
        node[todo] = np.where(go_left, left[nd], right[nd])
        todo = todo[axis[node[todo]] >= 0]
    return group[node]


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenated ``arange(start, start + size)`` of every segment: (positions, segment
    ordinal of each position, offset of each segment in the concatenation)."""
    offs = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offs[1:])
    ordinal = np.repeat(np.arange(sizes.size), sizes)
    pos = np.arange(offs[-1]) - offs[ordinal] + starts[ordinal]
    return pos, ordinal, offs


def _buckets(sizes: np.ndarray, ratio: float = 1.25) -> list[np.ndarray]:
    """Node indices grouped so that the sizes in a group differ by a factor below ``ratio``:
    each group is processed as one dense (nodes x width) array, padded by at most 25%."""
    order = np.argsort(sizes, kind="stable")
    key = np.floor(np.log(np.maximum(sizes[order], 1)) / np.log(ratio)).astype(np.int64)
    return np.split(order, np.flatnonzero(np.diff(key)) + 1)


def _split_margins(Qd: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Summed normalized MBR margins of the two parts of every split of every node.

    ``rows`` (..., nodes, W) lists each node's rows in the order of a split axis, padded on the
    right by repeating the last row (which changes no extent). Entry ``[..., i, q]`` of the
    result is the margin of rows ``0 .. q`` plus that of rows ``q+1 .. W-1`` of node ``i``, in
    units of ``2^-20`` of each axis' range (``Qd`` holds the integer coordinates, one row per
    axis); the last column is meaningless.
    """
    out = np.zeros(rows.shape, dtype=np.int64)  # numpy's int64 scans are the fast ones
    suf = np.zeros(rows.shape, dtype=np.int64)
    for q in Qd:
        g = q[rows]
        out += np.maximum.accumulate(g, axis=-1)
        out -= np.minimum.accumulate(g, axis=-1)
        rev = g[..., ::-1]
        suf += np.maximum.accumulate(rev, axis=-1)
        suf -= np.minimum.accumulate(rev, axis=-1)
    out[..., :-1] += suf[..., ::-1][..., 1:]
    return out


def _split_keys(marg: np.ndarray, left: np.ndarray, N: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Lexicographic order of splits: least margin, then most balanced, then the smaller left
    part (int64 keys; invalid splits get the largest key)."""
    key = (marg.astype(np.int64) << 32) | (np.abs(2 * left - N) << 1) | (2 * left > N)
    return np.where(valid, key, _NO_SPLIT)


_NO_SPLIT = np.iinfo(np.int64).max


class _Builder:
    """Level-wise top-down bulk loading (see the module docstring).

    ``order`` lists the rows grouped by node (a node is a range of positions); when a node is
    split, its rows are first sorted by the split axis, so that its children are the two halves
    of its range.
    """

    def __init__(
        self, ranks: np.ndarray, Q: np.ndarray, k: int, model: Any, sample: int | None,
        min_fill: float,
    ):
        self.ranks = ranks
        self.Q = Q
        self.k = k
        self.model = model
        self.sample = sample
        self.min_fill = min_fill
        self.n, self.d = ranks.shape
        self.order = np.arange(self.n)
        self.depth = 0
        self.n_unsplittable = 0

    def run(self) -> tuple[np.ndarray, dict]:
        n, k = self.n, self.k
        # the split tree: a binary tree whose leaves hold >= k rows has < 2n/k nodes
        cap = 2 * (n // k) + 2
        t_axis = np.full(cap, -1, dtype=np.int64)  # split axis, -1 for a leaf
        t_thr = np.zeros(cap, dtype=np.int64)  # rows with rank <= thr go left
        t_left = np.full(cap, -1, dtype=np.int64)
        t_right = np.full(cap, -1, dtype=np.int64)
        n_nodes = 1
        fr_id = np.array([0], dtype=np.int64)  # frontier: node ids, starts, sizes
        fr_st = np.array([0], dtype=np.int64)
        fr_sz = np.array([n], dtype=np.int64)
        leaf_id, leaf_st, leaf_sz = [], [], []
        while fr_id.size:
            active = np.flatnonzero(fr_sz >= 2 * k)
            ax, ln = self._best_splits(fr_st[active], fr_sz[active])
            done = np.ones(fr_id.size, dtype=bool)
            done[active[ln > 0]] = False
            self.n_unsplittable += int((ln == 0).sum())
            leaf_id.append(fr_id[done])
            leaf_st.append(fr_st[done])
            leaf_sz.append(fr_sz[done])
            split = active[ln > 0]
            if split.size == 0:
                break
            ids, st, sz, ax, ln = fr_id[split], fr_st[split], fr_sz[split], ax[ln > 0], ln[ln > 0]
            self.depth += 1
            # threshold: rank on the split axis of the last row of the left part
            t_thr[ids] = self.ranks[self.order[st + ln - 1], ax]
            t_axis[ids] = ax
            lid = n_nodes + 2 * np.arange(ids.size)
            t_left[ids] = lid
            t_right[ids] = lid + 1
            n_nodes += 2 * ids.size
            fr_id = np.concatenate([lid, lid + 1])
            fr_st = np.concatenate([st, st + ln])
            fr_sz = np.concatenate([ln, sz - ln])
        leaf_id = np.concatenate(leaf_id)
        leaf_st = np.concatenate(leaf_st)
        leaf_sz = np.concatenate(leaf_sz)
        group = np.full(n_nodes, -1, dtype=np.int64)
        group[leaf_id] = np.arange(leaf_id.size)
        by_pos = np.argsort(leaf_st)
        groups = np.empty(n, dtype=np.int64)
        groups[self.order] = np.repeat(group[leaf_id[by_pos]], leaf_sz[by_pos])
        tree = {
            "axis": t_axis[:n_nodes],
            "thr": t_thr[:n_nodes],
            "left": t_left[:n_nodes],
            "right": t_right[:n_nodes],
            "group": group,
        }
        return groups, tree

    # -- split search ----------------------------------------------------------------------------
    def _best_splits(self, st: np.ndarray, sz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Axis and left size of the best allowed split of each node (left size 0: none);
        the rows of a split node are left sorted by its split axis.

        Each part must hold at least ``max(k, ceil(min_fill * size))`` rows; nodes without such
        a split fall back to the bare ``k`` bound."""
        axis = np.full(st.size, -1, dtype=np.int64)
        length = np.zeros(st.size, dtype=np.int64)
        todo = np.arange(st.size)
        fill = np.maximum(self.k, np.ceil(self.min_fill * sz).astype(np.int64))
        trivial = self.model.trivial
        for lower in (fill, np.full(st.size, self.k)):
            if todo.size == 0:
                break
            lb = lower[todo]
            # (d, nodes): best split key and left size per axis (estimates on sampled nodes)
            keys, target, exact = self._axis_margins(st[todo], sz[todo], lb)
            order = np.argsort(keys, axis=0, kind="stable")  # axes by their best split
            failed = np.ones(todo.size, dtype=bool)
            left = np.arange(todo.size)
            retried = False
            for attempt in range(self.d):
                usable = keys[order[attempt, left], left] < _NO_SPLIT
                if not usable.all() and not retried:
                    # a sampled node may have cuts on axes its sample showed none on: try, last,
                    # the axes that take more than one value in the node (exact nodes have none)
                    retried = True
                    rest = left[~usable & ~exact[left]]
                    if rest.size:
                        var = self._varying(st[todo[rest]], sz[todo[rest]])
                        keys[:, rest] = np.where(
                            (keys[:, rest] == _NO_SPLIT) & var, _NO_SPLIT - 1, keys[:, rest]
                        )
                        order[:, rest] = np.argsort(keys[:, rest], axis=0, kind="stable")
                    usable = keys[order[attempt, left], left] < _NO_SPLIT
                left = left[usable]
                if left.size == 0:
                    break
                nodes = todo[left]
                ax = order[attempt, left]
                self._sort_nodes(st[nodes], sz[nodes], ax)
                if trivial:
                    # the best sampled split, moved to the nearest allowed cut (exact nodes:
                    # it is allowed already)
                    ln = self._snap(st[nodes], sz[nodes], ax, lb[left], target[ax, left])
                else:
                    ex = exact[left]
                    ln = np.zeros(left.size, dtype=np.int64)
                    if ex.any():  # exact nodes: the best split that satisfies the model
                        ln[ex] = self._exact(st[nodes[ex]], sz[nodes[ex]], ax[ex], lb[left[ex]])
                    if (~ex).any():
                        ln[~ex] = self._snap(
                            st[nodes[~ex]], sz[nodes[~ex]], ax[~ex], lb[left[~ex]],
                            target[ax[~ex], left[~ex]],
                        )
                found = ln > 0
                axis[nodes[found]] = ax[found]
                length[nodes[found]] = ln[found]
                failed[left[found]] = False
                left = left[~found]
            todo = todo[failed]
        return axis, length

    def _varying(self, st: np.ndarray, sz: np.ndarray) -> np.ndarray:
        """(d, nodes): whether each axis takes more than one value in each node."""
        pos, _ordinal, offs = _ranges(st, sz)
        out = np.empty((self.d, st.size), dtype=bool)
        rows = self.order[pos]
        for j in range(self.d):
            r = self.ranks[rows, j]
            out[j] = np.minimum.reduceat(r, offs[:-1]) != np.maximum.reduceat(r, offs[:-1])
        return out

    def _sort_nodes(self, st: np.ndarray, sz: np.ndarray, ax: np.ndarray) -> None:
        """Sort the rows of each node by its axis ``ax`` (stable), in ``order``."""
        pos, ordinal, _ = _ranges(st, sz)
        rows = self.order[pos]
        key = (ordinal << 32) | self.ranks[rows, ax[ordinal]]
        self.order[pos] = rows[np.argsort(key, kind="stable")]

    def _axis_margins(
        self, st: np.ndarray, sz: np.ndarray, lb: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best split key (``_split_keys``) and left size per axis and node, computed on every
        row of the node (``sample`` None, or nodes of at most ``sample`` rows) or on ``sample``
        rows evenly spaced in the node, sorted along each axis (then the margin is an estimate,
        the key holds only it, and the left size is scaled to the node). Returns the keys
        (d, nodes), left sizes (d, nodes) and which nodes were searched on every row."""
        d = self.d
        keys = np.full((d, st.size), _NO_SPLIT, dtype=np.int64)
        lens = np.zeros((d, st.size), dtype=np.int64)
        take = sz if self.sample is None else np.minimum(sz, self.sample)
        exact = take == sz
        for b in _buckets(take):
            N, T, lo = sz[b][:, None], take[b][:, None], lb[b][:, None]
            W = int(T.max())
            q = np.arange(W)[None, :]
            i = np.minimum(q, T - 1)
            local = np.where(N > T, (2 * i + 1) * N // (2 * T), i)
            S = self.order[st[b][:, None] + local]  # (nodes, W), padded by repeating a row
            pad = q >= T
            # each axis' sample in increasing rank; padding last, as copies of the last row
            R = np.where(pad[None], np.iinfo(np.int64).max, self.ranks.T[:, S])
            idx = np.argsort(R, axis=-1, kind="stable")
            nodes = np.arange(b.size)[None, :, None]
            rows = S[nodes, idx]  # (d, nodes, W)
            r = R[np.arange(d)[:, None, None], nodes, idx]
            # only (axis, node) pairs whose sample takes two values or more can be cut
            pair = r[:, np.arange(b.size), T[:, 0] - 1] != r[:, :, 0]
            if not pair.any():
                continue
            ax_i, node_i = np.nonzero(pair)
            Tp = T[node_i]
            rows = rows[ax_i, node_i]  # (pairs, W)
            rows = np.where(pad[node_i], rows[np.arange(ax_i.size), Tp[:, 0] - 1][:, None], rows)
            r = r[ax_i, node_i]
            Np, lop = N[node_i], lo[node_i]
            left = np.where(Np > Tp, ((q + 1) * Np + Tp // 2) // Tp, q + 1)  # rows left of cut
            valid = (left >= lop) & (Np - left >= lop) & (q < Tp - 1)
            valid[:, :-1] &= r[:, :-1] != r[:, 1:]
            if not valid.any():
                continue
            key = _split_keys(_split_margins(self.Q, rows), left, Np, valid)
            best = key.argmin(axis=-1)
            at = np.arange(ax_i.size)
            keys[ax_i, b[node_i]] = key[at, best]
            lens[ax_i, b[node_i]] = left[at, best]
        if self.sample is not None:  # a sampled estimate only ranks axes by margin
            sub = keys[:, ~exact]
            keys[:, ~exact] = np.where(sub < _NO_SPLIT, sub >> 32, _NO_SPLIT)
        return keys, lens, exact

    def _cuts(self, st: np.ndarray, sz: np.ndarray, ax: np.ndarray, lb: np.ndarray):
        """The rows of the nodes (sorted by their axis) and which cuts are allowed: at least
        ``lb`` rows on each side, between two distinct values, both sides in the model."""
        pos, ordinal, offs = _ranges(st, sz)
        rows = self.order[pos]
        r = self.ranks[rows, ax[ordinal]]
        left = np.arange(pos.size) - offs[ordinal] + 1
        N = sz[ordinal]
        valid = (left >= lb[ordinal]) & (N - left >= lb[ordinal])
        valid[:-1] &= r[:-1] != r[1:]
        valid[-1] = False
        if not self.model.trivial and valid.any():
            valid &= self._allowed_cuts(rows, ordinal, offs, valid)
        return rows, ordinal, offs, left, valid

    def _snap(
        self, st: np.ndarray, sz: np.ndarray, ax: np.ndarray, lb: np.ndarray, target: np.ndarray
    ) -> np.ndarray:
        """Left size of the allowed cut of each node (sorted by axis ``ax``) nearest to
        ``target`` rows (ties: the smaller left part); 0 when there is none."""
        _, ordinal, offs, _, valid = self._cuts(st, sz, ax, lb)
        length = np.zeros(st.size, dtype=np.int64)
        cand = np.flatnonzero(valid)
        if cand.size == 0:
            return length
        target = np.where(target > 0, target, sz // 2)  # no sampled split: aim at the middle
        want = offs[:-1] + target - 1
        i = np.searchsorted(cand, want)
        lo = cand[np.maximum(i - 1, 0)]
        hi = cand[np.minimum(i, cand.size - 1)]
        node = np.arange(st.size)
        lo_ok = (i > 0) & (ordinal[lo] == node)
        hi_ok = (i < cand.size) & (ordinal[hi] == node)
        best = np.where(lo_ok & (~hi_ok | (want - lo <= hi - want)), lo, hi)
        ok = lo_ok | hi_ok
        length[ok] = best[ok] - offs[:-1][ok] + 1
        return length

    def _exact(self, st: np.ndarray, sz: np.ndarray, ax: np.ndarray, lb: np.ndarray) -> np.ndarray:
        """Left size of the best allowed cut of each node, already sorted by its split axis
        ``ax`` (least margin, then most balanced, then the smaller left part); 0 when none."""
        length = np.zeros(st.size, dtype=np.int64)
        for b in _buckets(sz):
            N, lo, a = sz[b][:, None], lb[b][:, None], ax[b][:, None]
            W = int(N.max())
            local = np.minimum(np.arange(W)[None, :], N - 1)  # padded: repeat the last row
            rows = self.order[st[b][:, None] + local]
            r = self.ranks[rows, a]
            left = np.arange(1, W + 1)[None, :]
            valid = (left >= lo) & (N - left >= lo)
            valid[:, :-1] &= r[:, :-1] != r[:, 1:]
            valid[:, -1] = False
            if not self.model.trivial and valid.any():
                m = self.model.n_values
                codes = np.where(left <= N, self.model.codes[rows], m)  # padding: no value
                cum = np.zeros((b.size, W, m + 1), dtype=np.int64)
                np.put_along_axis(cum, codes[:, :, None], 1, axis=2)
                np.cumsum(cum, axis=1, out=cum)
                cand = np.nonzero(valid)
                lc = cum[cand][:, :m]
                rc = cum[cand[0], W - 1][:, :m] - lc
                allowed = self.model.allowed(lc) & self.model.allowed(rc)
                valid[cand[0][~allowed], cand[1][~allowed]] = False
            if not valid.any():
                continue
            key = _split_keys(_split_margins(self.Q, rows), left, N, valid)
            best = key.argmin(axis=1)
            has = valid[np.arange(b.size), best]
            length[b[has]] = best[has] + 1
        return length

    def _allowed_cuts(
        self, rows: np.ndarray, ordinal: np.ndarray, offs: np.ndarray, valid: np.ndarray
    ) -> np.ndarray:
        """Whether both parts of the cut after each position satisfy the privacy model (only
        evaluated where ``valid``); rows of consecutive nodes, ``ordinal`` their node. Nodes
        are taken a few at a time, so that the running counts of sensitive values (rows x m)
        stay within ``_COUNT_CELLS``."""
        m = self.model.n_values
        out = np.zeros(rows.size, dtype=bool)
        first = 0
        n_nodes = offs.size - 1
        while first < n_nodes:
            # as many nodes as fit (at least one)
            last = int(np.searchsorted(offs, offs[first] + max(1, _COUNT_CELLS // m), side="right")) - 1
            last = min(max(last, first + 1), n_nodes)
            lo, hi = offs[first], offs[last]
            codes = self.model.codes[rows[lo:hi]]
            oh = np.zeros((hi - lo, m), dtype=np.int64)
            oh[np.arange(hi - lo), codes] = 1
            cum = np.cumsum(oh, axis=0)
            node_end = cum[offs[first + 1:last + 1] - lo - 1]  # counts up to each node's end
            base = np.zeros_like(node_end)
            base[1:] = node_end[:-1]
            cand = np.flatnonzero(valid[lo:hi])
            node = ordinal[lo + cand] - first
            lc = cum[cand] - base[node]
            rc = node_end[node] - base[node] - lc
            out[lo + cand] = self.model.allowed(lc) & self.model.allowed(rc)
            first = last
        return out
