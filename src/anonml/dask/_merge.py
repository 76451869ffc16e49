"""l-diversity and t-closeness for the Dask engine: merge the groups that break them.

The tree cannot test l or t while it grows, so, as in memory
(:func:`anonml.anonymize._generalize.merge_to_model`), a group that breaks the model is merged
into its nearest group (centroids of the z-scored numeric QIs and of the category shares) round
after round. Here the rounds run on the client over *group-level* sums reduced on the cluster:
per group the sum of each numeric QI's z-score, the count of each category and of each
sensitive value. Merging keeps l and t (their monotonicity) and the whole table satisfies the
model (checked first), so the loop ends.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonml._errors import InputError
from anonml.dask._tree import _map_ids, _put, tree_reduce
from anonml.engine import _kernels as K
from anonml.anonymize._generalize import merge_round

__all__ = ["group_sums", "merge_sums", "merge_groups", "merge_for_model"]


def group_sums(
    part: pd.DataFrame, state: K.PartState, groups: np.ndarray, spec: K.BinSpec, sensitive: Any,
    values: list, n_groups: int,
) -> dict:
    """Per-group sums of one partition: z-scores of numeric QIs (dense), category and sensitive
    value counts (sparse keys ``group * width + code``)."""
    g = np.asarray(groups, dtype=np.int64)
    cat = set(spec.categorical)
    n_bins = spec.n_bins
    out: dict = {"num": [], "cat": [], "s": None}
    for j, c in enumerate(spec.columns):
        if c in cat:
            keys, cnt = np.unique(g * int(n_bins[j]) + state.B[:, j], return_counts=True)
            out["cat"].append((keys, cnt.astype(np.int64)))
        else:
            z = (part[c].to_numpy(dtype=np.float64) - spec.mean[c]) / spec.scale[c]
            out["num"].append(np.bincount(g, weights=z, minlength=n_groups))
    m = len(values)
    idx = pd.Index(values, dtype=object).get_indexer(
        pd.Index(part[sensitive].to_numpy(dtype=object), dtype=object)
    )
    codes = np.where(idx < 0, m, idx).astype(np.int64)
    keys, cnt = np.unique(g * (m + 1) + codes, return_counts=True)
    out["s"] = (keys, cnt.astype(np.int64))
    return out


def _merge_pairs(pairs: list) -> tuple[np.ndarray, np.ndarray]:
    k = np.concatenate([p[0] for p in pairs])
    c = np.concatenate([p[1] for p in pairs])
    uk, inv = np.unique(k, return_inverse=True)
    return uk, np.bincount(inv, weights=c, minlength=uk.size).astype(np.int64)


def merge_sums(*parts: dict) -> dict:
    """Sum :func:`group_sums` results."""
    return {
        "num": [np.sum([p["num"][i] for p in parts], axis=0) for i in range(len(parts[0]["num"]))],
        "cat": [_merge_pairs([p["cat"][i] for p in parts]) for i in range(len(parts[0]["cat"]))],
        "s": _merge_pairs([p["s"] for p in parts]),
    }


def merge_groups(sums: dict, spec: K.BinSpec, sizes: np.ndarray, model: Any, width_s: int) -> tuple[np.ndarray, int]:
    """Map from group to merged group (0..G'-1) so that every merged group satisfies ``model``
    (a :class:`~anonml.privacy._constraints.PrivacyModel`), and the number of merges."""
    G = sizes.size
    cols = [sp.csr_matrix(np.column_stack(sums["num"]))] if sums["num"] else []
    cat_j = [j for j, c in enumerate(spec.columns) if c in set(spec.categorical)]
    for (keys, cnt), j in zip(sums["cat"], cat_j):
        nb = int(spec.n_bins[j])
        cols.append(sp.csr_matrix((cnt.astype(np.float64), (keys // nb, keys % nb)), shape=(G, nb)))
    E = sp.hstack(cols).tocsr() if cols else sp.csr_matrix((G, 1))  # per-group sums
    keys, cnt = sums["s"]
    S = sp.csr_matrix((cnt.astype(np.float64), (keys // width_s, keys % width_s)), shape=(G, width_s))
    m = model.n_values
    groups = np.arange(G)
    merges = 0
    while True:
        n_groups = int(groups.max()) + 1
        member = sp.csr_matrix((np.ones(G), (groups, np.arange(G))), shape=(n_groups, G))
        counts = np.asarray((member @ S).todense())[:, :m]
        bad = np.flatnonzero(~model.allowed(counts))
        if bad.size == 0:
            return groups, merges
        size = member @ sizes.astype(np.float64)
        C = np.asarray((member @ E).todense()) / size[:, None]
        sq = (C**2).sum(axis=1)
        groups, made = merge_round(groups, C, sq, bad)
        merges += made


def merge_for_model(client, dask, parts, states, groups, n_groups, sizes, spec, spec_f, summary,
                     meta, k, sensitive, l, l_kind, c, t, t_distance="auto", hierarchy=None):
    from anonml.dask._verify import _value_order
    from anonml.privacy._constraints import PrivacyModel
    from anonml.privacy._diversity import resolve_distance
    from anonml.dask._privacy import fold_counts, fold_keys, sensitive_coding

    vc = summary["sensitive"]
    values = _value_order(vc)
    total = float(vc.sum())
    q = np.array([vc.get(v, 0) for v in values], dtype=np.float64)
    q = np.append(q, total - q.sum())
    distance = resolve_distance(t_distance, meta[sensitive], hierarchy) if t is not None else None
    coding = sensitive_coding(values, q[-1] > 0, distance, hierarchy, sensitive)
    q = fold_counts(q[None, :], coding)[0]
    m = q.size
    model = PrivacyModel(k=k, codes=np.zeros(0, dtype=np.int64), n_values=m, l=l, l_kind=l_kind,
                         c=c, t=t, distance=distance, q=q / total, sensitive=sensitive,
                         parents=coding.parents)
    if not model.allowed(q[None, :])[0]:
        raise InputError(
            f"the whole table fails the privacy model on {sensitive!r} (it has "
            f"{int((q > 0).sum())} distinct values), so no grouping can satisfy it; lower l"
        )
    sums = tree_reduce(client, client.compute([
        dask.delayed(group_sums)(p, s, g, spec_f, sensitive, values, n_groups)
        for p, s, g in zip(parts, states, groups)
    ]), merge_sums)
    got = client.gather(sums)
    keys, width_s = fold_keys(got["s"][0], len(values) + 1, coding)
    got["s"] = (keys, got["s"][1])
    mapping, n_merges = merge_groups(got, spec, sizes, model, width_s)
    mapping_f = _put(client, mapping)
    groups = [client.submit(_map_ids, g, mapping_f, pure=False) for g in groups]
    n_new = int(mapping.max()) + 1
    sizes = np.bincount(mapping, weights=sizes, minlength=n_new).astype(np.int64)
    return groups, n_new, sizes, n_merges
