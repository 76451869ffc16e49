"""The ``"mondrian"`` criterion of :class:`~anonml.anonymize._hist_tree.HistTree`, grown on rows
kept contiguous per node.

Every node of at least ``2 * min_samples_leaf`` rows is cut on the feature of widest normalized
spread that admits a cut, at the most balanced allowable position (strict median partitioning,
LeFevre, DeWitt & Ramakrishnan, 2006); see :mod:`anonml.anonymize._hist_tree`. The cuts, the
node numbering and the leaves are those of the dense per-level search
(:meth:`HistTree._mondrian_split` through :func:`choose_splits`), bit for bit; only the way
they are computed differs.

Why: anonml refines the accuracy-guided tree's leaves with this tree, one root per leaf. The
leaves grow with the rows, so the refinement's rows pass through more levels, and counting every
feature over a (node × bin) table at every level cost ~6 passes over the rows per feature and
level. Here, as in LightGBM (Ke et al., 2017, "LightGBM: A Highly Efficient Gradient Boosting
Decision Tree", NeurIPS), the rows of a node are kept contiguous, with their bins (a row-major
copy of the rows still splitting: a row's bins and its id as one item of 8 or 16 bytes, a
native type, where they fit), and partitioned at each split (a stable counting scatter, left
child then right, one scatter of the items a level; per-node values reach the rows by
``np.repeat``, not by gathers). Then:

* the spread of a numeric feature in every node is its ``maximum.reduceat`` minus its
  ``minimum.reduceat`` over the node's slice (of a feature-major copy of the bins, made a block
  at a time); of a categorical one (codes below 64), the popcount of the ``bitwise_or.reduceat``
  of ``1 << code``: no histogram at all;
* the cut is searched only on each node's widest feature, from one (node, bin) count of that
  feature's value per row; the few nodes whose widest feature admits no cut (fewer than k rows on
  one side of every position) try their next widest, and so on (first feature on ties, as the
  dense search);
* rows of nodes that stop (unsplit, or children under ``2 * min_samples_leaf`` rows) leave the
  working arrays at once.
"""

from __future__ import annotations

import numpy as np

from anonml.anonymize._medians import group_order, item_dtype

_I32 = 2**31 - 1
_BLOCK = 1 << 20  # rows a block of the row-major copies
_T_BLOCK = 1 << 16  # rows a block of the feature-major copy of the spreads


