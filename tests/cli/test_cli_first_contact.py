"""What a newcomer met on data of their own (issue 23): the label as the sensitive attribute,
hints in the command line's words, column lists that say how many were left out."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from anonml import AccuracyGuidedAnonymizer, MondrianAnonymizer
from anonml.cli._words import cli_words
from anonml._errors import InputError, names_list
from anonml.cli import main
from anonml.privacy import l_diversity

QI = ["age", "sex", "race"]


# adult_small and csv_in: tests/cli/conftest.py


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code, err):
    assert code == 1
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("anonml: error:")]
    assert len(lines) == 1, err
    return lines[0]


# -- the label as the sensitive attribute ---------------------------------------------------
@pytest.mark.parametrize("guide", [["--labels"], ["--method", "mondrian"]])
def test_cli_label_is_the_sensitive_attribute(tmp_path, csv_in, capsys, guide):
    out = tmp_path / "anon.csv"
    code, stdout, err = run(["anonymize", csv_in, "--k", 10, "--qi", ",".join(QI), "--target",
                             "income", *guide, "--sensitive", "income", "--l", 2, "-o", out,
                             "-q"], capsys)
    assert code == 0, err
    assert "l_verified: 2.0000" in stdout
    table = pd.read_csv(out)
    assert l_diversity(table, QI, "income") >= 2  # the released table, measured again


def test_cli_label_sensitive_mapping_saves_and_maps(tmp_path, csv_in, capsys):
    mapping, out = tmp_path / "m.skops", tmp_path / "anon.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", ",".join(QI), "--target",
                        "income", "--labels", "--sensitive", "income", "--l", 2, "-o", out,
                        "--save-mapping", mapping, "-q"], capsys)
    assert code == 0, err
    code, _, err = run(["transform", csv_in, "--drop", "income", "--mapping", mapping, "-o",
                        tmp_path / "new.csv", "-q"], capsys)
    assert code == 0, err  # the file's claim on a label is not refused at read


def test_cli_unknown_sensitive_lists_columns_and_how_many_more(tmp_path, csv_in, capsys):
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", ",".join(QI), "--target",
                        "income", "--labels", "--sensitive", "incme", "--l", 2, "-o",
                        tmp_path / "a.csv"], capsys)
    line = one_error_line(code, err)
    assert "--sensitive 'incme' is not a column" in line and "... and 1 more" in line
    assert "income" not in line.split("columns are:")[1]  # the 13th, cut and counted


def test_api_label_as_sensitive_by_name_or_values(adult_small):
    X, y = adult_small.drop(columns="income"), adult_small["income"]
    ag = AccuracyGuidedAnonymizer(k=10, quasi_identifiers=QI, sensitive="income", l=2)
    out = ag.fit_transform(X, y)  # y is a Series named "income"
    assert ag.privacy_["l"] >= 2
    assert l_diversity(out.assign(income=y), QI, "income") >= 2
    # guided by a model's predictions: the true labels given aside
    pred = LogisticRegression(max_iter=200).fit(X[["age"]], y).predict(X[["age"]])
    out = ag.fit_transform(X, pred, sensitive_values=y.to_numpy())
    assert l_diversity(out.assign(income=y), QI, "income") >= 2
    with pytest.raises(InputError, match="nor the label y.*sensitive_values") as err:
        ag.fit(X, pred)  # no name, no values: refused, saying how
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="sensitive_values are given but"):
        MondrianAnonymizer(k=10, quasi_identifiers=QI, sensitive="occupation", l=2).fit(
            X, y, sensitive_values=y)


def test_measure_mapping_reads_l_of_the_label(adult_small):
    from anonml.anonymize._model import release_copy
    from anonml.modelfile._mapping import measure_mapping

    X, y = adult_small.drop(columns="income"), adult_small["income"]
    m = MondrianAnonymizer(k=10, quasi_identifiers=QI, sensitive="income", l=2).fit(X, y)
    copy = release_copy(m)
    assert measure_mapping(copy, X)["privacy"]["l"]["measured"] is None  # no labels: said
    got = measure_mapping(copy, X, labels=y)["privacy"]["l"]
    assert got["measured"] == pytest.approx(m.privacy_["l"]) and got["classes_failing"] == 0


def test_frontier_accepts_the_label_and_names_files(tmp_path, adult_small, capsys):
    from anonml import frontier
    from anonml._frontier._sweep import AnonymizeThenFit

    X, y = adult_small.drop(columns="income"), adult_small["income"]
    # the label passes the checks made before the work (the next check stops the sweep)
    with pytest.raises(InputError, match="attack='bogus'"):
        frontier(X, y, X, y, quasi_identifiers=QI, estimator="logistic_regression",
                 methods=["mondrian"], ks=[10], sensitive="income", l=2, attack="bogus")
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]), remainder="passthrough"),
        LogisticRegression(max_iter=200))
    est = AnonymizeThenFit(MondrianAnonymizer(k=10, quasi_identifiers=QI, sensitive="income",
                                              l=2), model)
    est.fit(X[["age", "sex", "race", "hours-per-week"]], y.to_numpy())
    assert est.predict(X[["age", "sex", "race", "hours-per-week"]]).shape == (len(X),)
    train = tmp_path / "train.csv"
    adult_small.to_csv(train, index=False)
    code, _, err = run(["frontier", "--train", train, "--test", train, "--target", "income",
                          "--qi", *QI, "--estimator", "logistic_regression", "--sensitive",
                          "nope", "--l", 2, "--out", tmp_path / "f", "-q"], capsys)
    line = one_error_line(code, err)
    assert "X_train" not in line and f"--train {str(train)!r}" in line
    assert "--sensitive nope is neither a column" in line


# -- hints in the command line's words --------------------------------------------------------
def test_cli_words_maps_parameters_to_flags():
    a = argparse.Namespace(command="audit", train="tr.csv", test="te.csv", target="num")
    assert cli_words("impute them first, or list it in categorical_features", a).endswith(
        "or list it in --categorical")
    assert cli_words("pass handle_unknown='ignore' to route it", a) == \
        "pass --handle-unknown ignore to route it"
    assert cli_words("X_train has 3 rows; X_train.csv; my_X_train", a) == \
        "--train 'tr.csv' has 3 rows; X_train.csv; my_X_train"
    # audit: a k in a message is the file's own, not the --k flag
    assert cli_words("its k=10000", a) == "its k=10000"
    anon = argparse.Namespace(command="anonymize", input="in.csv")
    assert cli_words("k=1 is too small (e.g. k=10); kept as is", anon) == \
        "--k 1 is too small (e.g. --k 10); kept as is"
    assert "the input 'in.csv' has no rows" in cli_words(
        "X has no rows", argparse.Namespace(command="anonymize", input="in.csv"))


def test_names_list_says_how_many_more():
    assert names_list(range(3)) == "0, 1, 2"
    assert names_list(range(20)) == ", ".join(map(str, range(12))) + " ... and 8 more"


# -- an audit on data with missing values -----------------------------------------------------
def _with_missing(adult_small):
    f = adult_small[["age", "hours-per-week", "workclass", "sex", "income"]].copy()
    rng = np.random.default_rng(0)
    f.loc[rng.random(len(f)) < 0.1, "age"] = np.nan
    f.loc[rng.random(len(f)) < 0.1, "workclass"] = np.nan
    return f.iloc[:400].reset_index(drop=True), f.iloc[400:].reset_index(drop=True)


def _imputing_model(X, y):
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    return make_pipeline(make_column_transformer(
        (SimpleImputer(strategy="median"), ["age", "hours-per-week"]),
        (make_pipeline(SimpleImputer(strategy="most_frequent"),
                       OneHotEncoder(handle_unknown="ignore")), ["workclass", "sex"])),
        DecisionTreeClassifier(min_samples_leaf=20, random_state=0)).fit(X, y)


def test_audit_of_an_imputing_model_attacks_missing_values(adult_small, tmp_path, capsys):
    from anonml.safemodel import save_model

    tr, te = _with_missing(adult_small)
    model = _imputing_model(tr.drop(columns="income"), tr["income"])
    save_model(model, tmp_path / "m.skops")
    tr.to_csv(tmp_path / "tr.csv", index=False)
    te.to_csv(tmp_path / "te.csv", index=False)
    code, _, err = run(["audit", "--model", tmp_path / "m.skops", "--train",
                          tmp_path / "tr.csv", "--test", tmp_path / "te.csv", "--target",
                          "income", "--attacks", "attribute", "--formats", "json", "-o",
                          tmp_path / "rep", "-q"], capsys)
    assert code == 0, err
    import json

    rows = json.loads((tmp_path / "rep" / "report.json").read_text())["attribute_risk"]
    assert [r["feature"] for r in rows] == ["age", "hours-per-week", "workclass", "sex"]


def test_audit_checks_the_attribute_features_before_the_attacks(adult_small, tmp_path):
    from anonml.attacks import Target
    from anonml.safemodel import request_release

    tr, te = _with_missing(adult_small)
    X, y = tr.drop(columns="income"), tr["income"]
    said = []
    target = Target(_imputing_model(X, y), X, y, te.drop(columns="income"), te["income"])
    with pytest.raises(InputError, match="'nope'"):
        request_release(target, attacks=("worst_case", "attribute"),
                        categorical_features=["nope"],
                        progress=lambda stage, done, total: said.append(stage))
    assert not any("membership" in s for s in said)  # refused before the long work


def test_cli_audit_bad_categorical_before_the_model_is_read(adult_small, tmp_path, capsys):
    tr, te = _with_missing(adult_small)
    tr.to_csv(tmp_path / "tr.csv", index=False)
    te.to_csv(tmp_path / "te.csv", index=False)
    (tmp_path / "m.skops").write_bytes(b"not read")
    code, _, err = run(["audit", "--model", tmp_path / "m.skops", "--train",
                        tmp_path / "tr.csv", "--test", tmp_path / "te.csv", "--target",
                        "income", "--categorical", "wrkclass", "-o", tmp_path / "rep"], capsys)
    line = one_error_line(code, err)
    assert "--categorical 'wrkclass' is not a column" in line
    assert "reading the model" not in err


# -- --qi and the other column lists: one definition, both forms, every command -------------
def test_qi_space_and_comma_separated_give_the_same_table(tmp_path, csv_in, capsys):
    outs = []
    for i, qi in enumerate((["age", "sex", "race"], ["age,sex", "race"], ["age,sex,race"])):
        out = tmp_path / f"a{i}.csv"
        code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", *qi, "--target", "income",
                            "--labels", "--drop", "capital-loss", "capital-gain", "-o", out, "-q"],
                           capsys)
        assert code == 0, err
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    pd.testing.assert_frame_equal(outs[0], outs[2])
    assert "capital-loss" not in outs[0].columns and "capital-gain" not in outs[0].columns


def test_every_column_list_option_is_the_shared_one():
    from anonml.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    seen = 0
    for name, command in sub.choices.items():
        for action in command._actions:
            if set(action.option_strings) & {"--qi", "--drop", "--keep", "--categorical",
                                             "--anonymized-qi"}:
                assert action.nargs == "+", (name, action.option_strings)
                assert "space- or comma-separated" in action.help, (name, action.help)
                seen += 1
    assert seen >= 9  # anonymize 4, transform 2, frontier 2, audit 2


# -- a tiny --t that collapses the table ------------------------------------------------------
def test_tiny_t_collapsing_the_table_says_so(tmp_path, csv_in, capsys):
    import json

    out = tmp_path / "anon.csv"
    code, stdout, err = run(["anonymize", csv_in, "--k", 10, "--qi", *QI, "--target", "income",
                             "--labels", "--sensitive", "occupation", "--t", 0.001, "-o", out,
                             "-q", "--json"], capsys)
    assert code == 0 and out.exists()
    warnings = [ln for ln in err.splitlines() if ln.startswith("anonml: warning:")]
    assert len(warnings) == 1 and len(err.strip().splitlines()) == 1, err
    assert "leaves 1 group of 600 rows" in warnings[0] and "--t 0.2" in warnings[0]
    summary = json.loads(stdout)
    assert summary["groups"] == 1 and "leaves 1 group" in summary["warning"]
    # a t that leaves groups: no warning, no summary line
    code, stdout, err = run(["anonymize", csv_in, "--k", 10, "--qi", *QI, "--target", "income",
                             "--labels", "--sensitive", "occupation", "--t", 0.5, "-o", out,
                             "-q", "--json"], capsys)
    assert code == 0 and "warning" not in err and "warning" not in json.loads(stdout)


def test_api_warns_when_l_or_t_leaves_one_group(adult_small):
    from anonml._errors import AnonmlWarning

    X = adult_small.drop(columns="income")
    with pytest.warns(AnonmlWarning, match="leaves 1 group"):
        MondrianAnonymizer(k=10, quasi_identifiers=QI, sensitive="occupation", t=0.001).fit(X)


# -- a folder given to the in-memory engine ----------------------------------------------------
@pytest.mark.parametrize("given", ["folder", "glob"])
def test_folder_to_the_memory_engine_suggests_dask(tmp_path, capsys, given):
    (tmp_path / "data").mkdir()
    src = tmp_path / "data" if given == "folder" else f"{tmp_path}/data/*.parquet"
    code, _, err = run(["anonymize", src, "--k", 10, "--qi", "age", "--target", "y",
                        "--labels", "-o", tmp_path / "o.csv"], capsys)
    line = one_error_line(code, err)
    assert f"is a {given}" in line and "add --engine dask" in line
    assert not (tmp_path / "o.csv").exists()


# -- each command's help: its own examples, line breaks kept -----------------------------------
@pytest.mark.parametrize("command, example", [
    ("anonymize", "anonml anonymize adult.csv --method mondrian"),
    ("transform", "anonml transform new_rows.csv"),
    ("audit", "anonml audit --model release.skops"),
    ("demo", "anonml demo -o results/"),
    ("rules", "anonml rules check"),
    ("frontier", "anonml frontier --train"),
])
def test_each_command_shows_its_own_examples(capsys, command, example):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    examples = out.split("examples:", 1)[1]
    lines = examples.strip("\n").splitlines()
    assert any(ln.strip().startswith(example) for ln in lines), examples
    # only this command's examples, and a continued line is kept as two lines
    assert all(ln.startswith(("      ", f"  anonml {command}", "  anonml audit --rules"))
               for ln in lines), examples
    for i, ln in enumerate(lines[:-1]):
        if ln.endswith("\\"):
            assert lines[i + 1].startswith("      --") or lines[i + 1].startswith("      -o")


# -- the report -----------------------------------------------------------------------------------
def _verdict_of(*specs, values):
    from anonml.safemodel import evaluate_rules
    from anonml.safemodel._rules import rules_from_dict
    from anonml.safemodel._verdict import decide

    names = {"auc": "membership.max_auc", "share": "membership.worst_case.share_significant",
             "gap": "structure.generalisation_gap", "attr": "attribute.n_significant"}
    rules = []
    for rid, effect, measure, limit, condition in specs:
        rule = {"id": rid, "title": f"{rid} holds", "category": "membership", "effect": effect,
                "explanation": "e", "source": "test", "fix": f"fix {rid}", "required": True,
                "check": {"measure": names[measure], "max": limit}}
        if condition:
            rule["condition"] = condition
        rules.append(rule)
    rs = rules_from_dict({"schema": "anonml-rules/1", "name": "t", "version": "1",
                          "rule": rules})
    measures = {names[k]: v for k, v in values.items()}
    return decide(evaluate_rules(rs, {"family": "generic", "params": {}, "measures": measures}))


def test_verdict_one_condition_for_two_wordings_and_advisory_failures_counted():
    short = "Release only the predicted outcome (no probability scores), to named recipients."
    full = short[:-1] + "; the attack signal lives in the scores."
    v = _verdict_of(("a", "condition", "attr", 0, short), ("s", "condition", "share", 0.1, full),
                    ("w", "warn", "gap", 0.1, None), values={"attr": 2, "share": 0.5, "gap": 0.5})
    assert v.decision == "release_with_conditions"
    assert v.conditions == [full]  # one condition, the fuller wording
    # the warn rule failed: the summary counts it, so the count matches the failures listed
    assert "2 checks did not pass" in v.summary and "1 advisory check failed too" in v.summary
    v = _verdict_of(("b", "block", "auc", 0.65, None), ("w", "warn", "gap", 0.1, None),
                    values={"auc": 0.5, "gap": 0.5})
    assert v.decision == "release" and "1 advisory check failed too" in v.summary
    assert "All 1 checks" not in v.summary


def test_deprecated_placeholder_is_not_a_hyperparameter():
    from anonml.modelfile._family import model_params

    class Est(LogisticRegression):
        def __init__(self, C=1.0, criterion="deprecated"):
            super().__init__(C=C)
            self.criterion = criterion

    params = model_params(Est())
    assert "criterion" not in params and params["C"] == 1.0


def test_report_names_the_target_series_and_counts_the_whole_run(adult_small):
    import time

    from anonml.attacks import Target
    from anonml.safemodel import request_release

    tr, te = _with_missing(adult_small)
    X, y = tr.drop(columns="income"), tr["income"]
    target = Target(_imputing_model(X, y), X, y, te.drop(columns="income"), te["income"])
    d = request_release(target, attacks=(), started=time.perf_counter() - 100)
    assert d.report["data"]["target"] == "income"  # from the Series' name
    assert d.report["timings"]["total_seconds"] >= 100  # from when the run began


def test_cli_audit_says_not_measured_once(adult_small, tmp_path, capsys):
    from anonml.safemodel import save_model

    tr, te = _with_missing(adult_small)
    save_model(_imputing_model(tr.drop(columns="income"), tr["income"]), tmp_path / "m.skops")
    tr.to_csv(tmp_path / "tr.csv", index=False)
    te.to_csv(tmp_path / "te.csv", index=False)
    code, out, err = run(["audit", "--model", tmp_path / "m.skops", "--train",
                          tmp_path / "tr.csv", "--test", tmp_path / "te.csv", "--target",
                          "income", "--attacks", "none", "--formats", "json", "-o",
                          tmp_path / "rep", "-q"], capsys)
    assert code == 0, err
    assert "Not checked:" in out and "measured not measured" not in out


def test_pdf_cell_breaks_a_long_name_between_its_words():
    from fpdf import FPDF

    from anonml.report._pdf_blocks import _wrap_long_words

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 7.3)
    text = _wrap_long_words(pdf, "for example SafeRandomForestClassifier).", 29)
    assert "SafeRandomForest\nClassifier)." in text
    assert _wrap_long_words(pdf, "short words only", 29) == "short words only"


def test_cli_audit_bad_anonymized_qi_before_the_model_is_read(adult_small, tmp_path, capsys):
    tr, te = _with_missing(adult_small)
    tr.to_csv(tmp_path / "tr.csv", index=False)
    te.to_csv(tmp_path / "te.csv", index=False)
    (tmp_path / "m.skops").write_bytes(b"not read")
    code, _, err = run(["audit", "--model", tmp_path / "m.skops", "--train",
                        tmp_path / "tr.csv", "--test", tmp_path / "te.csv", "--target",
                        "income", "--anonymized-qi", "age", "zip", "--k", 5, "-o",
                        tmp_path / "rep"], capsys)
    line = one_error_line(code, err)
    assert "--anonymized-qi 'zip' is not a column" in line and "reading the model" not in err


class _InfModel:
    """Answers for any value, infinite ones included (as a model that clips its inputs)."""

    classes_ = np.array([0, 1])

    def predict_proba(self, X):
        c = np.nan_to_num(np.asarray(X["c"], dtype=float), posinf=0)
        p = np.where(np.abs(c - 5) < 1, 0.9, 0.3)
        return np.column_stack([1 - p, p])

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] > 0.5).astype(int)


def test_report_row_of_a_feature_not_attacked(tmp_path):
    import json

    from anonml.attacks import Target
    from anonml.safemodel import request_release

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.integers(0, 10, 300).astype(float),
                      "e": rng.normal(size=300)})
    X.loc[3, "e"] = np.inf
    y = rng.integers(0, 2, 300)
    d = request_release(Target(_InfModel(), X[:200], y[:200], X[200:], y[200:]),
                        attacks=("attribute",))
    paths = d.write(tmp_path / "rep", formats=("json",), create=True)  # schema-validated
    rows = {r["feature"]: r for r in json.loads(paths["json"].read_text())["attribute_risk"]}
    assert rows["e"]["arr"] is None and rows["e"]["train_rate"] is None
    assert "not attacked" in rows["e"]["note"] and "infinite" in rows["e"]["note"]
    assert rows["c"]["train_rate"] is not None


# -- a released mapping and categories it cannot name ---------------------------------------
def test_cli_released_mapping_says_it_routes_unseen_categories(tmp_path, csv_in, adult_small,
                                                                capsys):
    mapping, anon = tmp_path / "m.skops", tmp_path / "anon.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", ",".join(QI), "--target",
                        "income", "--labels", "-o", anon, "--save-mapping", mapping, "-q"],
                       capsys)
    assert code == 0, err
    new = adult_small.iloc[:5].drop(columns=["income"]).copy()
    new.loc[0, "race"] = "Martian"  # unseen in fit: the copy cannot name it, so cannot refuse it
    new_csv = tmp_path / "new.csv"
    new.to_csv(new_csv, index=False)
    for flag in ([], ["--handle-unknown", "error"]):
        out = tmp_path / f"out{len(flag)}.csv"
        code, _, err = run(["transform", new_csv, "--mapping", mapping, "-o", out, "-q",
                            *flag], capsys)
        assert code == 0, err  # by design: routed, not refused
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("anonml: warning: "), err
        assert "default branch" in lines[0] and "--handle-unknown ignore" in lines[0]
        assert "handle_unknown=" not in lines[0]  # the flag's words, not Python's
        assert len(pd.read_csv(out)) == 5
    code, _, err = run(["transform", new_csv, "--mapping", mapping, "-o", tmp_path / "o.csv",
                        "-q", "--handle-unknown", "ignore"], capsys)
    assert code == 0 and err.strip() == "", err


def test_release_copy_records_ignore_and_warns_when_set_to_error(adult_small):
    from anonml._errors import AnonmlWarning
    from anonml.anonymize._model import release_copy

    X, y = adult_small[QI], adult_small["income"]
    fitted = AccuracyGuidedAnonymizer(k=10, quasi_identifiers=QI).fit(X, y)
    new = X.iloc[:5].copy()
    new.loc[0, "race"] = "Martian"
    with pytest.raises(InputError, match="Martian"):
        fitted.transform(new)  # the fitted anonymizer has its categories: it refuses
    copy = release_copy(fitted)
    assert copy.handle_unknown == "ignore" and fitted.handle_unknown == "error"
    assert len(copy.transform(new)) == 5  # no warning: it says what it does
    copy.set_params(handle_unknown="error")
    with pytest.warns(AnonmlWarning, match="default branch"):
        copy.transform(new)


# -- the input after a column list (nargs="+" would take it as a column name) --------------
def test_input_after_qi_is_the_input(tmp_path, csv_in, capsys):
    a, b = tmp_path / "first.csv", tmp_path / "last.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--target", "income", "--labels",
                        "-o", a, "-q", "--qi", "age", "sex"], capsys)
    assert code == 0, err
    code, _, err = run(["anonymize", "--k", 10, "--target", "income", "--labels", "-o", b, "-q",
                        "--qi", "age", "sex", csv_in], capsys)
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_csv(a), pd.read_csv(b))
    # after --drop (the last column list) too
    code, _, err = run(["anonymize", "--k", 10, "--qi", "age", "sex", "--target", "income",
                        "--labels", "-o", tmp_path / "c.csv", "-q", "--drop", "capital-loss", csv_in],
                       capsys)
    assert code == 0, err
    assert "capital-loss" not in pd.read_csv(tmp_path / "c.csv").columns


def test_input_missing_is_one_line_naming_the_fix(tmp_path, csv_in, capsys):
    code, _, err = run(["anonymize", "--k", 10, "--qi", "age", "sex", "-o", tmp_path / "o.csv"],
                       capsys)
    line = one_error_line(code, err)
    assert "input table is missing" in line and "anonml anonymize INPUT" in line
    # ambiguous: only the input was given to --qi (no column left)
    code, _, err = run(["anonymize", "--k", 10, "--qi", csv_in, "-o", tmp_path / "o.csv"],
                       capsys)
    line = one_error_line(code, err)
    assert "--qi took" in line and "-- INPUT" in line
    assert not (tmp_path / "o.csv").exists()


def test_transform_input_after_drop(tmp_path, csv_in, capsys):
    mapping = tmp_path / "m.skops"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "age", "sex", "--target",
                        "income", "--labels", "-o", tmp_path / "a.csv", "-q",
                        "--save-mapping", mapping], capsys)
    assert code == 0, err
    code, _, err = run(["transform", "--mapping", mapping, "-o", tmp_path / "t.csv", "-q",
                        "--drop", "income", csv_in], capsys)
    assert code == 0, err
    assert "income" not in pd.read_csv(tmp_path / "t.csv").columns
