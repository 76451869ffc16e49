"""Building the :class:`~anonml.anonymize._routing.RoutingTree` of a fitted anonymizer.

At the end of ``fit`` the anonymizer's own routing (the accuracy-guided exact or histogram tree
and its Mondrian refinement, Mondrian's cuts, the R+-tree's splits; a Hilbert run, or a
Mondrian relaxed or hierarchy cut, first learnt as a tree of pure leaves over the training
groups by :func:`_fit_partition_tree`) is rewritten on the raw column values: every numeric
threshold by the rounding rule of :mod:`anonml.anonymize._routing`, every categorical split as
a named set of categories; then splits that change nothing are collapsed (:func:`_simplify`)
and the tree is checked to route every training row to its group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonml.anonymize._routing import RoutingTree, _text_between, _threshold_avoiding
from anonml.anonymize._routing_leaves import (
    LeafSummary,
    boxes_route_to_groups,
    encoded_leaves,
    split_bounds,
)

__all__ = ["anonymizer_routing", "build_routing", "compact_codes"]


def compact_codes(factorized: dict) -> None:
    """Put each ``pd.factorize`` result of ``factorized`` (codes, uniques) in place with its
    codes in the smallest signed integer dtype that holds them (-1 for missing, as
    ``pd.factorize`` gives): the categorical columns' codes a fit keeps for its routing tree
    then take 1-2 bytes a row rather than 8 while the output table exists."""
    for c, (codes, uniques) in list(factorized.items()):
        codes = np.asarray(codes)
        m = len(uniques)
        dt = next(t for t in (np.int8, np.int16, np.int32, np.int64) if m <= np.iinfo(t).max)
        if codes.dtype != dt:
            factorized[c] = (codes.astype(dt), uniques)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value



def build_routing(
    frame: pd.DataFrame,
    columns: Sequence[Any],
    categorical: Sequence[Any],
    E: np.ndarray,
    efeat_col: np.ndarray,
    tree: dict,
    shown: dict | None = None,
) -> RoutingTree:
    """Rewrite a fitted tree on encoded values as a :class:`RoutingTree` on raw values.

    Parameters
    ----------
    frame : DataFrame
        The training rows.
    columns, categorical : list
        The columns the routing reads, and the categorical ones among them.
    E : ndarray, shape (n_rows, n_encoded)
        The encoded training rows the tree routes by (ranks, bins, one-hot indicators, codes).
    efeat_col : ndarray of int
        For each encoded column, the position in ``columns`` of the raw column it encodes.
    tree : dict of ndarrays
        ``feature`` (encoded column, -1 at a leaf), ``threshold`` (left when
        ``E[:, feature] <= threshold``), ``mask_offset`` (-1, or the start in ``flat`` of a
        per-code boolean mask: left when ``flat[offset + E[:, feature]]``), ``flat``,
        ``left``, ``right``, ``group`` (each leaf's group).
    shown : dict, optional
        Per categorical column, the set of values the anonymized table shows: a split names
        the side whose categories are all shown when it can.

    Returns
    -------
    RoutingTree
    """
    return _build(frame, columns, categorical, E, efeat_col, tree, shown)[0]


def _build(frame: pd.DataFrame, columns: Sequence[Any], categorical: Sequence[Any],
           E: np.ndarray | None, efeat_col: np.ndarray, tree: dict, shown: dict | None = None,
           leaf: np.ndarray | None = None, factorized: dict | None = None,
           distinct: dict | None = None) -> tuple[RoutingTree, LeafSummary, dict]:
    """:func:`build_routing`, given each row's leaf if known (else routed through ``E``), the
    categorical columns' ``pd.factorize`` and the numeric columns' sorted distinct values
    (``np.unique``) if known; also returns the per-leaf summary and each categorical column's
    distinct values (for :func:`_check_routes`)."""
    feature = np.asarray(tree["feature"], dtype=np.int64)
    thr = np.asarray(tree["threshold"], dtype=np.float64)
    moff = np.asarray(tree.get("mask_offset", np.full(feature.size, -1)), dtype=np.int64)
    flat = np.asarray(tree.get("flat", np.zeros(0, dtype=bool)), dtype=bool)
    left = np.asarray(tree["left"], dtype=np.int64)
    right = np.asarray(tree["right"], dtype=np.int64)
    group = np.asarray(tree["group"], dtype=np.int64)
    efeat_col = np.asarray(efeat_col, dtype=np.int64)
    columns = list(columns)
    cat_set = set(categorical)
    is_cat = np.array([c in cat_set for c in columns], dtype=bool)
    n_nodes = feature.size

    # raw numbers and category codes of the training rows, per routed column; read one
    # column at a time by the summary (and dropped after it), so no column is copied for
    # longer than its own pass
    n_codes: dict[int, int] = {}
    cat_values: dict[int, np.ndarray] = {}
    factorized = factorized or {}
    for j, c in enumerate(columns):
        if is_cat[j]:
            got = factorized.get(c)
            if got is None:
                got = factorized[c] = pd.factorize(frame[c], use_na_sentinel=True)
            cat_values[j] = np.asarray(got[1], dtype=object)
            n_codes[j] = len(got[1]) + 1

    def R(j: int) -> np.ndarray:
        c = columns[j]
        if not is_cat[j]:
            return frame[c].to_numpy(dtype=np.float64)
        codes = factorized[c][0]
        if not codes.size or codes.min() >= 0:
            return codes  # (no missing value: the codes as they are, no copy)
        m = len(cat_values[j])  # missing: the last code, in the smallest dtype that holds it
        out = codes.astype(np.min_scalar_type(m))
        out[codes < 0] = m
        return out

    # each row's leaf once; per leaf its values; per split the values each side receives
    # (the rows going left at a node are those whose leaf is in its left subtree)
    if leaf is None:
        leaf = encoded_leaves(E, feature, thr, moff, flat, left, right)
    leaf = np.asarray(leaf)
    if leaf.dtype.kind not in "iu":
        leaf = leaf.astype(np.int64)
    summary = LeafSummary(leaf, R, n_codes, columns=range(len(columns)))
    inner = feature >= 0
    out_feature = np.where(inner, efeat_col[np.maximum(feature, 0)], -1)
    lo, hi, tn, tc, tl = split_bounds(summary, out_feature, is_cat, np.where(inner, left, -1),
                                      np.where(inner, right, -1))

    out_thr = np.full(n_nodes, np.nan)
    for j in np.flatnonzero(~is_cat):
        nodes = np.flatnonzero(inner & (out_feature == j))
        if nodes.size:
            got = (distinct or {}).get(columns[j])
            values = np.asarray(got, dtype=np.float64) if got is not None else np.unique(R(j))
            out_thr[nodes] = _threshold_avoiding(lo[nodes], hi[nodes], values)
    specs = _cat_specs(tn, tc, tl, out_feature, cat_values)
    all_cats = {j: {_plain(v) for v in cat_values[j]} for j in cat_values}
    rt = RoutingTree(columns, categorical)
    _set_nodes(rt, out_feature, out_thr, np.where(inner, left, -1), np.where(inner, right, -1),
               np.where(inner, -1, group), inner & is_cat[np.maximum(out_feature, 0)], specs,
               shown or {}, all_cats)
    return _simplify(rt), summary, cat_values



def _cat_specs(tn: np.ndarray, tc: np.ndarray, tl: np.ndarray, out_feature: np.ndarray,
               cat_values: dict) -> dict:
    """Per categorical split, from the (node, code, goes left) triples of
    :func:`~anonml.anonymize._routing_leaves.split_bounds`: (column, left values, right values,
    side of the missing value or None); code ``len(cat_values[j])`` is the missing value.
    Used by both engines (the Dask mapping builds its tree with it too)."""
    specs: dict[int, tuple] = {}
    if not tn.size:
        return specs
    width = int(tc.max()) + 2
    # one key per distinct (node, side, code): by node, the left side first, by code
    key = np.unique((tn * 2 + (1 - tl.astype(np.int64))) * width + tc)
    node, code = key // width // 2, key % width
    on_left = key // width % 2 == 0
    col = out_feature[node]
    n_vals = np.zeros(int(col.max()) + 1, dtype=np.int64)
    for j in np.unique(col):
        n_vals[j] = len(cat_values[int(j)])
    missing = code >= n_vals[col]
    # the categories named, as plain values, in key order (the missing value left out)
    plain = {int(j): [_plain(v) for v in cat_values[int(j)]] for j in np.unique(col)}
    named = np.flatnonzero(~missing)
    values = [plain[j][c] for j, c in zip(col[named].tolist(), code[named].tolist())]
    # per node, where its left and right runs of named categories start and end
    run = (node * 2 + np.where(on_left, 0, 1))[named]
    nodes = np.unique(node)
    starts = np.searchsorted(run, nodes * 2, side="left").tolist()
    mids = np.searchsorted(run, nodes * 2 + 1, side="left").tolist()
    ends = np.searchsorted(run, nodes * 2 + 2, side="left").tolist()
    miss_side = {}
    for i, left_side in zip(node[missing].tolist(), on_left[missing].tolist()):
        if left_side or i not in miss_side:  # (on both sides, as before: the left one)
            miss_side[i] = "left" if left_side else "right"
    for i, j, a, b, c in zip(nodes.tolist(), out_feature[nodes].tolist(), starts, mids, ends):
        specs[i] = (j, values[a:b], values[b:c], miss_side.get(i))
    return specs


def _set_nodes(rt: RoutingTree, feature: np.ndarray, thr: np.ndarray, left: np.ndarray,
               right: np.ndarray, group: np.ndarray, is_cat_node: np.ndarray, specs: dict,
               shown: dict, all_cats: dict) -> None:
    """Fill the routing tree's node arrays. A categorical split names the categories of one
    side, the side whose categories the anonymized table shows (``shown``) when it can, else
    the smaller one. When both sides hold categories the table does not show, the split
    becomes a small subtree: the shown categories of each side are named, and the hidden ones
    are told apart by text thresholds between them in string order (the shortest strings that
    separate them, never a category of the column), so no hidden category is named."""
    feature, thr = list(feature), list(thr)
    left, right, group = list(left), list(right), list(group)
    n = len(feature)
    off, cnt = [-1] * n, [0] * n
    miss_named, named_left, text_idx = [False] * n, [False] * n, [-1] * n
    cats: list = []
    texts: list = []

    def new_node(j: int) -> int:
        for arr, v in ((feature, j), (thr, np.nan), (left, -1), (right, -1), (group, -1),
                       (off, -1), (cnt, 0), (miss_named, False), (named_left, False),
                       (text_idx, -1)):
            arr.append(v)
        return len(feature) - 1

    # the text thresholds, each computed once per column and pair of neighbours (many
    # splits of a one-hot tree part the same categories); a column's categories as text once
    avoid: dict[int, set] = {}
    between_memo: dict[tuple, str] = {}

    def between(a: str, b: str, j: int) -> str:
        got = between_memo.get((a, b, j))
        if got is None:
            if j not in avoid:
                avoid[j] = {str(v) for v in all_cats.get(j, set())}
            got = between_memo[(a, b, j)] = _text_between(a, b, avoid[j])
        return got

    def name(i: int, values: list, missing: bool, to_left: bool) -> None:
        off[i], cnt[i] = len(cats), len(values)
        cats.extend(values)
        miss_named[i], named_left[i] = missing, to_left

    for i in np.flatnonzero(is_cat_node):
        i = int(i)
        if i not in specs:  # no training row reached it: names nothing, all go right
            name(i, [], False, False)
            continue
        j, lv, rv, miss = specs[i]
        if lv and rv:  # sides apart in text order: one text threshold, no category named
            ls, rs = [str(v) for v in lv], [str(v) for v in rv]
            l_lo, l_hi, r_lo, r_hi = min(ls), max(ls), min(rs), max(rs)
            if l_hi < r_lo and miss != "left":
                text_idx[i] = len(texts)
                texts.append(between(l_hi, r_lo, j))
                name(i, [], False, False)
                continue
            if r_hi < l_lo and miss != "right":  # right side first: children swapped
                text_idx[i] = len(texts)
                texts.append(between(r_hi, l_lo, j))
                name(i, [], False, False)
                left[i], right[i] = right[i], left[i]
                continue
        seen = shown.get(rt.columns[j])
        hid_l = [v for v in lv if seen is not None and v not in seen]
        hid_r = [v for v in rv if seen is not None and v not in seen]
        if not (hid_l and hid_r):
            name_left = (len(hid_l), len(lv)) <= (len(hid_r), len(rv))
            if name_left:
                name(i, lv, miss == "left", True)
            else:
                name(i, rv, miss == "right", False)
            continue
        l_child, r_child = left[i], right[i]
        # i: the shown categories of the left side go left; the rest on to b
        b = new_node(j)
        name(i, [v for v in lv if v in seen], miss == "left", True)
        left[i], right[i] = l_child, b
        # b: the shown categories of the right side go right; the hidden ones on to the chain
        name(b, [v for v in rv if v in seen], miss == "right", False)
        right[b] = r_child
        chain = sorted([(str(v), l_child) for v in hid_l] + [(str(v), r_child) for v in hid_r])
        runs = [chain[0]]
        bounds = []
        for prev, cur in zip(chain, chain[1:]):
            if cur[1] != runs[-1][1]:
                bounds.append(between(prev[0], cur[0], j))
                runs.append(cur)
        parent, side = b, "left"
        for t, run in zip(bounds, runs):
            c = new_node(j)
            name(c, [], False, False)
            text_idx[c] = len(texts)
            texts.append(t)
            if side == "left":
                left[parent] = c
            else:
                right[parent] = c
            left[c] = run[1]
            parent, side = c, "right"
        right[parent] = runs[-1][1]
    rt.feature_ = np.asarray(feature, dtype=np.int64)
    rt.threshold_ = np.asarray(thr, dtype=np.float64)
    rt.left_ = np.asarray(left, dtype=np.int64)
    rt.right_ = np.asarray(right, dtype=np.int64)
    rt.group_ = np.asarray(group, dtype=np.int64)
    rt.cat_offset_ = np.asarray(off, dtype=np.int64)
    rt.cat_count_ = np.asarray(cnt, dtype=np.int64)
    rt.cat_missing_ = np.asarray(miss_named, dtype=bool)
    rt.named_left_ = np.asarray(named_left, dtype=bool)
    rt.text_index_ = np.asarray(text_idx, dtype=np.int64)
    rt.categories_ = cats
    rt.text_thresholds_ = texts


def _simplify(rt: RoutingTree) -> RoutingTree:
    """Collapse splits whose two children are leaves of one group, then renumber the reachable
    nodes in breadth-first order (children after parents) and drop the rest."""
    feature, left, right, group = rt.feature_.copy(), rt.left_.copy(), rt.right_.copy(), \
        rt.group_.copy()
    while True:
        inner = np.flatnonzero(feature >= 0)
        if not inner.size:
            break
        lc, rc = left[inner], right[inner]
        same = (feature[lc] < 0) & (feature[rc] < 0) & (group[lc] == group[rc])
        if not same.any():
            break
        i = inner[same]
        group[i] = group[lc[same]]
        feature[i] = -1
        left[i] = right[i] = -1
    # breadth-first, one level at a time: each split's children, left then right, in the
    # order of their parents (the order of a first-in first-out walk)
    levels = [np.zeros(1, dtype=np.int64)]
    while True:
        split = levels[-1][feature[levels[-1]] >= 0]
        if not split.size:
            break
        levels.append(np.stack([left[split], right[split]], axis=1).reshape(-1))
    order = np.concatenate(levels)
    new_id = np.full(feature.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    inner = feature[order] >= 0
    cats = list(rt.categories_)
    new_cats: list = []
    off = rt.cat_offset_[order].copy()
    cnt = rt.cat_count_[order].copy()
    named = np.flatnonzero(off >= 0)
    gone = named[~inner[named]]
    off[gone], cnt[gone] = -1, 0
    named = named[inner[named]]
    for a, b in zip(off[named].tolist(), (off[named] + cnt[named]).tolist()):
        new_cats.extend(cats[a:b])
    off[named] = np.cumsum(cnt[named]) - cnt[named]  # each split's names, in node order
    out = RoutingTree(rt.columns, rt.categorical)
    out.feature_ = feature[order]
    out.threshold_ = np.where(inner, rt.threshold_[order], np.nan)
    out.left_ = np.where(inner, new_id[np.maximum(left[order], 0)], -1)
    out.right_ = np.where(inner, new_id[np.maximum(right[order], 0)], -1)
    out.group_ = np.where(inner, -1, group[order])
    out.cat_offset_ = off
    out.cat_count_ = cnt
    out.cat_missing_ = rt.cat_missing_[order] & inner
    out.named_left_ = rt.named_left_[order] & inner
    out.categories_ = new_cats
    texts = list(getattr(rt, "text_thresholds_", []))
    tidx = np.asarray(getattr(rt, "text_index_", np.full(feature.size, -1)),
                      dtype=np.int64)[order]
    tidx = np.where(inner, tidx, -1)
    used = np.flatnonzero(tidx >= 0)
    new_texts = [texts[t] for t in tidx[used].tolist()]
    tidx[used] = np.arange(used.size)
    out.text_index_ = tidx
    out.text_thresholds_ = np.asarray(new_texts, dtype=str) if new_texts else \
        np.zeros(0, dtype="<U1")
    if order.size < 2**31 - 1 and len(new_cats) < 2**31 - 1:  # ids in 4 bytes: half the file
        for name in ("feature_", "left_", "right_", "group_", "cat_offset_", "cat_count_",
                     "text_index_"):
            setattr(out, name, getattr(out, name).astype(np.int32))
    if new_cats and all(type(v) is str for v in new_cats):  # text in one array (compact)
        out.categories_ = np.asarray(new_cats, dtype=str)
    return out


def _sklearn_parts(est: Any) -> dict:
    t = est.tree_
    left = np.asarray(t.children_left, dtype=np.int64)
    return {"feature": np.where(left >= 0, np.asarray(t.feature, dtype=np.int64), -1),
            "threshold": np.asarray(t.threshold, dtype=np.float64),
            "left": left, "right": np.asarray(t.children_right, dtype=np.int64)}


def _onehot_columns(encoder: Any, columns: Sequence[Any]) -> np.ndarray:
    """Position in ``columns`` of the raw column of each of ``encoder.onehot``'s columns."""
    pos = {c: j for j, c in enumerate(columns)}
    out = [pos[c] for c in encoder.numeric]
    for c in encoder.categorical:
        spec = encoder.cats_[c]
        width = spec.n_codes if spec.has_missing else spec.n_codes - 1
        out += [pos[c]] * width
    return np.asarray(out, dtype=np.int64)


def _fit_partition_tree(anonymizer: Any, frame: pd.DataFrame, groups: np.ndarray) -> dict:
    """A tree of pure leaves over the training rows' groups (for partitions that are not
    axis-aligned trees on raw values: a Hilbert run, Mondrian's relaxed or hierarchy cuts).

    It reads numeric columns by rank and categorical ones by category code (a split on a
    range of codes becomes a named set of categories): on Adult's Hilbert mapping (k = 100)
    this gives 8,719 nodes where one-hot indicators give 21,905."""
    from sklearn.tree import DecisionTreeClassifier

    enc = anonymizer.encoder_
    cols = list(enc.columns)
    cat = set(enc.categorical)
    E = np.column_stack([enc.codes(frame, c) if c in cat else enc.ranks(frame, c)
                         for c in cols]).astype(np.float64)
    est = DecisionTreeClassifier(random_state=0).fit(E, groups)
    parts = _sklearn_parts(est)
    leaf_class = np.argmax(est.tree_.value[:, 0, :], axis=1)
    parts["group"] = np.where(parts["left"] >= 0, -1, est.classes_[leaf_class])
    spec = {"E": E}
    if np.array_equal(E.astype(np.float32), E):  # sklearn's float32 view is exact: its apply
        spec = {"leaf": np.asarray(est.apply(E), dtype=np.int64)}
    return {**spec, "efeat_col": np.arange(len(cols), dtype=np.int64), "tree": parts,
            "columns": cols, "categorical": list(enc.categorical)}


def _check_pure(rt: RoutingTree, frame: pd.DataFrame, groups: np.ndarray) -> None:
    got = rt.apply(frame)
    if not np.array_equal(got, groups):  # pragma: no cover - an internal invariant
        raise RuntimeError("the routing tree does not reproduce the training groups")


def _check_routes(rt: RoutingTree, frame: pd.DataFrame, groups: np.ndarray,
                  summary: LeafSummary, uniques: dict) -> None:
    """Every training row is routed to its group: shown on the boxes of the rows of each leaf
    of the fitted tree when they fall wholly on one side of every split (cheap), else by
    routing every row (:func:`_check_pure`)."""
    if not boxes_route_to_groups(rt, summary, groups, uniques):
        _check_pure(rt, frame, groups)


def anonymizer_routing(anonymizer: Any, frame: pd.DataFrame, groups: np.ndarray,
                       merge_map: np.ndarray | None,
                       factorized: dict | None = None) -> RoutingTree | None:
    """The :class:`RoutingTree` of a fitted anonymizer, from its training rows and groups
    (``groups`` after any merge; ``merge_map`` maps the partition's groups to them;
    ``factorized``: ``pd.factorize`` of categorical columns of ``frame`` already done)."""
    name = type(anonymizer).__name__
    if name not in ("AccuracyGuidedAnonymizer", "MondrianAnonymizer", "RTreeAnonymizer",
                    "HilbertAnonymizer"):
        return None
    shown = _shown_categories(anonymizer)
    final = (lambda g: g) if merge_map is None else (lambda g: np.where(
        g >= 0, np.asarray(merge_map)[np.maximum(g, 0)], -1))
    enc = anonymizer.encoder_
    # each categorical column factorized once, for the encoder's codes, the build and the check
    cat_cols = [c for c in dict.fromkeys([*enc.categorical, *anonymizer.categorical_])
                if c in frame.columns]
    factorized = dict(factorized or {})
    for c in cat_cols:
        if c not in factorized:
            factorized[c] = pd.factorize(frame[c], use_na_sentinel=True)
    with enc.memoize(frame, factorized):
        spec = None
        if name == "AccuracyGuidedAnonymizer":
            spec = _ag_spec(anonymizer, frame, final)
        elif name == "MondrianAnonymizer":
            spec = _mondrian_spec(anonymizer, frame, final)
        elif name == "RTreeAnonymizer":
            spec = _rtree_spec(anonymizer, frame, final)
        if spec is None:
            spec = _fit_partition_tree(anonymizer, frame, groups)
    rt, summary, uniques = _build(frame, spec["columns"], spec["categorical"], spec.get("E"),
                                  spec["efeat_col"], spec["tree"], shown,
                                  leaf=spec.get("leaf"), factorized=factorized,
                                  distinct=getattr(enc, "values_", None))
    _check_routes(rt, frame, groups, summary, uniques)
    return rt


def _shown_categories(anonymizer: Any) -> dict:
    reps = anonymizer.representatives_ if "representatives_" in anonymizer.__dict__ else None
    out: dict = {}
    if reps is None:
        return out
    for c in anonymizer.categorical_:
        if c in reps.columns:
            # (the distinct values first: one per category, not one per group)
            out[c] = {_plain(v) for v in pd.unique(reps[c].dropna()).tolist()}
    return out


def _int_leaves(leaf: Any) -> np.ndarray:
    """Each row's leaf as an integer array, not copied when it is one already."""
    leaf = np.asarray(leaf)
    return leaf if leaf.dtype.kind in "iu" else leaf.astype(np.int64)


def _ag_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict:
    enc = m.encoder_
    columns = list(enc.columns)
    # the rows' leaves in the first tree and in the refinement, as the fit found them
    kept = m.__dict__.pop("_fit_leaves", (None, None))
    # (kept by group, AccuracyGuidedAnonymizer's LeavesOfGroups: the arrays are made here)
    fit_leaf, fit_refined = kept.arrays() if hasattr(kept, "arrays") else kept
    del kept
    if fit_leaf is not None and len(fit_leaf) != frame.shape[0]:
        fit_leaf = fit_refined = None
    if m.tree_method_ == "exact":
        # the one-hot view in float32, as sklearn compares it: its own apply gives the leaves
        parts = _sklearn_parts(m.tree_)
        efeat = _onehot_columns(enc, columns)
        E = None if fit_leaf is not None else enc.onehot(frame)
        leaf = np.asarray(fit_leaf if fit_leaf is not None else m.tree_.apply(E),
                          dtype=np.int64)
        w1 = int(m.tree_.n_features_in_)
        parts["mask_offset"] = np.full(parts["feature"].size, -1, dtype=np.int64)
        parts["flat"] = np.zeros(0, dtype=bool)
    else:
        E = B = None
        if fit_leaf is None or (m.__dict__.get("refine_tree_") is not None
                                and fit_refined is None):
            B, _, _ = enc.bins(frame)
            E = B
        w1 = len(columns)
        t = m.tree_
        parts = {"feature": np.asarray(t.feature_, dtype=np.int64),
                 "threshold": np.asarray(t.threshold_, dtype=np.float64),
                 "left": np.asarray(t.children_left_, dtype=np.int64),
                 "right": np.asarray(t.children_right_, dtype=np.int64),
                 "mask_offset": np.asarray(t.offset_, dtype=np.int64),
                 "flat": np.asarray(t.flat_, dtype=bool)}
        efeat = np.arange(len(columns), dtype=np.int64)
        leaf = _int_leaves(fit_leaf) if fit_leaf is not None else \
            encoded_leaves(B, parts["feature"], parts["threshold"], parts["mask_offset"],
                           parts["flat"], parts["left"], parts["right"])
    l2g = np.asarray(m.leaf_to_group_, dtype=np.int64)
    leaf_group = l2g.copy()
    refine = m.__dict__.get("refine_tree_")
    if refine is None:
        parts["group"] = np.where(parts["left"] >= 0, -1, final(leaf_group))
        return {"leaf": leaf, "efeat_col": efeat, "tree": parts, "columns": columns,
                "categorical": list(enc.categorical)}
    # graft the refinement tree under each leaf of the first tree (its roots are the groups)
    n1 = parts["feature"].size
    pos = {c: j for j, c in enumerate(columns)}
    efeat = np.concatenate([efeat, np.array([pos[c] for c in m.qi_], dtype=np.int64)])
    r = refine
    rf = np.asarray(r.feature_, dtype=np.int64)
    rl = np.asarray(r.children_left_, dtype=np.int64)
    rr = np.asarray(r.children_right_, dtype=np.int64)
    roff = np.asarray(r.offset_, dtype=np.int64)
    r2g = np.asarray(m.refined_leaf_to_group_, dtype=np.int64)
    flat1 = parts["flat"]
    feature = np.concatenate([parts["feature"], np.where(rf >= 0, rf + w1, -1)])
    threshold = np.concatenate([parts["threshold"], np.asarray(r.threshold_, dtype=np.float64)])
    left = np.concatenate([parts["left"], np.where(rl >= 0, rl + n1, -1)])
    right = np.concatenate([parts["right"], np.where(rr >= 0, rr + n1, -1)])
    moff = np.concatenate([parts["mask_offset"], np.where(roff >= 0, roff + flat1.size, -1)])
    flat = np.concatenate([flat1, np.asarray(r.flat_, dtype=bool)])
    group = np.concatenate([np.full(n1, -1, dtype=np.int64),
                            np.where(rf >= 0, -1, final(r2g))])
    # each first-tree leaf becomes its group's refinement root (one leaf per group)
    leaves1 = np.flatnonzero(parts["feature"] < 0)
    g = l2g[leaves1]
    group[leaves1[g < 0]] = -1
    lv, src = leaves1[g >= 0], n1 + g[g >= 0]
    feature[lv], threshold[lv], moff[lv] = feature[src], threshold[src], moff[src]
    left[lv], right[lv], group[lv] = left[src], right[src], group[src]
    feature[src] = -1  # the copied root is no longer reached
    if fit_refined is not None:  # a refinement root is its first-tree leaf, grafted
        # (in place, in the leaves' own integer dtype when every node id fits it)
        r = _int_leaves(fit_refined)
        dt = np.result_type(leaf.dtype, r.dtype)
        if feature.size > np.iinfo(dt).max:
            dt = np.int64
        out = r.astype(dt)
        out += n1
        rg = l2g
        if l2g.size and np.can_cast(r.dtype, np.int64) and \
                np.iinfo(r.dtype).min <= l2g.min() and l2g.max() <= np.iinfo(r.dtype).max:
            rg = l2g.astype(r.dtype)  # (the groups in the leaves' dtype: a smaller temporary)
        root = r == rg[leaf]
        del r
        out[root] = leaf[root]
        leaf = out
    else:  # rows go on from their first-tree leaf down the refinement, reading the QIs' bins
        if m.tree_method_ == "hist" and list(m.qi_) == columns and E is not None:
            qB = E  # the tree's bins are the QIs' bins
        else:
            qB, _, _ = enc.bins(frame, columns=m.qi_)
        leaf = encoded_leaves(qB, feature, threshold, moff, flat, left, right, init=leaf,
                              col_offset=w1)
    tree = {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "mask_offset": moff, "flat": flat, "group": group}
    return {"leaf": leaf, "efeat_col": efeat, "tree": tree, "columns": columns,
            "categorical": list(enc.categorical)}


def _mondrian_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict | None:
    t = m.tree_
    kind = np.asarray(t.kind_, dtype=np.int64)
    feature = np.asarray(t.feature_, dtype=np.int64)
    fit_leaf = m.__dict__.pop("_fit_leaves", None)  # each row's leaf, as the fit found it
    if (kind[feature >= 0] != 0).any():
        return None  # relaxed or hierarchy cuts: learnt as a tree of pure leaves
    if fit_leaf is not None and len(fit_leaf) == frame.shape[0]:
        spec = {"leaf": _int_leaves(fit_leaf)}
    else:
        spec = {"E": m._values(frame, "error")}
    off = np.asarray(t.child_offset_, dtype=np.int64)
    nodes = np.asarray(t.child_nodes_, dtype=np.int64)
    inner = feature >= 0
    padded = np.append(nodes, [-1, -1])  # a tree without cuts has no child array
    left = np.where(inner, padded[np.where(inner, off, nodes.size)], -1)
    right = np.where(inner, padded[np.where(inner, off + 1, nodes.size)], -1)
    l2g = np.asarray(m.leaf_to_group_, dtype=np.int64)
    tree = {"feature": feature, "threshold": np.asarray(t.threshold_, dtype=np.float64),
            "left": left, "right": right, "group": np.where(inner, -1, final(l2g))}
    return {**spec, "efeat_col": np.arange(len(m.qi_), dtype=np.int64), "tree": tree,
            "columns": list(m.qi_), "categorical": list(m.categorical_)}


def _rtree_spec(m: Any, frame: pd.DataFrame, final: Any) -> dict:
    tree = m._tree
    fit_leaf = m.__dict__.pop("_fit_leaves", None)  # each row's leaf, as the fit found it
    if fit_leaf is not None and len(fit_leaf) == frame.shape[0]:
        spec = {"leaf": _int_leaves(fit_leaf)}
    else:
        spec = {"E": np.asarray(m._grid.ranks(frame, "error"))}  # read as float64 one by one
    axis = np.asarray(tree["axis"], dtype=np.int64)
    inner = axis >= 0
    parts = {"feature": axis, "threshold": np.asarray(tree["thr"], dtype=np.float64),
             "left": np.asarray(tree["left"], dtype=np.int64),
             "right": np.asarray(tree["right"], dtype=np.int64),
             "group": np.where(inner, -1, final(np.asarray(tree["group"], dtype=np.int64)))}
    return {**spec, "efeat_col": np.arange(len(m.qi_), dtype=np.int64), "tree": parts,
            "columns": list(m.qi_), "categorical": list(m.categorical_)}
