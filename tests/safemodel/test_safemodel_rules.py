"""Risk-appetite rules: the file format, its validation, the evaluation logic, and every
default rule firing on a violating model and staying quiet on a compliant one."""

from __future__ import annotations


import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.dp import DPSVC
from anonml.safemodel import (
    SafeDecisionTreeClassifier,
    SafeRandomForestClassifier,
    default_rules,
    default_rules_text,
    evaluate_rules,
    load_rules,
    model_family,
)
from anonml.safemodel._rules import Check, _evaluate, evaluate_rule, rules_from_dict
from anonml.safemodel._wrappers import posthoc_facts, preliminary_outcomes

RULES = default_rules()


def _outcome(rule_id: str, facts: dict) -> str:
    return evaluate_rule(RULES[rule_id], facts).outcome


# ------------------------------------------------------------------------------ the file ------
def test_default_rules_load_and_cite_their_sources():
    assert len(RULES) == 26
    assert RULES.origin == "anonml defaults" and len(RULES.sha256) == 64
    for rule in RULES.rules:
        assert rule.source and rule.explanation and rule.title
        if rule.effect == "condition":
            assert rule.condition
    # SACRO-ML's three hyperparameter defaults, with their values
    assert RULES["dt-min-samples-leaf"].check.value == 5
    assert RULES["rf-min-samples-leaf"].check.value == 5
    assert RULES["rf-bootstrap"].check.value is True
    assert RULES["mia-auc"].check.value == 0.65


def test_rules_files_in_toml_and_json_agree(tmp_path):
    toml = tmp_path / "r.toml"
    toml.write_text(default_rules_text())
    import tomllib

    js = tmp_path / "r.json"
    js.write_text(json.dumps(tomllib.loads(default_rules_text())))
    a, b = load_rules(toml), load_rules(js)
    assert a.ids() == b.ids() == RULES.ids()
    assert a.rules == b.rules
    assert a.sha256 != b.sha256  # each file's own digest


def test_environment_variable_names_the_tre_file(tmp_path, monkeypatch):
    path = tmp_path / "tre.toml"
    path.write_text(default_rules_text().replace('name = "anonml default risk appetite"',
                                                 'name = "TRE X"'))
    monkeypatch.setenv("ANONML_RULES", str(path))
    assert load_rules().name == "TRE X"
    monkeypatch.delenv("ANONML_RULES")
    assert load_rules().name == "anonml default risk appetite"


def _doc(**rule_overrides):
    rule = {"id": "r1", "title": "t", "category": "hyperparameter", "effect": "block",
            "explanation": "e", "source": "s", "check": {"param": "max_depth", "max": 5}}
    rule.update(rule_overrides)
    rule = {k: v for k, v in rule.items() if v is not None}
    return {"schema": "anonml-rules/1", "name": "n", "version": "1", "rule": [rule]}


@pytest.mark.parametrize("override, needle", [
    ({"check": {"param": "max_depth", "most": 5}}, "unknown operator 'most'"),
    ({"check": {"param": "max_depth", "min": "five"}}, "min must be a number"),
    ({"check": {"param": "max_depth", "min": 1, "max": 5}}, "exactly one operator"),
    ({"check": {"max": 5}}, "exactly one of param or measure"),
    ({"check": {"and": []}}, "non-empty list"),
    ({"check": {"param": "x", "type": "complex"}}, "type must be one of"),
    ({"check": {"param": "x", "one_of": 3}}, "one_of must be a non-empty list"),
    ({"effect": "deny"}, "effect 'deny' is not known"),
    ({"effect": "condition"}, "needs the condition of release"),
    ({"category": "vibes"}, "category 'vibes' is not known"),
    ({"applies_to": ["catboost"]}, "unknown model family 'catboost'"),
    ({"id": "Bad Id"}, "not lower-case"),
    ({"source": None}, "source is missing"),
    ({"required": "yes"}, "required must be true or false"),
    ({"colour": "red"}, "unknown key 'colour'"),
])
def test_bad_rule_gives_one_line_error_naming_rule_and_fix(override, needle):
    with pytest.raises(InputError) as err:
        rules_from_dict(_doc(**override), origin="tre.toml")
    msg = str(err.value)
    assert needle in msg and "fix:" in msg and "\n" not in msg
    assert "tre.toml" in msg


