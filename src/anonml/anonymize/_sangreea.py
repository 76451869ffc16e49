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

The algorithm (Campan & Truta, Alg. SaNGreeA, with alpha = 1, beta = 0) runs on *weighted
points*: the rows with identical QI values form one point, whose weight is their number of rows,
numbered in order of first occurrence. A point is never split (a split would release two
classes with the same QI values, and :meth:`~SaNGreeAAnonymizer.transform` could not send the
training rows back to their clusters); it counts ``weight`` rows toward k, toward the GIL and,
with its rows' sensitive values, toward l or t. Without duplicates this is the textbook
algorithm; with them it is also faster.

1. The seed of a new cluster is the first point (in order of first occurrence) not yet
   clustered. The paper takes the node of maximum degree, which has no meaning without the
   graph; Malle's ports take the first unclustered record, as here.
2. The cluster grows by the unclustered point ``x`` that minimizes the per-record loss
   ``GIL(cl + {x}) / |cl + {x}|`` (which depends on the values only: with single rows, the
   textbook ``GIL(cl + {x})``), the first such point on ties, until it holds ``k`` rows (and,
   when l-diversity or t-closeness is asked, satisfies it).
3. A last cluster that cannot be completed is dispersed: each of its points, in the order they
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
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError, names_list
from anonml._utils import check_real
from anonml.anonymize._base import BaseAnonymizer
from anonml.anonymize._sangreea_space import _Data, _Space

__all__ = ["SaNGreeAAnonymizer"]

