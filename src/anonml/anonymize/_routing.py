"""A routing-only tree on raw values: what a released mapping keeps to place new rows.

Every anonymizer that can be released in a pipeline (accuracy-guided, Mondrian, Hilbert,
R+-tree) places a row in its group through structures fitted on the training data: encoders
that hold every distinct training value (ranks, bin edges, category lists), trees with per-node
counts, thresholds that are midpoints between adjacent training values. None of that is needed
to *route*. At the end of ``fit`` the anonymizer's own routing is therefore rewritten as one
:class:`RoutingTree` on the raw column values:

* a numeric split sends a row left when ``x <= threshold``; the threshold is the *roundest*
  number (:func:`roundest_in_gap`) strictly between the largest value of the node's training
  rows that go left and the smallest of those that go right, so it separates exactly the same
  training rows and equals no training value;
* a categorical split names the categories of one side only (the side whose categories the
  anonymized table shows, else the smaller one); every other value, including categories never
  seen in fit, follows the other (default) side;
* a leaf holds a group id, and nothing else: no counts, no impurities, no class values.

Trees that are not axis-aligned on the raw values (a Hilbert curve's runs, Mondrian's relaxed
or hierarchy cuts) are first learnt as a tree of pure leaves over the training rows' groups
(:func:`_fit_partition_tree`), then rewritten the same way.

``transform`` of the training rows through the routing tree gives exactly the groups of
``fit_transform`` (every split separates the same training rows); a new row is routed by the
rounded thresholds.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml.anonymize._routing_leaves import (
    LeafSummary,
    boxes_route_to_groups,
    encoded_leaves,
    split_bounds,
)

__all__ = ["ROUTING_ATTRIBUTES", "RoutingTree", "roundest_in_gap", "build_routing"]

#: every attribute a fitted routing tree holds (and a saved one may hold), in one place
ROUTING_ATTRIBUTES = ("columns", "categorical", "feature_", "threshold_", "left_", "right_",
                      "group_", "cat_offset_", "cat_count_", "cat_missing_", "named_left_",
                      "categories_", "text_index_", "text_thresholds_")

#: most decimal levels searched for a round number (doubles span ~10^-324 .. 10^308)
_MAX_LEVELS = 700


# ----------------------------------------------------------------------------- rounding
def _pow10(p: np.ndarray) -> np.ndarray:
    """10.0 ** p for integer arrays p, exact for |p| <= 22 (inf/0 outside the double range)."""
    with np.errstate(over="ignore", under="ignore"):
        return np.power(10.0, p.astype(np.float64))


def _decimal(m: np.ndarray, p: np.ndarray, s: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The double nearest to ``m * 10^p``: one correctly rounded operation where ``10^|p|`` is
    exact (``|p| <= 22``), else parsed from its decimal text."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        c = np.where(neg, m / s, m * s)
    far = (np.abs(p) > 22) & np.isfinite(m) & (np.abs(m) < 2.0**62)
    if far.any():
        text = np.char.add(np.char.add(m[far].astype(np.int64).astype(str), "e"),
                           p[far].astype(str))
        c[far] = text.astype(np.float64)
    return c


def _roundest_pos(a: np.ndarray, b: np.ndarray, incl_a: bool,
                  incl_b: bool) -> tuple[np.ndarray, np.ndarray]:
    """Roundest number in the interval from ``a`` to ``b`` (0 <= a < b, finite), ends included
    as asked, and the decimal level ``p`` it was found at; NaN where none was found (the
    caller falls back)."""
    out = np.full(a.shape, np.nan)
    level = np.zeros(a.shape, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = np.floor(np.log10(b)).astype(np.int64)
    todo = np.arange(a.size)
    for _ in range(_MAX_LEVELS):
        if not todo.size:
            break
        pa, pb, pp = a[todo], b[todo], p[todo]
        neg = pp < 0
        s = np.where(neg, _pow10(-pp), _pow10(pp))  # divide by 10^-p: correctly rounded
        # below 1e-300 (subnormals), 10^-p overflows: scale in two steps (the candidates are
        # then parsed from text, and checked against the interval as doubles)
        tiny = neg & (-pp > 300)
        s2 = _pow10(np.where(tiny, -pp - 300, 0))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q_a = np.where(tiny, (pa * 1e300) * s2, np.where(neg, pa * s, pa / s))
            q_b = np.where(tiny, (pb * 1e300) * s2, np.where(neg, pb * s, pb / s))
            m_lo = np.floor(q_a) + 1 if not incl_a else np.ceil(q_a)
            m_hi = np.ceil(q_b) - 1 if not incl_b else np.floor(q_b)
            mid = np.rint(q_a / 2 + q_b / 2)
            m = np.clip(mid, m_lo, m_hi)
        c = _decimal(m, pp, s, neg)
        ok_a = (c >= pa) if incl_a else (c > pa)
        ok_b = (c <= pb) if incl_b else (c < pb)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(c) & (m_lo <= m_hi) & ok_a & ok_b
        # the clipped middle may round out of the interval: try the ends of the level too
        # (and their neighbours: q_a, q_b are rounded where 10^p is not exact)
        for alt in (m_lo, m_hi, m_lo - 1, m_hi + 1):
            c2 = _decimal(alt, pp, s, neg)
            ok2 = ~ok & np.isfinite(c2) & ((c2 >= pa) if incl_a else (c2 > pa)) \
                & ((c2 <= pb) if incl_b else (c2 < pb))
            c = np.where(ok2, c2, c)
            ok |= ok2
        out[todo[ok]] = c[ok]
        level[todo[ok]] = pp[ok]
        keep = ~ok & (pp > -400)
        todo = todo[keep]
        p[todo] -= 1
    return out, level


def roundest_in_gap(lo: Any, hi: Any, closed: str = "neither") -> np.ndarray:
    """The number with the fewest significant digits between ``lo`` and ``hi``, elementwise.

    Parameters
    ----------
    lo, hi : array-like of float
        Ends of each gap, ``lo < hi`` (``-inf``/``inf`` allowed: an open side).
    closed : {"neither", "right", "left"}, default "neither"
        Which ends may be returned: ``"neither"`` the open interval ``(lo, hi)`` (a split
        ``x <= t`` or ``x < t`` then separates the same values, and ``t`` is neither end),
        ``"right"`` ``(lo, hi]`` (for ``x < t`` routing), ``"left"`` ``[lo, hi)`` (for
        ``x <= t``).

    Returns
    -------
    ndarray of float64
        Zero when the interval holds it; otherwise, of the numbers ``m * 10^p`` in the
        interval for the largest ``p`` that has one (they all have the fewest significant
        digits), the one closest to the gap's middle. Where the open interval holds no double
        at all (``hi`` is the next double after ``lo``) ``lo`` is returned (``hi`` for
        ``"right"``). An infinite end gives the other end's roundest neighbour: ``(-inf, hi)``
        gives a round number below ``hi``.

    Examples
    --------
    >>> roundest_in_gap([22040.0, 22.0, -3.7], [25000.0, 23.0, 1.2]).tolist()
    [24000.0, 22.5, 0.0]
    """
    return _roundest(lo, hi, closed)[0]


def _roundest(lo: Any, hi: Any, closed: str = "neither") -> tuple[np.ndarray, np.ndarray]:
    """:func:`roundest_in_gap`, and the number of significant digits of each result (0 for
    zero, 17 for a fallback that is no short decimal)."""
    if closed not in ("neither", "right", "left"):
        raise ValueError(f"closed={closed!r}; use 'neither', 'right' or 'left'")
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    lo, hi = np.broadcast_arrays(lo, hi)
    shape = lo.shape
    lo, hi = lo.ravel().copy(), hi.ravel().copy()
    incl_lo, incl_hi = closed == "left", closed == "right"
    out = np.full(lo.shape, np.nan)
    # an infinite side: step one decade beyond the finite end
    lo_inf, hi_inf = np.isneginf(lo), np.isposinf(hi)
    both = lo_inf & hi_inf
    out[both] = 0.0
    big = np.float64(np.finfo(np.float64).max)
    with np.errstate(over="ignore"):
        lo = np.where(lo_inf & ~both, np.where(hi > 0, -1.0, np.maximum(hi * 10.0, -big) - 1.0),
                      lo)
        hi = np.where(hi_inf & ~both, np.where(lo < 0, 1.0, np.minimum(lo * 10.0, big) + 1.0),
                      hi)
    lo = np.where(lo_inf & ~both & (lo >= hi), -big, lo)
    hi = np.where(hi_inf & ~both & (hi <= lo), big, hi)
    todo = np.isnan(out)
    zero = todo & (((lo < 0) | (incl_lo & (lo == 0))) & ((hi > 0) | (incl_hi & (hi == 0))))
    out[zero] = 0.0
    level = np.zeros(lo.shape, dtype=np.int64)
    pos = todo & ~zero & (lo >= 0)
    negs = todo & ~zero & (hi <= 0)
    if pos.any():
        out[pos], level[pos] = _roundest_pos(lo[pos], hi[pos], incl_lo, incl_hi)
    if negs.any():  # mirror: (lo, hi) below zero is -(−hi, −lo), ends swapped
        got, level[negs] = _roundest_pos(-hi[negs], -lo[negs], incl_hi, incl_lo)
        out[negs] = -got
    # no decimal found (adjacent doubles, or the ends met): a double inside, or the end allowed
    miss = np.isnan(out)
    if miss.any():
        a, b = lo[miss], hi[miss]
        m = a / 2.0 + b / 2.0
        inside = (m > a) & (m < b)
        fallback = b if incl_hi else a
        out[miss] = np.where(inside, m, fallback)
    with np.errstate(divide="ignore", invalid="ignore"):
        lead = np.floor(np.log10(np.abs(out)))
    digits = np.where(out == 0, 0, lead - level + 1)
    digits = np.where(miss | ~np.isfinite(digits), 17, digits).astype(np.int64)
    return out.reshape(shape), digits.reshape(shape)


# ----------------------------------------------------------------------------- the tree
class RoutingTree:
    """Routing of rows to groups by splits on raw values (see the module docstring).

    Attributes
    ----------
    columns : list
        Columns the splits read (positions in ``feature_``).
    categorical : list
        The categorical ones among them.
    feature_ : ndarray of int64, shape (n_nodes,)
        Column read by each split; -1 at a leaf.
    threshold_ : ndarray of float64
        Numeric splits: rows with ``x <= threshold`` go left (NaN elsewhere).
    left_, right_ : ndarray of int64
        Children (-1 at a leaf); always after their node.
    group_ : ndarray of int64
        Group of each leaf (-1 at a split).
    cat_offset_, cat_count_ : ndarray of int64
        Categorical splits: the categories the split names are
        ``categories_[offset : offset + count]`` (offset -1 elsewhere).
    cat_missing_ : ndarray of bool
        Whether a categorical split also names the missing value.
    named_left_ : ndarray of bool
        Whether the named categories go left; any other value goes the other way.
    categories_ : list
        The categories named by the splits, one list for all (plain str/int/float/bool).
    text_index_ : ndarray of int64
        Text splits (categories told apart without naming them): rows whose value, as text,
        is ``<= text_thresholds_[i]`` go left, missing values right (-1 elsewhere).
    text_thresholds_ : list of str
        Their thresholds: the shortest strings between the categories they separate.
    """

    def __init__(self, columns: Sequence[Any], categorical: Sequence[Any]):
        self.columns = list(columns)
        self.categorical = [c for c in self.columns if c in set(categorical)]

    @property
    def n_nodes(self) -> int:
        return int(np.asarray(self.feature_).size)

    def depth(self) -> int:
        """Levels below the root (0 for a single leaf)."""
        left, right = np.asarray(self.left_), np.asarray(self.right_)
        depth = np.zeros(left.size, dtype=np.int64)
        for i in range(left.size):  # children after parents: one forward pass
            if left[i] >= 0:
                depth[left[i]] = depth[right[i]] = depth[i] + 1
        return int(depth.max()) if depth.size else 0

    def apply(self, frame: pd.DataFrame) -> np.ndarray:
        """Group of every row of ``frame`` (vectorized, one step per level)."""
        n = frame.shape[0]
        feature = np.asarray(self.feature_, dtype=np.int64)
        thr = np.asarray(self.threshold_, dtype=np.float64)
        left = np.asarray(self.left_, dtype=np.int64)
        right = np.asarray(self.right_, dtype=np.int64)
        cat_cols = set(self.categorical)
        is_cat_col = np.array([c in cat_cols for c in self.columns], dtype=bool)
        # numeric columns as floats; categorical ones as positions in the named vocabulary
        X = np.zeros((n, len(self.columns)), dtype=np.float64)
        member, member_off = self._membership(frame, X, is_cat_col, feature)
        named_left = np.asarray(self.named_left_, dtype=bool)
        text_index = np.asarray(getattr(self, "text_index_", np.full(feature.size, -1)),
                                dtype=np.int64)
        text_thr = np.asarray(list(getattr(self, "text_thresholds_", [])) or [""], dtype=str)
        texts_of: dict[int, tuple] = {}
        for j in np.unique(feature[text_index >= 0]):
            codes, uniques = pd.factorize(frame[self.columns[int(j)]], use_na_sentinel=True)
            texts = np.asarray([str(v) for v in np.asarray(uniques, dtype=object)] or [""],
                               dtype=str)
            order = np.argsort(texts, kind="stable")
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            # value <= threshold  <=>  its rank among the distinct values < the threshold's
            # insertion point: one integer compare per row and level
            pos = np.searchsorted(texts[order], text_thr, side="right")
            texts_of[int(j)] = (np.where(codes >= 0, rank[np.maximum(codes, 0)], -1), pos)
        node = np.zeros(n, dtype=np.int64)
        act = np.flatnonzero(feature[node] >= 0) if n else np.zeros(0, dtype=np.int64)
        d = X.shape[1]
        flat = X.ravel()
        while act.size:
            nd = node[act]
            f = feature[nd]
            x = flat[act * d + f]
            go = x <= thr[nd]
            cat = member_off[nd] >= 0
            if cat.any():
                code = x.astype(np.int64)
                idx = np.where(cat & (code >= 0), member_off[nd] + code, 0)
                named = cat & (code >= 0) & member[idx]
                go = np.where(cat, named == named_left[nd], go)
            ti = text_index[nd]
            if (ti >= 0).any():  # text thresholds: x <= t in string order; missing right
                for j in np.unique(f[ti >= 0]):
                    sel = np.flatnonzero((ti >= 0) & (f == j))
                    ranks, pos = texts_of[int(j)]
                    r = ranks[act[sel]]
                    go[sel] = (r >= 0) & (r < pos[ti[sel]])
            node[act] = np.where(go, left[nd], right[nd])
            act = act[feature[node[act]] >= 0]
        return np.asarray(self.group_, dtype=np.int64)[node]

    def _vocabulary(self, is_cat_col: np.ndarray, feature: np.ndarray
                    ) -> tuple[dict, np.ndarray, np.ndarray]:
        """Per categorical column, the vocabulary of the categories its splits name (a
        ``pd.Index``); and the flat table of which vocabulary position (or, after the last,
        the missing value) each categorical split names, with each split's offset in it."""
        off = np.asarray(self.cat_offset_, dtype=np.int64)
        cnt = np.asarray(self.cat_count_, dtype=np.int64)
        miss = np.asarray(self.cat_missing_, dtype=bool)
        cats = np.asarray(self.categories_, dtype=object).tolist()
        vocab: dict[int, pd.Index] = {}
        for j in np.flatnonzero(is_cat_col):
            j = int(j)
            nodes = np.flatnonzero((feature == j) & (off >= 0))
            names: list = []
            for i in nodes:
                names.extend(cats[off[i]: off[i] + cnt[i]])
            vocab[j] = pd.Index(pd.unique(pd.Series(names, dtype=object)), dtype=object)
        # one slot per named vocabulary position and one for the missing value, per split
        nodes = np.flatnonzero(off >= 0)
        width = np.array([len(vocab[int(feature[i])]) + 1 for i in nodes], dtype=np.int64)
        member_off = np.full(feature.size, -1, dtype=np.int64)
        member_off[nodes] = np.cumsum(width) - width
        member = np.zeros(max(int(width.sum()), 1), dtype=bool)
        member[(member_off[nodes] + width - 1)[miss[nodes]]] = True
        for j, index in vocab.items():  # every split's names at once, per column
            mine = nodes[(feature[nodes] == j) & (cnt[nodes] > 0)]
            if not mine.size:
                continue
            names = [v for i in mine for v in cats[off[i]: off[i] + cnt[i]]]
            pos = index.get_indexer(pd.Index(names, dtype=object))
            at = np.repeat(member_off[mine], cnt[mine])
            last = np.repeat(member_off[mine] + len(index), cnt[mine])
            member[np.where(pos >= 0, at + pos, last)] = True  # (-1 would mark the last slot)
        return vocab, member, member_off

    def _membership(self, frame: pd.DataFrame, X: np.ndarray, is_cat_col: np.ndarray,
                    feature: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fill ``X`` (numbers; vocabulary positions of categories, -1 unnamed) and build the
        flat table of which vocabulary position each categorical split names."""
        vocab, member, member_off = self._vocabulary(is_cat_col, feature)
        for j, c in enumerate(self.columns):
            if not is_cat_col[j]:
                X[:, j] = frame[c].to_numpy(dtype=np.float64)
                continue
            index = vocab[j]
            codes, uniques = pd.factorize(frame[c], use_na_sentinel=True)
            pos = index.get_indexer(pd.Index(np.asarray(uniques, dtype=object), dtype=object))
            X[:, j] = np.append(pos, len(index))[codes]  # missing -> the slot after the names
        return member, member_off


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# ----------------------------------------------------------------------------- building
def build_routing(
    frame: pd.DataFrame,
    columns: Sequence[Any],
    categorical: Sequence[Any],
    E: np.ndarray,
    efeat_col: np.ndarray,
    tree: dict,
    shown: dict | None = None,
) -> RoutingTree:
    """Rewrite a fitted tree on encoded values as a :class:`RoutingTree` on raw values.

    Parameters
    ----------
    frame : DataFrame
        The training rows.
    columns, categorical : list
        The columns the routing reads, and the categorical ones among them.
    E : ndarray, shape (n_rows, n_encoded)
        The encoded training rows the tree routes by (ranks, bins, one-hot indicators, codes).
    efeat_col : ndarray of int
        For each encoded column, the position in ``columns`` of the raw column it encodes.
    tree : dict of ndarrays
        ``feature`` (encoded column, -1 at a leaf), ``threshold`` (left when
        ``E[:, feature] <= threshold``), ``mask_offset`` (-1, or the start in ``flat`` of a
        per-code boolean mask: left when ``flat[offset + E[:, feature]]``), ``flat``,
        ``left``, ``right``, ``group`` (each leaf's group).
    shown : dict, optional
        Per categorical column, the set of values the anonymized table shows: a split names
        the side whose categories are all shown when it can.

    Returns
    -------
    RoutingTree
    """
    return _build(frame, columns, categorical, E, efeat_col, tree, shown)[0]


def _build(frame: pd.DataFrame, columns: Sequence[Any], categorical: Sequence[Any],
           E: np.ndarray | None, efeat_col: np.ndarray, tree: dict, shown: dict | None = None,
           leaf: np.ndarray | None = None, factorized: dict | None = None,
           distinct: dict | None = None) -> tuple[RoutingTree, LeafSummary, dict]:
    """:func:`build_routing`, given each row's leaf if known (else routed through ``E``), the
    categorical columns' ``pd.factorize`` and the numeric columns' sorted distinct values
    (``np.unique``) if known; also returns the per-leaf summary and each categorical column's
    distinct values (for :func:`_check_routes`)."""
    feature = np.asarray(tree["feature"], dtype=np.int64)
    thr = np.asarray(tree["threshold"], dtype=np.float64)
    moff = np.asarray(tree.get("mask_offset", np.full(feature.size, -1)), dtype=np.int64)
    flat = np.asarray(tree.get("flat", np.zeros(0, dtype=bool)), dtype=bool)
    left = np.asarray(tree["left"], dtype=np.int64)
    right = np.asarray(tree["right"], dtype=np.int64)
    group = np.asarray(tree["group"], dtype=np.int64)
    efeat_col = np.asarray(efeat_col, dtype=np.int64)
    columns = list(columns)
    cat_set = set(categorical)
    is_cat = np.array([c in cat_set for c in columns], dtype=bool)
    n_nodes = feature.size

    # raw numbers and category codes of the training rows, per routed column
    R: dict[int, np.ndarray] = {}
    n_codes: dict[int, int] = {}
    cat_values: dict[int, np.ndarray] = {}
    factorized = factorized or {}
    for j, c in enumerate(columns):
        if is_cat[j]:
            got = factorized.get(c)
            codes, uniques = got if got is not None else \
                pd.factorize(frame[c], use_na_sentinel=True)
            cat_values[j] = np.asarray(uniques, dtype=object)
            R[j] = np.where(codes < 0, len(uniques), codes)  # missing: the last code
            n_codes[j] = len(uniques) + 1
        else:
            R[j] = frame[c].to_numpy(dtype=np.float64)

    # each row's leaf once; per leaf its values; per split the values each side receives
    # (the rows going left at a node are those whose leaf is in its left subtree)
    if leaf is None:
        leaf = encoded_leaves(E, feature, thr, moff, flat, left, right)
    summary = LeafSummary(np.asarray(leaf, dtype=np.int64), R, n_codes)
    inner = feature >= 0
    out_feature = np.where(inner, efeat_col[np.maximum(feature, 0)], -1)
    lo, hi, tn, tc, tl = split_bounds(summary, out_feature, is_cat, np.where(inner, left, -1),
                                      np.where(inner, right, -1))

    out_thr = np.full(n_nodes, np.nan)
    for j in np.flatnonzero(~is_cat):
        nodes = np.flatnonzero(inner & (out_feature == j))
        if nodes.size:
            got = (distinct or {}).get(columns[j])
            values = np.asarray(got, dtype=np.float64) if got is not None else np.unique(R[j])
            out_thr[nodes] = _threshold_avoiding(lo[nodes], hi[nodes], values)
    specs = _cat_specs(tn, tc, tl, out_feature, cat_values)
    all_cats = {j: {_plain(v) for v in cat_values[j]} for j in cat_values}
    rt = RoutingTree(columns, categorical)
    _set_nodes(rt, out_feature, out_thr, np.where(inner, left, -1), np.where(inner, right, -1),
               np.where(inner, -1, group), inner & is_cat[np.maximum(out_feature, 0)], specs,
               shown or {}, all_cats)
    return _simplify(rt), summary, cat_values


def _cat_specs(tn: np.ndarray, tc: np.ndarray, tl: np.ndarray, out_feature: np.ndarray,
               cat_values: dict) -> dict:
    """Per categorical split, from the (node, code, goes left) triples of
    :func:`~anonml.anonymize._routing_leaves.split_bounds`: (column, left values, right values,
    side of the missing value or None); code ``len(cat_values[j])`` is the missing value."""
    specs: dict[int, tuple] = {}
    if tn.size:
        width = int(tc.max()) + 2
        flat_key = np.unique((tn * width + tc) * 2 + tl.astype(np.int64))
        key = np.stack([flat_key // 2 // width, flat_key // 2 % width, flat_key % 2], axis=1)
        starts = np.flatnonzero(np.r_[True, key[1:, 0] != key[:-1, 0]])
        ends = np.r_[starts[1:], key.shape[0]]
        for s, t in zip(starts, ends):
            i = int(key[s, 0])
            j = int(out_feature[i])
            vals = cat_values[j]
            sides: dict[int, list] = {1: [], 0: []}
            miss = None
            for code, is_left in key[s:t, 1:]:
                if code >= len(vals):
                    miss = "left" if is_left else "right"
                else:
                    sides[int(is_left)].append(_plain(vals[code]))
            specs[i] = (j, sides[1], sides[0], miss)
    return specs


def _set_nodes(rt: RoutingTree, feature: np.ndarray, thr: np.ndarray, left: np.ndarray,
               right: np.ndarray, group: np.ndarray, is_cat_node: np.ndarray, specs: dict,
               shown: dict, all_cats: dict) -> None:
    """Fill the routing tree's node arrays. A categorical split names the categories of one
    side, the side whose categories the anonymized table shows (``shown``) when it can, else
    the smaller one. When both sides hold categories the table does not show, the split
    becomes a small subtree: the shown categories of each side are named, and the hidden ones
    are told apart by text thresholds between them in string order (the shortest strings that
    separate them, never a category of the column), so no hidden category is named."""
    feature, thr = list(feature), list(thr)
    left, right, group = list(left), list(right), list(group)
    n = len(feature)
    off, cnt = [-1] * n, [0] * n
    miss_named, named_left, text_idx = [False] * n, [False] * n, [-1] * n
    cats: list = []
    texts: list = []

    def new_node(j: int) -> int:
        for arr, v in ((feature, j), (thr, np.nan), (left, -1), (right, -1), (group, -1),
                       (off, -1), (cnt, 0), (miss_named, False), (named_left, False),
                       (text_idx, -1)):
            arr.append(v)
        return len(feature) - 1

    def name(i: int, values: list, missing: bool, to_left: bool) -> None:
        off[i], cnt[i] = len(cats), len(values)
        cats.extend(values)
        miss_named[i], named_left[i] = missing, to_left

    for i in np.flatnonzero(is_cat_node):
        i = int(i)
        if i not in specs:  # no training row reached it: names nothing, all go right
            name(i, [], False, False)
            continue
        j, lv, rv, miss = specs[i]
        if lv and rv:  # sides apart in text order: one text threshold, no category named
            ls, rs = sorted(str(v) for v in lv), sorted(str(v) for v in rv)
            if ls[-1] < rs[0] and miss != "left":
                text_idx[i] = len(texts)
                texts.append(_text_between(ls[-1], rs[0], all_cats.get(j, set())))
                name(i, [], False, False)
                continue
            if rs[-1] < ls[0] and miss != "right":  # right side first: children swapped
                text_idx[i] = len(texts)
                texts.append(_text_between(rs[-1], ls[0], all_cats.get(j, set())))
                name(i, [], False, False)
                left[i], right[i] = right[i], left[i]
                continue
        seen = shown.get(rt.columns[j])
        hid_l = [v for v in lv if seen is not None and v not in seen]
        hid_r = [v for v in rv if seen is not None and v not in seen]
        if not (hid_l and hid_r):
            name_left = (len(hid_l), len(lv)) <= (len(hid_r), len(rv))
            if name_left:
                name(i, lv, miss == "left", True)
            else:
                name(i, rv, miss == "right", False)
            continue
        l_child, r_child = left[i], right[i]
        # i: the shown categories of the left side go left; the rest on to b
        b = new_node(j)
        name(i, [v for v in lv if v in seen], miss == "left", True)
        left[i], right[i] = l_child, b
        # b: the shown categories of the right side go right; the hidden ones on to the chain
        name(b, [v for v in rv if v in seen], miss == "right", False)
        right[b] = r_child
        chain = sorted([(str(v), l_child) for v in hid_l] + [(str(v), r_child) for v in hid_r])
        runs = [chain[0]]
        bounds = []
        for prev, cur in zip(chain, chain[1:]):
            if cur[1] != runs[-1][1]:
                bounds.append(_text_between(prev[0], cur[0], all_cats.get(j, set())))
                runs.append(cur)
        parent, side = b, "left"
        for t, run in zip(bounds, runs):
            c = new_node(j)
            name(c, [], False, False)
            text_idx[c] = len(texts)
            texts.append(t)
            if side == "left":
                left[parent] = c
            else:
                right[parent] = c
            left[c] = run[1]
            parent, side = c, "right"
        right[parent] = runs[-1][1]
    rt.feature_ = np.asarray(feature, dtype=np.int64)
    rt.threshold_ = np.asarray(thr, dtype=np.float64)
    rt.left_ = np.asarray(left, dtype=np.int64)
    rt.right_ = np.asarray(right, dtype=np.int64)
    rt.group_ = np.asarray(group, dtype=np.int64)
    rt.cat_offset_ = np.asarray(off, dtype=np.int64)
    rt.cat_count_ = np.asarray(cnt, dtype=np.int64)
    rt.cat_missing_ = np.asarray(miss_named, dtype=bool)
    rt.named_left_ = np.asarray(named_left, dtype=bool)
    rt.text_index_ = np.asarray(text_idx, dtype=np.int64)
    rt.categories_ = cats
    rt.text_thresholds_ = texts


def _text_between(a: str, b: str, avoid: set) -> str:
    """The shortest string ``t`` with ``a < t < b`` (string order) that is no category of
    the column: a middle character after the common prefix where there is room, else a
    prefix of ``b``, else ``a`` followed by the smallest character."""
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    cands = []
    if i < len(a) and i < len(b) and ord(b[i]) - ord(a[i]) >= 2:
        cands.append(a[:i] + chr((ord(a[i]) + ord(b[i])) // 2))
    cands += [b[:L] for L in range(i + 1, len(b))]
    cands += [a[:L] + chr(ord(a[L]) + 1) for L in range(i + 1, len(a)) if ord(a[L]) < 0x10FFFF]
    cands += [a + "\x01", a + "\x01\x01"]
    # (text arrays drop trailing NULs: no candidate may end with one)
    shown = {str(v) for v in avoid}
    ok = [t for t in cands if a < t < b and not t.endswith("\x00") and t not in shown]
    return min(ok, key=len) if ok else a + "\x01"


def _threshold_avoiding(lo: np.ndarray, hi: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each gap ``(lo, hi)`` between a node's training rows, the roundest number in it
    that equals no training value of the column at all (rows of other nodes may hold values
    inside a node's gap): the roundest over the sub-gaps those values cut it into."""
    i0 = np.searchsorted(values, lo, side="right")
    i1 = np.searchsorted(values, hi, side="left")
    count = np.maximum(i1 - i0, 0)
    n_sub = count + 1
    owner = np.repeat(np.arange(lo.size), n_sub)
    first = np.cumsum(n_sub) - n_sub
    rank = np.arange(owner.size) - first[owner]  # 0 .. count within each gap
    inside = i0[owner] + rank  # index of the training value closing each sub-gap
    a = np.where(rank == 0, lo[owner], values[np.clip(inside - 1, 0, values.size - 1)])
    b = np.where(rank == count[owner], hi[owner], values[np.clip(inside, 0, values.size - 1)])
    c, digits = _roundest(a, b)
    with np.errstate(invalid="ignore"):
        mid = np.where(np.isfinite(lo) & np.isfinite(hi), lo / 2 + hi / 2, 0.0)
        dist = np.abs(c - mid[owner])
    dist = np.where(np.isfinite(dist), dist, np.inf)
    order = np.lexsort((dist, digits, owner))
    best = order[np.r_[0, np.cumsum(n_sub)[:-1]]]  # first of each owner after the sort
    return c[best]


def _simplify(rt: RoutingTree) -> RoutingTree:
    """Collapse splits whose two children are leaves of one group, then renumber the reachable
    nodes in breadth-first order (children after parents) and drop the rest."""
    feature, left, right, group = rt.feature_.copy(), rt.left_.copy(), rt.right_.copy(), \
        rt.group_.copy()
    while True:
        inner = np.flatnonzero(feature >= 0)
        if not inner.size:
            break
        lc, rc = left[inner], right[inner]
        same = (feature[lc] < 0) & (feature[rc] < 0) & (group[lc] == group[rc])
        if not same.any():
            break
        i = inner[same]
        group[i] = group[lc[same]]
        feature[i] = -1
        left[i] = right[i] = -1
    order = [0]
    head = 0
    while head < len(order):
        i = order[head]
        head += 1
        if feature[i] >= 0:
            order += [int(left[i]), int(right[i])]
    order = np.asarray(order, dtype=np.int64)
    new_id = np.full(feature.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    inner = feature[order] >= 0
    cats = list(rt.categories_)
    new_cats: list = []
    off = rt.cat_offset_[order].copy()
    cnt = rt.cat_count_[order].copy()
    for p in np.flatnonzero(off >= 0):
        if not inner[p]:
            off[p], cnt[p] = -1, 0
            continue
        start = len(new_cats)
        new_cats.extend(cats[off[p]: off[p] + cnt[p]])
        off[p] = start
    out = RoutingTree(rt.columns, rt.categorical)
    out.feature_ = feature[order]
    out.threshold_ = np.where(inner, rt.threshold_[order], np.nan)
    out.left_ = np.where(inner, new_id[np.maximum(left[order], 0)], -1)
    out.right_ = np.where(inner, new_id[np.maximum(right[order], 0)], -1)
    out.group_ = np.where(inner, -1, group[order])
    out.cat_offset_ = off
    out.cat_count_ = cnt
    out.cat_missing_ = rt.cat_missing_[order] & inner
    out.named_left_ = rt.named_left_[order] & inner
    out.categories_ = new_cats
    texts = list(getattr(rt, "text_thresholds_", []))
    tidx = np.asarray(getattr(rt, "text_index_", np.full(feature.size, -1)),
                      dtype=np.int64)[order]
    tidx = np.where(inner, tidx, -1)
    new_texts: list = []
    for p in np.flatnonzero(tidx >= 0):
        new_texts.append(texts[tidx[p]])
        tidx[p] = len(new_texts) - 1
    out.text_index_ = tidx
    out.text_thresholds_ = np.asarray(new_texts, dtype=str) if new_texts else \
        np.zeros(0, dtype="<U1")
    if order.size < 2**31 - 1 and len(new_cats) < 2**31 - 1:  # ids in 4 bytes: half the file
        for name in ("feature_", "left_", "right_", "group_", "cat_offset_", "cat_count_",
                     "text_index_"):
            setattr(out, name, getattr(out, name).astype(np.int32))
    if new_cats and all(type(v) is str for v in new_cats):  # text in one array (compact)
        out.categories_ = np.asarray(new_cats, dtype=str)
    return out


def _sklearn_parts(est: Any) -> dict:
    t = est.tree_
    left = np.asarray(t.children_left, dtype=np.int64)
    return {"feature": np.where(left >= 0, np.asarray(t.feature, dtype=np.int64), -1),
            "threshold": np.asarray(t.threshold, dtype=np.float64),
            "left": left, "right": np.asarray(t.children_right, dtype=np.int64)}


def _onehot_columns(encoder: Any, columns: Sequence[Any]) -> np.ndarray:
    """Position in ``columns`` of the raw column of each of ``encoder.onehot``'s columns."""
    pos = {c: j for j, c in enumerate(columns)}
    out = [pos[c] for c in encoder.numeric]
    for c in encoder.categorical:
        spec = encoder.cats_[c]
        width = spec.n_codes if spec.has_missing else spec.n_codes - 1
        out += [pos[c]] * width
    return np.asarray(out, dtype=np.int64)


def _fit_partition_tree(anonymizer: Any, frame: pd.DataFrame, groups: np.ndarray) -> dict:
    """A tree of pure leaves over the training rows' groups (for partitions that are not
    axis-aligned trees on raw values: a Hilbert run, Mondrian's relaxed or hierarchy cuts).

    It reads numeric columns by rank and categorical ones by category code (a split on a
    range of codes becomes a named set of categories): on Adult's Hilbert mapping (k = 100)
    this gives 8,719 nodes where one-hot indicators give 21,905."""
    from sklearn.tree import DecisionTreeClassifier

    enc = anonymizer.encoder_
    cols = list(enc.columns)
    cat = set(enc.categorical)
    E = np.column_stack([enc.codes(frame, c) if c in cat else enc.ranks(frame, c)
                         for c in cols]).astype(np.float64)
    est = DecisionTreeClassifier(random_state=0).fit(E, groups)
    parts = _sklearn_parts(est)
    leaf_class = np.argmax(est.tree_.value[:, 0, :], axis=1)
    parts["group"] = np.where(parts["left"] >= 0, -1, est.classes_[leaf_class])
    spec = {"E": E}
    if np.array_equal(E.astype(np.float32), E):  # sklearn's float32 view is exact: its apply
        spec = {"leaf": np.asarray(est.apply(E), dtype=np.int64)}
    return {**spec, "efeat_col": np.arange(len(cols), dtype=np.int64), "tree": parts,
            "columns": cols, "categorical": list(enc.categorical)}


def _check_pure(rt: RoutingTree, frame: pd.DataFrame, groups: np.ndarray) -> None:
    got = rt.apply(frame)
    if not np.array_equal(got, groups):  # pragma: no cover - an internal invariant
        raise RuntimeError("the routing tree does not reproduce the training groups")


def _check_routes(rt: RoutingTree, frame: pd.DataFrame, groups: np.ndarray,
                  summary: LeafSummary, uniques: dict) -> None:
    """Every training row is routed to its group: shown on the boxes of the rows of each leaf
    of the fitted tree when they fall wholly on one side of every split (cheap), else by
    routing every row (:func:`_check_pure`)."""
    if not boxes_route_to_groups(rt, summary, groups, uniques):
        _check_pure(rt, frame, groups)


def anonymizer_routing(anonymizer: Any, frame: pd.DataFrame, groups: np.ndarray,
                       merge_map: np.ndarray | None,
                       factorized: dict | None = None) -> RoutingTree | None:
    """The :class:`RoutingTree` of a fitted anonymizer, from its training rows and groups
    (``groups`` after any merge; ``merge_map`` maps the partition's groups to them;
    ``factorized``: ``pd.factorize`` of categorical columns of ``frame`` already done)."""
    name = type(anonymizer).__name__
    if name not in ("AccuracyGuidedAnonymizer", "MondrianAnonymizer", "RTreeAnonymizer",
                    "HilbertAnonymizer"):
        return None
    shown = _shown_categories(anonymizer)
    final = (lambda g: g) if merge_map is None else (lambda g: np.where(
        g >= 0, np.asarray(merge_map)[np.maximum(g, 0)], -1))
    enc = anonymizer.encoder_
    # each categorical column factorized once, for the encoder's codes, the build and the check
    cat_cols = [c for c in dict.fromkeys([*enc.categorical, *anonymizer.categorical_])
                if c in frame.columns]
    factorized = dict(factorized or {})
    for c in cat_cols:
        if c not in factorized:
            factorized[c] = pd.factorize(frame[c], use_na_sentinel=True)
    with enc.memoize(frame, factorized):
        spec = None
        if name == "AccuracyGuidedAnonymizer":
            spec = _ag_spec(anonymizer, frame, final)
        elif name == "MondrianAnonymizer":
            spec = _mondrian_spec(anonymizer, frame, final)
        elif name == "RTreeAnonymizer":
            spec = _rtree_spec(anonymizer, frame, final)
        if spec is None:
            spec = _fit_partition_tree(anonymizer, frame, groups)
    rt, summary, uniques = _build(frame, spec["columns"], spec["categorical"], spec.get("E"),
                                  spec["efeat_col"], spec["tree"], shown,
                                  leaf=spec.get("leaf"), factorized=factorized,
                                  distinct=getattr(enc, "values_", None))
    _check_routes(rt, frame, groups, summary, uniques)
    return rt


def _shown_categories(anonymizer: Any) -> dict:
    reps = anonymizer.representatives_ if "representatives_" in anonymizer.__dict__ else None
    out: dict = {}
    if reps is None:
        return out
    for c in anonymizer.categorical_:
        if c in reps.columns:
            out[c] = {_plain(v) for v in reps[c].dropna().tolist()}
    return out


def _ag_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict:
    enc = m.encoder_
    columns = list(enc.columns)
    # the rows' leaves in the first tree and in the refinement, as the fit found them
    fit_leaf, fit_refined = m.__dict__.pop("_fit_leaves", (None, None))
    if fit_leaf is not None and len(fit_leaf) != frame.shape[0]:
        fit_leaf = fit_refined = None
    if m.tree_method_ == "exact":
        # the one-hot view in float32, as sklearn compares it: its own apply gives the leaves
        parts = _sklearn_parts(m.tree_)
        efeat = _onehot_columns(enc, columns)
        E = None if fit_leaf is not None else enc.onehot(frame)
        leaf = np.asarray(fit_leaf if fit_leaf is not None else m.tree_.apply(E),
                          dtype=np.int64)
        w1 = int(m.tree_.n_features_in_)
        parts["mask_offset"] = np.full(parts["feature"].size, -1, dtype=np.int64)
        parts["flat"] = np.zeros(0, dtype=bool)
    else:
        E = B = None
        if fit_leaf is None or (m.__dict__.get("refine_tree_") is not None
                                and fit_refined is None):
            B, _, _ = enc.bins(frame)
            E = B
        w1 = len(columns)
        t = m.tree_
        parts = {"feature": np.asarray(t.feature_, dtype=np.int64),
                 "threshold": np.asarray(t.threshold_, dtype=np.float64),
                 "left": np.asarray(t.children_left_, dtype=np.int64),
                 "right": np.asarray(t.children_right_, dtype=np.int64),
                 "mask_offset": np.asarray(t.offset_, dtype=np.int64),
                 "flat": np.asarray(t.flat_, dtype=bool)}
        efeat = np.arange(len(columns), dtype=np.int64)
        leaf = np.asarray(fit_leaf, dtype=np.int64) if fit_leaf is not None else \
            encoded_leaves(B, parts["feature"], parts["threshold"], parts["mask_offset"],
                           parts["flat"], parts["left"], parts["right"])
    l2g = np.asarray(m.leaf_to_group_, dtype=np.int64)
    leaf_group = l2g.copy()
    refine = m.__dict__.get("refine_tree_")
    if refine is None:
        parts["group"] = np.where(parts["left"] >= 0, -1, final(leaf_group))
        return {"leaf": leaf, "efeat_col": efeat, "tree": parts, "columns": columns,
                "categorical": list(enc.categorical)}
    # graft the refinement tree under each leaf of the first tree (its roots are the groups)
    n1 = parts["feature"].size
    pos = {c: j for j, c in enumerate(columns)}
    efeat = np.concatenate([efeat, np.array([pos[c] for c in m.qi_], dtype=np.int64)])
    r = refine
    rf = np.asarray(r.feature_, dtype=np.int64)
    rl = np.asarray(r.children_left_, dtype=np.int64)
    rr = np.asarray(r.children_right_, dtype=np.int64)
    roff = np.asarray(r.offset_, dtype=np.int64)
    r2g = np.asarray(m.refined_leaf_to_group_, dtype=np.int64)
    flat1 = parts["flat"]
    feature = np.concatenate([parts["feature"], np.where(rf >= 0, rf + w1, -1)])
    threshold = np.concatenate([parts["threshold"], np.asarray(r.threshold_, dtype=np.float64)])
    left = np.concatenate([parts["left"], np.where(rl >= 0, rl + n1, -1)])
    right = np.concatenate([parts["right"], np.where(rr >= 0, rr + n1, -1)])
    moff = np.concatenate([parts["mask_offset"], np.where(roff >= 0, roff + flat1.size, -1)])
    flat = np.concatenate([flat1, np.asarray(r.flat_, dtype=bool)])
    group = np.concatenate([np.full(n1, -1, dtype=np.int64),
                            np.where(rf >= 0, -1, final(r2g))])
    # each first-tree leaf becomes its group's refinement root (one leaf per group)
    leaves1 = np.flatnonzero(parts["feature"] < 0)
    g = l2g[leaves1]
    group[leaves1[g < 0]] = -1
    lv, src = leaves1[g >= 0], n1 + g[g >= 0]
    feature[lv], threshold[lv], moff[lv] = feature[src], threshold[src], moff[src]
    left[lv], right[lv], group[lv] = left[src], right[src], group[src]
    feature[src] = -1  # the copied root is no longer reached
    if fit_refined is not None:  # a refinement root is its first-tree leaf, grafted
        r = np.asarray(fit_refined, dtype=np.int64)
        leaf = np.where(r == l2g[leaf], leaf, n1 + r)
    else:  # rows go on from their first-tree leaf down the refinement, reading the QIs' bins
        if m.tree_method_ == "hist" and list(m.qi_) == columns and E is not None:
            qB = E  # the tree's bins are the QIs' bins
        else:
            qB, _, _ = enc.bins(frame, columns=m.qi_)
        leaf = encoded_leaves(qB, feature, threshold, moff, flat, left, right, init=leaf,
                              col_offset=w1)
    tree = {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "mask_offset": moff, "flat": flat, "group": group}
    return {"leaf": leaf, "efeat_col": efeat, "tree": tree, "columns": columns,
            "categorical": list(enc.categorical)}


def _mondrian_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict | None:
    t = m.tree_
    kind = np.asarray(t.kind_, dtype=np.int64)
    feature = np.asarray(t.feature_, dtype=np.int64)
    fit_leaf = m.__dict__.pop("_fit_leaves", None)  # each row's leaf, as the fit found it
    if (kind[feature >= 0] != 0).any():
        return None  # relaxed or hierarchy cuts: learnt as a tree of pure leaves
    if fit_leaf is not None and len(fit_leaf) == frame.shape[0]:
        spec = {"leaf": np.asarray(fit_leaf, dtype=np.int64)}
    else:
        spec = {"E": m._values(frame, "error")}
    off = np.asarray(t.child_offset_, dtype=np.int64)
    nodes = np.asarray(t.child_nodes_, dtype=np.int64)
    inner = feature >= 0
    padded = np.append(nodes, [-1, -1])  # a tree without cuts has no child array
    left = np.where(inner, padded[np.where(inner, off, nodes.size)], -1)
    right = np.where(inner, padded[np.where(inner, off + 1, nodes.size)], -1)
    l2g = np.asarray(m.leaf_to_group_, dtype=np.int64)
    tree = {"feature": feature, "threshold": np.asarray(t.threshold_, dtype=np.float64),
            "left": left, "right": right, "group": np.where(inner, -1, final(l2g))}
    return {**spec, "efeat_col": np.arange(len(m.qi_), dtype=np.int64), "tree": tree,
            "columns": list(m.qi_), "categorical": list(m.categorical_)}


def _rtree_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict:
    tree = m._tree
    fit_leaf = m.__dict__.pop("_fit_leaves", None)  # each row's leaf, as the fit found it
    if fit_leaf is not None and len(fit_leaf) == frame.shape[0]:
        spec = {"leaf": np.asarray(fit_leaf, dtype=np.int64)}
    else:
        spec = {"E": np.asarray(m._grid.ranks(frame, "error"))}  # read as float64 one by one
    axis = np.asarray(tree["axis"], dtype=np.int64)
    inner = axis >= 0
    parts = {"feature": axis, "threshold": np.asarray(tree["thr"], dtype=np.float64),
             "left": np.asarray(tree["left"], dtype=np.int64),
             "right": np.asarray(tree["right"], dtype=np.int64),
             "group": np.where(inner, -1, final(np.asarray(tree["group"], dtype=np.int64)))}
    return {**spec, "efeat_col": np.arange(len(m.qi_), dtype=np.int64), "tree": parts,
            "columns": list(m.qi_), "categorical": list(m.categorical_)}
