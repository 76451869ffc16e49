"""Quasi-identifiers as integer ranks on an ordered grid, and their information loss.

Shared by the two spatial partitioners, :mod:`anonml.anonymize._hilbert` (Ghinita et al., 2007)
and :mod:`anonml.anonymize._rtree` (Iwuchukwu & Naughton, 2007). Each quasi-identifier (QI)
becomes one axis of integer *ranks*, ``0 .. n_slots - 1``:

* a numeric QI without a hierarchy: the dense rank of its distinct training values;
* a QI with a generalization hierarchy (numeric or not): the index of its value's leaf in
  *hierarchy order*, in which the leaves of every node are contiguous (one more slot for new
  categories, when ``handle_unknown="ignore"``);
* a categorical QI without a hierarchy: its category code (sorted values, then "missing", then
  "unknown"; see :class:`anonml.encoding.TableEncoder`).

A new numeric value (in :meth:`QIGrid.ranks`) takes the rank of the largest training value not
above it (of the smallest when below all), with or without a hierarchy.

The information loss of a group is the Normalized Certainty Penalty of Xu et al. (2006), as in
:mod:`anonml.privacy._metrics`: per QI, a numeric range over the table's range; the share of
leaves under the lowest common ancestor (LCA) for a QI with a hierarchy (0 for a single leaf);
for a categorical QI without one, the number of distinct values over the number in the table
when the group holds more than one (set recoding), else 0. Because the leaves of a node are
contiguous in hierarchy order, the LCA of a group is the LCA of its smallest and largest leaf,
so every per-QI penalty is a function of a group's minimum and maximum rank, except the set
share, which needs the set of codes (kept as bit masks by the partitioners).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.encoding import TableEncoder, scaled_values

__all__ = ["Axis", "QIGrid"]

#: a full leaf-by-leaf LCA share table is built up to this many leaves (float64, <= 8 MB)
_MAX_TABLE_LEAVES = 1024


@dataclass
class Axis:
    """One QI as an axis of integer ranks (see the module docstring)."""

    column: Any
    kind: str  # "num", "set" or "tree"
    n_slots: int  # ranks run 0 .. n_slots - 1 (new rows included)
    values: np.ndarray | None = None  # num / numeric tree: sorted distinct training values
    norm: np.ndarray | None = None  # num: (value - min) / (max - min) of each rank
    n_distinct: int = 1  # set: distinct values in the training column (missing counts)
    leaf_of_code: np.ndarray | None = None  # categorical tree: encoder code -> leaf rank
    leaf_of_value: np.ndarray | None = None  # numeric tree: rank of `values` -> leaf rank
    hierarchy: Any = None
    _top_train_rank: int = 0  # the largest rank of a training row
    _share: np.ndarray | None = field(default=None, repr=False)

    # -- information loss ----------------------------------------------------------------------
    def range_ncp(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """NCP of groups whose smallest and largest rank are ``lo`` and ``hi`` (num or tree)."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        if self.kind == "num":
            return self.norm[hi] - self.norm[lo]
        if self.kind != "tree":  # pragma: no cover - internal misuse
            raise ValueError("range_ncp is for numeric and hierarchy axes")
        table = self.share_table()
        if table is not None:
            return table[lo * self.n_slots + hi]
        return self._lca_share(lo, hi)

    def share_table(self) -> np.ndarray | None:
        """Flattened ``(n_slots, n_slots)`` table of the LCA share of leaf ranks ``(lo, hi)``,
        or None when the hierarchy has more than ``_MAX_TABLE_LEAVES`` leaves."""
        if self.kind != "tree" or self.n_slots > _MAX_TABLE_LEAVES + 1:
            return None
        if self._share is None:
            s = self.n_slots
            lo, hi = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
            self._share = self._lca_share(lo.ravel(), hi.ravel())
        return self._share

    def _lca_share(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Leaves under the LCA of leaf ranks ``lo`` and ``hi``, over all leaves (0 if equal).

        The last slot stands for values that are not leaves: with anything else it generalizes
        to the root (share 1)."""
        h = self.hierarchy
        n_leaves = h.n_leaves
        out = np.ones(lo.shape, dtype=np.float64)
        same = lo == hi
        inside = (lo < n_leaves) & (hi < n_leaves) & ~same
        a, b = lo[inside], hi[inside]
        eq = h.node_ids[a] == h.node_ids[b]  # (m, height+1), monotone in the level
        level = np.argmax(eq, axis=1)
        node = h.node_ids[a, level]
        share = np.empty(a.shape, dtype=np.float64)
        for lev in np.unique(level):
            sel = level == lev
            share[sel] = h.subtree_size(int(lev))[node[sel]] / n_leaves
        out[inside] = share
        out[same] = 0.0
        return out

    def set_ncp(self, n_values: np.ndarray) -> np.ndarray:
        """NCP of groups holding ``n_values`` distinct values (set recoding)."""
        n_values = np.asarray(n_values)
        return np.where(n_values > 1, n_values / self.n_distinct, 0.0)

    def coordinate(self, ranks: np.ndarray) -> np.ndarray:
        """Ranks mapped to [0, 1]: normalized value (num), else rank over the largest
        training rank (the MBR coordinates of the R-tree)."""
        if self.kind == "num":
            return self.norm[np.clip(ranks, 0, self.n_slots - 1)]
        top = self._top_train_rank
        return np.minimum(ranks, top) / max(top, 1)


class QIGrid:
    """Rank encoding of the QIs of a table (see the module docstring).

    Parameters
    ----------
    qi : list
        The QI columns, in order.
    categorical : list
        The categorical ones among them.
    encoder : TableEncoder
        Fitted on the training table (category codes).
    hierarchies : dict, optional
        Column -> :class:`anonml.hierarchies.Hierarchy`; other QIs are ranked by value / code.
    """

    def __init__(
        self,
        qi: Sequence[Any],
        categorical: Sequence[Any],
        encoder: TableEncoder,
        hierarchies: Mapping[Any, Any] | None = None,
    ):
        self.qi = list(qi)
        self.categorical = set(categorical)
        self.encoder = encoder
        self.hierarchies = dict(hierarchies or {})
        self.axes: list[Axis] = []

    # -- fit -----------------------------------------------------------------------------------
    def fit_ranks(self, frame: pd.DataFrame) -> np.ndarray:
        """Learn the axes from the training table and return its ranks, (n_rows, d) int64."""
        n = frame.shape[0]
        out = np.empty((n, len(self.qi)), dtype=np.int64, order="F")  # column by column
        self.axes = []
        for j, c in enumerate(self.qi):
            h = self.hierarchies.get(c)
            if c in self.categorical:
                codes = self.encoder.codes(frame, c)
                spec = self.encoder.cats_[c]
                m = len(spec.categories)
                if h is None:
                    axis = Axis(c, "set", m + 2, n_distinct=m + int(spec.has_missing))
                    out[:, j] = codes
                else:
                    leaf = np.full(m + 2, h.n_leaves, dtype=np.int64)
                    with _naming(c):
                        if m:
                            leaf[:m] = h.leaf_codes(pd.Series(spec.categories, dtype=object))
                        if spec.has_missing:  # a missing value must be a leaf too (else: error)
                            leaf[m] = h.leaf_codes(frame[c][codes == m].iloc[:1])[0]
                    axis = Axis(c, "tree", h.n_leaves + 1, leaf_of_code=leaf, hierarchy=h)
                    out[:, j] = leaf[codes]
            else:
                v = frame[c].to_numpy(dtype=np.float64)
                row_codes, uniques = pd.factorize(v)
                values = np.asarray(uniques, dtype=np.float64)
                order = np.argsort(values, kind="stable")
                rank_of_unique = np.empty(order.size, dtype=np.int64)
                rank_of_unique[order] = np.arange(order.size)
                values = values[order]
                ranks = rank_of_unique[row_codes]
                if h is None:
                    # scaled by a power of two first (exact), so that the span of values near
                    # +-1.8e308 cannot overflow; the same numbers as (v - min) / (max - min)
                    scaled = scaled_values(values)
                    span = scaled[-1] - scaled[0]
                    norm = (scaled - scaled[0]) / span if span > 0 else np.zeros(values.size)
                    axis = Axis(c, "num", values.size, values=values, norm=norm)
                    out[:, j] = ranks
                else:
                    with _naming(c):
                        leaf = h.leaf_codes(values)
                    axis = Axis(
                        c, "tree", h.n_leaves + 1, values=values, leaf_of_value=leaf, hierarchy=h
                    )
                    out[:, j] = leaf[ranks]
            axis._top_train_rank = int(out[:, j].max()) if n else 0
            self.axes.append(axis)
        return out

    # -- new rows ------------------------------------------------------------------------------
    def ranks(self, frame: pd.DataFrame, handle_unknown: str = "error") -> np.ndarray:
        """Ranks of any rows, (n_rows, d) int64, consistent with :meth:`fit_ranks`."""
        n = frame.shape[0]
        out = np.empty((n, len(self.qi)), dtype=np.int64, order="F")  # column by column
        for j, (c, axis) in enumerate(zip(self.qi, self.axes)):
            if c in self.categorical:
                codes = self.encoder.codes(frame, c, handle_unknown)
                out[:, j] = codes if axis.kind == "set" else axis.leaf_of_code[codes]
                continue
            v = frame[c].to_numpy(dtype=np.float64)
            # a new value ranks like the largest training value not above it (the smallest
            # when below all), with or without a hierarchy
            pos = np.clip(np.searchsorted(axis.values, v, side="right") - 1, 0, axis.values.size - 1)
            out[:, j] = pos if axis.kind == "num" else axis.leaf_of_value[pos]
        return out

    # -- information loss ----------------------------------------------------------------------
    def group_ncp(self, ranks: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
        """(n_groups, d) NCP of every group and QI, from the ranks of its rows."""
        groups = np.asarray(groups, dtype=np.int64)
        order = np.argsort(groups, kind="stable")
        g_sorted = groups[order]
        starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
        present = g_sorted[starts]
        out = np.zeros((n_groups, len(self.axes)))
        for j, axis in enumerate(self.axes):
            r = ranks[order, j]
            if axis.kind == "set":
                cell = groups * axis.n_slots + ranks[:, j]
                if n_groups * axis.n_slots <= 4 * cell.size:
                    seen = np.bincount(cell, minlength=n_groups * axis.n_slots) > 0
                    n_values = seen.reshape(n_groups, axis.n_slots).sum(axis=1)
                else:
                    pairs = np.unique(cell)
                    n_values = np.bincount(pairs // axis.n_slots, minlength=n_groups)
                out[:, j] = axis.set_ncp(n_values)
            else:
                lo = np.minimum.reduceat(r, starts)
                hi = np.maximum.reduceat(r, starts)
                out[present, j] = axis.range_ncp(lo, hi)
        return out

    def information_loss(self, ranks: np.ndarray, groups: np.ndarray, n_groups: int) -> float:
        """``sum_G |G| * sum_A NCP_A(G)``: the Hilbert objective; GCP is this over ``n * d``."""
        sizes = np.bincount(np.asarray(groups, dtype=np.int64), minlength=n_groups)
        return float(sizes @ self.group_ncp(ranks, groups, n_groups).sum(axis=1))


@contextmanager
def _naming(column: Any) -> Iterator[None]:
    """Prefix a hierarchy's InputError with the column it was used for."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"quasi-identifier {column!r}: {exc}") from None
