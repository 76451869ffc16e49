"""Tests of RTreeAnonymizer (Iwuchukwu & Naughton, 2007): a top-down bulk-loaded R-tree.

* hand-made tables whose best split (least summed normalized MBR margin) is worked out in the
  comments;
* with ``split_sample=None`` (every axis searched exactly) the leaves equal those of a plain
  recursive implementation written here from the definition (``reference_rtree``), on random
  tables (ties, constant columns, missing categories, n close to k), for several ``min_fill``;
* invariants in the default (sampled) mode too: classes of at least k, one leaf per row, leaves
  of ``k .. 2k-1`` rows unless no allowed cut exists (checked by brute force), ``transform`` of
  the training rows, routing of new rows; l-diversity and t-closeness; input errors.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from anonml._errors import InputError
from anonml.anonymize import _rtree as rtree
from anonml.anonymize._rtree import RTreeAnonymizer
from anonml.hierarchies import Hierarchy
from anonml.privacy import gcp, k_anonymity, l_diversity, t_closeness

RT = RTreeAnonymizer
SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}
SCALE = 1 << 20


# ================================================================================================
# the reference: plain recursive Python, straight from the definition
# ================================================================================================
def _axes(frame: pd.DataFrame, qi):
    """Per QI: the rank of every row (value order; categories sorted, missing last) and its
    integer coordinate ``round(rank_position / top * 2^20)`` (numeric: the value over the
    range), as in the module docstring."""
    ranks, coords = [], []
    for c in qi:
        col = frame[c]
        if pd.api.types.is_numeric_dtype(col.dtype):
            v = col.to_numpy(dtype=float)
            span = v.max() - v.min()
            ranks.append(list(v))
            coords.append([int(np.rint((x - v.min()) / span * SCALE)) if span > 0 else 0 for x in v])
        else:
            vals = col.astype(object).tolist()
            known = sorted({x for x in vals if not pd.isna(x)})
            code = {x: i for i, x in enumerate(known)}
            r = [len(known) if pd.isna(x) else code[x] for x in vals]
            top = max(r)
            ranks.append(r)
            coords.append([int(np.rint(x / max(top, 1) * SCALE)) for x in r])
    return list(zip(*ranks)), list(zip(*coords))


def reference_rtree(frame: pd.DataFrame, qi, k: int, min_fill: float) -> list[frozenset]:
    """Leaves (sets of row positions) of the exact top-down split: every node of at least 2k
    rows is cut where the two parts' summed MBR margins are least, over every axis and every
    cut between two distinct values leaving ``max(k, ceil(min_fill * N))`` rows on each side
    (else ``k``); ties: least margin, most balanced, smaller left part, lowest axis."""
    ranks, coords = _axes(frame, qi)
    d = len(qi)

    def margin(rows):
        return sum(max(coords[r][a] for r in rows) - min(coords[r][a] for r in rows) for a in range(d))

    leaves = []

    def split(rows):
        N = len(rows)
        if N < 2 * k:
            leaves.append(frozenset(rows))
            return
        best = None
        for lb in (max(k, math.ceil(min_fill * N)), k):
            for a in range(d):
                srt = sorted(rows, key=lambda r: ranks[r][a])
                for L in range(lb, N - lb + 1):
                    if ranks[srt[L - 1]][a] == ranks[srt[L]][a]:
                        continue
                    key = (margin(srt[:L]) + margin(srt[L:]), abs(2 * L - N), 2 * L > N, a)
                    if best is None or key < best[0]:
                        best = (key, srt[:L], srt[L:])
            if best is not None:
                break
        if best is None:
            leaves.append(frozenset(rows))
            return
        split(best[1])
        split(best[2])

    split(list(range(len(frame))))
    return leaves


def _leaves(est: RT) -> list[frozenset]:
    return [frozenset(np.flatnonzero(est.groups_ == g).tolist()) for g in range(est.n_groups_)]


def _has_allowed_cut(frame, qi, rows, k, model=None) -> bool:
    """Whether some axis has a cut between two distinct values leaving >= k rows (and, with
    ``model``, an allowed group) on each side: brute force."""
    ranks, _ = _axes(frame, qi)
    for a in range(len(qi)):
        srt = sorted(rows, key=lambda r: ranks[r][a])
        for L in range(k, len(rows) - k + 1):
            if ranks[srt[L - 1]][a] == ranks[srt[L]][a]:
                continue
            if model is None:
                return True
            parts = [srt[:L], srt[L:]]
            counts = np.array([np.bincount(model.codes[p], minlength=model.n_values) for p in parts])
            if model.allowed(counts).all():
                return True
    return False


@st.composite
def tables(draw, max_rows: int = 24):
    """Small mixed tables: integer columns with ties (some constant), categorical columns with
    missing values; k from 2 to 4, n from k up."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(k, max(k, max_rows)))
    n_num = draw(st.integers(0, 3))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    data = {}
    for j in range(n_num):
        top = draw(st.sampled_from([0, 1, 3, 50]))  # 0: a constant column
        data[f"x{j}"] = np.asarray(draw(st.lists(st.integers(0, top), min_size=n, max_size=n)))
    for j in range(n_cat):
        vals = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
        data[f"c{j}"] = pd.Series(vals, dtype=object)
    frame = pd.DataFrame(data)
    return frame, list(frame.columns), k