def fit_mondrian(B, is_cat, n_bins, init, k, max_depth, builder):
    """Grow the Mondrian tree on bins ``B`` (n × F) from the roots ``init`` (or one root).

    Parameters
    ----------
    B : ndarray of ints, shape (n, F), or a one-item list holding it
        Bins (numeric: quantile bins; categorical: codes), each below its ``n_bins``. Handed
        over in a list (the caller keeping no other reference), they are released once the
        rows that may split have their row-major copy.
    is_cat, n_bins : ndarray, shape (F,)
    init : ndarray of ints or None
        Root (0 .. builder's roots - 1) of each row.
    k : int
        ``min_samples_leaf``.
    max_depth : int or None
    builder : TreeBuilder
        Holds the roots; the splits are added to it level by level, as the dense search does.

    Returns
    -------
    ndarray of int32 (int64 when the node ids do not fit), shape (n,)
        The leaf of every row.
    """
    handed = isinstance(B, list)  # [bins], the caller's only reference: released below
    if handed:
        B = B.pop()
    n, F = B.shape
    n_roots = len(builder.feature)
    roots = np.zeros(n, dtype=np.int64) if init is None else np.asarray(init, dtype=np.int64)
    # rows of roots that never split stay at their root (node ids in 4 bytes when they fit:
    # a tree grown from R roots on n rows has fewer than R + 2n nodes)
    leaf_of_row = roots.astype(np.int32 if n_roots + 2 * n < _I32 else np.int64)
    if not n:
        return leaf_of_row
    # (positions in the rows' items, up to max(16, F bins + 4) bytes a row, in 4 bytes if they fit)
    it = np.int32 if n * max(16, F * B.dtype.itemsize + 4) < _I32 else np.int64
    cnt = np.bincount(roots, minlength=n_roots)
    can = cnt >= 2 * k
    frontier = np.flatnonzero(can)
    if not frontier.size or not F:
        return leaf_of_row
    # the rows of the roots that may split, grouped by root (radix sort of the root positions)
    sel = np.flatnonzero(can.take(roots))
    pos = (np.cumsum(can) - 1).take(roots.take(sel))
    rows = sel.take(group_order(pos, frontier.size)).astype(it)
    del sel, pos
    # each such row as one item: its bins (row-major), then its row id, in a native type of
    # 8 or 16 bytes where they fit (moved by one scatter a level, as fast as a float's)
    b_dtype = B.dtype
    wb, wr = F * b_dtype.itemsize, np.dtype(it).itemsize
    carrier = item_dtype(wb + wr)  # (at least 5 bytes: the bins, then a 4 or 8-byte row id)
    pay = np.empty(rows.size, dtype=carrier)
    P8 = pay.view(np.uint8).reshape(rows.size, carrier.itemsize)
    Bv = np.ascontiguousarray(B).view(np.dtype((np.void, wb))).ravel()
    for s in range(0, rows.size, _BLOCK):
        P8[s:s + _BLOCK, :wb] = Bv.take(rows[s:s + _BLOCK]).view(np.uint8).reshape(-1, wb)
    _row_ids(pay, wb, it)[:] = rows
    del Bv, rows
    if handed:
        del B  # (the rows that may split have their copy)
    cnt_f = cnt.take(frontier)
    n_bins = np.asarray(n_bins).astype(np.int64)
    is_cat = np.asarray(is_cat, dtype=bool)
    NB = int(n_bins.max(initial=1))
    depth = 0
    while frontier.size and (max_depth is None or depth < max_depth):
        A = frontier.size
        m = pay.size
        Bp, flat_b, stride = _bins_view(pay, wb, b_dtype)
        starts = np.zeros(A, dtype=np.int64)
        np.cumsum(cnt_f[:-1], out=starts[1:])
        spread = _spreads(Bp, starts, cnt_f, is_cat, n_bins, it)  # (A, F)
        best_gain = np.full(A, -np.inf)
        best_f = np.full(A, -1, dtype=np.int64)
        best_pos = np.zeros(A, dtype=np.int64)
        todo = np.arange(A)
        f_first = v_first = None
        while todo.size:
            S = spread.take(todo, axis=0)
            f_try = S.argmax(1)  # widest spread, first feature on ties
            g = S[np.arange(todo.size), f_try]
            first_try = f_first is None
            if first_try:  # every node's widest feature, and its rows' bins
                f_first = f_try
                v_first = _values(flat_b, stride, m, starts, cnt_f, todo, f_try, it, True)[1]
            live = np.isfinite(g)
            todo, f_try, g = todo[live], f_try[live], g[live]
            if not todo.size:
                break
            if first_try and todo.size == A:
                v = v_first
            else:
                v = _values(flat_b, stride, m, starts, cnt_f, todo, f_try, it)[1]
            cut, ok = _cuts(v, cnt_f.take(todo), k, NB)
            del v
            done = todo[ok]
            best_gain[done], best_f[done], best_pos[done] = g[ok], f_try[ok], cut[ok]
            todo, f_try = todo[~ok], f_try[~ok]
            spread[todo, f_try] = -np.inf  # no cut on it: try the next widest
        split = np.isfinite(best_gain)
        if not split.any():
            break
        child_left = builder.add_children(frontier, split, best_f, best_pos, {}, is_cat, n_bins)

        # partition: go left when the bin is <= the cut (categorical cuts are in code order)
        # (the bins read for the first try serve every node whose widest feature was cut)
        other = np.flatnonzero(split & (best_f != f_first))
        v = v_first
        if other.size:
            at, v_other = _values(flat_b, stride, m, starts, cnt_f, other,
                                     best_f.take(other), it)
            v = v_first.copy()
            v[at] = v_other
            del at, v_other
        del Bp, flat_b, v_first
        # (per-node values reach the rows by sequential fills, np.repeat, not by gathers)
        left = v <= np.repeat(best_pos.astype(v.dtype), cnt_f)
        del v
        c = np.cumsum(left, dtype=it)
        ends = starts + cnt_f - 1
        n_left = c.take(ends).astype(np.int64)
        c -= left  # left rows before each row
        base = c.take(starts).astype(np.int64)  # left rows before each node
        n_left -= base
        # the children blocks, left then right per node; the kept ones (split, and at least 2k
        # rows) first, in order, then the others, whose rows stop there
        block_cnt = np.stack([n_left, cnt_f - n_left], 1).ravel()
        block_keep = np.repeat(split, 2) & (block_cnt >= 2 * k)
        kept_cnt = np.where(block_keep, block_cnt, 0)
        gone_cnt = block_cnt - kept_cnt
        m_new = int(kept_cnt.sum())
        block_start = np.where(block_keep, np.cumsum(kept_cnt) - kept_cnt,
                               m_new + np.cumsum(gone_cnt) - gone_cnt)
        # a left row goes to its block's start + the left rows before it in its node
        # (c - base); a right row to its block's start + its position in the node - those
        dest = np.repeat((block_start[1::2] - starts + base).astype(it), cnt_f)
        dest += np.arange(m, dtype=it)
        dest -= c
        c += np.repeat((block_start[0::2] - base).astype(it), cnt_f)
        # dest += left * (c - dest): a select without branches (left is a coin toss per row)
        c -= dest
        c *= left
        dest += c
        del c, left
        new_pay = np.empty(m, dtype=carrier)
        new_pay[dest] = pay
        del dest, pay
        if m_new < m:  # the rows that stop: the leaf of each block not kept
            children = np.stack([child_left, child_left + 1], 1).ravel()
            block_leaf = np.where(np.repeat(split, 2), children, np.repeat(frontier, 2))
            gone = ~block_keep
            leaf_of_row[_row_ids(new_pay[m_new:], wb, it)] = np.repeat(block_leaf[gone],
                                                                      gone_cnt[gone])
        pay = new_pay[:m_new]
        del new_pay
        # the new frontier: the kept children, in node order
        children = np.stack([child_left, child_left + 1], 1).ravel()
        frontier = children[block_keep]
        cnt_f = block_cnt[block_keep]
        depth += 1
    if frontier.size and pay.size:
        leaf_of_row[_row_ids(pay, wb, it)] = np.repeat(frontier, cnt_f)
    return leaf_of_row


