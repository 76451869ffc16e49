"""The library halves of the CLI: unique-per-row columns, the summary with information loss,
a folder of hierarchies, and retraining with accuracies before and after."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError, NotFittedError
from anonml.anonymize import MondrianAnonymizer, retrain, summarize
from anonml.hierarchies import read_arx_folder
from anonml.privacy import discernibility, gcp, ncp, unique_columns


def test_unique_columns():
    t = pd.DataFrame({
        "id": [3, 1, 2, 4],
        "email": ["a@x", "b@x", "c@x", "d@x"],
        "age": [30, 30, 41, 50],
        "whole_float": [1.0, 2.0, 3.0, 4.0],
        "measure": [0.5, 1.25, 2.0, 3.5],
        "with_missing": ["a", "b", None, "d"],
    })
    assert unique_columns(t) == ["id", "email", "whole_float"]
    assert unique_columns(t, exclude=["id", "email"]) == ["whole_float"]
    assert unique_columns(t.iloc[:1]) == []


def test_summarize_matches_the_metrics():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.integers(20, 70, 120), "sex": rng.choice(["F", "M"], 120),
                      "x": rng.normal(size=120)})
    m = MondrianAnonymizer(k=8, quasi_identifiers=["age", "sex"], suppression=0.1).fit(X)
    s = summarize(m, X)
    assert s["method"] == "MondrianAnonymizer" and s["k"] == 8 and s["rows"] == 120
    assert s["groups"] == m.n_groups_ and s["smallest_class_verified"] >= 8
    assert s["suppressed_rows"] == m.n_suppressed_ > 0
    assert s["gcp"] == pytest.approx(gcp(X, m.groups_, ["age", "sex"], suppressed=m.suppressed_))
    keep = ~m.suppressed_groups_
    per_class = ncp(X, m.groups_, ["age", "sex"], suppressed=m.suppressed_)
    assert s["ncp"] == pytest.approx(per_class.mean() / 2)
    dm = discernibility(m.groups_, suppressed=m.suppressed_, k=8)
    assert s["discernibility"] == dm
    assert s["discernibility_normalized"] == pytest.approx(dm / 120**2)
    for key in ("ncp", "gcp", "discernibility_normalized"):
        assert 0 <= s[key] <= 1
    assert keep.sum() == len(per_class)
    with pytest.raises(NotFittedError):
        summarize(MondrianAnonymizer(k=8), X)
    with pytest.raises(InputError, match="rows"):
        summarize(m, X.iloc[:10])


def test_read_arx_folder(tmp_path):
    (tmp_path / "age.csv").write_text("20;20-39;*\n30;20-39;*\n40;40-59;*\n")
    (tmp_path / "adult_sex.csv").write_text("F;*\nM;*\n")
    (tmp_path / "other_zip.csv").write_text("1;*\n")
    (tmp_path / "notes.txt").write_text("not a hierarchy")
    h = read_arx_folder(tmp_path, ["age", "sex"], numeric=["age"])
    assert sorted(h) == ["age", "sex"]
    assert h["age"].leaves.dtype.kind == "i" and h["sex"].height == 1
    (tmp_path / "sex.csv").write_text("F;*\nM;*\n")
    with pytest.raises(InputError, match="two files"):
        read_arx_folder(tmp_path, ["age", "sex"])
    with pytest.raises(InputError, match="does not exist"):
        read_arx_folder(tmp_path / "nope", ["age"])


def test_retrain_scores_raw_and_mapped_test_rows():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"age": rng.integers(20, 70, 300), "h": rng.integers(1, 60, 300)})
    y = (X["age"] > 45).astype(int).to_numpy()
    X_test = pd.DataFrame({"age": rng.integers(20, 70, 100), "h": rng.integers(1, 60, 100)})
    y_test = (X_test["age"] > 45).astype(int).to_numpy()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    anon = MondrianAnonymizer(k=10, quasi_identifiers=["age"])
    X_anon = anon.fit_transform(X)
    retrained, s = retrain(model, X_anon, y, anonymizer=anon, X_test=X_test, y_test=y_test)
    assert retrained is not model
    assert s["accuracy_before"] == pytest.approx(np.mean(model.predict(X_test) == y_test))
    assert s["accuracy_after"] == pytest.approx(np.mean(retrained.predict(X_test) == y_test))
    mapped = anon.transform(X_test)
    assert s["accuracy_after_mapped"] == pytest.approx(
        np.mean(retrained.predict(mapped) == y_test))
    _, s = retrain(model, X_anon, y)
    assert s["accuracy_before"] is None and s["accuracy_after"] is None
    with pytest.raises(InputError, match="together"):
        retrain(model, X_anon, y, X_test=X_test)
