"""The cut search of :class:`~anonml.anonymize.MondrianAnonymizer`: one level of cuts at a time.

:class:`_CutSearch` holds the per-level steps of :class:`~anonml.anonymize._mondrian._CutTree`:
for every active partition of a level, the widest dimension (relative to the whole table), the
median cut (strict, or relaxed to split a run of equal values), the hierarchy cut (the children
of the lowest common ancestor), or the cut of most information gain (``criterion="infogain"``,
LeFevre, DeWitt & Ramakrishnan, 2008), each one numpy pass over the rows of all partitions, and
only the cuts whose parts satisfy the privacy model. The tree the cuts make and its routing stay
in :mod:`anonml.anonymize._mondrian`.

    K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Mondrian Multidimensional K-Anonymity",
    ICDE 2006, doi:10.1109/ICDE.2006.101.

    K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Workload-Aware Anonymization Techniques for
    Large-Scale Datasets", ACM TODS 33(3), 2008, doi:10.1145/1386118.1386123.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import xlogy

_ORDERED, _HIER = 0, 1  # kinds of dimension
_THRESHOLD, _RELAXED, _CHILDREN = 0, 1, 2  # kinds of cut (node)
_GAIN_EPS = 1e-12  # information gain (nats per row) below which a cut counts as gaining nothing


def _left_counts(
    run_of_row: np.ndarray, codes: np.ndarray, width: int, n_runs: int, end: np.ndarray,
    start: np.ndarray,
) -> np.ndarray:
    """Counts of each code (0 .. width-1) over the runs ``start[i] .. end[i]-1``: one histogram
    per run, then prefix sums, so every candidate cut costs O(width)."""
    h = np.bincount(run_of_row * width + codes, minlength=n_runs * width)
    cum = np.zeros((n_runs + 1, width), dtype=np.int64)
    np.cumsum(h.reshape(n_runs, width), axis=0, out=cum[1:])
    return cum[end] - cum[start]


def _segments(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Positions of all elements of the segments ``[starts[i], starts[i] + sizes[i])``."""
    offs = np.cumsum(sizes) - sizes
    return np.repeat(starts - offs, sizes) + np.arange(int(sizes.sum()))


def _dense_rank(key: np.ndarray) -> tuple[np.ndarray, int]:
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64).ravel(), uniq.size