# ================================================================================================
# hand-made tables
# ================================================================================================
def test_hand_example_best_split_axis():
    # 4 points, k=2, so each split is 2 | 2. Normalized coordinates: x / 4, y / 3.
    #   on x: {(0,0), (1,3)} | {(3,1), (4,2)}: margins (1/4 + 3/3) + (1/4 + 1/3) = 1.8333
    #   on y: {(0,0), (3,1)} | {(4,2), (1,3)}: margins (3/4 + 1/3) + (3/4 + 1/3) = 2.1667
    X = pd.DataFrame({"x": [0, 1, 3, 4], "y": [0, 3, 1, 2]})
    est = RT(k=2, split_sample=None).fit(X)
    assert sorted(map(sorted, _leaves(est))) == [[0, 1], [2, 3]]
    # the same table with the axes swapped is split on the other axis
    est2 = RT(k=2, split_sample=None).fit(X[["y", "x"]])
    assert sorted(map(sorted, _leaves(est2))) == [[0, 1], [2, 3]]
    assert est._tree["axis"][0] == 0 and est2._tree["axis"][0] == 1


def test_hand_example_cut_position_and_threshold():
    # one axis, k=2, values 0 1 2 10 11 12 20 21 (range 21). Cuts after 2 .. 6 rows cost
    # (1+19, 2+11, 10+10, 11+9, 12+1) / 21: 3 | 5 and 6 | 2 tie at 13/21 and the more
    # balanced 3 | 5 wins; then {10 11 12 20 21} is cut 3 | 2 (2+1 against 1+9 for 2 | 3)
    X = pd.DataFrame({"v": [0, 1, 2, 10, 11, 12, 20, 21]})
    est = RT(k=2, split_sample=None, min_fill=0.0).fit(X)
    assert sorted(map(sorted, _leaves(est))) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    # new values route by the split thresholds: 5 goes left (<= 2), 15 goes to {10..12}
    new = pd.DataFrame({"v": [5, 15, 100, -3]})
    g = est._assign(new)
    assert g.tolist() == [est.groups_[0], est.groups_[3], est.groups_[6], est.groups_[0]]


def test_hand_example_equal_cuts_prefer_the_smaller_left_part():
    # values 0 1 5 6 10 11, k=2: the cuts 2 | 4 and 4 | 2 both cost (1 + 6) / 11 and are as
    # unbalanced; the root takes 2 | 4 (threshold: the rank of value 1)
    X = pd.DataFrame({"v": [0, 1, 5, 6, 10, 11]})
    est = RT(k=2, split_sample=None, min_fill=0.0).fit(X)
    assert est._tree["axis"][0] == 0 and est._tree["thr"][0] == 1
    assert sorted(map(sorted, _leaves(est))) == [[0, 1], [2, 3], [4, 5]]


def test_identical_rows_stay_together_in_one_larger_leaf():
    X = pd.DataFrame({"a": [1] * 7 + [5, 6], "b": ["u"] * 7 + ["v", "w"]})
    for sample in (None, 64):
        est = RT(k=2, split_sample=sample).fit(X)
        assert len(set(est.groups_[:7])) == 1
        assert est.n_unsplittable_ >= 1
        pd.testing.assert_frame_equal(est.transform(X), est.fit_transform(X))


def test_hierarchy_axis_uses_leaf_order():
    # leaves in hierarchy order a, c, b, d: the axis ranks follow it, so the cut 2 | 2 on v
    # separates {a, c} from {b, d}
    h = Hierarchy([["a", "x", "*"], ["c", "x", "*"], ["b", "y", "*"], ["d", "y", "*"]])
    X = pd.DataFrame({"v": ["b", "a", "d", "c"]})
    est = RT(k=2, hierarchies={"v": h}, split_sample=None).fit(X)
    pairs = sorted(sorted(X["v"][est.groups_ == g]) for g in range(est.n_groups_))
    assert pairs == [["a", "c"], ["b", "d"]]
    assert est.information_loss_ == pytest.approx(2.0)  # 2 * 2/4 + 2 * 2/4