def _bins_view(pay, wb, b_dtype):
    """The bins of the rows in ``pay``: an (m, F) view, the flat view and its stride a row."""
    m = pay.size
    P8 = pay.view(np.uint8).reshape(m, pay.dtype.itemsize)
    isz = b_dtype.itemsize
    Bp = P8[:, :wb].view(b_dtype)
    flat_b = pay.view(np.uint8).view(b_dtype)  # (m * itemsize / isz,) items
    return Bp, flat_b, pay.dtype.itemsize // isz


def _row_ids(pay, wb, it):
    """The row ids of the items ``pay`` (after their bins)."""
    P8 = pay.view(np.uint8).reshape(pay.size, pay.dtype.itemsize)
    return P8[:, wb:wb + np.dtype(it).itemsize].view(it)[:, 0]


def _spreads(Bp, starts, cnt_f, is_cat, n_bins, it):
    """Normalized spread of every feature in every node (``-inf`` where a feature has fewer than
    two bins), as :meth:`HistTree._mondrian_split`: numeric ``(last bin - first bin) / (bins -
    1)``, categorical ``(categories present - 1) / max(codes - 3, 1)``.

    The bins are first copied feature-major, a block of rows at a time (a block's rows stay in
    the cache between the two layouts): the reductions then read contiguous memory, ~6x faster
    than a column read across the rows' items."""
    A = starts.size
    m, F = Bp.shape
    out = np.full((A, F), -np.inf)
    used = [f for f in range(F) if int(n_bins[f]) >= 2]
    if not used:
        return out
    BT = np.empty((F, m), dtype=Bp.dtype)
    for s in range(0, m, _T_BLOCK):
        BT[:, s:s + _T_BLOCK] = Bp[s:s + _T_BLOCK].T
    num = [f for f in used if not is_cat[f]]
    if num:  # every numeric feature in one reduction a side
        sub = BT if len(num) == F else BT[num]
        hi = np.maximum.reduceat(sub, starts, axis=1).astype(np.int64)
        lo = np.minimum.reduceat(sub, starts, axis=1).astype(np.int64)
        del sub
        out[:, num] = ((hi - lo) / (n_bins[num] - 1)[:, None]).T
        del hi, lo
    node = None
    for f in used:
        if not is_cat[f]:
            continue
        nb = int(n_bins[f])
        col = BT[f]
        if nb <= 64:
            # 1 << code in the narrowest unsigned type that holds nb bits (a ufunc: a take
            # would first convert the codes to 8-byte indices)
            bt = np.uint8 if nb <= 8 else np.uint16 if nb <= 16 else (
                np.uint32 if nb <= 32 else np.uint64)
            bits = np.left_shift(bt(1), col, dtype=bt)
            present = np.bitwise_count(np.bitwise_or.reduceat(bits, starts)).astype(np.int64)
            del bits
        else:
            if node is None:
                node = np.repeat(np.arange(A, dtype=it), cnt_f)
            code = node.astype(np.int64) * nb + col
            present = (np.bincount(code, minlength=A * nb).reshape(A, nb) > 0).sum(1)
            del code
        out[:, f] = (present - 1) / max(nb - 3, 1)
    return out


