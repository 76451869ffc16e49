"""request_release: the verdict logic on fixed measurements, the whole run on real models, the
report (schema, no training values in JSON, HTML or PDF), and ``anonml audit``."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.attacks import Target
from anonml.safemodel import (
    SafeDecisionTreeClassifier,
    SafeLogisticRegression,
    default_rules,
    evaluate_rules,
    request_release,
)
from anonml.safemodel._rules import rules_from_dict
from anonml.safemodel._verdict import decide

RULES = default_rules()


# -------------------------------------------------------------- verdict on fixed measurements --
# short names for real measures (rules refuse a measure anonml never produces)
NAMES = {"auc": "membership.max_auc", "share": "membership.worst_case.share_significant",
         "gap": "structure.generalisation_gap", "k": "anonymization.k_achieved"}


def _measures(short):
    return {NAMES[k]: v for k, v in short.items()}


def _rules(*specs):
    """A rules set of (id, effect, measure, max, required) rules."""
    rules = []
    for rid, effect, measure, limit, required in specs:
        rule = {"id": rid, "title": f"{rid} holds", "category": "membership", "effect": effect,
                "explanation": "e", "source": "test", "fix": f"fix {rid}", "required": required,
                "check": {"measure": NAMES[measure], "max": limit}}
        if effect == "condition":
            rule["condition"] = f"condition of {rid}"
        rules.append(rule)
    return rules_from_dict({"schema": "anonml-rules/1", "name": "t", "version": "1",
                            "rule": rules})


RS = _rules(("b", "block", "auc", 0.65, True), ("c", "condition", "share", 0.1, True),
            ("w", "warn", "gap", 0.1, True), ("o", "block", "k", 5.0, False))


@pytest.mark.parametrize("measures, decision, conditions", [
    ({"auc": 0.5, "share": 0.0, "gap": 0.0}, "release", []),
    ({"auc": 0.5, "share": 0.0, "gap": 0.5}, "release", []),  # warn never decides
    ({"auc": 0.5, "share": 0.3, "gap": 0.0}, "release_with_conditions", ["condition of c"]),
    ({"auc": 0.7, "share": 0.3, "gap": 0.0}, "do_not_release", []),
    ({"auc": 0.5, "gap": 0.0}, "release_with_conditions", ["Confirm by other means"]),
    ({"share": 0.0, "gap": 0.0}, "release_with_conditions", ["Confirm by other means"]),
    ({"auc": 0.5, "share": 0.0, "k": 9.0}, "do_not_release", []),  # optional, but measured
    ({"auc": 0.66, "share": 0.0}, "do_not_release", []),
])
def test_verdict_on_fixed_measurements(measures, decision, conditions):
    facts = {"family": "generic", "params": {}, "measures": _measures(measures)}
    verdict = decide(evaluate_rules(RS, facts), ("RMIA", 0.51))
    assert verdict.decision == decision
    assert len(verdict.conditions) == len(conditions)
    for got, want in zip(verdict.conditions, conditions):
        assert got.startswith(want)
    if decision == "do_not_release":
        assert verdict.reasons[0]["effect"] == "block"
        assert any(s.startswith("Researcher: fix") for s in verdict.next_steps)
    if decision == "release":
        assert "0.51" in verdict.summary
    assert verdict.summary and verdict.next_steps


def test_low_fpr_rule_the_test_set_cannot_resolve_is_a_stated_condition():
    """TPR at 0.1 % FPR on 300 non-members (smallest resolvable FPR 1/300) is not measured: the
    default rule on it becomes a condition naming the test set's size and the size needed,
    never a silent pass."""
    from anonml.safemodel._release import low_fpr_measures

    attack = {"n_nonmembers": 300, "metrics": {"tpr_at_fpr_0.001": 0.0}}
    measures, unmeasurable = low_fpr_measures([attack])
    assert "membership.max_tpr_at_fpr_0.001" not in measures
    why = unmeasurable["membership.max_tpr_at_fpr_0.001"]
    assert "cannot be measured on a test set of 300 rows; needs at least 1,000" in why
    facts = {"family": "generic", "params": {}, "n_samples": 1000,
             "measures": {"membership.max_auc": 0.5, **measures}}
    outcomes = evaluate_rules(RULES, facts, categories=("membership",))
    low = next(o for o in outcomes if o.rule.id == "mia-low-fpr")
    assert low.outcome == "not_evaluated"
    verdict = decide(outcomes, None, unmeasurable)
    assert verdict.decision == "release_with_conditions"
    assert any("needs at least 1,000" in c and "300 rows" in c for c in verdict.conditions)
    assert any(r["rule_id"] == "mia-low-fpr" and "300 rows" in r["text"]
               for r in verdict.reasons)
    # with enough non-members the rate is measured and the rule is evaluated
    big = {"n_nonmembers": 1000, "metrics": {"tpr_at_fpr_0.001": 0.002}}
    measures, unmeasurable = low_fpr_measures([attack, big])
    assert measures == {"membership.max_tpr_at_fpr_0.001": 0.002} and unmeasurable == {}


def test_banner_counts_the_reasons_blocks_first_and_steps_are_not_repeated():
    rs = _rules(("b1", "block", "auc", 0.65, True), ("b2", "block", "gap", 0.1, True),
                ("c", "condition", "share", 0.1, True), ("o", "block", "k", 5.0, True))
    outcomes = evaluate_rules(rs, {"family": "generic", "params": {}, "measures": _measures(
        {"auc": 0.9, "gap": 0.3, "share": 0.5})})
    v = decide(outcomes)
    assert v.decision == "do_not_release"
    n = len(v.reasons)
    assert n == 4 and f"{n} checks did not pass (2 block release" in v.summary
    effects = [r["effect"] for r in v.reasons]
    assert effects[:2] == ["block", "block"]
    assert len(v.next_steps) == len(set(v.next_steps))
    from anonml.safemodel._verdict import _distinct

    assert _distinct(["Set min_samples_leaf=5 or more and retrain.",
                      "Raise min_samples_leaf and retrain.",
                      "Regularise the model or anonymize its training data.",
                      "Regularise the model, or anonymize its training data."]) == [
        "Set min_samples_leaf=5 or more and retrain.",
        "Regularise the model or anonymize its training data."]


def test_blocking_reasons_come_first_and_cite_sources():
    facts = {"family": "generic", "params": {},
             "measures": _measures({"auc": 0.9, "share": 0.5, "gap": 0.0})}
    verdict = decide(evaluate_rules(RS, facts))
    assert [r["rule_id"] for r in verdict.reasons] == ["b", "c"]
    assert all(r["source"] == "test" and r["threshold"] for r in verdict.reasons)
    assert "auc = 0.9" in verdict.summary


# ------------------------------------------------------------------------ the whole run -------
TOKENS = [f"tok{i}zq{j}" for i, j in zip(range(6), "abcdef")]


@pytest.fixture(scope="module")
def table():
    """Training data with values that appear nowhere else: canary strings and floats with
    many digits, so any leak into a report can be found by text search."""
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({
        "age": np.round(rng.uniform(18, 90, n), 6) + 0.123457,
        "band": rng.choice(TOKENS, n),
        "score": np.round(rng.normal(1000, 50, n), 4) + 0.000731,
    })
    y = ((frame["age"] > 50) ^ (rng.random(n) < 0.2)).astype(int).to_numpy()
    return frame, frame, y


def _fit(model, X, y):
    """``model`` behind an ordinal encoder of the text column (a pipeline, as deployed)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    enc = ColumnTransformer([("band", OrdinalEncoder(handle_unknown="use_encoded_value",
                                                     unknown_value=-1), ["band"])],
                            remainder="passthrough")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("encode", enc), ("model", model)]).fit(X, y)