# ================================================================================================
# random tables
# ================================================================================================
@settings(max_examples=50, **SETTINGS)
@given(tables(max_rows=22), st.sampled_from([0.0, 0.2, 0.4]))
def test_exact_mode_matches_reference(problem, min_fill):
    frame, qi, k = problem
    est = RT(k=k, split_sample=None, min_fill=min_fill).fit(frame)
    assert sorted(map(sorted, _leaves(est))) == sorted(map(sorted, reference_rtree(frame, qi, k, min_fill)))


@settings(max_examples=40, **SETTINGS)
@given(tables(max_rows=60), st.sampled_from([None, 2, 8, 64]), st.sampled_from([0.0, 0.2]))
def test_invariants(problem, sample, min_fill):
    frame, qi, k = problem
    est = RT(k=k, split_sample=sample, min_fill=min_fill)
    out = est.fit_transform(frame)
    n = len(frame)
    assert est.groups_.shape == (n,)
    assert set(np.unique(est.groups_)) == set(range(est.n_groups_))
    assert est.group_sizes_.sum() == n and est.group_sizes_.min() >= k
    assert k_anonymity(out, qi) >= k and est.min_class_size_ >= k
    pd.testing.assert_frame_equal(est.transform(frame), out)
    # leaves of 2k rows or more are exactly those without any cut of >= k rows per side
    big = 0
    for leaf in _leaves(est):
        if len(leaf) >= 2 * k:
            big += 1
            assert not _has_allowed_cut(frame, qi, sorted(leaf), k)
    assert big == est.n_unsplittable_
    g = gcp(frame, est.groups_, qi)
    assert est.gcp_ == pytest.approx(g, rel=1e-9, abs=1e-12)


@settings(max_examples=30, **SETTINGS)
@given(tables(max_rows=40), st.data())
def test_new_rows_route_like_training_rows(problem, data):
    frame, qi, k = problem
    est = RT(k=k).fit(frame)
    i = data.draw(st.integers(0, len(frame) - 1))
    assert est._assign(frame.iloc[[i]])[0] == est.groups_[i]
    # a new numeric value takes the route of the largest training value not above it: the
    # values are integers, so x + 0.5 routes like x
    num = [c for c in qi if pd.api.types.is_numeric_dtype(frame[c].dtype)]
    if num:
        new = frame.iloc[[i]].copy()
        new[num[0]] = new[num[0]] + 0.5
        assert est._assign(new)[0] == est.groups_[i]


# ================================================================================================
# l-diversity and t-closeness
# ================================================================================================
@pytest.mark.filterwarnings("ignore:.*leaves 1 group")  # tiny tables: l or t may collapse them
@settings(max_examples=30, **SETTINGS)
@given(tables(max_rows=40), st.integers(1, 3), st.sampled_from([None, 8]), st.data())
def test_distinct_l_diversity_holds_in_every_leaf(problem, l, sample, data):
    frame, qi, k = problem
    n = len(frame)
    frame = frame.copy()
    frame["s"] = data.draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n))
    if frame["s"].nunique() < l:
        with pytest.raises(InputError, match="whole table"):
            RT(k=k, quasi_identifiers=qi, sensitive="s", l=l).fit(frame)
        return
    est = RT(k=k, quasi_identifiers=qi, sensitive="s", l=l, split_sample=sample)
    out = est.fit_transform(frame)
    assert est.model_.allowed(est.model_.counts(est.groups_, est.n_groups_)).all()
    assert l_diversity(out, qi, "s") >= l
    pd.testing.assert_frame_equal(est.transform(frame), out)
    for leaf in _leaves(est):
        if len(leaf) >= 2 * k:
            assert not _has_allowed_cut(frame, qi, sorted(leaf), k, est.model_)


def test_model_counts_in_chunks_give_the_same_leaves(monkeypatch):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({
        "a": rng.integers(0, 50, 400),
        "b": rng.choice(list("xyz"), 400),
        "s": rng.choice(list("pqrs"), 400),
    })
    kw = {"k": 5, "quasi_identifiers": ["a", "b"], "sensitive": "s", "l": 3}
    ref = RT(**kw).fit(X)
    monkeypatch.setattr(rtree, "_COUNT_CELLS", 7)  # a node or two at a time
    got = RT(**kw).fit(X)
    assert got.groups_.tolist() == ref.groups_.tolist()


def test_t_closeness_holds():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({
        "age": rng.integers(20, 70, 300),
        "job": rng.choice(list("abcde"), 300),
        "s": rng.choice(["lo", "mid", "hi"], 300, p=[0.5, 0.3, 0.2]),
    })
    est = RT(k=5, quasi_identifiers=["age", "job"], sensitive="s", t=0.2)
    out = est.fit_transform(X)
    assert t_closeness(out, ["age", "job"], "s") <= 0.2 + 1e-9
    assert est.model_.allowed(est.model_.counts(est.groups_, est.n_groups_)).all()


