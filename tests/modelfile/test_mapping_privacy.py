"""l and t of a released mapping re-derived from the training rows (issue 19, item 3).

A mapping fitted with ``sensitive=..., l=...`` or ``t=...`` holds the claim but not the
sensitive values; ``measure_mapping`` (and the audit with ``--train``) maps the training rows
through the file's routing and recomputes l and t from them. An honest file gives exactly the l
and t the anonymizer's own check gave at fit; a file whose claim was raised is refused in one
line naming a group and both numbers."""

from __future__ import annotations

import json
import re
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
from anonml.anonymize._model import release_copy
from anonml.cli import main
from anonml.datasets import load_adult_hierarchies
from anonml.modelfile._mapping import measure_mapping
from anonml.safemodel import verify_mapping

QI = ["age", "workclass", "education-num", "sex", "hours-per-week"]


@pytest.fixture(scope="module")
def adult(adult_split):
    return adult_split(3000, 600)


CASES = [
    (AccuracyGuidedAnonymizer, {"sensitive": "occupation", "l": 3}),
    (AccuracyGuidedAnonymizer, {"sensitive": "occupation", "l": 2, "l_kind": "entropy",
                                "tree": "exact"}),
    (MondrianAnonymizer, {"sensitive": "occupation", "l": 2, "l_kind": "recursive", "c": 3}),
    (MondrianAnonymizer, {"sensitive": "capital-gain", "t": 0.3}),
    (HilbertAnonymizer, {"sensitive": "race", "t": 0.25}),
    (RTreeAnonymizer, {"sensitive": "occupation", "l": 2}),
    (AccuracyGuidedAnonymizer, {"sensitive": "race", "t": 0.2, "suppression": 0.05}),
]


@pytest.mark.parametrize("cls,params", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_honest_mapping_gives_the_fitted_l_and_t(adult, cls, params):
    Xtr, _, ytr, _ = adult
    est = cls(k=20, quasi_identifiers=QI, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    copy = release_copy(est)
    got = measure_mapping(copy, Xtr)
    assert got["claims_match"], got["mismatches"]
    privacy = got["privacy"]
    assert privacy["sensitive"] == params["sensitive"]
    for name in ("l", "t"):
        if name in params:
            part = privacy[name]
            assert part["claimed"] == params[name]
            # the same number the anonymizer's independent check computed at fit
            assert part["measured"] == pytest.approx(est.privacy_[name], rel=1e-12, abs=1e-12)
            assert part["classes_failing"] == 0
        else:
            assert privacy[name] is None


@pytest.mark.parametrize("name,factor", [("l", 3.0), ("t", 0.25)])
def test_raised_claim_is_a_mismatch_naming_group_and_both_numbers(adult, name, factor):
    Xtr, _, ytr, _ = adult
    params = {"sensitive": "occupation", name: 2 if name == "l" else 0.4}
    est = MondrianAnonymizer(k=20, quasi_identifiers=QI, **params).fit(Xtr, ytr)
    copy = release_copy(est)
    claimed = params[name] * factor
    setattr(copy, name, claimed)
    got = measure_mapping(copy, Xtr)
    assert not got["claims_match"]
    line = next(x for x in got["mismatches"] if f"{name} = " in x)
    assert re.match(r"group \d+: the file claims ", line)
    assert f"{name} = {claimed:g}" in line
    assert f"the training rows give {name} = {est.privacy_[name]:.4g}" in line
    assert got["privacy"][name]["classes_failing"] > 0


def test_sensitive_values_changed_in_the_rows_are_caught(adult):
    """The claim is checked against the rows given: a training table whose sensitive column
    is made constant inside one group gives a lower l there."""
    Xtr, _, ytr, _ = adult
    est = AccuracyGuidedAnonymizer(k=20, quasi_identifiers=QI, sensitive="occupation",
                                   l=3).fit(Xtr, ytr)
    copy = release_copy(est)
    rows = np.flatnonzero(est.groups_ == est.groups_[0])
    changed = Xtr.copy()
    changed.loc[rows, "occupation"] = changed.loc[rows[0], "occupation"]
    got = measure_mapping(copy, changed)
    assert not got["claims_match"]
    assert got["privacy"]["l"]["measured"] == 1
    assert f"group {int(est.groups_[0])}:" in " ".join(got["mismatches"])


def test_hierarchical_t_needs_the_hierarchy(adult):
    Xtr, _, ytr, _ = adult
    h = load_adult_hierarchies(["occupation"])
    est = MondrianAnonymizer(k=20, quasi_identifiers=QI, sensitive="occupation", t=0.35,
                             hierarchies=h).fit(Xtr, ytr)
    copy = release_copy(est)
    assert copy.t_distance_ == "hierarchical" and copy.hierarchies is None
    got = measure_mapping(copy, Xtr)
    assert got["privacy"]["t"]["measured"] is None
    assert "hierarchy" in got["privacy"]["t"]["not_checked"]
    got = measure_mapping(copy, Xtr, hierarchies=h)
    assert got["claims_match"]
    assert got["privacy"]["t"]["measured"] == pytest.approx(est.privacy_["t"], abs=1e-12)


@pytest.mark.parametrize("attr,value,words", [
    ("l", "3", "its l '3' is not a number >= 1"),
    ("l", float("nan"), "is not a number >= 1"),
    ("t", 1.5, "its t '1.5' is not a number in [0, 1]"),
    ("l_kind", "weird", "its l_kind 'weird' is not one of"),
    ("t_distance_", "manhattan", "its t_distance_ 'manhattan' is not one of"),
    ("sensitive", "age", "its sensitive attribute 'age' is neither one of its non-QI columns"),
    ("sensitive", 3.5, "its sensitive attribute '3.5' is not a column name or a label name"),
])
def test_malformed_claims_are_refused_in_one_line(adult, attr, value, words):
    Xtr, _, ytr, _ = adult
    est = MondrianAnonymizer(k=20, quasi_identifiers=QI, sensitive="occupation", l=2,
                             t=0.5).fit(Xtr, ytr)
    copy = release_copy(est)
    setattr(copy, attr, value)
    with pytest.raises(InputError) as err:
        verify_mapping(copy, where="the mapping")
    msg = str(err.value)
    assert "\n" not in msg and words in msg and msg.startswith("the mapping is refused")


def _model(X):
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    return make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        DecisionTreeClassifier(min_samples_leaf=20, random_state=0))


def test_cli_audit_reports_l_from_the_training_rows(adult, tmp_path, capsys):
    from anonml.safemodel import save_model

    Xtr, Xte, ytr, yte = adult
    res = anonymize_model(_model(Xtr), Xtr, 20, QI, y=ytr, sensitive="occupation", l=2)
    path = save_model(res.pipeline, tmp_path / "l2.skops")
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    Xtr.assign(income=ytr).to_csv(train, index=False)
    Xte.assign(income=yte).to_csv(test, index=False)
    out = tmp_path / "report"
    code = main(["audit", "--model", str(path), "--train", str(train), "--test", str(test),
                 "--target", "income", "--attacks", "none", "--formats", "json,html",
                 "-o", str(out)])
    assert code == 0
    said = capsys.readouterr()
    assert "mapping l and t: 'occupation': l: the file claims 2; the training rows give" in \
        said.out + said.err
    report = json.loads((out / "report.json").read_text())
    mp = report["data"]["mapping"]
    assert mp["privacy_claim"] == "distinct l-diversity with l = 2 of 'occupation'"
    part = mp["measured"]["privacy"]["l"]
    assert part["measured"] == res.anonymizer.privacy_["l"] >= 2
    assert "l and t against the training rows" in (out / "report.html").read_text()
