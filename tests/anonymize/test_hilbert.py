"""Tests of HilbertAnonymizer (Ghinita et al., 2007) and its Hilbert index (Skilling, 2004).

* the index: the known order of the 4 x 4 Hilbert curve, and on full grids of 2 to 4
  dimensions that the curve visits every cell once, moving to a neighbouring cell each step;
* the segmentation: hand-made tables worked out in the comments, and on random tables (ties,
  constant columns, missing categories, n close to k, hierarchies) the dynamic program's loss
  equals the optimum found by a plain O(n^2) dynamic program over every segmentation of the
  Hilbert-sorted rows (``reference_optimum``), and is never above the greedy segmentation's;
* invariants: classes of at least k, one group per row, group sizes, ``transform`` of the
  training rows, routing of new rows; l-diversity and t-closeness; input errors.
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
from anonml.anonymize import _hilbert_segment as segment
from anonml.anonymize._hilbert import (
    HilbertAnonymizer,
    _grid_coords,
    hilbert_digits,
    hilbert_order,
    hilbert_transpose,
)
from anonml.hierarchies import Hierarchy
from anonml.privacy import gcp, k_anonymity, l_diversity, t_closeness

HB = HilbertAnonymizer
SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}


# ================================================================================================
# helpers
# ================================================================================================
def _index_values(X: np.ndarray, bits: int) -> list[int]:
    """The Hilbert index of every column of X (d, n) as a Python integer."""
    D = hilbert_digits(hilbert_transpose(X.copy(), bits), bits)
    total = X.shape[0] * bits
    out = []
    for col in D.T:
        v = 0
        for digit in col:
            v = (v << 16) | int(digit)
        out.append(v >> (16 * D.shape[0] - total))
    return out


def _sorted_rows(est: HB, frame: pd.DataFrame) -> np.ndarray:
    """The training rows in the fitted estimator's Hilbert order."""
    ranks = est._grid.ranks(frame)
    D = hilbert_digits(
        hilbert_transpose(_grid_coords(ranks, est._n_slots, est.bits_), est.bits_), est.bits_
    )
    return hilbert_order(D)


def _ncp_sum(frame: pd.DataFrame, qi, hierarchies, rows) -> float:
    """sum_A NCP_A of the rows ``rows``, in plain Python (Xu et al. 2006, as in the metrics)."""
    total = 0.0
    for c in qi:
        col = frame[c].tolist()
        vals = [col[i] for i in rows]
        h = (hierarchies or {}).get(c)
        if h is not None:
            table = h.to_frame()
            anc = {row[0]: list(row) for row in table.itertuples(index=False)}
            level = next(
                j for j in range(h.height + 1) if len({anc[v][j] for v in vals}) == 1
            )
            if level:
                node = anc[vals[0]][level]
                total += sum(1 for leaf in anc if anc[leaf][level] == node) / h.n_leaves
        elif pd.api.types.is_numeric_dtype(frame[c].dtype):
            span = max(col) - min(col)
            if span > 0:
                total += (max(vals) - min(vals)) / span
        else:
            key = lambda v: "<missing>" if v is None or (isinstance(v, float) and math.isnan(v)) else v
            distinct = len({key(v) for v in vals})
            if distinct > 1:
                total += distinct / len({key(v) for v in col})
    return total


def reference_optimum(frame, qi, hierarchies, order, k) -> float:
    """Least ``sum_G |G| sum_A NCP_A(G)`` over every segmentation of the rows taken in
    ``order`` into consecutive groups of at least k rows, never cutting between two rows with
    identical QIs (no upper bound on the group size): a plain O(n^2) dynamic program."""
    n = len(order)
    keys = [tuple(frame[c].astype(object).iloc[i] for c in qi) for i in order]
    keys = [tuple("<m>" if pd.isna(v) else v for v in key) for key in keys]
    cut_ok = [True] + [keys[i - 1] != keys[i] for i in range(1, n)] + [True]
    best = [math.inf] * (n + 1)
    best[0] = 0.0
    for i in range(1, n + 1):
        if not cut_ok[i]:
            continue
        for j in range(i - k + 1):
            if cut_ok[j] and best[j] < math.inf:
                rows = [order[t] for t in range(j, i)]
                cost = best[j] + (i - j) * _ncp_sum(frame, qi, hierarchies, rows)
                best[i] = min(best[i], cost)
    return best[n]


