"""The data-masking experiments (Pham et al. 2019) on tiny settings; the full runs are in docs/results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonml.dp._logistic import clip_rows
from anonml.experiments import dp_masking

COLUMNS = {
    "experiment", "epsilon", "n_generated", "stopped_by", "gradient_norm", "recovery_bound",
    "acc_nonprivate", "acc_dp", "acc_masked", "recovery_error", "dp_noise_norm",
    "masked_to_nonprivate", "nn_generated_min", "nn_private_min", "nn_fresh_min",
    "n_private_copies", "target_in_hull",
}


def _no_private_row(X_masked, X_private):
    private = {row.tobytes() for row in np.asarray(X_private, dtype=np.float64)}
    return not any(row.tobytes() in private for row in np.asarray(X_masked, dtype=np.float64))


@pytest.fixture(scope="module")
def results():
    toy = dp_masking.run_toy((1.0, 100.0), n_per_class=40, n_samples=6, n_test=60, hull_grid=21)
    digits = dp_masking.run_digits((100.0,), n_samples=3, n_init=4)
    return toy, digits


def test_tables_have_the_reported_columns(results):
    for res, eps in zip(results, [(1.0, 100.0), (100.0,)]):
        t = res.table
        assert COLUMNS <= set(t.columns)
        assert list(t.epsilon) == list(eps)
        assert set(t.stopped_by) <= {"tolerance", "n_samples"}
        assert (t.n_private_copies == 0).all()
        assert t[["acc_nonprivate", "acc_dp", "acc_masked"]].stack().between(0, 1).all()
        # strong convexity: retraining lands within ‖∇J(w̃)‖/λ of w̃ (up to the solver's tolerance)
        assert (t.recovery_error <= t.recovery_bound * (1 + 1e-3) + 1e-6).all()


def test_masked_data_contain_no_private_record_and_stay_in_the_public_ball(results):
    for res in results:
        for X_masked, y_masked in res.masked.values():
            assert _no_private_row(X_masked, res.X_private)
            assert np.linalg.norm(X_masked, axis=1).max() <= res.data_norm * (1 + 1e-9)
            assert np.allclose(X_masked[: len(res.X_init)], clip_rows(res.X_init, res.data_norm))  # initial set first
            assert set(np.unique(y_masked)) <= set(np.unique(res.y_private))
        assert _no_private_row(res.X_init, res.X_private)


def test_digits_initial_set_masks_class_2_with_sevens(results):
    _, digits = results
    assert digits.X_private.shape[1] == 25
    assert digits.extra["public_max_norm"] <= digits.data_norm  # the bound covers the public digits
    sevens = digits.X_init[digits.y_init == 2]
    assert len(sevens) == 4
    # the initial 2s are the public 7s projected by the public PCA: mapped back, they are 7 images
    images = digits.extra["pca"].inverse_transform(sevens) * 16
    from sklearn.datasets import load_digits

    pixels, labels = load_digits(return_X_y=True)
    nearest = labels[np.argmin(((pixels[None] - images[:, None]) ** 2).sum(-1), axis=1)]
    assert (nearest == 7).all()


def test_write_outputs(results, tmp_path):
    paths = dp_masking.write_outputs(*results, tmp_path, "t")
    toy = pd.read_csv(paths["toy"])
    digits = pd.read_csv(paths["digits"])
    assert len(toy) == 2 and len(digits) == 1 and COLUMNS <= set(toy.columns)
    text = paths["markdown"].read_text()
    assert "Toy 2-D" in text and "Digits" in text and "| 100 |" in text
    pytest.importorskip("matplotlib")
    for key in ("toy_plot", "digits_plot"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes left no temporary files


def test_cli_subcommand(tmp_path, monkeypatch):
    from anonml.experiments import __main__ as cli

    calls = {}
    real_toy = dp_masking.run_toy

    def fake_toy(**kw):
        calls["toy"] = kw
        return real_toy((100.0,), n_per_class=20, n_samples=3, n_test=20, hull_grid=11,
                                  seed=kw["seed"])

    def fake_digits(**kw):
        calls["digits"] = kw
        return None

    monkeypatch.setattr(dp_masking, "run_toy", fake_toy)
    monkeypatch.setattr(dp_masking, "run_digits", fake_digits)
    assert cli.main(["dp-masking", "--out", str(tmp_path), "--toy-samples", "3", "--seed", "1"]) == 0
    assert calls["toy"] == {"n_samples": 3, "seed": 1}
    assert calls["digits"] == {"n_samples": 150, "seed": 1}
    assert (tmp_path / "dp_masking_toy.csv").is_file() and (tmp_path / "dp_masking.md").is_file()
