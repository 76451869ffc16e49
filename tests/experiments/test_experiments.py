"""The experiment runner on a small slice (the full runs are in docs/results, not in tests)."""

from __future__ import annotations

import pandas as pd
import pytest

from anonml._errors import InputError
from anonml.experiments import paper_accuracy


def test_paper_accuracy_small_grid(tmp_path):
    res = paper_accuracy.run(qi_sets=("8",), ks=(200,), seeds=(0,), variants=("paper", "labels"),
                             ablation_qi_sets=("8",), n_train=1500, n_jobs=1)
    assert set(res.variant) == {"paper", "labels", "baseline"}
    anon = res[res.variant != "baseline"]
    assert (anon.min_class_size >= 200).all()
    assert anon.n_groups.between(1, 1500 // 200).all()
    assert res.accuracy.between(0.5, 1.0).all() and res.accuracy_mapped.between(0.5, 1.0).all()
    summary = paper_accuracy.summarize(res)
    base = res.loc[res.variant == "baseline", "accuracy"].iloc[0]
    row = summary[summary.variant == "paper"].iloc[0]
    assert row.loss_mean == pytest.approx(100 * (base - row.accuracy_mean))
    paths = paper_accuracy.write_outputs(res, tmp_path, "t")
    assert pd.read_csv(paths["raw"]).shape[0] == len(res)
    text = paths["markdown"].read_text()
    assert "8 QI, variant `paper`" in text and "| 200 |" in text


def test_unknown_variant_is_an_input_error():
    with pytest.raises(InputError, match="nope"):
        paper_accuracy.run(variants=("nope",), n_train=100)


def test_every_variant_runs():
    res = paper_accuracy.run(qi_sets=("8",), ks=(400,), seeds=(0,),
                             variants=tuple(paper_accuracy.VARIANTS), ablation_qi_sets=("8",),
                             n_train=1200, n_jobs=1)
    anon = res[res.variant != "baseline"]
    assert set(anon.variant) == set(paper_accuracy.VARIANTS)
    assert (anon.min_class_size >= 400).all()