def test_bad_documents(tmp_path):
    with pytest.raises(InputError, match="schema is"):
        rules_from_dict({**_doc(), "schema": "v2"})
    doc = _doc()
    doc["rule"] = doc["rule"] * 2
    with pytest.raises(InputError, match="appears twice"):
        rules_from_dict(doc)
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = \n")
    with pytest.raises(InputError, match="not valid TOML") as err:
        load_rules(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="not found"):
        load_rules(tmp_path / "missing.toml")
    (tmp_path / "r.yaml").write_text("x")
    with pytest.raises(InputError, match="unknown format"):
        load_rules(tmp_path / "r.yaml")


# ------------------------------------------------------------------------- evaluation ---------
_leaf_values = st.sampled_from([True, False, None])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_leaf_values, min_size=1, max_size=5), op=st.sampled_from(["and", "or"]))
def test_and_or_follow_kleene_logic(values, op):
    children = tuple(Check("equals", "measure", f"m{i}", True) for i in range(len(values)))
    measures = {f"m{i}": v for i, v in enumerate(values) if v is not None}
    got = _evaluate(Check(op, children=children), {"measures": measures}, [], [])
    if op == "and":
        want = False if False in values else (None if None in values else True)
    else:
        want = True if True in values else (None if None in values else False)
    assert got is want


def test_operators_and_edge_values():
    def ev(op, value, actual):
        facts = {"family": "generic", "measures": {"structure.n_params": actual}}
        rule = rules_from_dict(_doc(category="structure",
                                    check={"measure": "structure.n_params", op: value})).rules[0]
        return evaluate_rule(rule, facts).outcome

    assert ev("min", 5, 5) == "pass" and ev("min", 5, 4.99) == "fail"
    assert ev("max", 0.65, 0.65) == "pass" and ev("max", 0.65, 0.66) == "fail"
    assert ev("max", 10, None) == "fail"  # max_depth=None is unbounded
    assert ev("equals", True, 1) == "fail"  # true is not 1
    assert ev("equals", 1, 1) == "pass"
    assert ev("one_of", ["gini", "entropy"], "log_loss") == "fail"
    assert ev("type", "number", float("nan")) == "fail"
    assert ev("type", "int", True) == "fail"
    assert ev("type", "none", None) == "pass"


def test_fractional_min_samples_leaf_resolved_with_n():
    rule = RULES["dt-min-samples-leaf"]
    facts = {"family": "decision_tree", "params": {"min_samples_leaf": 0.001}, "measures": {}}
    assert evaluate_rule(rule, facts).outcome == "not_evaluated"  # n unknown before fit
    facts["n_samples"] = 10_000  # ceil(0.001 * 10000) = 10
    out = evaluate_rule(rule, facts)
    assert out.outcome == "pass" and "(= 10 records)" in out.measured
    facts["n_samples"] = 3_000  # 3 records
    assert evaluate_rule(rule, facts).outcome == "fail"


def test_missing_subject_optional_vs_required():
    facts = {"family": "random_forest", "params": {}, "measures": {}}
    assert _outcome("anon-k", facts) == "not_applicable"  # required = false
    assert _outcome("mia-auc", facts) == "not_evaluated"
    assert _outcome("dt-min-samples-leaf", facts) == "not_applicable"  # other family


def test_model_families():
    assert model_family(SafeRandomForestClassifier()) == "random_forest"
    assert model_family(DecisionTreeClassifier()) == "decision_tree"
    assert model_family(SVC()) == "svm" and model_family(KNeighborsClassifier()) == "knn"
    from anonml.dp import DPRandomForestClassifier, DPSGDClassifier

    assert model_family(DPSGDClassifier()) == "dp_sgd"
    assert model_family(DPRandomForestClassifier()) == "dp_random_forest"
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    assert model_family(make_pipeline(StandardScaler(), MLPClassifier())) == "mlp"


# ----------------------------------------------- every default rule: fires vs stays quiet ------
def _data(n=300, seed=0, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 4))
    y = (X[:, 0] + noise * rng.normal(size=2 * n) > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _fit(model, data):
    Xtr, ytr, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(Xtr, ytr)


def _ante(model, rule_id):
    outs = {o.rule.id: o.outcome for o in preliminary_outcomes(model, RULES, n_samples=1000)}
    return outs[rule_id]


def _post(model, rule_id, data):
    facts = posthoc_facts(model, *data)
    return evaluate_rule(RULES[rule_id], facts).outcome


def _measure(rule_id, name, value):
    return evaluate_rule(RULES[rule_id], {"family": "random_forest", "params": {},
                                          "measures": {name: value}}).outcome


def _dp(rule_id, **params):
    from anonml.dp import DPSGDClassifier

    return _ante(DPSGDClassifier(**params), rule_id)


def _xgb(rule_id, **params):
    xgboost = pytest.importorskip("xgboost")
    return _ante(xgboost.XGBClassifier(**params), rule_id)


def _tampered(data):
    m = _fit(SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0), data)
    m.set_params(max_depth=3)
    return m


