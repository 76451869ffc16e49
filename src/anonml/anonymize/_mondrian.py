"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt & Ramakrishnan, 2006), and InfoGain
Mondrian (LeFevre, DeWitt & Ramakrishnan, 2008).

    K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Mondrian Multidimensional K-Anonymity",
    ICDE 2006, doi:10.1109/ICDE.2006.101.

    K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Workload-Aware Anonymization Techniques for
    Large-Scale Datasets", ACM TODS 33(3), 2008, doi:10.1145/1386118.1386123.

Greedy top-down partitioning of the quasi-identifier (QI) space: a partition is cut in two at the
median of the dimension where its values spread widest, relative to the whole table, as long as
both halves satisfy the privacy model; a partition no dimension can cut is one group.

Implementation
--------------
The partitions are processed *level by level*, never one at a time: the rows of all active
partitions sit in one array, grouped by partition, and every step of a level (ranges of every
dimension, medians, the sizes and sensitive-value counts of the candidate halves) is one numpy
pass over that array. Values are replaced once by their ranks, so a level's medians come from one
``np.sort`` of ``partition * n_ranks + rank`` keys. The cuts are recorded as a tree of arrays
(node -> dimension, threshold or child map), through which :meth:`MondrianAnonymizer.transform`
routes any rows level by level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.anonymize._base import BaseAnonymizer
from anonml.anonymize._mondrian_cuts import (
    _CHILDREN,
    _HIER,
    _ORDERED,
    _RELAXED,
    _CutSearch,
    _dense_rank,
)
from anonml.encoding import scaled_values

__all__ = ["MondrianAnonymizer"]


