"""Likelihood-ratio membership attack, LiRA (Carlini et al., 2022).

    N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis & F. Tramèr, "Membership Inference
    Attacks From First Principles", IEEE S&P 2022, arXiv:2112.03570.

Shadow models (clones of the target's estimator) are trained on random halves of the pool of
the target's members and non-members, so that every record is IN the training set of half of
them and OUT of the other half. For a record ``(x, y)`` each model gives the logit of its
probability of the true class, ``φ = log p_y − log Σ_{c≠y} p_c``; the IN and OUT values are
modelled as two Gaussians per record, and the target's own ``φ`` is scored by

* **online**: the log likelihood ratio ``log N(φ; μ_in, σ²_in) − log N(φ; μ_out, σ²_out)``
  (the paper's Algorithm 1);
* **offline**: the one-sided test of ``φ`` against the OUT Gaussian only,
  ``z = (φ − μ_out) / σ_out`` (the paper's ``Λ = Φ(z)``; the score is ``z``, which ranks the
  records the same way but does not saturate at 1 for strong members).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from anonml._errors import InputError
from anonml._utils import check_int, check_real
from anonml.attacks._core import AttackResult, as_generator
from anonml.attacks._shadow import (
    PROB_EPS,
    balanced_membership,
    build_pool,
    check_n_jobs,
    evaluated_records,
    resolve_estimator,
    shadow_result,
    shadow_scores,
    shadow_timings,
    true_class_scores,
)

__all__ = ["LiRA", "lira_scores"]

#: the ``label`` this attack passes to ``progress(label, done, total)``
PROGRESS_LABEL = "LiRA shadow models"

#: per-record variances are floored at this share of the pooled within-record variance (plus
#: :data:`_VAR_FLOOR_ABS`), so a record whose shadow scores are all equal (a tree that always
#: fits it) gives a sharp but finite Gaussian
_VAR_FLOOR_REL = 1e-2
_VAR_FLOOR_ABS = 1e-8
#: one-sided level of the offline decision: member when z >= Φ⁻¹(1 − 0.05)
_OFFLINE_LEVEL = 0.05
_Z_OFFLINE = 1.6448536269514722  # scipy.stats.norm.ppf(0.95)


def _group_stats(phi: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: number of selected rows, their mean, and their sum of squared deviations."""
    count = mask.sum(axis=0)
    mean = np.where(mask, phi, 0.0).sum(axis=0) / np.maximum(count, 1)
    ss = np.square(np.where(mask, phi - mean, 0.0)).sum(axis=0)
    return count, mean, ss


def lira_scores(
    target_phi: np.ndarray,
    shadow_phi: np.ndarray,
    in_mask: np.ndarray,
    *,
    online: bool = True,
    fix_variance: bool = False,
) -> tuple[np.ndarray, dict]:
    """LiRA scores of records from the target's and the shadow models' logits.

    Parameters
    ----------
    target_phi : ndarray of shape (n,)
        Logit of the true class under the target model, per record.
    shadow_phi : ndarray of shape (n_models, n)
        The same under every shadow model.
    in_mask : ndarray of bool, shape (n_models, n)
        True where the record was in the shadow model's training set. Every record needs at
        least one OUT model (and one IN model when ``online``).
    online : bool, default True
        Likelihood ratio of IN vs OUT (True) or one-sided test against OUT only (False).
    fix_variance : bool, default False
        Use one variance for every record (per side), the pooled within-record variance
        ``Σ_i Σ_m (φ_im − μ_i)² / Σ_i (n_i − 1)``; recommended by the paper with few shadow
        models. Otherwise each record's own unbiased variance, or the pooled one when the record
        has fewer than two models on that side.

    Returns
    -------
    scores : ndarray of shape (n,)
        Online: ``log N(φ; μ_in, σ²_in) − log N(φ; μ_out, σ²_out)`` (natural log); offline:
        ``z = (φ − μ_out) / σ_out``. Higher means more likely a member.
    info : dict
        ``var_in_pooled``, ``var_out_pooled`` and ``var_floor``.

    Notes
    -----
    Means are sample means (the paper's Algorithm 1; the authors' code uses medians). Every
    variance is floored at ``1e-2 ×`` the pooled within-record variance of both sides
    (``+ 1e-8``), which keeps the ratio finite for records whose shadow scores are all equal,
    as with a fully grown decision tree that always fits its training records.
    """
    target_phi = np.asarray(target_phi, dtype=np.float64)
    shadow_phi = np.asarray(shadow_phi, dtype=np.float64)
    in_mask = np.asarray(in_mask, dtype=bool)
    out_mask = ~in_mask
    n_in, mu_in, ss_in = _group_stats(shadow_phi, in_mask)
    n_out, mu_out, ss_out = _group_stats(shadow_phi, out_mask)
    if np.any(n_out == 0) or (online and np.any(n_in == 0)):
        raise InputError(
            "every record needs at least one shadow model it was OUT of (and one IN for the "
            "online attack); use n_shadow >= 2"
        )
    dof_in = np.maximum(n_in - 1, 0)
    dof_out = np.maximum(n_out - 1, 0)
    pooled_in = ss_in.sum() / max(int(dof_in.sum()), 1)
    pooled_out = ss_out.sum() / max(int(dof_out.sum()), 1)
    pooled_all = (ss_in.sum() + ss_out.sum()) / max(int(dof_in.sum() + dof_out.sum()), 1)
    floor = _VAR_FLOOR_REL * pooled_all + _VAR_FLOOR_ABS

    def variance(ss: np.ndarray, dof: np.ndarray, pooled: float) -> np.ndarray:
        if fix_variance:
            var = np.full(ss.shape, pooled)
        else:
            var = np.where(dof > 0, ss / np.maximum(dof, 1), pooled)
        return np.maximum(var, floor)

    var_out = variance(ss_out, dof_out, pooled_out)
    if online:
        var_in = variance(ss_in, dof_in, pooled_in)
        log_in = -0.5 * (np.log(var_in) + np.square(target_phi - mu_in) / var_in)
        log_out = -0.5 * (np.log(var_out) + np.square(target_phi - mu_out) / var_out)
        scores = log_in - log_out
    else:
        scores = (target_phi - mu_out) / np.sqrt(var_out)
    info = {"var_in_pooled": float(pooled_in), "var_out_pooled": float(pooled_out),
            "var_floor": float(floor)}
    return scores, info