@pytest.fixture(scope="module")
def overfit(table):
    _, X, y = table
    model = _fit(SafeDecisionTreeClassifier(random_state=0), X[:300], y[:300])
    return request_release(Target(model, X[:300], y[:300], X[300:], y[300:]),
                           target_name="y", dataset_name="canary", random_state=0)


@pytest.fixture(scope="module")
def regular(table):
    _, X, y = table
    model = _fit(SafeLogisticRegression(max_iter=500), X[:300], y[:300])
    return request_release(Target(model, X[:300], y[:300], X[300:], y[300:]), random_state=0)


def test_overfit_tree_is_not_released(overfit):
    assert overfit.decision == "do_not_release"
    failed = {o.rule.id for o in overfit.outcomes if o.outcome == "fail"}
    assert {"dt-min-samples-leaf", "structure-leaf-size", "performance-gap"} <= failed
    assert overfit.measures["membership.max_auc"] > 0.6
    assert overfit.report["verdict"]["decision"] == "do_not_release"


def test_regularised_model_passes_the_blocking_rules(regular):
    blocked = [o.rule.id for o in regular.outcomes
               if o.outcome == "fail" and o.rule.effect == "block"]
    assert blocked == []
    assert regular.decision in ("release", "release_with_conditions")
    assert regular.measures["membership.max_auc"] < 0.6
    assert regular.measures["tamper.unchanged"] is True


