"""The one per-group median of a numeric quasi-identifier, for every engine.

The in-memory pipeline (:mod:`anonml.anonymize._pipeline`, exact) and the out-of-core engine's
kernels (:mod:`anonml.engine._kernels`, at bin resolution) both call
:func:`numeric_group_medians`; it lives here, below both, so that the engine imports the
in-memory package and never the other way round.

References
----------
Goldsteen, A., Ezov, G., Shmelkin, R., Moffie, M., & Farkash, A. (2022). Anonymizing machine
learning models. DPM/CBT 2021, LNCS 13140, Sec. 3.2 (the representative's centre).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["group_block_counts", "group_order", "in_group_order", "item_dtype",
           "numeric_group_medians"]

#: rows per block of the in-memory passes of :func:`numeric_group_medians`
_BLOCK = 1 << 20
#: rows per block of :func:`in_group_order`'s transposition (kept in the cache between layouts)
_T_BLOCK = 1 << 16


def group_order(groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Stable order of the rows by group, by radix sort (numpy sorts 16-bit keys by radix):
    one pass below 65,536 groups, two (low then high 16 bits) above. Linear in the rows."""
    if n_groups <= 1 << 16:
        return np.argsort(groups.astype(np.uint16), kind="stable")
    if n_groups > 1 << 32:  # pragma: no cover - more groups than 32 bits: a plain sort
        return np.argsort(groups, kind="stable")
    order = np.argsort((groups & 0xFFFF).astype(np.uint16), kind="stable")
    high = (groups >> 16).astype(np.uint16).take(order)
    return order.take(np.argsort(high, kind="stable"))


def item_dtype(nbytes: int) -> np.dtype:
    """The type that moves ``nbytes`` bytes a row as one item: the narrowest native one that
    holds them (4, 8 or 16 bytes; a ``take`` or scatter of it is as fast as a number's), else
    a void type of exactly ``nbytes``. Shared by :func:`in_group_order` and the Mondrian
    tree's rows (:mod:`anonml.anonymize._hist_mondrian`)."""
    if nbytes <= 4:
        return np.dtype(np.uint32)
    if nbytes <= 8:
        return np.dtype(np.uint64)
    if nbytes <= 16:
        return np.dtype(np.complex128)
    return np.dtype((np.void, nbytes))


def in_group_order(columns: list, dtype: type, order: np.ndarray) -> np.ndarray:
    """Small-integer columns (bins, codes: each ``n`` long, every value fitting ``dtype``)
    taken in ``order``: a (len(columns), n) array of ``dtype``, each row contiguous.

    Why: taking one column at a time in the rows' group order reads a random cache line per row
    and column (at 20M rows each 1-byte column is 20 MB, past the cache). Here the columns are
    first packed side by side, one item of 4, 8 or 16 bytes a row (a native type), taken by one
    ``take`` a block, then transposed back a block at a time (the block stays in the cache):
    one such read a row for all of them (``benchmarks/results/session22``)."""
    c = len(columns)
    n = int(columns[0].shape[0]) if c else 0
    out = np.empty((c, n), dtype=dtype)
    if not c or not n:
        return out
    isz = np.dtype(dtype).itemsize
    carrier = item_dtype(c * isz)
    width = carrier.itemsize // isz
    packed = np.zeros((n, width), dtype=dtype)  # (the padding is zeros, never read)
    for j, col in enumerate(columns):
        packed[:, j] = col
    src = packed.view(carrier).reshape(n)
    buf = np.empty(_T_BLOCK, dtype=carrier)
    for s in range(0, n, _T_BLOCK):
        e = min(s + _T_BLOCK, n)
        np.take(src, order[s:e], out=buf[:e - s])
        out[:, s:e] = buf[:e - s].view(dtype).reshape(e - s, width)[:, :c].T
    return out