class LiRA(BaseEstimator):
    """Likelihood-ratio membership attack with shadow models (Carlini et al., 2022).

    The pool is the target's members followed by its non-members. ``n_shadow`` clones of the
    target's estimator are trained on random halves of the pool, in complementary pairs, so
    each record is IN for exactly ``n_shadow / 2`` of them (``n_shadow`` even) and OUT for the
    rest. The attack is evaluated on a balanced set: all of the smaller side and an equal
    random subsample of the larger one (:func:`~anonml.attacks.balanced_indices`).

    Parameters
    ----------
    n_shadow : int, default 16
        Number of shadow models, at least 2 (4 or more for per-record variances; the paper uses
        64 to 256). Cost is ``n_shadow`` fits of the estimator on half the pool plus one
        ``predict_proba`` on the evaluated records each.
    online : bool, default True
        True: likelihood ratio of the IN and OUT Gaussians (the paper's online attack).
        False: one-sided test against the OUT Gaussian only (offline attack; only the OUT
        models of each record are used).
    fix_variance : bool, default False
        One variance per side for all records instead of per-record variances; the paper
        recommends it below about 64 shadow models.
    prob_clip : float, default 1e-6
        Probabilities are clipped below at this value before taking the logit, which then lies
        in ``±log(1/prob_clip)`` (±13.8). Models with coarse probabilities (trees, forests:
        multiples of 1/n_trees) lose nothing to a larger value and their exact 0/1 outputs stop
        dominating the Gaussian fits: on Adult with a 30-tree forest and 16 shadows the AUC was
        0.71 at 1e-6, 0.73 at 1e-2, 0.68 at 1e-15 and 0.63 at 1e-300. Keep it small for models
        with smooth probabilities (logistic regression, neural networks).
    shadow_estimator : estimator, optional
        Unfitted estimator to train the shadow models with. None clones the target's model
        (``sklearn.base.clone``: same type and hyper-parameters, fitted state dropped). Needed
        for a probabilities-only target.
    n_jobs : int or None, default -1
        Models trained at the same time (joblib): -1 uses every core, None or 1 trains them one
        after the other. Threads are preferred (scikit-learn's trees release the GIL; no
        process start-up, no copy of the data); wrap the call in
        ``joblib.parallel_config(backend="loky")`` for an estimator that holds the GIL. Use 1
        when the estimator is itself parallel (e.g. a forest with ``n_jobs=-1``).
    random_state : int, Generator or None
        Seeds the evaluation subsample, the training halves and every ``random_state``
        parameter of the shadow models (each gets its own seed).

    Attributes
    ----------
    membership_ : ndarray of bool, shape (n_shadow, n_pool)
        ``membership_[m, i]``: pool record ``i`` was in shadow model ``m``'s training set.
        Records ``0 .. n_members-1`` of the pool are the target's members.
    evaluated_ : ndarray of int, shape (n_eval,)
        Pool positions of the evaluated records (members first, as in ``result_.labels``).
    target_phi_ : ndarray of shape (n_eval,)
        Logit of the true class under the target.
    shadow_phi_ : ndarray of shape (n_shadow, n_eval)
        The same under each shadow model.
    result_ : AttackResult
        The result returned by the last :meth:`run`.
    timings_ : dict
        Seconds: ``total``, ``shadow_wall`` (training and scoring all shadows, wall clock),
        ``fit_per_shadow`` and ``predict_per_shadow`` (mean per model, inside the workers);
        and ``cpu_per_wall``, the CPU seconds of all shadow work over ``shadow_wall`` (above 1
        when models ran in parallel).

    Notes
    -----
    *Simplifications.* Tabular records have no data augmentation, so each model is queried
    once per record (the paper averages over augmented queries). Per-record means are sample
    means and the fixed variance is the pooled within-record variance (the authors' code uses
    medians and the variance of all scores). The shadow models train on half the pool, which is
    the target's training size when members and non-members are equally many.

    *Decisions.* ``result_.predictions`` are "member when the likelihood ratio is at least 1"
    (online; the Bayes rule for the balanced evaluation set) and "member when the one-sided
    test rejects OUT at level 0.05", ``z >= 1.645`` (offline). AUC and TPR at low FPR do not
    depend on that choice.

    References
    ----------
    Carlini, Chien, Nasr, Song, Terzis & Tramèr (2022). Membership inference attacks from first
    principles. IEEE S&P. arXiv:2112.03570.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from anonml.attacks import LiRA, Target
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(300, 5)), rng.integers(0, 2, 300)
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:150], y[:150])
    >>> result = LiRA(n_shadow=8, random_state=0).run(Target(model, X[:150], y[:150], X[150:], y[150:]))
    >>> result.auc > 0.6
    True
    """

    def __init__(
        self,
        n_shadow: int = 16,
        *,
        online: bool = True,
        fix_variance: bool = False,
        prob_clip: float = PROB_EPS,
        shadow_estimator: Any = None,
        n_jobs: int | None = -1,
        random_state: Any = None,
    ) -> None:
        self.n_shadow = n_shadow
        self.online = online
        self.fix_variance = fix_variance
        self.prob_clip = prob_clip
        self.shadow_estimator = shadow_estimator
        self.n_jobs = n_jobs
        self.random_state = random_state

    @property
    def name(self) -> str:
        return "lira-online" if self.online else "lira-offline"

    def _check_params(self) -> None:
        check_int("n_shadow", self.n_shadow, low=2, example=64,
                  why="each record must be OUT of at least one shadow model and IN of "
                  "another; the paper uses 64 or more")
        for flag in ("online", "fix_variance"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise InputError(f"{flag}={getattr(self, flag)!r} must be True or False")
        check_real("prob_clip", self.prob_clip, high=0.5, example=1e-6,
                   why="probabilities are clipped to it before taking logits")
        check_n_jobs(self.n_jobs)

    def run(self, target: Any, *, progress: Any = None) -> AttackResult:
        """Train the shadow models and attack ``target``.

        Parameters
        ----------
        target : anonml.attacks.Target
            Must hold the member and non-member records (``X_train``, ``X_test``) and either a
            fitted scikit-learn model or, with ``shadow_estimator``, its probabilities.

        progress : callable, optional
            Called as ``progress(label, done, total)`` with ``done = 0`` before the first
            model and again as the shadow models come back (``total`` = their number),
            ``label`` being ``"LiRA shadow models"``.

        Returns
        -------
        AttackResult
            Named ``"lira-online"`` or ``"lira-offline"``; ``extra`` holds ``tpr_at_0.1%_fpr``,
            ``tpr_at_1%_fpr``, the pool and shadow sizes, variances and timings.
        """
        start = time.perf_counter()
        self._check_params()
        estimator = resolve_estimator(target, self.shadow_estimator, "LiRA")
        pool = build_pool(target, "LiRA")
        rng = as_generator(self.random_state)
        member_idx, nonmember_idx, evaluated, labels = evaluated_records(target, pool, rng)
        proba = np.concatenate([target.proba("train")[member_idx],
                                target.proba("test")[nonmember_idx]])
        eps = float(self.prob_clip)
        _, target_phi = true_class_scores(proba, pool.codes[evaluated], eps)

        membership = balanced_membership(pool.n, int(self.n_shadow), rng)
        seeds = rng.integers(0, 2**31 - 1, int(self.n_shadow))
        shadow_start = time.perf_counter()
        _, shadow_phi, times = shadow_scores(
            estimator, pool, membership, evaluated, seeds, self.n_jobs, eps,
            progress=progress, label=PROGRESS_LABEL,
        )
        shadow_wall = time.perf_counter() - shadow_start

        scores, info = lira_scores(target_phi, shadow_phi, membership[:, evaluated],
                                   online=bool(self.online), fix_variance=bool(self.fix_variance))
        threshold = 0.0 if self.online else _Z_OFFLINE
        self.timings_ = shadow_timings(start, shadow_wall, times, "shadow")
        extra = {
            "n_shadow": int(self.n_shadow),
            "online": bool(self.online),
            "fix_variance": bool(self.fix_variance),
            "n_pool": pool.n,
            "shadow_train_size": int(membership.sum(axis=1).mean()),
            "in_models_per_record_min": int(membership.sum(axis=0).min()),
            "in_models_per_record_max": int(membership.sum(axis=0).max()),
            "prob_clip": eps,
            "decision": ("likelihood ratio >= 1" if self.online
                         else f"one-sided test against OUT at level {_OFFLINE_LEVEL}"),
            **info,
            "seconds": dict(self.timings_),
        }
        result = shadow_result(self.name, labels, scores, extra, threshold)
        self.membership_ = membership
        self.evaluated_ = evaluated
        self.target_phi_ = target_phi
        self.shadow_phi_ = shadow_phi
        self.result_ = result
        return result

