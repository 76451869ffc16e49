"""Tests of AccuracyGuidedAnonymizer and anonymize_model.

Property-based invariants on random mixed-type tables, hand-checked representatives, input
errors, and the scikit-learn estimator contract.

scikit-learn's ``check_estimator`` checks marked as expected failures
--------------------------------------------------------------------------
Each one tests scikit-learn's own wording of an error message, or a fit that k-anonymity rules
out; the behaviour behind each is asserted by a test of its own in this module
(``test_sklearn_check_behaviour_*``):

* ``check_fit2d_1sample``: fitting one row with k=2 is impossible (k > number of rows); anonml
  raises an InputError that says so, not scikit-learn's "1 sample" wording.
* ``check_requires_y_none``: the anonymizer needs y (the model's predictions) to fit; anonml
  raises an InputError saying y is missing, not scikit-learn's wording.
* ``check_fit2d_predict1d``: a 1-D X is rejected with an InputError ("must be 2-D ... reshape
  it"), not with scikit-learn's "Reshape your data".
* ``check_estimators_empty_data_messages``: a table without columns is rejected with an
  InputError ("X has no columns"), not with scikit-learn's "0 feature(s) (shape=...)".
* ``check_n_features_in_after_fitting``: transform does reject a different number of columns
  (InputError naming the first missing column), not with scikit-learn's "X has 1 features, but
  ... is expecting 4 features" wording.

The expected failures are strict: a check that starts to pass fails the run, so that its entry
here is removed.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from anonml import AccuracyGuidedAnonymizer, AnonymizationResult, anonymize_model
from anonml._errors import InputError, NotFittedError
from anonml.anonymize._hist_tree import HistTree
from anonml.datasets import load_adult
from anonml.privacy import k_anonymity

AG = AccuracyGuidedAnonymizer


# ================================================================================================
# helpers
# ================================================================================================
class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def _cell(v):
    return MISSING if pd.isna(v) else v


def _keys(frame: pd.DataFrame, qi) -> list[tuple]:
    """QI tuple of every row, every kind of missing value as one sentinel."""
    cols = [frame[c].astype(object).tolist() for c in qi]
    return [tuple(_cell(v) for v in row) for row in zip(*cols)]


def _is_categorical(s: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)


def _distance_to_median(X: pd.DataFrame, qi, groups: np.ndarray) -> np.ndarray:
    """Reference: squared distance of each row to its group's median, on z-scored numeric QIs
    (population std over the training rows) and one-hot categorical QIs (a category's median is
    1 if more than half the group has it, 0.5 if exactly half, else 0)."""
    n = len(X)
    dist = np.zeros(n)
    for c in qi:
        if _is_categorical(X[c]):
            key = [_cell(v) for v in X[c].astype(object)]
            for g in np.unique(groups):
                rows = np.flatnonzero(groups == g)
                values = [key[i] for i in rows]
                size = len(rows)
                med = {}
                for v in set(values):
                    cnt = values.count(v)
                    med[v] = 1.0 if 2 * cnt > size else (0.5 if 2 * cnt == size else 0.0)
                norm = sum(m * m for m in med.values())
                for i, v in zip(rows, values):
                    dist[i] += norm - 2 * med[v] + 1
        else:
            x = X[c].to_numpy(dtype=float)
            sd = x.std()
            z = (x - x.mean()) / (sd if sd > 0 else 1.0)
            for g in np.unique(groups):
                rows = groups == g
                dist[rows] += (z[rows] - np.median(z[rows])) ** 2
    return dist


def _one_line_error(exc_type, fn, *words) -> str:
    with pytest.raises(exc_type) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    return msg


# ================================================================================================
# property-based invariants
# ================================================================================================
KINDS = ["int", "float", "object", "str", "category", "bool", "boolean", "Int64", "string", "datetime"]


def _column(draw, kind: str, n: int, missing: bool) -> pd.Series:
    """A column of n values from a small pool (ties, and constant columns when the pool is one)."""

    def pick(pool):
        pool = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
        return draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))

    if kind == "int":
        return pd.Series(pick([-3, 0, 1, 2, 7, 100]), dtype=draw(st.sampled_from(["int64", "int32"])))
    if kind == "float":
        pool = [-1.5, 0.0, 0.25, 2.0, 3.75, 1e3] + ([np.nan] if missing else [])
        return pd.Series(pick(pool), dtype="float64")
    if kind == "Int64":
        return pd.Series(pick([-3, 0, 5, 40] + ([None] if missing else [])), dtype="Int64")
    if kind == "datetime":
        pool = [pd.Timestamp("2020-01-01"), pd.Timestamp("1999-12-31 23:59")]
        return pd.Series(pick(pool + ([pd.NaT] if missing else [])), dtype="datetime64[ns]")
    if kind == "bool":
        return pd.Series(pick([True, False]), dtype=bool)
    if kind == "boolean":
        return pd.Series(pick([True, False] + ([None] if missing else [])), dtype="boolean")
    values = pick(["a", "b", "c"] + ([None] if missing else []))
    if kind == "object":
        return pd.Series(values, dtype=object)
    if kind == "str":
        return pd.Series(values, dtype="str")
    if kind == "string":
        return pd.Series(values, dtype="string")  # missing is pd.NA
    return pd.Series(pd.Categorical(values, categories=["c", "a", "b", "unused"]))


@st.composite
def problems(draw):
    k = draw(st.integers(2, 5))
    n = draw(st.integers(k, 3 * k))
    features = draw(st.sampled_from(["qi", "all"]))
    n_qi = draw(st.integers(1, 3))
    n_other = draw(st.integers(0, 2))
    data = {}
    for j in range(n_qi):
        kind = draw(st.sampled_from(KINDS))
        # missing values only in categorical QIs (a NaN in a numeric QI is an error)
        data[f"q{j}"] = _column(draw, kind, n, missing=kind not in ("int", "float", "Int64"))
    for j in range(n_other):
        kind = draw(st.sampled_from(KINDS))
        # a NaN in a numeric column is fine when the tree does not read it
        data[f"o{j}"] = _column(draw, kind, n, missing=features == "qi" or kind not in ("float", "Int64"))
    names = list(data)
    order = draw(st.permutations(names))  # QIs need not come first
    X = pd.DataFrame({c: data[c] for c in order})
    index_kind = draw(st.sampled_from(["range", "shuffled", "str", "duplicated"]))
    if index_kind == "shuffled":
        X.index = pd.Index(np.asarray(draw(st.permutations(range(n)))) * 3 + 7)
    elif index_kind == "str":
        X.index = [f"id{i}" for i in range(n)]
    elif index_kind == "duplicated":
        X.index = np.arange(n) // 2
    qi = [c for c in order if c.startswith("q")]

    y_kind = draw(st.sampled_from(["int", "str", "float"]))
    if y_kind == "int":
        pool = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=1, max_size=3, unique=True))
        y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    elif y_kind == "str":
        pool = draw(st.lists(st.sampled_from(["no", "yes", "maybe"]), min_size=1, max_size=3, unique=True))
        y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), dtype=object)
    else:
        y = np.array(draw(st.lists(st.sampled_from([0.5, 1.25, -2.75, 3.1]), min_size=n, max_size=n)))
    if draw(st.booleans()):
        y = pd.Series(y, index=np.arange(n)[::-1])  # y's index is ignored

    params = dict(
        k=k,
        quasi_identifiers=qi,
        tree=draw(st.sampled_from(["exact", "hist"])),
        representative=draw(st.sampled_from(["majority_medoid", "medoid"])),
        features=features,
        max_depth=draw(st.sampled_from([None, None, 1, 3])),
        criterion=None if y_kind == "float" else draw(st.sampled_from([None, "entropy"])),
    )
    if "refine" in AG().get_params():  # optional refinement of the tree's leaves
        params["refine"] = draw(st.sampled_from(["none", "mondrian"]))
    return X, np.asarray(y), y, params


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_invariants(problem) -> None:
    X, y_arr, y, params = problem
    X_orig = X.copy(deep=True)
    qi, k = params["quasi_identifiers"], params["k"]
    ag = AG(**params)
    out = ag.fit_transform(X, y)

    # the input is not modified
    pd.testing.assert_frame_equal(X, X_orig)

    # k-anonymous, checked independently of the anonymizer
    assert k_anonymity(out, qi) >= k
    assert ag.min_class_size_ >= k
    assert ag.min_class_size_ == k_anonymity(out, qi)

    # same container, columns, dtypes and index; non-QI columns unchanged
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(X.columns)
    pd.testing.assert_series_equal(out.dtypes, X.dtypes)
    pd.testing.assert_index_equal(out.index, X.index)
    for c in X.columns:
        if c not in qi:
            pd.testing.assert_series_equal(out[c], X[c])

    # groups cover every row exactly once, each with at least k rows
    groups = ag.groups_
    assert groups.shape == (len(X),)
    sizes = np.bincount(groups)
    assert sizes.size == ag.n_groups_ and sizes.min() >= k
    assert len(ag.representatives_) == ag.n_groups_ == len(ag.representative_rows_)

    # every group's representative is a real record of the group, copied into every row of it
    keys_in, keys_out = _keys(X, qi), _keys(out, qi)
    rep_keys = _keys(ag.representatives_, qi)
    for g in range(ag.n_groups_):
        r = int(ag.representative_rows_[g])
        assert groups[r] == g
        assert rep_keys[g] == keys_in[r]
        assert {keys_out[i] for i in np.flatnonzero(groups == g)} == {keys_in[r]}

    # representatives: closest to the group median (among the majority label's records)
    dist = _distance_to_median(X, qi, groups)
    for g in range(ag.n_groups_):
        rows = np.flatnonzero(groups == g)
        r = int(ag.representative_rows_[g])
        if ag.task_ == "classification" and params["representative"] == "majority_medoid":
            labels, counts = np.unique(y_arr[rows], return_counts=True)  # sorted labels
            majority = labels[np.argmax(counts)]  # the smallest of the most frequent
            assert y_arr[r] == majority
            rows = rows[y_arr[rows] == majority]
        assert dist[r] <= dist[rows].min() + 1e-9 * max(1.0, abs(dist[rows].min()))

    # the tree type follows the target
    expected_task = "regression" if y_arr.dtype.kind == "f" else "classification"
    assert ag.task_ == expected_task
    assert ag.tree_method_ == params["tree"]

    # transform of the training data equals fit_transform, whatever the row order
    pd.testing.assert_frame_equal(ag.transform(X), out)
    perm = np.random.default_rng(len(X)).permutation(len(X))
    pd.testing.assert_frame_equal(ag.transform(X.iloc[perm]), out.iloc[perm])


# ================================================================================================
# containers, targets, hand-checked cases
# ================================================================================================
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
@pytest.mark.parametrize("tree", ["exact", "hist"])
def test_numpy_in_numpy_out(dtype, tree: str) -> None:
    rng = np.random.default_rng()
    X = rng.integers(0, 6, size=(60, 4)).astype(dtype)
    y = (X[:, 0] + rng.integers(0, 2, 60) > 3).astype(int)
    ag = AG(k=5, quasi_identifiers=[0, 2], tree=tree)
    out = ag.fit_transform(X, y)
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == X.shape
    np.testing.assert_array_equal(out[:, [1, 3]], X[:, [1, 3]])
    assert k_anonymity(out, [0, 2]) >= 5
    np.testing.assert_array_equal(ag.transform(X), out)
    assert ag.n_features_in_ == 4 and not hasattr(ag, "feature_names_in_")


def test_numpy_object_array() -> None:
    X = np.array([["a", 1, 0.5], ["b", 2, 0.5], ["a", 3, 1.5], ["b", 4, 1.5]] * 3, dtype=object)
    out = AG(k=3, quasi_identifiers=[0, 1]).fit_transform(X, np.arange(12) % 2)
    assert isinstance(out, np.ndarray) and out.dtype == object
    np.testing.assert_array_equal(out[:, 2], X[:, 2])
    assert k_anonymity(out, [0, 1]) >= 3


def test_dataframe_feature_names() -> None:
    X = pd.DataFrame({"a": range(10), "b": range(10)})
    ag = AG(k=2).fit(X, np.arange(10) % 2)
    np.testing.assert_array_equal(ag.feature_names_in_, ["a", "b"])
    assert ag.n_features_in_ == 2


@pytest.mark.parametrize("tree", ["exact", "hist"])
def test_regression_target_uses_a_regression_tree(tree: str) -> None:
    rng = np.random.default_rng()
    X = pd.DataFrame({"x": rng.integers(0, 20, 50), "c": rng.choice(["u", "v"], 50)})
    y = X["x"] * 0.5 + rng.normal(size=50)
    ag = AG(k=5, tree=tree).fit(X, y)
    assert ag.task_ == "regression" and ag.classes_ is None
    if tree == "exact":
        assert isinstance(ag.tree_, DecisionTreeRegressor)
        assert ag.tree_.criterion == "squared_error"
    else:
        assert isinstance(ag.tree_, HistTree) and ag.tree_.criterion == "squared_error"
    # whole-number floats are class labels; task= overrides the detection
    assert AG(k=5).fit(X, np.round(y.to_numpy())).task_ == "classification"
    ag = AG(k=5, task="regression").fit(X, np.round(y.to_numpy()))
    assert ag.task_ == "regression" and isinstance(ag.tree_, DecisionTreeRegressor)
    assert isinstance(AG(k=5).fit(X, X["x"] > 10).tree_, DecisionTreeClassifier)


@pytest.mark.parametrize("tree", ["exact", "hist"])
def test_hand_checked_two_groups(tree: str) -> None:
    # 6 rows, k=3: the only split leaves the 3 youngest and the 3 oldest together.
    # young: ages 20, 22, 25 with labels 0, 1, 0 -> median 22; majority label 0 -> of rows
    #   {20, 25} the closest to 22 is 20 (distance 2 vs 3); the plain medoid is 22.
    # old: ages 50, 52, 54 all label 1 -> 52 for both rules.
    X = pd.DataFrame({"age": [25, 52, 20, 50, 22, 54], "id": list("abcdef")}, index=list("uvwxyz"))
    y = np.array([0, 1, 0, 1, 1, 1])
    for rule, young in (("majority_medoid", 20), ("medoid", 22)):
        ag = AG(k=3, quasi_identifiers=["age"], representative=rule, tree=tree)
        out = ag.fit_transform(X, y)
        assert out["age"].tolist() == [young, 52, young, 52, young, 52]
        assert out["id"].tolist() == list("abcdef")
        assert list(out.index) == list("uvwxyz")
        assert ag.n_groups_ == 2 and ag.min_class_size_ == 3
        assert sorted(X["age"].iloc[ag.representative_rows_]) == [young, 52]
        # new rows follow the same split
        new = pd.DataFrame({"age": [0, 30, 100], "id": ["p", "q", "r"]})
        assert ag.transform(new)["age"].tolist() == [young, young, 52]


def test_hand_checked_medoid_with_a_categorical_qi() -> None:
    # k = n = 5: one group. Median age 35 (row 2), colour 'r' held by 3 of 5 -> one-hot median
    # (r=1, b=0, g=0). Distance = ((age-35)/sd)^2 + (0 if colour == 'r' else 2):
    #   row 0 (30, r): 25/sd^2   row 1 (34, r): 1/sd^2   row 2 (35, b): 2
    #   row 3 (37, r): 4/sd^2    row 4 (45, g): 100/sd^2 + 2,   sd = std(ages) = 4.98
    # medoid: row 1 (34, r). Labels 0, 1, 1, 0, 0 -> majority 0 among rows {0, 3, 4}: row 3.
    X = pd.DataFrame({"age": [30, 34, 35, 37, 45], "colour": ["r", "r", "b", "r", "g"]})
    y = [0, 1, 1, 0, 0]
    sd = np.std([30, 34, 35, 37, 45])
    assert 1 / sd**2 < 4 / sd**2 < 2  # the hand calculation above
    ag = AG(k=5, representative="medoid").fit(X, y)
    assert ag.representative_rows_.tolist() == [1]
    assert ag.representatives_.iloc[0].tolist() == [34, "r"]
    ag = AG(k=5, representative="majority_medoid").fit(X, y)
    assert ag.representative_rows_.tolist() == [3]
    assert ag.transform(X)["age"].tolist() == [37] * 5


def test_distance_ties_go_to_the_first_row() -> None:
    # group {10, 20}: median 15, both rows at the same distance -> the first row (20)
    X = pd.DataFrame({"x": [20, 10]})
    ag = AG(k=2, representative="medoid").fit(X, [0, 1])
    assert ag.representative_rows_.tolist() == [0]


def test_majority_ties_go_to_the_smallest_label() -> None:
    X = pd.DataFrame({"x": [1, 2, 3, 4]})
    ag = AG(k=4).fit(X, ["b", "a", "b", "a"])
    assert list(ag.classes_) == ["a", "b"]
    assert ag.representative_rows_[0] in (1, 3)


def test_features_all_reads_non_qi_columns() -> None:
    # the label follows 'z' (not a QI): only features="all" can split the QI rows by it
    n = 40
    X = pd.DataFrame({"q": np.zeros(n, dtype=int), "z": np.arange(n)})
    X.loc[:, "q"] = np.arange(n) % 7
    y = (np.arange(n) >= 20).astype(int)
    qi_only = AG(k=5, quasi_identifiers=["q"], features="qi").fit(X, y)
    all_cols = AG(k=5, quasi_identifiers=["q"], features="all").fit(X, y)
    assert all_cols.n_groups_ >= 2
    for g in range(all_cols.n_groups_):  # groups are pure in the label
        assert len(set(y[all_cols.groups_ == g])) == 1
    out = all_cols.transform(X)
    pd.testing.assert_series_equal(out["z"], X["z"])
    assert k_anonymity(out, ["q"]) >= 5
    assert qi_only.encoder_.columns == ["q"] and all_cols.encoder_.columns == ["q", "z"]


def _tree_depth(ag) -> int:
    if ag.tree_method_ == "exact":
        return ag.tree_.get_depth()
    t, depth, stack = ag.tree_, {0: 0}, [0]
    while stack:
        node = stack.pop()
        if t.feature_[node] >= 0:
            for child in (int(t.children_left_[node]), int(t.children_right_[node])):
                depth[child] = depth[node] + 1
                stack.append(child)
    return max(depth.values())


@pytest.mark.parametrize("tree", ["exact", "hist"])
def test_max_depth_limits_the_tree(tree: str) -> None:
    rng = np.random.default_rng()
    X = pd.DataFrame({"a": rng.integers(0, 50, 200), "b": rng.integers(0, 50, 200)})
    y = rng.integers(0, 2, 200)
    for depth in (1, 2):
        # the groups are the leaves: at most 2**depth of them
        ag = AG(k=2, max_depth=depth, tree=tree, refine="none").fit(X, y)
        assert _tree_depth(ag) <= depth and ag.n_groups_ <= 2**depth
        # the Mondrian refinement cuts the leaves further, the tree keeps its depth
        ag = AG(k=2, max_depth=depth, tree=tree, refine="mondrian").fit(X, y)
        assert _tree_depth(ag) <= depth and ag.min_class_size_ >= 2


def test_max_bins_limits_hist_bins() -> None:
    X = pd.DataFrame({"a": np.arange(100)})
    ag = AG(k=2, tree="hist", max_bins=4).fit(X, np.arange(100) % 3)
    assert len(ag.encoder_.thresholds_["a"]) + 1 <= 4


def test_handle_unknown_ignore_routes_new_categories() -> None:
    X = pd.DataFrame({"c": ["a", "a", "b", "b", "c", "c"] * 2, "x": range(12)})
    y = np.array([0, 0, 1, 1, 0, 0] * 2)
    for tree in ("exact", "hist"):
        ag = AG(k=2, quasi_identifiers=["c"], tree=tree, handle_unknown="ignore").fit(X, y)
        new = pd.DataFrame({"c": ["zzz", None, "a"], "x": [0, 1, 2]})
        out = ag.transform(new)
        reps = set(ag.representatives_["c"])
        assert set(out["c"]) <= reps  # routed to a group, given its representative
        assert out["x"].tolist() == [0, 1, 2]


def test_category_dtype_gains_representative_categories_in_transform() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["a", "a", "b", "b"])})
    ag = AG(k=2).fit(X, [0, 0, 1, 1])
    new = pd.DataFrame({"c": pd.Categorical(["a", "b"], categories=["b", "a"])})
    out = ag.transform(new)
    assert out["c"].tolist() == ["a", "b"]
    assert isinstance(out["c"].dtype, pd.CategoricalDtype)


def test_fit_returns_self_and_does_not_modify_input() -> None:
    X = pd.DataFrame({"a": [3, 1, 2, 5], "b": ["x", None, "y", "x"]})
    before = X.copy()
    ag = AG(k=2)
    assert ag.fit(X, [0, 1, 0, 1]) is ag
    pd.testing.assert_frame_equal(X, before)


# ================================================================================================
# bad input: one-line InputErrors that name what was wrong
# ================================================================================================
@pytest.fixture
def small() -> tuple[pd.DataFrame, np.ndarray]:
    X = pd.DataFrame(
        {
            "age": [20, 25, 30, 35, 40, 45, 50, 55, 60, 65],
            "sex": ["F", "M"] * 5,
            "zip": ["1", "2", "3", "4", "5"] * 2,
        }
    )
    return X, np.array([0, 0, 1, 1, 0, 0, 1, 1, 0, 1])


def test_error_qi_not_a_column(small) -> None:
    X, y = small
    _one_line_error(
        InputError, lambda: AG(k=2, quasi_identifiers=["age", "zipcode"]).fit(X, y),
        "'zipcode'", "not a column", "age, sex, zip",
    )


@pytest.mark.parametrize("k", [1, 0, -3])
def test_error_k_too_small(small, k) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=k).fit(X, y), f"k={k}", ">= 2")


@pytest.mark.parametrize("k", [2.5, "3", True, None, 3.0])
def test_error_k_not_an_integer(small, k) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=k).fit(X, y), f"k={k!r}", "integer")


def test_numpy_integer_k_is_accepted(small) -> None:
    X, y = small
    assert AG(k=np.int64(3)).fit(X, y).min_class_size_ >= 3


def test_error_k_larger_than_rows(small) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=11).fit(X, y), "k=11", "(10)")
    assert AG(k=10).fit(X, y).n_groups_ == 1  # k == n is fine: one group


def test_error_empty_table(small) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=2).fit(X.iloc[:0], y[:0]), "no rows")


def test_error_y_wrong_length(small) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=2).fit(X, y[:9]), "y has 9 values", "10 rows")


@pytest.mark.parametrize(
    "y_bad", [[0, 1, np.nan, 1, 0, 1, 0, 1, 0, 1], [0, 1, None, 1, 0, 1, 0, 1, 0, 1]]
)
def test_error_y_missing_values(small, y_bad) -> None:
    X, _ = small
    _one_line_error(InputError, lambda: AG(k=2).fit(X, np.array(y_bad, dtype=object)), "y has 1 missing")
    _one_line_error(InputError, lambda: AG(k=2).fit(X, pd.Series(y_bad)), "y has 1 missing")


def test_error_y_missing_or_2d(small) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=2).fit(X, None), "y is missing")
    _one_line_error(InputError, lambda: AG(k=2).fit(X, np.c_[y, y]), "1-D", "(10, 2)")
    assert AG(k=2).fit(X, y[:, None]).task_ == "classification"  # a column vector is fine


def test_error_y_infinite_regression(small) -> None:
    X, _ = small
    y = np.linspace(0.5, 9.5, 10)
    y[3] = np.inf
    _one_line_error(InputError, lambda: AG(k=2).fit(X, y), "infinite")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_error_nan_inf_in_numeric_qi(small, bad) -> None:
    X, y = small
    X = X.astype({"age": float})
    X.loc[4, "age"] = bad
    _one_line_error(InputError, lambda: AG(k=2).fit(X, y), "'age'")
    # a NaN outside the QIs is fine with features="qi", an error with features="all"
    X2 = small[0].assign(other=[1.0] * 9 + [bad])
    out = AG(k=2, quasi_identifiers=["age", "sex"]).fit_transform(X2, y)
    pd.testing.assert_series_equal(out["other"], X2["other"])
    _one_line_error(
        InputError, lambda: AG(k=2, quasi_identifiers=["age"], features="all").fit(X2, y), "'other'"
    )


def test_error_nan_in_numeric_qi_at_transform(small) -> None:
    X, y = small
    X = X.astype({"age": float})
    ag = AG(k=2).fit(X, y)
    X.loc[0, "age"] = np.nan
    _one_line_error(InputError, lambda: ag.transform(X), "'age'", "1 missing")


@pytest.mark.parametrize("tree", ["exact", "hist"])
def test_error_unseen_category_at_transform(small, tree) -> None:
    X, y = small
    ag = AG(k=2, tree=tree).fit(X, y)
    new = X.copy()
    new.loc[3, "zip"] = "99999"
    _one_line_error(InputError, lambda: ag.transform(new), "'zip'", "'99999'", "handle_unknown='ignore'")
    out = ag.set_params(handle_unknown="ignore").transform(new)
    expected = ag.transform(X)
    pd.testing.assert_frame_equal(out.drop(index=3), expected.drop(index=3))
    # the new row gets the QIs of one of the representatives
    assert tuple(out.loc[3, ag.qi_]) in set(ag.representatives_.itertuples(index=False, name=None))


def test_error_mixed_types_in_a_column(small) -> None:
    X, y = small
    X = X.astype({"zip": object})
    X.loc[2, "zip"] = 3
    _one_line_error(InputError, lambda: AG(k=2).fit(X, y), "'zip'", "mixes value types", "int", "str")


def test_error_complex_numbers(small) -> None:
    X, y = small
    X = X.assign(age=X["age"] + 1j)
    _one_line_error(InputError, lambda: AG(k=2).fit(X, y), "'age'", "omplex")


def test_error_sparse_input() -> None:
    from scipy import sparse

    X = sparse.csr_matrix(np.eye(6))
    _one_line_error(InputError, lambda: AG(k=2).fit(X, np.arange(6) % 2), "sparse", "(6, 6)")


def test_error_transform_columns(small) -> None:
    X, y = small
    ag = AG(k=2).fit(X, y)
    _one_line_error(InputError, lambda: ag.transform(X.drop(columns="zip")), "lacks column 'zip'")
    _one_line_error(InputError, lambda: ag.transform(X.assign(extra=1)), "column 'extra' not seen")
    _one_line_error(InputError, lambda: ag.transform(X[["zip", "age", "sex"]]), "another order")
    _one_line_error(
        InputError, lambda: ag.transform(X.rename(columns={"sex": "gender"})), "lacks column 'sex'"
    )


def test_error_transform_before_fit(small) -> None:
    X, _ = small
    with pytest.raises(NotFittedError) as info:
        AG(k=2).transform(X)
    assert "\n" not in str(info.value) and "fit(X, y)" in str(info.value)
    with pytest.raises(SklearnNotFittedError):  # scikit-learn's class too
        AG(k=2).transform(X)


@pytest.mark.parametrize(
    "params, words",
    [
        ({"tree": "forest"}, ["tree='forest'", "exact"]),
        ({"criterion": "mse"}, ["criterion='mse'", "gini"]),
        ({"criterion": "squared_error"}, ["criterion='squared_error'", "classification"]),
        ({"representative": "centroid"}, ["representative='centroid'", "majority_medoid"]),
        ({"features": "some"}, ["features='some'", "'qi'"]),
        ({"max_depth": 0}, ["max_depth=0", "positive integer", "None"]),
        ({"max_depth": 2.5}, ["max_depth=2.5"]),
        ({"max_depth": True}, ["max_depth=True"]),
        ({"max_bins": 1}, ["max_bins=1", "65535"]),
        ({"max_bins": 70000}, ["max_bins=70000"]),
        ({"max_bins": 16.0}, ["max_bins=16.0"]),
        ({"handle_unknown": "skip"}, ["handle_unknown='skip'"]),
        ({"task": "ranking"}, ["task='ranking'"]),
        ({"refine": "kd"}, ["refine='kd'", "mondrian"]),
        ({"quasi_identifiers": []}, ["empty"]),
        ({"quasi_identifiers": ["age", "age"]}, ["'age'", "twice"]),
        ({"categorical_features": ["nope"]}, ["'nope'", "not a column"]),
        ({"categorical_features": ["age"]}, ["'sex'", "categorical_features"]),
    ],
)
def test_error_bad_parameters(small, params, words) -> None:
    X, y = small
    _one_line_error(InputError, lambda: AG(k=2, **params).fit(X, y), *words)


def test_error_bad_criterion_for_regression(small) -> None:
    X, _ = small
    y = np.linspace(0.5, 9.5, 10)
    _one_line_error(InputError, lambda: AG(k=2, criterion="gini").fit(X, y), "criterion='gini'", "regression")
    _one_line_error(
        InputError, lambda: AG(k=2, tree="hist", criterion="absolute_error").fit(X, y),
        "criterion='absolute_error'", "hist",
    )
    assert AG(k=2, tree="exact", criterion="absolute_error").fit(X, y).tree_.criterion == "absolute_error"


# the scikit-learn checks of this estimator run in tests/test_estimator_contract.py


def test_sklearn_check_behaviour_one_row() -> None:
    _one_line_error(InputError, lambda: AG(k=2).fit(np.ones((1, 3)), [0]), "k=2", "(1)")


def test_sklearn_check_behaviour_y_none() -> None:
    _one_line_error(InputError, lambda: AG(k=2).fit(np.ones((4, 3)), None), "y is missing")
    _one_line_error(InputError, lambda: AG(k=2).fit_transform(np.ones((4, 3))), "y is missing")


def test_sklearn_check_behaviour_1d() -> None:
    X = np.arange(12.0).reshape(6, 2)
    _one_line_error(InputError, lambda: AG(k=2).fit(X[:, 0], np.arange(6) % 2), "2-D", "(6,)")
    ag = AG(k=2).fit(X, np.arange(6) % 2)
    _one_line_error(InputError, lambda: ag.transform(X[:, 0]), "2-D", "reshape")


def test_sklearn_check_behaviour_no_columns() -> None:
    _one_line_error(InputError, lambda: AG(k=2).fit(np.empty((4, 0)), [0, 1, 0, 1]), "no columns")


def test_sklearn_check_behaviour_n_features() -> None:
    X = np.arange(40.0).reshape(10, 4)
    ag = AG(k=2).fit(X, np.arange(10) % 2)
    _one_line_error(InputError, lambda: ag.transform(X[:, [1]]), "lacks column")
    with pytest.raises(ValueError):
        ag.transform(np.c_[X, X])


def test_init_stores_parameters_unchanged() -> None:
    qi = ["a", "b"]
    cats = ("b",)
    rng = np.random.default_rng(0)
    ag = AG(
        k="not validated yet", quasi_identifiers=qi, categorical_features=cats,
        representative="medoid", tree="hist", criterion="entropy", max_depth=3,
        features="all", task="classification", handle_unknown="ignore", max_bins=16,
        random_state=rng,
    )
    assert ag.k == "not validated yet"
    assert ag.quasi_identifiers is qi and ag.categorical_features is cats
    assert ag.random_state is rng
    params = ag.get_params()
    assert params["representative"] == "medoid" and params["max_bins"] == 16
    assert set(params) == set(inspect.signature(AG.__init__).parameters) - {"self"}
    assert {"k", "quasi_identifiers", "tree", "criterion", "max_depth", "max_bins"} <= set(params)
    for name, value in params.items():
        assert getattr(ag, name) is value
    assert not any(name.endswith("_") for name in vars(ag))


def test_get_set_params_round_trip() -> None:
    ag = AG(k=7, quasi_identifiers=["x"], tree="exact", max_depth=4, random_state=3)
    params = ag.get_params()
    other = AG().set_params(**params)
    assert other.get_params() == params
    assert other.set_params(k=9) is other and other.k == 9 and ag.k == 7


def test_clone(small) -> None:
    X, y = small
    ag = AG(k=3, quasi_identifiers=["age", "sex"], random_state=0).fit(X, y)
    twin = clone(ag)
    assert twin is not ag and twin.get_params() == ag.get_params()
    assert not hasattr(twin, "groups_")
    out = twin.fit_transform(X, y)
    pd.testing.assert_frame_equal(out, ag.transform(X))


def test_inside_a_pipeline() -> None:
    rng = np.random.default_rng()
    n = 300
    X = pd.DataFrame(
        {"age": rng.integers(18, 90, n), "hours": rng.integers(1, 80, n), "score": rng.normal(size=n)}
    )
    y = (X["age"] + rng.normal(0, 10, n) > 50).astype(int).to_numpy()
    qi = ["age", "hours"]
    pipe = Pipeline(
        [
            ("anon", AG(k=10, quasi_identifiers=qi, random_state=0)),
            ("clf", DecisionTreeClassifier(random_state=0)),
        ]
    )
    assert pipe.fit(X, y) is pipe  # Pipeline.fit passes y to the anonymizer
    anon = pipe.named_steps["anon"]
    assert anon.min_class_size_ >= 10
    X_anon = pipe[:-1].transform(X)
    assert k_anonymity(X_anon, qi) >= 10
    # the classifier was trained on the anonymized table
    ref = DecisionTreeClassifier(random_state=0).fit(anon.transform(X), y)
    np.testing.assert_array_equal(pipe.predict(X), ref.predict(X_anon))
    X_new = X.iloc[:20] + 1
    np.testing.assert_array_equal(pipe.predict(X_new), ref.predict(anon.transform(X_new)))
    # and the pipeline clones
    assert clone(pipe).get_params()["anon__k"] == 10


# ================================================================================================
# anonymize_model
# ================================================================================================
@pytest.fixture(scope="module")
def adult_slice():
    data = load_adult()
    X, y = data.X, data.y
    qi = list(data.qi_sets["8"])
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    return X.iloc[:3000], y.iloc[:3000], X.iloc[3000:4000], y.iloc[3000:4000], qi, cat


def _adult_model(cat) -> Pipeline:
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), cat)], remainder="passthrough"
    )
    return Pipeline([("pre", pre), ("clf", DecisionTreeClassifier(max_depth=6, random_state=0))])


SUMMARY_KEYS = {
    "k", "n_rows", "n_quasi_identifiers", "n_groups", "min_class_size", "tree",
    "accuracy_before", "accuracy_after", "accuracy_after_mapped",
    "seconds_fit_original", "seconds_predict", "seconds_anonymize", "seconds_refit",
    "seconds_total",
}


def test_anonymize_model_adult(adult_slice) -> None:
    X, y, X_test, y_test, qi, cat = adult_slice
    model = _adult_model(cat).fit(X, y)
    before = model.predict(X_test)
    messages: list[str] = []
    res = anonymize_model(
        model, X, 20, qi, y=y, X_test=X_test, y_test=y_test, progress=lambda stage, done, total: messages.append(stage)
    )
    assert isinstance(res, AnonymizationResult)
    s = res.summary
    assert set(s) == SUMMARY_KEYS
    assert s["k"] == 20 and s["n_rows"] == 3000 and s["n_quasi_identifiers"] == len(qi)
    assert s["min_class_size"] >= 20 and s["tree"] == "exact"
    assert 1 <= s["n_groups"] <= 3000 // 20
    for key in ("accuracy_before", "accuracy_after", "accuracy_after_mapped"):
        assert 0.0 <= s[key] <= 1.0
    assert s["accuracy_before"] == pytest.approx(np.mean(model.predict(X_test) == y_test))
    assert all(s[key] >= 0 for key in SUMMARY_KEYS if key.startswith("seconds"))
    assert k_anonymity(res.X_anonymized, qi) >= 20
    assert res.model is not model and res.model is not model.named_steps["clf"]
    assert res.model.get_params()["clf__max_depth"] == 6
    # the input model is untouched; the refit one is a clone trained on the anonymized rows
    np.testing.assert_array_equal(model.predict(X_test), before)
    assert res.model.named_steps["clf"] is not model.named_steps["clf"]
    ref = _adult_model(cat).fit(res.X_anonymized, y)
    np.testing.assert_array_equal(res.model.predict(X_test), ref.predict(X_test))
    pd.testing.assert_frame_equal(res.anonymizer.transform(X), res.X_anonymized)
    assert res.anonymizer.handle_unknown == "error"  # restored after mapping the test rows
    assert messages and all(isinstance(m, str) for m in messages)


def test_anonymize_model_black_box_predictions(adult_slice) -> None:
    X, y, X_test, y_test, qi, cat = adult_slice
    template = _adult_model(cat)  # never fitted: it only serves to be cloned
    predictions = _adult_model(cat).fit(X, y).predict(X)
    res = anonymize_model(
        template, X, 25, qi, y=y, predictions=predictions, X_test=X_test, y_test=y_test,
        tree="hist",
    )
    s = res.summary
    assert s["accuracy_before"] is None
    assert 0.0 <= s["accuracy_after"] <= 1.0 and 0.0 <= s["accuracy_after_mapped"] <= 1.0
    assert s["min_class_size"] >= 25 and s["tree"] == "hist"
    assert res.model is not template
    assert not hasattr(template.named_steps["clf"], "tree_")
    assert k_anonymity(res.X_anonymized, qi) >= 25


def test_anonymize_model_unfitted_model_is_fitted_first(adult_slice) -> None:
    X, y, _, _, qi, cat = adult_slice
    res = anonymize_model(_adult_model(cat), X.iloc[:600], 10, qi, y=y.iloc[:600])
    assert res.summary["accuracy_before"] is None and res.summary["accuracy_after"] is None
    assert res.summary["min_class_size"] >= 10


def test_anonymize_model_errors(adult_slice) -> None:
    X, y, X_test, _, qi, cat = adult_slice
    model = _adult_model(cat)
    _one_line_error(
        InputError, lambda: anonymize_model(model, X, 10, qi, y=y, X_test=X_test), "X_test", "y_test"
    )
    _one_line_error(InputError, lambda: anonymize_model(model, X, 10, qi), "not fitted", "y")
    _one_line_error(
        InputError, lambda: anonymize_model(model, X, 10, qi, predictions=np.zeros(len(X))), "y"
    )
    _one_line_error(
        InputError, lambda: anonymize_model(object(), X, 10, qi, y=y), "object", "cannot be cloned"
    )


def test_transform_of_no_rows_returns_an_empty_table(small) -> None:
    X, y = small
    ag = AG(k=2, quasi_identifiers=["age", "sex"]).fit(X, y)
    out = ag.transform(X.iloc[:0])
    assert out.shape == (0, 3)
    assert list(out.columns) == list(X.columns)
    assert (out.dtypes == X.dtypes).all()


def test_object_column_of_ints_and_floats_is_one_categorical(small) -> None:
    X, y = small
    X = X.astype({"zip": object})
    X["zip"] = [1, 2.5, 3, 4, 5.5] * 2
    out = AG(k=2, quasi_identifiers=["age", "zip"]).fit_transform(X, y)
    assert k_anonymity(out, ["age", "zip"]) >= 2
    assert set(out["zip"]) <= {1, 2.5, 3, 4, 5.5}



def test_anonymize_model_guided_by_probabilities(adult_slice) -> None:
    X, y, X_test, y_test, qi, cat = adult_slice
    model = _adult_model(cat).fit(X, y)
    res = anonymize_model(model, X, 50, qi, y=y, guide="proba", X_test=X_test, y_test=y_test,
                          tree="hist")
    assert res.anonymizer.task_ == "regression"
    assert res.summary["min_class_size"] >= 50
    assert k_anonymity(res.X_anonymized, qi) >= 50
    # the refit model is a classifier trained on the true labels, not on probabilities
    assert set(res.model.predict(X_test)) <= set(y)
    with pytest.raises(InputError, match="guide="):
        anonymize_model(model, X, 50, qi, y=y, guide="logits")
    with pytest.raises(InputError, match="needs the true labels"):
        anonymize_model(model, X, 50, qi, guide="proba")


def test_failed_verification_returns_nothing_and_leaves_it_unfitted(small, monkeypatch) -> None:
    """If the independent check ever failed, no table comes back and transform refuses."""
    from anonml._errors import PrivacyViolationError
    from anonml.anonymize import _base

    X, y = small
    ag = AG(k=2, quasi_identifiers=["age", "sex"]).fit(X, y)  # fitted once, successfully

    def failing_check(plan, qi, k, *args, **kwargs):
        raise PrivacyViolationError("simulated: a class below k")

    # (copy=True checks the output's columns as copy=False does, before the table is built)
    monkeypatch.setattr(_base, "verify_recoding", failing_check)
    with pytest.raises(PrivacyViolationError):
        ag.fit_transform(X, y)
    with pytest.raises(NotFittedError):
        ag.transform(X)


def test_anonymize_model_black_box_that_cannot_be_cloned(adult_slice) -> None:
    X, y, _, _, qi, _ = adult_slice

    class BlackBox:  # e.g. a remote model: predictions only
        def predict(self, X):
            return np.zeros(len(X), dtype=int)

    with pytest.raises(InputError, match="cannot be cloned"):
        anonymize_model(BlackBox(), X, 20, qi, y=y, predictions=np.zeros(len(X), dtype=int))


# ================================================================================================
# copy=False: the quasi-identifiers recoded in the caller's DataFrame (issue 21, item 6)
# ================================================================================================
@st.composite
def copy_problems(draw):
    """The invariants' random problems, sometimes with extreme values (floats near ±1e308, the
    int64 limits) and sometimes an l-diversity of a non-QI column; seeded, so two fits agree."""
    X, _, y, params = draw(problems())
    if draw(st.booleans()):
        for c in X.columns:
            if X[c].dtype == np.float64:
                X[c] = X[c] * 1e305
            elif X[c].dtype == np.int64:
                big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
                X[c] = X[c].where(X[c] != 100, big).where(X[c] != -3, small)
    others = [c for c in X.columns if c not in params["quasi_identifiers"]]
    if others and draw(st.booleans()):
        params.update(sensitive=others[0], l=2)
    params["random_state"] = 0
    return X, y, params


def _raises_the_same(exc, fn) -> None:
    with pytest.raises(type(exc)):
        fn()


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(copy_problems())
def test_copy_false_recodes_x_itself_into_the_copy_true_table(problem) -> None:
    """fit_transform with copy=False returns X itself holding exactly copy=True's table (values,
    dtypes, index), with the same groups, representatives and verified k, l; transform alike;
    fit alone verifies the same; and where copy=True fails, copy=False fails the same way
    with X unchanged."""
    X, y, params = problem
    original = X.copy(deep=True)
    a, b = AG(**params), AG(**params, copy=False)
    X_in_place = X.copy(deep=True)
    try:
        expected = a.fit_transform(X.copy(deep=True), y)
    except Exception as exc:  # noqa: BLE001 - whatever it is, copy=False must do the same
        _raises_the_same(exc, lambda: b.fit_transform(X_in_place, y))
        pd.testing.assert_frame_equal(X_in_place, original)
        return
    got = b.fit_transform(X_in_place, y)
    assert got is X_in_place
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    np.testing.assert_array_equal(b.groups_, a.groups_)
    pd.testing.assert_frame_equal(b.representatives_, a.representatives_)
    assert (b.min_class_size_, b.privacy_) == (a.min_class_size_, a.privacy_)
    rows = original.copy(deep=True)
    assert b.transform(rows) is rows
    pd.testing.assert_frame_equal(rows, a.transform(original), check_exact=True)
    fitted = AG(**params).fit(original, y)  # fit builds no table: the same check, column-wise
    assert (fitted.min_class_size_, fitted.privacy_) == (a.min_class_size_, a.privacy_)
    pd.testing.assert_frame_equal(original, X)  # the copies were the ones written into


@pytest.mark.parametrize("name", ["MondrianAnonymizer", "HilbertAnonymizer", "RTreeAnonymizer",
                                  "SaNGreeAAnonymizer", "AccuracyGuidedAnonymizer"])
def test_copy_false_every_anonymizer(adult_slice, name) -> None:
    """Every anonymizer of the shared pipeline: copy=False gives copy=True's table in X itself,
    with l-diversity of a column and t-closeness of the label checked the same way."""
    import anonml

    X, y, _, _, qi, _ = adult_slice
    X, y = X.iloc[:600].reset_index(drop=True), pd.Series(np.asarray(y)[:600], name="income")
    cls = getattr(anonml, name)
    qi = qi[:4] + ["age"]
    sensitive = next(c for c in X.columns if c not in qi and not
                     pd.api.types.is_numeric_dtype(X[c].dtype))
    for extra in ({}, {"sensitive": sensitive, "l": 2}, {"sensitive": "income", "t": 0.5}):
        params = dict(k=20, quasi_identifiers=qi, random_state=0, **extra)
        a, b = cls(**params), cls(**params, copy=False)
        expected = a.fit_transform(X, y)
        X_in_place = X.copy(deep=True)
        assert b.fit_transform(X_in_place, y) is X_in_place
        pd.testing.assert_frame_equal(X_in_place, expected, check_exact=True)
        assert (b.min_class_size_, b.privacy_) == (a.min_class_size_, a.privacy_)
        assert set(b.privacy_) == set(extra) - {"sensitive"}


def test_copy_false_frees_the_old_columns() -> None:
    """Nothing the fit keeps (the anonymizer, its encoder, the routing tree, the recoding)
    holds an old QI column once it is replaced: its memory can go."""
    import gc
    import weakref

    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"age": rng.integers(18, 90, n),
                      # extension arrays (pandas 2 and 3): the column's array is one object
                      "job": pd.Series(rng.choice(["a", "b", "c", "d"], n), dtype="string"),
                      "zip": pd.Series(rng.choice(["1", "2", "3"], n)).astype("category"),
                      "other": rng.normal(size=n)})
    y = rng.integers(0, 2, n)
    old = {c: weakref.ref(X[c].array) for c in ("job", "zip")}
    gc.collect()
    assert all(r() is not None for r in old.values())  # X holds them
    ag = AG(k=10, quasi_identifiers=["age", "job", "zip"], tree="hist", copy=False)
    assert ag.fit_transform(X, y) is X
    gc.collect()
    assert all(r() is None for r in old.values())
    assert ag.min_class_size_ >= 10 and k_anonymity(X, ["age", "job", "zip"]) >= 10


def test_copy_false_leaves_shallow_copies_and_columns_alone() -> None:
    """A shallow copy of X, a column or a column subset taken before keep the original values
    (they hold the old arrays; X's columns are replaced, not written into)."""
    from anonml import MondrianAnonymizer

    X = pd.DataFrame({"a": np.arange(40) % 7, "b": np.arange(40) % 5, "c": np.arange(40.0),
                      "s": ["x", "y"] * 20})
    original = X.copy(deep=True)
    shallow, column, subset = X.copy(deep=False), X["a"], X[["a", "b"]]
    MondrianAnonymizer(k=5, quasi_identifiers=["a", "b", "s"], copy=False).fit_transform(X)
    assert not X.equals(original)
    pd.testing.assert_frame_equal(shallow, original)
    pd.testing.assert_series_equal(column, original["a"])
    pd.testing.assert_frame_equal(subset, original[["a", "b"]])


@pytest.mark.parametrize("where", ["partition", "verification", "routing", "before_write"])
def test_copy_false_failure_leaves_x_unchanged(small, monkeypatch, where) -> None:
    """Whatever fails, it fails before the first column is written: X is as it was, and the
    anonymizer is not fitted."""
    from anonml._errors import PrivacyViolationError
    from anonml.anonymize import _base

    X, y = small
    before = X.copy(deep=True)
    ag = AG(k=2, quasi_identifiers=["age", "sex"], copy=False)
    hook = None
    if where == "partition":
        y = np.array([0, 1, 0, None, 1, 0, 1, 0, 1, 0], dtype=object)  # a missing label
    elif where == "verification":
        def failing(*args, **kwargs):
            raise PrivacyViolationError("simulated: a class below k")
        monkeypatch.setattr(_base, "verify_recoding", failing)
    elif where == "routing":
        def failing(*args, **kwargs):
            raise RuntimeError("simulated: the routing tree failed")
        monkeypatch.setattr(_base, "anonymizer_routing", failing)
    else:
        def hook():
            raise KeyboardInterrupt
    with pytest.raises((InputError, PrivacyViolationError, RuntimeError, KeyboardInterrupt)):
        ag._fit_transform(X, y, None, before_write=hook)
    pd.testing.assert_frame_equal(X, before)
    if where != "before_write":  # (there the fit itself had succeeded)
        with pytest.raises(NotFittedError):
            ag.transform(X)


def test_copy_false_transform_failure_leaves_x_unchanged(small) -> None:
    """transform: an unseen category, or a representative its column's dtype cannot hold, is
    refused before anything is written."""
    X, y = small
    ag = AG(k=2, quasi_identifiers=["age", "zip"], copy=False).fit(X, y)
    new = X.copy(deep=True)
    new.loc[3, "zip"] = "unseen"
    before = new.copy(deep=True)
    with pytest.raises(InputError, match="unseen"):
        ag.transform(new)
    pd.testing.assert_frame_equal(new, before)
    # a representative of 20.5 for an integer column (the cast is checked on the groups first)
    ag.representatives_ = ag.representatives_.assign(age=ag.representatives_["age"] + 0.5)
    ag.representatives_.loc[0, "age"] = np.nan
    rows = X.copy(deep=True)
    with pytest.raises((TypeError, ValueError)):
        ag.transform(rows)
    pd.testing.assert_frame_equal(rows, X)


def test_copy_parameter_contract(small) -> None:
    """copy is a constructor parameter (get_params, clone, set_params), checked in fit with one
    line; an array is never written into (a new array comes back); a state saved before the
    parameter existed loads with copy=True; release copies always copy."""
    from anonml.anonymize._model import release_copy

    X, y = small
    assert AG().get_params()["copy"] is True
    assert clone(AG(copy=False)).get_params()["copy"] is False
    _one_line_error(InputError, lambda: AG(k=2, copy="no").fit_transform(X, y), "copy='no'",
                    "True", "False")
    before = X.copy(deep=True)
    _one_line_error(InputError, lambda: AG(k=2, copy=None).fit(X, y), "copy=None")
    pd.testing.assert_frame_equal(X, before)
    arr = X[["age"]].to_numpy()
    arr_before = arr.copy()
    out = AG(k=2, copy=False).fit_transform(arr, y)
    assert isinstance(out, np.ndarray) and out is not arr
    np.testing.assert_array_equal(arr, arr_before)
    ag = AG(k=2, quasi_identifiers=["age", "sex"], copy=False).fit(X, y)
    state = ag.__getstate__()
    del state["copy"]
    old = object.__new__(AG)
    old.__setstate__(state)
    assert old.get_params()["copy"] is True
    released = release_copy(ag)
    assert released.copy is True and ag.copy is False
    rows = X.copy(deep=True)
    assert released.transform(rows) is not rows
    pd.testing.assert_frame_equal(rows, X)


def test_copy_false_in_anonymize_then_fit_and_map_rows(small) -> None:
    """AnonymizeThenFit fits a copy=True clone (the attacks refit it on the same rows), and
    map_rows never recodes the test rows in place."""
    from anonml.anonymize import AnonymizeThenFit
    from anonml.anonymize._model import map_rows

    X, y = small
    X = X.assign(sex=(X["sex"] == "F").astype(int), zip=X["zip"].astype(int))  # a tree reads it
    before = X.copy(deep=True)
    m = AnonymizeThenFit(AG(k=2, quasi_identifiers=["age", "sex"], copy=False),
                         DecisionTreeClassifier(random_state=0), random_state=0).fit(X, y)
    pd.testing.assert_frame_equal(X, before)
    assert m.anonymizer.copy is False and m.anonymizer_.copy is True
    ag = AG(k=2, quasi_identifiers=["age", "sex"], copy=False).fit(X, y)
    mapped = map_rows(ag, X)
    assert mapped is not X and ag.copy is False
    pd.testing.assert_frame_equal(X, before)