@st.composite
def tables(draw, max_rows: int = 18, with_hierarchy: bool = True):
    """Small mixed tables: integer columns with ties (some constant), categorical columns with
    missing values, sometimes a hierarchy; k from 2 to 4, n from k up."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(k, max(k, max_rows)))
    n_num = draw(st.integers(0, 3))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    data, hierarchies = {}, {}
    for j in range(n_num):
        top = draw(st.sampled_from([0, 1, 3, 50]))  # 0: a constant column
        vals = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
        data[f"x{j}"] = np.asarray(vals) * draw(st.sampled_from([1, 1.5]))
    for j in range(n_cat):
        vals = draw(st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=n, max_size=n))
        data[f"c{j}"] = pd.Series(vals, dtype=object)
        if with_hierarchy and None not in vals and draw(st.booleans()):
            hierarchies[f"c{j}"] = Hierarchy(
                [["d", "x", "*"], ["a", "y", "*"], ["c", "x", "*"], ["b", "y", "*"]]
            )
    frame = pd.DataFrame(data)
    return frame, list(frame.columns), hierarchies, k


def _group_sizes_ok(est: HB, frame: pd.DataFrame, qi, k: int) -> None:
    """k <= |G| <= 2k - 2 + (largest number of rows sharing all QI values)."""
    sizes = np.bincount(est.groups_)
    dup = frame[qi].astype(object).fillna("<m>").value_counts().max()
    assert sizes.min() >= k
    assert sizes.max() <= max(2 * k - 2 + dup, k)


# ================================================================================================
# the Hilbert index
# ================================================================================================
def test_known_4x4_curve():
    # the order-2 Hilbert curve (Hilbert 1891; e.g. the d2xy table of Wikipedia's "Hilbert
    # curve" with x and y swapped): it starts at (0, 0) and ends at (3, 0)
    known = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2),
             (2, 2), (2, 3), (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]
    cells = [(x, y) for x in range(4) for y in range(4)]
    X = np.array(cells, dtype=np.uint16).T
    index = _index_values(X, 2)
    assert sorted(index) == list(range(16))
    assert [cells[i] for i in np.argsort(index)] == known
    order = hilbert_order(hilbert_digits(hilbert_transpose(X.copy(), 2), 2))
    assert [cells[i] for i in order] == known


@pytest.mark.parametrize("d, bits", [(2, 1), (2, 3), (2, 4), (3, 1), (3, 2), (3, 3), (4, 2), (5, 2)])
def test_curve_visits_each_cell_once_through_neighbours(d, bits):
    side = 1 << bits
    grid = np.stack(np.meshgrid(*[np.arange(side)] * d, indexing="ij"), axis=0).reshape(d, -1)
    index = _index_values(grid.astype(np.uint16), bits)
    assert sorted(index) == list(range(side**d))  # a bijection onto 0 .. 2^(d*bits) - 1
    path = grid[:, np.argsort(index)]
    assert (path[:, 0] == 0).all()  # starts at the origin
    steps = np.abs(np.diff(path.astype(np.int64), axis=1)).sum(axis=0)
    assert (steps == 1).all()  # each step moves to an adjacent cell


def test_uint32_coordinates_give_the_same_order():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 1 << 10, (3, 200)).astype(np.uint16)
    a = _index_values(X, 10)
    b = _index_values(X.astype(np.uint32), 10)
    assert a == b


def test_order_of_many_words_sorts_the_full_index():
    # 6 axes x 12 bits = 72 bits: five 16-bit digits
    rng = np.random.default_rng(1)
    X = rng.integers(0, 1 << 12, (6, 300)).astype(np.uint16)
    index = _index_values(X, 12)
    order = hilbert_order(hilbert_digits(hilbert_transpose(X.copy(), 12), 12))
    assert [index[i] for i in order] == sorted(index)


# ================================================================================================
# hand-made tables
# ================================================================================================
def test_hand_example_dp_and_greedy_in_one_dimension():
    # one numeric QI: the Hilbert order is the value order, range 11.
    # greedy, k=2: {1,2} {3,10} {11,12}: loss 2*(1 + 7 + 1)/11 = 18/11
    # dp: {1,2,3} {10,11,12}: loss 3*2/11 + 3*2/11 = 12/11 (the optimum)
    X = pd.DataFrame({"v": [10, 1, 12, 3, 2, 11]})
    dp = HB(k=2).fit(X)
    gr = HB(k=2, method="greedy").fit(X)
    members = lambda est: sorted(sorted(X["v"][est.groups_ == g]) for g in range(est.n_groups_))
    assert members(dp) == [[1, 2, 3], [10, 11, 12]]
    assert members(gr) == [[1, 2], [3, 10], [11, 12]]
    assert dp.information_loss_ == pytest.approx(12 / 11)
    assert gr.information_loss_ == pytest.approx(18 / 11)
    assert dp.gcp_ == pytest.approx(12 / 11 / 6)


def test_hand_example_greedy_remainder_joins_the_last_group():
    X = pd.DataFrame({"v": np.arange(11)})  # no ties: runs of 3, the last takes the 2 left
    gr = HB(k=3, method="greedy").fit(X)
    assert gr.group_sizes_.tolist() == [3, 3, 5]
    assert [sorted(X["v"][gr.groups_ == g]) for g in range(3)] == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8, 9, 10]
    ]


def test_hand_example_hierarchy_order_and_lca_loss():
    # leaves in hierarchy order a, c, b, d under x = {a, c} and y = {b, d}: the rows are sorted
    # in that order, not the alphabetical code order, and the best pairs are {a, c}, {b, d}
    # (each at the LCA x or y: 2 of 4 leaves, loss 2 * 0.5 + 2 * 0.5 = 2), where code order
    # would pair {a, b} and {c, d} under the root (loss 4)
    h = Hierarchy([["a", "x", "*"], ["c", "x", "*"], ["b", "y", "*"], ["d", "y", "*"]])
    X = pd.DataFrame({"v": ["b", "a", "d", "c"]})
    est = HB(k=2, hierarchies={"v": h}).fit(X)
    pairs = sorted(sorted(X["v"][est.groups_ == g]) for g in range(est.n_groups_))
    assert pairs == [["a", "c"], ["b", "d"]]
    assert est.information_loss_ == pytest.approx(2.0)
    flat = HB(k=2).fit(X)  # set share without the hierarchy: {a,b}, {c,d}: 2*(2/4) * 2
    assert sorted(sorted(X["v"][flat.groups_ == g]) for g in range(flat.n_groups_)) == [
        ["a", "b"], ["c", "d"]
    ]
    assert flat.information_loss_ == pytest.approx(2.0)


def test_identical_rows_are_never_separated():
    # five identical rows and k=2: the cell's rows form one group of 5 (> 2k-1)
    X = pd.DataFrame({"a": [1, 1, 1, 1, 1, 7, 8], "b": ["u"] * 5 + ["v", "w"]})
    for method in ("dp", "greedy"):
        est = HB(k=2, method=method).fit(X)
        assert len(set(est.groups_[:5])) == 1
        assert est.transform(X).equals(est.fit_transform(X))


# ================================================================================================
# random tables
# ================================================================================================
@settings(max_examples=50, **SETTINGS)
@given(tables(max_rows=14), st.sampled_from([None, 1, 40]))
def test_dp_is_optimal_over_every_segmentation(problem, cells):
    frame, qi, hierarchies, k = problem
    # small cost batches: one block per batch (offsets innermost, blocks with fewer ends than
    # their offsets) as well as many blocks per batch (blocks innermost)
    saved = segment._BATCH_CELLS
    segment._BATCH_CELLS = cells or saved
    try:
        est = HB(k=k, hierarchies=hierarchies or None).fit(frame)
    finally:
        segment._BATCH_CELLS = saved
    order = _sorted_rows(est, frame)
    best = reference_optimum(frame, qi, hierarchies, order, k)
    assert est.information_loss_ == pytest.approx(best, rel=1e-6, abs=1e-9)
    # the reported loss is the metrics module's GCP
    g = gcp(frame, est.groups_, qi, hierarchies=hierarchies or None)
    assert est.gcp_ == pytest.approx(g, rel=1e-9, abs=1e-12)


@settings(max_examples=40, **SETTINGS)
@given(tables(max_rows=40))
def test_dp_never_loses_more_than_greedy_and_invariants_hold(problem):
    frame, qi, hierarchies, k = problem
    results = {}
    for method in ("dp", "greedy"):
        est = HB(k=k, method=method, hierarchies=hierarchies or None)
        out = est.fit_transform(frame)
        n = len(frame)
        # every row in exactly one group, groups numbered 0..G-1
        assert est.groups_.shape == (n,)
        assert set(np.unique(est.groups_)) == set(range(est.n_groups_))
        assert est.group_sizes_.sum() == n
        assert (np.bincount(est.groups_) == est.group_sizes_).all()
        # the released table is k-anonymous, and transform reproduces it
        assert k_anonymity(out, qi) >= k
        assert est.min_class_size_ >= k
        pd.testing.assert_frame_equal(est.transform(frame), out)
        _group_sizes_ok(est, frame, qi, k)
        # groups are contiguous runs of the Hilbert order
        g_sorted = est.groups_[_sorted_rows(est, frame)]
        assert (np.diff(g_sorted) >= 0).all()
        results[method] = est.information_loss_
    assert results["dp"] <= results["greedy"] * (1 + 1e-6) + 1e-9


@settings(max_examples=30, **SETTINGS)
@given(tables(max_rows=30, with_hierarchy=False), st.data())
def test_new_rows_go_to_the_group_covering_their_index(problem, data):
    frame, qi, _, k = problem
    est = HB(k=k).fit(frame)
    # a copy of a training row goes to that row's group
    i = data.draw(st.integers(0, len(frame) - 1))
    assert est._assign(frame.iloc[[i]])[0] == est.groups_[i]
    # any row goes to the last group whose first index is <= its own
    new = frame.sample(n=min(5, len(frame)), random_state=0, replace=False).copy()
    for c in qi:
        if pd.api.types.is_numeric_dtype(frame[c].dtype):
            new[c] = new[c] + data.draw(st.sampled_from([-0.5, 0.25, 100.0]))
    got = est._assign(new)
    keys = _index_values(
        _grid_coords(est._grid.ranks(new), est._n_slots, est.bits_), est.bits_
    )
    firsts = _index_values(
        _grid_coords(est._grid.ranks(frame), est._n_slots, est.bits_), est.bits_
    )
    starts = [min(firsts[r] for r in np.flatnonzero(est.groups_ == g)) for g in range(est.n_groups_)]
    expected = [max([g for g in range(est.n_groups_) if starts[g] <= key] or [0]) for key in keys]
    assert got.tolist() == expected


@pytest.mark.parametrize("cells", [64, 1 << 12])
def test_batching_and_layouts_give_the_same_segmentation(monkeypatch, cells):
    # small batches force one block per batch (offsets innermost) and many blocks per batch
    # (blocks innermost); every batch size must give the same exact optimum
    rng = np.random.default_rng(5)
    X = pd.DataFrame({
        "a": rng.integers(0, 30, 400),
        "b": rng.choice(list("pqrstuvw"), 400),
        "c": rng.normal(size=400).round(1),
    })
    s = pd.Series(rng.choice(list("xyz"), 400))
    for k in (2, 7):
        ref = HB(k=k).fit(X)
        ref_l = HB(k=k, quasi_identifiers=["a", "b", "c"], sensitive="s", l=2).fit(X.assign(s=s))
        monkeypatch.setattr(segment, "_BATCH_CELLS", cells)
        got = HB(k=k).fit(X)
        got_l = HB(k=k, quasi_identifiers=["a", "b", "c"], sensitive="s", l=2).fit(X.assign(s=s))
        monkeypatch.undo()
        assert got.groups_.tolist() == ref.groups_.tolist()
        assert got_l.groups_.tolist() == ref_l.groups_.tolist()


# ================================================================================================
# l-diversity and t-closeness
# ================================================================================================
@pytest.mark.filterwarnings("ignore:.*leaves 1 group")  # tiny tables: l or t may collapse them
@settings(max_examples=30, **SETTINGS)
@given(tables(max_rows=30), st.integers(1, 3), st.sampled_from(["dp", "greedy"]), st.data())
def test_distinct_l_diversity_holds_in_every_group(problem, l, method, data):
    frame, qi, hierarchies, k = problem
    n = len(frame)
    frame = frame.copy()
    frame["s"] = data.draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n))
    if frame["s"].nunique() < l:
        with pytest.raises(InputError, match="whole table"):
            HB(k=k, quasi_identifiers=qi, sensitive="s", l=l, method=method).fit(frame)
        return
    est = HB(
        k=k, quasi_identifiers=qi, sensitive="s", l=l, method=method,
        hierarchies=hierarchies or None,
    )
    out = est.fit_transform(frame)
    counts = est.model_.counts(est.groups_, est.n_groups_)
    assert est.model_.allowed(counts).all()
    assert l_diversity(out, qi, "s") >= l
    pd.testing.assert_frame_equal(est.transform(frame), out)
    assert (np.diff(est.groups_[_sorted_rows(est, frame)]) >= 0).all()


def test_l_diversity_makes_groups_larger_than_2k_minus_1():
    # sensitive values in long runs along the only QI: 2-diverse groups must span two runs
    X = pd.DataFrame({"v": np.arange(24), "s": ["p"] * 6 + ["q"] * 6 + ["p"] * 6 + ["q"] * 6})
    est = HB(k=2, sensitive="s", l=2, quasi_identifiers=["v"]).fit(X)
    assert est.search_extent_ > 2
    assert est.group_sizes_.max() > 3
    assert est.model_.allowed(est.model_.counts(est.groups_, est.n_groups_)).all()
    plain = HB(k=2, quasi_identifiers=["v"]).fit(X)
    assert est.information_loss_ >= plain.information_loss_


def test_t_closeness_holds():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({
        "age": rng.integers(20, 70, 300),
        "job": rng.choice(list("abcde"), 300),
        "s": rng.choice(["lo", "mid", "hi"], 300, p=[0.5, 0.3, 0.2]),
    })
    for method in ("dp", "greedy"):
        est = HB(k=5, quasi_identifiers=["age", "job"], sensitive="s", t=0.2, method=method)
        out = est.fit_transform(X)
        assert t_closeness(out, ["age", "job"], "s") <= 0.2 + 1e-9
        assert est.model_.allowed(est.model_.counts(est.groups_, est.n_groups_)).all()


# ================================================================================================
# parameters, errors and the estimator contract
# ================================================================================================
def test_fit_without_y_and_with_y():
    X = pd.DataFrame({"age": [20, 50, 22, 48, 30, 33], "z": list("abcdef")})
    est = HB(k=2, quasi_identifiers=["age"]).fit(X)
    y = [0, 1, 0, 1, 0, 1]
    est2 = HB(k=2, quasi_identifiers=["age"]).fit(X, y)
    assert est2.groups_.tolist() == est.groups_.tolist()  # y only picks representatives
    assert (est.transform(X)["z"] == X["z"]).all()


def test_params_are_stored_unchanged_and_clone_works():
    h = {"v": Hierarchy([["a", "*"], ["b", "*"]])}
    est = HB(k=3, method="greedy", hierarchies=h, random_state=4)
    params = est.get_params()
    assert params["hierarchies"] is h and params["method"] == "greedy"
    c = clone(est)
    assert c.k == 3 and c.method == "greedy"
    X = pd.DataFrame({"v": list("abababa")})
    est.fit(X)
    assert est.hierarchies is h and est.get_params()["method"] == "greedy"


def test_bad_method():
    X = pd.DataFrame({"v": [1, 2, 3, 4]})
    with pytest.raises(InputError, match="method='fast'.*'dp' or 'greedy'"):
        HB(k=2, method="fast").fit(X)


def test_value_missing_from_hierarchy_names_the_column():
    h = Hierarchy([["a", "*"], ["b", "*"]])
    X = pd.DataFrame({"v": list("abca")})
    with pytest.raises(InputError, match="'v'.*'c'"):
        HB(k=2, hierarchies={"v": h}).fit(X)


def test_unknown_category_in_transform():
    X = pd.DataFrame({"v": list("aabbcc"), "n": [1, 2, 3, 4, 5, 6]})
    est = HB(k=2).fit(X)
    new = pd.DataFrame({"v": ["zz"], "n": [3]})
    with pytest.raises(InputError, match="'zz'"):
        est.transform(new)
    out = HB(k=2, handle_unknown="ignore").fit(X).transform(new)
    assert len(out) == 1


def test_numeric_hierarchy_and_new_numeric_values():
    # age with an interval hierarchy: the axis follows the leaves (value order here); a new
    # age that is no leaf routes like the largest training age not above it
    ages = [20, 21, 30, 31, 40, 41, 50, 51]
    h = Hierarchy.from_intervals(ages, [10])
    X = pd.DataFrame({"age": ages})
    est = HB(k=2, hierarchies={"age": h}).fit(X)
    assert est._grid.axes[0].kind == "tree"
    assert est.min_class_size_ >= 2
    new = pd.DataFrame({"age": [30.5, 19, 99]})
    assert est._assign(new).tolist() == [est.groups_[2], est.groups_[0], est.groups_[7]]
    assert est.gcp_ == pytest.approx(gcp(X, est.groups_, ["age"], hierarchies={"age": h}))


def test_numpy_input_and_generalized_output():
    X = np.array([[20, 1.0], [50, 2.0], [22, 1.5], [48, 2.5], [30, 0.5]])
    est = HB(k=2)
    out = est.fit_transform(X)
    assert isinstance(out, np.ndarray) and out.shape == X.shape
    gen = HB(k=2, recoding="generalize").fit(pd.DataFrame(X, columns=["a", "b"]))
    assert gen.groups_.tolist() == est.groups_.tolist()


def test_adult_sample_dp_beats_greedy():
    from anonml.datasets import load_adult

    data = load_adult()
    X = data.X.iloc[:3000]
    qi = list(data.qi_sets["12"])
    dp = HB(k=10, quasi_identifiers=qi).fit(X)
    gr = HB(k=10, quasi_identifiers=qi, method="greedy").fit(X)
    assert dp.min_class_size_ >= 10 and gr.min_class_size_ >= 10
    assert dp.gcp_ < gr.gcp_
    assert dp.gcp_ == pytest.approx(gcp(X, dp.groups_, qi), rel=1e-9)


# the scikit-learn checks of this estimator run in tests/test_estimator_contract.py


def test_sklearn_check_behaviour():
    with pytest.raises(InputError, match="k=2 is larger than the number of rows"):
        HB(k=2).fit(np.ones((1, 3)))
    with pytest.raises(InputError, match="2-D"):
        HB(k=2).fit(np.arange(6.0))
    with pytest.raises(InputError, match="no columns"):
        HB(k=2).fit(np.empty((4, 0)))
    est = HB(k=2).fit(np.arange(40.0).reshape(10, 4))
    with pytest.raises(InputError, match="lacks column"):
        est.transform(np.arange(10.0).reshape(10, 1))
