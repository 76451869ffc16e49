"""Bootstrap confidence intervals of the frontier's figures.

Every figure of a point is measured on a finite evaluation set: the accuracies on the test
rows, the attack's AUC and TPR at low FPR on the members and non-members it scored. The
intervals here say how far that figure could move on another evaluation set of the same size
drawn from the same population: the **percentile bootstrap** (Efron & Tibshirani 1993, ch. 13)
over the evaluation rows, ``B`` replicates (200 by default), 95 %.

* **Accuracy** (raw and mapped rows): the test rows are resampled with replacement; every
  point of a sweep uses the *same* resampled index matrix (one seed per sweep), so the
  accuracy *loss* against the undefended model is a paired difference with its own, tighter,
  interval.
* **Attack AUC and TPR at low FPR**: members and non-members are resampled separately
  (each side keeps its size, as the attack's 50/50 evaluation set). The AUC of each replicate
  is the Mann–Whitney rank formula with the replicate's counts as weights (ties count one
  half), computed for all replicates at once; the TPR at FPR ``f`` is that of the ROC point
  with the largest FPR ``<= f`` (:func:`anonml.attacks._core.tpr_at_fpr`). With weights all 1
  both equal the attack's own figures exactly (a test checks it).

The bootstrap captures the evaluation noise only: not the noise of training (another seed
gives another forest, other reference models), which is usually of the same order; repeat
the sweep with other seeds to see it.

References
----------
Efron & Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall, ch. 13.
Hanley & McNeil (1982), The meaning and use of the area under a ROC curve, Radiology 143.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["B_DEFAULT", "LEVEL", "accuracy_replicates", "attack_replicates", "index_matrix",
           "interval"]

#: bootstrap replicates by default
B_DEFAULT = 200
#: the intervals' coverage
LEVEL = 0.95


def index_matrix(n: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """``(b, n)`` row indices drawn with replacement, all replicates at once."""
    return rng.integers(0, n, size=(b, n), dtype=np.int64)


def interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN when there are none)."""
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    lo, hi = np.quantile(r, [a, 1 - a])
    return float(lo), float(hi)


def accuracy_replicates(correct: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Accuracy of each replicate: mean of the 0/1 ``correct`` vector over each index row."""
    return np.asarray(correct, dtype=float)[idx].mean(axis=1)


def _weights(groups: np.ndarray, idx: np.ndarray, n_groups: int) -> np.ndarray:
    """``(b, n_groups)`` counts: how often each group (distinct score) is drawn per replicate."""
    b = idx.shape[0]
    flat = (np.arange(b)[:, None] * n_groups + groups[idx]).ravel()
    return np.bincount(flat, minlength=b * n_groups).reshape(b, n_groups).astype(float)


def attack_replicates(labels: Any, scores: Any, b: int, rng: np.random.Generator,
                      fpr: float, *, unit: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """AUC and TPR at ``fpr`` of ``b`` bootstrap replicates of an attack's evaluation set.

    Parameters
    ----------
    labels, scores : arrays
        1 = member, 0 = non-member; higher score = more likely a member.
    b : int
    rng : Generator
    fpr : float
        The low false-positive rate (0.001).
    unit : bool
        One replicate with every weight 1 (the attack's own figures; for the tests).

    Returns
    -------
    auc, tpr : ndarray of shape (b,)
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=float)
    pos, neg = scores[labels], scores[~labels]
    n_pos, n_neg = pos.size, neg.size
    u_pos, g_pos = np.unique(pos, return_inverse=True)   # ascending distinct scores
    u_neg, g_neg = np.unique(neg, return_inverse=True)
    if unit:
        w_pos = np.bincount(g_pos, minlength=u_pos.size)[None, :].astype(float)
        w_neg = np.bincount(g_neg, minlength=u_neg.size)[None, :].astype(float)
    else:
        w_pos = _weights(g_pos, index_matrix(n_pos, b, rng), u_pos.size)
        w_neg = _weights(g_neg, index_matrix(n_neg, b, rng), u_neg.size)
    # AUC: each positive beats the non-members below it and ties half of those equal to it
    cum_neg = np.concatenate([np.zeros((w_neg.shape[0], 1)), np.cumsum(w_neg, axis=1)], axis=1)
    below = np.take(cum_neg, np.searchsorted(u_neg, u_pos, "left"), axis=1)
    upto = np.take(cum_neg, np.searchsorted(u_neg, u_pos, "right"), axis=1)
    auc = (w_pos * (below + 0.5 * (upto - below))).sum(axis=1) / (n_pos * n_neg)
    # TPR at fpr: the lowest cut v (a non-member score) with #non-members above v <= fpr*n_neg;
    # members above v are detected. Non-members above u_neg[j] = total - cum_neg[:, j + 1].
    allowed = fpr * n_neg + 1e-9
    above = cum_neg[:, -1:] - cum_neg[:, 1:]                   # (b, D): above each u_neg[j]
    ok = above <= allowed                                      # non-decreasing in j
    first = np.argmax(ok, axis=1)                               # lowest qualifying cut
    cum_pos = np.concatenate([np.zeros((w_pos.shape[0], 1)), np.cumsum(w_pos, axis=1)], axis=1)
    pos_upto = np.take(cum_pos, np.searchsorted(u_pos, u_neg, "right"), axis=1)  # <= u_neg[j]
    tp = cum_pos[:, -1] - np.take_along_axis(pos_upto, first[:, None], axis=1)[:, 0]
    # every non-member may be flagged (fpr*n_neg >= n_neg): all members are detected
    tp = np.where(cum_neg[:, -1] <= allowed, cum_pos[:, -1], tp)
    return auc, tp / n_pos
