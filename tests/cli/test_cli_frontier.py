"""``anonml frontier``: files written as a set, the one-line recommendation, bad input."""

from __future__ import annotations

import json

import pytest

from anonml.cli import main
from anonml.datasets import load_adult

FAST = ["--n-reference", "2", "--methods", "mondrian", "--k", "10", "40", "--no-dp"]
FILES = ["frontier.csv", "frontier.html", "frontier.json", "frontier.png"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = load_adult()
    f = d.frame
    folder = tmp_path_factory.mktemp("frontier_cli")
    f[d.split == "train"].sample(500, random_state=2).to_csv(folder / "train.csv", index=False)
    test = f[d.split == "test"].sample(300, random_state=2)
    test.to_csv(folder / "test.csv", index=False)
    test.drop(columns="income").to_csv(folder / "test_no_target.csv", index=False)
    return folder


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def base(tables, out, test="test.csv"):
    return ["frontier", "--train", tables / "train.csv", "--test", tables / test,
            "--target", "income", "--qi", "age", "sex,race", "education-num",
            "--estimator", "logistic_regression", "--out", out, "-q"]


def one_line_error(code, out, err, *needles):
    assert code == 1, (out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("anonml: error: "), err
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture(scope="module")
def finished(tables, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "nested" / "fr"
    import contextlib
    import io

    buf, err = io.StringIO(), io.StringIO()
    argv = [a for a in base(tables, out) if a != "-q"] + FAST + ["--accuracy-budget", "0.05"]
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, buf.getvalue(), out, err.getvalue()


def test_writes_the_four_files_and_one_recommendation(finished):
    code, out, folder, _ = finished
    assert code == 0
    assert sorted(p.name for p in folder.iterdir()) == FILES
    lines = out.strip().splitlines()
    assert lines[-1].startswith(("recommended: mondrian k=", "recommended: the undefended"))
    assert "RMIA AUC" in lines[-1]
    doc = json.loads((folder / "frontier.json").read_text())
    assert [p["method"] for p in doc["points"]] == ["none", "mondrian", "mondrian"]
    assert doc["settings"]["n_train"] == 500
    assert "data:image/png;base64," in (folder / "frontier.html").read_text()
    rec = doc["recommendation"]
    assert rec["met"] is True and rec["line"] == lines[-1]
    assert rec["budgets"]["accuracy_loss"] == 0.05 and rec["rule"]
    assert rec["point"]["method"] in ("mondrian", "none")
    p = doc["points"][1]
    assert p["accuracy_lo"] <= p["accuracy"] <= p["accuracy_hi"]
    assert p["attack_auc_lo"] <= p["attack_auc"] <= p["attack_auc_hi"]
    assert doc["settings"]["bootstrap"] == 200


def test_progress_names_point_method_k_and_step(finished):
    err = finished[3]  # not a terminal: one line per point and step
    assert "point 1/3: undefended: fit" in err
    assert "point 2/3: mondrian k=10: anonymize" in err
    assert "point 3/3: mondrian k=40: worst-case attack" in err


def test_test_table_without_target(tables, tmp_path, capsys):
    out = tmp_path / "o"
    one_line_error(*run(base(tables, out, "test_no_target.csv") + FAST, capsys),
                   "has no column 'income' (the target)")
    assert not out.exists()


def test_k_above_n(tables, tmp_path, capsys):
    out = tmp_path / "o"
    argv = base(tables, out) + ["--methods", "ag", "--k", "10", "900"]
    one_line_error(*run(argv, capsys), "k=900 is above the 500 training rows")
    assert not out.exists()


def test_empty_and_unknown_methods(tables, tmp_path, capsys):
    out = tmp_path / "o"
    one_line_error(*run(base(tables, out) + ["--methods", ","], capsys), "--methods is empty")
    one_line_error(*run(base(tables, out) + ["--methods", "kmeans"], capsys),
                   "method 'kmeans' is not known")
    assert not out.exists()


def test_budget_no_point_meets_keeps_the_work(tables, tmp_path, capsys):
    """The sweep is not thrown away: the four files, the nearest point marked, the budget
    stated; then one line and exit 1."""
    out = tmp_path / "o"
    argv = base(tables, out) + FAST + ["--risk-budget", "auc=0.01", "--bootstrap", "20"]
    one_line_error(*run(argv, capsys), "no point meets attack AUC <= 0.01; the closest is "
                   "mondrian k=", f"the table, plot and page are in {out}", "fix: relax")
    assert sorted(p.name for p in out.iterdir()) == FILES
    doc = json.loads((out / "frontier.json").read_text())
    rec = doc["recommendation"]
    assert rec["met"] is False and rec["budgets"]["auc"] == 0.01
    assert rec["nearest"]["method"] == "mondrian" and rec["nearest"]["k"] in (10, 40)
    page = (out / "frontier.html").read_text()
    assert "No point meets the budgets" in page and "attack AUC &lt;= 0.01" in page


def test_tpr_budget_the_test_set_cannot_measure_is_refused_before_work(tables, tmp_path,
                                                                        capsys, monkeypatch):
    import anonml

    monkeypatch.setattr(anonml, "frontier", lambda *a, **k: pytest.fail("the sweep ran"))
    out = tmp_path / "o"
    argv = base(tables, out) + FAST + ["--risk-budget", "tpr=0.01"]
    one_line_error(*run(argv, capsys), "--risk-budget tpr=0.01 cannot be measured",
                   "needs at least 1,000 non-members", "evaluates 300 (300 --test rows",
                   "a --test table of at least 1,000 rows")
    assert not out.exists()


def test_bad_bootstrap_before_work(tables, tmp_path, capsys):
    out = tmp_path / "o"
    one_line_error(*run(base(tables, out) + FAST + ["--bootstrap", "5"], capsys),
                   "--bootstrap 5 must be 0 (no intervals) or at least 20", "--bootstrap 200")
    assert not out.exists()


def test_bad_risk_budget_before_work(tables, tmp_path, capsys):
    one_line_error(*run(base(tables, tmp_path / "o") + ["--risk-budget", "auc=high"], capsys),
                   "--risk-budget 'auc=high'")


def test_output_is_a_file(tables, tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("keep")
    one_line_error(*run(base(tables, f), capsys), "is a file")
    assert f.read_text() == "keep"


def test_model_and_estimator_both(tables, tmp_path, capsys):
    with pytest.raises(SystemExit):  # argparse: mutually exclusive
        main([str(a) for a in base(tables, tmp_path / "o") + ["--model", "m.skops"]])
    capsys.readouterr()


def test_missing_model_file(tables, tmp_path, capsys):
    argv = [a for a in base(tables, tmp_path / "o") if a not in ("--estimator",
                                                                   "logistic_regression")]
    one_line_error(*run(argv + ["--model", tmp_path / "nope.skops"], capsys), "--model")


def test_choices_match_the_library():
    from anonml.cli import frontier as _cli_frontier
    from anonml._frontier import METHODS
    from anonml._frontier._estimators import ESTIMATORS

    assert _cli_frontier.ESTIMATORS == ESTIMATORS
    assert _cli_frontier.METHODS == tuple(METHODS)
