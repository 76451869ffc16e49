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
(:func:`~anonml.anonymize._routing_build._fit_partition_tree`), then rewritten the same way.

``transform`` of the training rows through the routing tree gives exactly the groups of
``fit_transform`` (every split separates the same training rows); a new row is routed by the
rounded thresholds.

This module holds the tree itself (its routing of rows) and the rule its thresholds follow;
:func:`anonml.anonymize._routing_build.anonymizer_routing` builds it from a fitted anonymizer.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["ROUTING_ATTRIBUTES", "RoutingTree", "roundest_in_gap"]

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


#: sub-gaps examined at once by :func:`_pieces`: its temporaries take ~300 bytes
#: per sub-gap, and a column with millions of distinct values cuts the gaps into millions
#: (8.5 million: 2.4 GB in one pass; 20 MB in runs of 65,536, and 27 % less CPU)
_SUB_GAPS_PER_PASS = 1 << 16


def _threshold_avoiding(lo: np.ndarray, hi: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each gap ``(lo, hi)`` between a node's training rows, the roundest number in it
    that equals no training value of the column at all (``values``: the column's distinct
    training values, sorted; rows of other nodes may hold values inside a node's gap).

    The gap's own roundest number (:func:`roundest_in_gap`) when it is no training value;
    only where it is one, the gap is cut at the training values inside it and the roundest
    of the pieces wins. The distributed engine follows the same rule (it finds the training
    values inside a gap only for the thresholds that hit one): one rule for both engines.
    Until session 21 every gap was cut first; that moved few thresholds (74 of 97,452 on
    Adult resampled to 20M rows), each still strictly inside its gap and no training value
    (BENCHMARKS.md, "Session 21").

    The gaps that are cut are independent of one another: they are taken in runs of about
    ``_SUB_GAPS_PER_PASS`` pieces, so that the memory does not grow with the rows."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    out = roundest_in_gap(lo, hi)
    if not values.size or not out.size:
        return out
    at = np.minimum(np.searchsorted(values, out), values.size - 1)
    hit = np.flatnonzero(values[at] == out)
    if hit.size:
        out[hit] = _pieces(lo[hit], hi[hit], values)
    return out


def _pieces(lo: np.ndarray, hi: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`_threshold_avoiding` by cutting each gap at the training values inside it: the
    roundest of the pieces (fewest significant digits, then nearest the gap's middle)."""
    i0 = np.searchsorted(values, lo, side="right")
    i1 = np.searchsorted(values, hi, side="left")
    n_sub = np.maximum(i1 - i0, 0) + 1
    if lo.size <= 1 or int(n_sub.sum()) <= _SUB_GAPS_PER_PASS:
        return _threshold_avoiding_run(lo, hi, values, i0, n_sub)
    out = np.empty(lo.size, dtype=np.float64)
    # cut the gaps where the running count of sub-gaps crosses a multiple of the pass size
    ends = np.cumsum(n_sub)
    cuts = np.unique(np.searchsorted(ends, np.arange(_SUB_GAPS_PER_PASS, int(ends[-1]),
                                                     _SUB_GAPS_PER_PASS), side="left") + 1)
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, lo.size]):
        if a < b:
            out[a:b] = _threshold_avoiding_run(lo[a:b], hi[a:b], values, i0[a:b], n_sub[a:b])
    return out


def _threshold_avoiding_run(lo: np.ndarray, hi: np.ndarray, values: np.ndarray,
                            i0: np.ndarray, n_sub: np.ndarray) -> np.ndarray:
    """:func:`_pieces` for some gaps, given the index ``i0`` of the first training value above
    each ``lo`` and the number of sub-gaps of each.

    A piece between two training values, ``(values[j - 1], values[j])``, is the same in every
    gap that holds it: its roundest number is found once per distinct ``j`` (at most one per
    distinct value), and only the two end pieces of each gap, which reach ``lo`` or ``hi``,
    are searched on their own. The winner of each gap (fewest digits, then nearest the gap's
    middle, then the first piece) is picked by minima over each gap's pieces, with no sort.
    A piece searched apart per gap grew faster than the rows, as the gaps hold more of other
    nodes' values (36 pieces a gap at 20M rows, 10 at 1M): 0.031 CPU s per 1M rows at 1M,
    0.088 at 20M; now 0.017 and 0.019 (BENCHMARKS.md, "Session 21")."""
    last = values.size - 1
    owner = np.repeat(np.arange(lo.size), n_sub)
    first = np.cumsum(n_sub) - n_sub
    rank = np.arange(owner.size) - first[owner]  # 0 .. n_sub - 1 within each gap
    inside = i0[owner] + rank  # index of the training value closing each sub-gap
    end = (rank == 0) | (rank == n_sub[owner] - 1)
    c = np.empty(owner.size)
    digits = np.empty(owner.size, dtype=np.int64)
    mid_j = inside[~end]  # pieces between two training values: one search per distinct j
    if mid_j.size:
        js, at = np.unique(mid_j, return_inverse=True)
        c_j, d_j = _roundest(values[js - 1], values[js])
        c[~end], digits[~end] = c_j[at], d_j[at]
    e = np.flatnonzero(end)
    oe, je = owner[e], inside[e]
    a = np.where(rank[e] == 0, lo[oe], values[np.clip(je - 1, 0, last)])
    b = np.where(rank[e] == n_sub[oe] - 1, hi[oe], values[np.clip(je, 0, last)])
    c[e], digits[e] = _roundest(a, b)
    with np.errstate(invalid="ignore"):
        mid = np.where(np.isfinite(lo) & np.isfinite(hi), lo / 2 + hi / 2, 0.0)
        dist = np.abs(c - mid[owner])
    dist = np.where(np.isfinite(dist), dist, np.inf)
    # fewest digits, then nearest the middle, then the first piece (a stable sort's order)
    fewest = np.minimum.reduceat(digits, first)
    dist = np.where(digits == fewest[owner], dist, np.inf)
    nearest = np.minimum.reduceat(dist, first)
    win = np.flatnonzero((digits == fewest[owner]) & (dist == nearest[owner]))
    best = win[np.r_[True, owner[win][1:] != owner[win][:-1]]]  # the first of each gap
    return c[best]


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
        n_vocab = np.zeros(len(is_cat_col), dtype=np.int64)
        for j in np.flatnonzero(is_cat_col):
            j = int(j)
            nodes = np.flatnonzero((feature == j) & (off >= 0))
            names: list = []
            for a, b in zip(off[nodes].tolist(), (off[nodes] + cnt[nodes]).tolist()):
                names.extend(cats[a:b])
            vocab[j] = pd.Index(pd.unique(pd.Series(names, dtype=object)), dtype=object)
            n_vocab[j] = len(vocab[j])
        # one slot per named vocabulary position and one for the missing value, per split
        nodes = np.flatnonzero(off >= 0)
        width = n_vocab[feature[nodes]] + 1
        member_off = np.full(feature.size, -1, dtype=np.int64)
        member_off[nodes] = np.cumsum(width) - width
        member = np.zeros(max(int(width.sum()), 1), dtype=bool)
        member[(member_off[nodes] + width - 1)[miss[nodes]]] = True
        for j, index in vocab.items():  # every split's names at once, per column
            mine = nodes[(feature[nodes] == j) & (cnt[nodes] > 0)]
            if not mine.size:
                continue
            names = [v for a, b in zip(off[mine].tolist(), (off[mine] + cnt[mine]).tolist())
                     for v in cats[a:b]]
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