class MondrianAnonymizer(BaseAnonymizer):
    """k-anonymize a table by Mondrian multidimensional partitioning of its quasi-identifiers.

    Strict (or relaxed) multidimensional median partitioning (LeFevre et al., 2006): starting
    from the whole table, every partition is cut on the dimension of widest *normalized range*
    (its range divided by the range of the whole table), at the median. A cut is allowed only if
    every part satisfies the privacy model (at least ``k`` rows, and l-diversity or t-closeness
    of ``sensitive`` when asked); otherwise the next-widest dimension is tried, and a partition
    that no dimension can cut becomes a group. Ranges are recomputed from the members after
    every cut. With ``criterion="infogain"`` the cut is instead the allowed one of largest
    information gain on the class labels ``y`` (InfoGain Mondrian, LeFevre et al., 2008).

    The groups are then recoded by the shared pipeline (a representative record, or generalized
    labels) and the output is verified independently.

    Parameters
    ----------
    k : int, default 10
        Smallest equivalence-class size, ``>= 2``.
    quasi_identifiers : list, optional
        QI columns (names for a DataFrame, positions for an array). None means every column.
    categorical_features : list, optional
        Categorical columns. None detects them from dtype (object, ``str``, category, bool).
    mode : {"strict", "relaxed"}, default "strict"
        ``"strict"`` (strict multidimensional partitioning, LeFevre et al. 2006, Sec. 4): the
        median is the value at sorted position ``(n - 1) // 2`` (the lower median), the left
        part holds the rows ``<=`` it and the right part the rows ``>`` it, so rows equal to the
        median stay together and the regions never overlap. ``"relaxed"`` (relaxed
        multidimensional partitioning): rows equal to the median may be divided between the two
        parts so that the left part holds ``ceil(n / 2)`` rows; which tied rows go left is
        decided by the lexicographic order of their whole QI vector (QIs in column order), so
        that the cut is a deterministic rule that :meth:`transform` can apply to any row. Rows
        with identical QI vectors are never separated, so the cut lands on the nearest boundary
        between distinct vectors. Cuts on a hierarchy are the same in both modes.
    criterion : {"median", "infogain"}, default "median"
        ``"median"``: the widest-dimension median cut above; ``y`` is not needed. ``"infogain"``
        (InfoGain Mondrian): among *all* allowed cuts of the partition -- every threshold
        between two consecutive distinct values of every ordered dimension, and the cut of a
        hierarchy dimension into the children of its lowest common ancestor -- the one of
        largest information gain on the class labels ``y`` (ties: the first dimension, then the
        smallest threshold). A partition where no allowed cut gains information (a pure one) is
        cut by the median rule, so that the groups are as small as the model allows. Needs
        class labels ``y``.
    sensitive, l, l_kind, c, t, t_distance : optional
        Privacy model on a sensitive column, checked for every part of every cut: ``l``-diversity
        (``l_kind`` "distinct", "entropy" or "recursive" with ``c``) or ``t``-closeness (with
        ``t_distance``). See :func:`anonml.privacy.build_privacy_model`.
    hierarchies : dict of column -> Hierarchy, optional
        Generalization hierarchies. A categorical QI with a hierarchy is cut along it: the
        values of a partition lie under their lowest common ancestor (LCA), and a cut divides
        the partition among the children of the LCA (a multi-way cut, allowed only if every
        non-empty child part satisfies the model); its normalized range is the number of leaves
        under the LCA divided by the number of leaves of the hierarchy. A categorical QI without
        a hierarchy is ordered by its sorted category codes and cut like a number. Hierarchies of
        numeric QIs are not used for cutting (numeric QIs are always cut at medians) but are used
        by ``recoding="generalize"``.
    recoding : {"representative", "generalize"}, default "representative"
        How the groups are written out (see :class:`~anonml.anonymize._base.BaseAnonymizer`).
    suppression : float, default 0.0
        Share of rows that may be suppressed (the groups of highest NCP first).
    representative : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}, default "majority_medoid"
        Choice of each group's representative record; without ``y`` both are the medoid.
        The per-feature rules (see :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`) give
        each QI its own real value of the group: the one closest to the group's median
        (numeric) or the most frequent (categorical); ``"per_feature_joint"`` takes the
        numeric QIs so and the categorical QIs together from one real record of the group
        (its most frequent categorical combination).
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit (a value the
        hierarchy lists but the training data lacks counts as unseen): raise, or route it by the routing tree ``route_``
        (the structure a released copy keeps): a split that names categories sends it to the
        side it does not name, a split on a range of categories places it by its text order.
        (The fitted cut tree's own ``_assign`` routes it to the largest part.)
    random_state : None
        Unused: Mondrian is deterministic. Accepted for a uniform interface.
    copy : bool, default True
        ``False``: recode the quasi-identifier columns of the DataFrame given in place and return
        it (scikit-learn's ``copy`` convention); everything that can fail runs first, so on an
        error ``X`` is unchanged. As in :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`.

    Attributes
    ----------
    groups_ : ndarray of shape (n_rows,)
        Group of every training row, numbered 0 .. n_groups_-1.
    n_groups_ : int
        Number of groups (final partitions).
    representatives_ : DataFrame
        One row per group (index ``group``): its recoded QI values.
    min_class_size_ : int
        Smallest equivalence class of the output, as verified independently.
    tree_ : object
        The recorded cuts, as arrays: for each node its dimension (``feature_``, -1 for a
        leaf), kind of cut (``kind_``), threshold (``threshold_``), and its children
        (``child_nodes_[child_offset_[node] + slot]``).
    depth_ : int
        Number of levels of cuts.
    qi_, categorical_ : list
        The QI columns and the categorical ones among them.
    model_ : anonml.privacy.PrivacyModel
        The privacy model the cuts honour.
    timings_ : dict
        Seconds spent in each step of the last fit.

    Notes
    -----
    Cost per level: ``O(n · d)`` for the ranges, then one sort of the rows of the partitions
    still without a cut for each dimension tried (most partitions are cut on their first or
    second choice), so about ``O(n log n)`` per level and ``O(n log n · log(n / k))`` in all
    for balanced cuts; no Python loop runs over rows or partitions. ``criterion="infogain"``
    sorts every dimension at every level.

    Examples
    --------
    >>> from anonml.anonymize import MondrianAnonymizer
    >>> from anonml.datasets import load_adult
    >>> data = load_adult()
    >>> X = data.X.iloc[:2000]
    >>> m = MondrianAnonymizer(k=20, quasi_identifiers=["age", "sex", "race"])
    >>> X_anon = m.fit_transform(X)
    >>> m.min_class_size_ >= 20
    True
    """

    _needs_target = False

    def __init__(
        self,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        mode: str = "strict",
        criterion: str = "median",
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
        self.mode = mode
        self.criterion = criterion
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

    # -- partition ---------------------------------------------------------------------------------
    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray | None) -> np.ndarray:
        if self.mode not in ("strict", "relaxed"):
            raise InputError(f"mode={self.mode!r}; use 'strict' or 'relaxed'")
        if self.criterion not in ("median", "infogain"):
            raise InputError(f"criterion={self.criterion!r}; use 'median' or 'infogain'")
        y = None
        if self.criterion == "infogain":
            if y_fit is None:
                raise InputError(
                    "criterion='infogain' needs class labels; pass them as fit(X, y), or use "
                    "criterion='median'"
                )
            if getattr(self, "task_", None) == "regression":
                raise InputError(
                    "criterion='infogain' needs class labels, but y is a continuous target; "
                    "pass class labels or use criterion='median'"
                )
            y = np.asarray(y_fit, dtype=np.int64)
        hierarchies = self._check_hierarchies(frame)
        dims, R = self._encode_dimensions(frame, hierarchies)
        self.dims_ = dims
        full_rank = None
        if self.mode == "relaxed":
            full_rank = _lexicographic_rank(R, [d.n_ranks for d in dims])
        tree = _CutTree(self.k, self.model_, self.mode, self.criterion)
        leaves = tree.fit(R, dims, full_rank=full_rank, y=y)
        if self.mode == "relaxed":
            # the QI vector of the training row at each relaxed threshold, for routing ties
            tree.relaxed_vectors_ = self._values(frame.iloc[tree.relaxed_rows_], "error")
        self.tree_ = tree
        self._fit_leaves = leaves  # each row's leaf, for the routing tree built at fit's end
        self.depth_ = tree.depth_
        is_leaf = tree.feature_ < 0
        self.leaf_to_group_ = np.where(is_leaf, np.cumsum(is_leaf) - 1, -1)
        return self.leaf_to_group_[leaves]

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        return self.leaf_to_group_[self.tree_.apply(self._values(frame, self.handle_unknown))]

    # -- encoding ----------------------------------------------------------------------------------
    def _encode_dimensions(
        self, frame: pd.DataFrame, hierarchies: dict
    ) -> tuple[list[_Dim], list[np.ndarray]]:
        """One :class:`_Dim` per QI, and each row's rank in each (one array per QI)."""
        cat = set(self.categorical_)
        dims: list[_Dim] = []
        cols: list[np.ndarray] = []
        for c in self.qi_:
            if c not in cat:
                v = frame[c].to_numpy(dtype=np.float64)
                codes, uniques = pd.factorize(v)
                order = np.argsort(uniques, kind="stable")
                rank_of = np.empty(order.size, dtype=np.int64)
                rank_of[order] = np.arange(order.size)
                values = np.asarray(uniques, dtype=np.float64)[order]
                # widths are measured on the values scaled by a power of two (exact): the span
                # of values near +-1.8e308 would overflow
                scaled = scaled_values(values)
                dims.append(
                    _Dim(_ORDERED, values, float(scaled[-1] - scaled[0]), np.inf, scaled=scaled)
                )
                cols.append(rank_of[codes])
                continue
            spec = self.encoder_.cats_[c]
            codes = self.encoder_.codes(frame, c)
            m = len(spec.categories)
            hier = hierarchies.get(c)
            if hier is None:
                n_seen = m + int(spec.has_missing)
                values = np.arange(m + 2, dtype=np.float64)
                lo, hi = int(codes.min()), int(codes.max())
                dims.append(_Dim(_ORDERED, values, float(hi - lo), float(n_seen)))
                cols.append(codes)
                continue
            if spec.has_missing:
                raise InputError(
                    f"column {c!r} has missing values, which its hierarchy cannot place; fill "
                    "them with a value the hierarchy lists (e.g. '?'), or drop the hierarchy of "
                    "this column"
                )
            try:
                leaf_of_code = np.asarray(hier.leaf_codes(spec.categories), dtype=np.int64)
            except InputError as exc:
                raise InputError(f"hierarchies[{c!r}]: {exc}") from None
            cat_to_leaf = np.concatenate([leaf_of_code, [-1, -1]])  # missing, unknown -> -1
            ids = hier.node_ids
            levels = range(ids.shape[1])
            sizes_at = np.column_stack([np.asarray(hier.subtree_size(j))[ids[:, j]] for j in levels])
            starts_at = np.column_stack([np.asarray(hier.node_start(j))[ids[:, j]] for j in levels])
            dims.append(_Dim(_HIER, None, float(hier.n_leaves), np.inf, hier, cat_to_leaf,
                             sizes_at.astype(np.int64), starts_at.astype(np.int64)))
            cols.append(cat_to_leaf[codes])
        return dims, [col.astype(_rank_dtype(d.n_ranks), copy=False) for d, col in zip(dims, cols)]

    def _values(self, frame: pd.DataFrame, handle_unknown: str) -> np.ndarray:
        """(n, d) float matrix the cuts compare: numbers, category codes or hierarchy leaves."""
        V = np.empty((frame.shape[0], len(self.qi_)), dtype=np.float64)
        for j, (c, dim) in enumerate(zip(self.qi_, self.dims_)):
            if dim.values is not None and np.isinf(dim.n_seen):
                V[:, j] = frame[c].to_numpy(dtype=np.float64)
            else:
                codes = self.encoder_.codes(frame, c, handle_unknown)
                V[:, j] = codes if dim.kind == _ORDERED else dim.cat_to_leaf[codes]
        return V


