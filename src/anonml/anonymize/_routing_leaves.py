"""Per-leaf summaries of the training rows, for building and checking a routing tree cheaply.

:func:`anonml.anonymize._routing_build.build_routing` needs, for every split of the fitted
(encoded) tree, the largest raw value of its column among the training rows that go left and
the smallest among those that go right (numeric splits), or which categories go each way
(categorical splits). The rows that go left at a node are exactly the rows whose leaf lies in
its left subtree, so these follow from each row's leaf alone:

1. every row's leaf, by one pass down the encoded tree (:func:`encoded_leaves`);
2. per leaf, the minimum and maximum of each numeric column and the categories present
   (:class:`LeafSummary`: ``np.maximum.at`` and friends over the rows, ``bincount``);
3. per split, the maximum over the leaves of its left subtree and the minimum over those of its
   right subtree (:func:`split_bounds`): each leaf climbs to the root once, so the cost is
   leaves x depth rather than rows x depth.

The same summaries give a cheap, independent purity check (:func:`boxes_route_to_groups`): the
rows of each leaf form a box (per column, the interval of their values and their set of
categories); if every box falls entirely on one side of every split it meets on its way down
the *raw* routing tree, and ends in a leaf of the group all its rows belong to, then every
training row is routed to its group -- a proof, whatever produced the boxes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LeafSummary", "boxes_route_to_groups", "encoded_leaves", "split_bounds"]


def encoded_leaves(E: np.ndarray, feature: np.ndarray, thr: np.ndarray, moff: np.ndarray,
                   flat: np.ndarray, left: np.ndarray, right: np.ndarray,
                   init: np.ndarray | None = None, col_offset: int = 0) -> np.ndarray:
    """Leaf of every row of ``E`` in a tree on encoded values (the routing rule of
    :func:`~anonml.anonymize._routing_build.build_routing`: left when ``E[:, f] <= threshold``,
    or when ``flat[offset + E[:, f]]`` for a per-code mask), one vectorized step per level.

    Rows start at node ``init`` (the root if not given); a split on encoded column ``f``
    reads ``E[:, f - col_offset]`` (a tree whose lower part reads other columns). ``E`` is
    read in its own dtype; each value is compared as float64."""
    n = E.shape[0]
    node = np.zeros(n, dtype=np.int64) if init is None else \
        np.asarray(init, dtype=np.int64).copy()
    if not n:
        return node
    w = E.shape[1]
    if E.flags.f_contiguous and not E.flags.c_contiguous:
        Ef, row_step, col_step = E.ravel(order="F"), 1, n
    else:
        E = np.ascontiguousarray(E)
        Ef, row_step, col_step = E.ravel(), w, 1
    act = np.flatnonzero(feature[node] >= 0)
    last = max(flat.size - 1, 0)
    while act.size:
        nd = node[act]
        f = feature[nd]
        e = Ef[act * row_step + (f - col_offset) * col_step].astype(np.float64, copy=False)
        go = e <= thr[nd]
        mk = moff[nd] >= 0
        if mk.any():
            idx = np.where(mk, moff[nd] + e.astype(np.int64), 0)
            go = np.where(mk, flat[np.clip(idx, 0, last)] if flat.size else False, go)
        nxt = np.where(go, left[nd], right[nd])
        node[act] = nxt
        act = act[feature[nxt] >= 0]
    return node


class LeafSummary:
    """The training rows grouped by leaf: per leaf, per numeric column, the minimum and maximum
    (NaN-propagating, as ``np.maximum`` would give over the rows, and NaN-ignoring with a flag
    for missing values), and per categorical column the (leaf, code) pairs present.

    Parameters
    ----------
    leaf : ndarray of int, shape (n_rows,)
        Leaf node of each row.
    R : dict or callable
        Per column position, the raw values as float64 (numeric columns) or the row codes
        (categorical columns: 0 .. m-1, and m for missing, in any integer dtype); or a
        function giving them from the position, called once per column in ``columns`` (each
        column is then alive only during its own pass).
    n_codes : dict
        Per categorical column position, m + 1.
    columns : iterable of int, optional
        The column positions, when ``R`` is a function.
    """

    def __init__(self, leaf: np.ndarray, R: Any, n_codes: dict, columns: Any = None):
        n_nodes = int(leaf.max()) + 1 if leaf.size else 1
        count = np.bincount(leaf, minlength=n_nodes)
        self.nodes = np.flatnonzero(count)  # the leaves that hold rows, by node id
        del count
        L = self.nodes.size
        # each row's leaf position, in 4 bytes when the leaves allow (half the memory)
        small = L < 2**31 - 1
        self.lid = np.full(n_nodes, -1, dtype=np.int32 if small else np.int64)
        self.lid[self.nodes] = np.arange(L)
        row_lid = self.lid[leaf]
        self.row_lid = row_lid
        self.max: dict[int, np.ndarray] = {}
        self.min: dict[int, np.ndarray] = {}
        self.nanmax: dict[int, np.ndarray] = {}
        self.nanmin: dict[int, np.ndarray] = {}
        self.has_nan: dict[int, np.ndarray] = {}
        self.pairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if callable(R):
            items = ((j, R(j)) for j in columns)
        else:
            items = iter(R.items())
        for j, x in items:
            if j in n_codes:
                width = int(n_codes[j])
                # (leaf, code) keys in 4 bytes when they fit, else 8
                kt = np.int32 if L * width < 2**31 - 1 else np.int64
                key = row_lid.astype(kt)
                key *= width
                key += x
                del x
                if L * width <= max(4 * leaf.size, 1 << 20):
                    present = np.flatnonzero(np.bincount(key, minlength=L * width))
                else:
                    present = np.unique(key).astype(np.int64)
                del key
                self.pairs[j] = (present // width, present % width)  # sorted by leaf, code
                continue
            # (np.maximum propagates NaN, as over the rows one by one)
            self.max[j] = np.full(L, -np.inf)
            np.maximum.at(self.max[j], row_lid, x)
            self.min[j] = np.full(L, np.inf)
            np.minimum.at(self.min[j], row_lid, x)
            nan = np.isnan(x)
            if nan.any():
                self.has_nan[j] = np.bincount(row_lid[nan], minlength=L) > 0
                self.nanmax[j] = np.full(L, np.nan)
                np.fmax.at(self.nanmax[j], row_lid, x)
                self.nanmin[j] = np.full(L, np.nan)
                np.fmin.at(self.nanmin[j], row_lid, x)
            else:
                self.has_nan[j] = np.zeros(L, dtype=bool)
                self.nanmax[j], self.nanmin[j] = self.max[j], self.min[j]
            del x, nan

    def group_range(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Smallest and largest group of each leaf's rows."""
        g = np.asarray(groups, dtype=np.int64)
        lo = np.full(self.nodes.size, np.iinfo(np.int64).max)
        hi = np.full(self.nodes.size, np.iinfo(np.int64).min)
        np.minimum.at(lo, self.row_lid, g)
        np.maximum.at(hi, self.row_lid, g)
        return lo, hi


