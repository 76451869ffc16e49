"""SaNGreeA: greedy clustering k-anonymization that minimizes the generalization loss.

    A. Campan & T. M. Truta, "Data and structural k-anonymity in social networks", PinKDD 2008,
    LNCS 5456 (2009), 33-54 (the SaNGreeA algorithm, "Social Network Greedy Anonymization").

    B. Malle, P. Kieseberg, E. Weippl & A. Holzinger, "The right to be forgotten: towards
    machine learning on perturbed knowledge bases", CD-ARES 2016, LNCS 9817, 251-266 (SaNGreeA
    without the graph on UCI Adult, with per-attribute weight vectors).

Only the tabular half of SaNGreeA is implemented: clusters are built to minimize the
*generalization information loss* (GIL); the structural loss of the social graph (SIL) is left
out, as in Malle et al.

The GIL of a cluster ``cl`` with numeric QIs ``N_a`` and categorical QIs ``C_a`` is::

    GIL(cl) = |cl| * ( sum_a w_a * (max N_a(cl) - min N_a(cl)) / (max N_a - min N_a)
                     + sum_a w_a * height(LCA of C_a(cl)) / height(H_a) )

where the denominators are taken over the whole training table and ``LCA`` is the lowest common
ancestor of the cluster's values in the attribute's generalization hierarchy ``H_a``. With all
``w_a = 1`` this is Campan & Truta's GIL, and ``NGIL = GIL / (n * (#numeric + #categorical))``
lies in [0, 1].

The algorithm (Campan & Truta, Alg. SaNGreeA, with alpha = 1, beta = 0):

1. The seed of a new cluster is the first record (in row order) not yet clustered. The paper
   takes the node of maximum degree, which has no meaning without the graph; Malle's ports
   take the first unclustered record, as here.
2. The cluster grows by the unclustered record ``x`` that minimizes ``GIL(cl + {x})``, the
   first such record on ties, until it holds ``k`` records (and, when l-diversity or
   t-closeness is asked, satisfies it).
3. A last cluster that cannot be completed is dispersed: each of its records, in the order they
   joined it, joins the cluster whose GIL grows least (the first such cluster on ties).

Speed, with the same result
---------------------------
The textbook algorithm costs one GIL evaluation per (addition, candidate): ``O(n^2 d)`` Python
operations, hours on Adult. Here, per cluster, one vectorized pass computes
``c0(x) = GIL({seed, x}) / 2`` for every unclustered record. Every term of the loss only grows
as the cluster grows (ranges widen, common ancestors rise), also in floating point, so ``c0`` is
a lower bound of every later ``GIL(cl + {x}) / |cl + {x}|``. Each addition therefore evaluates
the exact loss only on the records whose ``c0`` is at most the ``M``-th smallest ``c0`` (all
records tied at that bound included), and accepts the best one when its exact loss is at most
that bound; otherwise ``M`` grows fourfold. No record outside the pool can then be better or
tie, so the clusters are exactly those of the textbook algorithm (tested against a plain
implementation on random tables). The categorical terms are table look-ups: the LCA level of a
cluster plus one record is ``max(level(cl), lca(rep(cl), x))`` with a precomputed leaf-by-leaf
LCA table. Clustered records are dropped from the working arrays by periodic compaction.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.anonymize._base import BaseAnonymizer

__all__ = ["SaNGreeAAnonymizer"]

#: full leaf-by-leaf LCA tables up to this many leaves (int8/int16, at most a few MB)
_MAX_TABLE_LEAVES = 2048
#: first pool of exact evaluations per cluster: the _POOL_FACTOR * k (at least _POOL_MIN)
#: records of least loss with the seed; it grows fourfold when that is not enough
_POOL_FACTOR = 8
_POOL_MIN = 32
#: cells of one rows x clusters block in ``_assign``
_BLOCK_CELLS = 1 << 21


class SaNGreeAAnonymizer(BaseAnonymizer):
    """k-anonymize a table by greedy clustering that minimizes the generalization loss.

    SaNGreeA (Campan & Truta, 2009) without its social-graph term, as used by Malle et al.
    (2016): see the module docstring for the loss and the algorithm. Each cluster of at least
    ``k`` records is one group; its records' QIs are replaced by those of one real record
    (``recoding="representative"``) or by the cluster's generalized labels
    (``recoding="generalize"``).

    Parameters
    ----------
    k : int
        Smallest cluster size, ``>= 2``.
    quasi_identifiers : list, optional
        QI columns (names for a DataFrame, positions for an array). None means every column.
    categorical_features : list, optional
        Categorical columns. None detects them from dtype (object, ``str``, category, bool).
    weights : dict, optional
        Weight of each QI in the loss, ``{column: weight}``, one non-negative weight per QI
        (at least one positive). Only their ratios matter: they are rescaled to sum to the number
        of QIs, so equal weights are all 1 and give Campan & Truta's unweighted GIL (``weights_``
        holds the rescaled values). None: equal weights. Malle et al. compare equal weights,
        ``age`` 0.88 with the other QIs 0.01, and ``race`` 0.88 with the others 0.01.
    sensitive, l, l_kind, c, t, t_distance : optional
        Privacy model on top of k (l-diversity or t-closeness of one sensitive column). A
        cluster is closed only once it has ``k`` records *and* satisfies the model; past ``k``
        it grows by the record of least GIL among those whose sensitive value completes the
        model in one step, else among those whose value is under-represented in the cluster
        (share below its share in the table), else among all. When dispersing a last cluster,
        a record joins the cheapest cluster that still satisfies the model with it; if none
        does, the cheapest one, and clusters left violating are then merged, each into the
        cluster whose GIL grows least, until all satisfy the model.
    hierarchies : dict, optional
        ``{column: Hierarchy}``: the generalization hierarchy of each categorical QI
        (:class:`anonml.hierarchies.Hierarchy`, e.g.
        ``anonml.datasets.load_adult_hierarchies()``). A categorical QI without one gets a flat
        hierarchy (every value directly under ``*``, height 1), so its loss is 0 for a cluster
        with one value and 1 otherwise. Numeric QIs always use their range (the paper's
        interval generalization); entries for numeric or non-QI columns are not used. A value
        that is not a leaf of its hierarchy is an error.
    recoding : {"representative", "generalize"}, default "representative"
        Output of each cluster: one real record's QIs, or ranges / hierarchy labels.
    suppression : float, default 0.0
        Share of rows that may be suppressed (the clusters of highest loss first).
    representative : {"majority_medoid", "medoid"}, default "majority_medoid"
        Choice of the representative record (needs ``y`` for the majority rule; without ``y``
        both are the medoid).
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit (or not in its
        hierarchy): raise, or treat it as sharing only the root with every other value.
    random_state : None
        Not used: the algorithm is deterministic. Kept for the common interface.

    Attributes
    ----------
    groups_ : ndarray of shape (n_rows,)
        Cluster of every training row, numbered 0 .. n_groups_-1 in order of creation.
    n_groups_ : int
        Number of clusters.
    gil_ : float
        GIL of the clustering: the sum of the clusters' GIL, with the rescaled weights.
    ngil_ : float
        ``gil_ / (n_rows * n_QIs)``, in [0, 1]; Campan & Truta's NGIL for equal weights.
    attribute_loss_ : dict
        Unweighted normalized loss of each QI, averaged over the rows (each in [0, 1]); with
        equal weights ``ngil_`` is their mean.
    cluster_loss_ : ndarray of shape (n_groups_,)
        Per-record weighted loss of each cluster, ``GIL(cl) / |cl|``.
    weights_ : dict
        The rescaled weights used (sum = number of QIs).
    n_dispersed_ : int
        Records of the last, incomplete cluster that were dispersed into other clusters.
    n_repair_merges_ : int
        Merges made to repair clusters that a dispersed record left violating l or t (0 for
        k-anonymity alone).
    representatives_, representative_rows_, min_class_size_, privacy_, qi_, categorical_,
    encoder_, model_ :
        As in every anonymizer (:class:`~anonml.anonymize._base.BaseAnonymizer`).
    timings_ : dict
        Seconds spent in each step of the last fit (``partition`` is the clustering; it splits
        into ``partition_prepare``, ``partition_greedy`` and ``partition_disperse``).

    Notes
    -----
    Time is ``O(n^2 d / k)`` vectorized operations (one pass over the unclustered records per
    cluster) plus ``O(n d M)`` for the pools of exact evaluations. On Adult (32,561 rows,
    12 QIs, Adult hierarchies) it takes 9-36 s for k = 19 ... 3 on a 2-core machine shared
    with other jobs (``benchmarks/bench_sangreea.py``), where the public Python port of Malle
    et al. takes 9,214 s at k = 3, i.e. hours. :meth:`transform` sends a row whose QIs equal
    those of a training row to that row's cluster, and any other row to the cluster whose GIL
    grows least. Identical training rows can sit in several clusters (a seed with more than
    ``k - 1`` copies); transform sends them all to the cluster holding most of them, so such
    rows may get another output than in :meth:`fit_transform` (2.5% of Adult's training rows
    at k = 10, 12 QIs).

    Examples
    --------
    >>> from anonml import SaNGreeAAnonymizer
    >>> from anonml.datasets import load_adult, load_adult_hierarchies
    >>> data = load_adult()
    >>> X = data.X.iloc[:2000]
    >>> sg = SaNGreeAAnonymizer(k=10, quasi_identifiers=data.qi_sets["8"],
    ...                         hierarchies=load_adult_hierarchies())
    >>> X_anon = sg.fit_transform(X)
    >>> sg.min_class_size_ >= 10, 0 <= sg.ngil_ <= 1
    (True, True)
    """

    _needs_target = False
    _merge_violations = False  # l and t are honoured while the clusters grow

    def __init__(
        self,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        weights: dict | None = None,
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
    ):
        self.k = k
        self.quasi_identifiers = quasi_identifiers
        self.categorical_features = categorical_features
        self.weights = weights
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

    # -- the pipeline hooks ----------------------------------------------------------------------
    def _fit(self, X: Any, y: Any) -> pd.DataFrame:
        out = super()._fit(X, y)
        self.timings_.update(self._partition_timings)
        del self._partition_timings
        return out

    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray | None) -> np.ndarray:
        t0 = time.perf_counter()
        weights = _check_weights(self.weights, self.qi_)
        self.weights_ = dict(zip(self.qi_, weights.tolist()))
        space = _Space.build(frame, self.qi_, set(self.categorical_), weights, self)
        self._space = space
        model = self.model_
        t1 = time.perf_counter()
        engine = _Greedy(space, space.encode(frame), int(self.k), model)
        engine.run()
        t2 = time.perf_counter()
        engine.disperse()
        groups = engine.groups
        t3 = time.perf_counter()
        st = engine.finished_states()
        self._lo, self._hi, self._rep, self._lvl, self._sizes = st
        loss, parts = space.cluster_loss(self._lo, self._hi, self._lvl, parts=True)
        n = frame.shape[0]
        sizes = self._sizes.astype(np.float64)
        self.cluster_loss_ = loss
        self.gil_ = float(np.dot(sizes, loss))
        self.ngil_ = self.gil_ / (n * len(self.qi_))
        self.attribute_loss_ = {c: float(np.dot(sizes, parts[c]) / n) for c in self.qi_}
        self.n_dispersed_ = engine.n_dispersed
        self.n_repair_merges_ = engine.n_repair_merges
        self._n_pool_growths = engine.n_pool_growths
        self._train_keys, self._train_key_group = space.training_lookup(engine.data, groups)
        self._partition_timings = {
            "partition_prepare": t1 - t0,
            "partition_greedy": t2 - t1,
            "partition_disperse": t3 - t2,
        }
        return groups

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        space = self._space
        data = space.encode(frame, self.handle_unknown)
        out = space.lookup(self._train_keys, self._train_key_group, data)
        todo = np.flatnonzero(out < 0)
        if todo.size:
            out[todo] = space.cheapest_cluster(
                data.take(todo), self._lo, self._hi, self._rep, self._lvl, self._sizes,
                self.cluster_loss_,
            )
        return out


# ------------------------------------------------------------------------------------------------
def _check_weights(weights: Any, qi: Sequence[Any]) -> np.ndarray:
    """Validated weights in QI order, rescaled to sum to the number of QIs."""
    d = len(qi)
    if weights is None:
        return np.ones(d, dtype=np.float64)
    if not isinstance(weights, dict):
        raise InputError(
            f"weights must be a dict of quasi-identifier -> weight, got "
            f"{type(weights).__name__}; e.g. weights={{'age': 0.88, ...}} or None for equal weights"
        )
    qi_set = set(qi)
    for col in weights:
        if col not in qi_set:
            raise InputError(
                f"weights has column {col!r}, which is not a quasi-identifier; give weights only "
                f"for the QIs: {', '.join(map(str, qi[:12]))}{', ...' if d > 12 else ''}"
            )
    values = []
    for col in qi:
        if col not in weights:
            raise InputError(
                f"weights lacks quasi-identifier {col!r}; give every QI a weight (e.g. 0.01 for "
                "a QI that matters little)"
            )
        w = weights[col]
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) or w < 0:
            raise InputError(
                f"weights[{col!r}]={w!r} is not a finite number >= 0; pass e.g. 1.0"
            )
        values.append(float(w))
    total = math.fsum(values)
    if total <= 0:
        raise InputError("weights are all 0; give at least one quasi-identifier a positive weight")
    if all(v == values[0] for v in values):
        return np.ones(d, dtype=np.float64)
    return np.asarray([v * d / total for v in values], dtype=np.float64)


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
                v = frame[col].to_numpy(dtype=np.float64)
                rng = float(v.max() - v.min())
                sp.order.append((0, len(sp.num_cols)))
                sp.num_cols.append(col)
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
            num[j] = frame[col].to_numpy(dtype=np.float64)
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

    # -- training rows ---------------------------------------------------------------------------
    @staticmethod
    def _keys(data: _Data) -> np.ndarray:
        return np.vstack([data.num, data.cat.astype(np.float64)]).T

    def training_lookup(self, data: _Data, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct training QI rows and, for each, the cluster holding most of its copies
        (the lowest cluster id on ties)."""
        uniq, inv = np.unique(self._keys(data), axis=0, return_inverse=True)
        inv = inv.ravel()
        G = int(groups.max()) + 1
        pairs, count = np.unique(inv * G + groups, return_counts=True)
        row, group = pairs // G, pairs % G
        order = np.lexsort((group, -count, row))
        first = order[np.r_[True, row[order][1:] != row[order][:-1]]]
        out = np.empty(uniq.shape[0], dtype=np.int64)
        out[row[first]] = group[first]
        return uniq, out

    def lookup(self, keys: np.ndarray, key_group: np.ndarray, data: _Data) -> np.ndarray:
        """Cluster of each row equal to a training row, -1 for the others."""
        both = np.vstack([keys, self._keys(data)])
        _, inv = np.unique(both, axis=0, return_inverse=True)
        inv = inv.ravel()
        group_of = np.full(int(inv.max()) + 1, -1, dtype=np.int64)
        group_of[inv[: keys.shape[0]]] = key_group
        return group_of[inv[keys.shape[0] :]]


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