# ================================================================================================
# the partitioning engine
# ================================================================================================
@dataclass
class _Dim:
    """One QI dimension as the engine sees it.

    ``kind`` ``_ORDERED``: ranks index ``values`` (numbers, or category codes as floats);
    ``span`` is the range of the whole table; codes ``>= n_seen`` did not occur in fit (inf
    for numbers). ``_HIER``: ranks are leaf indices of ``hier`` (hierarchy order), ``span`` its
    number of leaves, ``cat_to_leaf`` maps category codes to leaves (-1: unseen).
    """

    kind: int
    values: np.ndarray | None
    span: float
    n_seen: float
    hier: Any = None
    cat_to_leaf: np.ndarray | None = None
    sizes_at: np.ndarray | None = None  # (n_leaves, height+1): leaves under each ancestor
    starts_at: np.ndarray | None = None  # (n_leaves, height+1): first leaf of each ancestor
    scaled: np.ndarray | None = None  # numbers: ``values`` scaled by 2**-e, ranges of ``span``

    @property
    def n_ranks(self) -> int:
        return self.values.size if self.kind == _ORDERED else int(self.hier.n_leaves)


def _rank_dtype(n_ranks: int) -> type:
    """Smallest unsigned integer type holding ranks 0 .. n_ranks-1."""
    for t in (np.uint8, np.uint16, np.uint32):
        if n_ranks <= np.iinfo(t).max + 1:
            return t
    return np.int64


