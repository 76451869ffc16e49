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

__all__ = ["group_order", "numeric_group_medians"]

#: rows per block of the in-memory passes of :func:`numeric_group_medians`
_BLOCK = 1 << 20


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


def numeric_group_medians(
    size: np.ndarray, *, rows: tuple | None = None, histogram: tuple | None = None,
    order: np.ndarray | None = None, g_sorted: np.ndarray | None = None,
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
      bins), no comparison sort of all rows.
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
        # the same counts, gathered in group order (1-2 bytes a row), for one block of
        # whole groups at a time: neither the (group, bin) codes of every row nor the
        # (group x bin) table of every group (up to 4 of them a row) is held at once
        row_start = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(size, out=row_start[1:])
        lo_bin = np.empty(n_groups, dtype=np.int64)
        hi_bin = np.empty(n_groups, dtype=np.int64)
        before = np.empty(n_groups, dtype=np.int64)
        g0 = 0
        while g0 < n_groups:
            g1 = int(np.searchsorted(row_start, row_start[g0] + _BLOCK, side="right")) - 1
            g1 = min(max(g1, g0 + 1), n_groups)
            s, e = int(row_start[g0]), int(row_start[g1])
            if g_sorted is not None:
                key = g_sorted[s:e] - g0
            else:  # the block's group ids, from the sizes (no n-row array of them is needed)
                key = np.repeat(np.arange(g1 - g0, dtype=np.int64), size[g0:g1])
            key *= n_bins
            key += b.take(order[s:e])
            cum = np.bincount(key, minlength=(g1 - g0) * n_bins).reshape(g1 - g0, n_bins)
            del key
            lo_bin[g0:g1], hi_bin[g0:g1], before[g0:g1] = _middle_bins(
                cum, lo_pos[g0:g1], hi_pos[g0:g1])
            g0 = g1
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
        by = np.lexsort((v, g))
        g, v = g[by], v[by]
        start = np.searchsorted(g, np.flatnonzero(hard), side="left")
        h = np.flatnonzero(hard)
        lo[h] = v[start + lo_pos[h] - before[h]]
        hi[h] = v[start + hi_pos[h] - before[h]]
    return (lo + hi) / 2


def _middle_bins(cum: np.ndarray, lo_pos: np.ndarray, hi_pos: np.ndarray) -> tuple:
    """From the (group x bin) counts ``cum`` (made cumulative here, in place): the bin of each
    group's lower and upper middle positions, and the rows of the group before the lower
    one's bin."""
    np.cumsum(cum, axis=1, out=cum)
    lo_bin = (cum <= lo_pos[:, None]).sum(axis=1)  # bins wholly before the position
    hi_bin = (cum <= hi_pos[:, None]).sum(axis=1)
    before = np.where(lo_bin > 0, cum[np.arange(cum.shape[0]), np.maximum(lo_bin - 1, 0)], 0)
    return lo_bin, hi_bin, before
