"""The command-line interface, end to end on small files, and every error case."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from anonml.cli import main
from anonml.privacy import k_anonymity

QI = ["age", "sex", "race", "education-num", "workclass"]


# adult_small and csv_in: tests/cli/conftest.py


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *needles):
    assert code == 1
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("anonml: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_anonymize_with_labels_csv(tmp_path, csv_in, adult_small, capsys):
    out = tmp_path / "anon.csv"
    code, stdout, _ = run(["anonymize", csv_in, "--k", 20, "--qi", ",".join(QI), "--target",
                           "income", "--labels", "-o", out, "--json"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert summary["smallest_class_verified"] >= 20
    result = pd.read_csv(out)
    assert list(result.columns) == list(adult_small.columns)
    assert len(result) == len(adult_small)
    assert k_anonymity(result, QI) >= 20
    non_qi = [c for c in adult_small.columns if c not in QI]
    pd.testing.assert_frame_equal(result[non_qi], pd.read_csv(csv_in)[non_qi])


def test_anonymize_with_predictions_parquet(tmp_path, csv_in, adult_small, capsys):
    pytest.importorskip("pyarrow")
    preds = tmp_path / "preds.csv"
    pd.DataFrame({"prediction": (adult_small["age"] > 40).astype(int)}).to_csv(preds, index=False)
    out = tmp_path / "anon.parquet"
    code, stdout, _ = run(["anonymize", csv_in, "--k", 30, "--qi", "age,sex", "--target", "income",
                           "--predictions", preds, "-o", out], capsys)
    assert code == 0
    assert "smallest_class_verified" in stdout
    assert k_anonymity(pd.read_parquet(out), ["age", "sex"]) >= 30


def test_anonymize_with_trusted_model(tmp_path, csv_in, adult_small, capsys):
    X = adult_small[["age", "education-num", "hours-per-week"]]
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, adult_small["income"])
    model_path = tmp_path / "model.pkl"
    model_path.write_bytes(pickle.dumps(model))
    small = tmp_path / "small.csv"
    adult_small[["age", "education-num", "hours-per-week", "income"]].to_csv(small, index=False)
    out = tmp_path / "anon.csv"
    code, _, _ = run(["anonymize", small, "--k", 25, "--qi", "age,education-num", "--target",
                      "income", "--model", model_path, "--trust-model", "-o", out, "-q"], capsys)
    assert code == 0
    assert k_anonymity(pd.read_csv(out), ["age", "education-num"]) >= 25


def test_model_needs_explicit_trust(tmp_path, csv_in, capsys):
    model_path = tmp_path / "model.pkl"
    model_path.write_bytes(pickle.dumps(DecisionTreeClassifier()))
    out = tmp_path / "anon.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "age", "--target", "income",
                        "--model", model_path, "-o", out], capsys)
    assert_one_line_error(code, err, "--trust-model")
    assert not out.exists()


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--k", "10", "--qi", "zip", "--target", "income", "--labels"], ["'zip'", "not a column"]),
        (["--k", "1", "--qi", "age", "--target", "income", "--labels"],
         ["--k 1 must be an integer >= 2", "e.g. --k 10"]),
        (["--k", "100000", "--qi", "age", "--target", "income", "--labels"], ["--k 100000", "600"]),
        (["--k", "10", "--qi", "age", "--target", "nope", "--labels"], ["'nope'"]),
        (["--k", "10", "--qi", "age", "--labels"], ["--target"]),
        (["--k", "10", "--qi", "age,income", "--target", "income", "--labels"], ["'income'", "--qi"]),
        (["--k", "10", "--qi", " , ", "--target", "income", "--labels"], ["--qi"]),
    ],
)
def test_bad_arguments_one_line_and_nothing_written(tmp_path, csv_in, capsys, extra, needles):
    out = tmp_path / "anon.csv"
    code, _, err = run(["anonymize", csv_in, *extra, "-o", out], capsys)
    assert_one_line_error(code, err, *needles)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [csv_in]  # no temporary files left either


def test_predictions_of_wrong_length(tmp_path, csv_in, capsys):
    preds = tmp_path / "preds.npy"
    np.save(preds, np.zeros(10, dtype=int))
    out = tmp_path / "anon.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "age", "--target", "income",
                        "--predictions", preds, "-o", out], capsys)
    assert_one_line_error(code, err, "10", "600")
    assert not out.exists()


def test_nan_in_numeric_qi(tmp_path, adult_small, capsys):
    bad = adult_small.copy()
    bad.loc[3, "age"] = np.nan
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    out = tmp_path / "anon.csv"
    code, _, err = run(["anonymize", path, "--k", 10, "--qi", "age,sex", "--target", "income",
                        "--labels", "-o", out], capsys)
    assert_one_line_error(code, err, "'age'", "missing")
    assert not out.exists()


def test_missing_input_and_bad_output_name(tmp_path, csv_in, capsys):
    code, _, err = run(["anonymize", tmp_path / "nope.csv", "--k", 10, "--qi", "age", "--target",
                        "income", "--labels", "-o", tmp_path / "a.csv"], capsys)
    assert_one_line_error(code, err, "nope.csv", "does not exist")
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "age", "--target", "income",
                        "--labels", "-o", tmp_path / "a.xlsx"], capsys)
    assert_one_line_error(code, err, "a.xlsx", ".csv")
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "age", "--target", "income",
                        "--labels", "-o", tmp_path / "missing_dir" / "a.csv"], capsys)
    assert_one_line_error(code, err, "missing_dir")


def test_existing_output_untouched_on_error(tmp_path, csv_in, capsys):
    out = tmp_path / "anon.csv"
    out.write_text("precious\n")
    code, _, err = run(["anonymize", csv_in, "--k", 10, "--qi", "zip", "--target", "income",
                        "--labels", "-o", out], capsys)
    assert code == 1
    assert out.read_text() == "precious\n"


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["anonymize", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "--trust-model" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "anonymize" in capsys.readouterr().err


def test_features_all_never_reads_the_target(tmp_path, csv_in, adult_small, capsys):
    out = tmp_path / "anon.csv"
    code, _, _ = run(["anonymize", csv_in, "--k", 20, "--qi", "age,sex", "--target", "income",
                      "--labels", "--features", "all", "--refine", "none", "-o", out, "-q"], capsys)
    assert code == 0
    result = pd.read_csv(out)
    assert list(result.columns) == list(adult_small.columns)
    assert (result["income"] == adult_small["income"]).all()
    assert k_anonymity(result, ["age", "sex"]) >= 20


def test_outputs_get_the_usual_file_mode(tmp_path, csv_in, capsys):
    import os
    import stat

    out = tmp_path / "anon.csv"
    assert run(["anonymize", csv_in, "--k", 20, "--qi", "age", "--target", "income", "--labels",
                "-o", out, "-q"], capsys)[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_anonymize_recodes_its_own_table_in_place(tmp_path, csv_in, capsys, monkeypatch):
    """The command recodes the table it read in place (copy=False): the file it writes and the
    information loss it reports (measured on the original values, before the write) are those
    of the default copy=True API; the mapping it saves returns new tables (copy=True)."""
    import io

    import anonml.safemodel
    from anonml import AccuracyGuidedAnonymizer
    from anonml.anonymize import summarize

    saved = []
    monkeypatch.setattr(anonml.safemodel, "save_model", lambda est, path: saved.append(est))
    out = tmp_path / "anon.csv"
    code, stdout, _ = run(["anonymize", csv_in, "--k", 20, "--qi", ",".join(QI), "--target",
                           "income", "--labels", "--sensitive", "income", "--l", 2, "-o", out,
                           "--save-mapping", tmp_path / "map.skops", "--json"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    raw = pd.read_csv(csv_in)
    X, y = raw.drop(columns="income"), raw["income"]
    ag = AccuracyGuidedAnonymizer(k=20, quasi_identifiers=QI, sensitive="income", l=2,
                                  random_state=0)
    expected = ag.fit_transform(X, y, sensitive_values=y)
    expected.insert(list(raw.columns).index("income"), "income", y)
    pd.testing.assert_frame_equal(pd.read_csv(out),
                                  pd.read_csv(io.StringIO(expected.to_csv(index=False))))
    for key, value in summarize(ag, X).items():
        assert summary[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    assert len(saved) == 1 and saved[0].get_params()["copy"] is True