class _CutSearch:
    """The per-level cut search :class:`~anonml.anonymize._mondrian._CutTree` inherits: its
    methods read and write the fitting state ``fit`` sets up (rows, ranks and sizes of the
    active partitions) and the level's arrays (``feat``, ``kind``, ``thr``, ``slot``, ...)."""

    # -- one level ---------------------------------------------------------------------------------
    def _new_level(self, A: int) -> None:
        self.feat = np.full(A, -1, dtype=np.int64)
        self.kind = np.full(A, -1, dtype=np.int64)
        self.thr = np.full(A, np.nan)
        self.coff = np.full(A, -1, dtype=np.int64)
        self.lstart = np.zeros(A, dtype=np.int64)
        self.lsize = np.zeros(A, dtype=np.int64)
        self.rref = np.full(A, -1, dtype=np.int64)
        self.nch = np.zeros(A, dtype=np.int64)
        self.bigslot = np.zeros(A, dtype=np.int64)
        self.slot = np.full(self.rows.size, -1, dtype=np.int64)
        self.pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.relaxed_refs: tuple[list, list] | None = None
        self.lca: dict[int, np.ndarray] = {}

    def _clear_level(self) -> None:
        for name in ("feat", "kind", "thr", "coff", "lstart", "lsize", "rref", "nch", "bigslot",
                     "slot", "pieces", "relaxed_refs", "lca", "mn", "mx", "W", "tot"):
            self.__dict__.pop(name, None)

    def _decide(self, P: np.ndarray) -> None:
        """Choose and record the cut of every splittable partition ``P`` of the level."""
        self.mn = np.stack([np.minimum.reduceat(r, self.starts) for r in self.Rd], axis=1)
        self.mx = np.stack([np.maximum.reduceat(r, self.starts) for r in self.Rd], axis=1)
        self.mn = self.mn.astype(np.int64, copy=False)
        self.mx = self.mx.astype(np.int64, copy=False)
        self.W = self._widths()
        if not self.trivial:
            part = np.repeat(np.arange(self.sizes.size), self.sizes)
            m = self.m
            self.tot = np.bincount(
                part * m + self.codes[self.rows], minlength=self.sizes.size * m
            ).reshape(-1, m)
        pending = P[self.W[P].max(axis=1) > 0]
        if self.criterion == "infogain" and pending.size:
            pending = self._infogain_cuts(pending)
        if not pending.size:
            return
        order = np.argsort(-self.W[pending], axis=1, kind="stable")
        for r in range(self.D):
            d = order[:, r]
            live = self.W[pending, d] > 0  # the widths are sorted: a zero ends the candidates
            pending, order, d = pending[live], order[live], d[live]
            if not pending.size:
                break
            ok = np.zeros(pending.size, dtype=bool)
            is_h = self.is_hier[d]
            if (~is_h).any():
                sel = np.flatnonzero(~is_h)
                ok[sel] = self._median_cuts(pending[sel], d[sel])
            for h in np.unique(d[is_h]):
                sel = np.flatnonzero(d == h)
                ev = self._hier_eval(pending[sel], int(h))
                ok[sel] = ev["ok"]
                self._hier_commit(ev, ev["ok"])
            pending, order = pending[~ok], order[~ok]
            if not pending.size:
                break

    def _widths(self) -> np.ndarray:
        """Normalized range of every dimension in every partition of the level, (A, D)."""
        A = self.sizes.size
        W = np.zeros((A, self.D))
        for j, d in enumerate(self.dims):
            lo, hi = self.mn[:, j], self.mx[:, j]
            if d.kind == _ORDERED:
                if d.span > 0:
                    v = d.values if d.scaled is None else d.scaled
                    W[:, j] = (v[hi] - v[lo]) / d.span
            else:
                ids = d.hier.node_ids
                lev = np.argmax(ids[lo] == ids[hi], axis=1)
                self.lca[j] = lev
                size = d.sizes_at[lo, lev]
                W[:, j] = np.where(lo != hi, size / d.span, 0.0)
        return W

    def _rows_of(self, P: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Positions of the rows of partitions ``P`` in the level arrays, their index in ``P``,
        the sizes of ``P`` and where each one starts in the result."""
        sz = self.sizes[P]
        if P.size == self.sizes.size:
            idx = np.arange(self.rows.size)
        else:
            idx = _segments(self.starts[P], sz)
        lp = np.repeat(np.arange(P.size), sz)
        return idx, lp, sz, np.cumsum(sz) - sz

    def _gather(self, dP: np.ndarray, idx: np.ndarray, sz: np.ndarray) -> np.ndarray:
        """Rank of each row of ``idx`` on its partition's dimension ``dP`` (int64)."""
        if dP.size and (dP == dP[0]).all():
            return self.Rd[int(dP[0])].take(idx).astype(np.int64)
        out = np.empty(idx.size, dtype=np.int64)
        # partitions grouped by dimension: each dimension's rows are a few runs of idx
        order = np.argsort(dP, kind="stable")
        ends = np.cumsum(sz)
        seg_start = ends - sz
        dsorted = dP[order]
        bounds = np.flatnonzero(np.r_[True, dsorted[1:] != dsorted[:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:]):  # noqa: RUF007 (Python 3.10 has pairwise)
            parts = order[a:b]
            pos = _segments(seg_start[parts], sz[parts])
            out[pos] = self.Rd[int(dsorted[a])].take(idx.take(pos))
        return out

    def _allowed_split(
        self, P: np.ndarray, idx: np.ndarray, lp: np.ndarray, left: np.ndarray,
        nleft: np.ndarray, sz: np.ndarray,
    ) -> np.ndarray:
        """Whether both halves (``left`` rows / the others) of each partition are allowed."""
        ok = (nleft >= self.k) & (sz - nleft >= self.k)
        if self.trivial or not ok.any():
            return ok
        m = self.m
        s = self.codes[self.rows[idx]]
        cl = np.bincount((lp * m + s)[left], minlength=P.size * m).reshape(-1, m)
        cr = self.tot[P] - cl
        return ok & self.model.allowed(cl) & self.model.allowed(cr)

    def _median_cuts(self, P: np.ndarray, dP: np.ndarray) -> np.ndarray:
        """Try the median cut of partitions ``P`` on ordered dimensions ``dP``; record the
        allowed ones and return which they are."""
        idx, lp, sz, loc0 = self._rows_of(P)
        v = self._gather(dP, idx, sz)
        U = self.u_max
        p_ids = np.arange(P.size, dtype=np.int64)
        if self.mode == "strict":
            # int32 keys when they fit: numpy sorts them several times faster
            kt = np.int32 if P.size * U < 2**31 else np.int64
            sk = np.sort(lp.astype(kt) * kt(U) + v.astype(kt))
            med = sk[loc0 + (sz - 1) // 2] - p_ids * U
            nleft = np.searchsorted(sk, p_ids * U + med, side="right") - loc0
            left = v <= med[lp]
            thr_rank = med
        else:
            key2 = v * self.n_full + self.full_rank[self.rows[idx]]
            span = U * self.n_full
            if P.size * span >= 2**62:  # re-rank so that the partition index fits in the key
                key2, span = _dense_rank(key2)
            key = lp * span + key2
            sk = np.sort(key)
            t = loc0 + (sz + 1) // 2  # ceil(n/2) rows on the left
            run = sk[t]
            lo = np.searchsorted(sk, run, side="left")  # == t when t is a boundary
            hi = np.searchsorted(sk, run, side="right")
            ok_lo = lo > loc0
            ok_hi = hi < loc0 + sz
            pick_lo = ok_lo & ((t - lo <= hi - t) | ~ok_hi)
            cut = np.where(pick_lo, lo, hi)
            valid = ok_lo | ok_hi
            cut = np.where(valid, cut, loc0 + 1)  # placeholder for invalid (never allowed)
            thr_key = sk[cut - 1]
            nleft = np.where(valid, cut - loc0, 0)
            left = key <= thr_key[lp]
            # a row holding each threshold key: its rank on the cut dimension, and the row
            hit = np.flatnonzero(key == thr_key[lp])
            first = np.empty(P.size, dtype=np.int64)
            first[lp[hit][::-1]] = hit[::-1]
            thr_rank = v[first]
            thr_row = self.rows[idx[first]]
        ok = self._allowed_split(P, idx, lp, left, nleft, sz)
        if ok.any():
            Pk = P[ok]
            self.feat[Pk] = dP[ok]
            self.kind[Pk] = _THRESHOLD if self.mode == "strict" else _RELAXED
            self.thr[Pk] = self._vflat[self._voff[dP[ok]] + thr_rank[ok]]
            self.nch[Pk] = 2
            self.bigslot[Pk] = np.where(nleft[ok] >= sz[ok] - nleft[ok], 0, 1)
            rsel = ok[lp]
            self.slot[idx[rsel]] = np.where(left[rsel], 0, 1)
            self.pieces.append((Pk, np.full(Pk.size, 2), np.tile([0, 1], Pk.size)))
            if self.mode == "relaxed":
                if self.relaxed_refs is None:
                    self.relaxed_refs = ([], [])
                self.relaxed_refs[0].append(thr_row[ok])
                self.relaxed_refs[1].append(Pk)
        return ok

    def _hier_eval(self, P: np.ndarray, h: int) -> dict[str, Any]:
        """Split of partitions ``P`` into the children of their LCA in hierarchy ``h``."""
        hier = self.dims[h].hier
        ids = hier.node_ids
        lo = self.mn[P, h].astype(np.int64)
        lev = self.lca[h][P]
        cl = lev - 1  # level of the children (lev >= 1: the partition holds two leaves)
        first = ids[lo, cl]
        nc = ids[self.mx[P, h].astype(np.int64), cl] - first + 1  # children between min and max
        idx, lp, _, _ = self._rows_of(P)
        leafv = self.Rd[h].take(idx).astype(np.int64)
        off = np.cumsum(nc) - nc
        child = off[lp] + ids[leafv, cl[lp]] - first[lp]  # global child slot of each row
        total = int(nc.sum())
        cnt = np.bincount(child, minlength=total)
        if self.trivial:
            good = (cnt == 0) | (cnt >= self.k)
        else:
            m = self.m
            cc = np.bincount(child * m + self.codes[self.rows[idx]], minlength=total * m)
            good = (cnt == 0) | self.model.allowed(cc.reshape(total, m))
        ok = np.logical_and.reduceat(good, off)
        nonempty = cnt > 0
        seg = np.repeat(np.arange(P.size), nc)
        cum = np.cumsum(nonempty)
        rank_ne = cum - 1 - (cum[off] - nonempty[off])[seg]  # index among non-empty children
        best = np.maximum.reduceat(cnt, off)
        is_best = np.flatnonzero(cnt == best[seg])
        first_best = np.full(P.size, -1, dtype=np.int64)
        first_best[seg[is_best][::-1]] = is_best[::-1]
        ev = {
            "P": P, "h": h, "ok": ok, "idx": idx, "lp": lp, "child": child, "off": off,
            "nc": nc, "first": first, "cl": cl, "lev": lev, "lo": lo, "rank_ne": rank_ne,
            "n_ne": np.add.reduceat(nonempty, off), "big": rank_ne[first_best], "cnt": cnt,
        }
        if self.y is not None:
            C = self.n_classes
            cy = np.bincount(child * C + self.y[self.rows[idx]], minlength=total * C)
            cy = cy.reshape(total, C)
            score = xlogy(cy, cy).sum(1) - xlogy(cnt, cnt)
            ev["score"] = np.add.reduceat(score, off)
        return ev

    def _hier_commit(self, ev: dict[str, Any], mask: np.ndarray) -> None:
        """Record the hierarchy cuts ``ev`` of the partitions where ``mask`` holds."""
        if not mask.any():
            return
        P = ev["P"]
        Pk = P[mask]
        h = ev["h"]
        hier = self.dims[h].hier
        lo, lev, cl, first, nc = (ev[x][mask] for x in ("lo", "lev", "cl", "first", "nc"))
        self.feat[Pk] = h
        self.kind[Pk] = _CHILDREN
        self.nch[Pk] = ev["n_ne"][mask]
        self.bigslot[Pk] = ev["big"][mask]
        start = self.dims[h].starts_at[lo, lev]
        size = self.dims[h].sizes_at[lo, lev]
        self.lstart[Pk] = start
        self.lsize[Pk] = size
        rsel = mask[ev["lp"]]
        self.slot[ev["idx"][rsel]] = ev["rank_ne"][ev["child"][rsel]]
        # child map over the leaves of each LCA: slot of the leaf's child, or -1 (largest part)
        leaves = _segments(start, size)
        grp = np.repeat(np.arange(Pk.size), size)
        c = hier.node_ids[leaves, cl[grp]] - first[grp]
        inside = (c >= 0) & (c < nc[grp])
        gslot = ev["off"][mask][grp] + np.where(inside, c, 0)
        has = inside & (ev["cnt"][gslot] > 0)
        slots = np.where(has, ev["rank_ne"][gslot], -1)
        self.pieces.append((Pk, size, slots))

    def _infogain_cuts(self, P: np.ndarray) -> np.ndarray:
        """Record the allowed cut of largest information gain of each partition in ``P``; return
        the partitions left to the median rule (no allowed cut with positive gain)."""
        C = self.n_classes
        idx, lp, sz, _ = self._rows_of(P)
        yr = self.y[self.rows[idx]]
        tot_y = np.bincount(lp * C + yr, minlength=P.size * C).reshape(-1, C)
        parent = xlogy(tot_y, tot_y).sum(1) - xlogy(sz, sz)
        best = np.full(P.size, -np.inf)
        best_dim = np.full(P.size, -1, dtype=np.int64)
        best_thr = np.zeros(P.size, dtype=np.int64)
        hier_evals: dict[int, dict[str, Any]] = {}
        for j, d in enumerate(self.dims):
            live = self.W[P, j] > 0
            if not live.any():
                continue
            if d.kind == _HIER:
                sel = np.flatnonzero(live)
                ev = self._hier_eval(P[sel], j)
                hier_evals[j] = ev
                gain = np.where(ev["ok"], (ev["score"] - parent[sel]) / sz[sel], -np.inf)
                better = gain > best[sel]
                best[sel[better]] = gain[better]
                best_dim[sel[better]] = j
                continue
            # runs of equal (partition, value), in sorted order, and their class counts
            U = int(self.n_ranks[j])
            runs, run_of_row = np.unique(lp * U + self.Rd[j].take(idx), return_inverse=True)
            run_of_row = run_of_row.ravel()
            R = runs.size
            run_part = runs // U
            bnd = np.flatnonzero(run_part[:-1] == run_part[1:])  # cut after run bnd
            if not bnd.size:
                continue
            pl = run_part[bnd]
            first_run = np.searchsorted(run_part, np.arange(P.size))

            lc = _left_counts(run_of_row, yr, C, R, bnd + 1, first_run[pl])
            nl = lc.sum(1)
            nr = sz[pl] - nl
            rc = tot_y[pl] - lc
            valid = (nl >= self.k) & (nr >= self.k) & live[pl]
            if not self.trivial:
                sl = _left_counts(run_of_row, self.codes[self.rows[idx]], self.m, R, bnd + 1,
                                  first_run[pl])
                sr = self.tot[P[pl]] - sl
                valid &= self.model.allowed(sl) & self.model.allowed(sr)
            score = xlogy(lc, lc).sum(1) - xlogy(nl, nl) + xlogy(rc, rc).sum(1) - xlogy(nr, nr)
            gain = np.where(valid, (score - parent[pl]) / sz[pl], -np.inf)
            gbest = np.full(P.size, -np.inf)
            np.maximum.at(gbest, pl, gain)
            hit = np.flatnonzero((gain == gbest[pl]) & np.isfinite(gain))
            first = np.full(P.size, -1, dtype=np.int64)
            first[pl[hit][::-1]] = hit[::-1]  # first (smallest) threshold of the best gain
            better = gbest > best
            best[better] = gbest[better]
            best_dim[better] = j
            bi = first[better]
            best_thr[better] = runs[bnd[bi]] - np.flatnonzero(better) * U
        chosen = best > _GAIN_EPS
        for j, d in enumerate(self.dims):
            sel = np.flatnonzero(chosen & (best_dim == j))
            if not sel.size:
                continue
            if d.kind == _HIER:
                ev = hier_evals[j]
                mask = np.isin(ev["P"], P[sel])
                self._hier_commit(ev, mask)
                continue
            Pk = P[sel]
            ridx, rlp, rsz, _ = self._rows_of(Pk)
            left = self.Rd[j].take(ridx) <= best_thr[sel][rlp]
            nleft = np.bincount(rlp, weights=left, minlength=sel.size).astype(np.int64)
            self.feat[Pk] = j
            self.kind[Pk] = _THRESHOLD
            self.thr[Pk] = self._vflat[self._voff[j] + best_thr[sel]]
            self.nch[Pk] = 2
            self.bigslot[Pk] = np.where(nleft >= rsz - nleft, 0, 1)
            self.slot[ridx] = np.where(left, 0, 1)
            self.pieces.append((Pk, np.full(Pk.size, 2), np.tile([0, 1], Pk.size)))
        return P[~chosen]