class _Greedy:
    """The greedy clustering of one training table (see the module docstring)."""

    def __init__(self, space: _Space, data: _Data, k: int, model: Any):
        self.space = space
        self.data = data
        self.k = k
        self.model = model
        n = data.n
        self.n = n
        self.trivial = model is None or model.trivial
        if not self.trivial:
            self.codes = np.asarray(model.codes, dtype=np.int64)
            self.m = int(model.n_values)
            q = getattr(model, "q", None)
            self.q = (
                np.asarray(q, dtype=np.float64)
                if q is not None
                else np.bincount(self.codes, minlength=self.m) / n
            )
        self.groups = np.full(n, -1, dtype=np.int64)
        self.states: list[tuple] = []  # per closed cluster: lo, hi, rep, lvl, size
        self.leftover: list[int] = []
        self.n_dispersed = 0
        self.n_repair_merges = 0
        self.n_pool_growths = 0

    # -- the greedy loop -------------------------------------------------------------------------
    def run(self) -> np.ndarray:
        sp, k, n = self.space, self.k, self.n
        n_cat = len(sp.cat_cols)
        # working copies, compacted now and then (compaction keeps the row order)
        pos = np.arange(n)
        num = self.data.num.copy()
        cat = self.data.cat.copy()
        alive = np.ones(n, dtype=bool)
        alive_counts = None
        if not self.trivial:
            codes_w = self.codes.copy()
            alive_counts = np.bincount(self.codes, minlength=self.m)
        n_alive = n
        first = 0
        dead = 0
        m0 = min(max(_POOL_FACTOR * k, _POOL_MIN), n)
        while n_alive > 0:
            if dead > 256 and dead * 8 > pos.size:
                keep = np.flatnonzero(alive)
                pos, num, cat, alive = pos[keep], num[:, keep], cat[:, keep], alive[keep]
                if not self.trivial:
                    codes_w = codes_w[keep]
                first, dead = 0, 0
            while not alive[first]:
                first += 1
            seed = first
            alive[seed] = False
            n_alive -= 1
            dead += 1
            lo = num[:, seed].copy()
            hi = lo.copy()
            rep = cat[:, seed] - sp.off
            lvl = np.zeros(n_cat, dtype=np.int64)
            tab = sp.cat_table(rep, lvl)
            members = [int(pos[seed])]
            if not self.trivial:
                cnt = np.zeros(self.m, dtype=np.int64)
                cnt[codes_w[seed]] += 1
                alive_counts[codes_w[seed]] -= 1
            c0 = None  # loss of {seed, x}: a lower bound of every later loss of x
            pool = None
            v = np.inf
            M = m0
            size = 1
            closed = False
            while True:
                if size >= k and (self.trivial or bool(self.model.allowed(cnt[None, :])[0])):
                    closed = True
                    break
                if n_alive == 0:
                    break
                if c0 is None:
                    c0 = sp.loss_of(lo, hi, tab, _Data(num, cat))
                    c0[~alive] = np.inf
                elig = None if size < k else self._preferred(cnt, size, alive_counts)
                while True:
                    if pool is None:
                        if M >= n_alive:
                            v = np.inf
                            pool = np.flatnonzero(alive)
                        else:
                            v = np.partition(c0, M - 1)[M - 1]
                            pool = np.flatnonzero(c0 <= v)
                        pool_data = _Data(num[:, pool], cat[:, pool])
                    ok = alive[pool]
                    if elig is not None:
                        ok &= elig[codes_w[pool]]
                    if ok.any():
                        s = sp.loss_of(lo, hi, tab, pool_data)
                        s[~ok] = np.inf
                        i = int(np.argmin(s))
                        if s[i] <= v:
                            x = int(pool[i])
                            break
                    if v == np.inf:  # pragma: no cover - elig always holds an alive value
                        raise RuntimeError("internal: no candidate left for a SaNGreeA cluster")
                    M *= 4
                    pool = None
                    self.n_pool_growths += 1
                # add x to the cluster
                alive[x] = False
                c0[x] = np.inf
                n_alive -= 1
                dead += 1
                np.minimum(lo, num[:, x], out=lo)
                np.maximum(hi, num[:, x], out=hi)
                for j in range(n_cat):
                    lev = sp.lca_row(j, rep[j])[cat[j, x] - sp.off[j]]
                    if lev > lvl[j]:
                        lvl[j] = lev
                        a = sp.off[j]
                        tab[a : a + sp.node_ids[j].shape[0]] = sp.segment(j, rep[j], lev)
                members.append(int(pos[x]))
                size += 1
                if not self.trivial:
                    cnt[codes_w[x]] += 1
                    alive_counts[codes_w[x]] -= 1
            if closed:
                self.groups[members] = len(self.states)
                self.states.append((lo, hi, rep, lvl, size))
            else:
                self.leftover = members
        return self.groups

    def _preferred(self, cnt: np.ndarray, size: int, alive_counts: np.ndarray) -> np.ndarray:
        """Sensitive values a record must have to be added past k (see the class docstring)."""
        m = self.m
        present = alive_counts > 0
        trial = cnt[None, :] + np.eye(m, dtype=np.int64)
        finish = self.model.allowed(trial) & present
        if finish.any():
            return finish
        under = (cnt / size < self.q) & present
        if under.any():
            return under
        return present

    # -- dispersal of the last cluster -----------------------------------------------------------
    def _stacked(self):
        G, p, c = len(self.states), self.data.num.shape[0], self.data.cat.shape[0]
        lo = np.array([s[0] for s in self.states], dtype=np.float64).reshape(G, p)
        hi = np.array([s[1] for s in self.states], dtype=np.float64).reshape(G, p)
        rep = np.array([s[2] for s in self.states], dtype=np.int64).reshape(G, c)
        lvl = np.array([s[3] for s in self.states], dtype=np.int64).reshape(G, c)
        size = np.array([s[4] for s in self.states], dtype=np.int64)
        return lo, hi, rep, lvl, size

    def disperse(self) -> None:
        """Each record of the incomplete last cluster joins the cluster whose GIL grows least."""
        if not self.states:  # pragma: no cover - the first cluster always reaches k
            raise RuntimeError("internal: SaNGreeA found no complete cluster")
        lo, hi, rep, lvl, size = self._stacked()
        if not self.leftover:
            self._final = (lo, hi, rep, lvl, size)
            return
        sp, data = self.space, self.data
        loss = sp.cluster_loss(lo, hi, lvl)
        if not self.trivial:
            done = self.groups >= 0
            G, m = len(self.states), self.m
            counts = np.bincount(
                self.groups[done] * m + self.codes[done], minlength=G * m
            ).reshape(G, m)
        violating = False
        for x in self.leftover:
            s = sp.loss_with(lo, hi, rep, lvl, data, x)
            inc = s * (size + 1.0) - size * loss
            if not self.trivial:
                trial = counts.copy()
                trial[:, self.codes[x]] += 1
                ok = self.model.allowed(trial)
                if ok.any():
                    inc = np.where(ok, inc, np.inf)
                else:
                    violating = True
            g = int(np.argmin(inc))
            if lo.shape[1]:
                np.minimum(lo[g], data.num[:, x], out=lo[g])
                np.maximum(hi[g], data.num[:, x], out=hi[g])
            for j in range(rep.shape[1]):
                lev = sp.lca_row(j, rep[g, j])[data.cat[j, x] - sp.off[j]]
                lvl[g, j] = max(lvl[g, j], lev)
            size[g] += 1
            loss[g] = s[g]
            if not self.trivial:
                counts[g, self.codes[x]] += 1
            self.groups[x] = g
        self.n_dispersed = len(self.leftover)
        self.leftover = []
        if violating:
            lo, hi, rep, lvl, size = self._repair(lo, hi, rep, lvl, size)
        self._final = (lo, hi, rep, lvl, size)

    def _repair(self, lo, hi, rep, lvl, size):
        """Merge clusters that break the model, each into the cluster whose GIL grows least.

        Merging keeps l-diversity and t-closeness of the union of two groups that satisfy them,
        and the whole table satisfies the model, so the loop ends.
        """
        sp, model = self.space, self.model
        while True:
            G = size.size
            bad = np.flatnonzero(~model.allowed(model.counts(self.groups, G)))
            if bad.size == 0:
                return lo, hi, rep, lvl, size
            a = int(bad[0])
            loss = sp.cluster_loss(lo, hi, lvl)
            # ranges and LCA levels of a merged with each cluster
            m_lo = np.minimum(lo, lo[a])
            m_hi = np.maximum(hi, hi[a])
            m_lvl = np.maximum(lvl, lvl[a])
            for j in range(rep.shape[1]):  # the LCA level is symmetric
                np.maximum(m_lvl[:, j], sp.lca_row(j, rep[a, j])[rep[:, j]], out=m_lvl[:, j])
            merged = sp.cluster_loss(m_lo, m_hi, m_lvl)
            inc = merged * (size + size[a]) - size * loss - size[a] * loss[a]
            inc[a] = np.inf
            b = int(np.argmin(inc))
            lo[b], hi[b], lvl[b] = m_lo[b], m_hi[b], m_lvl[b]
            size[b] += size[a]
            self.groups[self.groups == a] = b
            keep = np.arange(G) != a
            lo, hi, rep, lvl, size = lo[keep], hi[keep], rep[keep], lvl[keep], size[keep]
            self.groups[self.groups > a] -= 1
            self.n_repair_merges += 1

    def finished_states(self):
        return self._final
