"""The frontier's bootstrap intervals: exact at unit weights, seeded, vectorized, and said."""

from __future__ import annotations

import numpy as np
import pytest

from anonml._frontier._uncertainty import (accuracy_replicates, attack_replicates,
                                           index_matrix, interval)
from anonml.attacks._core import attack_result


@pytest.mark.parametrize("seed", range(6))
def test_unit_weights_give_the_attacks_own_auc_and_tpr(seed):
    """With every row drawn once, the weighted rank formula and the weighted ROC cut equal
    the attack's AUC and its TPR at the ROC point with the largest FPR <= f (ties included)."""
    rng = np.random.default_rng(seed)
    n1, n0 = rng.integers(20, 3000, size=2)
    labels = np.r_[np.ones(n1), np.zeros(n0)]
    scores = np.round(rng.normal(size=n1 + n0) + 0.4 * labels, seed % 3)  # many ties
    res = attack_result("x", labels, scores, threshold=0.5)
    for fpr in (0.001, 0.01, 0.1, 0.5):
        auc, tpr = attack_replicates(labels, scores, 1, rng, fpr, unit=True)
        assert auc[0] == pytest.approx(res.auc, abs=1e-12)
        assert tpr[0] == pytest.approx(res.tpr_at_fpr(fpr), abs=1e-12)


def test_replicates_match_a_per_replicate_loop():
    """The vectorized replicates equal AUC and TPR recomputed on each resampled set."""
    rng = np.random.default_rng(3)
    labels = np.r_[np.ones(400), np.zeros(1200)]
    scores = np.round(rng.normal(size=1600) + 0.5 * labels, 2)
    auc, tpr = attack_replicates(labels, scores, 25, np.random.default_rng(9), 0.01)
    again = np.random.default_rng(9)
    pos, neg = scores[labels == 1], scores[labels == 0]
    i, j = index_matrix(pos.size, 25, again), index_matrix(neg.size, 25, again)
    for b in range(25):
        lab = np.r_[np.ones(pos.size), np.zeros(neg.size)]
        res = attack_result("x", lab, np.r_[pos[i[b]], neg[j[b]]], threshold=0.5)
        assert auc[b] == pytest.approx(res.auc, abs=1e-12)
        assert tpr[b] == pytest.approx(res.tpr_at_fpr(0.01), abs=1e-12)


def test_accuracy_interval_is_the_percentile_interval():
    rng = np.random.default_rng(0)
    correct = rng.random(2000) < 0.8
    idx = index_matrix(correct.size, 400, rng)
    reps = accuracy_replicates(correct, idx)
    np.testing.assert_allclose(reps[:3], [correct[idx[b]].mean() for b in range(3)])
    lo, hi = interval(reps)
    assert lo < correct.mean() < hi
    se = np.sqrt(0.8 * 0.2 / 2000)  # the binomial standard error: the width agrees
    assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert interval(np.array([np.nan])) != interval(np.array([0.5]))


def test_wider_on_fewer_rows():
    rng = np.random.default_rng(1)
    widths = []
    for n in (300, 3000):
        labels = np.r_[np.ones(n), np.zeros(n)]
        scores = rng.normal(size=2 * n) + 0.3 * labels
        auc, _ = attack_replicates(labels, scores, 200, rng, 0.001)
        lo, hi = interval(auc)
        widths.append(hi - lo)
    assert widths[0] > 2 * widths[1]  # about sqrt(10) wider
