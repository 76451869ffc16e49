"""Same seed, same numbers to the bit: RMIA's ties and a sweep with a forest on all cores."""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonml._frontier import frontier
from anonml.attacks._rmia import rmia_counts
from anonml.datasets import load_adult


def test_rmia_counts_ignore_last_digit_noise():
    """Equal records get equal ratios; noise in the last digits must not split the tie."""
    rng = np.random.default_rng(0)
    base = np.repeat(rng.random(50) + 0.5, 20)  # 50 values, each tied 20 times
    exact = rmia_counts(base[:300], base, 1.0)
    for seed in range(3):
        noise = np.random.default_rng(seed).uniform(-2e-16, 2e-16, base.size)
        jittered = base * (1 + noise)
        np.testing.assert_array_equal(rmia_counts(jittered[:300], jittered, 1.0), exact)
    # a real difference still counts
    assert rmia_counts(np.array([1.0]), np.array([0.999, 1.0, 1.001]), 1.0).tolist() == [1 / 3]


def test_sweep_with_a_forest_on_all_cores_is_reproducible():
    d = load_adult()
    f = d.frame
    tr = f[d.split == "train"].sample(600, random_state=4)
    te = f[d.split == "test"].sample(500, random_state=4)
    X, y = tr.drop(columns="income"), tr["income"]
    Xt, yt = te.drop(columns="income"), te["income"]
    runs = [frontier(X, y, Xt, yt, quasi_identifiers=["age", "sex", "race", "education-num"],
                     estimator="random_forest", methods=("mondrian",), ks=(10,), dp=False,
                     n_reference=2, worst_case_reps=2, max_attribute_records=200,
                     bootstrap=40, random_state=0).table.drop(columns="seconds")
            for _ in range(2)]
    pd.testing.assert_frame_equal(runs[0], runs[1], check_exact=True)