# ================================================================================================
# parameters, errors and the estimator contract
# ================================================================================================
def test_fit_without_y_and_with_y():
    X = pd.DataFrame({"age": [20, 50, 22, 48, 30, 33], "z": list("abcdef")})
    est = RT(k=2, quasi_identifiers=["age"]).fit(X)
    est2 = RT(k=2, quasi_identifiers=["age"]).fit(X, [0, 1, 0, 1, 0, 1])
    assert est2.groups_.tolist() == est.groups_.tolist()  # y only picks representatives
    assert (est.transform(X)["z"] == X["z"]).all()


def test_params_are_stored_unchanged_and_clone_works():
    h = {"v": Hierarchy([["a", "*"], ["b", "*"]])}
    est = RT(k=3, split_sample=None, min_fill=0.1, hierarchies=h, random_state=4)
    params = est.get_params()
    assert params["hierarchies"] is h and params["split_sample"] is None
    c = clone(est)
    assert c.k == 3 and c.min_fill == 0.1 and c.split_sample is None
    est.fit(pd.DataFrame({"v": list("abababa")}))
    assert est.hierarchies is h and est.min_fill == 0.1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"split_sample": 1}, "split_sample=1"),
        ({"split_sample": 2.5}, "split_sample=2.5"),
        ({"split_sample": True}, "split_sample=True"),
        ({"min_fill": 0.5}, "min_fill=0.5"),
        ({"min_fill": -0.1}, "min_fill=-0.1"),
        ({"min_fill": "x"}, "min_fill='x'"),
    ],
)
def test_bad_parameters(kwargs, match):
    X = pd.DataFrame({"v": [1, 2, 3, 4]})
    with pytest.raises(InputError, match=match):
        RT(k=2, **kwargs).fit(X)


def test_value_missing_from_hierarchy_names_the_column():
    h = Hierarchy([["a", "*"], ["b", "*"]])
    X = pd.DataFrame({"v": list("abca")})
    with pytest.raises(InputError, match="'v'.*'c'"):
        RT(k=2, hierarchies={"v": h}).fit(X)


def test_numeric_hierarchy_and_new_numeric_values():
    # age with an interval hierarchy: the axis follows the leaves (value order here); a new
    # age that is no leaf routes like the largest training age not above it
    ages = [20, 21, 30, 31, 40, 41, 50, 51]
    h = Hierarchy.from_intervals(ages, [10])
    X = pd.DataFrame({"age": ages})
    est = RT(k=2, hierarchies={"age": h}).fit(X)
    assert est._grid.axes[0].kind == "tree"
    assert est.min_class_size_ >= 2
    new = pd.DataFrame({"age": [30.5, 19, 99]})
    assert est._assign(new).tolist() == [est.groups_[2], est.groups_[0], est.groups_[7]]
    assert est.gcp_ == pytest.approx(gcp(X, est.groups_, ["age"], hierarchies={"age": h}))


def test_numpy_input_and_generalized_output():
    X = np.array([[20, 1.0], [50, 2.0], [22, 1.5], [48, 2.5], [30, 0.5]])
    est = RT(k=2)
    out = est.fit_transform(X)
    assert isinstance(out, np.ndarray) and out.shape == X.shape
    gen = RT(k=2, recoding="generalize").fit(pd.DataFrame(X, columns=["a", "b"]))
    assert gen.groups_.tolist() == est.groups_.tolist()


def test_adult_sample():
    from anonml.datasets import load_adult

    data = load_adult()
    X = data.X.iloc[:3000]
    qi = list(data.qi_sets["12"])
    est = RT(k=10, quasi_identifiers=qi).fit(X)
    assert est.min_class_size_ >= 10
    sizes = est.group_sizes_
    assert (sizes[sizes >= 20].size) == est.n_unsplittable_
    assert est.gcp_ == pytest.approx(gcp(X, est.groups_, qi), rel=1e-9)


# the scikit-learn checks of this estimator run in tests/test_estimator_contract.py


def test_sklearn_check_behaviour():
    with pytest.raises(InputError, match="k=2 is larger than the number of rows"):
        RT(k=2).fit(np.ones((1, 3)))
    with pytest.raises(InputError, match="2-D"):
        RT(k=2).fit(np.arange(6.0))
    with pytest.raises(InputError, match="no columns"):
        RT(k=2).fit(np.empty((4, 0)))
    est = RT(k=2).fit(np.arange(40.0).reshape(10, 4))
    with pytest.raises(InputError, match="lacks column"):
        est.transform(np.arange(10.0).reshape(10, 1))
