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
    assert {"majority_medoid", "medoid", "per_feature", "majority_per_feature"} == set(
        REPRESENTATIVE_RULES
    )


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