def _ancestors(left: np.ndarray, right: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every (start position, ancestor node, whether the path goes left there) for nodes
    ``start`` of a tree given by its child arrays."""
    parent = np.full(left.size, -1, dtype=np.int64)
    inner = np.flatnonzero(left >= 0)
    parent[left[inner]] = inner
    parent[right[inner]] = inner
    who, node, went_left = [], [], []
    pos = np.arange(start.size, dtype=np.int64)
    cur = np.asarray(start, dtype=np.int64)
    while True:
        keep = parent[cur] >= 0
        pos, cur = pos[keep], cur[keep]
        if not cur.size:
            break
        par = parent[cur]
        who.append(pos)
        node.append(par)
        went_left.append(left[par] == cur)
        cur = par
    if not who:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0, dtype=bool)
    return np.concatenate(who), np.concatenate(node), np.concatenate(went_left)


def split_bounds(summary: LeafSummary, out_feature: np.ndarray, is_cat: np.ndarray,
                 left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per split of the encoded tree: the largest value of its raw column among the training
    rows going left (``lo``, -inf when none) and the smallest among those going right (``hi``,
    inf when none); for categorical splits the (node, code, goes left) triples present.

    Returns
    -------
    lo, hi : ndarray of float64, shape (n_nodes,)
    trip_node, trip_code, trip_left : ndarray
        One entry per distinct (node, code, side), in no particular order.
    """
    n_nodes = out_feature.size
    lo = np.full(n_nodes, -np.inf)
    hi = np.full(n_nodes, np.inf)
    who, node, went_left = _ancestors(left, right, summary.nodes)
    col = out_feature[node]
    trips: tuple[list, list, list] = ([], [], [])
    for j in np.unique(col):
        j = int(j)
        sel = col == j
        w, nd, gl = who[sel], node[sel], went_left[sel]
        if not is_cat[j]:
            np.maximum.at(lo, nd[gl], summary.max[j][w[gl]])
            np.minimum.at(hi, nd[~gl], summary.min[j][w[~gl]])
            continue
        p_leaf, p_code = summary.pairs[j]
        ptr = np.searchsorted(p_leaf, np.arange(summary.nodes.size + 1), side="left")
        cnt = ptr[w + 1] - ptr[w]
        rep = np.repeat(np.arange(w.size), cnt)
        within = np.arange(rep.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        trips[0].append(nd[rep])
        trips[1].append(p_code[ptr[w][rep] + within])
        trips[2].append(gl[rep])
    cat = [np.concatenate(t) if t else np.zeros(0, dtype=np.int64) for t in trips]
    return lo, hi, cat[0], cat[1], cat[2].astype(bool)


def boxes_route_to_groups(rt: Any, summary: LeafSummary, groups: np.ndarray,
                          uniques: dict) -> bool:
    """Whether every training row is routed by ``rt`` to its group, decided on the boxes of
    the summary's leaves (see the module docstring); the same routing rules as
    :meth:`~anonml.anonymize._routing.RoutingTree.apply`.

    A box goes down whole while it falls on one side of every split. At a categorical split
    that parts its categories (the shown categories of a side are named, the hidden ones go on
    through text thresholds, and the paths meet again) it is cut in two: each part keeps the
    categories of its side in that column, and the box's values in every other column (more
    than its rows hold: a sound check). A numeric split that parts a box, or a box ending in a
    leaf of another group than all its rows', returns ``False``: "not shown"; the caller then
    routes every row. ``uniques`` maps each categorical column position to the distinct
    values its row codes index (the missing value is the code after them)."""
    feature = np.asarray(rt.feature_, dtype=np.int64)
    thr = np.asarray(rt.threshold_, dtype=np.float64)
    left = np.asarray(rt.left_, dtype=np.int64)
    right = np.asarray(rt.right_, dtype=np.int64)
    named_left = np.asarray(rt.named_left_, dtype=bool)
    text_index = np.asarray(getattr(rt, "text_index_", np.full(feature.size, -1)),
                            dtype=np.int64)
    text_thr = np.asarray(list(getattr(rt, "text_thresholds_", [])) or [""], dtype=str)
    cat_cols = set(rt.categorical)
    is_cat_col = np.array([c in cat_cols for c in rt.columns], dtype=bool)
    vocab, member, member_off = rt._vocabulary(is_cat_col, feature)
    L = summary.nodes.size
    # per categorical column, its (box, category) pairs: the box, the category's vocabulary
    # position (-1 unnamed, len for missing) and text rank (-1 missing), as apply computes
    # them per distinct value; and the thresholds' insertion points among the texts
    pairs: dict[int, list[np.ndarray]] = {}
    tpos: dict[int, np.ndarray] = {}
    for j in np.flatnonzero(is_cat_col):
        j = int(j)
        if j not in summary.pairs or j not in vocab:
            return False
        vals = np.asarray(uniques[j], dtype=object)
        p_leaf, p_code = summary.pairs[j]
        index = vocab[j]
        pos = index.get_indexer(pd.Index(vals, dtype=object)) if vals.size else \
            np.zeros(0, dtype=np.int64)
        texts = np.asarray([str(v) for v in vals] or [""], dtype=str)
        order = np.argsort(texts, kind="stable")
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        r = np.where(p_code >= vals.size, -1, rank[np.minimum(p_code, order.size - 1)])
        pairs[j] = [p_leaf.copy(), np.append(pos, len(index))[p_code], r]
        tpos[j] = np.searchsorted(texts[order], text_thr, side="right")
    base = np.arange(L, dtype=np.int64)  # each box's leaf (its rows' values and groups)
    node = np.zeros(L, dtype=np.int64)
    act = np.flatnonzero(feature[node] >= 0) if L else np.zeros(0, dtype=np.int64)
    while act.size:
        nd = node[act]
        f = feature[nd]
        go = np.zeros(act.size, dtype=bool)
        cut_box: list[np.ndarray] = []  # boxes parted by a categorical split ...
        cut_col: list[int] = []
        cut_right: list[np.ndarray] = []  # ... and which of the column's pairs go right
        for j in np.unique(f):
            j = int(j)
            sel = np.flatnonzero(f == j)
            b, ndj = act[sel], nd[sel]
            if not is_cat_col[j]:
                if (member_off[ndj] >= 0).any() or (text_index[ndj] >= 0).any():
                    return False
                t, lf = thr[ndj], base[b]
                has_num = ~np.isnan(summary.nanmax[j][lf])
                all_left = has_num & ~summary.has_nan[j][lf] & (summary.nanmax[j][lf] <= t)
                all_right = ~has_num | (summary.nanmin[j][lf] > t)
                if not (all_left | all_right).all():
                    return False
                go[sel] = all_left
                continue
            p_box, p_pos, p_rank = pairs[j]
            at = np.full(node.size, -1, dtype=np.int64)
            at[b] = ndj
            pn = at[p_box]
            on = np.flatnonzero(pn >= 0)
            pb, pn = p_box[on], pn[on]
            moff = member_off[pn]
            ti = text_index[pn]
            if ((moff < 0) & (ti < 0)).any():
                return False
            side = np.zeros(pb.size, dtype=bool)
            if (moff >= 0).any():
                code = p_pos[on]
                idx = np.where((moff >= 0) & (code >= 0), moff + code, 0)
                named = (moff >= 0) & (code >= 0) & member[idx]
                side = named == named_left[pn]
            if (ti >= 0).any():
                r = p_rank[on]
                side = np.where(ti >= 0, (r >= 0) & (r < tpos[j][np.maximum(ti, 0)]), side)
            n_left = np.bincount(pb, weights=side, minlength=node.size)[b]
            n_all = np.bincount(pb, minlength=node.size)[b]
            if (n_all == 0).any():  # (every box holds a category of every column)
                return False
            go[sel] = n_left > 0
            parted = (n_left != 0) & (n_left != n_all)
            if parted.any():
                cut_box.append(b[parted])
                cut_col.append(j)
                cut_right.append(on[~side & np.isin(pb, b[parted])])
        nxt = np.where(go, left[nd], right[nd])
        node[act] = nxt
        if cut_box:  # the right part of each parted box becomes a box of its own
            boxes = np.concatenate(cut_box)
            new_id = np.full(node.size, -1, dtype=np.int64)
            new_id[boxes] = node.size + np.arange(boxes.size)
            cut_on = np.full(node.size, -1, dtype=np.int64)
            cut_on[boxes] = np.repeat(cut_col, [c.size for c in cut_box])
            node = np.concatenate([node, right[nd[np.searchsorted(act, boxes)]]])
            base = np.concatenate([base, base[boxes]])
            moved = dict(zip(cut_col, cut_right))
            for j, (p_box, p_pos, p_rank) in pairs.items():
                # in the column a box was cut on, its categories going right move to the new
                # box; in every other column its categories are in both parts
                dup = np.flatnonzero((new_id[p_box] >= 0) & (cut_on[p_box] != j))
                if j in moved:
                    p_box[moved[j]] = new_id[p_box[moved[j]]]
                pairs[j] = [np.concatenate([p_box, new_id[p_box[dup]]]),
                            np.concatenate([p_pos, p_pos[dup]]),
                            np.concatenate([p_rank, p_rank[dup]])]
            act = np.concatenate([act, new_id[boxes]])
        act = act[feature[node[act]] >= 0]
    g_lo, g_hi = summary.group_range(groups)
    leaf_group = np.asarray(rt.group_, dtype=np.int64)[node]
    return bool(np.array_equal(g_lo, g_hi) and np.array_equal(g_lo[base], leaf_group))