def group_block_counts(size: np.ndarray, codes, n_codes: int,
                       g_sorted: np.ndarray | None = None, each=None) -> np.ndarray | None:
    """The (group x code) counts of ``codes`` given in group order (``size`` rows per group,
    groups 0 .. len(size) - 1 in turn; anything sliceable by ``[s:e]``), counted one block of
    whole groups at a time, walking memory forwards: neither the (group, code) cells of every
    row nor, with ``each``, the table of every group is held at once. ``g_sorted``
    (optional): each row's group, in that order.

    Without ``each``: returns the (n_groups, n_codes) table of int64 counts. With ``each``:
    calls ``each(g0, g1, counts)`` for every block of groups ``g0 .. g1 - 1`` (its (g1 - g0,
    n_codes) counts) and returns None."""
    n_groups = int(size.shape[0])
    row_start = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(size, out=row_start[1:])
    out = None if each is not None else np.empty((n_groups, n_codes), dtype=np.int64)
    g0 = 0
    while g0 < n_groups:
        g1 = int(np.searchsorted(row_start, row_start[g0] + _BLOCK, side="right")) - 1
        g1 = min(max(g1, g0 + 1), n_groups)
        s, e = int(row_start[g0]), int(row_start[g1])
        if g_sorted is not None:
            key = g_sorted[s:e] - g0
        else:  # the block's group ids, from the sizes (no n-row array of them is needed)
            key = np.repeat(np.arange(g1 - g0, dtype=np.int64), size[g0:g1])
        key *= n_codes
        key += codes[s:e]
        cnt = np.bincount(key, minlength=(g1 - g0) * n_codes).reshape(g1 - g0, n_codes)
        del key
        if each is None:
            out[g0:g1] = cnt
        else:
            each(g0, g1, cnt)
        g0 = g1
    return out


