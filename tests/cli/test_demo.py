"""`anonml demo`, the main job, end to end (about 10 s)."""

from __future__ import annotations

import json

import pandas as pd

from anonml.cli import main
from anonml.privacy import k_anonymity


def test_demo_writes_verified_table_and_summary(demo_json_run):
    code, stdout, out_dir = demo_json_run  # `anonml demo -o <folder> --json -q`
    assert code == 0
    printed = json.loads(stdout)
    saved = json.loads((out_dir / "summary.json").read_text())
    assert printed == saved
    assert saved["k"] == 100 and saved["n_quasi_identifiers"] == 12
    assert saved["min_class_size"] >= 100
    # the paper's NN on Adult reaches about 0.85; anonymization at k=100 costs little
    assert 0.80 < saved["accuracy_before"] < 0.90
    assert saved["accuracy_before"] - saved["accuracy_after"] < 0.03
    # the network is fitted first (seconds), then predicts (a fraction of a second): each
    # has its own figure, and seconds_predict is not the fit time
    assert saved["seconds_fit_original"] > saved["seconds_predict"] >= 0
    table = pd.read_csv(out_dir / "adult_anonymized.csv")
    assert len(table) == 32_561
    assert k_anonymity(table, saved["quasi_identifiers"]) >= 100
    assert sorted(p.name for p in out_dir.iterdir()) == ["adult_anonymized.csv", "summary.json"]
    # no records in the summary: only numbers and column names
    assert all(not isinstance(v, (list, dict)) or k == "quasi_identifiers" for k, v in saved.items())


def test_demo_human_output(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path), "--k", "500", "-q"]) == 0
    text = capsys.readouterr().out
    assert "baseline test accuracy" in text and "smallest class (verified)" in text
