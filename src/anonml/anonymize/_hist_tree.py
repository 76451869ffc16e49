"""A histogram-based decision tree with native categorical splits, grown level by level.

Why a tree of our own: the partition step needs the leaf of every row (``apply``) of a tree with
``min_samples_leaf = k``. scikit-learn's exact tree sorts the rows at every node, which costs
about 14 s on a million rows (see BENCHMARKS.md) and needs one-hot columns for categories;
``HistGradientBoosting`` bins and splits categories natively but exposes no leaf lookup. This
tree bins once, then finds the best split of *every* node of a level with one ``np.bincount``
per feature, so its cost is O(n · features · depth) with no Python loop over rows or nodes.
Per level, only the smaller child of each sibling pair is counted (the larger is its parent's
histogram minus it, as in LightGBM); the children's class counts come from the parents'
histograms (:func:`children_counts`), and every row is routed by one lookup in a table of
(node, bin) → left (:func:`left_table`) built from the level's splits (BENCHMARKS.md, "Session
14": a third of the tree's time at 1M rows, the same tree).

Splits
------
* numeric bins: left = bins ``<= t`` (bins are quantiles, at most ``max_bins``);
* categorical codes: the categories of the node are ordered by the share of the node's majority
  class (by the mean target in regression) and the best prefix goes left. For a binary target
  and the Gini or squared-error criterion this finds the optimal subset split (Breiman et al.,
  1984, Sec. 9.4); for more classes it is the usual heuristic. Categories absent from the node
  (and values unseen in fit) go right.

A node is split when it is impure, holds at least ``2 * min_samples_leaf`` rows, is shallower than
``max_depth``, and one of the splits searched leaves ``min_samples_leaf`` rows on each side; as in
scikit-learn, the best split is taken even when it does not lower the impurity. Only prefixes of
the ordered categories are searched, so when ``min_samples_leaf`` binds, a valid category subset
outside that order can be missed and the node kept whole (coarser groups, never smaller than k;
``tests/anonymize/test_hist_tree.py`` pins this limitation).

The ``"mondrian"`` criterion needs no target: every node of at least ``2 * min_samples_leaf`` rows
is cut on the feature of widest normalized spread that admits a cut, at the most balanced
allowable position (strict median partitioning, LeFevre, DeWitt & Ramakrishnan, 2006). Spread is
measured on bins (quantile ranks) for numeric features and as the share of categories present for
categorical ones, which are cut in code order. Grown from given initial groups (``init``), it
refines an existing partition: anonml uses it to split the large, pure leaves of the
accuracy-guided tree further without mixing labels.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from anonml.anonymize._hist_mondrian import fit_mondrian

__all__ = ["HistTree"]


class HistTree:
    """Level-wise histogram tree (internal; see the module docstring).

    Parameters
    ----------
    min_samples_leaf : int
        Least number of training rows in a leaf.
    max_depth : int or None
        Deepest level; None grows until no node can be split.
    criterion : {"gini", "entropy", "squared_error", "mondrian"}
        Split quality; "squared_error" makes it a regression tree, "mondrian" ignores ``y``.
    """

    def __init__(self, min_samples_leaf: int, max_depth: int | None = None, criterion: str = "gini"):
        self.min_samples_leaf = int(min_samples_leaf)
        self.max_depth = max_depth
        self.criterion = criterion

    # ------------------------------------------------------------------------------------------
    def fit(
        self, B: np.ndarray, is_cat: np.ndarray, n_bins: np.ndarray, y: np.ndarray | None,
        init: np.ndarray | None = None, B_rows: np.ndarray | None = None,
        route_on_columns: bool = False,
    ) -> "HistTree":
        """Grow the tree on bins ``B`` (n × F ints) and targets ``y`` (class codes or floats).

        ``init`` (ints 0..G-1, one per row) starts from G root nodes instead of one.
        ``B_rows``, if given, is ``np.ascontiguousarray(B)`` (the row-major copy the tree
        routes with), made by the caller so that it can keep it past the fit. With
        ``route_on_columns`` the rows are routed on the column-major bins themselves and no
        row-major copy is made (F bytes a row less while the tree grows; the same tree).
        The ``"mondrian"`` criterion also takes ``B`` handed over as a one-item list
        (``[bins]``, the caller keeping no other reference): the bins are then released as
        soon as the rows that may split have their copy (F bytes a row less while it grows).
        """
        k = self.min_samples_leaf
        if self.criterion == "mondrian":  # rows kept contiguous per node (see _hist_mondrian)
            if isinstance(B, list):  # handed over: fit_mondrian releases it
                B[0] = np.ascontiguousarray(B[0])
                n = B[0].shape[0]
            else:
                B = np.ascontiguousarray(B)
                n = B.shape[0]
            builder = TreeBuilder(1 if init is None else int(init.max()) + 1 if n else 1)
            self._train_leaves = fit_mondrian(B, is_cat, n_bins, init, k, self.max_depth, builder)
            self._set_arrays(builder, is_cat)
            return self
        B = np.asfortranarray(B)  # column-major for the histograms,
        if route_on_columns:
            B_rows = B
        elif B_rows is None:
            B_rows = np.ascontiguousarray(B)  # row-major for routing
        regression = self.criterion == "squared_error"
        n, n_feat = B.shape
        # row positions, node positions and (node, bin, class) codes in 32 bits when they fit:
        # half the memory traffic of every pass over the rows (the tree is bandwidth-bound)
        it = np.int32 if n * max(n_feat, 1) < _I32 else np.int64
        if regression:
            yv = np.asarray(y, dtype=np.float64)
            n_classes = 0
        else:
            yv = np.asarray(y)  # integer class codes, of any integer dtype
            n_classes = int(yv.max()) + 1 if n else 1
            yv = yv.astype(it if n * n_classes < _I32 else np.int64)

        n_roots = 1 if init is None else int(init.max()) + 1 if n else 1
        builder = TreeBuilder(n_roots)
        feature = builder.feature

        # node of each row when it stops moving (a tree on n rows has fewer than 2n nodes)
        leaf_of_row = np.zeros(n, dtype=np.int32 if 2 * n < _I32 else np.int64)
        rows = np.arange(n, dtype=it)  # rows still in nodes that may split
        # index of each such row's node in `frontier`
        local = np.zeros(n, dtype=it) if init is None else np.asarray(init).astype(it)
        yr = yv  # the targets of `rows`, compacted along with them (no gather from y per level)
        frontier = np.arange(n_roots)
        parent_H: list[np.ndarray] | None = None  # per feature, histograms of the split parents
        T_next = None  # class counts of the next level's nodes, when known from the histograms
        depth = 0
        while frontier.size and (self.max_depth is None or depth < self.max_depth):
            A = frontier.size
            if regression:
                cnt = np.bincount(local, minlength=A).astype(np.float64)
                tot = np.bincount(local, weights=yr, minlength=A)
                tot2 = np.bincount(local, weights=yr * yr, minlength=A)
                impure = tot2 - tot * tot / np.maximum(cnt, 1) > 1e-12 * np.maximum(tot2, 1)
            else:
                if T_next is None:  # the roots: counted; below them, from the parents' histograms
                    code = _codes_dtype(A * n_classes)
                    T = np.bincount(local.astype(code, copy=False) * n_classes + yr,
                                    minlength=A * n_classes)
                    T = T.reshape(A, n_classes).astype(np.float64)
                else:
                    T, T_next = T_next, None
                cnt = T.sum(1)
                impure = (T > 0).sum(1) > 1
            can = impure & (cnt >= 2 * k)
            if not can.any():
                break

            # Histograms: at the root level from all rows; below it, the frontier is made of
            # sibling pairs, so only the smaller child of each pair is counted and the larger
            # one is its parent's histogram minus the smaller's (the "subtraction trick").
            if parent_H is None:
                h_rows, h_node, h_y, n_h = rows, local, yr, A
            else:
                n_pairs = A // 2
                small_side = (cnt[1::2] < cnt[0::2]).astype(np.int64)
                pair_ids = 2 * np.arange(n_pairs)
                small_ids, large_ids = pair_ids + small_side, pair_ids + 1 - small_side
                is_small = np.zeros(A, dtype=bool)
                is_small[small_ids] = True
                sel = np.flatnonzero(is_small.take(local))
                h_rows, h_node = rows.take(sel), local.take(sel) >> 1
                h_y = None if yr is None else yr.take(sel)
                n_h = n_pairs
                del sel
            width = 2 if regression else n_classes
            cur_H: list[np.ndarray] = []
            if not regression:
                # (bin, node, class) codes: bin * (n_h * C) + node * C + class; the node-and-class
                # part is shared by every feature
                code = _codes_dtype(n_h * width * int(n_bins.max(initial=1)))
                hc = h_node.astype(code, copy=False)
                if n_classes > 1:
                    hc = hc * n_classes
                    hc += h_y
            for f in range(n_feat):
                nb = int(n_bins[f])
                b = B[:, f].take(h_rows)
                if regression:
                    idx = h_node.astype(_codes_dtype(n_h * nb)) * nb
                    idx += b
                    Hc = np.bincount(idx, minlength=n_h * nb).reshape(n_h, nb).astype(np.float64)
                    Hs = np.bincount(idx, weights=h_y, minlength=n_h * nb).reshape(n_h, nb)
                    Hh = np.stack([Hc, Hs], axis=2)
                else:
                    idx = np.multiply(b, n_h * width, dtype=code)
                    idx += hc
                    Hb = np.bincount(idx, minlength=nb * n_h * width).reshape(nb, n_h, width)
                    Hh = np.empty((n_h, nb, width))
                    Hh[...] = Hb.transpose(1, 0, 2)  # counts, exact in float64
                del b, idx
                if parent_H is None:
                    H = Hh
                else:
                    H = np.empty((A, nb, width))
                    H[small_ids] = Hh
                    H[large_ids] = parent_H[f] - Hh
                cur_H.append(H)
            del h_rows, h_node, h_y
            best_gain, best_f, best_pos, best_order = choose_splits(
                cur_H, cnt, tot if regression else T, is_cat, k, self.criterion, can
            )
            split = can & np.isfinite(best_gain)
            if not split.any():
                break
            split_ids = np.flatnonzero(split)
            if not regression:
                T_next = children_counts(cur_H, split_ids, best_f, best_pos, best_order, is_cat,
                                         n_bins, T)
            parent_H = [H[split_ids] for H in cur_H]  # children are created in this order
            del cur_H

            # create children and route rows
            child_left = builder.add_children(
                frontier, split, best_f, best_pos, best_order, is_cat, n_bins
            )
            if not split.all():
                keep = split.take(local)
                gone = np.flatnonzero(~keep)
                leaf_of_row[rows.take(gone)] = frontier.take(local.take(gone))
                del gone
                kept = np.flatnonzero(keep)  # one nonzero pass, then plain takes
                del keep
                rows, local = rows.take(kept), local.take(kept)
                if yr is not None:
                    yr = yr.take(kept)
                del kept
            go_left = _route_level(B_rows, rows, local, it, *builder.level_tables(frontier),
                                   n_bins)
            # children are numbered contiguously, left then right, in the order of `split_ids`
            first = int(child_left[split_ids[0]])
            frontier = np.arange(first, len(feature))
            # the left child of each frontier position, relative to the new frontier; a
            # split node's right child is the next one
            rel = np.where(split, child_left - first, 0).astype(it)
            local = rel.take(local)
            local += ~go_left
            del go_left
            depth += 1
        leaf_of_row[rows] = frontier[local] if frontier.size else 0

        self._set_arrays(builder, is_cat)
        self._train_leaves = leaf_of_row
        return self

    def _set_arrays(self, builder: "TreeBuilder", is_cat: np.ndarray) -> None:
        self.feature_ = np.asarray(builder.feature, dtype=np.int64)
        self.threshold_ = np.asarray(builder.threshold, dtype=np.int64)
        self.children_left_ = np.asarray(builder.left, dtype=np.int64)
        self.children_right_ = np.asarray(builder.right, dtype=np.int64)
        self.offset_ = np.asarray(builder.offset, dtype=np.int64)
        self.flat_ = builder.flat()
        self.is_cat_ = np.asarray(is_cat, dtype=bool)
        self.n_nodes_ = len(builder.feature)
        self.leaves_ = np.flatnonzero(self.feature_ < 0)

    def fit_apply(
        self, B: np.ndarray, is_cat: np.ndarray, n_bins: np.ndarray, y: np.ndarray | None,
        init: np.ndarray | None = None, B_rows: np.ndarray | None = None,
        narrow: bool = False, route_on_columns: bool = False,
    ) -> np.ndarray:
        """Fit, and return the leaf of every training row (found while growing, not re-routed):
        int64, or with ``narrow`` int32 where the node ids fit (4 bytes a row, not 8)."""
        leaves = self.fit(B, is_cat, n_bins, y, init, B_rows, route_on_columns)._train_leaves
        del self._train_leaves
        return leaves if narrow else leaves.astype(np.int64, copy=False)

    def apply(self, B: np.ndarray, init: np.ndarray | None = None) -> np.ndarray:
        """Leaf node id of every row of ``B`` (starting from root ``init`` of each row, if given)."""
        B_rows = np.ascontiguousarray(B)
        n = B.shape[0]
        node = np.zeros(n, dtype=np.int64) if init is None else np.asarray(init, dtype=np.int64).copy()
        rows = np.arange(n)
        while rows.size:
            rows = rows[self.feature_[node[rows]] >= 0]
            if not rows.size:
                break
            nd = node[rows]
            go_left = self._route(
                B_rows, rows, nd, self.feature_, self.threshold_, self.offset_, self.flat_
            )
            node[rows] = np.where(go_left, self.children_left_[nd], self.children_right_[nd])
        return node

    # ------------------------------------------------------------------------------------------
    @staticmethod
    def _category_order(H: np.ndarray, T: np.ndarray | None, regression: bool) -> np.ndarray:
        """Order of the bins of each node for a categorical split; empty bins last."""
        count = (H[:, :, 0] if regression else H[:, :, 0] + H[:, :, 1] if H.shape[2] == 2
                 else H.sum(2))  # (two classes: the same sum, without a reduction loop)
        with np.errstate(invalid="ignore", divide="ignore"):
            if regression:
                key = H[:, :, 1] / count
            else:
                major = np.argmax(T, axis=1)
                key = np.take_along_axis(H, major[:, None, None], axis=2)[:, :, 0] / count
        key[count == 0] = np.inf
        return np.argsort(key, axis=1, kind="stable")

    @staticmethod
    def _mondrian_split(C: np.ndarray, cnt: np.ndarray, k: int, categorical: bool):
        """Spread of the feature in each node and its most balanced allowable cut position."""
        A, nb = C.shape
        if nb < 2:
            return np.full(A, -np.inf), np.zeros(A, dtype=np.int64)
        occupied = C > 0
        if categorical:  # codes: categories, then 'missing' and 'unknown'
            spread = (occupied.sum(1) - 1) / max(nb - 3, 1)
        else:
            first = occupied.argmax(1)
            last = nb - 1 - occupied[:, ::-1].argmax(1)
            spread = (last - first) / (nb - 1)
        cum = np.cumsum(C, axis=1)[:, :-1]
        valid = (cum >= k) & (cnt[:, None] - cum >= k)
        balance = np.where(valid, -np.abs(2 * cum - cnt[:, None]), -np.inf)
        pos = np.argmax(balance, axis=1)
        ok = np.isfinite(balance[np.arange(A), pos])
        return np.where(ok, spread, -np.inf), pos

    @staticmethod
    def _best_split(H, cnt, tot, k, regression, entropy=False):
        """Best prefix split of each node; returns (gain, last bin on the left)."""
        L = np.cumsum(H, axis=1)[:, :-1, :]
        if L.shape[1] == 0:
            return np.full(H.shape[0], -np.inf), np.zeros(H.shape[0], dtype=np.int64)
        if regression:
            nL = L[:, :, 0]
            sL = L[:, :, 1]
            nR = cnt[:, None] - nL
            sR = tot[:, None] - sL
            with np.errstate(invalid="ignore", divide="ignore"):
                score = sL * sL / nL + sR * sR / nR
            parent = tot * tot / cnt
        elif L.shape[2] == 2 and not entropy:  # two classes, Gini: the class sums written out
            # (a sum over an axis of two items is their one addition: the same numbers as the
            # general branch, without numpy's per-cell reduction loop)
            L0, L1 = L[:, :, 0], L[:, :, 1]
            nL = L0 + L1
            R0, R1 = tot[:, None, 0] - L0, tot[:, None, 1] - L1
            nR = cnt[:, None] - nL
            with np.errstate(invalid="ignore", divide="ignore"):
                score = (L0 * L0 + L1 * L1) / nL + (R0 * R0 + R1 * R1) / nR
            parent = (tot * tot).sum(1) / cnt
        else:
            nL = L.sum(2)
            R = tot[:, None, :] - L
            nR = cnt[:, None] - nL
            if entropy:
                # maximise -(nL·H(L) + nR·H(R)), with n·H = n log n - sum c log c
                score = xlogy(L, L).sum(2) - xlogy(nL, nL) + xlogy(R, R).sum(2) - xlogy(nR, nR)
                parent = xlogy(tot, tot).sum(1) - xlogy(cnt, cnt)
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    score = (L * L).sum(2) / nL + (R * R).sum(2) / nR
                parent = (tot * tot).sum(1) / cnt
        valid = (nL >= k) & (nR >= k)
        score = np.where(valid, score, -np.inf)
        pos = np.argmax(score, axis=1)
        best = score[np.arange(score.shape[0]), pos]
        return best - parent, pos

    @staticmethod
    def _route(B_rows, rows, node_of_row, feature, threshold, offset, flat):
        """Whether each row goes to the left child of its (internal) node.

        ``feature``, ``threshold`` and ``offset`` are indexed by ``node_of_row``: node ids, or
        positions in the current level (then the tables are the level's, small and cache-hot).
        """
        f = feature[node_of_row]
        # B_rows is row-major and `rows` ascend, so this one flat gather walks memory forwards
        b = B_rows.ravel()[rows * B_rows.shape[1] + f]
        left = b <= threshold[node_of_row]
        off = offset[node_of_row]  # >= 0 exactly for nodes split on a category set
        cat = off >= 0
        if not cat.any():
            return left
        # full-length selects: cheaper than boolean-mask indexing on large arrays
        flat_idx = np.where(cat, off + b, 0)
        return np.where(cat, (flat if flat.size else np.zeros(1, dtype=bool))[flat_idx], left)


_I32 = 2**31 - 1


def _codes_dtype(largest: int) -> type:
    """int32 when every code stays below ``largest`` and that fits in 32 bits, else int64."""
    return np.int32 if largest < _I32 else np.int64


#: the most cells of a level's go-left table (:func:`left_table`); past it the rows are routed
#: by the node's threshold or category mask in turn
_TABLE_CELLS = 1 << 22


def left_table(feature: np.ndarray, threshold: np.ndarray, offset: np.ndarray,
               flat: np.ndarray, n_bins: np.ndarray) -> np.ndarray | None:
    """Whether a row of bin ``b`` goes left at a node, for every node of a level and bin:
    ``table[a, b]`` (bool, one row per position ``a`` of the level, ``max(n_bins)`` columns),
    from the level's tables (:meth:`TreeBuilder.level_tables`); None past
    :data:`_TABLE_CELLS`. A numeric node sends bins ``<= threshold`` left, a categorical one
    the bins of its mask in ``flat`` (``offset`` >= 0, the mask ``n_bins[feature]`` long);
    rows of nodes that do not split (feature -1) are all False and are never read. One lookup
    per row then replaces the threshold, offset and mask gathers and the selects between
    them: the same decisions, with a few full-length passes fewer."""
    A = int(feature.size)
    W = int(np.max(n_bins, initial=1))
    if A * W > _TABLE_CELLS:
        return None
    j = np.arange(W)
    table = j[None, :] <= np.asarray(threshold)[:, None]  # categorical nodes: threshold -1
    cat = np.flatnonzero(np.asarray(offset) >= 0)
    if cat.size:
        width = np.asarray(n_bins)[np.asarray(feature)[cat]]
        inside = j[None, :] < width[:, None]
        at = np.where(inside, np.asarray(offset)[cat][:, None] + j[None, :], 0)
        table[cat] = inside & flat.take(at)
    return table


def _route_level(B_rows, rows, local, it, feature, threshold, offset, flat, n_bins=None):
    """Whether each row goes to the left child of its (split) node: :meth:`HistTree._route` on
    a level's tables (indexed by frontier position ``local``), in ``it`` arithmetic: by one
    lookup in the level's :func:`left_table` when ``n_bins`` is given and the table is small,
    else with the categorical lookups skipped when no node of the level splits on a category
    set."""
    n, F = B_rows.shape
    f = feature.astype(it).take(local)
    if F > 1 and not B_rows.flags.c_contiguous:  # column-major bins: column f starts at f * n
        # (`rows` ascend, so the gather walks each column's memory forwards)
        pos = f
        pos *= it(n)
        pos += rows
        b = B_rows.ravel(order="F").take(pos)
    else:
        # B_rows is row-major and `rows` ascend, so this one flat gather walks memory forwards
        pos = rows * it(F) if F > 1 else rows.copy()
        pos += f
        b = B_rows.ravel().take(pos)
    del f, pos
    table = None if n_bins is None else left_table(feature, threshold, offset, flat, n_bins)
    if table is not None:  # the row's cell: local * W + b (below 2**22, so in `it`)
        cell = np.multiply(local, it(table.shape[1]), dtype=it)
        cell += b
        return table.ravel().take(cell)
    # split numeric nodes have thresholds below their bin count, so they fit the bins' dtype
    # (the -1 of other nodes is never read: every row left is in a split node)
    left = b <= threshold.astype(B_rows.dtype).take(local)
    if not (offset >= 0).any():
        return left
    off = offset.astype(it).take(local)  # >= 0 exactly for nodes split on a category set
    cat = off >= 0
    off += b
    # full-length selects: cheaper than boolean-mask indexing on large arrays
    return np.where(cat, (flat if flat.size else np.zeros(1, dtype=bool)).take(
        np.where(cat, off, 0)), left)


# -- split finding and node bookkeeping, shared with the distributed driver (anonml.dask) -------
def choose_splits(
    H_list: list[np.ndarray], cnt: np.ndarray, T: np.ndarray, is_cat: np.ndarray, k: int,
    criterion: str, can: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Best split of every node of a level, from its histograms alone.

    With ``can`` (bool per node: may it split), the splits are searched for those nodes only,
    the others getting no split (gain ``-inf``): the same result for the nodes that may split
    (every node's search is its own), at a fraction of the cost when many may not. Over the
    levels of a tree about half the frontier nodes may not split (too small or pure), and this
    search, a dozen passes over every (node, bin, class) cell, was half of a tree's time on
    nodes of about 1,000 rows (BENCHMARKS.md, "Session 11").

    Parameters
    ----------
    H_list : list of ndarray, one per feature, shape (A, n_bins[f], width)
        Class counts per (node, bin, class); for "squared_error" width 2: (count, sum of y).
    cnt : ndarray, shape (A,)
        Rows per node.
    T : ndarray
        Class counts per node, shape (A, n_classes) (sum of y, shape (A,), in regression).
    is_cat : ndarray of bool
        Whether each feature is categorical.
    k : int
        ``min_samples_leaf``.
    criterion : {"gini", "entropy", "squared_error", "mondrian"}

    Returns
    -------
    best_gain, best_f, best_pos, best_order
        Gain (``-inf`` when no split leaves k rows on each side), feature, last bin (or
        ordered-category position) on the left, and the category order of each categorical
        feature that won somewhere.
    """
    A = cnt.shape[0]
    if can is not None:
        ids = np.flatnonzero(can)
        if ids.size < A:
            sub = choose_splits([H[ids] for H in H_list], cnt[ids], T[ids], is_cat, k,
                                criterion)
            best_gain = np.full(A, -np.inf)
            best_f = np.full(A, -1, dtype=np.int64)
            best_pos = np.zeros(A, dtype=np.int64)
            best_gain[ids], best_f[ids], best_pos[ids] = sub[0], sub[1], sub[2]
            best_order: dict[int, np.ndarray] = {}
            for f, order in sub[3].items():
                best_order[f] = np.zeros((A, order.shape[1]), dtype=order.dtype)
                best_order[f][ids] = order
            return best_gain, best_f, best_pos, best_order
    regression = criterion == "squared_error"
    best_gain = np.full(A, -np.inf)
    best_f = np.full(A, -1, dtype=np.int64)
    best_pos = np.zeros(A, dtype=np.int64)
    best_order: dict[int, np.ndarray] = {}
    for f, H in enumerate(H_list):
        order = None
        if criterion == "mondrian":
            gain, pos = HistTree._mondrian_split(H[:, :, 0], cnt, k, bool(is_cat[f]))
        else:
            if is_cat[f]:
                order = HistTree._category_order(H, None if regression else T, regression)
                H = np.take_along_axis(H, order[:, :, None], axis=1)
            gain, pos = HistTree._best_split(H, cnt, T, k, regression, criterion == "entropy")
        better = gain > best_gain
        if better.any():
            best_gain[better] = gain[better]
            best_f[better] = f
            best_pos[better] = pos[better]
            if order is not None:
                best_order[f] = order
    return best_gain, best_f, best_pos, best_order


def children_counts(
    H_list: list[np.ndarray], split_ids: np.ndarray, best_f: np.ndarray, best_pos: np.ndarray,
    best_order: dict, is_cat: np.ndarray, n_bins: np.ndarray, T: np.ndarray,
) -> np.ndarray:
    """Class counts of the children (left, right interleaved, in the order of ``split_ids``,
    as :meth:`TreeBuilder.add_children` numbers them) from the parents' histograms ((count,
    sum of y) in regression, ``T`` then holding the parents' count and sum): no pass over the
    rows. Counts are whole numbers in float64, so the sums are exact: the same numbers as
    counting the children's rows."""
    n_classes = T.shape[1]
    T_left = np.zeros((split_ids.size, n_classes))
    for f in np.unique(best_f[split_ids]):
        sel = np.flatnonzero(best_f[split_ids] == f)
        a = split_ids[sel]
        H = H_list[f][a]  # (s, nb, C)
        nb = int(n_bins[f])
        if is_cat[f]:
            order = best_order[f][a] if f in best_order else np.broadcast_to(np.arange(nb), (a.size, nb))
            H = np.take_along_axis(H, order[:, :, None], axis=1)
        mask = np.arange(nb)[None, :] <= best_pos[a][:, None]
        T_left[sel] = (H * mask[:, :, None]).sum(1)
    T_right = T[split_ids] - T_left
    out = np.empty((2 * split_ids.size, n_classes))
    out[0::2], out[1::2] = T_left, T_right
    return out


class TreeBuilder:
    """The node arrays of a growing :class:`HistTree` (lists, appended level by level)."""

    def __init__(self, n_roots: int):
        self.feature = [-1] * n_roots
        self.threshold = [-1] * n_roots
        self.left = [-1] * n_roots
        self.right = [-1] * n_roots
        self.offset = [-1] * n_roots  # start of a categorical node's left-set mask in `flat`
        self.flat_parts: list[np.ndarray] = []
        self.flat_len = 0

    def flat(self) -> np.ndarray:
        # the parts joined once: a level adds its parts to the join of the earlier ones
        done = getattr(self, "_flat_done", 0)
        if done < len(self.flat_parts) or done == 0:
            head = [self._flat] if done else []
            self._flat = (np.concatenate(head + self.flat_parts[done:]) if self.flat_parts
                          else np.zeros(0, dtype=bool))
            self._flat_done = len(self.flat_parts)
        return self._flat

    def add_children(
        self, frontier: np.ndarray, split: np.ndarray, best_f: np.ndarray, best_pos: np.ndarray,
        best_order: dict[int, np.ndarray], is_cat: np.ndarray, n_bins: np.ndarray,
    ) -> np.ndarray:
        """Split the nodes ``frontier[split]``; children are numbered contiguously, left then
        right, in frontier order. Returns the left child of every frontier position (garbage
        where not split)."""
        A = frontier.size
        child_left = np.empty(A, dtype=np.int64)
        split_at = np.flatnonzero(split)
        base = len(self.feature)
        child_left[split_at] = base + 2 * np.arange(split_at.size)
        cat_f, nb = np.asarray(is_cat).tolist(), np.asarray(n_bins).tolist()
        # (plain ints: no numpy scalar per node)
        for a, node, f, pos, cl in zip(split_at.tolist(), frontier[split_at].tolist(),
                                       best_f[split_at].tolist(), best_pos[split_at].tolist(),
                                       child_left[split_at].tolist()):
            self.feature[node] = f
            if cat_f[f]:
                m = np.zeros(nb[f], dtype=bool)
                m[best_order[f][a, : pos + 1] if f in best_order else np.arange(pos + 1)] = True
                self.offset[node] = self.flat_len
                self.flat_parts.append(m)
                self.flat_len += m.size
            else:
                self.threshold[node] = pos
            self.left[node], self.right[node] = cl, cl + 1
        new = [-1] * (2 * split_at.size)  # the children, left then right, in frontier order
        self.feature += new
        self.threshold += new
        self.left += new
        self.right += new
        self.offset += new
        return child_left

    def level_tables(self, frontier: np.ndarray) -> tuple:
        """(feature, threshold, offset, flat) indexed by position in ``frontier``."""
        lo = int(frontier[0]) if frontier.size else 0
        hi = lo + frontier.size
        if frontier.size and np.array_equal(frontier, np.arange(lo, hi)):  # a range of nodes:
            # convert only its slice of the lists
            return (
                np.asarray(self.feature[lo:hi]), np.asarray(self.threshold[lo:hi]),
                np.asarray(self.offset[lo:hi]), self.flat(),
            )
        return (
            np.asarray(self.feature)[frontier], np.asarray(self.threshold)[frontier],
            np.asarray(self.offset)[frontier], self.flat(),
        )
