"""Relative membership inference attack, RMIA (Zarifzadeh, Liu, Shokri & Ghosh, 2024).

    S. Zarifzadeh, P. Liu, R. Shokri & E. Ghosh, "Low-Cost High-Power Membership Inference
    Attacks", ICML 2024, arXiv:2312.03262.

A record ``x`` is compared with population records ``z`` known not to be members. With
``Pr(x|θ)`` the target's probability of ``x``'s true label and ``Pr(x)`` its average over
reference models,

    LR(x, z) = (Pr(x|θ) / Pr(x)) / (Pr(z|θ) / Pr(z)),     score(x) = |{z : LR(x, z) > γ}| / |Z|.

``Pr(x)`` is the mean over all reference models (online: half of them trained on ``x``), or,
offline, from the models that did not train on ``x`` only, corrected by the paper's linear
approximation ``Pr(x) ≈ ½((1 + a)·Pr_OUT(x) + (1 − a))``, which stands for the missing IN
models (``Pr_IN ≈ a·Pr_OUT + 1 − a``).
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

__all__ = ["RMIA", "fit_offline_a", "reference_probability", "rmia_counts"]

#: the ``label`` this attack passes to ``progress(label, done, total)``
PROGRESS_LABEL = "RMIA reference models"

#: floor of Pr(x) (the reference average) in the ratio Pr(x|θ)/Pr(x)
_PX_FLOOR = 1e-12


def fit_offline_a(p_ref: np.ndarray, in_mask: np.ndarray) -> float:
    """Least-squares ``a`` of ``Pr_IN(x) ≈ a·Pr_OUT(x) + (1 − a)`` over the records.

    ``Pr_IN`` / ``Pr_OUT`` are a record's mean probability over the reference models that did /
    did not train on it; records lacking either side are skipped. The line passes through
    (1, 1), so ``a = Σ (o−1)(i−1) / Σ (o−1)²``, clipped to [0, 1]. It is fitted on the reference
    models only (never on the target), as the paper tunes ``a`` on reference models.

    Returns 1.0 (``Pr(x) = Pr_OUT(x)``) when no record has both sides or every ``Pr_OUT`` is 1.
    """
    p_ref = np.asarray(p_ref, dtype=np.float64)
    in_mask = np.asarray(in_mask, dtype=bool)
    n_in = in_mask.sum(axis=0)
    n_out = in_mask.shape[0] - n_in
    both = (n_in > 0) & (n_out > 0)
    if not both.any():
        return 1.0
    p_in = np.where(in_mask, p_ref, 0.0).sum(axis=0)[both] / n_in[both]
    p_out = np.where(in_mask, 0.0, p_ref).sum(axis=0)[both] / n_out[both]
    den = float(np.sum(np.square(p_out - 1.0)))
    if den == 0.0:
        return 1.0
    return float(np.clip(np.sum((p_out - 1.0) * (p_in - 1.0)) / den, 0.0, 1.0))


def reference_probability(
    p_ref: np.ndarray, in_mask: np.ndarray, *, online: bool, offline_a: float
) -> np.ndarray:
    """``Pr(x)``: the mean over all reference models (online) or ``½((1+a)·Pr_OUT + 1 − a)``.

    Parameters
    ----------
    p_ref : ndarray of shape (n_models, n)
        Probability of the true label under each reference model.
    in_mask : ndarray of bool, shape (n_models, n)
        True where the model trained on the record (used offline only).
    online : bool
    offline_a : float in [0, 1]
    """
    p_ref = np.asarray(p_ref, dtype=np.float64)
    if online:
        return p_ref.mean(axis=0)
    in_mask = np.asarray(in_mask, dtype=bool)
    n_out = (~in_mask).sum(axis=0)
    if np.any(n_out == 0):
        raise InputError(
            "offline RMIA needs every record to be OUT of at least one reference model; "
            "use n_reference >= 2"
        )
    p_out = np.where(in_mask, 0.0, p_ref).sum(axis=0) / n_out
    return 0.5 * ((1.0 + offline_a) * p_out + (1.0 - offline_a))


#: relative difference below which two likelihood ratios are a tie (see :func:`rmia_counts`)
RATIO_TOL = 1e-9


def rmia_counts(ratio_x: np.ndarray, ratio_z: np.ndarray, gamma: float) -> np.ndarray:
    """Share of population records ``z`` with ``ratio_x / ratio_z > gamma``, for every ``x``.

    Sort-based: ``ratio_x / ratio_z > γ`` ⇔ ``ratio_z < ratio_x / γ`` (ratios are >= 0 and
    ``γ > 0``), so one ``np.sort`` of the population and one ``np.searchsorted`` give every
    count in ``O((n + m) log m)``, never an ``n × m`` matrix. A ``z`` with ``ratio_z = 0`` is
    beaten by every ``x`` with ``ratio_x > 0`` (the ratio is infinite); ``0/0`` is not above γ.

    The score is one and the same non-decreasing function of ``ratio_x`` for every record. A
    record that is itself in the population is therefore *not* left out of its own comparison:
    doing so changes its denominator alone and ranks it above every member with an equal ratio,
    a bias against members that shows up whenever ratios tie (trees, constant models).

    Ratios within a relative ``1e-9`` of each other are equal (:data:`RATIO_TOL`): a model that
    predicts on several threads (a forest with ``n_jobs=-1``) sums in a varying order, and the
    many exact ties of equal records would otherwise break one way or the other from run to
    run (the AUC then moved in the sixth decimal with the same seed).

    Parameters
    ----------
    ratio_x : ndarray of shape (n,)
        ``Pr(x|θ)/Pr(x)`` of the records under attack.
    ratio_z : ndarray of shape (m,)
        The same for the population records.
    gamma : float > 0

    Returns
    -------
    ndarray of shape (n,)
        Scores in [0, 1].
    """
    ratio_x = np.asarray(ratio_x, dtype=np.float64)
    z_sorted = np.sort(np.asarray(ratio_z, dtype=np.float64))
    counts = np.searchsorted(z_sorted, ratio_x / gamma * (1.0 - RATIO_TOL), side="left")
    return counts / float(max(z_sorted.size, 1))


class RMIA(BaseEstimator):
    """Relative membership inference attack with few reference models (Zarifzadeh et al., 2024).

    Reference models are clones of the target's estimator trained, like LiRA's shadow models,
    on random halves of the pool of the target's members and non-members, in complementary
    pairs: each record is IN for exactly ``n_reference / 2`` of them. The population ``Z`` is
    every non-member of the target; the attack is evaluated on a balanced set of members and
    non-members (:func:`~anonml.attacks.balanced_indices`); an evaluated non-member is also in
    the population, which does not bias its score (see :func:`rmia_counts`).

    Parameters
    ----------
    n_reference : int, default 4
        Number of reference models, at least 2 (every record must be OUT of one). The paper's
        point is that 1 to 4 are enough. Cost: ``n_reference`` fits on half the pool and one
        ``predict_proba`` on the evaluated and population records each.
    online : bool, default True
        True: ``Pr(x)`` is the mean over all reference models, half IN and half OUT (the
        paper's online attack). False: the OUT models only, with the ``a`` correction (offline).
    offline_a : "auto" or float in [0, 1], default "auto"
        The paper's ``a`` for the offline attack. "auto" fits it on the reference models'
        own IN and OUT probabilities (:func:`fit_offline_a`); the authors' code defaults to 0.3
        and tunes it on a reference model treated as target. Unused online.
    gamma : float > 0, default 1.0
        A population record ``z`` is dominated when ``LR(x, z) > gamma``; 1.0 as in the
        authors' reference code.
    shadow_estimator : estimator, optional
        Unfitted estimator for the reference models; None clones the target's model.
    n_jobs : int or None, default -1
        Models trained at the same time (joblib): -1 uses every core, None or 1 trains them one
        after the other. Threads are preferred (scikit-learn's trees release the GIL; no
        process start-up, no copy of the data); wrap the call in
        ``joblib.parallel_config(backend="loky")`` for an estimator that holds the GIL. Use 1
        when the estimator is itself parallel (e.g. a forest with ``n_jobs=-1``).
    random_state : int, Generator or None
        Seeds the evaluation subsample, the training halves and the reference models'
        ``random_state`` parameters.

    Attributes
    ----------
    membership_ : ndarray of bool, shape (n_reference, n_pool)
        Which pool records (members first) each reference model trained on.
    evaluated_ : ndarray of int
        Pool positions of the evaluated records (members first, as in ``result_.labels``).
    population_ : ndarray of int
        Pool positions of the population records ``Z`` (all non-members).
    offline_a_ : float or None
        The ``a`` used (offline only).
    ratio_x_ : ndarray
        ``Pr(x|θ)/Pr(x)`` of the evaluated records.
    result_ : AttackResult
    timings_ : dict
        Seconds: ``total``, ``shadow_wall``, ``fit_per_reference``, ``predict_per_reference``
        (as for :class:`LiRA`), and ``cpu_per_wall``.

    Notes
    -----
    *Decisions.* ``result_.predictions`` are ``score >= 0.5``: ``x`` dominates at least half of
    the population. AUC and TPR at low FPR do not depend on it.

    *Simplifications.* ``Pr(x|θ)`` is the probability of the true label (no softmax
    temperature, no augmented queries), and the population is the target's non-members rather
    than a separate sample. The reference models of the offline attack also train on the
    pool, so only their OUT half is used per record; the paper's offline reference models
    never see the targets.

    References
    ----------
    Zarifzadeh, Liu, Shokri & Ghosh (2024). Low-cost high-power membership inference attacks.
    ICML. arXiv:2312.03262.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from anonml.attacks import RMIA, Target
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(300, 5)), rng.integers(0, 2, 300)
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:150], y[:150])
    >>> result = RMIA(n_reference=4, random_state=0).run(Target(model, X[:150], y[:150], X[150:], y[150:]))
    >>> result.auc > 0.6
    True
    """

    def __init__(
        self,
        n_reference: int = 4,
        *,
        online: bool = True,
        offline_a: Any = "auto",
        gamma: float = 1.0,
        shadow_estimator: Any = None,
        n_jobs: int | None = -1,
        random_state: Any = None,
    ) -> None:
        self.n_reference = n_reference
        self.online = online
        self.offline_a = offline_a
        self.gamma = gamma
        self.shadow_estimator = shadow_estimator
        self.n_jobs = n_jobs
        self.random_state = random_state

    @property
    def name(self) -> str:
        return "rmia-online" if self.online else "rmia-offline"

    def _check_params(self) -> None:
        check_int("n_reference", self.n_reference, low=2, example=4,
                  why="each record must be OUT of at least one reference model; 2 to 4 is "
                  "the paper's low-cost setting")
        if not isinstance(self.online, (bool, np.bool_)):
            raise InputError(f"online={self.online!r} must be True or False")
        a = self.offline_a
        if not (isinstance(a, str) and a == "auto"):
            check_real("offline_a", a, high=1, closed="both", example=0.3,
                       why="or 'auto'")
        check_real("gamma", self.gamma, example=1.0)
        check_n_jobs(self.n_jobs)

    def run(self, target: Any, *, progress: Any = None) -> AttackResult:
        """Train the reference models and attack ``target``.

        Parameters
        ----------
        target : anonml.attacks.Target
            Must hold the member and non-member records and a fitted scikit-learn model (or
            its probabilities together with ``shadow_estimator``).

        progress : callable, optional
            Called as ``progress(label, done, total)`` with ``done = 0`` before the first
            model and again as the reference models come back (``total`` = their number),
            ``label`` being ``"RMIA reference models"``.

        Returns
        -------
        AttackResult
            Named ``"rmia-online"`` or ``"rmia-offline"``; ``extra`` holds
            ``tpr_at_0.1%_fpr``, ``tpr_at_1%_fpr``, ``offline_a``, sizes and timings.
        """
        start = time.perf_counter()
        self._check_params()
        estimator = resolve_estimator(target, self.shadow_estimator, "RMIA")
        pool = build_pool(target, "RMIA")
        rng = as_generator(self.random_state)
        n_m = pool.n_members
        member_idx, nonmember_idx, evaluated, labels = evaluated_records(target, pool, rng)
        population = np.arange(n_m, pool.n)
        # records scored by the models: the evaluated members, then every non-member
        pred_idx = np.concatenate([member_idx, population])
        x_pos = np.concatenate([np.arange(member_idx.size), member_idx.size + nonmember_idx])
        z_pos = member_idx.size + np.arange(population.size)

        proba = np.concatenate([target.proba("train")[member_idx], target.proba("test")])
        p_target, _ = true_class_scores(proba, pool.codes[pred_idx])

        n_ref = int(self.n_reference)
        membership = balanced_membership(pool.n, n_ref, rng)
        seeds = rng.integers(0, 2**31 - 1, n_ref)
        shadow_start = time.perf_counter()
        p_ref, _, times = shadow_scores(estimator, pool, membership, pred_idx, seeds,
                                        self.n_jobs, progress=progress, label=PROGRESS_LABEL)
        shadow_wall = time.perf_counter() - shadow_start
        in_mask = membership[:, pred_idx]

        a = None
        if not self.online:
            a = fit_offline_a(p_ref, in_mask) if isinstance(self.offline_a, str) else float(
                self.offline_a)
        p_x = reference_probability(p_ref, in_mask, online=bool(self.online),
                                    offline_a=1.0 if a is None else a)
        ratio = p_target / np.maximum(p_x, _PX_FLOOR)
        scores = rmia_counts(ratio[x_pos], ratio[z_pos], float(self.gamma))

        self.timings_ = shadow_timings(start, shadow_wall, times, "reference")
        extra = {
            "n_reference": n_ref,
            "online": bool(self.online),
            "offline_a": a,
            "gamma": float(self.gamma),
            "n_pool": pool.n,
            "n_population": int(population.size),
            "reference_train_size": int(membership.sum(axis=1).mean()),
            "decision": "score >= 0.5 (LR > gamma against at least half of the population)",
            "seconds": dict(self.timings_),
        }
        result = shadow_result(self.name, labels, scores, extra, 0.5)
        self.membership_ = membership
        self.evaluated_ = evaluated
        self.population_ = population
        self.offline_a_ = a
        self.ratio_x_ = ratio[x_pos]
        self.result_ = result
        return result