def test_report_validates_and_holds_every_rule(overfit, regular):
    from anonml.report import validate

    for decision in (overfit, regular):
        validate(decision.report)
        assert [e["rule_id"] for e in decision.report["evidence"]] == RULES.ids()
        assert {a["id"] for a in decision.report["attacks"]} == {"worst_case", "rmia"}
        assert decision.report["attribute_risk"]
        assert decision.report["rules"]["sha256"] == RULES.sha256
        json.dumps(decision.report, allow_nan=False)


def _pdf_text(data: bytes) -> str:
    import io

    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def test_no_training_value_appears_in_any_report(overfit, table, tmp_path):
    pytest.importorskip("pypdf")
    frame, _, _ = table
    files = overfit.write(tmp_path)
    texts = {fmt: files[fmt].read_text("utf-8") for fmt in ("json", "html")}
    texts["pdf"] = _pdf_text(files["pdf"].read_bytes())
    values = set(TOKENS)
    for col in ("age", "score"):
        for v in frame[col].to_numpy()[:300]:
            values |= {repr(float(v)), f"{v:.4f}", f"{v:.6f}"}
    for fmt, text in texts.items():
        found = [v for v in values if v in text]
        assert not found, f"{fmt} report holds training values {found[:3]}"
    # the search does find what is there: column names are reported
    assert '"band"' in texts["json"] and "band" in texts["pdf"]


def test_probabilities_only_target(table):
    _, X, y = table
    model = _fit(LogisticRegression(max_iter=500), X[:300], y[:300])
    target = Target(None, None, y[:300], None, y[300:],
                    proba_train=model.predict_proba(X[:300]),
                    proba_test=model.predict_proba(X[300:]))
    d = request_release(target, random_state=0)
    states = {o.rule.id: o.outcome for o in d.outcomes}
    assert states["tamper-fingerprint"] == "not_evaluated"  # no model to look at
    assert states["structure-leaf-size"] == "not_applicable"  # family unknown: generic
    assert states["mia-auc"] == "pass" and states["attr-significant"] == "not_evaluated"
    assert d.decision == "release_with_conditions"
    assert [a["id"] for a in d.report["attacks"]] == ["worst_case"]


def test_anonymized_training_data_is_verified(table):
    from anonml import AccuracyGuidedAnonymizer

    frame, _, y = table
    qi = ["age", "score"]
    anon = AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi, random_state=0)
    X_train = anon.fit_transform(frame[:300], y[:300])
    X_test = frame[300:]
    model = _fit(SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0), X_train,
                 y[:300])
    target = Target(model, X_train, y[:300], X_test, y[300:])
    d = request_release(target, anonymization=anon, attacks=())
    assert d.measures["anonymization.verified"] is True
    assert d.measures["anonymization.k_achieved"] >= 20
    assert d.report["data"]["anonymization"]["quasi_identifiers"] == qi
    # a claim the data does not meet is caught from the table alone
    d2 = request_release(target, anonymization={"quasi_identifiers": qi + ["band"],
                                                "k": 50}, attacks=())
    assert d2.measures["anonymization.verified"] is False
    assert d2.decision == "do_not_release"


