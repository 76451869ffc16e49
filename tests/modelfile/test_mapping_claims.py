"""Claims of a released mapping re-derived from the training rows (issue 18, item 4), and the
bound on every route ``transform`` follows.

A released pipeline whose k, group counts and tree counts were all multiplied by 10 passes
every check made from the mapping alone; mapping the training rows through it shows the real
groups. Hostile files are made the way an attacker would: the pipeline edited in memory, and
written with skops directly."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml import (
    AccuracyGuidedAnonymizer,
    HilbertAnonymizer,
    MondrianAnonymizer,
    RTreeAnonymizer,
    anonymize_model,
)
from anonml._errors import InputError
from anonml.anonymize._model import release_pipeline
from anonml.attacks import Target
from anonml.cli import main
from anonml.modelfile._mapping import measure_mapping
from anonml.modelfile._mapping_routes import MAX_ROUTE_DEPTH, check_routes
from anonml.safemodel import load_model, request_release, verify_mapping

sio = pytest.importorskip("skops.io")

QI = ["age", "workclass", "education-num", "marital-status", "sex", "hours-per-week"]
K = 10


@pytest.fixture(scope="module")
def data(adult_split):
    return adult_split(2000, 600)


def _model(X):
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    return make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        DecisionTreeClassifier(min_samples_leaf=20, random_state=0))


@pytest.fixture(scope="module")
def result(data):
    Xtr, Xte, ytr, yte = data
    return anonymize_model(_model(Xtr), Xtr, K, QI, y=ytr, tree="exact")


def _copy(pipe):
    """A deep copy of a pipeline, through skops (as data)."""
    blob = sio.dumps(pipe)
    return sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))


def _legacy(result):
    """The pipeline as saved before issue 19 (group sizes, tree counts, encoder)."""
    from anonml.anonymize._model import release_pipeline as _release

    return _release(result.anonymizer, result.model, _legacy=True)


def _times_ten(pipe):
    """k, every group count and every node count of the tree, multiplied by 10: consistent
    with each other, so the checks from the mapping alone all pass."""
    m = pipe.steps[0][1]
    m.k = m.k * 10
    m.group_sizes_ = m.group_sizes_ * 10
    tree = m.tree_.tree_
    state = tree.__getstate__()
    nodes = state["nodes"].copy()
    nodes["n_node_samples"] *= 10
    nodes["weighted_n_node_samples"] *= 10
    state["nodes"] = nodes
    tree.__setstate__(state)
    return pipe


def _plain(value) -> bool:
    """JSON-safe plain data: no numpy scalars or arrays anywhere."""
    if type(value) in (int, float, str, bool, type(None)):
        return True
    if type(value) is list:
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def _csvs(data, tmp_path):
    Xtr, Xte, ytr, yte = data
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    Xtr.assign(income=ytr).to_csv(train, index=False)
    Xte.assign(income=yte).to_csv(test, index=False)
    return train, test


# ----------------------------------------------------------------------------- honest mappings
def test_honest_pipeline_measures_its_own_claims(result, data):
    got = measure_mapping(result.pipeline, data[0])
    assert _plain(got) and json.loads(json.dumps(got)) == got
    assert got["claims_match"] and got["mismatches"] == []
    # a released mapping holds no counts: its only claim is that each group holds >= k
    assert got["k_measured"] >= K and got["claims"]["smallest_group"] == K
    assert got["claims"]["n_training_rows"] is None and got["tree_counts"] is None
    assert got["n_groups_measured"] == got["claims"]["n_groups"] == result.anonymizer.n_groups_
    assert got["n_rows"] == len(data[0]) and got["rows_in_no_group"] == 0
    legacy = measure_mapping(_legacy(result), data[0])
    assert legacy["claims_match"] and legacy["k_measured"] == legacy["claims"]["smallest_group"]
    assert legacy["tree_counts"]["leaves_differing"] == 0
    assert got["representatives"]["checked"] == got["n_groups_measured"]
    assert got["representatives"]["not_in_group"] == 0


@pytest.mark.parametrize("make", [
    lambda: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=QI, tree="hist"),
    lambda: MondrianAnonymizer(k=K, quasi_identifiers=QI),
    lambda: MondrianAnonymizer(k=K, quasi_identifiers=QI, representative="per_feature"),
    lambda: HilbertAnonymizer(k=K, quasi_identifiers=QI),
    lambda: RTreeAnonymizer(k=K, quasi_identifiers=QI),
    lambda: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=QI[:4], sensitive="occupation",
                                     l=2, tree="exact"),
], ids=["ag_hist", "mondrian", "mondrian_per_feature", "hilbert", "rtree", "ag_l2_merged"])
def test_every_method_measures_what_it_claims(make, data):
    Xtr, Xte, ytr, _ = data
    anonymizer = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X_anon = anonymizer.fit_transform(Xtr, ytr)
    pipe = release_pipeline(anonymizer, _model(Xtr).fit(X_anon, ytr))
    facts = verify_mapping(pipe, Xte, X_train=Xtr)
    got = facts["measured"]
    assert _plain(got) and got["claims_match"], got["mismatches"]
    assert got["k_measured"] >= K and got["representatives"]["not_in_group"] == 0
    np.testing.assert_array_equal(  # the measured groups are the fitted ones
        np.sort(anonymizer.group_sizes_), np.sort(np.bincount(anonymizer.groups_)))
    assert any("training rows mapped through it" in c for c in facts["checks"])
    assert facts["routes"] and all("levels" in r or "curve" in r for r in facts["routes"])


def test_verify_mapping_without_training_rows_is_unchanged(result, data):
    facts = verify_mapping(result.pipeline, data[1])
    assert "measured" not in facts and facts["k"] == K


# ----------------------------------------------------------------------------- tampered claims
def test_claims_times_ten_pass_the_mapping_alone_but_not_the_rows(result, data):
    pipe = _times_ten(_copy(_legacy(result)))
    alone = verify_mapping(pipe, data[1])  # consistent with itself: nothing to see
    assert alone["k"] == 10 * K and alone["smallest_group"] >= 10 * K
    got = measure_mapping(pipe, data[0])
    true = measure_mapping(result.pipeline, data[0])
    assert not got["claims_match"] and got["k_measured"] == true["k_measured"] < 10 * K
    assert got["claims"]["k"] == 10 * K
    text = "\n".join(got["mismatches"])
    assert f"the file claims k = {10 * K}; the training rows give k = {true['k_measured']}" \
        in text
    sizes = result.anonymizer.group_sizes_
    assert (f"group 0: the file claims {10 * int(sizes[0]):,} rows; the training rows give "
            f"{int(sizes[0]):,}") in text
    n = len(data[0])
    assert f"the file claims {10 * n:,} training rows; the training table has {n:,}" in text
    assert f"the file's tree claims it was fitted on {10 * n:,} rows" in text
    assert "tree leaf " in text and "more groups whose claimed rows differ" in text
    assert all("\n" not in line for line in got["mismatches"])


def test_claims_times_ten_through_a_saved_file(result, data, tmp_path):
    path = tmp_path / "x10.skops"
    sio.dump(_times_ten(_copy(_legacy(result))), path)
    back = load_model(path, isolate=False)  # vetted, validated: structurally fine
    facts = verify_mapping(back, data[1], X_train=data[0])
    assert facts["k"] == 10 * K
    got = facts["measured"]
    assert not got["claims_match"] and got["k_measured"] < 10 * K
    assert any(f"the file claims k = {10 * K}; the training rows give k = "
               f"{got['k_measured']}" == line for line in got["mismatches"])
    assert not any("training rows mapped through it" in c for c in facts["checks"])


def test_minimal_mapping_times_ten_is_refuted_by_the_rows(result, data):
    pipe = _copy(result.pipeline)
    pipe.steps[0][1].k = 10 * K  # the only count a released mapping claims
    alone = verify_mapping(pipe, data[1])
    assert alone["k"] == 10 * K
    got = measure_mapping(pipe, data[0])
    true = measure_mapping(result.pipeline, data[0])
    assert not got["claims_match"] and got["k_measured"] == true["k_measured"] < 10 * K
    assert got["mismatches"][0] == (f"the file claims k = {10 * K}; the training rows give "
                                    f"k = {true['k_measured']}")


def test_a_representative_from_another_group_is_counted(result, data):
    pipe = _copy(result.pipeline)
    m = pipe.steps[0][1]
    reps = m.representatives_.copy()
    far = int(np.argmax(reps["age"].to_numpy() != reps["age"].iloc[0]))
    reps.iloc[0] = reps.iloc[far].to_numpy()  # group 0 now shows group `far`'s values
    m.representatives_ = reps
    got = measure_mapping(pipe, data[0])
    assert got["representatives"]["not_in_group"] >= 1
    assert got["representatives"]["first_group"] == 0
    assert any("not a value of their own training rows" in line for line in got["mismatches"])


# ----------------------------------------------------------------------------- the audit
def test_request_release_blocks_on_the_measured_claims(result, data):
    Xtr, Xte, ytr, yte = data
    pipe = _times_ten(_copy(_legacy(result)))
    mapping = verify_mapping(pipe, Xte, X_train=Xtr)
    k_true = mapping["measured"]["k_measured"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = request_release(Target(pipe, Xtr, ytr.to_numpy(), Xte, yte.to_numpy()),
                            attacks=(), mapping=mapping)
    assert d.measures["anonymization.k_achieved"] == k_true  # measured, not the claimed 100
    assert d.measures["mapping.claims_match"] is False
    assert d.decision == "do_not_release"
    reason = next(r for r in d.verdict.reasons if r["rule_id"] == "mapping-claims-match")
    assert reason["effect"] == "block"
    assert f"the file claims k = {10 * K}; the training rows give k = {k_true}" in \
        reason["measured"]
    assert f"the file claims k = {10 * K}" in d.verdict.summary
    section = d.report["data"]["mapping"]
    assert section["k"] == 10 * K and section["measured"]["k_measured"] == k_true
    from anonml.report import validate

    validate(d.report)


def test_claims_rule_still_reads_the_mapping_with_a_declared_anonymization(result, data):
    """--anonymized-qi/--k verify the table; the mapping's claims are checked all the same."""
    Xtr, Xte, ytr, yte = data
    pipe = _times_ten(_copy(_legacy(result)))
    mapping = verify_mapping(pipe, Xte, X_train=Xtr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = request_release(Target(pipe, Xtr, ytr.to_numpy(), Xte, yte.to_numpy()),
                            attacks=(), mapping=mapping,
                            anonymization={"quasi_identifiers": QI, "k": K},
                            anonymized_train=result.X_anonymized)
    assert d.measures["anonymization.verified"] is True  # the table itself is k-anonymous
    assert d.measures["mapping.claims_match"] is False and d.decision == "do_not_release"
    assert any(r["rule_id"] == "mapping-claims-match" for r in d.verdict.reasons)


def test_request_release_honest_pipeline_passes_the_claims_rule(result, data):
    Xtr, Xte, ytr, yte = data
    mapping = verify_mapping(result.pipeline, Xte, X_train=Xtr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = request_release(Target(result.pipeline, Xtr, ytr.to_numpy(), Xte, yte.to_numpy()),
                            attacks=(), mapping=mapping)
    assert d.measures["mapping.claims_match"] is True
    assert d.measures["anonymization.k_achieved"] >= K
    outcome = next(o for o in d.outcomes if o.rule.id == "mapping-claims-match")
    assert outcome.outcome == "pass"
    assert not any(r["rule_id"] == "mapping-claims-match" for r in d.verdict.reasons)


def test_cli_audit_blocks_a_file_with_inflated_claims(result, data, tmp_path, capsys):
    train, test = _csvs(data, tmp_path)
    bad = tmp_path / "x10.skops"
    sio.dump(_times_ten(_copy(_legacy(result))), bad)
    out = tmp_path / "report"
    code = main(["audit", "--model", str(bad), "--train", str(train), "--test", str(test),
                 "--target", "income", "--attacks", "none", "--formats", "json,html",
                 "-o", str(out), "--quiet", "--fail-unless-release"])
    printed = capsys.readouterr().out
    assert code == 3 and "VERDICT: DO NOT RELEASE" in printed
    report = json.loads((out / "report.json").read_text())
    got = report["data"]["mapping"]["measured"]
    assert report["data"]["mapping"]["k"] == 10 * K and got["k_measured"] < 10 * K
    assert got["claims_match"] is False
    line = f"the file claims k = {10 * K}; the training rows give k = {got['k_measured']}"
    reasons = report["verdict"]["reasons"]
    assert any(r["rule_id"] == "mapping-claims-match" and line in r["measured"]
               for r in reasons)
    assert line in printed  # the reason line the checker reads
    assert line in (out / "report.html").read_text()
    from anonml.report import validate

    validate(report)


def test_cli_audit_honest_file_reports_measured_and_claimed(result, data, tmp_path):
    from anonml.safemodel import save_model

    train, test = _csvs(data, tmp_path)
    path = save_model(result.pipeline, tmp_path / "ok.skops")
    out = tmp_path / "report"
    code = main(["audit", "--model", str(path), "--train", str(train), "--test", str(test),
                 "--target", "income", "--attacks", "none", "--formats", "json",
                 "-o", str(out), "--quiet"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    got = report["data"]["mapping"]["measured"]
    assert got["claims_match"] and got["k_measured"] >= K and got["claims"]["k"] == K
    outcome = next(e for e in report["evidence"] if e["rule_id"] == "mapping-claims-match")
    assert outcome["outcome"] == "pass"
    # the report's inventory of the file: every member, and no training value that the
    # anonymized table does not show, in the mapping
    inv = report["data"]["mapping"]["inventory"]
    assert inv["members"] >= len(inv["rows"]) > 0
    assert inv["hidden_values_mapping"] == 0
    assert any(r["path"].startswith("steps[0]") and "route_" in r["path"] for r in inv["rows"])


# ----------------------------------------------------------------------------- route bounds
def _hist_chain(tree, depth: int) -> None:
    """Make a histogram tree one chain ``depth`` levels deep (each inner node: a leaf on the
    left, the next inner node on the right)."""
    n = 2 * depth + 1
    inner = np.arange(0, n - 1, 2)
    feature = np.full(n, -1, dtype=np.int64)
    feature[inner] = 0
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    left[inner], right[inner] = inner + 1, inner + 2
    tree.feature_, tree.children_left_, tree.children_right_ = feature, left, right
    tree.threshold_ = np.full(n, 10**6, dtype=np.int64)  # every row goes on down the chain
    tree.offset_ = np.full(n, -1, dtype=np.int64)
    tree.n_nodes_ = n
    tree.leaves_ = np.flatnonzero(feature < 0)


def _rtree_chain(tree: dict, depth: int) -> dict:
    n = 2 * depth + 1
    inner = np.arange(0, n - 1, 2)
    axis = np.full(n, -1, dtype=np.int64)
    axis[inner] = 0
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    left[inner], right[inner] = inner + 1, inner + 2
    group = np.where(axis < 0, 0, -1)
    return {"axis": axis, "thr": np.full(n, -1, dtype=np.int64), "left": left, "right": right,
            "group": group}


@pytest.fixture(scope="module")
def hist_pipe(data):
    Xtr, _, ytr, _ = data
    a = AccuracyGuidedAnonymizer(k=K, quasi_identifiers=QI, tree="hist", refine="none")
    X_anon = a.fit_transform(Xtr, ytr)
    return release_pipeline(a, _model(Xtr).fit(X_anon, ytr), _legacy=True)


@pytest.mark.parametrize("depth", [MAX_ROUTE_DEPTH + 1, 200_000])
def test_histogram_tree_deeper_than_the_bound_is_refused(hist_pipe, data, depth):
    pipe = _copy(hist_pipe)
    m = pipe.steps[0][1]
    _hist_chain(m.tree_, depth)
    m.leaf_to_group_ = np.where(m.tree_.feature_ < 0, 0, -1)
    with pytest.raises(InputError) as info:
        verify_mapping(pipe, data[1], X_train=data[0])
    text = str(info.value)
    assert "\n" not in text and f"deeper than {MAX_ROUTE_DEPTH} levels" in text
    with pytest.raises(InputError, match="deeper than"):
        measure_mapping(pipe, data[0])


def test_a_tree_at_the_bound_is_accepted(hist_pipe):
    pipe = _copy(hist_pipe)
    m = pipe.steps[0][1]
    _hist_chain(m.tree_, MAX_ROUTE_DEPTH)
    assert any(f"{MAX_ROUTE_DEPTH} levels" in r for r in check_routes(pipe))


def test_deep_route_in_a_saved_file_is_refused_on_load_in_one_line(data, tmp_path):
    Xtr, _, ytr, _ = data
    a = RTreeAnonymizer(k=K, quasi_identifiers=QI)
    X_anon = a.fit_transform(Xtr, ytr)
    pipe = _copy(release_pipeline(a, _model(Xtr).fit(X_anon, ytr), _legacy=True))
    m = pipe.steps[0][1]
    m._tree = _rtree_chain(m._tree, 5_000)
    path = tmp_path / "deep.skops"
    sio.dump(pipe, path)
    with pytest.raises(InputError) as info:
        load_model(path, isolate=False)
    text = str(info.value)
    assert "\n" not in text and "split tree has a route deeper than" in text


def test_a_cycle_in_a_route_is_refused(hist_pipe):
    pipe = _copy(hist_pipe)
    t = pipe.steps[0][1].tree_
    right = t.children_right_.copy()
    inner = np.flatnonzero(t.feature_ >= 0)
    right[inner[-1]] = 0  # back to the root: a loop transform would follow for ever
    t.children_right_ = right
    with pytest.raises(InputError, match="not after its node"):
        check_routes(pipe)


def test_mondrian_cut_tree_deeper_than_the_bound_is_refused(data):
    from anonml.anonymize._model import release_copy

    Xtr, _, ytr, _ = data
    m = release_copy(MondrianAnonymizer(k=K, quasi_identifiers=QI).fit(Xtr, ytr), _legacy=True)
    t = m.tree_
    depth = MAX_ROUTE_DEPTH + 1
    n = 2 * depth + 1
    inner = np.arange(0, n - 1, 2)
    t.feature_ = np.full(n, -1, dtype=np.int64)
    t.feature_[inner] = 0
    t.kind_ = np.where(t.feature_ >= 0, 0, -1)  # threshold cuts
    t.threshold_ = np.full(n, -np.inf)
    t.child_offset_ = np.full(n, -1, dtype=np.int64)
    t.child_offset_[inner] = 2 * np.arange(inner.size)
    t.child_nodes_ = np.column_stack([inner + 1, inner + 2]).ravel()
    t.largest_ = np.where(t.feature_ >= 0, np.arange(n) + 2, -1)
    t.lca_start_ = np.zeros(n, dtype=np.int64)
    t.lca_size_ = np.zeros(n, dtype=np.int64)
    m.leaf_to_group_ = np.where(t.feature_ < 0, 0, -1)
    with pytest.raises(InputError) as info:
        measure_mapping(m, Xtr)
    text = str(info.value)
    assert "\n" not in text and f"cut tree has a route deeper than {MAX_ROUTE_DEPTH}" in text


def test_per_feature_joint_combinations_are_measured(data):
    Xtr, _, ytr, _ = data
    m = AccuracyGuidedAnonymizer(k=K, quasi_identifiers=QI, representative="per_feature_joint",
                                 tree="exact").fit(Xtr, ytr)
    got = measure_mapping(m, Xtr)
    assert got["claims_match"] and got["representatives"]["not_in_group"] == 0
    assert "combination of categorical QIs" in got["representatives"]["note"]
    # a representative whose categorical values are each its group's, but whose combination no
    # row of the group holds, is counted
    cat = [c for c in QI if c in set(m.categorical_)]
    reps = m.representatives_.copy()
    for g in range(m.n_groups_):
        rows = Xtr[cat][m.groups_ == g].astype(str)
        held = set(rows.itertuples(index=False, name=None))
        current = tuple(reps.loc[g, cat].astype(str))
        for j, c in enumerate(cat):
            for v in rows[c].unique():
                combo = current[:j] + (v,) + current[j + 1:]
                if combo not in held:
                    reps.loc[g, c] = Xtr[c][m.groups_ == g][rows[c] == v].iloc[0]
                    break
            else:
                continue
            break
        else:
            continue
        break
    else:  # pragma: no cover - the fixture always has such a group
        pytest.fail("no group with a non-held combination of its own values")
    m.representatives_ = reps
    got = measure_mapping(m, Xtr)
    assert got["representatives"]["not_in_group"] == 1
    assert got["representatives"]["first_group"] == g
    assert "first_column" not in got["representatives"]  # every value alone is the group's


@pytest.mark.parametrize("depth", [MAX_ROUTE_DEPTH + 1, 5_000])
def test_routing_tree_deeper_than_the_bound_is_refused(result, data, tmp_path, depth):
    """A released mapping's routing tree is bounded like every route."""
    pipe = _copy(result.pipeline)
    route = pipe.steps[0][1].route_
    n = 2 * depth + 1
    inner = np.arange(0, n - 1, 2)
    route.feature_ = np.full(n, -1, dtype=np.int64)
    route.feature_[inner] = 0
    route.threshold_ = np.full(n, 1e300)
    route.left_ = np.full(n, -1, dtype=np.int64)
    route.right_ = np.full(n, -1, dtype=np.int64)
    route.left_[inner], route.right_[inner] = inner + 1, inner + 2
    route.group_ = np.where(route.feature_ < 0, 0, -1)
    for a in ("cat_offset_",):
        setattr(route, a, np.full(n, -1, dtype=np.int64))
    route.cat_count_ = np.zeros(n, dtype=np.int64)
    route.cat_missing_ = np.zeros(n, dtype=bool)
    route.named_left_ = np.zeros(n, dtype=bool)
    with pytest.raises(InputError, match="routing tree has a route deeper than"):
        check_routes(pipe)
    path = tmp_path / "deep.skops"
    sio.dump(pipe, path)
    with pytest.raises(InputError) as info:
        load_model(path, isolate=False)
    assert "\n" not in str(info.value) and "deeper than" in str(info.value)
