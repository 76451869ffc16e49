"""The segmentation step of :class:`~anonml.anonymize.HilbertAnonymizer`: cut the
Hilbert-sorted run of grid cells into groups of least total NCP.

    G. Ghinita, P. Karras, P. Kalnis & N. Mamoulis, "Fast data anonymization with low
    information loss", VLDB 2007, 758-769.

The input is the sorted run as runs of equal Hilbert index (:class:`_Runs`: row counts and
the runs' QI values); the output is the first run of every group. ``_dp`` is the exact dynamic
program (``method="dp"``), ``_greedy`` the paper's fast baseline (``method="greedy"``). The
curve, the grid and the estimator are in :mod:`anonml.anonymize._hilbert`, whose docstring
explains the ties (a cut never falls inside a grid cell).

Privacy models
--------------
With l-diversity or t-closeness (``self.model_`` not trivial) a segment is a candidate only if
``model_.allowed`` holds for its sensitive-value counts (prefix sums of the one-hot codes along
the run). Groups may then have to be larger than 2k-1, but usually only in a few stretches of
the curve where the sensitive values are skewed. So the search extent is *per boundary*: every
boundary ``v`` first has the candidate starts of k-anonymity (``c*`` and up to k rows behind);
if none of them gives a valid group after a valid segmentation of the rows before it (its least
loss is infinite), its starts reach back ``E = 2k, 4k, 8k, ...`` rows behind ``c*``, for this
boundary alone, until one does or the first row is reached. The result is the least loss over
every segmentation whose groups are among these candidates (a documented bound, not the optimum
over every segmentation). A segmentation always exists: the last boundary can reach back to the
first row, and the whole table satisfies the model (the base checks it before partitioning).
``search_extent_`` is the largest E used.

(Before issue 14 the extent was global: ``E = k`` doubled, for every boundary at
once, until a segmentation existed, and the whole dynamic program was rerun each time. A single
skewed stretch then made every boundary search thousands of starts: 1-9 minutes on Adult at
k = 50. The global rule searched more candidates at the easy boundaries, so it can find a
lower loss: on Adult at k = 50, GCP 0.418 before and 0.480 now for t = 0.2 (equal distance) of
the income label, 0.475 and 0.496 for its entropy 1.5-diversity; see BENCHMARKS.md.) The far candidates' costs
come from sparse tables (range minimum, maximum and bitwise-or over runs, ``O(1)`` per QI).
``method="greedy"`` closes a group at the first boundary where it has k rows and satisfies the
model, and merges the remainder backwards until the last group satisfies it.

Speed
-----
Everything is vectorized over the rows except one numpy step per *block* of the dynamic
program: the best cut of every boundary in a block depends only on boundaries at least k rows
earlier, i.e. before the block, so a block of up to k boundaries is solved at once (``O(n / k)``
steps). The costs of the at most k candidate groups of every boundary, ``O(n k d)`` numbers, are
computed a batch of blocks at a time: all candidate groups of one block contain the run just
before the block, so their per-QI minima, maxima and value sets combine one suffix scan
(backwards from the block) with one prefix scan (forwards into it), read for every (end, start)
pair through a strided view without copying; set shares use bit masks of the category codes
and a popcount. The arrays are laid out so that numpy's inner loops run over the longer of the
block and start axes.

The dynamic program is exact: it finds the least loss over every segmentation into groups that
respect the rules above (tested against a plain ``O(n^2)`` dynamic program over all
segmentations). The only rounding is that the candidate groups' costs are summed in float32
(relative error about 1e-7, which can only matter between segmentations whose losses agree to
that precision); ``information_loss_`` is then recomputed in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml.anonymize._grid import QIGrid

#: cells of the cost array computed at once, (blocks x ends x candidate starts)
_BATCH_CELLS = 1 << 17
#: candidate-group costs are computed in float32 (relative rounding about 1e-7)
_COST_DTYPE = np.float32


# ------------------------------------------------------------------------------------------------
# Segmentation of the sorted run
# ------------------------------------------------------------------------------------------------
class _Runs:
    """Runs of equal Hilbert index, in curve order, with what the group costs need.

    ``C[r]`` is the number of rows before run ``r`` (``C[R] = n``). The rows of a run share
    their QIs (the grid is injective), so a run has one value per QI: per numeric QI its
    normalized value, per hierarchy QI its leaf rank, per categorical QI without a hierarchy
    its code as a one-bit mask (in words of 64 codes); and the cumulative sensitive-value counts
    when the privacy model needs them.
    """

    def __init__(self) -> None:
        self.C: np.ndarray
        self.num: list[np.ndarray] = []  # per numeric QI, in the cost dtype
        self.num64: list[np.ndarray] = []  # the same in float64
        self.tree: list[tuple[np.ndarray, Any, np.ndarray | None]] = []  # ranks, axis, LCA table
        self.sets: list[tuple[list[np.ndarray], float]] = []
        self.counts: np.ndarray | None = None

    @property
    def R(self) -> int:
        return self.C.size - 1

    @classmethod
    def build(cls, grid: QIGrid, ranks: np.ndarray, order: np.ndarray, starts: np.ndarray,
              model: Any) -> _Runs:
        """Runs of the rows ``order`` (sorted by index) that start at positions ``starts``."""
        self = cls()
        n = order.size
        self.C = np.append(starts, n).astype(np.int64)
        first = ranks[order[starts]]  # the grid is injective: a run's rows share their ranks
        for j, axis in enumerate(grid.axes):
            r = first[:, j]
            if axis.kind == "set":
                words = []
                n_words = -(-axis.n_slots // 64)
                dtype = _mask_dtype(axis.n_slots)
                for w in range(n_words):
                    local = r - 64 * w
                    inside = (local >= 0) & (local < 64)
                    one = dtype(1) << np.clip(local, 0, 63).astype(dtype)
                    words.append(np.where(inside, one, dtype(0)).astype(dtype, copy=False))
                self.sets.append((words, 1.0 / axis.n_distinct))
            elif axis.kind == "num":
                self.num64.append(axis.norm[r])
                self.num.append(self.num64[-1].astype(_COST_DTYPE))
            else:
                table = axis.share_table()
                self.tree.append((r, axis, None if table is None else table.astype(_COST_DTYPE)))
        if not model.trivial:
            m = model.n_values
            codes = model.codes[order]
            run_of_row = np.repeat(np.arange(starts.size), np.diff(self.C))
            per_run = np.bincount(run_of_row * m + codes, minlength=starts.size * m)
            cum = np.zeros((starts.size + 1, m), dtype=np.int64)
            np.cumsum(per_run.reshape(starts.size, m), axis=0, out=cum[1:])
            self.counts = cum
        return self


def _segmentation_loss(runs: _Runs, cuts: np.ndarray) -> float:
    """``sum_G |G| sum_A NCP_A(G)`` of the groups of runs ``[cuts[g], cuts[g+1])``."""
    starts = cuts[:-1]
    ncp = np.zeros(starts.size)
    for v in runs.num64:
        ncp += np.maximum.reduceat(v, starts) - np.minimum.reduceat(v, starts)
    for ranks, axis, _ in runs.tree:
        ncp += axis.range_ncp(np.minimum.reduceat(ranks, starts), np.maximum.reduceat(ranks, starts))
    for words, inv_d in runs.sets:
        count = sum(np.bitwise_count(np.bitwise_or.reduceat(w, starts)).astype(np.int64) for w in words)
        ncp += np.where(count > 1, count * inv_d, 0.0)
    return float(np.diff(runs.C[cuts]) @ ncp)


def _mask_dtype(n_slots: int) -> type:
    if n_slots <= 8:
        return np.uint8
    if n_slots <= 16:
        return np.uint16
    if n_slots <= 32:
        return np.uint32
    return np.uint64


def _candidates(C: np.ndarray, k: int, extent: int) -> tuple[np.ndarray, np.ndarray]:
    """For every run boundary v: the largest start ``c*`` with ``C[v] - C[c*] >= k`` (-1 if
    none) and the smallest candidate start, the first boundary with ``C[u] > C[c*] - extent``."""
    cstar = np.searchsorted(C, C - k, side="right") - 1
    cstar[C < k] = -1
    lo = np.searchsorted(C, C[np.maximum(cstar, 0)] - extent, side="right")
    lo[cstar < 0] = 0
    return cstar, lo


def _blocks(cstar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive blocks ``[v_lo, v_hi)`` of boundaries whose candidate starts all lie before
    the block (``c*(v) < v_lo``), covering every boundary that can end a group."""
    R = cstar.size - 1
    nxt = np.searchsorted(cstar, np.arange(R + 1), side="left").tolist()  # first v: c*(v) >= .
    v = nxt[0]  # first boundary with c* >= 0
    los = []
    while v <= R:
        los.append(v)
        v = nxt[v]
    los_a = np.asarray(los, dtype=np.int64)
    return los_a, np.append(los_a[1:], R + 1)


