"""The released mapping of a Dask run (``save_mapping=``, ``--save-mapping``): what
``anonml transform`` needs to map new rows exactly as the run mapped its training rows.

In memory, a fitted anonymizer rewrites its routing as a
:class:`~anonml.anonymize._routing.RoutingTree` on raw values (splits whose thresholds are the
roundest numbers between the training values they separate and equal no training value;
categorical splits that name the categories the anonymized table shows), and its release copy
(:func:`anonml.anonymize._model.release_copy`) keeps that tree, the representatives and the
parameters. The routing tree needs, per split of the fitted tree, the largest value of its
column among the rows going left and the smallest among those going right, or which categories
go each way; these follow from per-leaf summaries of the rows
(:mod:`anonml.anonymize._routing_leaves`), and per-leaf summaries are mergeable. So here:

1. every partition walks its binned rows down the grown trees (the first tree, then AG's
   Mondrian refinement from each row's first group: :func:`leaf_stats`), and returns per leaf
   the minimum and maximum of each numeric QI, the categories present, and the (leaf, group)
   pairs (the final groups, after any l/t merge); :func:`merge_stats` sums them;
2. on the client, the two trees are grafted into one (as
   :func:`anonml.anonymize._routing._ag_spec` grafts them in memory), and the routing tree is
   built from the merged summary by the in-memory code (``split_bounds``, ``_cat_specs``,
   ``_set_nodes``, ``_simplify``);
3. a numeric threshold must equal no training value of its column: when the column's distinct
   values are not all known from the bins (more than ``max_bins`` of them), one pass finds
   the candidates that are training values and, only if some are, a second pass collects the
   training values inside those splits' gaps, and those thresholds are chosen again avoiding
   them (:func:`_avoid_training_values`);
4. the rows of every leaf form a box; the routing tree is proved to send every box to its group
   (:func:`~anonml.anonymize._routing_leaves.boxes_route_to_groups`), else every partition's rows
   are routed through it and compared with the run's groups (:func:`_routes_match`).

The saved object is an :class:`~anonml.anonymize.AccuracyGuidedAnonymizer` (or
:class:`~anonml.anonymize.MondrianAnonymizer`) in its release form: parameters, columns,
representatives (values the output shows) and the routing tree; no encoder, no counts, no
per-row state. ``anonml transform`` and :func:`anonml.safemodel.verify_mapping` read it as any
in-memory mapping.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError, OutputError
from anonml.anonymize._routing_leaves import LeafSummary, encoded_leaves
from anonml.engine import _kernels as K

__all__ = ["check_mapping_path", "leaf_stats", "merge_stats", "build_mapping", "save_mapping"]


def check_mapping_path(path: Any, target: Path) -> Path:
    """The mapping file, checked before any work: ``.skops``, not existing, in an existing
    folder, not inside the output folder."""
    p = Path(os.fspath(path))
    if p.suffix.lower() != ".skops":
        raise InputError(f"save_mapping={str(p)!r} is not a .skops file; fix: name it e.g. "
                         "mapping.skops (read by anonml transform --mapping)")
    if p.exists():
        raise OutputError(f"mapping file {str(p)!r} already exists; choose a new name or "
                          "remove it")
    if not p.parent.is_dir():
        raise OutputError(f"the folder of mapping file {str(p)!r} does not exist; create "
                          f"{str(p.parent)!r} first")
    t = Path(os.path.abspath(target))
    if t == Path(os.path.abspath(p)).parent or t in Path(os.path.abspath(p)).parents:
        raise InputError(f"mapping file {str(p)!r} is inside the output folder; fix: save it "
                         "elsewhere")
    return p


# -- 1. per partition (on the workers) ---------------------------------------------------------
def _walk(B: np.ndarray, tree: dict, init: np.ndarray | None = None) -> np.ndarray:
    flat = tree["flat"] if tree["flat"].size else np.zeros(1, dtype=bool)
    return encoded_leaves(B, tree["feature"], tree["threshold"].astype(np.float64),
                          tree["offset"], flat, tree["left"], tree["right"], init=init)


def _pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distinct (a, b) pairs of non-negative ints as an (n, 2) int64 array, sorted (one 1-D
    ``np.unique`` of ``a * width + b``: ``unique(axis=0)`` sorts rows ten times slower)."""
    if not a.size:
        return np.zeros((0, 2), dtype=np.int64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    width = int(b.max()) + 1
    key = np.unique(a * width + b)
    return np.column_stack([key // width, key % width])


def leaf_stats(part: pd.DataFrame, state: K.PartState, first: np.ndarray | None,
               groups: np.ndarray, trees: list, spec: K.BinSpec) -> dict:
    """Per leaf of the last tree, of one partition: min/max of each numeric QI (raw values),
    the (leaf, code) pairs of each categorical QI, the (leaf, group) pairs; with two trees also
    the (first-tree leaf, first group) pairs."""
    B = state.B
    leaf = _walk(B, trees[0])
    out: dict = {}
    if len(trees) == 2:
        g1 = np.asarray(first, dtype=np.int64)
        out["first"] = _pairs(leaf, g1)
        leaf = _walk(B, trees[1], init=g1)
    out["group"] = _pairs(leaf, np.asarray(groups, dtype=np.int64))
    ul, inv = np.unique(leaf, return_inverse=True)
    out["leaves"] = ul.astype(np.int64)
    cat = set(spec.categorical)
    out["min"], out["max"], out["cat"] = {}, {}, {}
    for j, c in enumerate(spec.columns):
        if c in cat:
            out["cat"][j] = _pairs(leaf, B[:, j].astype(np.int64))
            continue
        x = part[c].to_numpy(dtype=np.float64)
        lo = np.full(ul.size, np.inf)
        hi = np.full(ul.size, -np.inf)
        np.minimum.at(lo, inv, x)
        np.maximum.at(hi, inv, x)
        out["min"][j], out["max"][j] = lo, hi
    return out


def merge_stats(*parts: dict) -> dict:
    """Sum :func:`leaf_stats` results (min of mins, max of maxes, union of pairs)."""
    leaves = np.concatenate([p["leaves"] for p in parts])
    ul, inv = np.unique(leaves, return_inverse=True)
    out: dict = {"leaves": ul, "min": {}, "max": {}, "cat": {}}
    for j in parts[0]["min"]:
        lo = np.full(ul.size, np.inf)
        hi = np.full(ul.size, -np.inf)
        np.minimum.at(lo, inv, np.concatenate([p["min"][j] for p in parts]))
        np.maximum.at(hi, inv, np.concatenate([p["max"][j] for p in parts]))
        out["min"][j], out["max"][j] = lo, hi
    for j in parts[0]["cat"]:
        both = np.concatenate([p["cat"][j] for p in parts])
        out["cat"][j] = _pairs(both[:, 0], both[:, 1])
    for key in ("group", "first"):
        if key in parts[0]:
            both = np.concatenate([p[key] for p in parts])
            out[key] = _pairs(both[:, 0], both[:, 1])
    return out


# -- 2. on the client ------------------------------------------------------------------------
def _function(pairs: np.ndarray, size: int, what: str) -> np.ndarray:
    """An array ``f`` with ``f[a] = b`` for the (a, b) pairs, checked to be a function."""
    f = np.full(size, -1, dtype=np.int64)
    if pairs.size:
        if np.unique(pairs[:, 0]).size != pairs.shape[0]:
            raise RuntimeError(f"internal error: a leaf of the {what} holds rows of two groups; "
                               "please report")
        f[pairs[:, 0]] = pairs[:, 1]
    return f


def _tree_arrays(t: Any) -> dict:
    return {"feature": np.asarray(t.feature_, dtype=np.int64),
            "threshold": np.asarray(t.threshold_, dtype=np.float64),
            "left": np.asarray(t.children_left_, dtype=np.int64),
            "right": np.asarray(t.children_right_, dtype=np.int64),
            "offset": np.asarray(t.offset_, dtype=np.int64),
            "flat": np.asarray(t.flat_, dtype=bool)}


def _combined(trees: list, stats: dict) -> tuple[dict, np.ndarray]:
    """One tree on the bins with each leaf's final group (the refinement grafted under the
    first tree's leaves, as ``_ag_spec`` does in memory), and each summary leaf's node id in
    it."""
    t1 = trees[0]
    n1 = t1["feature"].size
    if len(trees) == 1:
        g = _function(stats["group"], n1, "tree")
        tree = {**t1, "group": np.where(t1["feature"] >= 0, -1, g)}
        return tree, stats["leaves"]
    r = trees[1]
    nr = r["feature"].size
    l2g = _function(stats["first"], n1, "first tree")
    r2g = _function(stats["group"], nr, "refinement")
    feature = np.concatenate([t1["feature"], r["feature"]])
    threshold = np.concatenate([t1["threshold"], r["threshold"]])
    left = np.concatenate([t1["left"], np.where(r["left"] >= 0, r["left"] + n1, -1)])
    right = np.concatenate([t1["right"], np.where(r["right"] >= 0, r["right"] + n1, -1)])
    offset = np.concatenate([t1["offset"], np.where(r["offset"] >= 0,
                                                    r["offset"] + t1["flat"].size, -1)])
    flat = np.concatenate([t1["flat"], r["flat"]])
    group = np.concatenate([np.full(n1, -1, dtype=np.int64),
                            np.where(r["feature"] >= 0, -1, r2g)])
    leaves1 = np.flatnonzero(t1["feature"] < 0)
    g = l2g[leaves1]
    lv, src = leaves1[g >= 0], n1 + g[g >= 0]  # each first-tree leaf becomes its group's root
    feature[lv], threshold[lv], offset[lv] = feature[src], threshold[src], offset[src]
    left[lv], right[lv], group[lv] = left[src], right[src], group[src]
    feature[src] = -1  # the copied roots are no longer reached
    left[src] = right[src] = -1
    group[src] = -1
    # a refinement leaf that is a root (a group the refinement did not cut) is its first leaf
    root_of = np.full(nr, -1, dtype=np.int64)
    root_of[g[g >= 0]] = lv
    rl = stats["leaves"]
    node = np.where(root_of[rl] >= 0, root_of[rl], n1 + rl)
    tree = {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "offset": offset, "flat": flat, "group": group}
    return tree, node


class _MergedSummary(LeafSummary):
    """A :class:`LeafSummary` made from merged per-leaf figures instead of rows; every leaf's
    rows are in one group (``leaf_group``)."""

    def __init__(self, node: np.ndarray, stats: dict, leaf_group: np.ndarray,
                 n_nodes: int):  # noqa: D107 - no call to the row-based constructor
        order = np.argsort(node, kind="stable")
        self.nodes = node[order]
        self.lid = np.full(n_nodes, -1, dtype=np.int64)
        self.lid[self.nodes] = np.arange(self.nodes.size)
        self.row_lid = np.zeros(0, dtype=np.int64)
        self.max, self.min, self.nanmax, self.nanmin, self.has_nan, self.pairs = \
            {}, {}, {}, {}, {}, {}
        for j in stats["min"]:  # numeric QIs have no missing values on Dask (refused)
            self.min[j] = self.nanmin[j] = stats["min"][j][order]
            self.max[j] = self.nanmax[j] = stats["max"][j][order]
            self.has_nan[j] = np.zeros(self.nodes.size, dtype=bool)
        lid_of_leaf = np.empty(stats["leaves"].size, dtype=np.int64)
        lid_of_leaf[order] = np.arange(order.size)
        for j, pairs in stats["cat"].items():
            li = lid_of_leaf[np.searchsorted(stats["leaves"], pairs[:, 0])]
            width = int(pairs[:, 1].max()) + 1 if pairs.size else 1
            key = np.unique(li * width + pairs[:, 1])  # sorted by leaf, then code
            self.pairs[j] = (key // width, key % width)
        self._group = leaf_group[order]

    def group_range(self, groups: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self._group, self._group


def _threshold_gaps(tree: dict, summary: _MergedSummary, spec: K.BinSpec) -> tuple:
    from anonml.anonymize._routing_leaves import split_bounds

    feature = tree["feature"]
    inner = feature >= 0
    return split_bounds(summary, np.where(inner, feature, -1), spec.is_cat,
                        np.where(inner, tree["left"], -1), np.where(inner, tree["right"], -1))




def _isin_task(part: pd.DataFrame, cands: dict) -> dict:
    return {c: np.unique(part[c].to_numpy(dtype=np.float64)[
        np.isin(part[c].to_numpy(dtype=np.float64), v)]) for c, v in cands.items()}


def _inside_task(part: pd.DataFrame, gaps: dict) -> dict:
    """Distinct values of each column strictly inside any of its (lo, hi) gaps."""
    out = {}
    for c, (lo, hi) in gaps.items():
        x = np.unique(part[c].to_numpy(dtype=np.float64))
        i = np.searchsorted(lo, x, side="left") - 1  # the gaps sorted by lo: the last lo < x
        ok = (i >= 0) & (x > lo[np.maximum(i, 0)]) & (x < hi[np.maximum(i, 0)])
        out[c] = x[ok]
    return out


def _union_values(*parts: dict) -> dict:
    return {c: np.unique(np.concatenate([p[c] for p in parts])) for c in parts[0]}


def _disjoint(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of open intervals as sorted disjoint ones (overlapping ones joined)."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    run_hi = np.maximum.accumulate(hi)
    start = np.r_[True, lo[1:] >= run_hi[:-1]]
    idx = np.flatnonzero(start)
    return lo[idx], np.maximum.reduceat(hi, idx)


def _avoid_training_values(client: Any, parts_of: Any, spec: K.BinSpec, summary: dict,
                           tree: dict, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Numeric thresholds: per split the roundest number in (lo, hi) that equals no training
    value of its column (step 3 of the module docstring)."""
    import dask

    from anonml.anonymize._routing import _threshold_avoiding
    from anonml.dask._tree import tree_reduce

    feature = tree["feature"]
    thr = np.full(feature.size, np.nan)
    unknown: dict = {}
    for j in np.flatnonzero(~spec.is_cat):
        nodes = np.flatnonzero(feature == j)
        if not nodes.size:
            continue
        c = spec.columns[j]
        # every distinct training value, when the column has at most max_bins of them
        known = summary["num"][c]["distinct"]
        thr[nodes] = _threshold_avoiding(
            lo[nodes], hi[nodes],
            np.asarray(known, dtype=np.float64) if known is not None else np.array([np.inf]))
        if known is None:
            unknown[c] = (j, nodes)
    if not unknown:
        return thr
    cols = list(unknown)

    def reduce(task: Any, arg: dict) -> dict:
        futs = client.compute([dask.delayed(task)(p, arg) for p in parts_of(cols)])
        client.wait(futs)
        return client.gather(tree_reduce(client, futs, _union_values))

    hits = reduce(_isin_task, {c: np.unique(thr[unknown[c][1]]) for c in cols})
    redo = {c: unknown[c][1][np.isin(thr[unknown[c][1]], hits[c])] for c in cols}
    redo = {c: n for c, n in redo.items() if n.size}
    if not redo:
        return thr
    inside = reduce(_inside_task, {c: _disjoint(lo[n], hi[n]) for c, n in redo.items()})
    for c, n in redo.items():  # every training value inside these gaps is known now
        thr[n] = _threshold_avoiding(lo[n], hi[n], np.asarray(inside[c], dtype=np.float64))
    return thr


def _routes_match(client: Any, rt: Any, parts_of: Any, groups: list, qi: list) -> bool:
    import dask

    def same(part: pd.DataFrame, g: np.ndarray) -> bool:
        return bool(np.array_equal(rt.apply(part), np.asarray(g, dtype=np.int64)))

    futs = client.compute([dask.delayed(same)(p, g) for p, g in zip(parts_of(qi), groups)])
    client.wait(futs)
    return all(client.gather(futs))


def build_mapping(client: Any, parts_of: Any, states: list, first: list | None, groups: list,
                  trees: list, spec: K.BinSpec, summary: dict, reps: pd.DataFrame, *, method: str,
                  params: dict, columns: Sequence[Any], distance: str | None,
                  tick: Any = None) -> Any:
    """The release copy of the run's mapping (see the module docstring); ``tick(done,
    total)`` hears the first pass (per-leaf summaries) partition by partition."""
    import dask

    from anonml.anonymize._routing import RoutingTree
    from anonml.anonymize._routing_build import _cat_specs, _plain, _set_nodes, _simplify
    from anonml.anonymize._routing_leaves import boxes_route_to_groups
    from anonml.dask._tree import _put, tree_reduce

    qi = list(spec.columns)
    arrays = [_tree_arrays(t) for t in trees]
    trees_f = _put(client, arrays)
    spec_f = _put(client, spec)
    futs = client.compute([
        dask.delayed(leaf_stats)(p, s, None if first is None else first[i], g, trees_f, spec_f)
        for i, (p, s, g) in enumerate(zip(parts_of(qi), states, groups))
    ])
    client.wait(futs, tick=tick)
    stats = client.gather(tree_reduce(client, futs, merge_stats))
    del futs
    tree, node = _combined(arrays, stats)
    n_nodes = tree["feature"].size
    leaf_group = _function(stats["group"], int(stats["leaves"].max()) + 1,
                           "tree")[stats["leaves"]]
    leaves = _MergedSummary(node, stats, leaf_group, n_nodes)
    lo, hi, tn, tc, tl = _threshold_gaps(tree, leaves, spec)
    thr = _avoid_training_values(client, parts_of, spec, summary, tree, lo, hi)
    cat_values = {j: list(spec.categories[c]) for j, c in enumerate(qi)
                  if c in set(spec.categorical)}
    specs = _cat_specs(tn, tc, tl, tree["feature"], cat_values)
    shown = {c: {_plain(v) for v in reps[c].dropna().tolist()} for c in spec.categorical}
    all_cats = {j: {_plain(v) for v in vals} for j, vals in cat_values.items()}
    inner = tree["feature"] >= 0
    rt = RoutingTree(qi, spec.categorical)
    _set_nodes(rt, tree["feature"], np.where(inner & ~spec.is_cat[np.maximum(tree["feature"], 0)],
                                             thr, np.nan),
               np.where(inner, tree["left"], -1), np.where(inner, tree["right"], -1),
               np.where(inner, -1, tree["group"]), inner & spec.is_cat[np.maximum(tree["feature"], 0)],
               specs, shown, all_cats)
    rt = _simplify(rt)
    uniques = {j: np.asarray(v, dtype=object) for j, v in cat_values.items()}
    if not boxes_route_to_groups(rt, leaves, None, uniques) and \
            not _routes_match(client, rt, parts_of, groups, qi):
        raise RuntimeError("internal error: the saved mapping does not route the training rows "
                           "to their groups; please report")
    return _anonymizer(method, params, columns, spec, reps, rt, distance)


def _anonymizer(method: str, params: dict, columns: Sequence[Any], spec: K.BinSpec,
                reps: pd.DataFrame, rt: Any, distance: str | None) -> Any:
    """A fitted anonymizer in release form (the attributes ``release_copy`` keeps)."""
    from anonml._methods import anonymizer_class

    m = anonymizer_class(method)(**params)
    columns = list(columns)
    m.n_features_in_ = len(columns)
    if all(isinstance(c, str) for c in columns):
        m.feature_names_in_ = np.asarray(columns, dtype=object)
    m.columns_ = columns
    m.qi_ = list(spec.columns)
    m.categorical_ = list(spec.categorical)
    m.recoding_ = "representative"
    m.n_groups_ = int(reps.shape[0])
    m.suppressed_groups_ = np.zeros(reps.shape[0], dtype=bool)
    m.merge_map_ = None
    m.t_distance_ = distance
    if method == "ag":
        m.tree_method_ = "hist"
    m.route_ = rt
    m.handle_unknown = "ignore"
    m.representatives_ = reps.reset_index(drop=True)
    return m


def save_mapping(mapping: Any, path: Path) -> None:
    from anonml.safemodel import save_model

    save_model(mapping, path)
