"""Hilbert-curve k-anonymization: sort the rows along a Hilbert curve, then cut the sorted run.

    G. Ghinita, P. Karras, P. Kalnis & N. Mamoulis, "Fast data anonymization with low
    information loss", VLDB 2007, 758-769.

    J. Skilling, "Programming the Hilbert curve", AIP Conference Proceedings 707 (2004),
    381-387 (the transpose algorithm used for the index).

The quasi-identifiers (QIs) are placed on a ``2^b``-per-axis grid (numeric QIs by the dense rank
of their distinct values, categorical ones in hierarchy-leaf order or category-code order, each
axis stretched over the whole grid; see :mod:`anonml.anonymize._grid`), every row gets the
index of its cell along the d-dimensional Hilbert curve, and the rows are sorted by it. The
sorted run is then cut into consecutive groups: the Hilbert order keeps rows that are close in
the QI space close in the run, so the 1-D problem stands in for the d-dimensional one.

Ghinita et al. show that in one dimension an optimal k-anonymous partition only needs groups of
``k .. 2k-1`` consecutive rows (a larger group can be split without raising the loss), and find
it by dynamic programming. Here the cost of a group is its size times its NCP summed over the
QIs (Xu et al., 2006; the GCP of :mod:`anonml.privacy._metrics` is the total over ``n * d``), so
``method="dp"`` minimizes the GCP of the segmentation exactly, over all segmentations of the
Hilbert-sorted run into valid groups. ``method="greedy"`` is the paper's fast baseline: runs of
k, the remainder joined to the last group.

Ties
----
Rows in one grid cell (identical QIs, unless an axis has more than ``2^32`` distinct values)
have one Hilbert index, and :meth:`transform` places a row by its index alone, so a cut never
falls inside a cell: the segmentation works on the runs of equal index, each with its row
count. A group is then between ``k`` and ``2k - 2 + w`` rows, ``w`` the largest number of rows
sharing one cell; without duplicated cells, ``k .. 2k-1`` as in the paper. The optimality
argument still holds with runs: a group that can be cut into two parts of at least k rows each is
never needed, so for a group ending at run boundary ``v`` only the starts between the largest
start ``c*`` leaving k rows and the last start ``> rows(c*) - k`` are candidates (at most k).

The segmentation (the dynamic program with l-diversity or t-closeness, and how it is made
fast) is described in :mod:`anonml.anonymize._hilbert_segment`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.anonymize._base import BaseAnonymizer
from anonml.anonymize._grid import QIGrid
from anonml.anonymize._hilbert_segment import _dp, _greedy, _Runs, _segmentation_loss

__all__ = ["HilbertAnonymizer", "hilbert_digits", "hilbert_order", "hilbert_transpose"]

_MAX_BITS = 32


# ------------------------------------------------------------------------------------------------
# The Hilbert index (Skilling 2004), vectorized over rows
# ------------------------------------------------------------------------------------------------
def hilbert_transpose(X: np.ndarray, bits: int) -> np.ndarray:
    """Skilling's ``AxestoTranspose`` on every column of ``X`` at once, in place.

    Parameters
    ----------
    X : ndarray of uint16 or uint32, shape (d, n)
        Grid coordinates ``0 .. 2^bits - 1`` of n points, one row per axis.
    bits : int
        Bits per axis, ``1 .. 16`` for uint16, ``.. 32`` for uint32.

    Returns
    -------
    X, holding the Hilbert index of every point in *transpose* form: bit ``j`` of ``X[i]`` is
    bit ``j * d + (d - 1 - i)`` of the index (see :func:`hilbert_digits`).
    """
    d = X.shape[0]
    dt = X.dtype.type
    signed = np.int16 if X.dtype == np.uint16 else np.int32
    width = X.dtype.itemsize * 8
    x0 = X[0]
    t = np.empty_like(x0)
    mask = np.empty_like(x0)
    for q in range(bits - 1, 0, -1):  # Q = 2^q, P = Q - 1
        P = dt((1 << q) - 1)
        for i in range(d):
            xi = X[i]
            # mask = all ones where bit q of X[i] is set (arithmetic shift of the signed view)
            np.left_shift(xi, width - 1 - q, out=mask)
            np.right_shift(mask.view(signed), width - 1, out=mask.view(signed))
            if i == 0:  # invert the low bits of X[0] where its bit q is set
                np.bitwise_and(mask, P, out=mask)
                np.bitwise_xor(x0, mask, out=x0)
                continue
            # where the bit is set, invert X[0]'s low bits; elsewhere exchange them with X[i]'s
            np.bitwise_xor(x0, xi, out=t)
            np.bitwise_and(t, P, out=t)
            np.bitwise_and(t, ~mask, out=t)
            np.bitwise_and(mask, P, out=mask)
            np.bitwise_or(mask, t, out=mask)
            np.bitwise_xor(x0, mask, out=x0)
            np.bitwise_xor(xi, t, out=xi)
    for i in range(1, d):  # Gray encode
        np.bitwise_xor(X[i], X[i - 1], out=X[i])
    t[:] = 0
    last = X[d - 1]
    for q in range(bits - 1, 0, -1):
        np.left_shift(last, width - 1 - q, out=mask)
        np.right_shift(mask.view(signed), width - 1, out=mask.view(signed))
        np.bitwise_and(mask, dt((1 << q) - 1), out=mask)
        np.bitwise_xor(t, mask, out=t)
    np.bitwise_xor(X, t, out=X)
    return X


def hilbert_digits(T: np.ndarray, bits: int) -> np.ndarray:
    """The Hilbert index of transposed points as big-endian 16-bit digits.

    Parameters
    ----------
    T : ndarray, shape (d, n)
        Output of :func:`hilbert_transpose`.
    bits : int

    Returns
    -------
    ndarray of uint16, shape (ceil(d * bits / 16), n)
        Row 0 is the most significant digit; comparing rows lexicographically compares indices.
    """
    d, n = T.shape
    n_digits = -(-d * bits // 16)
    D = np.zeros((n_digits, n), dtype=np.uint16)
    tmp = np.empty(n, dtype=T.dtype)
    p = 0  # bit position from the most significant end
    for j in range(bits - 1, -1, -1):
        for i in range(d):
            np.right_shift(T[i], j, out=tmp)
            np.bitwise_and(tmp, 1, out=tmp)
            shift = 15 - (p % 16)
            if shift:
                np.left_shift(tmp, shift, out=tmp)
            np.bitwise_or(D[p // 16], tmp.astype(np.uint16, copy=False), out=D[p // 16])
            p += 1
    return D


def hilbert_order(D: np.ndarray) -> np.ndarray:
    """Stable order of the columns of the digit matrix ``D`` (LSD radix sort, one pass per
    non-constant digit; numpy sorts 16-bit keys stably by radix)."""
    n = D.shape[1]
    order = np.arange(n)
    for t in range(D.shape[0] - 1, -1, -1):
        row = D[t]
        if n == 0 or row.min() == row.max():
            continue
        order = order[np.argsort(row[order], kind="stable")]
    return order


def _grid_coords(ranks: np.ndarray, n_slots: np.ndarray, bits: int) -> np.ndarray:
    """(d, n) grid coordinates: each axis' ranks stretched over ``0 .. 2^bits - 1``."""
    dtype = np.uint16 if bits <= 16 else np.uint32
    scale = np.int64(1) << bits
    X = np.empty((ranks.shape[1], ranks.shape[0]), dtype=dtype)
    for j in range(ranks.shape[1]):
        r = np.clip(ranks[:, j], 0, n_slots[j] - 1)
        X[j] = (r * scale) // n_slots[j]
    return X


