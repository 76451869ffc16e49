"""Routing trees built from per-leaf summaries equal the row-by-row construction, and the
box-level purity check catches a routing tree that misplaces training rows."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from anonml import AccuracyGuidedAnonymizer, MondrianAnonymizer
from anonml.anonymize import _routing_build as R
from anonml.anonymize._routing_build import _build, _check_routes
from anonml.anonymize._routing_leaves import (
    LeafSummary,
    boxes_route_to_groups,
    encoded_leaves,
    split_bounds,
)
from anonml.datasets import load_adult


def _random_tree(rng: np.random.Generator, width: int, n_levels: int) -> dict:
    """A random binary tree on ``width`` integer columns (children after parents)."""
    feature, thr, left, right = [0], [0.0], [-1], [-1]
    frontier = [0]
    for _ in range(n_levels):
        nxt = []
        for i in frontier:
            if rng.random() < 0.25:
                continue
            feature[i] = int(rng.integers(width))
            thr[i] = float(rng.integers(0, 6)) + 0.5
            for side in (left, right):
                side[i] = len(feature)
                nxt.append(len(feature))
                feature.append(-1)
                thr.append(0.0)
                left.append(-1)
                right.append(-1)
        frontier = nxt
    feature = np.asarray(feature, dtype=np.int64)
    return {"feature": feature, "threshold": np.asarray(thr), "left": np.asarray(left),
            "right": np.asarray(right), "mask_offset": np.full(feature.size, -1),
            "flat": np.zeros(0, dtype=bool)}


def _row_by_row(E, R, is_cat, efeat, tree):
    """The construction routing every row level by level (what build_routing did before
    per-leaf summaries): lo/hi per split and the (node, code, side) triples."""
    f_, t_, l_, r_ = tree["feature"], tree["threshold"], tree["left"], tree["right"]
    lo = np.full(f_.size, -np.inf)
    hi = np.full(f_.size, np.inf)
    trips = set()
    node = np.zeros(E.shape[0], dtype=np.int64)
    act = np.flatnonzero(f_[node] >= 0)
    while act.size:
        nd = node[act]
        go = E[act, f_[nd]] <= t_[nd]
        col = efeat[f_[nd]]
        x = R[act, col]
        num = ~is_cat[col]
        np.maximum.at(lo, nd[num & go], x[num & go])
        np.minimum.at(hi, nd[num & ~go], x[num & ~go])
        trips |= set(zip(nd[~num].tolist(), x[~num].astype(int).tolist(), go[~num].tolist()))
        node[act] = np.where(go, l_[nd], r_[nd])
        act = act[f_[node[act]] >= 0]
    return lo, hi, trips, node


@pytest.mark.parametrize("seed", range(6))
def test_split_bounds_equal_the_row_by_row_construction(seed):
    rng = np.random.default_rng(seed)
    n, width = 400, 4
    E = rng.integers(0, 7, size=(n, width)).astype(np.float64)
    is_cat = np.array([False, True, False, True])
    # raw values: a numeric column is its encoding plus noise kept within the bin (and a
    # missing value); a categorical one is its code
    R = E.copy()
    R[:, 0] = E[:, 0] + rng.random(n) * 0.4
    R[rng.integers(n), 2] = np.nan
    R[:, 2] = np.where(np.isnan(R[:, 2]), np.nan, E[:, 2] * 10 - rng.random(n))
    efeat = np.arange(width)
    tree = _random_tree(rng, width, 6)
    inner = tree["feature"] >= 0
    lo_ref, hi_ref, trips_ref, leaf_ref = _row_by_row(E, R, is_cat, efeat, tree)
    leaf = encoded_leaves(E, tree["feature"], tree["threshold"], tree["mask_offset"],
                          tree["flat"], tree["left"], tree["right"])
    assert np.array_equal(leaf, leaf_ref)
    cols = {j: (R[:, j].astype(np.int64) if is_cat[j] else R[:, j]) for j in range(width)}
    summary = LeafSummary(leaf, cols, {j: 8 for j in range(width) if is_cat[j]})
    out_feature = np.where(inner, efeat[np.maximum(tree["feature"], 0)], -1)
    lo, hi, tn, tc, tl = split_bounds(summary, out_feature, is_cat,
                                      np.where(inner, tree["left"], -1),
                                      np.where(inner, tree["right"], -1))
    assert np.array_equal(lo, lo_ref, equal_nan=True)
    assert np.array_equal(hi, hi_ref, equal_nan=True)
    assert set(zip(tn.tolist(), tc.tolist(), tl.tolist())) == trips_ref
    # read one column at a time, with narrow codes and 32-bit leaves: the same summary
    small = LeafSummary(leaf.astype(np.int32),
                        lambda j: cols[j].astype(np.uint8) if is_cat[j] else cols[j],
                        {j: 8 for j in range(width) if is_cat[j]}, columns=range(width))
    assert small.row_lid.dtype == np.int32
    got = split_bounds(small, out_feature, is_cat, np.where(inner, tree["left"], -1),
                       np.where(inner, tree["right"], -1))
    for a, b in zip(got, (lo, hi, tn, tc, tl)):
        assert np.array_equal(a, b, equal_nan=True)
    for j in summary.pairs:
        assert all(np.array_equal(a, b) for a, b in zip(small.pairs[j], summary.pairs[j]))


def test_compact_codes_narrows_and_keeps_the_codes():
    s = pd.Series(["a", None, "b", "a"] + [f"v{i}" for i in range(300)])
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    few = pd.factorize(pd.Series(["x", "y", None]), use_na_sentinel=True)
    fact = {"many": (codes, uniques), "few": few}
    R.compact_codes(fact)
    assert fact["many"][0].dtype == np.int16 and fact["few"][0].dtype == np.int8
    assert np.array_equal(fact["many"][0], codes) and fact["many"][1] is uniques
    assert np.array_equal(fact["few"][0], few[0])


@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    rng = np.random.default_rng(3)
    idx = rng.choice(len(d.X), size=3000, replace=False)
    return (d.X.iloc[idx].reset_index(drop=True), d.y.iloc[idx].reset_index(drop=True),
            list(d.qi_sets["12"]))


def _copy(rt):
    out = type(rt)(rt.columns, rt.categorical)
    out.__dict__.update({k: (v.copy() if isinstance(v, np.ndarray) else v)
                         for k, v in rt.__dict__.items() if k not in ("columns", "categorical")})
    return out


def _fitted(est, adult):
    X, y, _ = adult
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est


@pytest.mark.parametrize("method", ["ag_hist", "mondrian"])
def test_box_check_passes_and_catches_a_misrouting_tree(method, adult):
    X, _, qi = adult
    est = (AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi, tree="hist")
           if method == "ag_hist" else MondrianAnonymizer(k=20, quasi_identifiers=qi))
    est = _fitted(est, adult)
    frame = X
    factorized = {c: pd.factorize(frame[c], use_na_sentinel=True) for c in est.categorical_}
    enc = est.encoder_
    with enc.memoize(frame, factorized):
        spec = (R._ag_spec(est, frame, lambda g: g) if method == "ag_hist"
                else R._mondrian_spec(est, frame, lambda g: g))
    rt, summary, uniques = _build(frame, spec["columns"], spec["categorical"], spec.get("E"),
                                  spec["efeat_col"], spec["tree"], R._shown_categories(est),
                                  leaf=spec.get("leaf"), factorized=factorized)
    groups = est.groups_
    assert np.array_equal(rt.apply(frame), groups)
    assert boxes_route_to_groups(rt, summary, groups, uniques)
    # a numeric threshold moved below the largest training value it sent left: the rows
    # holding that value change side (and, for some split, group)
    found = False
    for i in np.flatnonzero(np.isfinite(np.asarray(rt.threshold_, dtype=float)))[:30]:
        bad = _copy(rt)
        values = np.sort(frame[rt.columns[int(rt.feature_[i])]].dropna().to_numpy(dtype=float))
        below = values[values <= rt.threshold_[i]]
        if not below.size:
            continue
        bad.threshold_[i] = np.nextafter(below[-1], -np.inf)
        if np.array_equal(bad.apply(frame), groups):
            continue
        assert not boxes_route_to_groups(bad, summary, groups, uniques)
        with pytest.raises(RuntimeError, match="does not reproduce"):
            _check_routes(bad, frame, groups, summary, uniques)
        found = True
        break
    assert found
    # a categorical split naming the other side's categories
    cat = np.flatnonzero((np.asarray(rt.cat_offset_) >= 0) & (np.asarray(rt.cat_count_) > 0)
                         & (np.asarray(rt.text_index_) < 0))
    if method == "mondrian":  # (its splits on Adult's categories are text thresholds)
        return
    assert cat.size
    bad2 = _copy(rt)
    bad2.named_left_[cat[0]] = not bad2.named_left_[cat[0]]
    assert not np.array_equal(bad2.apply(frame), groups)
    assert not boxes_route_to_groups(bad2, summary, groups, uniques)
    with pytest.raises(RuntimeError, match="does not reproduce"):
        _check_routes(bad2, frame, groups, summary, uniques)



@pytest.mark.parametrize("method", ["ag_hist", "ag_exact", "mondrian", "rtree"])
def test_fit_keeps_no_row_level_helpers(method, adult):
    """The rows' leaves and factorizations handed to the routing build are not kept."""
    from anonml import RTreeAnonymizer

    _, _, qi = adult
    est = {"ag_hist": lambda: AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi, tree="hist"),
           "ag_exact": lambda: AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi,
                                                        tree="exact", random_state=0),
           "mondrian": lambda: MondrianAnonymizer(k=20, quasi_identifiers=qi),
           "rtree": lambda: RTreeAnonymizer(k=20, quasi_identifiers=qi)}[method]()
    est = _fitted(est, adult)
    assert "_fit_leaves" not in est.__dict__
    assert "_memo_factorized" not in est.encoder_.__dict__
    assert np.array_equal(est.route_.apply(adult[0]), est.groups_)