def _dp(runs: _Runs, k: int, model: Any) -> tuple[np.ndarray, int]:
    """Cuts (run boundaries, from 0 to R) of the least-loss segmentation, and the largest
    extent used (``k`` without l / t)."""
    out = _dp_once(runs, k, k, model)
    if out is None:  # pragma: no cover - the whole table is a candidate of the last boundary
        raise InputError(
            f"no segmentation of the Hilbert-sorted rows into groups of at least k={k} "
            f"satisfies {model.describe()}; lower l, raise t, or lower k"
        )
    return out


def _dp_once(
    runs: _Runs, k: int, extent: int, model: Any
) -> tuple[np.ndarray, int] | None:
    C = runs.C
    R = runs.R
    cstar, lo = _candidates(C, k, extent)
    v_lo, v_hi = _blocks(cstar)
    if v_lo.size == 0:
        return None
    v_all = np.arange(R + 1)
    off_min = v_all - cstar  # smallest offset v - u of a candidate start
    off_max = v_all - lo
    o_lo = np.minimum.reduceat(off_min[v_lo[0]:], v_lo - v_lo[0])
    o_hi = np.maximum.reduceat(off_max[v_lo[0]:], v_lo - v_lo[0])
    B = v_hi - v_lo
    S = o_hi - o_lo + 1
    # batches of consecutive blocks whose (blocks x ends x starts) cost array stays small
    per_block = int(B.max()) * int(S.max())
    per_batch = max(1, _BATCH_CELLS // per_block)
    pad = int(2 * o_hi.max() + B.max()) + 2
    f = np.full(pad + R + 2 + int(B.max()), np.inf)  # f[pad + v]: least loss before boundary v
    f[pad] = 0.0
    choice = np.full(R + 1, -1, dtype=np.int64)
    # boundaries no candidate within ``extent`` can end (l / t only) search further back
    far = None if model.trivial else _FarStarts(runs, k, extent, model, cstar, lo)
    for b0 in range(0, v_lo.size, per_batch):
        sl = slice(b0, min(b0 + per_batch, v_lo.size))
        vl, nb, ol = v_lo[sl], B[sl], o_lo[sl]
        bm, sm = int(nb.max()), int(S[sl].max())
        cost = _batch_costs(runs, vl, nb, ol, bm, sm, off_min, off_max, model)
        # f index of the start u = v - o_lo - o of every (block, end j, offset o)
        hank = np.arange(bm)[:, None] - np.arange(sm)[None, :]
        fidx = (pad + vl - ol)[:, None, None] + hank[None, :, :]
        best_all = np.empty((vl.size, bm), dtype=np.int64)
        rows = np.arange(bm)
        # the sequential part: one numpy step per block
        for i, (v0, n_i) in enumerate(zip((vl + pad).tolist(), nb.tolist())):
            g = f.take(fidx[i])
            g += cost[i]
            best = g.argmin(axis=1)
            best_all[i] = best
            f[v0: v0 + n_i] = g[rows[:n_i], best[:n_i]]
            if far is not None:
                far.extend(f, pad, v0 - pad, n_i)
        ends = vl[:, None] + rows[None, :]
        keep = rows[None, :] < nb[:, None]
        choice[ends[keep]] = (ends - ol[:, None] - best_all)[keep]
    if far is not None and far.choice:
        forced = np.fromiter(far.choice.items(), dtype=np.dtype((np.int64, 2)))
        choice[forced[:, 0]] = forced[:, 1]
    if not np.isfinite(f[pad + R]):
        return None
    # walk the choices back from the end
    cuts = [R]
    v = R
    while v > 0:
        v = int(choice[v])
        cuts.append(v)
    reach = extent if far is None else max(extent, far.max_extent)
    return np.asarray(cuts[::-1], dtype=np.int64), reach


#: (end, start) pairs whose constraint and cost are evaluated at once by _FarStarts
_FAR_PAIRS = 1 << 20


class _FarStarts:
    """Candidate starts further back than the extent, for the boundaries that need them.

    With l-diversity or t-closeness a boundary ``v`` may have no valid group among its
    candidates ``[lo(v), c*(v)]`` (a stretch of the curve where the sensitive values are
    skewed). Its candidate starts then reach back ``2E, 4E, ...`` rows behind ``c*(v)``, for
    this boundary alone, until one gives a finite loss (or the first row is reached). All
    boundaries of a block are extended together: their starts lie before the block, so their
    losses are final. The costs of these far groups come from sparse tables (range minimum,
    maximum and bitwise-or over runs in ``O(1)`` per QI), in float64.
    """

    def __init__(self, runs: _Runs, k: int, extent: int, model: Any, cstar: np.ndarray,
                 lo: np.ndarray):
        self.runs, self.k, self.extent, self.model = runs, k, extent, model
        self.cstar, self.lo = cstar, lo
        self.choice: dict[int, int] = {}
        self.max_extent = extent
        self._tables: list | None = None

    # -- sparse tables ---------------------------------------------------------------------------
    def _build(self) -> None:
        runs = self.runs

        def table(values: np.ndarray, ufunc: Any) -> np.ndarray:
            # row j: ufunc over runs [i, i + 2^j) (padded with the last value past the end)
            out = [values]
            span = 1
            while 2 * span <= values.size:
                prev = out[-1]
                nxt = prev.copy()
                nxt[:-span] = ufunc(prev[:-span], prev[span:])
                out.append(nxt)
                span *= 2
            return np.stack(out).ravel()

        self._num = [(table(v, np.minimum), table(v, np.maximum)) for v in runs.num64]
        self._tree = [(table(r, np.minimum), table(r, np.maximum), axis) for r, axis, _ in runs.tree]
        self._sets = [([table(w, np.bitwise_or) for w in words], inv_d) for words, inv_d in runs.sets]
        self._tables = []

    def cost(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``|G| * sum_A NCP_A(G)`` of the groups of runs ``[u, v)`` (float64)."""
        if self._tables is None:
            self._build()
        length = v - u
        lev = np.log2(length).astype(np.int64)
        lev -= (1 << lev) > length  # guard against rounding of log2 near powers of two
        lev += (1 << (lev + 1)) <= length
        row = lev * self.runs.R
        i1 = row + u
        i2 = row + v - (1 << lev)
        ncp = np.zeros(u.size)
        for mins, maxs in self._num:
            ncp += np.maximum(maxs[i1], maxs[i2])
            ncp -= np.minimum(mins[i1], mins[i2])
        for mins, maxs, axis in self._tree:
            ncp += axis.range_ncp(np.minimum(mins[i1], mins[i2]), np.maximum(maxs[i1], maxs[i2]))
        for words, inv_d in self._sets:
            count = sum(np.bitwise_count(w[i1] | w[i2]).astype(np.int64) for w in words)
            ncp += np.where(count > 1, count * inv_d, 0.0)
        C = self.runs.C
        return (C[v] - C[u]) * ncp

    # -- extension ---------------------------------------------------------------------------------
    def extend(self, f: np.ndarray, pad: int, v_first: int, n_ends: int) -> None:
        """Give the boundaries ``v_first .. v_first + n_ends - 1`` whose loss ``f`` is still
        infinite their best start further back (updates ``f`` and ``self.choice``)."""
        ends = v_first + np.flatnonzero(~np.isfinite(f[pad + v_first: pad + v_first + n_ends]))
        if ends.size == 0:
            return
        C, counts, model = self.runs.C, self.runs.counts, self.model
        hi = self.lo[ends].copy()  # starts below hi are not searched yet
        E = self.extent
        while ends.size:
            E *= 2
            new_lo = np.searchsorted(C, C[self.cstar[ends]] - E, side="right")
            best_f = np.full(ends.size, np.inf)
            best_u = np.full(ends.size, -1, dtype=np.int64)
            lengths = np.maximum(hi - new_lo, 0)
            # chunks of ends with at most _FAR_PAIRS (end, start) pairs each (at least one end)
            cum = np.cumsum(lengths)
            a = 0
            while a < ends.size:
                base = int(cum[a - 1]) if a else 0
                b = int(np.searchsorted(cum, base + _FAR_PAIRS, side="right"))
                b = min(max(b, a + 1), ends.size)
                idx = np.arange(a, b)
                n_pairs = lengths[idx]
                owner = np.repeat(idx, n_pairs)
                first = np.cumsum(n_pairs) - n_pairs
                u = new_lo[owner] + (np.arange(owner.size) - np.repeat(first, n_pairs))
                v = ends[owner]
                g = f[pad + u]
                live = np.isfinite(g)
                u, v, g, owner = u[live], v[live], g[live], owner[live]
                if u.size:
                    ok = model.allowed(counts[v] - counts[u])
                    u, v, g, owner = u[ok], v[ok], g[ok], owner[ok]
                if u.size:
                    g = g + self.cost(u, v)
                    # per owner (contiguous, starts increasing): least g, ties to the latest
                    # start (as the argmin over offsets of the block step)
                    heads = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
                    gmin = np.minimum.reduceat(g, heads)
                    hit = np.flatnonzero(g == np.repeat(gmin, np.diff(np.r_[heads, g.size])))
                    last = hit[np.r_[owner[hit][1:] != owner[hit][:-1], True]]
                    best_f[owner[last]] = g[last]
                    best_u[owner[last]] = u[last]
                a = b
            done = np.isfinite(best_f) | (new_lo == 0)
            for v_, u_, f_ in zip(ends[done].tolist(), best_u[done].tolist(), best_f[done].tolist()):
                if u_ >= 0:
                    f[pad + v_] = f_
                    self.choice[v_] = u_
            self.max_extent = max(self.max_extent, E)
            ends, hi = ends[~done], new_lo[~done]


class _Layout:
    """Memory layout of a batch's arrays: the block axis innermost when blocks outnumber the
    candidate offsets (small k), else the offset axis, so that numpy's inner loops are long.

    Logical shapes are (P, cols) for scans and (P, bm, sm) for candidates either way."""

    def __init__(self, P: int, bm: int, sm: int):
        self.P, self.bm, self.sm = P, bm, sm
        self.block_inner = P > sm

    def empty3(self, dtype: Any = np.float64) -> np.ndarray:
        P, bm, sm = self.P, self.bm, self.sm
        if self.block_inner:
            return np.zeros((bm, sm, P), dtype=dtype).transpose(2, 0, 1)
        return np.zeros((P, bm, sm), dtype=dtype)

    def grid2(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``rows[:, None] + cols[None, :]`` as a (P, len(cols)) array in this layout."""
        if self.block_inner:
            return (cols[:, None] + rows[None, :]).T
        return rows[:, None] + cols[None, :]

    def scan(self, ufunc: Any, a: np.ndarray) -> np.ndarray:
        """Running ``ufunc`` along the column axis of a (P, cols) array, in this layout."""
        if self.block_inner:
            return ufunc.accumulate(a.T, axis=0).T
        return ufunc.accumulate(a, axis=1)

    def extract(self, a: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``a[p, cols[p, c]]`` for a (P, T) array and (P, C) column indices, in this layout."""
        if self.block_inner:
            return a.T[cols.T, np.arange(self.P)[None, :]].T
        return a[np.arange(self.P)[:, None], cols]

    def hankel(self, a: np.ndarray) -> np.ndarray:
        """View ``w[p, j, o] = a[p, bm - 1 + o - j]`` of a (P, sm + bm - 1) array, no copy."""
        P, bm, sm = self.P, self.bm, self.sm
        if self.block_inner:
            base = np.ascontiguousarray(a.T)  # (cols, P), already so laid out: no copy
            s0, s1 = base.strides
            return np.ndarray(
                (bm, sm, P), base.dtype, buffer=base, offset=(bm - 1) * s0, strides=(-s0, s0, s1)
            ).transpose(2, 0, 1)
        base = np.ascontiguousarray(a)
        s0, s1 = base.strides
        return np.ndarray(
            (P, bm, sm), base.dtype, buffer=base, offset=(bm - 1) * s1, strides=(s0, -s1, s1)
        )


def _batch_costs(
    runs: _Runs,
    v_lo: np.ndarray,
    B: np.ndarray,
    o_lo: np.ndarray,
    bm: int,
    sm: int,
    off_min: np.ndarray,
    off_max: np.ndarray,
    model: Any,
) -> np.ndarray:
    """Loss of every candidate group of a batch of blocks, shape (P, bm, sm).

    Entry ``[p, j, o]`` is the group of runs ``[u, v)`` with ``v = v_lo[p] + j`` and
    ``u = v - o_lo[p] - o`` (inf where that is not a candidate). Every candidate contains run
    ``v_lo - 1``, so its aggregates combine the suffix scan ``suf[t]`` over runs
    ``v_lo-1-t .. v_lo-1`` with the prefix scan ``pre[j]`` over runs ``v_lo .. v_lo+j-1``,
    where ``t = o_lo + o - 1 - j``. Each block's scan values at ``t = c + o_lo - bm``,
    ``c = 0 .. sm+bm-2``, are gathered into one row, read for all ``(j, o)`` (column
    ``o - j + bm - 1``) through a strided view.
    """
    C = runs.C
    R = runs.R
    P = v_lo.size
    L = _Layout(P, bm, sm)
    n_cols = sm + bm - 1
    # suffix scans over t = 0 .. n_t - 1: column t holds run v_lo - 1 - t
    n_t = int(o_lo.max()) + sm - 1
    s_run = L.grid2(v_lo - 1, -np.arange(n_t))
    valid_s = s_run >= 0
    s_idx = np.clip(s_run, 0, R - 1)
    # the scan value each column of the strided view reads (t < 0 only where no candidate is)
    t_col = np.clip(L.grid2(o_lo - bm, np.arange(n_cols)), 0, n_t - 1)

    def suffix(ufunc: Any, values: np.ndarray, identity: Any) -> np.ndarray:
        scan = L.scan(ufunc, np.where(valid_s, values[s_idx], identity))
        return L.hankel(L.extract(scan, t_col))

    # prefix scan: column j holds run v_lo + j - 1 (j >= 1)
    j = np.arange(bm)
    r = L.grid2(v_lo - 1, j)
    valid_p = (r >= v_lo[:, None]) & (r < R)
    r_idx = np.clip(r, 0, R - 1)

    dt = _COST_DTYPE
    acc = L.empty3(dt)
    w1, w2 = L.empty3(dt), L.empty3(dt)
    for vals in runs.num:
        # a run's rows share their values; normalized values lie in [0, 1], so 0 and 1 are
        # the identities of max and min
        g_p = vals[r_idx]
        p_hi = L.scan(np.maximum, np.where(valid_p, g_p, dt(0)))
        p_lo = L.scan(np.minimum, np.where(valid_p, g_p, dt(1)))
        np.maximum(suffix(np.maximum, vals, dt(0)), p_hi[:, :, None], out=w1)
        np.minimum(suffix(np.minimum, vals, dt(1)), p_lo[:, :, None], out=w2)
        w1 -= w2
        acc += w1
    if runs.tree:
        i1, i2 = L.empty3(np.int64), L.empty3(np.int64)
    for ranks, axis, table in runs.tree:
        top = axis.n_slots - 1
        g_p = ranks[r_idx]
        p_hi = L.scan(np.maximum, np.where(valid_p, g_p, 0))
        p_lo = L.scan(np.minimum, np.where(valid_p, g_p, top))
        np.maximum(suffix(np.maximum, ranks, 0), p_hi[:, :, None], out=i1)
        np.minimum(suffix(np.minimum, ranks, top), p_lo[:, :, None], out=i2)
        np.minimum(i2, i1, out=i2)  # lo <= hi also where nothing was scanned
        if table is not None:
            i2 *= axis.n_slots
            i2 += i1
            acc += table[i2]
        else:
            acc += axis.range_ncp(i2, i1).astype(dt, copy=False)
    for words, inv_d in runs.sets:
        count = None
        for bits in words:
            zero = bits.dtype.type(0)
            p_b = L.scan(np.bitwise_or, np.where(valid_p, bits[r_idx], zero))
            c = np.bitwise_count(np.bitwise_or(suffix(np.bitwise_or, bits, zero), p_b[:, :, None]))
            count = c if count is None else count + c.astype(np.uint16)
        # NCP = count / D for two values or more, else 0: (count - [count == 1]) / D
        count -= (count == 1).view(np.uint8)
        np.multiply(count, dt(inv_d), out=w1)
        acc += w1

    # which (j, o) are candidates, and their sizes
    v = np.minimum(v_lo[:, None] + j[None, :], R)
    v[j[None, :] >= B[:, None]] = R  # ends past the block: no candidate (rel_min > rel_max)
    rel_min = off_min[v] - o_lo[:, None]
    rel_max = off_max[v] - o_lo[:, None]
    rel_min[j[None, :] >= B[:, None]] = sm
    o = np.arange(sm)
    mask = L.empty3(bool)
    np.greater_equal(o[None, None, :], rel_min[:, :, None], out=mask)
    mask &= o[None, None, :] <= rel_max[:, :, None]
    u = L.grid2(v_lo - 1 + bm - o_lo, -np.arange(n_cols))  # the start of column c's groups
    start = np.where((u >= 0) & (u <= (v_lo - 1)[:, None]), C[np.clip(u, 0, R)], 0)
    np.subtract(C[v][:, :, None], L.hankel(start), out=w1)
    if runs.counts is not None:
        pp, jj, oo = np.nonzero(mask)
        if pp.size:
            m = runs.counts.shape[1]
            step = max(1, _BATCH_CELLS // m)
            ok = np.zeros(pp.size, dtype=bool)
            for a in range(0, pp.size, step):
                p_, j_, o_ = pp[a:a + step], jj[a:a + step], oo[a:a + step]
                u_ = v_lo[p_] + j_ - o_lo[p_] - o_
                ok[a:a + step] = model.allowed(runs.counts[v[p_, j_]] - runs.counts[u_])
            mask[pp[~ok], jj[~ok], oo[~ok]] = False
    acc *= w1
    np.copyto(acc, np.inf, where=~mask)
    return acc


def _greedy(runs: _Runs, k: int, model: Any) -> np.ndarray:
    """Cuts of the greedy segmentation: close a group at the first run boundary where it has k
    rows (and satisfies the model); the remainder joins the last group."""
    C = runs.C
    R = runs.R
    cuts = [0]
    u = 0
    while True:
        v = int(np.searchsorted(C, C[u] + k, side="left"))
        if v > R:
            break
        if runs.counts is not None:
            found = -1
            while v <= R:
                cand = np.arange(v, min(R, v + 64) + 1)
                ok = model.allowed(runs.counts[cand] - runs.counts[u])
                if ok.any():
                    found = int(cand[np.argmax(ok)])
                    break
                v = int(cand[-1]) + 1
            if found < 0:
                break
            v = found
        cuts.append(v)
        u = v
    if cuts[-1] != R:
        if len(cuts) == 1:  # pragma: no cover - the base checks the whole table first
            raise InputError(f"the table has fewer than k={k} rows; lower k")
        cuts[-1] = R  # the remainder joins the last group
    if runs.counts is not None:
        # the last group may still violate a model that merging does not preserve
        while len(cuts) > 2 and not model.allowed(
            (runs.counts[cuts[-1]] - runs.counts[cuts[-2]])[None, :]
        )[0]:
            del cuts[-2]
        if not model.allowed((runs.counts[R] - runs.counts[0])[None, :])[0]:  # pragma: no cover
            raise InputError(f"the whole table does not satisfy {model.describe()}")
    return np.asarray(cuts, dtype=np.int64)