# ------------------------------------------------------------------------------------------------
# The estimator
# ------------------------------------------------------------------------------------------------
class HilbertAnonymizer(BaseAnonymizer):
    """k-anonymize a table by cutting its Hilbert-curve order into groups (Ghinita et al., 2007).

    The rows are sorted by the Hilbert index of their QIs on a grid and the sorted run is cut
    into consecutive groups of at least k rows that minimize the total information loss
    (``sum |G| * NCP(G)``, i.e. the GCP); see the module docstring for the grid, the handling
    of tied rows and the speed-ups.

    Parameters
    ----------
    k : int
        Smallest group size, ``>= 2``.
    quasi_identifiers : list, optional
        QI columns (names for a DataFrame, positions for an array). None means every column.
    categorical_features : list, optional
        Categorical columns. None detects them from dtype (object, ``str``, category, bool).
    method : {"dp", "greedy"}, default "dp"
        ``"dp"``: the segmentation of least total NCP (dynamic programming over groups of
        ``k .. 2k-1`` rows, the paper's optimal 1-D algorithm). ``"greedy"``: consecutive runs
        of k rows, the remainder joined to the last group (both never cut between rows of one
        grid cell).
    sensitive, l, l_kind, c, t, t_distance : optional
        Privacy model on top of k (l-diversity or t-closeness of one sensitive column): only
        segments that satisfy it are groups. Groups may then be larger than ``2k - 1`` (see the
        module docstring for the per-boundary bound searched).
    hierarchies : dict, optional
        ``{column: Hierarchy}``. A QI with a hierarchy (numeric or not) is ordered by leaf
        (hierarchy order) and its loss is the share of leaves under the group's lowest common
        ancestor, as in :func:`anonml.privacy.gcp`; other categorical QIs are ordered by
        category code and lose the share of distinct values.
    recoding : {"representative", "generalize"}, default "representative"
        Output of each group: one real record's QIs, or ranges / hierarchy labels / sets.
    suppression : float, default 0.0
        Share of rows that may be suppressed (the groups of highest NCP first).
    representative : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}, default "majority_medoid"
        Choice of the representative record (the majority rule needs ``y``).
        The per-feature rules (see :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`) give
        each QI its own real value of the group: the one closest to the group's median
        (numeric) or the most frequent (categorical); ``"per_feature_joint"`` takes the
        numeric QIs so and the categorical QIs together from one real record of the group
        (its most frequent categorical combination).
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit: raise, or route it by the routing tree ``route_``
        (the structure a released copy keeps): a split that names categories sends it to the
        side it does not name, a split on a range of categories places it by its text order.
        New numeric values are routed by the routing tree's rounded thresholds.
    random_state : None
        Not used: the algorithm is deterministic. Kept for the common interface.
    copy : bool, default True
        ``False``: recode the quasi-identifier columns of the DataFrame given in place and return
        it (scikit-learn's ``copy`` convention); everything that can fail runs first, so on an
        error ``X`` is unchanged. As in :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`.

    Attributes
    ----------
    groups_ : ndarray of shape (n_rows,)
        Group of every training row, numbered 0 .. n_groups_-1 along the Hilbert curve.
    n_groups_ : int
    bits_ : int
        Bits per axis of the grid (enough for the axis with most ranks, at most 32).
    information_loss_ : float
        ``sum_G |G| sum_A NCP_A(G)`` of the groups found (the DP objective).
    gcp_ : float
        ``information_loss_ / (n_rows * n_QIs)``, the Global Certainty Penalty in [0, 1].
    group_sizes_ : ndarray of shape (n_groups_,)
    search_extent_ : int
        The largest ``E``, how far (rows) behind ``c*`` candidate starts reached back for some
        boundary; ``k`` without l / t.
    representatives_, representative_rows_, min_class_size_, privacy_, qi_, categorical_,
    encoder_, model_ :
        As in every anonymizer (:class:`~anonml.anonymize._base.BaseAnonymizer`).
    timings_ : dict
        Seconds per step of the last fit; ``partition`` splits into ``partition_hilbert``
        (grid, index and sort) and ``partition_segment``.

    Examples
    --------
    >>> from anonml.anonymize._hilbert import HilbertAnonymizer
    >>> from anonml.datasets import load_adult
    >>> data = load_adult()
    >>> X = data.X.iloc[:2000]
    >>> hb = HilbertAnonymizer(k=10, quasi_identifiers=data.qi_sets["8"])
    >>> X_anon = hb.fit_transform(X)
    >>> hb.min_class_size_ >= 10
    True
    """

    _needs_target = False
    _merge_violations = False

    def __init__(
        self,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        method: str = "dp",
        sensitive: Any = None,
        l: float | None = None,
        l_kind: str = "distinct",
        c: float | None = None,
        t: float | None = None,
        t_distance: str = "auto",
        hierarchies: dict | None = None,
        recoding: str = "representative",
        suppression: float = 0.0,
        representative: str = "majority_medoid",
        handle_unknown: str = "error",
        random_state: Any = None,
        copy: bool = True,
    ):
        self.k = k
        self.quasi_identifiers = quasi_identifiers
        self.categorical_features = categorical_features
        self.method = method
        self.sensitive = sensitive
        self.l = l
        self.l_kind = l_kind
        self.c = c
        self.t = t
        self.t_distance = t_distance
        self.hierarchies = hierarchies
        self.recoding = recoding
        self.suppression = suppression
        self.representative = representative
        self.handle_unknown = handle_unknown
        self.random_state = random_state
        self.copy = copy

    # -- partition -------------------------------------------------------------------------------
    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray | None) -> np.ndarray:
        if self.method not in ("dp", "greedy"):
            raise InputError(f"method={self.method!r}; use 'dp' or 'greedy'")
        t0 = time.perf_counter()
        grid = QIGrid(self.qi_, self.categorical_, self.encoder_, self._check_hierarchies(frame))
        ranks = grid.fit_ranks(frame)
        self._grid = grid
        n_slots = np.array([a.n_slots for a in grid.axes], dtype=np.int64)
        self.bits_ = int(min(_MAX_BITS, max(1, int(np.ceil(np.log2(n_slots.max()))))))
        self._n_slots = n_slots
        D = hilbert_digits(hilbert_transpose(_grid_coords(ranks, n_slots, self.bits_), self.bits_),
                           self.bits_)
        order = hilbert_order(D)
        Ds = D[:, order]
        new_run = np.ones(order.size, dtype=bool)
        new_run[1:] = (Ds[:, 1:] != Ds[:, :-1]).any(axis=0)
        starts = np.flatnonzero(new_run)
        t1 = time.perf_counter()

        model = self.model_
        runs = _Runs.build(grid, ranks, order, starts, model)
        k = int(self.k)
        if self.method == "greedy":
            cuts = _greedy(runs, k, model)
            extent = k
        else:
            cuts, extent = _dp(runs, k, model)
        t2 = time.perf_counter()
        run_group = np.repeat(np.arange(cuts.size - 1), np.diff(cuts))
        row_group = np.repeat(run_group, np.diff(runs.C))
        groups = np.empty(order.size, dtype=np.int64)
        groups[order] = row_group
        self._boundary_digits = Ds[:, starts[cuts[:-1]]]  # first index of every group
        self.search_extent_ = int(extent)
        self.group_sizes_ = np.diff(runs.C[cuts])
        self.information_loss_ = _segmentation_loss(runs, cuts)
        self.gcp_ = self.information_loss_ / (frame.shape[0] * len(self.qi_))
        self._partition_timings = {"partition_hilbert": t1 - t0, "partition_segment": t2 - t1}
        return groups

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        ranks = self._grid.ranks(frame, self.handle_unknown)
        D = hilbert_digits(
            hilbert_transpose(_grid_coords(ranks, self._n_slots, self.bits_), self.bits_),
            self.bits_,
        )
        return _locate(self._boundary_digits, D)


def _locate(boundaries: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Index of the last boundary key <= each key of ``D`` (0 when below the first).

    Keys are columns of 16-bit digit matrices; one stable radix sort of both sets, with the
    boundaries first among equal keys, gives every key's count of boundaries at or below it.
    """
    n_b, n = boundaries.shape[1], D.shape[1]
    both = np.concatenate([boundaries, D], axis=1)
    order = hilbert_order(both)  # stable: boundaries (listed first) precede equal new keys
    is_boundary = order < n_b
    seen = np.cumsum(is_boundary)
    out = np.empty(n, dtype=np.int64)
    new_pos = ~is_boundary
    out[order[new_pos] - n_b] = seen[new_pos] - 1
    return np.maximum(out, 0)
