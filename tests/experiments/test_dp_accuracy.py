"""The accuracy-vs-ε runner on a tiny grid (the full run is in docs/results, not in tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonml._errors import InputError
from anonml.experiments import dp_accuracy


@pytest.mark.parametrize("name", dp_accuracy.DATASETS)
def test_every_dataset_loads_within_its_public_bound(name):
    task = dp_accuracy.load(name)
    for X in (task.X_train, task.X_test):
        assert np.linalg.norm(X, axis=1).max() <= task.data_norm + 1e-9
        assert X.min() >= task.bounds[0] - 1e-9 and X.max() <= task.bounds[1] + 1e-9
    assert set(np.unique(task.y_train)) == set(task.classes)


def test_tiny_grid(tmp_path):
    res = dp_accuracy.run(datasets=("breast_cancer",), epsilons=(1.0, 1e4), lams=(1e-3,), reps=2,
                          sizes=("full",), n_samples=30, n_jobs=1)
    assert set(res.method) == {"masked", "output", "input", "nonprivate"}
    assert res.accuracy.between(0, 1).all()
    masked = res[res.method == "masked"]
    assert set(masked.stopped_by) <= {"tolerance", "n_samples"}
    assert (masked.n_masked <= 30 + 10).all()
    # at a huge ε the output-perturbed model is the non-private one
    big = res[(res.method == "output") & (res.epsilon == 1e4)].accuracy.mean()
    ref = res[res.method == "nonprivate"].accuracy.iloc[0]
    assert abs(big - ref) < 0.03
    paths = dp_accuracy.write_outputs(res, tmp_path, "t")
    assert pd.read_csv(paths["raw"]).shape[0] == len(res)
    assert "breast_cancer, full training set" in paths["markdown"].read_text()


def test_unknown_dataset_and_size():
    with pytest.raises(InputError, match="nope"):
        dp_accuracy.load("nope")
    with pytest.raises(InputError, match="size"):
        dp_accuracy.run(datasets=("wine",), sizes=("huge",))