DATA = _data()
NOISY = _data(noise=3.0)
# rule id -> (outcome on a violating model/measurement, outcome on a compliant one)
CASES = {
    "dt-min-samples-leaf": lambda: (_ante(DecisionTreeClassifier(), "dt-min-samples-leaf"),
                                    _ante(DecisionTreeClassifier(min_samples_leaf=5),
                                          "dt-min-samples-leaf")),
    "rf-bootstrap": lambda: (_ante(RandomForestClassifier(bootstrap=False), "rf-bootstrap"),
                             _ante(RandomForestClassifier(), "rf-bootstrap")),
    "rf-min-samples-leaf": lambda: (
        _ante(RandomForestClassifier(), "rf-min-samples-leaf"),
        _ante(RandomForestClassifier(min_samples_leaf=5), "rf-min-samples-leaf")),
    "gb-min-samples-leaf": lambda: (
        _ante(GradientBoostingClassifier(), "gb-min-samples-leaf"),
        _ante(GradientBoostingClassifier(min_samples_leaf=5), "gb-min-samples-leaf")),
    "xgb-min-child-weight": lambda: (_xgb("xgb-min-child-weight"),
                                     _xgb("xgb-min-child-weight", min_child_weight=5)),
    "no-stored-records": lambda: (_ante(KNeighborsClassifier(), "no-stored-records"),
                                  _ante(LogisticRegression(), "no-stored-records")),
    "dp-epsilon": lambda: (_dp("dp-epsilon", epsilon=50.0), _dp("dp-epsilon", epsilon=3.0)),
    "dp-svm-kernel": lambda: (
        _ante(DPSVC(gamma="scale"), "dp-svm-kernel"),
        _ante(DPSVC(gamma=1.0, n_components=500), "dp-svm-kernel")),
    "dp-delta": lambda: (_dp("dp-delta", epsilon=3.0, delta=1e-3),
                         _dp("dp-delta", epsilon=3.0, delta=1e-6)),
    "dp-clipping": lambda: (_dp("dp-clipping", epsilon=3.0, max_grad_norm=None),
                            _dp("dp-clipping", epsilon=3.0, max_grad_norm=1.0)),
    "dp-noise": lambda: (_dp("dp-noise", noise_multiplier=0.1),
                         _dp("dp-noise", noise_multiplier=1.1)),
    "tamper-unchanged": lambda: (
        _post(_tampered(DATA), "tamper-unchanged", DATA),
        _post(_fit(SafeDecisionTreeClassifier(min_samples_leaf=5), DATA), "tamper-unchanged",
              DATA)),
    "tamper-fingerprint": lambda: (
        _post(_fit(DecisionTreeClassifier(min_samples_leaf=5), DATA), "tamper-fingerprint",
              DATA),
        _post(_fit(SafeDecisionTreeClassifier(min_samples_leaf=5), DATA),
              "tamper-fingerprint", DATA)),
    "structure-leaf-size": lambda: (
        _post(_fit(DecisionTreeClassifier(random_state=0), NOISY), "structure-leaf-size",
              NOISY),
        _post(_fit(DecisionTreeClassifier(min_samples_leaf=5, random_state=0), NOISY),
              "structure-leaf-size", NOISY)),
    "structure-group-size": lambda: (
        _post(_fit(DecisionTreeClassifier(random_state=0), NOISY), "structure-group-size",
              NOISY),
        _post(_fit(DecisionTreeClassifier(min_samples_leaf=10, random_state=0), NOISY),
              "structure-group-size", NOISY)),
    "structure-class-disclosure": lambda: (
        _post(_fit(DecisionTreeClassifier(random_state=0), NOISY),
              "structure-class-disclosure", NOISY),
        _post(_fit(DecisionTreeClassifier(max_depth=1, random_state=0), NOISY),
              "structure-class-disclosure", NOISY)),
    "structure-dof": lambda: (
        _post(_fit(MLPClassifier(hidden_layer_sizes=(200,), max_iter=5, random_state=0), DATA),
              "structure-dof", DATA),
        _post(_fit(LogisticRegression(), DATA), "structure-dof", DATA)),
    "performance-gap": lambda: (
        _post(_fit(DecisionTreeClassifier(random_state=0), NOISY), "performance-gap", NOISY),
        _post(_fit(LogisticRegression(), NOISY), "performance-gap", NOISY)),
    "mia-auc": lambda: (_measure("mia-auc", "membership.max_auc", 0.71),
                        _measure("mia-auc", "membership.max_auc", 0.52)),
    "mia-significant": lambda: (
        _measure("mia-significant", "membership.worst_case.share_significant", 0.3),
        _measure("mia-significant", "membership.worst_case.share_significant", 0.0)),
    "mia-low-fpr": lambda: (
        _measure("mia-low-fpr", "membership.max_tpr_at_fpr_0.001", 0.05),
        _measure("mia-low-fpr", "membership.max_tpr_at_fpr_0.001", 0.002)),
    "attr-significant": lambda: (_measure("attr-significant", "attribute.n_significant", 2),
                                 _measure("attr-significant", "attribute.n_significant", 0)),
    "attr-arr": lambda: (_measure("attr-arr", "attribute.max_arr_ci_low", 1.8),
                         _measure("attr-arr", "attribute.max_arr_ci_low", 0.9)),
    "anon-k": lambda: (_measure("anon-k", "anonymization.k_achieved", 3),
                       _measure("anon-k", "anonymization.k_achieved", 10)),
    "anon-verified": lambda: (_measure("anon-verified", "anonymization.verified", False),
                              _measure("anon-verified", "anonymization.verified", True)),
    "mapping-claims-match": lambda: (
        _measure("mapping-claims-match", "mapping.claims_match", False),
        _measure("mapping-claims-match", "mapping.claims_match", True)),
}


