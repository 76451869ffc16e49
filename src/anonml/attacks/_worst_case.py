"""The "worst case" membership attack of SACRO-ML / AI-SDC, with a no-signal baseline.

The attacker is handed almost everything: the target's outputs on the members and
non-members *with their membership*, and trains an attack model on most of them. How well it
then separates the rest bounds what any black-box attacker could do with the same outputs
(Jefferson et al., 2022; Krueger et al., 2022; the ``WorstCaseAttack`` of SACRO-ML):

1. Every record (members and non-members, by default subsampled to 50/50) gets a feature
   vector from the target's output (see ``features``).
2. For each of ``n_reps`` repetitions, a stratified random split puts ``test_prop`` of the
   records aside; the attack model (by default SACRO-ML's random forest, ``max_depth=5``,
   ``min_samples_split=20``, ``min_samples_leaf=10``) is trained on the rest and scores the
   held-out records. Each repetition gives an AUC, its one-sided Mann–Whitney p-value, the
   advantage and TPR at low FPR.
3. A **baseline** runs exactly the same procedure ``n_dummy_reps`` times on the same features
   with the membership labels randomly permuted, which destroys every signal while keeping the
   feature distribution (SACRO-ML instead draws synthetic Beta-distributed probabilities; the
   permutation baseline is the null of *this* target's outputs).
4. With ``n_reps`` p-values, the number of repetitions significant at ``p_thresh`` is reported
   raw, with the Bonferroni correction (``p <= p_thresh / n_reps``) and with the
   Benjamini–Hochberg step-up procedure (the largest ``k`` with ``p_(k) <= k · p_thresh / n_reps``).

Features
--------
``"sorted"``
    The probability vector sorted in decreasing order (SACRO-ML's default ``sort_probs=True``);
    label-free.
``"sorted_correct"``
    ``"sorted"`` plus 1/0 "the model's top class is the true label" (SACRO-ML's
    ``include_model_correct_feature=True``).
``"sorted_true"`` (default)
    ``"sorted"`` plus the probability of the true label (from which the loss and, up to ties,
    correctness follow): the most informative of the label-aware options for a small model.
``"proba_label"``
    Probabilities in class order plus the one-hot label.

A fully grown decision tree outputs one-hot vectors on members and non-members alike, so the
label-free ``"sorted"`` features carry no signal about it at all; use a label-aware option for
a worst-case figure.

Returned result
---------------
:meth:`WorstCaseMembership.run` returns one :class:`~anonml.attacks._core.AttackResult` holding
the labels and scores of the **last repetition's** held-out split (one independent
evaluation, so its AUC p-value is valid as stated; pooling the repetitions would count records
several times). The statistics over repetitions, and those of the baseline, are in ``extra``.

References
----------
Jefferson, Liley, Krueger, Preen, Cole, Crespi, Smith, Ritchie, Rogers & Albashir (2022).
Recommendations for disclosure control of trained machine learning models from trusted research
environments (GRAIMatter). Zenodo, doi:10.5281/zenodo.7089491.
Krueger, Preen, Smith, Crespi et al. (2023). SACRO-ML / AI-SDC: tools for statistical disclosure
control of machine learning models. https://github.com/AI-SDC/SACRO-ML
Benjamini & Hochberg (1995). Controlling the false discovery rate. JRSS B 57(1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from anonml._errors import InputError
from anonml._utils import check_int
from anonml.attacks._core import (
    AttackResult,
    Target,
    as_generator,
    attack_result,
    auc_pvalue,
    auc_score,
    balanced_indices,
    counter,
    roc,
    tpr_at_fpr,
)
from anonml.attacks._membership import (
    attack_model_from_spec,
    check_n_jobs,
    check_open_fraction,
    check_target,
    member_column,
)

__all__ = ["WorstCaseMembership", "n_significant"]

#: the ``label`` this attack passes to ``progress(label, done, total)``
PROGRESS_LABEL = "worst-case attack repetitions"
_FEATURES = ("sorted", "sorted_correct", "sorted_true", "proba_label")
#: SACRO-ML's default random forest for this attack
_SACRO_RF = {"min_samples_split": 20, "min_samples_leaf": 10, "max_depth": 5}


def n_significant(pvalues: Any, alpha: float, method: str = "none") -> int:
    """Number of p-values significant at level ``alpha``.

    ``method`` is ``"none"`` (``p <= alpha``), ``"bonferroni"`` (``p <= alpha / m``) or
    ``"bh"`` (Benjamini–Hochberg: the largest ``k`` with ``p_(k) <= k · alpha / m``, the
    ``k`` smallest p-values being rejected).
    """
    p = np.sort(np.asarray(pvalues, dtype=np.float64))
    m = p.size
    if m == 0:
        return 0
    if method == "none":
        return int(np.sum(p <= alpha))
    if method == "bonferroni":
        return int(np.sum(p <= alpha / m))
    if method == "bh":
        ok = np.flatnonzero(p <= alpha * np.arange(1, m + 1) / m)
        return int(ok[-1] + 1) if ok.size else 0
    raise InputError(f"method={method!r} is not known; use 'none', 'bonferroni' or 'bh'")


def _null_auc_sd(n_pos: int, n_neg: int) -> float:
    """Standard deviation of the AUC of a no-signal attack (Hanley & McNeil, 1982, AUC = 0.5)."""
    return float(np.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg)))


def _one_rep(model: Any, Z: np.ndarray, labels: np.ndarray, train: np.ndarray,
             test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    model.fit(Z[train], labels[train])
    return labels[test], model.predict_proba(Z[test])[:, member_column(model)]


def _summary(reps: list[tuple[np.ndarray, np.ndarray]], alpha: float) -> dict:
    aucs, pvals, advs, t01, t10 = [], [], [], [], []
    for lab, sc in reps:
        fpr, tpr, _ = roc(lab, sc)
        aucs.append(auc_score(lab, sc))
        pvals.append(auc_pvalue(lab, sc))
        advs.append(float(np.max(tpr - fpr)))
        t01.append(tpr_at_fpr(fpr, tpr, 0.01))
        t10.append(tpr_at_fpr(fpr, tpr, 0.1))
    aucs_a = np.asarray(aucs)
    lab0 = reps[0][0]
    sd0 = _null_auc_sd(int(lab0.sum()), int(lab0.size - lab0.sum()))
    return {
        "n_reps": len(reps),
        "mean_auc": float(aucs_a.mean()),
        "std_auc": float(aucs_a.std(ddof=1)) if aucs_a.size > 1 else 0.0,
        "auc": aucs,
        "auc_pvalue": pvals,
        "advantage": advs,
        "mean_advantage": float(np.mean(advs)),
        "tpr_at_fpr_0.01": t01,
        "tpr_at_fpr_0.1": t10,
        "n_significant": n_significant(pvals, alpha, "none"),
        "n_significant_bonferroni": n_significant(pvals, alpha, "bonferroni"),
        "n_significant_bh": n_significant(pvals, alpha, "bh"),
        "null_auc_3sd_range": [0.5 - 3 * sd0, 0.5 + 3 * sd0],
    }


class WorstCaseMembership(BaseEstimator):
    """SACRO-ML's worst-case membership attack over repeated splits, with a shuffled baseline.

    See the module docstring for the procedure, the features and what is returned.

    Parameters
    ----------
    n_reps : int, default 10
        Repetitions (random stratified splits of the attack data).
    test_prop : float in (0, 1), default 0.2
        Fraction of the records held out from the attack model in each repetition.
    features : {"sorted", "sorted_correct", "sorted_true", "proba_label"}, default "sorted_true"
        What the attack model sees of each record (see the module docstring).
    attack_model : "rf", "gb" or classifier, default "rf"
        ``"rf"`` is SACRO-ML's forest (``max_depth=5, min_samples_split=20,
        min_samples_leaf=10``, 100 trees); an estimator is cloned for every repetition.
    n_dummy_reps : int, default 1
        Baseline runs (each ``n_reps`` repetitions on permuted membership labels); 0 for none.
    p_thresh : float in (0, 1), default 0.05
        Significance level of the per-repetition AUC tests.
    balance : bool, default True
        Subsample the larger side so members and non-members are 50/50 (SACRO-ML keeps all
        records: ``balance=False``). AUC does not depend on the balance; accuracy does.
    n_jobs : int, optional
        Repetitions run in parallel with joblib (threads).
    random_state : int, Generator or None
        Seeds the subsample, the splits, the permutations and the attack models.

    Examples
    --------
    >>> res = WorstCaseMembership(random_state=0).run(target)       # doctest: +SKIP
    >>> res.extra["mean_auc"], res.extra["n_significant_bh"]       # doctest: +SKIP
    """

    def __init__(
        self,
        n_reps: int = 10,
        test_prop: float = 0.2,
        features: str = "sorted_true",
        attack_model: Any = "rf",
        *,
        n_dummy_reps: int = 1,
        p_thresh: float = 0.05,
        balance: bool = True,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.n_reps = n_reps
        self.test_prop = test_prop
        self.features = features
        self.attack_model = attack_model
        self.n_dummy_reps = n_dummy_reps
        self.p_thresh = p_thresh
        self.balance = balance
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _check_params(self) -> None:
        check_int("n_reps", self.n_reps)
        check_open_fraction("test_prop", self.test_prop, "0.2")
        check_open_fraction("p_thresh", self.p_thresh, "0.05")
        if self.features not in _FEATURES:
            raise InputError(
                f"features={self.features!r} is not known; use one of "
                f"{', '.join(map(repr, _FEATURES))}"
            )
        if isinstance(self.attack_model, str) and self.attack_model not in ("rf", "gb"):
            raise InputError(
                f"attack_model={self.attack_model!r} is not known; use 'rf', 'gb' or a "
                "scikit-learn classifier with predict_proba"
            )
        check_int("n_dummy_reps", self.n_dummy_reps, low=0, why="0: no baseline")
        if not isinstance(self.balance, (bool, np.bool_)):
            raise InputError(f"balance={self.balance!r} must be True or False")
        check_n_jobs(self.n_jobs)

    def _features(self, target: Target, which: str) -> np.ndarray:
        P = target.proba(which)
        if self.features == "proba_label":
            return np.hstack([P, np.eye(target.n_classes)[target.label_codes(which)]])
        S = -np.sort(-P, axis=1)
        if self.features == "sorted":
            return S
        codes = target.label_codes(which)
        if self.features == "sorted_correct":
            extra = (np.argmax(P, axis=1) == codes).astype(np.float64)
        else:  # sorted_true
            extra = P[np.arange(P.shape[0]), codes]
        return np.hstack([S, extra[:, None]])

    def _model(self, seed: int) -> Any:
        return attack_model_from_spec(
            self.attack_model, seed, 1,
            rf_params=_SACRO_RF if self.attack_model == "rf" else None,
        )

    def _reps(self, Z: np.ndarray, labels: np.ndarray, rng: np.random.Generator,
              parallel: Any, tick: Any) -> list[tuple[np.ndarray, np.ndarray]]:
        from joblib import delayed
        from sklearn.model_selection import StratifiedShuffleSplit

        split = StratifiedShuffleSplit(
            n_splits=int(self.n_reps), test_size=float(self.test_prop),
            random_state=int(rng.integers(0, 2**31 - 1)),
        )
        seeds = rng.integers(0, 2**31 - 1, size=int(self.n_reps))
        out = []
        # the parallel call yields each repetition as it completes (in order): the count is
        # reported from here, never from a worker
        for rep in parallel(
            delayed(_one_rep)(self._model(int(s)), Z, labels, tr, te)
            for s, (tr, te) in zip(seeds, split.split(Z, labels))
        ):
            out.append(rep)
            tick()
        return out

    def run(self, target: Target, *, progress: Any = None) -> AttackResult:
        """Run the repetitions and the baseline; return the last repetition with the statistics.

        Parameters
        ----------
        target : Target
            A model (or its probabilities) with members and non-members.
        progress : callable, optional
            Called as ``progress(label, done, total)`` with ``done = 0`` before the first
            repetition and again as each repetition (baseline ones included) completes;
            ``total = n_reps * (1 + n_dummy_reps)``.

        Returns
        -------
        AttackResult
            Named ``"worst-case"``. ``extra`` holds ``mean_auc``, ``std_auc``, the
            per-repetition ``auc``, ``auc_pvalue``, ``advantage``, TPR at FPR 1 % and 10 %, the
            counts ``n_significant`` / ``n_significant_bonferroni`` / ``n_significant_bh`` at
            ``p_thresh``, ``null_auc_3sd_range``, and the same figures for the baseline under
            ``extra["baseline"]`` (repetitions of all dummy runs pooled).
        """
        from joblib import Parallel

        self._check_params()
        target = check_target(target)
        rng = as_generator(self.random_state)
        n_in, n_out = target.n("train"), target.n("test")
        idx_in, idx_out = balanced_indices(n_in, n_out, rng, balance=bool(self.balance))
        Z = np.vstack([self._features(target, "train")[idx_in],
                       self._features(target, "test")[idx_out]])
        labels = np.r_[np.ones(idx_in.size, dtype=np.int64), np.zeros(idx_out.size, dtype=np.int64)]
        n_test = int(np.ceil(self.test_prop * labels.size))
        smaller = min(idx_in.size, idx_out.size)
        if smaller < 2 or n_test < 2 or labels.size - n_test < 2:
            raise InputError(
                f"too few records for the worst-case attack: {idx_in.size} members and "
                f"{idx_out.size} non-members with test_prop={self.test_prop} leave {n_test} "
                "held-out records; each split needs at least one member and one non-member on "
                "each side: pass more records"
            )

        total = int(self.n_reps) * (1 + int(self.n_dummy_reps))
        tick = counter(progress, PROGRESS_LABEL, total)
        # threads: the forests release the GIL while growing trees, and no process start-up
        with Parallel(n_jobs=self.n_jobs, prefer="threads", return_as="generator") as parallel:
            reps = self._reps(Z, labels, rng, parallel, tick)
            dummy: list[tuple[np.ndarray, np.ndarray]] = []
            for _ in range(int(self.n_dummy_reps)):
                dummy += self._reps(Z, rng.permutation(labels), rng, parallel, tick)

        alpha = float(self.p_thresh)
        extra = {
            "features": self.features,
            "attack_model": self.attack_model if isinstance(self.attack_model, str)
            else type(self.attack_model).__name__,
            "test_prop": float(self.test_prop),
            "p_thresh": alpha,
            "balance": bool(self.balance),
            "n_members": int(idx_in.size),
            "n_nonmembers": int(idx_out.size),
            "scores_from": "last repetition",
            **_summary(reps, alpha),
        }
        if dummy:
            extra["baseline"] = {"kind": "permuted membership labels",
                                 "n_dummy_reps": int(self.n_dummy_reps), **_summary(dummy, alpha)}
        last_labels, last_scores = reps[-1]
        return attack_result("worst-case", last_labels, last_scores, extra=extra, threshold=0.5)
