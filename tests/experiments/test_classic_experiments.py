"""The classic-vs-AG and SaNGreeA experiments run end to end on a slice of the data."""

from __future__ import annotations

import pandas as pd
import pytest

from anonml.experiments import classic_accuracy as ca
from anonml.experiments.__main__ import main


@pytest.fixture(scope="module")
def fig2_small():
    return ca.run(["fig2"], ks=[50], seeds=[0], n_jobs=1, n_train=1000)


def test_fig2_rows_cover_every_method_and_qi_set(fig2_small):
    r = fig2_small
    methods = set(r.method)
    assert methods == {"baseline", "ag", "mondrian", "rtree", "hilbert"}
    assert set(r.qi_set) == {"8", "10", "12"}
    anon = r[r.method != "baseline"]
    assert (anon.min_class_size >= 50).all()
    assert anon.accuracy.between(0.5, 1.0).all() and anon.accuracy_mapped.between(0.5, 1.0).all()
    # information loss is a share in [0, 1], and anonymization at k = 50 loses some
    assert anon.gcp.between(0.0, 1.0).all() and (anon.gcp > 0).all()


def test_summary_and_files(fig2_small, tmp_path):
    s = ca.summarize(fig2_small)
    row = s[(s.method == "ag") & (s.qi_set == "12")].iloc[0]
    base = fig2_small[(fig2_small.method == "baseline") & (fig2_small.qi_set == "12")].accuracy.iloc[0]
    assert row.loss_mean == pytest.approx(100 * (base - row.accuracy_mean))
    paths = ca.write_outputs(fig2_small, tmp_path, "t")
    assert {"raw", "summary", "markdown", "plot"} <= set(paths)
    assert "Median Mondrian" in paths["markdown"].read_text()
    assert pd.read_csv(paths["raw"]).shape[0] == fig2_small.shape[0]


def test_fig5_compares_predictions_with_labels():
    r = ca.run(["fig5"], ks=[100], seeds=[0], n_jobs=1, n_train=800)
    assert set(r.method) == {"baseline", "ag", "workload", "infogain"}
    assert set(r.dataset) == {"adult", "loan"}


def test_unknown_figure_is_a_clear_error(capsys):
    assert main(["classic-accuracy", "--figures", "fig9", "--out", "/nonexistent"]) == 1
    assert "unknown figure 'fig9'" in capsys.readouterr().err