def test_every_default_rule_has_a_case():
    assert sorted(CASES) == sorted(RULES.ids())


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_default_rule_fires_on_violation_and_is_quiet_otherwise(rule_id):
    violating, compliant = CASES[rule_id]()
    assert (violating, compliant) == ("fail", "pass")


def test_measured_rules_read_real_measurements():
    """The attack-driven rules on a real overfit tree vs a regularised model."""
    facts_bad = posthoc_facts(_fit(DecisionTreeClassifier(random_state=0), NOISY), *NOISY)
    facts_ok = posthoc_facts(_fit(LogisticRegression(), NOISY), *NOISY)
    gap_bad = facts_bad["measures"]["structure.generalisation_gap"]
    gap_ok = facts_ok["measures"]["structure.generalisation_gap"]
    assert gap_bad > 0.3 and abs(gap_ok) < 0.1
    outs = evaluate_rules(RULES, facts_bad, categories=("structure", "performance"))
    assert {o.rule.id for o in outs if o.outcome == "fail"} >= {
        "structure-leaf-size", "performance-gap"}


# ------------------------------------------------------------------ names a rule may use -------
def _check_doc(check, applies_to=("any",)):
    return _doc(category="structure", applies_to=list(applies_to), check=check)


def _one_line_error(doc, *needles):
    with pytest.raises(InputError) as err:
        rules_from_dict(doc, origin="tre.toml")
    msg = str(err.value)
    assert "\n" not in msg and "fix:" in msg and "rule 'r1'" in msg, msg
    for needle in needles:
        assert needle in msg, msg


def test_unknown_measure_is_refused_with_a_suggestion():
    _one_line_error(_check_doc({"measure": "membership.max_acu", "max": 0.65}),
                    "'membership.max_acu'", "did you mean 'membership.max_auc'?")
    # no close match: the measures of that group are listed
    _one_line_error(_check_doc({"measure": "membership.zzz", "max": 1}),
                    "'membership.zzz'", "membership.max_auc", "membership.rmia.auc")
    _one_line_error(_check_doc({"measure": "nonsense", "max": 1}), "'nonsense'",
                    "anonml.safemodel.MEASURES")
    # inside and/or too
    _one_line_error(_check_doc({"or": [{"measure": "membership.max_auc", "max": 0.6},
                                       {"measure": "structure.min_leaf_sise", "min": 5}]}),
                    "check.or[1]", "did you mean 'structure.min_leaf_size'?")


def test_unknown_param_is_refused_with_a_suggestion():
    _one_line_error(_check_doc({"param": "min_sample_leaf", "min": 5}, ["decision_tree"]),
                    "'min_sample_leaf'", "decision_tree", "did you mean 'min_samples_leaf'?")
    # a parameter of another family is not one of this family's
    _one_line_error(_check_doc({"param": "n_neighbors", "max": 5}, ["random_forest"]),
                    "'n_neighbors'", "random_forest")
    _one_line_error(_check_doc({"param": "min_samples_lef", "min": 5}, ["any"]),
                    "any model family", "did you mean 'min_samples_leaf'?")
    # XGBoost's names are known with or without xgboost installed
    _one_line_error(_check_doc({"param": "min_child_weigth", "min": 5}, ["any"]),
                    "any model family", "did you mean 'min_child_weight'?")
    _one_line_error(_check_doc({"and": [{"param": "max_depth", "max": 5},
                                        {"param": "bootstrapp", "equals": True}]},
                               ["random_forest", "extra_trees"]),
                    "check.and[1]", "did you mean 'bootstrap'?")


