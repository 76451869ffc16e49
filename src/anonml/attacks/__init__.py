"""Privacy attacks on trained models: how much does a model reveal about its training data?

Membership inference (was this record in the training set?):

* :class:`MembershipInferenceBlackBox`: an attack model on the target's probabilities and the
  true label (Shokri et al., 2017; as used by Goldsteen et al., 2022, Sec. 4.3).
* :class:`WorstCaseMembership`: the SACRO-ML / AI-SDC "worst case" attack, trained on the
  target's own outputs for members vs non-members, with a no-signal baseline and
  multiple-testing-corrected significance.
* LiRA (Carlini et al., 2022) and RMIA (Zarifzadeh et al., 2024): shadow-model attacks.

Attribute inference: attacks that recover a sensitive feature of a training record.

Shared pieces: :class:`Target` (a model or its probabilities, with member and non-member data),
:class:`AttackResult` and :func:`attack_result` (ROC, AUC and its p-value, advantage,
TPR at low FPR, accuracy / precision / recall).

Submodules are imported on first use; names whose module is not installed in this version
raise an ``AttributeError`` that says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anonml._lazy import lazy_attributes

#: public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    # core
    "Target": "anonml.attacks._core",
    "AttackResult": "anonml.attacks._core",
    "attack_result": "anonml.attacks._core",
    "balanced_indices": "anonml.attacks._core",
    "auc_score": "anonml.attacks._core",
    "auc_pvalue": "anonml.attacks._core",
    "membership_advantage": "anonml.attacks._core",
    "tpr_at_fpr": "anonml.attacks._core",
    "classification_metrics": "anonml.attacks._core",
    "roc": "anonml.attacks._core",
    # membership: black box and worst case
    "MembershipInferenceBlackBox": "anonml.attacks._membership",
    "WorstCaseMembership": "anonml.attacks._worst_case",
    # membership: shadow-model attacks (written separately)
    "LiRA": "anonml.attacks._lira",
    "RMIA": "anonml.attacks._rmia",
    # attribute inference (written separately)
    "AttributeInferenceBlackBox": "anonml.attacks._attribute",
    "AttributeInferenceBaseline": "anonml.attacks._attribute",
    "AttributeAttackResult": "anonml.attacks._attribute",
    "WorstCaseAttribute": "anonml.attacks._attribute_worst_case",
    "WorstCaseAttributeResult": "anonml.attacks._attribute_worst_case",
    "AttributeRisk": "anonml.attacks._attribute_worst_case",
    "risk_ratio_test": "anonml.attacks._attribute_worst_case",
}

__all__ = [
    "AttackResult",
    "AttributeAttackResult",
    "AttributeInferenceBaseline",
    "AttributeInferenceBlackBox",
    "AttributeRisk",
    "LiRA",
    "MembershipInferenceBlackBox",
    "RMIA",
    "Target",
    "WorstCaseAttribute",
    "WorstCaseAttributeResult",
    "WorstCaseMembership",
    "attack_result",
    "auc_pvalue",
    "auc_score",
    "balanced_indices",
    "classification_metrics",
    "membership_advantage",
    "risk_ratio_test",
    "roc",
    "tpr_at_fpr",
]

if TYPE_CHECKING:  # pragma: no cover
    from anonml.attacks._core import (
        AttackResult,
        Target,
        attack_result,
        auc_pvalue,
        auc_score,
        balanced_indices,
        classification_metrics,
        membership_advantage,
        roc,
        tpr_at_fpr,
    )
    from anonml.attacks._membership import MembershipInferenceBlackBox
    from anonml.attacks._worst_case import WorstCaseMembership


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
