"""The loss space of SaNGreeA: encoded quasi-identifiers and the generalization loss (GIL).

Helpers of :mod:`anonml.anonymize._sangreea` (see its docstring for the loss): the numeric QIs
scaled into [-1, 1] by a power of two (so that no range overflows, even for ``±1.8e308``), the
leaf codes of the categorical QIs with their lowest-common-ancestor tables, and the vectorized
loss of clusters plus candidate records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.encoding import pow2_scale

__all__ = ["_Data", "_Space"]

#: full leaf-by-leaf LCA tables up to this many leaves (int8/int16, at most a few MB)
_MAX_TABLE_LEAVES = 2048
#: cells of one rows x clusters block in ``cheapest_cluster``
_BLOCK_CELLS = 1 << 21


class _Data:
    """Encoded QIs of some rows: numeric values (p, n) and leaf codes (c, n).

    Leaf codes are *offset*: categorical QI ``j`` uses codes ``off[j] .. off[j] + L_j``, so one
    gather from a concatenated table gives every categorical term at once.
    """

    __slots__ = ("cat", "num")

    def __init__(self, num: np.ndarray, cat: np.ndarray):
        self.num = num
        self.cat = cat

    @property
    def n(self) -> int:
        return self.num.shape[1]

    def take(self, idx: np.ndarray) -> _Data:
        return _Data(self.num[:, idx], self.cat[:, idx])


class _Space:
    """The loss of the fitted QIs: scales of numeric ones, LCA tables of categorical ones.

    The loss of a cluster is summed term by term in QI order (``order``: ``(0, j)`` numeric
    ``j``, ``(1, j)`` categorical ``j``), always in that order, so that every evaluation of the
    same cluster gives the same floating-point number (and ties are ties everywhere). A numeric
    term is ``(max - min) * (w / range)``; a categorical one ``w * (level / height)``.
    """

    def __init__(self) -> None:
        self.order: list[tuple[int, int]] = []
        self.num_cols: list[Any] = []
        self.exponent: list[int] = []  # numeric QI j is encoded as value * 2**-exponent[j]
        self.cat_cols: list[Any] = []
        self.scale = np.zeros(0)  # w / range of each numeric QI (0 for a constant column)
        self.inv_range = np.zeros(0)  # 1 / range, for the unweighted attribute loss
        self.hier: list[Any] = []  # Hierarchy or None (flat, on the encoder's codes)
        self.node_ids: list[np.ndarray] = []  # (L + 1, h + 1), last row: the "unknown" leaf
        self.height: list[int] = []
        self.wlev: list[np.ndarray] = []  # w * (level / height), per level
        self.table: list[np.ndarray | None] = []  # (L + 1, L + 1) LCA levels, or None
        self.off = np.zeros(0, dtype=np.int64)  # first offset code of each categorical QI
        self.n_codes = 0
        self.encoder: Any = None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def build(
        cls, frame: pd.DataFrame, qi: Sequence[Any], cat: set, weights: np.ndarray, est: Any
    ) -> _Space:
        sp = cls()
        sp.encoder = est.encoder_
        hierarchies = est._check_hierarchies(frame)
        scale, inv_range, off = [], [], []
        for a, col in enumerate(qi):
            w = float(weights[a])
            if col in cat:
                h = hierarchies.get(col)
                if h is not None:
                    node_ids = np.asarray(h.node_ids, dtype=np.int64)
                    height = int(h.height)
                else:  # flat: the encoder's codes (known values, then 'missing') under one root
                    n_leaves = sp.encoder.cats_[col].n_codes
                    node_ids = np.zeros((n_leaves, 2), dtype=np.int64)
                    node_ids[:, 0] = np.arange(n_leaves)
                    height = 1
                unknown = np.full((1, height + 1), -1, dtype=np.int64)
                unknown[0, height] = node_ids[0, height]
                node_ids = np.vstack([node_ids, unknown])
                sp.order.append((1, len(sp.cat_cols)))
                sp.cat_cols.append(col)
                sp.hier.append(h)
                sp.node_ids.append(node_ids)
                sp.height.append(height)
                sp.wlev.append(w * (np.arange(height + 1, dtype=np.float64) / height))
                n_leaves = node_ids.shape[0]
                sp.table.append(
                    _lca_rows(node_ids, np.arange(n_leaves))
                    if n_leaves <= _MAX_TABLE_LEAVES
                    else None
                )
                off.append(sp.n_codes)
                sp.n_codes += n_leaves
            else:
                # scaled by a power of two into [-1, 1] (exact for normal numbers): the range of
                # values near +-1.8e308 cannot overflow, and range ratios are those of the raw
                # values, bit for bit
                v = frame[col].to_numpy(dtype=np.float64)
                e = pow2_scale(v)
                v = np.ldexp(v, -e)
                rng = float(v.max() - v.min())
                sp.order.append((0, len(sp.num_cols)))
                sp.num_cols.append(col)
                sp.exponent.append(e)
                scale.append(w / rng if rng > 0 else 0.0)
                inv_range.append(1.0 / rng if rng > 0 else 0.0)
        sp.scale = np.asarray(scale, dtype=np.float64)
        sp.inv_range = np.asarray(inv_range, dtype=np.float64)
        sp.off = np.asarray(off, dtype=np.int64)
        # terms that are always 0 (weight 0, constant column) add nothing: skip them
        sp.active = [
            (kind, j)
            for kind, j in sp.order
            if (sp.scale[j] if kind == 0 else sp.wlev[j][-1]) != 0.0
        ]
        return sp

    # -- encoding --------------------------------------------------------------------------------
    def encode(self, frame: pd.DataFrame, handle_unknown: str = "error") -> _Data:
        n = frame.shape[0]
        num = np.empty((len(self.num_cols), n), dtype=np.float64)
        for j, col in enumerate(self.num_cols):
            num[j] = np.ldexp(frame[col].to_numpy(dtype=np.float64), -self.exponent[j])
        cat = np.empty((len(self.cat_cols), n), dtype=np.int64)
        for j, col in enumerate(self.cat_cols):
            unknown_leaf = self.node_ids[j].shape[0] - 1
            h = self.hier[j]
            if h is None:
                codes = self.encoder.codes(frame, col, handle_unknown)
                cat[j] = np.minimum(codes, unknown_leaf)
            else:
                cat[j] = _hierarchy_codes(h, frame[col], col, handle_unknown, unknown_leaf)
            cat[j] += self.off[j]
        return _Data(num, cat)

    # -- LCA levels ------------------------------------------------------------------------------
    def lca_row(self, j: int, leaf: int) -> np.ndarray:
        """LCA level of (raw) ``leaf`` with every leaf of categorical QI ``j``."""
        tab = self.table[j]
        if tab is not None:
            return tab[leaf]
        return _lca_rows(self.node_ids[j], np.array([leaf]))[0]

    def lca_rows(self, j: int, leaves: np.ndarray) -> np.ndarray:
        tab = self.table[j]
        if tab is not None:
            return tab[leaves]
        return _lca_rows(self.node_ids[j], leaves)

    def segment(self, j: int, rep: int, lvl: int) -> np.ndarray:
        """Weighted term of categorical QI ``j`` for a cluster (rep, lvl) plus each leaf."""
        return self.wlev[j][np.maximum(self.lca_row(j, rep), lvl)]

    def cat_table(self, rep: np.ndarray, lvl: np.ndarray) -> np.ndarray:
        """All categorical terms of a cluster plus each (offset) leaf, concatenated."""
        out = np.empty(self.n_codes, dtype=np.float64)
        for j in range(len(self.cat_cols)):
            out[self.off[j] : self.off[j] + self.node_ids[j].shape[0]] = self.segment(
                j, rep[j], lvl[j]
            )
        return out

    # -- losses ----------------------------------------------------------------------------------
    def loss_of(self, lo, hi, tab, data: _Data) -> np.ndarray:
        """Per-record loss of one cluster (ranges lo/hi, categorical table) plus each row."""
        n = data.n
        if not self.active:
            return np.zeros(n, dtype=np.float64)
        if self.num_cols:
            tn = np.maximum(data.num, hi[:, None])
            tn -= np.minimum(data.num, lo[:, None])
            tn *= self.scale[:, None]
        if self.cat_cols:
            tc = tab[data.cat]
        acc = None
        for kind, j in self.active:
            row = tn[j] if kind == 0 else tc[j]
            if acc is None:
                acc = row.copy()
            else:
                acc += row
        return acc

    def cluster_loss(self, lo, hi, lvl, parts: bool = False):
        """Per-record loss of each cluster (G,), and the unweighted term of each QI."""
        acc = np.zeros(lvl.shape[0], dtype=np.float64)
        terms: dict = {}
        for kind, j in self.order:
            if kind == 0:
                width = hi[:, j] - lo[:, j]
                if self.scale[j] != 0.0:
                    acc += width * self.scale[j]
                if parts:
                    terms[self.num_cols[j]] = width * self.inv_range[j]
            else:
                levels = lvl[:, j]
                if self.wlev[j][-1] != 0.0:
                    acc += self.wlev[j][levels]
                if parts:
                    terms[self.cat_cols[j]] = levels / self.height[j]
        return (acc, terms) if parts else acc

    def loss_with(self, lo, hi, rep, lvl, data: _Data, i: int) -> np.ndarray:
        """Per-record loss of every cluster plus row ``i`` of ``data``."""
        acc = np.zeros(lvl.shape[0], dtype=np.float64)
        for kind, j in self.active:
            if kind == 0:
                v = data.num[j, i]
                t = np.maximum(hi[:, j], v)
                t -= np.minimum(lo[:, j], v)
                t *= self.scale[j]
                acc += t
            else:
                leaf = data.cat[j, i] - self.off[j]
                lev = np.maximum(self.lca_row(j, leaf)[rep[:, j]], lvl[:, j])  # lca is symmetric
                acc += self.wlev[j][lev]
        return acc

    def cheapest_cluster(self, data: _Data, lo, hi, rep, lvl, sizes, loss) -> np.ndarray:
        """For each row, the cluster whose GIL grows least when the row joins it (first on ties).

        Vectorized over blocks of rows x clusters.
        """
        n = data.n
        G = sizes.shape[0]
        size = sizes.astype(np.float64)
        base = size * loss
        out = np.zeros(n, dtype=np.int64)
        best_val = np.full(n, np.inf)
        widest = max([self.node_ids[j].shape[0] for kind, j in self.active if kind == 1] + [64])
        gb = max(1, min(G, _BLOCK_CELLS // widest))
        rb = max(1, _BLOCK_CELLS // gb)
        for g0 in range(0, G, gb):  # blocks of clusters, in order: ties go to the first
            g1 = min(G, g0 + gb)
            tabs = {}  # categorical QIs: weighted level of (cluster, leaf), (gb, L + 1)
            for kind, j in self.active:
                if kind == 1:
                    lev = np.maximum(self.lca_rows(j, rep[g0:g1, j]), lvl[g0:g1, j][:, None])
                    tabs[j] = self.wlev[j][lev]
            for r0 in range(0, n, rb):
                r1 = min(n, r0 + rb)
                acc = np.zeros((r1 - r0, g1 - g0), dtype=np.float64)
                for kind, j in self.active:
                    if kind == 0:
                        v = data.num[j, r0:r1][:, None]
                        t = np.maximum(hi[None, g0:g1, j], v)
                        t -= np.minimum(lo[None, g0:g1, j], v)
                        t *= self.scale[j]
                        acc += t
                    else:
                        acc += tabs[j][:, data.cat[j, r0:r1] - self.off[j]].T
                inc = acc * (size[g0:g1] + 1.0) - base[g0:g1]
                best = inc.argmin(axis=1)
                val = inc[np.arange(r1 - r0), best]
                better = val < best_val[r0:r1]
                out[r0:r1][better] = best[better] + g0
                best_val[r0:r1][better] = val[better]
        return out


def _lca_rows(node_ids: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """LCA level of each of ``leaves`` with every leaf: (len(leaves), L) small ints."""
    height = node_ids.shape[1] - 1
    dtype = np.int8 if height < 127 else np.int16
    out = np.full((len(leaves), node_ids.shape[0]), height, dtype=dtype)
    for j in range(height - 1, -1, -1):
        eq = node_ids[leaves, j][:, None] == node_ids[None, :, j]
        out[eq] = j
    return out


def _hierarchy_codes(h: Any, column: pd.Series, col: Any, handle_unknown: str, unknown: int):
    """Leaf index of each value of ``column`` in hierarchy ``h`` (unknown values: ``unknown``)."""
    row_codes, uniques = pd.factorize(column, use_na_sentinel=False)
    uniq = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
    try:
        leaf = h.leaf_codes(uniq)
    except InputError as exc:
        if handle_unknown == "error":
            raise InputError(f"categorical quasi-identifier {col!r}: {exc}") from None
        leaf = np.empty(len(uniq), dtype=np.int64)
        for i, value in enumerate(uniq):  # distinct values only, not rows
            try:
                leaf[i] = h.leaf_codes(pd.Series([value], dtype=object))[0]
            except InputError:
                leaf[i] = unknown
    return np.asarray(leaf, dtype=np.int64)[row_codes]