def _values(flat_b, stride, m, starts, cnt_f, todo, f_node, it, every=False):
    """The rows of the nodes ``todo`` (their slices, concatenated: positions ``at``, or None for
    all rows with ``every``) and each one's bin on its node's feature ``f_node``, read from
    ``flat_b``, ``stride`` items a row."""
    T = todo.size
    c_t = cnt_f.take(todo)
    if every:  # every node: the rows in order
        at = None
        flat = np.arange(m, dtype=it)
    else:
        total = int(c_t.sum())
        first = np.zeros(T, dtype=np.int64)
        np.cumsum(c_t[:-1], out=first[1:])
        at = np.arange(total, dtype=it)
        at += np.repeat((starts.take(todo) - first).astype(it), c_t)
        flat = at.copy()
    if stride > 1:
        flat *= it(stride)
    flat += np.repeat(f_node.astype(it), c_t)
    return at, flat_b.take(flat)


def _cuts(v, c_t, k, NB):
    """The most balanced allowable cut of each node on its feature, from the bins ``v`` of its
    rows (the nodes' slices, ``c_t`` rows each, concatenated): the last bin on the left, and whether any position leaves
    k rows on each side. As :meth:`HistTree._mondrian_split`, read from the node's occupied bins
    only (a cut at an empty bin equals the cut at the last occupied bin before it, the first
    best position)."""
    T = c_t.size
    code = np.repeat(np.arange(0, T * NB, NB, dtype=np.int32 if T * NB < _I32 else np.int64),
                     c_t)  # the node's first cell, on each of its rows
    code += v
    counts = np.bincount(code, minlength=T * NB)
    del code
    cells = np.flatnonzero(counts)  # occupied cells, by node then bin
    c = counts.take(cells).astype(np.float64)
    del counts
    nd = cells // NB
    b = cells - nd * NB
    del cells
    new = np.empty(nd.size, dtype=bool)
    new[0] = True
    np.not_equal(nd[1:], nd[:-1], out=new[1:])
    seg_start = np.flatnonzero(new)
    seg = np.cumsum(new) - 1  # the node segment of each cell (every node has a cell)
    del new
    cum = np.cumsum(c)
    cum -= (cum - c).take(seg_start).take(seg)  # cumulative count within the node
    tot = c_t.astype(np.float64).take(nd)
    cut = np.zeros(T, dtype=np.int64)
    ok = np.zeros(T, dtype=bool)
    valid = np.flatnonzero((cum >= k) & (tot - cum >= k))
    if not valid.size:
        return cut, ok
    balance = -np.abs(2 * cum.take(valid) - tot.take(valid))
    vseg = seg.take(valid)
    vnew = np.r_[True, vseg[1:] != vseg[:-1]]
    top = np.maximum.reduceat(balance, np.flatnonzero(vnew))
    hits = valid[balance == top.take(np.cumsum(vnew) - 1)]  # each node's best balance
    hseg = seg.take(hits)
    best = hits[np.r_[True, hseg[1:] != hseg[:-1]]]  # first best cell of each node
    where = nd.take(best)
    cut[where] = b.take(best)
    ok[where] = True
    return cut, ok
