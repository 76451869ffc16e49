"""SafeDPSVC: the DP support-vector classifier under the risk appetite, in files and in the audit."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
from sklearn.svm import SVC

from anonml._errors import AnonmlWarning, InputError
from anonml.safemodel import SafeDPSVC, load_model, model_family, save_model
from anonml.safemodel._wrappers import ante_hoc_facts


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((400, 2)), columns=["a", "b"])
    y = (((X["a"] - 0.5) ** 2 + (X["b"] - 0.5) ** 2) < 0.1).astype(int).to_numpy()
    return X, y


def _safe(**kw):
    params = dict(bounds=(0.0, 1.0), classes=[0, 1], gamma=10.0, n_components=50, lam=1e-3,
                  random_state=0)
    params.update(kw)
    return SafeDPSVC(kw.pop("epsilon", 5.0), **{k: v for k, v in params.items()
                                                if k != "epsilon"})


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return _safe().fit(X[:300], y[:300])


def test_family_and_the_records_rule_tell_it_from_an_ordinary_svc():
    assert model_family(_safe()) == "dp_svm"
    assert model_family(SVC()) == "svm"
    assert ante_hoc_facts(_safe())["measures"]["model.stores_training_records"] is False
    assert ante_hoc_facts(SVC())["measures"]["model.stores_training_records"] is True
    assert ante_hoc_facts(_safe(epsilon=3.0))["measures"]["dp.epsilon"] == 3.0


@pytest.mark.parametrize("kw,rule", [
    (dict(epsilon=20.0), "dp-epsilon"),
    (dict(gamma="scale"), "dp-svm-kernel"),
    (dict(gamma=500.0), "dp-svm-kernel"),
    (dict(n_components=5000), "dp-svm-kernel"),
])
def test_epsilon_and_the_kernel_are_checked_against_the_risk_appetite(kw, rule):
    findings = _safe(**kw).preliminary_check(warn=False)
    assert [f.rule_id for f in findings] == [rule]
    assert findings[0].fix and "\n" not in str(findings[0])


def test_defaults_pass_and_constraints_fix_what_they_can(data):
    assert _safe().preliminary_check(warn=False) == []
    model = _safe(epsilon=20.0, gamma=500.0, n_components=5000)
    with pytest.warns(AnonmlWarning, match="dp-epsilon.*dp-svm-kernel"):
        model.preliminary_check()
    assert model.apply_constraints() == {"epsilon": (20.0, 10), "gamma": (500.0, 100),
                                         "n_components": (5000, 2000)}
    assert model.preliminary_check(warn=False) == []


def test_the_fit_still_fails_closed_without_public_bounds(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnonmlWarning)
        with pytest.raises(InputError, match="bounds is required"):
            _safe(bounds=None).fit(X, y)


def test_save_load_round_trip_without_trust(tmp_path, data, fitted):
    X, _ = data
    path = tmp_path / "svc.skops"
    save_model(fitted, path)
    back = load_model(path, isolate=False)
    assert type(back) is SafeDPSVC
    np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))
    assert back.posthoc_check().tamper == "unchanged"


def _rewrite(path, out, change):
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    schema = json.loads(members["schema.json"])
    change(schema["content"]["content"])
    members["schema.json"] = json.dumps(schema).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    out.write_bytes(buf.getvalue())
    return out


def test_a_file_carrying_more_than_the_model_or_mismatched_weights_is_refused(tmp_path, fitted):
    path = tmp_path / "svc.skops"
    save_model(fitted, path)

    def extra(state):
        state["notes_"] = state["epsilon"]

    def swap(state):  # the frequencies and the weights exchanged
        state["coef_"], state["random_weights_"] = state["random_weights_"], state["coef_"]

    with pytest.raises(InputError, match="notes_"):
        load_model(_rewrite(path, tmp_path / "extra.skops", extra), isolate=False)
    with pytest.raises(InputError, match="do not chain"):
        load_model(_rewrite(path, tmp_path / "swap.skops", swap), isolate=False)


def test_the_audit_releases_it_on_its_records_and_budget_rules(tmp_path, data, fitted):
    from anonml.attacks import Target
    from anonml.safemodel import request_release

    X, y = data
    path = tmp_path / "svc.skops"
    save_model(fitted, path)
    model = load_model(path, isolate=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decision = request_release(Target(model, X[:300], y[:300], X[300:], y[300:]),
                                   attacks=("worst_case",), random_state=0)
    outcome = {e["rule_id"]: e["outcome"] for e in decision.report["evidence"]}
    for rule in ("no-stored-records", "dp-epsilon", "dp-svm-kernel", "structure-dof",
                 "tamper-unchanged"):
        assert outcome[rule] == "pass", rule
    assert decision.decision != "do_not_release"
    assert decision.report["model"]["family"] == "dp_svm"
