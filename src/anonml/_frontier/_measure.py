"""What one point of the frontier costs and buys: accuracy, and the attacks' success.

Membership risk is measured on the real people: the members are the *original* training rows
(the people the anonymized model was trained on, through their recoded records) and the
non-members the test rows, both as raw records, exactly as the audit
(:func:`anonml.safemodel.request_release`) attacks a model. The attacks are anonml's own:

* RMIA (Zarifzadeh et al., 2024) with reference models, built from the same pieces as
  :class:`anonml.attacks.RMIA` (:func:`~anonml.attacks._shadow.balanced_membership`,
  :func:`~anonml.attacks._shadow.shadow_scores`, :func:`~anonml.attacks._rmia.rmia_counts`);
  :class:`SharedReference` trains the reference models **once** and scores every point with
  them (see its docstring for when that is sound);
* LiRA (Carlini et al., 2022) on request, per point;
* SACRO-ML's worst-case attack (:class:`anonml.attacks.WorstCaseMembership`);
* the worst-case attribute attack (:class:`anonml.attacks.WorstCaseAttribute`), reporting the
  largest lower 95 % bound of an attribute risk ratio over the attacked features.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from anonml._progress import announce
from anonml.attacks._core import AttackResult, as_generator, attack_result, balanced_indices

__all__ = ["LOW_FPR", "MIN_NEGATIVES", "SharedReference", "accuracy", "attack_point"]

#: the false-positive rate of the low-FPR measure
LOW_FPR = 0.001
#: non-members needed to resolve ``LOW_FPR`` (one false positive = 1 / n_negatives)
MIN_NEGATIVES = 1000


def accuracy(model: Any, X: Any, y: np.ndarray) -> float:
    """Share of rows of ``X`` whose prediction equals ``y``."""
    return float(np.mean(np.asarray(model.predict(X)) == np.asarray(y)))


class SharedReference:
    """RMIA reference models trained once and shared by every point of a frontier.

    RMIA scores a record ``x`` by ``Pr(x|θ) / Pr(x)``, where ``Pr(x)`` is its probability
    under reference models trained on random halves of the population. Those reference models
    depend on the population (the members and non-members, raw), the training procedure they
    imitate and their seeds, **not on the target**. Trained with the undefended procedure
    (the estimator fitted on raw rows), they are the same for every anonymized point, so they
    are trained once: the attack then asks "does this model fit its members better than a
    model trained without them normally would?", which is the audit's question for any
    released model. What cannot be shared: reference models that imitate the *anonymizing*
    procedure (anonymize the half, then fit), which an attacker who knows the method and k
    would use; they differ per (method, k) and are trained per point when the frontier is
    asked for ``reference="matched"`` (:class:`AnonymizeThenFit`). A model of another family
    (the DP baseline) gets its own reference models of its own kind.

    Parameters
    ----------
    target : anonml.attacks.Target
        The undefended model with the raw members and non-members (fixes the pool and the
        classes).
    estimator : estimator
        Unfitted estimator the reference models are clones of.
    n_reference : int
    n_jobs, random_state, progress : as for :class:`anonml.attacks.RMIA`.
    """

    def __init__(self, target: Any, estimator: Any, n_reference: int = 4, *,
                 n_jobs: Any = 1, random_state: Any = 0,
                 progress: Callable | None = None) -> None:
        from anonml.attacks._shadow import balanced_membership, build_pool, shadow_scores

        t0 = time.perf_counter()
        pool = build_pool(target, "RMIA")
        rng = as_generator(random_state)
        n_m = pool.n_members
        member_idx, nonmember_idx = balanced_indices(target.n("train"), target.n("test"), rng)
        population = np.arange(n_m, pool.n)
        self.member_idx = member_idx
        self.labels = np.concatenate([np.ones(member_idx.size, np.int64),
                                      np.zeros(nonmember_idx.size, np.int64)])
        self.pred_idx = np.concatenate([member_idx, population])
        self.x_pos = np.concatenate([np.arange(member_idx.size),
                                     member_idx.size + nonmember_idx])
        self.z_pos = member_idx.size + np.arange(population.size)
        self.codes = pool.codes[self.pred_idx]
        membership = balanced_membership(pool.n, int(n_reference), rng)
        seeds = rng.integers(0, 2**31 - 1, int(n_reference))
        p_ref, _, _ = shadow_scores(estimator, pool, membership, self.pred_idx, seeds, n_jobs,
                                    progress=progress, label="RMIA reference models")
        # online RMIA: Pr(x) is the mean over all reference models (half IN, half OUT)
        from anonml.attacks._rmia import reference_probability

        self.p_x = reference_probability(p_ref, membership[:, self.pred_idx], online=True,
                                         offline_a=1.0)
        self.n_reference = int(n_reference)
        self.n_nonmembers = int(nonmember_idx.size)
        self.seconds = time.perf_counter() - t0

    def run(self, target: Any) -> AttackResult:
        """RMIA on ``target`` (same members and non-members as the one the pool came from)."""
        from anonml.attacks._rmia import _PX_FLOOR, rmia_counts
        from anonml.attacks._shadow import true_class_scores

        proba = np.concatenate([target.proba("train")[self.member_idx], target.proba("test")])
        p_target, _ = true_class_scores(proba, self.codes)
        ratio = p_target / np.maximum(self.p_x, _PX_FLOOR)
        scores = rmia_counts(ratio[self.x_pos], ratio[self.z_pos], 1.0)
        return attack_result("rmia-online", self.labels, scores, threshold=0.5,
                             extra={"n_reference": self.n_reference, "shared": True})


def _arr_low(result: Any) -> float:
    from anonml.safemodel._release import _arr_interval

    lows = [_arr_interval(r)[0] for r in result.attributes]
    lows = [v for v in lows if v is not None and math.isfinite(v)]
    return float(max(lows)) if lows else float("nan")


def attack_point(target: Any, *, attack: str, shared: SharedReference | None,
                 n_reference: int, shadow_estimator: Any, attribute_features: Any,
                 categorical: Any, max_attribute_records: int | None, random_state: Any,
                 worst_case_reps: int = 5, n_jobs: Any = 1,
                 progress: Callable | None = None, bootstrap: int = 0,
                 bootstrap_seed: Any = None) -> dict:
    """Every membership and attribute measure of one fitted model (the row's risk columns).

    ``shared``: the reference models to reuse (RMIA only); otherwise the attack trains its own
    clones of ``shadow_estimator``. ``bootstrap`` replicates (0: none) give the 95 % percentile
    intervals ``attack_auc_lo/hi`` and ``tpr_at_0.1%_fpr_lo/hi`` over the attack's members and
    non-members (:mod:`anonml._frontier._uncertainty`), drawn from ``bootstrap_seed``.
    """
    from anonml.attacks import LiRA, RMIA, WorstCaseAttribute, WorstCaseMembership

    say = announce(progress)
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    say(attack)
    if shared is not None and attack == "rmia":
        res = shared.run(target)
        out["reference_models"] = "shared"
    else:
        cls = RMIA if attack == "rmia" else LiRA
        res = cls(n_reference, shadow_estimator=shadow_estimator, n_jobs=n_jobs,
                  random_state=random_state).run(target)
        out["reference_models"] = "own"
    out["attack_auc"] = float(res.auc)
    n_neg = int(res.n_nonmembers)
    measurable = n_neg >= MIN_NEGATIVES
    out["tpr_at_0.1%_fpr"] = float(res.tpr_at_fpr(LOW_FPR)) if measurable else float("nan")
    out["tpr_measurable"] = bool(measurable)
    if bootstrap:
        from anonml._frontier._uncertainty import attack_replicates, interval

        aucs, tprs = attack_replicates(res.labels, res.scores, int(bootstrap),
                                       np.random.default_rng(bootstrap_seed), LOW_FPR)
        out["attack_auc_lo"], out["attack_auc_hi"] = interval(aucs)
        if measurable:
            out["tpr_at_0.1%_fpr_lo"], out["tpr_at_0.1%_fpr_hi"] = interval(tprs)
    out["seconds_attack"] = time.perf_counter() - t0
    say("worst-case attack")
    wc = WorstCaseMembership(n_reps=worst_case_reps, n_jobs=n_jobs,
                             random_state=random_state).run(target)
    out["worst_case_auc"] = float(wc.extra.get("mean_auc", wc.auc))
    out["worst_case_significant"] = f"{wc.extra['n_significant']}/{wc.extra['n_reps']}"
    say("attribute attack")
    attr = WorstCaseAttribute(attribute_features, categorical_features=categorical,
                              label="true", max_records=max_attribute_records,
                              random_state=random_state).run(target)
    out["max_arr_low"] = _arr_low(attr)
    return out
