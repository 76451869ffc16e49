"""Tests of the information-loss metrics in anonml.privacy._metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonml._errors import InputError
from anonml.hierarchies import Hierarchy
from anonml.privacy import equivalence_classes
from anonml.privacy._metrics import (
    average_class_size,
    classification_metric,
    discernibility,
    gcp,
    gil,
    information_loss,
    ncp,
    ngil,
)

# -- the hand-computed table ---------------------------------------------------------------------
# age: numeric, global range 60 - 20 = 40
# edu: hierarchy a,b -> "ab"; c,d,e -> "cde"; -> "*"  (5 leaves, height 2)
# sex: categorical without hierarchy, domain {F, M} (size 2)
TABLE = pd.DataFrame(
    {
        "age": [20, 25, 30, 40, 45, 60],
        "edu": ["a", "b", "a", "c", "a", "c"],
        "sex": ["F", "M", "F", "F", "F", "F"],
        "y": [1, 0, 0, 0, 0, 1],
    }
)
QI = ["age", "edu", "sex"]
EDU = Hierarchy(
    [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cde", "*"], ["d", "cde", "*"], ["e", "cde", "*"]]
)
H = {"edu": EDU, "not-a-qi": EDU}  # extra keys are ignored
GROUPS = np.array([0, 0, 0, 1, 1, 1])
# class 0 = rows 0-2: age 20..30 -> 10/40 = 0.25; edu {a, b} -> LCA "ab": NCP 2/5 = 0.4,
#                     GIL height 1/2 = 0.5; sex {F, M} -> NCP 2/2 = 1, GIL (flat) 1
# class 1 = rows 3-5: age 40..60 -> 20/40 = 0.5; edu {c, a} -> LCA "*": NCP 5/5 = 1,
#                     GIL 2/2 = 1; sex {F} -> 0 and 0
# NCP(G0) = 0.25 + 0.4 + 1 = 1.65;   NCP(G1) = 0.5 + 1 + 0 = 1.5
# GCP = (3 * 1.65 + 3 * 1.5) / (6 * 3) = 9.45 / 18 = 0.525
# GIL = 3 * (0.25 + 0.5 + 1) + 3 * (0.5 + 1 + 0) = 5.25 + 4.5 = 9.75;  NGIL = 9.75 / 18
# DM = 3^2 + 3^2 = 18;  C_AVG(k=2) = (6 / 2) / 2 = 1.5
# CM with y: class 0 labels 1,0,0 -> majority 0, 1 off; class 1 labels 0,0,1 -> 1 off: 2/6


def test_hand_computed_ncp_and_gcp():
    per = ncp(TABLE, GROUPS, QI, hierarchies=H)
    np.testing.assert_allclose(per, [1.65, 1.5])
    table = ncp(TABLE, GROUPS, QI, hierarchies=H, per_attribute=True)
    np.testing.assert_allclose(table.to_numpy(), [[0.25, 0.4, 1.0], [0.5, 1.0, 0.0]])
    assert table.columns.tolist() == QI and table.index.tolist() == [0, 1]
    assert gcp(TABLE, GROUPS, QI, hierarchies=H) == pytest.approx(0.525)


def test_hand_computed_ncp_without_hierarchy_is_set_recoding():
    # edu domain {a, b, c} (3 values): class 0 {a, b} -> 2/3, class 1 {c, a} -> 2/3
    np.testing.assert_allclose(ncp(TABLE, GROUPS, QI), [0.25 + 2 / 3 + 1, 0.5 + 2 / 3 + 0])
    # GCP = 3 * (1.9167 + 1.1667) / 18 = (0.75 + 4/3 + 1) / 6
    assert gcp(TABLE, GROUPS, QI) == pytest.approx((0.75 + 4 / 3 + 1) / 6)


def test_hand_computed_weights():
    # weights 2, 1, 1 rescaled to sum d = 3: 1.5, 0.75, 0.75
    # NCP(G0) = 1.5*0.25 + 0.75*0.4 + 0.75*1 = 1.425; NCP(G1) = 1.5*0.5 + 0.75*1 = 1.5
    w = {"age": 2, "edu": 1, "sex": 1}
    np.testing.assert_allclose(ncp(TABLE, GROUPS, QI, hierarchies=H, weights=w), [1.425, 1.5])
    assert gcp(TABLE, GROUPS, QI, hierarchies=H, weights=[2, 1, 1]) == pytest.approx(8.775 / 18)
    # same weights in a dict with a column left out (weighs 1)
    assert gcp(TABLE, GROUPS, QI, hierarchies=H, weights={"age": 2}) == pytest.approx(8.775 / 18)
    # GIL(G0) = 3*(1.5*0.25 + 0.75*0.5 + 0.75*1) = 4.5; GIL(G1) = 3*(1.5*0.5 + 0.75*1) = 4.5
    assert gil(TABLE, GROUPS, QI, hierarchies=H, weights=w) == pytest.approx(9.0)
    # equal weights are the unweighted formula
    assert gcp(TABLE, GROUPS, QI, hierarchies=H, weights=[5, 5, 5]) == pytest.approx(0.525)


def test_hand_computed_gil_ngil():
    assert gil(TABLE, GROUPS, QI, hierarchies=H) == pytest.approx(9.75)
    np.testing.assert_allclose(gil(TABLE, GROUPS, QI, hierarchies=H, per_class=True), [5.25, 4.5])
    assert ngil(TABLE, GROUPS, QI, hierarchies=H) == pytest.approx(9.75 / 18)
    # without the hierarchy edu is flat: class 0 {a, b} -> 1, class 1 {c, a} -> 1
    # GIL = 3 * (0.25 + 1 + 1) + 3 * (0.5 + 1 + 0) = 6.75 + 4.5 = 11.25
    assert gil(TABLE, GROUPS, QI) == pytest.approx(11.25)


def test_hand_computed_size_and_label_metrics():
    assert discernibility(GROUPS) == 18
    # with k = 4 both classes (3 rows) are too small: every row charged n = 6 -> 36
    assert discernibility(GROUPS, k=4) == 36 and discernibility(GROUPS, k=3) == 18
    # classes of 3, 2, 1 rows with k = 2: 3^2 + 2^2 + 1 row * 6 = 19
    assert discernibility([0, 0, 0, 1, 1, 2], k=2) == 19
    assert average_class_size(GROUPS, 2) == pytest.approx(1.5)
    assert classification_metric(GROUPS, TABLE["y"]) == pytest.approx(2 / 6)


def test_hand_computed_with_suppression():
    # rows 4 and 5 suppressed (negative id): class 0 = rows 0-2 as before, class 1 = row 3
    groups = np.array([0, 0, 0, 1, -1, -1])
    # NCP(G0) = 1.65 (global ranges still over the whole table), NCP(G1) = 0
    # GCP = (3 * 1.65 + 1 * 0 + 2 suppressed * 3 QIs) / (6 * 3) = 10.95 / 18
    assert gcp(TABLE, groups, QI, hierarchies=H) == pytest.approx(10.95 / 18)
    np.testing.assert_allclose(ncp(TABLE, groups, QI, hierarchies=H), [1.65, 0.0])
    # GIL = 5.25 + 0 + 2 * 3 = 11.25
    assert gil(TABLE, groups, QI, hierarchies=H) == pytest.approx(11.25)
    # DM = 3^2 + 1^2 + 6 * 2 = 22;  C_AVG = (4 / 2) / 2 = 1;  CM = (1 + 0 + 2) / 6
    assert discernibility(groups) == 22
    assert average_class_size(groups, 2) == pytest.approx(1.0)
    assert classification_metric(groups, TABLE["y"]) == pytest.approx(0.5)
    # the same with a mask (ids of suppressed rows kept, as in an anonymizer's groups_)
    mask = np.array([False, False, False, False, True, True])
    assert gcp(TABLE, GROUPS, QI, hierarchies=H, suppressed=mask) == pytest.approx(10.95 / 18)
    assert discernibility(GROUPS, suppressed=mask) == 22
    assert classification_metric(GROUPS, TABLE["y"], suppressed=mask) == pytest.approx(0.5)
    assert average_class_size(GROUPS, 2, suppressed=mask) == pytest.approx(1.0)


def test_information_loss_collects_everything():
    r = information_loss(TABLE, GROUPS, QI, k=2, labels=TABLE["y"], hierarchies=H)
    assert r["n_rows"] == 6 and r["n_qi"] == 3 and r["n_classes"] == 2 and r["n_suppressed"] == 0
    assert r["min_class_size"] == 3 and r["dm"] == 18
    assert r["gcp"] == pytest.approx(0.525) and r["ngil"] == pytest.approx(9.75 / 18)
    assert r["gil"] == pytest.approx(9.75) and r["c_avg"] == pytest.approx(1.5)
    assert r["cm"] == pytest.approx(2 / 6)
    assert r["ncp_mean"] == pytest.approx((1.65 + 1.5) / 2 / 3)
    assert "cm" not in information_loss(TABLE, GROUPS, QI)


def test_class_ids_need_not_be_contiguous():
    groups = np.array([7, 7, 7, 3, 3, 3])  # class 3 = rows 3-5 comes first
    np.testing.assert_allclose(ncp(TABLE, groups, QI, hierarchies=H), [1.5, 1.65])
    assert ncp(TABLE, groups, QI, per_attribute=True).index.tolist() == [3, 7]
    assert gcp(TABLE, groups, QI, hierarchies=H) == pytest.approx(0.525)


def test_numpy_table_and_numeric_hierarchy():
    arr = TABLE[["age", "sex"]].to_numpy()  # object array: age inferred numeric
    assert gcp(arr, GROUPS, [0, 1]) == pytest.approx((3 * 1.25 + 3 * 0.5) / 12)
    # age measured in an interval hierarchy when one is given (whatever its dtype):
    # widths 10, 20 from 20: class 0 ages 20, 25, 30 -> LCA "[20, 40[" (level 2), which holds
    # the 3 leaves 20, 25, 30 of 6 -> 3/6; class 1 ages 40, 45, 60 -> root -> 1
    ages = Hierarchy.from_intervals([20, 25, 30, 40, 45, 60], [10, 20])
    np.testing.assert_allclose(ncp(TABLE, GROUPS, ["age"], hierarchies={"age": ages}), [3 / 6, 1.0])


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"groups": [0, 1]}, "groups has 2 entries but the table has 6 rows"),
        ({"groups": np.array(list("aaabbb"))}, "integer class ids"),
        ({"groups": np.zeros((6, 1), dtype=int)}, "must be 1-D"),
        ({"suppressed": [True]}, "suppressed has shape"),
        ({"suppressed": np.array([0.5] * 6)}, "boolean mask"),
        ({"weights": [1, 2]}, "weights has 2 entries for 3"),
        ({"weights": {"zip": 1}}, "'zip', which is not a quasi-identifier"),
        ({"weights": [0, 0, 0]}, "not all 0"),
        ({"weights": [-1, 1, 1]}, "non-negative"),
        (
            {"hierarchies": {"edu": [["a", "*"]]}},
            r"hierarchies\['edu'\] is a list, not a Hierarchy",
        ),
        ({"hierarchies": ["edu"]}, "must be a dict"),
        ({"hierarchies": {"edu": Hierarchy.flat(["a", "b"], name="edu")}}, "value 'c'"),
        ({"qi": ["zip"]}, "quasi-identifier 'zip' is not a column"),
    ],
)
def test_bad_input_raises_one_line_errors(kwargs, pattern):
    args = {"groups": GROUPS, "qi": QI}
    args.update(kwargs)
    groups, qi = args.pop("groups"), args.pop("qi")
    with pytest.raises(InputError, match=pattern) as info:
        gcp(TABLE, groups, qi, **args)
    assert "\n" not in str(info.value)


def test_other_errors():
    with pytest.raises(InputError, match="missing or infinite"):
        gcp(pd.DataFrame({"a": [1.0, np.nan]}), [0, 0], ["a"])
    with pytest.raises(InputError, match="no rows"):
        gcp(pd.DataFrame({"a": []}), [], ["a"])
    with pytest.raises(InputError, match="positive integer"):
        average_class_size([0, 0], 0)
    with pytest.raises(InputError, match="one label per row"):
        classification_metric([0, 0], [1])
    assert np.isnan(average_class_size([-1, -1], 2))


# -- properties (hypothesis) ---------------------------------------------------------------------
@st.composite
def tables(draw):
    """A small random table: two numeric QIs (one maybe constant), one categorical with a random
    two-level hierarchy, one without; random class ids; random labels."""
    n = draw(st.integers(1, 20))
    ints = st.integers(-5, 5)
    num = draw(st.lists(ints, min_size=n, max_size=n))
    const = draw(st.sampled_from([0, 3]))
    leaves = [f"v{i}" for i in range(draw(st.integers(1, 6)))]
    parent = draw(st.lists(st.integers(0, 2), min_size=len(leaves), max_size=len(leaves)))
    hier = Hierarchy([[v, f"p{p}", "*"] for v, p in zip(leaves, parent)], name="h")
    cat = draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))
    other = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    frame = pd.DataFrame({"num": num, "const": [const] * n, "cat": cat, "other": other})
    groups = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    labels = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return frame, groups, {"cat": hier}, labels


QI4 = ["num", "const", "cat", "other"]


def _brute_ncp(frame, groups, hiers):
    """NCP_A(G) per class straight from the definitions, one class at a time."""
    out = []
    for g in np.unique(groups):
        part = frame[groups == g]
        row = []
        for c in QI4:
            if c in hiers:
                h = hiers[c]
                vals = set(part[c])
                if len(vals) == 1:
                    row.append(0.0)
                    continue
                table = h.to_frame()
                for level in range(1, h.height + 1):
                    labels = set(table.loc[table[0].isin(vals), level])
                    if len(labels) == 1:
                        row.append((table[level] == labels.pop()).sum() / h.n_leaves)
                        break
            elif c in ("other",):
                k = part[c].nunique()
                row.append(k / frame[c].nunique() if k > 1 else 0.0)
            else:
                span = frame[c].max() - frame[c].min()
                row.append((part[c].max() - part[c].min()) / span if span else 0.0)
        out.append(row)
    return np.array(out)


@settings(max_examples=25, deadline=None)
@given(tables())
def test_ncp_matches_definition(data):
    frame, groups, hiers, _ = data
    got = ncp(frame, groups, QI4, hierarchies=hiers, per_attribute=True).to_numpy()
    np.testing.assert_allclose(got, _brute_ncp(frame, groups, hiers), atol=1e-12)
    sizes = np.unique(groups, return_counts=True)[1]
    expected = (sizes @ got.sum(1)) / (len(frame) * 4)
    assert gcp(frame, groups, QI4, hierarchies=hiers) == pytest.approx(expected)


@settings(max_examples=25, deadline=None)
@given(tables())
def test_bounds_and_consistency(data):
    frame, groups, hiers, labels = data
    r = information_loss(frame, groups, QI4, k=1, labels=labels, hierarchies=hiers)
    assert 0 <= r["gcp"] <= 1 + 1e-12 and 0 <= r["ngil"] <= 1 + 1e-12 and 0 <= r["cm"] <= 1
    assert r["gil"] == pytest.approx(gil(frame, groups, QI4, hierarchies=hiers))
    assert r["ngil"] == pytest.approx(r["gil"] / (len(frame) * 4))
    sizes = np.unique(groups, return_counts=True)[1]
    assert r["dm"] == int((sizes**2).sum()) and r["dm"] >= len(frame) * sizes.min()
    assert r["c_avg"] == pytest.approx(len(frame) / len(sizes))
    # relabelling the classes changes nothing
    perm = np.random.default_rng(0).permutation(5)
    assert gcp(frame, perm[groups], QI4, hierarchies=hiers) == pytest.approx(r["gcp"])
    assert gil(frame, perm[groups], QI4, hierarchies=hiers) == pytest.approx(r["gil"])


@settings(max_examples=25, deadline=None)
@given(tables())
def test_one_class_per_row_loses_nothing(data):
    frame, _, hiers, labels = data
    n = len(frame)
    own = np.arange(n)
    np.testing.assert_array_equal(ncp(frame, own, QI4, hierarchies=hiers), np.zeros(n))
    assert gcp(frame, own, QI4, hierarchies=hiers) == 0
    assert gil(frame, own, QI4, hierarchies=hiers) == 0
    assert discernibility(own) == n and classification_metric(own, labels) == 0
    # classes of identical QI rows (equivalence_classes of the original table) lose nothing too
    eq = equivalence_classes(frame, QI4)[0]
    assert (
        gcp(frame, eq, QI4, hierarchies=hiers) == 0 and ngil(frame, eq, QI4, hierarchies=hiers) == 0
    )


@settings(max_examples=25, deadline=None)
@given(tables())
def test_one_class_for_the_whole_table(data):
    frame, _, hiers, labels = data
    n = len(frame)
    one = np.zeros(n, dtype=int)
    h = hiers["cat"]
    distinct = set(frame["cat"])
    table = h.to_frame()  # column 1: parent label of each leaf
    parents = set(table.loc[table[0].isin(distinct), 1])
    if len(distinct) == 1:
        cat_ncp = cat_gil = 0.0
    elif len(parents) == 1:  # LCA = the one parent (level 1 of 2)
        cat_ncp, cat_gil = (table[1] == parents.pop()).sum() / h.n_leaves, 0.5
    else:  # LCA = the root
        cat_ncp, cat_gil = 1.0, 1.0
    num = 1.0 if frame["num"].nunique() > 1 else 0.0
    other = 1.0 if frame["other"].nunique() > 1 else 0.0  # all distinct values / domain
    np.testing.assert_allclose(ncp(frame, one, QI4, hierarchies=hiers), [num + 0 + cat_ncp + other])
    assert gcp(frame, one, QI4, hierarchies=hiers) == pytest.approx((num + cat_ncp + other) / 4)
    assert gil(frame, one, QI4, hierarchies=hiers) == pytest.approx(n * (num + cat_gil + other))
    assert discernibility(one) == n * n
    counts = np.bincount(labels)
    assert classification_metric(one, labels) == pytest.approx((n - counts.max()) / n)


@settings(max_examples=25, deadline=None)
@given(tables(), st.integers(0, 4), st.integers(0, 4))
def test_merging_two_classes_never_lowers_the_loss(data, a, b):
    frame, groups, hiers, labels = data
    merged = np.where(groups == b, a, groups)
    for metric in (gcp, gil):
        before = metric(frame, groups, QI4, hierarchies=hiers)
        after = metric(frame, merged, QI4, hierarchies=hiers)
        assert after >= before - 1e-12
    assert discernibility(merged) >= discernibility(groups)
    assert classification_metric(merged, labels) >= classification_metric(groups, labels) - 1e-12


@settings(max_examples=20, deadline=None)
@given(tables())
def test_everything_suppressed_costs_the_most(data):
    # (suppressing a few rows may lower GCP/DM: an outlier's class shrinks to tight values)
    frame, groups, hiers, labels = data
    n, mask = len(frame), np.ones(len(frame), dtype=bool)
    assert gcp(frame, groups, QI4, hierarchies=hiers, suppressed=mask) == pytest.approx(1.0)
    assert ngil(frame, groups, QI4, hierarchies=hiers, suppressed=mask) == pytest.approx(1.0)
    assert discernibility(groups, suppressed=mask) == n * n
    assert classification_metric(groups, labels, suppressed=mask) == 1.0
    assert len(ncp(frame, -np.ones(n, dtype=int), QI4)) == 0
