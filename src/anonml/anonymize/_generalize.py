"""Recoding by generalization, suppression of outlier groups, and repair by merging.

Three shared steps of the *partition → recode → verify* pipeline, used by every anonymizer:

* :func:`generalize_labels` — the human-readable alternative to a representative record: a
  numeric QI becomes the group's range (``"31-34"``, or the single value), a categorical QI the
  group's lowest common ancestor in its hierarchy (``"Married"``, ``"*"``), or without a
  hierarchy the set of its values (``"{Female, Male}"``).
* :func:`select_suppressed` — optional suppression: the groups with the highest Normalized
  Certainty Penalty (Xu et al. 2006, :func:`anonml.privacy.ncp`), the outliers that force the
  widest generalizations, are suppressed whole while their rows fit the stated budget.
* :func:`merge_to_model` — groups that break an l-diversity or t-closeness constraint are merged
  into their nearest group until every group holds it (used by accuracy-guided anonymization,
  whose tree cannot test those models while it grows).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from anonml.encoding import TableEncoder
from anonml.privacy import PrivacyModel

__all__ = ["generalize_labels", "select_suppressed", "merge_to_model", "SUPPRESSED"]

#: the label of a suppressed QI value in generalized output
SUPPRESSED = "*"


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}"
    return str(v)


def _group_min_max(values: np.ndarray, groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(n_groups, np.inf)
    hi = np.full(n_groups, -np.inf)
    np.minimum.at(lo, groups, values)
    np.maximum.at(hi, groups, values)
    return lo, hi


def generalize_labels(
    frame: pd.DataFrame,
    qi: Sequence[Any],
    categorical: Sequence[Any],
    groups: np.ndarray,
    n_groups: int,
    hierarchies: Mapping[Any, Any] | None = None,
) -> pd.DataFrame:
    """One row per group: the generalized, human-readable value of each QI.

    Numeric QIs become ``"lo-hi"`` (``"[lo, hi]"`` when lo is negative) or the single value,
    even when they have an interval hierarchy (the range is tighter than its nodes); a
    categorical QI with a hierarchy becomes the label of the group's lowest common ancestor,
    one without becomes ``"{a, b}"``, its values sorted as text.
    """
    hierarchies = hierarchies or {}
    cat = set(categorical)
    out: dict[Any, Any] = {}
    for c in qi:
        col = frame[c]
        # a numeric QI is written as its range, tighter than any interval hierarchy node
        h = hierarchies.get(c) if c in cat else None
        if h is not None:
            codes = np.asarray(h.leaf_codes(col.to_numpy(dtype=object)), dtype=np.int64)
            levels, nodes = h.common_ancestor(codes, groups, n_groups)
            labels = np.empty(n_groups, dtype=object)
            for lev in np.unique(levels):
                sel = levels == lev
                labels[sel] = [str(x) for x in np.asarray(h.labels(int(lev)), dtype=object)[nodes[sel]]]
            out[c] = labels
        elif c not in cat:
            is_int = pd.api.types.is_integer_dtype(col.dtype) or pd.api.types.is_bool_dtype(
                col.dtype
            )
            if is_int:  # exact: 2**63 - 1 is not a float64
                by_group = pd.Series(col.to_numpy(), copy=False).groupby(groups, sort=True)
                lo, hi = by_group.min().to_numpy(), by_group.max().to_numpy()
            else:
                lo, hi = _group_min_max(col.to_numpy(dtype=np.float64), groups, n_groups)
            fmt = (lambda x: str(int(x))) if is_int else _fmt
            out[c] = np.array(
                [
                    fmt(a) if a == b else (f"{fmt(a)}-{fmt(b)}" if a >= 0 else f"[{fmt(a)}, {fmt(b)}]")
                    for a, b in zip(lo, hi)
                ],
                dtype=object,
            )
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=False)
            names = np.array([str(u) for u in uniques], dtype=object)
            m = len(uniques)
            present = np.bincount(groups * m + codes, minlength=n_groups * m).reshape(n_groups, m) > 0
            order = np.argsort(names, kind="stable")
            labels = np.empty(n_groups, dtype=object)
            for g in range(n_groups):  # one string per group, not per row
                vals = names[order[present[g, order]]]
                labels[g] = vals[0] if vals.size == 1 else "{" + ", ".join(vals) + "}"
            out[c] = labels
    table = pd.DataFrame({c: pd.Series(out[c], dtype=object) for c in qi})
    table.index.name = "group"
    return table


def select_suppressed(ncp: np.ndarray, sizes: np.ndarray, budget_rows: int) -> np.ndarray:
    """Groups to suppress: highest NCP first, while their rows fit ``budget_rows``.

    A group that does not fit is skipped and smaller ones after it are still considered.
    Returns a boolean mask over groups.
    """
    chosen = np.zeros(ncp.size, dtype=bool)
    if budget_rows <= 0:
        return chosen
    order = np.argsort(-ncp, kind="stable")
    used = 0
    for g in order:  # at most n_groups steps over group totals
        if ncp[g] <= 0:
            break
        if used + sizes[g] <= budget_rows:
            chosen[g] = True
            used += int(sizes[g])
    return chosen


def merge_to_model(
    groups: np.ndarray,
    model: PrivacyModel,
    frame: pd.DataFrame,
    encoder: TableEncoder,
    qi: Sequence[Any],
) -> tuple[np.ndarray, int]:
    """Merge groups that break the model into their nearest group until all satisfy it.

    Nearness is the Euclidean distance between group centroids of the z-scored numeric QIs and
    the category shares of the categorical QIs. Each round merges a violating group into its
    nearest group if that one satisfies the model, or if the two are each other's nearest (a
    pair); the closest pair involving a violating group always qualifies, so the number of
    groups falls each round; the whole table satisfies the model (checked when the
    model was built), so the loop ends. Returns (new groups numbered 0..G'-1, merges made).
    """
    groups = np.asarray(groups, dtype=np.int64)
    n = groups.size
    cat = set(encoder.categorical)
    blocks = []
    num = [c for c in qi if c not in cat]
    if num:
        blocks.append(sp.csr_matrix(encoder.zscores(frame, num)))
    for c in qi:
        if c in cat:
            codes = encoder.codes(frame, c)
            blocks.append(
                sp.csr_matrix(
                    (np.ones(n), (np.arange(n), codes)), shape=(n, encoder.cats_[c].n_codes + 1)
                )
            )
    E = sp.hstack(blocks).tocsr() if blocks else sp.csr_matrix((n, 1))
    merges = 0
    while True:
        n_groups = int(groups.max()) + 1
        bad = np.flatnonzero(~model.allowed(model.counts(groups, n_groups)))
        if bad.size == 0:
            return groups, merges
        sizes = np.bincount(groups, minlength=n_groups).astype(np.float64)
        member = sp.csr_matrix((1.0 / sizes[groups], (groups, np.arange(n))), shape=(n_groups, n))
        C = np.asarray((member @ E).todense())
        sq = (C**2).sum(axis=1)
        groups, made = merge_round(groups, C, sq, bad)
        merges += made


def merge_round(
    groups: np.ndarray, C: np.ndarray, sq: np.ndarray, bad: np.ndarray
) -> tuple[np.ndarray, int]:
    """One round of :func:`merge_violating`: regroup ``groups`` (row or group -> group) and
    return the new ids 0..G'-1 and the number of merges made.

    ``C`` holds the group centroids (one row per group), ``sq`` their squared norms and ``bad``
    the groups that break the model. Each violating group joins its nearest group when that one
    satisfies the model, or when the two are each other's nearest; other merges wait for the
    next round. Merges thus form stars around good groups and disjoint pairs, never chains
    through violating groups that would collapse the table into a few large groups. Shared by
    the in-memory path and the Dask engine (:mod:`anonml.dask._merge`).
    """
    n_groups = C.shape[0]
    is_bad = np.zeros(n_groups, dtype=bool)
    is_bad[bad] = True
    nearest_of = np.full(n_groups, -1, dtype=np.int64)
    best_d = np.full(bad.size, np.inf)
    for start in range(0, bad.size, 512):  # chunks of violating groups x all groups
        b = bad[start : start + 512]
        d = sq[b][:, None] - 2.0 * C[b] @ C.T + sq[None, :]
        d[np.arange(b.size), b] = np.inf
        nearest_of[b] = d.argmin(axis=1)
        best_d[start : start + 512] = d.min(axis=1)
    nearest = nearest_of[bad]
    take = ~is_bad[nearest] | (nearest_of[nearest] == bad)
    if not take.any():  # ties broke every mutual pair: merge the closest pair alone
        take[np.argmin(best_d)] = True
    src, dst = bad[take], nearest[take]
    graph = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(n_groups, n_groups))
    _, comp = connected_components(graph, directed=False)
    _, new = np.unique(comp[groups], return_inverse=True)
    return new.astype(np.int64), int(src.size)