def numeric_group_medians(
    size: np.ndarray, *, rows: tuple | None = None, histogram: tuple | None = None,
    order: np.ndarray | None = None, g_sorted: np.ndarray | None = None,
    bins: tuple | None = None,
) -> np.ndarray:
    """The per-group median of one numeric QI, for every engine (the representative rules'
    centre, Goldsteen et al., 2022, Sec. 3.2). ``size``: rows per group (``n_groups`` long).

    Both paths find each group's middle position(s), ``(size - 1) // 2`` and ``size // 2``, in
    the cumulative histogram of the group over the column's bins (the search of
    histogram-based trees); they differ in what they read:

    * **In memory, exact** (``rows=(z, values, thresholds, groups)``): the median of ``z``
      in each group, equal to pandas' ``groupby(groups).median()`` (the mean of the two middle
      values of an even group). ``z`` is an increasing function of the raw ``values`` (their
      z-scores), so the raw values' bins (``thresholds``) order ``z`` too. A bin that holds
      one distinct value gives the median at once (always so when the column has at most
      ``max_bins`` distinct values); only the rows of the few groups whose middle falls in a
      bin of several values are sorted. ``order`` (the rows in group order,
      :func:`group_order`) makes the counting walk memory forwards, one block of whole
      groups at a time (``g_sorted``, ``groups[order]``, optional: else each block's group
      ids come from ``size``); the result does not depend on them. Cost: O(rows + groups x
      bins), no comparison sort of all rows. ``bins`` (optional, with ``order``): the rows'
      bins of ``values`` by ``thresholds``, in row order and in ``order``
      (:func:`in_group_order`), if the caller has them.
    * **Out of core (Dask), at bin resolution** (``histogram=(keys, counts, n_bins,
      bin_values)``, the merged sparse histogram of :func:`group_bin_counts`, keys
      ``group * n_bins + bin`` sorted): the value (``bin_values``) of the bin that holds the
      lower middle position, ``(size - 1) // 2``; no row is read. Exact when every bin holds
      one distinct value (at most ``max_bins`` of them), else within the median's bin.
    """
    n_groups = int(np.asarray(size).shape[0])
    if histogram is not None:
        keys, cnt, n_bins, bin_values = histogram
        g = keys // int(n_bins)
        b = keys % int(n_bins)
        cum = np.cumsum(cnt)  # keys are sorted by group, then bin
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        base = (cum - cnt)[starts]
        within = cum - np.repeat(base, np.diff(np.r_[starts, g.size]))
        # the lower middle: the first bin whose cumulative count within the group reaches half
        idx = np.flatnonzero(within * 2 >= size[g])
        gi = g[idx]
        idx = idx[np.r_[True, gi[1:] != gi[:-1]]]
        med_bin = np.zeros(n_groups, dtype=np.int64)
        med_bin[g[idx]] = b[idx]
        return bin_values[med_bin]
    z, values, thresholds, groups = rows
    n_bins = len(thresholds) + 1
    if n_groups * n_bins > 4 * z.size:  # tiny groups: the table would outgrow the rows
        return pd.Series(z).groupby(groups, sort=True).median().to_numpy()
    # (the passes over the rows below, but the count, go one block of rows at a time, so
    # that their temporaries of 8 bytes a row are not made for every row at once; the same
    # numbers)
    n = z.size
    blocks = [(s, min(s + _BLOCK, n)) for s in range(0, n, _BLOCK)]
    if bins is not None and order is not None:
        b, b_sorted = bins
    else:
        b_sorted = None
        b = np.empty(n, dtype=np.uint8 if n_bins <= 256 else np.uint16 if n_bins <= 1 << 16
                     else np.int64)
        for s, e in blocks:
            b[s:e] = np.searchsorted(thresholds, values[s:e], side="left")
    # one z per bin (that of its first row), and which bins hold more than one value
    first = np.full(n_bins, -1, dtype=np.int64)
    for s, e in reversed(blocks):  # the last write, i.e. the first row, wins
        first[b[s:e][::-1]] = np.arange(e - 1, s - 1, -1)
    occupied = first >= 0
    bin_z = np.zeros(n_bins)
    bin_z[occupied] = z[first[occupied]]
    multi = np.zeros(n_bins, dtype=bool)
    for s, e in blocks:
        bb = b[s:e]
        multi[bb[z[s:e] != bin_z[bb]]] = True

    lo_pos, hi_pos = (size - 1) // 2, size // 2
    if order is None:
        key = groups * n_bins + b
        cum = np.bincount(key, minlength=n_groups * n_bins).reshape(n_groups, n_bins)
        del key
        lo_bin, hi_bin, before = _middle_bins(cum, lo_pos, hi_pos)
        del cum
    else:
        # the same counts, in group order (1-2 bytes a row), for one block of whole groups
        # at a time: neither the (group, bin) codes of every row nor the (group x bin) table
        # of every group (up to 4 of them a row) is held at once
        if b_sorted is None:
            b_sorted = _Taken(b, order)
        lo_bin = np.empty(n_groups, dtype=np.int64)
        hi_bin = np.empty(n_groups, dtype=np.int64)
        before = np.empty(n_groups, dtype=np.int64)

        def middle(g0, g1, cum):
            lo_bin[g0:g1], hi_bin[g0:g1], before[g0:g1] = _middle_bins(
                cum, lo_pos[g0:g1], hi_pos[g0:g1])

        group_block_counts(size, b_sorted, n_bins, g_sorted, each=middle)
    lo, hi = bin_z[lo_bin], bin_z[hi_bin]
    hard = multi[lo_bin] | multi[hi_bin]
    if hard.any():
        # the rows of the hard groups in their middle bins, sorted by (group, z)
        mask = np.empty(n, dtype=bool)
        for s, e in blocks:
            g = groups[s:e]
            mask[s:e] = hard[g] & (b[s:e] >= lo_bin[g]) & (b[s:e] <= hi_bin[g])
        rows = np.flatnonzero(mask)
        del mask
        g, v = groups[rows], z[rows]
        # by (group, z): z's order, then a stable radix sort by group (2.8x faster than a
        # lexsort of the two keys; rows equal in both are interchangeable)
        by = np.argsort(v)
        by = by.take(group_order(g.take(by), n_groups))
        g, v = g[by], v[by]
        start = np.searchsorted(g, np.flatnonzero(hard), side="left")
        h = np.flatnonzero(hard)
        lo[h] = v[start + lo_pos[h] - before[h]]
        hi[h] = v[start + hi_pos[h] - before[h]]
    return (lo + hi) / 2


class _Taken:
    """``array.take(order)``, read a slice at a time (``[s:e]``), never made whole."""

    def __init__(self, array: np.ndarray, order: np.ndarray) -> None:
        self.array, self.order = array, order

    def __getitem__(self, sl: slice) -> np.ndarray:
        return self.array.take(self.order[sl])


def _middle_bins(cum: np.ndarray, lo_pos: np.ndarray, hi_pos: np.ndarray) -> tuple:
    """From the (group x bin) counts ``cum`` (made cumulative here, in place): the bin of each
    group's lower and upper middle positions, and the rows of the group before the lower
    one's bin."""
    np.cumsum(cum, axis=1, out=cum)
    lo_bin = (cum <= lo_pos[:, None]).sum(axis=1)  # bins wholly before the position
    hi_bin = (cum <= hi_pos[:, None]).sum(axis=1)
    before = np.where(lo_bin > 0, cum[np.arange(cum.shape[0]), np.maximum(lo_bin - 1, 0)], 0)
    return lo_bin, hi_bin, before
