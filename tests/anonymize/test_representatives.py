"""The representative rules of the shared pipeline (anonml.anonymize._pipeline), on tiny
hand-checked tables, as a hypothesis property, and through every anonymizer that takes one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonml import AccuracyGuidedAnonymizer as AG
from anonml.anonymize._pipeline import (
    PER_FEATURE_RULES,
    REPRESENTATIVE_RULES,
    representative_values,
    select_representatives,
)
from anonml.datasets import load_adult
from anonml.encoding import TableEncoder
from anonml.privacy import k_anonymity


def _select(X, qi, cat, groups, y_codes, rule):
    enc = TableEncoder(list(qi), list(cat)).fit(X)
    groups = np.asarray(groups, dtype=np.int64)
    y = None if y_codes is None else np.asarray(y_codes, dtype=np.int64)
    rows = select_representatives(X, enc, qi, groups, int(groups.max()) + 1, y, rule)
    return rows, representative_values(X, qi, rows)


# ================================================================================================
# tiny hand-checked tables
# ================================================================================================
X_SMALL = pd.DataFrame({
    "age": [1, 10, 5, 3, 7, 2, 9],
    "job": ["b", "a", "b", "a", "c", None, None],
    "hours": [40.0, 20.0, 20.0, 30.0, 10.0, 50.0, 50.0],
})
G_SMALL = [0, 0, 0, 0, 1, 1, 1]
Y_SMALL = [1, 1, 0, 1, 0, 1, 1]


def test_per_feature_values_and_ties() -> None:
    rows, reps = _select(X_SMALL, ["age", "job", "hours"], ["job"], G_SMALL, Y_SMALL, "per_feature")
    assert rows.shape == (2, 3)
    # group 0: ages 1, 10, 5, 3 -> median 4, 3 and 5 equally close -> the smaller, 3;
    # jobs b, a, b, a -> a tie -> the first category in sorted order, a;
    # hours 40, 20, 20, 30 -> median 25, 20 and 30 equally close -> 20
    assert reps.loc[0].tolist() == [3, "a", 20.0]
    # group 1: ages 7, 2, 9 -> 7; jobs c, missing, missing -> missing is the most frequent value
    assert reps.loc[1, "age"] == 7 and pd.isna(reps.loc[1, "job"]) and reps.loc[1, "hours"] == 50.0
    assert reps.index.name == "group"
    # every value comes from a row of its own group that holds it
    groups = np.asarray(G_SMALL)
    for j, c in enumerate(["age", "job", "hours"]):
        assert (groups[rows[:, j]] == [0, 1]).all()
        got = X_SMALL[c].iloc[rows[:, j]].reset_index(drop=True)
        pd.testing.assert_series_equal(got, reps[c], check_names=False, check_index=False)
    # the tuple (3, a, 20) is no single row of group 0
    assert not ((X_SMALL.age == 3) & (X_SMALL.job == "a") & (X_SMALL.hours == 20)).any()


def test_majority_per_feature() -> None:
    _, reps = _select(X_SMALL, ["age", "job", "hours"], ["job"], G_SMALL, Y_SMALL,
                      "majority_per_feature")
    # group 0, label 1 (rows 0, 1, 3): ages 1, 10, 3 -> 3; jobs b, a, a -> a; hours 40, 20, 30 -> 30
    assert reps.loc[0].tolist() == [3, "a", 30.0]
    # group 1, label 1 (rows 5, 6): ages 2, 9 -> 2 (tie to the smaller); jobs missing twice
    assert reps.loc[1, "age"] == 2 and pd.isna(reps.loc[1, "job"])


def test_regression_target_majority_is_plain() -> None:
    a = _select(X_SMALL, ["age", "job"], ["job"], G_SMALL, None, "per_feature")[0]
    b = _select(X_SMALL, ["age", "job"], ["job"], G_SMALL, None, "majority_per_feature")[0]
    np.testing.assert_array_equal(a, b)


def test_missing_numeric_values_are_left_out() -> None:
    X = pd.DataFrame({"v": [np.nan, 4.0, 2.0, np.nan, np.nan]})
    _, reps = _select(X, ["v"], [], [0, 0, 0, 1, 1], None, "per_feature")
    assert reps.loc[0, "v"] == 2.0  # median of 4 and 2 is 3: tie -> 2
    assert np.isnan(reps.loc[1, "v"])  # an all-missing group keeps a missing value


def test_record_rules_unchanged() -> None:
    rows, reps = _select(X_SMALL, ["age", "hours"], [], G_SMALL, Y_SMALL, "medoid")
    assert rows.ndim == 1 and rows.shape == (2,)
    pd.testing.assert_frame_equal(
        reps, X_SMALL[["age", "hours"]].iloc[rows].reset_index(drop=True).rename_axis("group")
    )


def test_rules_listed() -> None:
    assert set(PER_FEATURE_RULES) <= set(REPRESENTATIVE_RULES)
    assert {"majority_medoid", "medoid", "per_feature", "majority_per_feature",
            "per_feature_joint"} == set(REPRESENTATIVE_RULES)


# ================================================================================================
# per_feature_joint: numeric QIs per feature, categorical QIs from one real row
# ================================================================================================
X_JOINT = pd.DataFrame({
    "age": [30, 40, 50, 60, 20, 25, 35, 45],
    "sex": ["f", "m", "m", "f", "f", "m", "m", None],
    "marital": ["single", "married", "married", "married", "single", "single", None, None],
})
G_JOINT = [0, 0, 0, 0, 1, 1, 1, 1]


def test_per_feature_joint_values_and_ties() -> None:
    qi, cat = ["age", "sex", "marital"], ["sex", "marital"]
    rows, reps = _select(X_JOINT, qi, cat, G_JOINT, None, "per_feature_joint")
    assert rows.shape == (2, 3)
    # group 0: per column the modes are sex f/m (tie -> f) and marital married, and
    # (f, married) is row 3; per_feature gives it too here, but the joint rule takes the most
    # frequent *combination*: (m, married) twice (rows 1, 2) -> its first row, 1
    assert reps.loc[0, ["sex", "marital"]].tolist() == ["m", "married"]
    assert rows[0, 1] == rows[0, 2] == 1
    # ages 30, 40, 50, 60 -> median 45, 40 and 50 equally close -> 40, as per_feature
    assert reps.loc[0, "age"] == 40
    # group 1: four combinations once each -> the most typical: sex f 1, m 2, missing 1 and
    # marital single 2, missing 2 give (f, single) 3, (m, single) 4, (m, missing) 4,
    # (missing, missing) 3; of the two with 4 the first in sorted order, missing last:
    # (m, single), row 5
    assert reps.loc[1, ["sex", "marital"]].tolist() == ["m", "single"] and rows[1, 1] == 5
    pf = _select(X_JOINT, qi, cat, G_JOINT, None, "per_feature")[1]
    assert pf.loc[0, ["sex", "marital"]].tolist() == ["f", "married"]
    pd.testing.assert_series_equal(pf["age"], reps["age"])


def test_per_feature_joint_missing_combination_wins() -> None:
    X = pd.DataFrame({"s": [None, None, "a", "b"], "t": [None, None, "x", "x"], "v": [1, 2, 3, 4]})
    rows, reps = _select(X, ["s", "t", "v"], ["s", "t"], [0, 0, 0, 0], None, "per_feature_joint")
    assert pd.isna(reps.loc[0, "s"]) and pd.isna(reps.loc[0, "t"]) and rows[0, 0] == 0
    assert reps.loc[0, "v"] == 2  # per_feature's numeric rule


def test_per_feature_joint_without_categorical_is_per_feature() -> None:
    a = _select(X_SMALL, ["age", "hours"], [], G_SMALL, None, "per_feature")[0]
    b = _select(X_SMALL, ["age", "hours"], [], G_SMALL, None, "per_feature_joint")[0]
    np.testing.assert_array_equal(a, b)


def test_per_feature_joint_without_numeric_is_a_whole_record() -> None:
    rows, reps = _select(X_JOINT, ["sex", "marital"], ["sex", "marital"], G_JOINT, None,
                         "per_feature_joint")
    assert (rows[:, 0] == rows[:, 1]).all()
    want = X_JOINT[["sex", "marital"]].iloc[rows[:, 0]].reset_index(drop=True)
    pd.testing.assert_frame_equal(reps, want.rename_axis("group"))


def test_per_feature_joint_constant_columns() -> None:
    X = pd.DataFrame({"a": ["c"] * 6, "b": ["d"] * 6, "n": [7.0] * 6})
    rows, reps = _select(X, ["a", "b", "n"], ["a", "b"], [0, 0, 0, 1, 1, 1], None,
                         "per_feature_joint")
    assert reps.values.tolist() == [["c", "d", 7.0], ["c", "d", 7.0]]
    assert rows[:, 1].tolist() == [0, 3] and (rows[:, 0] == rows[:, 1]).all()


def test_per_feature_joint_many_columns_do_not_overflow() -> None:
    # 11 codes (10 categories and missing) in each of 20 columns: 11**20 > 2**63, so the
    # combination codes must be re-ranked on the way
    rng = np.random.default_rng(0)
    cols = [f"c{j}" for j in range(20)]
    X = pd.DataFrame({c: rng.choice([*"abcdefghij", None], 60) for c in cols}, dtype=object)
    X.iloc[30:33] = X.iloc[33]  # group 1: one combination held three times
    X["n"] = rng.integers(0, 9, 60)
    groups = np.repeat([0, 1], 30)
    rows, reps = _select(X, [*cols, "n"], cols, groups, None, "per_feature_joint")
    for g in (0, 1):
        members = np.flatnonzero(groups == g)
        assert len(set(rows[g, :20])) == 1 and rows[g, 0] in set(members)
        assert tuple(_key(v) for v in reps.loc[g, cols]) == _joint_reference(X[cols].iloc[members])
    assert rows[1, 0] == 30


@st.composite
def joint_tables(draw):
    n = draw(st.integers(1, 50))
    n_groups = draw(st.integers(1, max(1, n // 2)))
    groups = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)))
    groups = np.unique(groups, return_inverse=True)[1]
    X = pd.DataFrame({
        "i": draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)),
        "f": draw(st.lists(st.sampled_from([0.5, -1.25, 3.0, np.nan]), min_size=n, max_size=n)),
        "c1": pd.Series(draw(st.lists(st.sampled_from(["x", "y", None]), min_size=n,
                                      max_size=n)), dtype=object),
        "c2": pd.Series(draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n,
                                      max_size=n)), dtype=object),
        "c3": pd.Series(draw(st.lists(st.sampled_from(["u", None]), min_size=n, max_size=n)),
                        dtype=object),
    })
    qi = draw(st.permutations(["i", "f", "c1", "c2", "c3"]))
    return X, groups, list(qi)


def _key(v):
    return "~missing" if pd.isna(v) else str(v)


def _joint_reference(cats: pd.DataFrame) -> tuple:
    """The per_feature_joint combination of one group, by brute force: the most frequent,
    then the most typical (sum of its categories' counts per column), then the first sorted
    (missing last)."""
    combos = [tuple(_key(v) for v in row) for row in cats.itertuples(index=False)]
    col_counts = [pd.Series([cb[j] for cb in combos]).value_counts() for j in range(cats.shape[1])]

    def rank(cb):
        typical = sum(int(col_counts[j][v]) for j, v in enumerate(cb))
        return (-combos.count(cb), -typical, cb)

    return min(set(combos), key=rank)


@settings(max_examples=100, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(joint_tables())
def test_per_feature_joint_property(case) -> None:
    X, groups, qi = case
    cat = [c for c in qi if c.startswith("c")]
    cat_j = [qi.index(c) for c in cat]
    rows, reps = _select(X, qi, cat, groups, None, "per_feature_joint")
    pf_rows, pf = _select(X, qi, cat, groups, None, "per_feature")
    n_groups = int(groups.max()) + 1
    assert rows.shape == (n_groups, len(qi)) and len(reps) == n_groups
    for g in range(n_groups):
        members = np.flatnonzero(groups == g)
        # every value is a real value of the group, from a row of the group
        assert set(rows[g]) <= set(members)
        # the categorical QIs all come from one row ...
        assert len({rows[g, j] for j in cat_j}) == 1
        row = rows[g, cat_j[0]]
        # ... whose combination is the group's most frequent (ties: most typical, then first
        # in sorted order), and it is the first row holding it
        combos = [tuple(_key(X[c].iloc[r]) for c in cat) for r in members]
        best = _joint_reference(X[cat].iloc[members])
        got = tuple(_key(reps.loc[g, c]) for c in cat)
        assert got == best
        assert row == members[combos.index(best)]
        # so the output combination occurs among the group's own rows
        assert got in set(combos)
        # numeric QIs: exactly per_feature's values
        for c in qi:
            if c not in cat:
                a, b = reps.loc[g, c], pf.loc[g, c]
                assert (pd.isna(a) and pd.isna(b)) or a == b


# ================================================================================================
# property: one tuple of real per-column values from its own group, the per-column rule
# ================================================================================================
@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    n_groups = draw(st.integers(1, n))
    groups = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)))
    groups = np.unique(groups, return_inverse=True)[1]  # every id used
    ints = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    floats = draw(st.lists(st.sampled_from([0.5, -1.25, 3.0, np.nan]), min_size=n, max_size=n))
    cats = draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n))
    X = pd.DataFrame({"i": ints, "f": floats, "c": pd.Series(cats, dtype=object)})
    y = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    return X, groups, y, draw(st.sampled_from(PER_FEATURE_RULES)), draw(st.booleans())


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_per_feature_property(case) -> None:
    X, groups, y, rule, regression = case
    y_codes = None if regression else y
    rows, reps = _select(X, ["i", "f", "c"], ["c"], groups, y_codes, rule)
    n_groups = int(groups.max()) + 1
    assert rows.shape == (n_groups, 3) and len(reps) == n_groups
    for g in range(n_groups):
        members = np.flatnonzero(groups == g)
        if rule == "majority_per_feature" and not regression:
            labels, counts = np.unique(y[members], return_counts=True)
            members = members[y[members] == labels[np.argmax(counts)]]
        for j, c in enumerate(["i", "f", "c"]):
            assert rows[g, j] in set(members)  # a real value of the group (of its candidates)
            vals = X[c].iloc[members]
            got = reps.loc[g, c]
            if c == "c":
                counts = vals.fillna("~missing").value_counts()
                best = counts[counts == counts.max()].index
                # ties: the first category in sorted order, missing last
                assert ("~missing" if pd.isna(got) else got) == sorted(best)[0]
            else:
                present = np.sort(vals.dropna().to_numpy(dtype=float))
                if present.size == 0:
                    assert pd.isna(got)
                    continue
                dist = np.abs(present - np.median(present))
                assert got == present[dist == dist.min()].min()


# ================================================================================================
# through the anonymizers
# ================================================================================================
@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    X = d.X.iloc[:3000].reset_index(drop=True)
    y = (d.y.iloc[:3000] == ">50K").astype(int).to_numpy()
    return X, y, list(d.qi_sets["8"])


@pytest.mark.parametrize("rule", PER_FEATURE_RULES)
@pytest.mark.parametrize("tree,refine", [("exact", "none"), ("exact", "mondrian"), ("hist", "none"),
                                         ("hist", "mondrian")])
def test_ag_representative_falls_in_its_own_group(adult, rule, tree, refine) -> None:
    X, y, qi = adult
    ag = AG(k=50, quasi_identifiers=qi, representative=rule, tree=tree, refine=refine,
            random_state=0)
    out = ag.fit_transform(X, y)
    assert k_anonymity(out, qi) >= 50
    assert ag.representative_rows_.shape == (ag.n_groups_, len(qi))
    # each group's tuple is a composite of its own rows' values ...
    for j, c in enumerate(qi):
        assert (ag.groups_[ag.representative_rows_[:, j]] == np.arange(ag.n_groups_)).all()
    # ... and, the groups being axis-aligned product regions, it is routed back to its own group
    probe = X.iloc[np.zeros(ag.n_groups_, dtype=int)].reset_index(drop=True)
    probe[qi] = ag.representatives_[qi].to_numpy()
    probe = probe.astype(X.dtypes.to_dict())
    np.testing.assert_array_equal(ag._assign(probe), np.arange(ag.n_groups_))
    pd.testing.assert_frame_equal(ag.transform(probe)[qi], probe[qi])
    # transform of the training data equals fit_transform
    pd.testing.assert_frame_equal(ag.transform(X), out)


def test_ag_per_feature_joint_combinations_are_real(adult) -> None:
    X, y, qi = adult
    ag = AG(k=10, quasi_identifiers=qi, representative="per_feature_joint", random_state=0)
    out = ag.fit_transform(X, y)
    cat = list(ag.categorical_)
    assert cat  # Adult's 8 QIs: 7 categorical, education-num numeric
    # each output row's categorical combination is that of a row of its own group
    own = pd.MultiIndex.from_frame(X[cat].astype(str).assign(_g=ag.groups_))
    released = pd.MultiIndex.from_frame(out[cat].astype(str).assign(_g=ag.groups_))
    assert released.isin(own).all()
    # where per_feature need not: on this table some of its tuples pair values of two records
    pf = AG(k=10, quasi_identifiers=qi, representative="per_feature", random_state=0)
    pf_out = pf.fit_transform(X, y)
    real = pd.MultiIndex.from_frame(X[cat].astype(str))
    assert not pd.MultiIndex.from_frame(pf_out[cat].astype(str)).isin(real).all()


def test_n_close_to_k_joint(adult) -> None:
    X, y, qi = adult
    X, y = X.iloc[:39], y[:39]
    ag = AG(k=20, quasi_identifiers=qi, representative="per_feature_joint").fit(X, y)
    assert ag.n_groups_ == 1
    cat = list(ag.categorical_)
    rep = ag.representatives_.iloc[0]
    assert tuple(_key(v) for v in rep[cat]) == _joint_reference(X[cat])


def test_n_close_to_k(adult) -> None:
    X, y, qi = adult
    X, y = X.iloc[:39], y[:39]
    ag = AG(k=20, quasi_identifiers=qi, representative="per_feature").fit(X, y)
    assert ag.n_groups_ == 1  # 39 rows cannot be cut into two groups of 20
    rep = ag.representatives_.iloc[0]
    for c in qi:
        if pd.api.types.is_numeric_dtype(X[c]):
            vals = np.sort(X[c].to_numpy())
            assert rep[c] == vals[(len(vals) - 1) // 2]  # 39 values: the median itself
        else:
            counts = X[c].value_counts()
            assert rep[c] == sorted(counts[counts == counts.max()].index)[0]


@pytest.mark.parametrize("name", ["MondrianAnonymizer", "HilbertAnonymizer", "RTreeAnonymizer",
                                  "SaNGreeAAnonymizer"])
@pytest.mark.parametrize("rule", PER_FEATURE_RULES)
def test_other_anonymizers_accept_the_rule(adult, name, rule) -> None:
    import anonml

    X, y, qi = adult
    X, y = X.iloc[:600], y[:600]
    cls = getattr(anonml, name)
    anon = cls(k=20, quasi_identifiers=qi, representative=rule)
    out = anon.fit_transform(X, y)
    assert k_anonymity(out, qi) >= 20
    groups = anon.groups_
    for j, c in enumerate(qi):
        # every output value is a value of the row's own group
        src = anon.representative_rows_[:, j][groups]
        assert (anon.groups_[src] == groups).all()
        pd.testing.assert_series_equal(out[c].reset_index(drop=True),
                                       X[c].iloc[src].reset_index(drop=True), check_dtype=False)
    pd.testing.assert_frame_equal(anon.transform(X), out)


@pytest.mark.parametrize("rule", PER_FEATURE_RULES)
def test_cli_takes_the_rule(tmp_path, capsys, rule) -> None:
    from anonml.cli import main

    rng = np.random.default_rng(0)
    n = 120
    X = pd.DataFrame({"age": rng.integers(18, 80, n), "zip": rng.choice(["z1", "z2", "z3"], n),
                      "income": rng.choice(["<=50K", ">50K"], n)})
    src, out = tmp_path / "train.csv", tmp_path / "out.csv"
    X.to_csv(src, index=False)
    code = main(["anonymize", str(src), "--k", "10", "--qi", "age,zip", "--target", "income",
                 "--labels", "-o", str(out), "-q", "--representative", rule])
    assert code == 0, capsys.readouterr().err
    result = pd.read_csv(out)
    assert k_anonymity(result, ["age", "zip"]) >= 10
    # the per-feature tuple of each class: its age is one of the ages of its class's rows
    for (age, zone), idx in result.groupby(["age", "zip"]).groups.items():
        assert age in set(X.age.iloc[idx]) and zone in set(X.zip.iloc[idx])