def test_known_params_are_accepted():
    # known to one of the families the rule applies to is enough
    rules_from_dict(_check_doc({"param": "bootstrap", "equals": True},
                               ["random_forest", "decision_tree"]))
    rules_from_dict(_check_doc({"param": "n_neighbors", "max": 5}, ["any"]))
    rules_from_dict(_check_doc({"param": "max_grad_norm", "max": 10}, ["dp_sgd"]))
    # "generic" is any estimator: its parameters cannot be known, so none is refused
    rules_from_dict(_check_doc({"param": "my_own_knob", "max": 5}, ["generic"]))


def test_param_of_a_family_whose_library_is_missing_is_accepted(monkeypatch):
    from anonml.modelfile import _family

    monkeypatch.setitem(_family.ESTIMATORS, "xgboost", ("no_such_module_xyz:XGBClassifier",))
    _family.family_param_names.cache_clear()
    try:
        rules_from_dict(_check_doc({"param": "min_child_weight", "min": 5}, ["xgboost"]))
        rules_from_dict(_check_doc({"param": "anything", "min": 5}, ["xgboost"]))
    finally:
        monkeypatch.undo()
        _family.family_param_names.cache_clear()


def test_every_family_has_its_estimators():
    from anonml.safemodel import FAMILIES
    from anonml.modelfile._family import _BY_CLASS, ESTIMATORS

    assert set(ESTIMATORS) == set(FAMILIES)
    for package, name, family in _BY_CLASS:
        assert any(p.startswith(package) and p.endswith(f":{name}") for p in ESTIMATORS[family])
    listed = {p.split(":")[1] for paths in ESTIMATORS.values() for p in paths}
    assert listed == {name for _, name, _ in _BY_CLASS}


def test_cli_rules_check_refuses_a_typo(tmp_path, capsys):
    from anonml.cli import main

    path = tmp_path / "tre.toml"
    assert main(["rules", "init", str(path)]) == 0
    capsys.readouterr()
    path.write_text(path.read_text().replace('measure = "membership.max_auc"',
                                             'measure = "membership.max_acu"'))
    assert main(["rules", "check", str(path)]) == 1
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anonml: error:") and not out
    assert "rule 'mia-auc'" in lines[0] and "did you mean 'membership.max_auc'?" in lines[0]


def test_measure_registry_matches_what_the_release_code_produces():
    """Every measure a release run can produce is registered, and every registered one is
    produced by some run, so the list cannot drift from the code."""
    import pandas as pd

    from anonml.attacks import Target
    from anonml.dp import DPLogisticRegression, DPRandomForestClassifier, DPSGDClassifier
    from anonml.safemodel import MEASURES, request_release
    from anonml.safemodel._wrappers import ante_hoc_facts

    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 4, n).astype(float),
                      "c": rng.choice(["u", "v"], n)})
    y = ((X["a"] > 0) ^ (rng.random(n) < 0.2)).astype(int).to_numpy()
    Xn = X.assign(c=(X["c"] == "u").astype(float))
    model = SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(Xn[:100], y[:100])
    target = Target(model, Xn[:100], y[:100], Xn[100:], y[100:])
    produced: set = set()
    anon = {"quasi_identifiers": ["b"], "k": 2}
    for attacks in (("worst_case", "rmia", "attribute"), ("lira",)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = request_release(target, attacks=attacks, anonymization=anon, n_reference=2,
                                max_attribute_records=30, random_state=0)
        # a rate the small test set cannot resolve is named, with the reason, not produced
        produced |= set(d.measures) | set(d.unmeasurable)
    # a released pipeline's mapping, measured on its training rows
    from anonml import MondrianAnonymizer
    from anonml.anonymize._model import release_copy
    from anonml.modelfile._mapping import verify_mapping
    from anonml.safemodel._release import mapping_measures

    anonymizer = MondrianAnonymizer(k=5, quasi_identifiers=["a", "b"]).fit(X[:100], y[:100])
    produced |= set(mapping_measures(verify_mapping(release_copy(anonymizer),
                                                    X_train=X[:100])))
    for dp in (DPSGDClassifier(noise_multiplier=1.0), DPRandomForestClassifier(),
               DPLogisticRegression()):
        produced |= set(ante_hoc_facts(dp)["measures"])
    assert produced - set(MEASURES) == set(), "produced but not registered"
    assert set(MEASURES) - produced == set(), "registered but never produced"