def test_bad_arguments(table):
    _, X, y = table
    model = _fit(SafeLogisticRegression(), X[:300], y[:300])
    target = Target(model, X[:300], y[:300], X[300:], y[300:])
    with pytest.raises(InputError, match="attack 'mia' is not known"):
        request_release(target, attacks=("mia",))
    with pytest.raises(InputError, match="Target"):
        request_release(model)
    with pytest.raises(InputError, match="not a column"):
        request_release(target, anonymization={"quasi_identifiers": ["zip"], "k": 5},
                        attacks=())


# ----------------------------------------------------------------------------- the CLI --------
@pytest.fixture(scope="module")
def files(tmp_path_factory, table):
    pytest.importorskip("skops")
    from anonml.safemodel import save_model

    frame, X, y = table
    d = tmp_path_factory.mktemp("audit")
    data = X.assign(y=y)
    data[:300].to_csv(d / "train.csv", index=False)
    data[300:].to_csv(d / "test.csv", index=False)
    save_model(_fit(SafeDecisionTreeClassifier(random_state=0), X[:300], y[:300]),
               d / "tree.skops")
    save_model(_fit(DecisionTreeClassifier(random_state=0), X[:300], y[:300]),
               d / "tree.joblib")
    model = _fit(LogisticRegression(max_iter=500), X[:300], y[:300])
    pd.DataFrame(model.predict_proba(X[:300])).to_csv(d / "p_train.csv", index=False)
    pd.DataFrame(model.predict_proba(X[300:])).to_csv(d / "p_test.csv", index=False)
    return d


def _audit(files, *args):
    from anonml.cli import main

    return main(["audit", "--train", str(files / "train.csv"), "--test",
                 str(files / "test.csv"), "--target", "y", *args])


def test_cli_audit_writes_three_reports(files, tmp_path, capsys):
    out = tmp_path / "report"
    code = _audit(files, "--model", str(files / "tree.skops"), "-o", str(out),
                  "--attacks", "worst_case")
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith("VERDICT: DO NOT RELEASE")
    assert "worst-case membership attack" in captured.err  # the progress display
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.pdf"]
    report = json.loads((out / "report.json").read_text())
    assert report["model"]["file"]["name"] == "tree.skops"
    assert re.fullmatch(r"[0-9a-f]{64}", report["model"]["file"]["sha256"])
    assert _audit(files, "--model", str(files / "tree.skops"), "-o", str(out), "--attacks",
                  "none", "--fail-unless-release", "-q") == 3


def test_cli_audit_refuses_to_unpickle(files, tmp_path, capsys):
    out = tmp_path / "never"
    assert _audit(files, "--model", str(files / "tree.joblib"), "-o", str(out)) == 1
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("anonml:")]
    assert len(errors) == 1 and "--trust-model" in errors[0]
    assert not out.exists()
    assert _audit(files, "--model", str(files / "tree.joblib"), "--trust-model", "-o",
                  str(out), "--attacks", "none", "--formats", "json", "-q") == 0
    assert [p.name for p in out.iterdir()] == ["report.json"]


def test_cli_audit_black_box(files, tmp_path, capsys):
    out = tmp_path / "bb"
    code = _audit(files, "--train-proba", str(files / "p_train.csv"), "--test-proba",
                  str(files / "p_test.csv"), "-o", str(out), "--json", "-q")
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == "release_with_conditions"


def test_cli_rules_and_bad_rules_file(files, tmp_path, capsys):
    from anonml.cli import main

    path = tmp_path / "tre.toml"
    assert main(["rules", "init", str(path)]) == 0
    assert main(["rules", "check", str(path)]) == 0
    from anonml.safemodel import default_rules

    assert f"{len(default_rules())} valid rules" in capsys.readouterr().out
    assert main(["rules", "init", str(path)]) == 1
    assert "exists" in capsys.readouterr().err
    path.write_text(path.read_text().replace('effect = "block"', 'effect = "maybe"', 1))
    out = tmp_path / "never"
    assert _audit(files, "--model", str(files / "tree.skops"), "--rules", str(path), "-o",
                  str(out)) == 1
    err = capsys.readouterr().err.strip()
    assert "rule 'dt-min-samples-leaf'" in err and "effect 'maybe'" in err
    assert len(err.splitlines()) == 1 and not out.exists()