#: first pool of exact evaluations per cluster: the _POOL_FACTOR * k (at least _POOL_MIN)
#: records of least loss with the seed; it grows fourfold when that is not enough
_POOL_FACTOR = 8
_POOL_MIN = 32


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
        cluster is closed only once it has ``k`` rows *and* satisfies the model; past ``k``
        it grows by the point (identical rows, see the module docstring) of least GIL among
        those whose rows' sensitive values complete the model in one step, else among those
        holding a value that is under-represented in the cluster (share below its share in the
        table), else among all. When dispersing a last cluster, a point joins the cheapest
        cluster that still satisfies the model with it; if none does, the cheapest one, and
        clusters left violating are then merged, each into the cluster whose GIL grows least,
        until all satisfy the model.
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
    representative : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}, default "majority_medoid"
        Choice of the representative record (needs ``y`` for the majority rule; without ``y``
        both are the medoid).
        The per-feature rules (see :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`) give
        each QI its own real value of the group: the one closest to the group's median
        (numeric) or the most frequent (categorical); ``"per_feature_joint"`` takes the
        numeric QIs so and the categorical QIs together from one real record of the group
        (its most frequent categorical combination).
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit (or not in its
        hierarchy): raise, or treat it as sharing only the root with every other value.
    random_state : None
        Not used: the algorithm is deterministic. Kept for the common interface.
    copy : bool, default True
        ``False``: recode the quasi-identifier columns of the DataFrame given in place and return
        it (scikit-learn's ``copy`` convention); everything that can fail runs first, so on an
        error ``X`` is unchanged. As in :class:`~anonml.anonymize.AccuracyGuidedAnonymizer`.

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
    n_points_ : int
        Distinct QI vectors of the training data: the weighted points that were clustered.
    n_dispersed_ : int
        Rows of the last, incomplete cluster that were dispersed into other clusters.
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
    grows least. Identical training rows always share a cluster (see the module docstring), so
    ``transform`` of the training data equals :meth:`fit_transform`.

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
        copy: bool = True,
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
        self.copy = copy

    # -- the pipeline hooks ----------------------------------------------------------------------
    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray | None) -> np.ndarray:
        t0 = time.perf_counter()
        weights = _check_weights(self.weights, self.qi_)
        self.weights_ = dict(zip(self.qi_, weights.tolist()))
        space = _Space.build(frame, self.qi_, set(self.categorical_), weights, self)
        self._space = space
        model = self.model_
        # identical QI vectors form one point, weighted by its number of rows
        point, first = _points(frame[self.qi_])
        t1 = time.perf_counter()
        data = space.encode(frame.iloc[first])
        engine = _Greedy(space, data, np.bincount(point), int(self.k), model, point)
        engine.run()
        t2 = time.perf_counter()
        engine.disperse()
        groups = engine.groups[point]
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
        self.n_points_ = int(first.size)
        self.n_dispersed_ = engine.n_dispersed
        self.n_repair_merges_ = engine.n_repair_merges
        self._n_pool_growths = engine.n_pool_growths
        self._train_points = frame[self.qi_].iloc[first].reset_index(drop=True)
        self._train_point_group = engine.groups
        self._partition_timings = {
            "partition_prepare": t1 - t0,
            "partition_greedy": t2 - t1,
            "partition_disperse": t3 - t2,
        }
        return groups

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        space = self._space
        data = space.encode(frame, self.handle_unknown)
        out = _lookup(self._train_points, self._train_point_group, frame[self.qi_])
        todo = np.flatnonzero(out < 0)
        if todo.size:
            out[todo] = space.cheapest_cluster(
                data.take(todo), self._lo, self._hi, self._rep, self._lvl, self._sizes,
                self.cluster_loss_,
            )
        return out


def _row_keys(qi_frame: pd.DataFrame) -> np.ndarray:
    """One id per distinct QI vector (missing values equal each other), in no set order."""
    cols = list(qi_frame.columns)
    grouped = qi_frame.groupby(cols, sort=False, dropna=False, observed=True)
    return grouped.ngroup().to_numpy(dtype=np.int64)


def _points(qi_frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Point of each row (rows with identical QI values share one), numbered in order of first
    occurrence, and the first row of each point."""
    key = _row_keys(qi_frame)
    first = np.full(int(key.max()) + 1, key.size, dtype=np.int64)
    np.minimum.at(first, key, np.arange(key.size))
    order = np.argsort(first, kind="stable")  # keys by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[key], first[order]


def _lookup(points: pd.DataFrame, point_group: np.ndarray, qi_frame: pd.DataFrame) -> np.ndarray:
    """Cluster of each row whose QIs equal those of a training point, -1 for the others."""
    both = pd.concat([points, qi_frame.reset_index(drop=True)], ignore_index=True)
    key = _row_keys(both)
    n_points = points.shape[0]
    group_of_key = np.full(int(key.max()) + 1, -1, dtype=np.int64)
    group_of_key[key[:n_points]] = point_group  # the points are distinct: one key each
    return group_of_key[key[n_points:]]


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
                f"for the QIs: {names_list(qi)}"
            )
    values = []
    for col in qi:
        if col not in weights:
            raise InputError(
                f"weights lacks quasi-identifier {col!r}; give every QI a weight (e.g. 0.01 for "
                "a QI that matters little)"
            )
        values.append(check_real(f"weights[{col!r}]", weights[col], closed="left", example=1.0))
    total = math.fsum(values)
    if total <= 0:
        raise InputError("weights are all 0; give at least one quasi-identifier a positive weight")
    if all(v == values[0] for v in values):
        return np.ones(d, dtype=np.float64)
    return np.asarray([v * d / total for v in values], dtype=np.float64)


class _Greedy:
    """The greedy clustering of one training table (see the module docstring).

    It works on *points*: the distinct QI vectors, in order of first occurrence, each weighted
    by its number of rows (``weight``). A point is never split; its weight counts toward k and
    toward the GIL, and its rows' sensitive values toward l or t.
    """

    def __init__(
        self,
        space: _Space,
        data: _Data,
        weight: np.ndarray,
        k: int,
        model: Any,
        point_of_row: np.ndarray,
    ):
        self.space = space
        self.data = data  # one column per point
        self.weight = np.asarray(weight, dtype=np.int64)
        self.k = k
        self.model = model
        n = data.n
        self.n = n
        self.trivial = model is None or model.trivial
        if not self.trivial:
            codes = np.asarray(model.codes, dtype=np.int64)
            self.m = m = int(model.n_values)
            q = getattr(model, "q", None)
            self.q = (
                np.asarray(q, dtype=np.float64)
                if q is not None
                else np.bincount(codes, minlength=m) / codes.size
            )
            # sensitive-value counts of each point, and its profile: points of one profile
            # (the same counts) are interchangeable for the model
            pc = np.bincount(point_of_row * m + codes, minlength=n * m).reshape(n, m)
            self.point_counts = pc
            self.profiles, prof = np.unique(pc, axis=0, return_inverse=True)
            self.profile = prof.reshape(-1).astype(np.int64)
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
        weight = self.weight
        # working copies, compacted now and then (compaction keeps the point order)
        pos = np.arange(n)
        num = self.data.num.copy()
        cat = self.data.cat.copy()
        wt = weight.copy()
        alive = np.ones(n, dtype=bool)
        alive_counts = None
        if not self.trivial:
            prof_w = self.profile.copy()
            pcounts = self.profiles
            alive_counts = np.bincount(self.profile, minlength=pcounts.shape[0])
        n_alive = n
        first = 0
        dead = 0
        m0 = min(max(_POOL_FACTOR * k, _POOL_MIN), n)
        while n_alive > 0:
            if dead > 256 and dead * 8 > pos.size:
                keep = np.flatnonzero(alive)
                pos, num, cat = pos[keep], num[:, keep], cat[:, keep]
                alive, wt = alive[keep], wt[keep]
                if not self.trivial:
                    prof_w = prof_w[keep]
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
            size = int(wt[seed])
            if not self.trivial:
                cnt = pcounts[prof_w[seed]].copy()
                alive_counts[prof_w[seed]] -= 1
            c0 = None  # loss of {seed, x}: a lower bound of every later loss of x
            pool = None
            v = np.inf
            M = m0
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
                        ok &= elig[prof_w[pool]]
                    if ok.any():
                        s = sp.loss_of(lo, hi, tab, pool_data)
                        s[~ok] = np.inf
                        i = int(np.argmin(s))
                        if s[i] <= v:
                            x = int(pool[i])
                            break
                    if v == np.inf:  # pragma: no cover - elig always holds an alive point
                        raise RuntimeError("internal: no candidate left for a SaNGreeA cluster")
                    M *= 4
                    pool = None
                    self.n_pool_growths += 1
                # add point x to the cluster
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
                size += int(wt[x])
                if not self.trivial:
                    cnt += pcounts[prof_w[x]]
                    alive_counts[prof_w[x]] -= 1
            if closed:
                self.groups[members] = len(self.states)
                self.states.append((lo, hi, rep, lvl, size))
            else:
                self.leftover = members
        return self.groups

    def _preferred(self, cnt: np.ndarray, size: int, alive_counts: np.ndarray) -> np.ndarray:
        """Profiles a point must have to be added past k (see the class docstring): those that
        complete the model in one step, else those holding a sensitive value whose share in the
        cluster is below its share in the table, else any; only profiles of unclustered
        points count."""
        present = alive_counts > 0
        finish = self.model.allowed(cnt[None, :] + self.profiles) & present
        if finish.any():
            return finish
        under = (cnt / size < self.q) & (self.q > 0)
        under = (self.profiles[:, under] > 0).any(axis=1) & present
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

    def _counts(self, G: int) -> np.ndarray:
        """Sensitive-value counts of every cluster, (G, m)."""
        counts = np.zeros((G, self.m), dtype=np.int64)
        done = self.groups >= 0
        np.add.at(counts, self.groups[done], self.point_counts[done])
        return counts

    def disperse(self) -> None:
        """Each point of the incomplete last cluster joins the cluster whose GIL grows least."""
        if not self.states:  # pragma: no cover - the first cluster always reaches k
            raise RuntimeError("internal: SaNGreeA found no complete cluster")
        lo, hi, rep, lvl, size = self._stacked()
        if not self.leftover:
            self._final = (lo, hi, rep, lvl, size)
            return
        sp, data = self.space, self.data
        loss = sp.cluster_loss(lo, hi, lvl)
        if not self.trivial:
            counts = self._counts(len(self.states))
        violating = False
        for x in self.leftover:
            w = int(self.weight[x])
            s = sp.loss_with(lo, hi, rep, lvl, data, x)
            inc = s * (size + float(w)) - size * loss
            if not self.trivial:
                ok = self.model.allowed(counts + self.point_counts[x])
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
            size[g] += w
            loss[g] = s[g]
            if not self.trivial:
                counts[g] += self.point_counts[x]
            self.groups[x] = g
        self.n_dispersed = int(self.weight[self.leftover].sum())
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
            bad = np.flatnonzero(~model.allowed(self._counts(G)))
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
