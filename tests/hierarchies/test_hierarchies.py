"""Tests of anonml.hierarchies.Hierarchy and the shipped Adult hierarchies."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonml._errors import InputError
from anonml.datasets import load_adult, load_adult_hierarchies
from anonml.datasets._loaders import _load
from anonml.hierarchies import Hierarchy

ROWS = [  # first appearance: a, c, b, d; so hierarchy order a, b | c, d
    ["a", "ab", "*"],
    ["c", "cd", "*"],
    ["b", "ab", "*"],
    ["d", "cd", "*"],
]


# -- random hierarchies (hypothesis) ---------------------------------------------------------
@st.composite
def hierarchies(draw, max_leaves=12, max_height=4):
    """A random valid ARX table (rows shuffled) and the Hierarchy built from it."""
    n = draw(st.integers(1, max_leaves))
    height = draw(st.integers(1, max_height))
    node = np.arange(n)
    cols = [np.array([f"v{i}" for i in range(n)], dtype=object)]
    for j in range(1, height):
        m = int(node.max()) + 1
        parent_of = np.array(draw(st.lists(st.integers(0, max(m - 1, 0)), min_size=m, max_size=m)))
        node = parent_of[node]
        cols.append(np.array([f"L{j}_{i}" for i in node], dtype=object))
    cols.append(np.full(n, "*", dtype=object))
    perm = draw(st.permutations(range(n)))
    table = [[c[i] for c in cols] for i in perm]
    return table, Hierarchy(table, name="rand")


def _brute_lca(table, leaves):
    """Lowest level at which all the given leaves have one ancestor label, and that label."""
    by_leaf = {row[0]: row for row in table}
    for level in range(len(table[0])):
        labels = {by_leaf[v][level] for v in leaves}
        if len(labels) == 1:
            return level, labels.pop()
    raise AssertionError("no common root")


# -- construction and structure --------------------------------------------------------------
def test_structure_of_a_small_hierarchy():
    h = Hierarchy(ROWS, name="t")
    assert h.name == "t" and h.height == 2 and h.n_leaves == 4 and len(h) == 4
    assert h.leaves.tolist() == ["a", "b", "c", "d"]  # subtrees contiguous, first appearance kept
    assert h.node_ids.tolist() == [[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0]]
    assert h.labels(1).tolist() == ["ab", "cd"] and h.labels(2).tolist() == ["*"]
    assert h.subtree_size(1).tolist() == [2, 2] and h.node_start(1).tolist() == [0, 2]
    assert h.subtree_size(2).tolist() == [4] and h.node_start(0).tolist() == [0, 1, 2, 3]
    assert h.n_nodes(0) == 4 and h.n_nodes(1) == 2 and h.n_nodes(2) == 1
    assert h.to_frame().values.tolist() == [ROWS[0], ROWS[2], ROWS[1], ROWS[3]]


def test_table_kinds_give_equal_hierarchies():
    a = Hierarchy(ROWS)
    assert Hierarchy(pd.DataFrame(ROWS)) == a
    assert Hierarchy(np.array(ROWS, dtype=object)) == a
    assert Hierarchy(a) == a
    assert Hierarchy([["a", "x", "*"], ["b", "x", "*"]]) != a


def test_same_label_at_two_levels_is_two_nodes():
    h = Hierarchy([["Never-married", "Never-married", "*"], ["Divorced", "Prev", "*"]])
    assert h.generalize(["Never-married"], 1).tolist() == ["Never-married"]
    assert h.height == 2


def test_numeric_leaves_keep_a_numeric_dtype():
    h = Hierarchy(pd.DataFrame({0: [3, 1, 2], 1: ["odd", "odd", "even"], 2: ["*"] * 3}))
    assert h.leaves.dtype == np.int64 and h.leaves.tolist() == [3, 1, 2]
    assert h.leaf_codes([1, 2, 3]).tolist() == [1, 2, 0]
    rows = Hierarchy([[1, "odd", "*"], [2, "even", "*"]])  # numbers in a list of rows
    assert rows.leaves.dtype == np.int64
    assert Hierarchy([[1.5, "x", "*"], [2, "x", "*"]]).leaves.dtype == np.float64
    assert Hierarchy([[True, "x", "*"], [False, "x", "*"]]).leaves.dtype == object


@settings(max_examples=60, deadline=None)
@given(hierarchies())
def test_node_ranges_are_contiguous_and_consistent(pair):
    table, h = pair
    by_leaf = {row[0]: row for row in table}
    for level in range(h.height + 1):
        ids = h.node_ids[:, level]
        assert np.all(np.diff(ids) >= 0)  # hierarchy order: ids never decrease
        assert ids[0] == 0 and ids[-1] == h.n_nodes(level) - 1
        start, size = h.node_start(level), h.subtree_size(level)
        for node in range(h.n_nodes(level)):
            members = np.flatnonzero(ids == node)
            assert members.tolist() == list(range(start[node], start[node] + size[node]))
            # every leaf of the node has the node's label at this level in the input table
            assert {by_leaf[h.leaves[i]][level] for i in members} == {h.labels(level)[node]}
    assert h.node_ids[:, 0].tolist() == list(range(h.n_leaves))


# -- common ancestor -------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(hierarchies(), st.data())
def test_common_ancestor_matches_brute_force(pair, data):
    table, h = pair
    n_rows = data.draw(st.integers(1, 25))
    values = data.draw(
        st.lists(st.sampled_from(h.leaves.tolist()), min_size=n_rows, max_size=n_rows)
    )
    n_groups = data.draw(st.integers(1, 6))
    groups = np.array(
        data.draw(st.lists(st.integers(0, n_groups - 1), min_size=n_rows, max_size=n_rows))
    )
    levels, nodes = h.common_ancestor(h.leaf_codes(values), groups, n_groups)
    for g in range(n_groups):
        members = [v for v, gg in zip(values, groups) if gg == g]
        if not members:
            assert levels[g] == 0 and nodes[g] == -1
            continue
        level, label = _brute_lca(table, members)
        assert levels[g] == level
        assert h.labels(level)[nodes[g]] == label


def test_common_ancestor_small_case_and_checks():
    h = Hierarchy(ROWS, name="t")
    codes = h.leaf_codes(["a", "a", "a", "b", "c", "d", "b", "d"])
    levels, nodes = h.common_ancestor(codes, [0, 0, 1, 1, 2, 2, 3, 3], 4)
    assert levels.tolist() == [0, 1, 1, 2]
    assert [h.labels(lv)[nd] for lv, nd in zip(levels, nodes)] == ["a", "ab", "cd", "*"]
    with pytest.raises(InputError, match="n_groups-1=1"):
        h.common_ancestor(codes, [0, 0, 1, 1, 2, 2, 3, 3], 2)
    with pytest.raises(InputError, match="leaf_codes"):
        h.common_ancestor(np.array([0, 9]), [0, 0], 1)
    with pytest.raises(InputError, match="one length"):
        h.common_ancestor(codes, [0, 1], 2)


# -- mapping values --------------------------------------------------------------------------
def test_leaf_codes_and_generalize():
    h = Hierarchy(ROWS, name="t")
    assert h.leaf_codes(pd.Series(["d", "a", "c"], dtype="str")).tolist() == [3, 0, 2]
    assert h.leaf_codes(np.array(["b"], dtype=object)).tolist() == [1]
    assert h.leaf_codes("c").tolist() == [2]
    assert h.generalize(["a", "d", "c"], 1).tolist() == ["ab", "cd", "cd"]
    assert h.generalize(["a", "d"], 0).tolist() == ["a", "d"]
    assert h.generalize(["a", "d"], 2).tolist() == ["*", "*"]
    with pytest.raises(InputError, match=r"level=3 must be an integer from 0 to 2; hierarchy 't'"):
        h.generalize(["a"], 3)
    with pytest.raises(InputError, match=r"level=1\.0 must be an integer from 0 to 2"):
        h.labels(1.0)


def test_numbers_match_their_text_form():
    numeric = Hierarchy.from_intervals([17, 18, 30], [5])
    assert numeric.leaf_codes(pd.Series(["30", "17"])).tolist() == [2, 0]
    assert numeric.leaf_codes(np.array([30.0, 18.0])).tolist() == [2, 1]
    assert numeric.leaf_codes(np.array([30, 18], dtype=object)).tolist() == [2, 1]
    text = Hierarchy([["17", "young", "*"], ["30", "old", "*"]])
    assert text.leaf_codes(np.array([30, 17, 30])).tolist() == [1, 0, 1]
    assert text.leaf_codes(pd.Series([17.0])).tolist() == [0]


def test_unknown_value_names_value_and_hierarchy():
    h = Hierarchy(ROWS, name="edu")
    msg = re.escape("value 'z' (2 rows) is not a leaf of hierarchy 'edu'; add a row for it")
    with pytest.raises(InputError, match=msg):
        h.leaf_codes(["a", "z", "z"])
    with pytest.raises(InputError, match="and 1 other unknown"):
        h.leaf_codes(["y", "z"])
    with pytest.raises(InputError, match="not a leaf"):
        h.leaf_codes([np.nan])


# -- validation errors -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("table", "pattern"),
    [
        (
            [["a", "x", "*"], ["b", "x"]],
            r"hierarchy 'h': row 1 \(leaf 'b'\) has 2 cells but row 0 has 3",
        ),
        ([["a", "x", "*"], ["a", "y", "*"]], r"hierarchy 'h' lists leaf 'a' more than once"),
        ([["a", "x", "*"], ["b", "y", "+"]], r"hierarchy 'h' has 2 roots in its last column"),
        (
            [["a", "x", "p", "*"], ["b", "x", "q", "*"]],
            r"node 'x' at level 1 has two parents at level 2, 'p' and 'q'",
        ),
        ([["a"], ["b"]], r"has 1 column\(s\)"),
        ([], r"has 0 column\(s\)"),
        ([["a", "", "*"]], r"empty cell at level 1 in row 0"),
        ([[None, "x", "*"]], r"missing leaf value in row 0"),
        (["ab*", "cd*"], r"row 0 is a string"),
        ("a;b", r"to read an ARX file use Hierarchy.read_arx"),
        (np.array(["a", "*"]), r"must be 2-D"),
    ],
)
def test_invalid_tables_raise_one_line_errors(table, pattern):
    with pytest.raises(InputError, match=pattern) as info:
        Hierarchy(table, name="h")
    assert "\n" not in str(info.value)


def test_leaves_and_nodes_may_share_labels_across_levels_but_not_parents():
    # "x" is a leaf and a level-1 node: two different nodes, valid
    h = Hierarchy([["a", "x", "*"], ["x", "y", "*"]])
    assert h.generalize(["x"], 1).tolist() == ["y"]


# -- ARX files -------------------------------------------------------------------------------
def test_arx_round_trip_path(tmp_path):
    h = Hierarchy(ROWS, name="t")
    path = tmp_path / "h.csv"
    h.to_arx(path)
    assert path.read_text() == "a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n"
    back = Hierarchy.read_arx(path)
    assert back == h and back.name == "h"
    assert [p.name for p in tmp_path.iterdir()] == ["h.csv"]  # no temporary file left
    h.to_arx(path, sep=",")
    assert Hierarchy.read_arx(path, sep=",", name="t") == h


def test_arx_round_trip_buffers_and_numeric():
    h = Hierarchy.from_intervals([0.5, 1.5, 7.25], [2, 4])
    buf = io.StringIO()
    h.to_arx(buf)
    text = buf.getvalue()
    assert text.splitlines()[0] == "0.5;[0, 2[;[0, 4[;*"
    assert Hierarchy.read_arx(io.StringIO(text), numeric=True) == h
    as_text = Hierarchy.read_arx(io.BytesIO(("\ufeff" + text).encode()))
    assert as_text.leaves.tolist() == ["0.5", "1.5", "7.25"]
    ints = Hierarchy.from_intervals(range(17, 91), [5, 10, 20])
    buf = io.StringIO()
    ints.to_arx(buf)
    back = Hierarchy.read_arx(io.StringIO(buf.getvalue()), numeric=True)
    assert back == ints and back.leaves.dtype == np.int64


def test_arx_quoting_of_separator_in_a_label():
    h = Hierarchy([["a;1", "x", "*"], ["b", "x", "*"]])
    buf = io.StringIO()
    h.to_arx(buf)
    assert Hierarchy.read_arx(io.StringIO(buf.getvalue())) == h


@pytest.mark.parametrize(
    ("text", "kwargs", "pattern"),
    [
        ("a;x;*\nb;*\n", {}, r"row 2 \(leaf 'b'\) has 2 fields but row 1 has 3"),
        ("\n\n", {}, "holds no rows"),
        ("1;*\nold;*\n", {"numeric": True}, r"leaf 'old' in row 2 is not a number"),
        ("a;*\n", {"sep": ";;"}, "single character"),
    ],
)
def test_read_arx_errors(text, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        Hierarchy.read_arx(io.StringIO(text), **kwargs)


def test_read_arx_missing_file_and_bad_output_folder(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        Hierarchy.read_arx(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="path or an open file"):
        Hierarchy.read_arx(42)
    with pytest.raises(InputError, match="does not exist; create it first"):
        Hierarchy(ROWS).to_arx(tmp_path / "missing" / "h.csv")


# -- builders --------------------------------------------------------------------------------
def test_flat():
    h = Hierarchy.flat(["M", "F", "M"], name="sex")
    assert h.height == 1 and h.leaves.tolist() == ["M", "F"]
    assert h.to_frame().values.tolist() == [["M", "*"], ["F", "*"]]
    assert Hierarchy.flat([1, 2], root="any").labels(1).tolist() == ["any"]
    with pytest.raises(InputError, match="empty"):
        Hierarchy.flat([])
    with pytest.raises(InputError, match="missing value"):
        Hierarchy.flat(["a", None])


def test_from_intervals_adult_ages():
    h = Hierarchy.from_intervals(range(17, 91), widths=[5, 10, 20], name="age")
    assert h.height == 4 and h.n_leaves == 74
    assert h.generalize([17, 34, 35, 90], 1).tolist() == [
        "[15, 20[",
        "[30, 35[",
        "[35, 40[",
        "[90, 95[",
    ]
    assert h.generalize([17, 34, 90], 2).tolist() == ["[10, 20[", "[30, 40[", "[90, 100["]
    assert h.generalize([17, 34, 90], 3).tolist() == ["[0, 20[", "[20, 40[", "[80, 100["]
    assert h.labels(4).tolist() == ["*"]
    assert [h.n_nodes(j) for j in range(5)] == [74, 16, 9, 5, 1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-50, 200), min_size=1, max_size=30),
    st.sampled_from([[1], [2, 4], [5, 10, 20], [3, 9, 27, 81]]),
)
def test_from_intervals_nest_and_contain(values, widths):
    h = Hierarchy.from_intervals(values, widths)
    assert sorted(set(values)) == h.leaves.tolist()
    pattern = re.compile(r"^\[(-?\d+), (-?\d+)\[$")
    for v in set(values):
        previous = (v, v + 1e-9)
        for level, width in enumerate(widths, start=1):
            a, b = map(int, pattern.match(h.generalize([v], level)[0]).groups())
            assert b - a == width and a <= v < b
            assert a <= previous[0] and previous[1] <= b  # nested in the level above
            previous = (a, b)
        assert h.generalize([v], len(widths) + 1).tolist() == ["*"]


def test_from_intervals_options_and_errors():
    h = Hierarchy.from_intervals([1.5, 2.5, 4.0], [0.5, 1], start=1)
    assert h.generalize([1.5, 4.0], 1).tolist() == ["[1.5, 2[", "[4, 4.5["]
    with pytest.raises(InputError, match="do not nest"):
        Hierarchy.from_intervals([1, 2], [5, 12])
    with pytest.raises(InputError, match="do not nest"):
        Hierarchy.from_intervals([1, 2], [10, 5])
    with pytest.raises(InputError, match="positive"):
        Hierarchy.from_intervals([1, 2], [0])
    with pytest.raises(InputError, match="non-empty list"):
        Hierarchy.from_intervals([1, 2], [])
    with pytest.raises(InputError, match="needs numbers"):
        Hierarchy.from_intervals(["a", 1], [5])
    with pytest.raises(InputError, match="above the smallest value"):
        Hierarchy.from_intervals([1, 2], [5], start=2)


def test_from_ordering():
    h = Hierarchy.from_ordering(["a", "b", "c", "d", "e"], [2, 2], name="o")
    assert h.height == 3
    assert h.to_frame().values.tolist() == [
        ["a", "a..b", "a..d", "*"],
        ["b", "a..b", "a..d", "*"],
        ["c", "c..d", "a..d", "*"],
        ["d", "c..d", "a..d", "*"],
        ["e", "e", "e", "*"],
    ]
    n = Hierarchy.from_ordering(range(1, 17), [4, 2])
    assert n.leaves.dtype == np.int64 and n.generalize([5, 16], 2).tolist() == ["1..8", "9..16"]
    with pytest.raises(InputError, match="more than once"):
        Hierarchy.from_ordering(["a", "b", "a"], [2])
    with pytest.raises(InputError, match=">= 2"):
        Hierarchy.from_ordering(["a", "b"], [1])
    with pytest.raises(InputError, match="fanouts is empty"):
        Hierarchy.from_ordering(["a", "b"], [])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.lists(st.integers(2, 4), min_size=1, max_size=3))
def test_from_ordering_groups_consecutive_values(n, fanouts):
    h = Hierarchy.from_ordering([f"x{i:02d}" for i in range(n)], fanouts)
    assert h.leaves.tolist() == [f"x{i:02d}" for i in range(n)]
    block = 1
    for level, f in enumerate(fanouts, start=1):
        block *= f
        assert h.node_ids[:, level].tolist() == [i // block for i in range(n)]


# -- shipped Adult hierarchies ---------------------------------------------------------------
def test_adult_hierarchies_cover_train_and_test():
    hs = load_adult_hierarchies()
    adult = load_adult()
    raw = _load("adult.csv.gz")
    assert set(adult.X.columns) - set(hs) == {"capital-gain", "capital-loss"}
    for col, h in hs.items():
        frame = adult.frame if col in adult.frame.columns else raw
        for part in ("train", "test"):
            values = frame.loc[(adult.split == part).to_numpy(), col]
            codes = h.leaf_codes(values)  # raises on any value without a leaf
            assert codes.shape == (len(values),)
        assert h.name == col


def test_adult_hierarchies_shapes_and_examples():
    hs = load_adult_hierarchies()
    assert {c: h.height for c, h in hs.items()} == {
        "age": 4, "workclass": 2, "education": 3, "education-num": 3, "marital-status": 3,
        "occupation": 3, "relationship": 2, "race": 1, "sex": 1, "native-country": 3,
        "hours-per-week": 4,
    }  # fmt: skip
    assert hs["age"].leaves.tolist() == list(range(17, 91))
    assert hs["age"].generalize([37], 1).tolist() == ["[35, 40["]
    assert hs["education-num"].leaves.tolist() == list(range(1, 17))
    edu, num = hs["education"], hs["education-num"]
    for level in (1, 2, 3):  # education and education-num share one tree
        assert edu.labels(level).tolist() == num.labels(level).tolist()
    assert edu.generalize(["Bachelors", "Preschool"], 2).tolist() == [
        "Higher education", "Primary education"
    ]  # fmt: skip
    country = hs["native-country"]
    assert country.generalize(["Germany", "Peru", "?"], 2).tolist() == [
        "Europe",
        "South America",
        "Unknown",
    ]
    assert hs["workclass"].generalize(["?"], 1).tolist() == ["Unknown"]


def test_shipped_files_are_canonical(tmp_path):
    from importlib import resources

    folder = resources.files("anonml.datasets") / "data" / "hierarchies"
    for col, h in load_adult_hierarchies().items():
        shipped = (folder / f"adult_{col}.csv").read_text(encoding="utf-8")
        buf = io.StringIO()
        h.to_arx(buf)
        assert buf.getvalue() == shipped, col


def test_load_adult_hierarchies_subset_and_errors():
    assert list(load_adult_hierarchies(["sex", "age"])) == ["sex", "age"]
    assert list(load_adult_hierarchies("race")) == ["race"]
    with pytest.raises(InputError, match="no Adult hierarchy for column 'fnlwgt'"):
        load_adult_hierarchies(["fnlwgt"])
    a, b = load_adult_hierarchies(["sex"]), load_adult_hierarchies(["sex"])
    assert a["sex"] is not b["sex"] and a["sex"] == b["sex"]