def _lexicographic_rank(R: Sequence[np.ndarray], n_ranks: Sequence[int]) -> np.ndarray:
    """Dense rank of every row's whole rank vector in lexicographic order (column 0 first).
    Mixed-radix keys, re-ranked whenever they would overflow."""
    key = np.zeros(R[0].size if len(R) else 0, dtype=np.int64)
    card = 1
    for j, u in enumerate(n_ranks):
        u = max(int(u), 1)
        if card * u >= 2**62:
            key, card = _dense_rank(key)
        key = key * u + R[j]
        card *= u
    return _dense_rank(key)[0]


class _CutTree(_CutSearch):
    """Level-wise Mondrian partitioning and the tree of its cuts (internal).

    Node arrays, indexed by node id (0 is the root): ``feature_`` (dimension, -1 for a leaf),
    ``kind_`` (``_THRESHOLD``: left iff value <= ``threshold_``; ``_RELAXED``: left iff value <
    threshold, or equal and the row's whole vector <= ``relaxed_vectors_[relaxed_ref_]``
    lexicographically; ``_CHILDREN``: a hierarchy cut, the child of a leaf ``x`` with
    ``0 <= x - lca_start_ < lca_size_`` is ``child_nodes_[child_offset_ + x - lca_start_]``),
    ``child_offset_`` into ``child_nodes_`` (binary cuts: left then right), ``largest_`` (the
    child with most training rows, where unseen values go).
    """

    def __init__(self, k: int, model: Any, mode: str, criterion: str):
        self.k = int(k)
        self.model = model
        self.mode = mode
        self.criterion = criterion

    # ------------------------------------------------------------------------------------------
    def fit(
        self,
        R: Sequence[np.ndarray],
        dims: list[_Dim],
        *,
        full_rank: np.ndarray | None = None,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        """Partition the rows given their ranks ``R`` (one array per dimension); return the
        leaf node of every row."""
        D = len(R)
        n = R[0].size
        self.dims = dims
        self.D = D
        self.n_ranks = np.array([d.n_ranks for d in dims], dtype=np.int64)
        self.is_hier = np.array([d.kind == _HIER for d in dims], dtype=bool)
        self.u_max = int(self.n_ranks.max())
        self.full_rank = full_rank
        self.n_full = int(full_rank.max()) + 1 if full_rank is not None else 1
        self.y = y
        self.n_classes = int(y.max()) + 1 if y is not None and y.size else 1
        self.codes = np.asarray(self.model.codes, dtype=np.int64)
        self.m = int(self.model.n_values)
        self.trivial = bool(self.model.trivial)
        # per-dimension value tables, concatenated, for thresholds of ordered dimensions
        self._voff = np.zeros(D, dtype=np.int64)
        tables = []
        pos = 0
        for j, d in enumerate(dims):
            self._voff[j] = pos
            t = d.values if d.kind == _ORDERED else np.arange(d.n_ranks, dtype=np.float64)
            tables.append(t)
            pos += t.size
        self._vflat = np.concatenate(tables) if tables else np.zeros(0)

        chunks: list[dict[str, np.ndarray]] = [_node_chunk(1)]  # node arrays, level by level
        chunk_base = 0  # id of the first node of the last chunk
        child_chunks: list[np.ndarray] = []
        self._child_len = 0
        relaxed_rows: list[np.ndarray] = []
        self._n_relaxed = 0
        leaf = np.zeros(n, dtype=np.int64)

        # the active partitions: those of at least 2k rows, the only ones a cut can divide;
        # smaller parts become leaves as soon as they are created
        self.rows = np.arange(n)
        self.Rd = list(R)  # ranks of the active rows, one array per dimension
        self.sizes = np.array([n], dtype=np.int64)
        node_of = np.array([0], dtype=np.int64)
        if n < 2 * self.k:
            node_of, self.sizes = node_of[:0], self.sizes[:0]
            self.rows, self.Rd = self.rows[:0], [r[:0] for r in self.Rd]
        n_nodes, depth = 1, 0
        while self.sizes.size:
            A = self.sizes.size
            self.starts = np.cumsum(self.sizes) - self.sizes
            part = np.repeat(np.arange(A), self.sizes)
            self._new_level(A)
            self._decide(np.arange(A))
            nch = self.nch
            cut = nch > 0
            # children of the cut partitions are the next chunk of nodes, in partition order
            base = n_nodes + np.cumsum(nch) - nch
            for P, lens, slots in self.pieces:
                b = base[P]
                big = self.bigslot[P]
                flat = np.repeat(b, lens) + np.where(slots >= 0, slots, np.repeat(big, lens))
                self.coff[P] = self._child_len + np.cumsum(lens) - lens
                self._child_len += int(lens.sum())
                child_chunks.append(flat)
            if self.relaxed_refs:
                refs = np.concatenate(self.relaxed_refs[0])
                ps = np.concatenate(self.relaxed_refs[1])
                self.rref[ps] = self._n_relaxed + np.arange(ps.size)
                self._n_relaxed += ps.size
                relaxed_rows.append(refs)
            chunk = chunks[-1]
            loc = node_of - chunk_base
            for name, values in (
                ("feature", self.feat), ("kind", self.kind), ("threshold", self.thr),
                ("child_offset", self.coff), ("largest", np.where(cut, base + self.bigslot, -1)),
                ("lca_start", self.lstart), ("lca_size", self.lsize), ("relaxed_ref", self.rref),
            ):
                chunk[name][loc] = values
            # rows of the partitions that stay whole are done
            keep = self.slot >= 0
            done = np.flatnonzero(~keep)
            leaf[self.rows[done]] = node_of[part[done]]
            if not cut.any():
                break
            total = int(nch.sum())
            chunks.append(_node_chunk(total))
            chunk_base = n_nodes
            kept = np.flatnonzero(keep)
            child = (np.cumsum(nch) - nch)[part[kept]] + self.slot[kept]
            sizes = np.bincount(child, minlength=total)
            small = sizes < 2 * self.k
            is_small = small[child]
            fin = kept[is_small]
            leaf[self.rows[fin]] = n_nodes + child[is_small]
            kept, child = kept[~is_small], child[~is_small]
            if child.size and total <= np.iinfo(np.uint16).max:
                order = np.argsort(child.astype(np.uint16), kind="stable")  # a radix sort
            else:
                order = np.argsort(child, kind="stable")
            sel = kept[order]
            self.rows = self.rows[sel]
            self.Rd = [r.take(sel) for r in self.Rd]
            active = np.flatnonzero(~small)
            self.sizes = sizes[active]
            node_of = n_nodes + active
            n_nodes += total
            depth += 1

        def cat(name: str, dtype: Any) -> np.ndarray:
            return np.concatenate([ch[name] for ch in chunks]).astype(dtype, copy=False)

        self.feature_ = cat("feature", np.int64)
        self.kind_ = cat("kind", np.int64)
        self.threshold_ = cat("threshold", np.float64)
        self.child_offset_ = cat("child_offset", np.int64)
        self.largest_ = cat("largest", np.int64)
        self.lca_start_ = cat("lca_start", np.int64)
        self.lca_size_ = cat("lca_size", np.int64)
        self.relaxed_ref_ = cat("relaxed_ref", np.int64)
        self.child_nodes_ = (
            np.concatenate(child_chunks) if child_chunks else np.zeros(0, dtype=np.int64)
        )
        self.relaxed_rows_ = (
            np.concatenate(relaxed_rows) if relaxed_rows else np.zeros(0, dtype=np.int64)
        )
        self.relaxed_vectors_ = np.zeros((0, D))
        self.n_seen_ = np.array([d.n_seen for d in dims], dtype=np.float64)
        self.depth_ = depth
        self.n_nodes_ = self.feature_.size
        # drop the fitting state
        for name in ("rows", "Rd", "sizes", "starts", "full_rank", "y", "codes", "dims",
                     "model", "_vflat", "_voff"):
            self.__dict__.pop(name, None)
        self._clear_level()
        return leaf

    # -- routing -----------------------------------------------------------------------------------
    def apply(self, V: np.ndarray) -> np.ndarray:
        """Leaf node of every row of the value matrix ``V``, descending one level per step."""
        n = V.shape[0]
        node = np.zeros(n, dtype=np.int64)
        act = np.arange(n)
        # only threshold cuts: a level costs a third of the general step (the depth of a tree
        # read from a file is bounded, anonml.modelfile._mapping_routes.MAX_ROUTE_DEPTH)
        plain = not bool(np.isin(self.kind_, (_RELAXED, _CHILDREN)).any())
        if plain:
            V = np.ascontiguousarray(V)
            flat, d = V.ravel(), V.shape[1]
        while act.size:
            act = act[self.feature_[node[act]] >= 0]
            if not act.size:
                break
            nd = node[act]
            if plain:
                f = self.feature_[nd]
                x = flat[act * d + f]
                nxt = self.child_nodes_[self.child_offset_[nd] + (x > self.threshold_[nd])]
                node[act] = np.where(x >= self.n_seen_[f], self.largest_[nd], nxt)
                continue
            f = self.feature_[nd]
            x = V[act, f]
            kind = self.kind_[nd]
            off = self.child_offset_[nd]
            thr = self.threshold_[nd]
            slot = (x > thr).astype(np.int64)
            tie = np.flatnonzero((kind == _RELAXED) & (x == thr))
            if tie.size:
                ref = self.relaxed_vectors_[self.relaxed_ref_[nd[tie]]]
                diff = V[act[tie]] - ref
                nz = diff != 0
                firstnz = np.argmax(nz, axis=1)
                le = ~nz.any(axis=1) | (diff[np.arange(tie.size), firstnz] < 0)
                slot[tie] = np.where(le, 0, 1)
            hier = kind == _CHILDREN
            rel = np.where(hier, x - self.lca_start_[nd], 0).astype(np.int64)
            inside = ~hier | ((x >= 0) & (rel >= 0) & (rel < self.lca_size_[nd]))
            pos = off + np.where(hier, np.where(inside, rel, 0), slot)
            nxt = self.child_nodes_[pos]
            unseen = ~inside | (x >= self.n_seen_[f])
            node[act] = np.where(unseen, self.largest_[nd], nxt)
        return node


def _node_chunk(size: int) -> dict[str, np.ndarray]:
    """Node arrays for ``size`` new nodes, all leaves until a cut is recorded."""
    out = {name: np.full(size, -1, dtype=np.int64) for name in (
        "feature", "kind", "child_offset", "largest", "relaxed_ref")}
    out["threshold"] = np.full(size, np.nan)
    out["lca_start"] = np.zeros(size, dtype=np.int64)
    out["lca_size"] = np.zeros(size, dtype=np.int64)
    return out
