"""Example release reports (schema v1) for the report tests: one per decision.

Test fixtures only. The numbers are made up but consistent: each membership attack's ROC curve
comes from a binormal model (member and non-member scores normal with unit variance, means ``d``
apart), so its AUC is ``Phi(d / sqrt(2))`` and its TPR at a given FPR is ``Phi(d + Phi^-1(FPR))``.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy import stats

__all__ = ["DECISIONS", "all_reports", "make_report"]

DECISIONS = ("release", "release_with_conditions", "do_not_release")
_LABELS = {
    "release": "Release",
    "release_with_conditions": "Release with conditions",
    "do_not_release": "Do not release",
}
_SHA = "3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea"
_FEATURES = [
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "sex",
    "hours-per-week",
]


def _binormal_attack(attack_id: str, name: str, d: float, n: int = 2000) -> dict:
    """A membership attack whose ROC is the binormal curve with separation ``d``."""
    fpr = np.concatenate([[0.0], np.logspace(-4, 0, 160)])
    tpr = stats.norm.cdf(d + stats.norm.ppf(fpr))
    tpr[0] = 0.0
    auc = float(stats.norm.cdf(d / math.sqrt(2)))
    advantage = float(np.max(tpr - fpr))
    # Mann-Whitney z for AUC with n members and n non-members (normal approximation)
    se = math.sqrt((2 * n + 1) / (12 * n * n))
    p = float(stats.norm.sf((auc - 0.5) / se))
    return {
        "id": attack_id,
        "name": name,
        "kind": "membership",
        "metrics": {
            "auc": round(auc, 6),
            "auc_pvalue": p,
            "accuracy": round(0.5 + advantage / 2, 6),
            "advantage": round(advantage, 6),
            "tpr_at_fpr_0.001": round(float(stats.norm.cdf(d + stats.norm.ppf(0.001))), 6),
            "tpr_at_fpr_0.01": round(float(stats.norm.cdf(d + stats.norm.ppf(0.01))), 6),
            "tpr_at_fpr_0.1": round(float(stats.norm.cdf(d + stats.norm.ppf(0.1))), 6),
        },
        "roc": {"fpr": [round(float(v), 8) for v in fpr], "tpr": [round(float(v), 8) for v in tpr]},
        "settings": {"n_members": n, "n_non_members": n, "random_state": 0},
        "seconds": 0.8 + d,
    }


def _attribute_rows(gap: float) -> list[dict]:
    """Per-feature worst-case attribute inference; ``gap`` scales the train/test difference."""
    rng = np.random.default_rng(7)
    rows = []
    n = 1500
    for i, feature in enumerate(_FEATURES):
        kind = "continuous" if feature in ("age", "hours-per-week") else "categorical"
        test_rate = float(rng.uniform(0.15, 0.45))
        train_rate = min(0.99, test_rate * (1 + gap * (i % 3) / 2))
        arr = train_rate / test_rate
        # log risk-ratio standard error for two proportions over n rows each
        se = math.sqrt((1 - train_rate) / (n * train_rate) + (1 - test_rate) / (n * test_rate))
        low, high = arr * math.exp(-1.96 * se), arr * math.exp(1.96 * se)
        p = float(2 * stats.norm.sf(abs(math.log(arr)) / se))
        rows.append(
            {
                "feature": feature,
                "kind": kind,
                "arr": round(arr, 4),
                "ci_low": round(low, 4),
                "ci_high": round(high, 4),
                "p_value": p,
                "train_rate": round(train_rate, 4),
                "test_rate": round(test_rate, 4),
                "significant": bool(p < 0.05 and low > 1),
            }
        )
    rows[-1].update(arr=None, ci_low=None, ci_high=None, p_value=None, significant=False)
    return rows


def _evidence(decision: str) -> list[dict]:
    auc_fail = decision == "do_not_release"
    cond = decision == "release_with_conditions"
    return [
        {
            "rule_id": "min_samples_leaf",
            "title": "Smallest leaf size",
            "category": "hyperparameter",
            "outcome": "pass",
            "effect": "block",
            "measured": "5",
            "threshold": "at least 5",
            "explanation": "Leaves with very few training rows can reveal those rows.",
            "fix": "Set min_samples_leaf to 5 or more and retrain.",
            "source": "SACRO-ML default risk appetite (safemodel rules, 2023)",
            "condition": None,
        },
        {
            "rule_id": "membership_auc",
            "title": "Membership attack AUC",
            "category": "membership",
            "outcome": "fail" if auc_fail else "pass",
            "effect": "block",
            "measured": "0.712" if auc_fail else "0.534",
            "threshold": "at most 0.60",
            "explanation": "An AUC well above 0.5 means an attacker can tell who was in the "
            "training data.",
            "fix": "Anonymize the training data (k >= 10) or regularize the model, then re-run.",
            "source": "Jayaraman et al. 2021; anonml default",
            "condition": None,
        },
        {
            "rule_id": "attribute_arr",
            "title": "Attribute inference risk ratio",
            "category": "attribute",
            "outcome": "fail" if cond or auc_fail else "pass",
            "effect": "condition",
            "measured": "1.31" if cond or auc_fail else "1.02",
            "threshold": "at most 1.20 (95% CI low)",
            "explanation": "A ratio above 1 means the model helps guess a person's attribute.",
            "fix": "Treat the flagged attributes as sensitive or remove them.",
            "source": "Krumpal et al. (GRAIMatter report, 2022)",
            "condition": "Release only to approved researchers under a data-use agreement.",
        },
        {
            "rule_id": "k_anonymity",
            "title": "k-anonymity of the training data",
            "category": "anonymization",
            "outcome": "pass",
            "effect": "warn",
            "measured": "k = 12",
            "threshold": "at least 10",
            "explanation": "Every combination of quasi-identifier values is shared by at least "
            "k people.",
            "fix": None,
            "source": "Project data-protection plan, section 4.2",
            "condition": None,
        },
        {
            "rule_id": "dp_epsilon",
            "title": "Privacy budget ε",
            "category": "privacy_budget",
            "outcome": "not_applicable",
            "effect": "block",
            "measured": None,
            "threshold": "ε ≤ 10",
            "explanation": "Only applies to differentially private models.",
            "fix": None,
            "source": "anonml defaults",
            "condition": None,
        },
        {
            "rule_id": "tamper",
            "title": "Model unchanged since training",
            "category": "tamper",
            "outcome": "pass",
            "effect": "block",
            "measured": "unchanged",
            "threshold": "no change",
            "explanation": "Checks the model was not edited after the safe wrapper fitted it.",
            "fix": "Re-fit the model through the safe wrapper.",
            "source": "anonml defaults",
            "condition": None,
        },
        {
            "rule_id": "generalisation_gap",
            "title": "Train/test accuracy gap",
            "category": "performance",
            "outcome": "not_evaluated",
            "effect": "warn",
            "measured": None,
            "threshold": "at most 0.10",
            "explanation": "A large gap is a sign of overfitting, which helps attacks.",
            "fix": "Provide a test set.",
            "source": "anonml defaults",
            "condition": None,
        },
    ]


def make_report(decision: str = "release") -> dict:
    """A complete, schema-valid report with the given decision."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}")
    evidence = _evidence(decision)
    failing = [e for e in evidence if e["outcome"] == "fail"]
    shown = failing or [e for e in evidence if e["outcome"] == "pass"][:2]
    reasons = [
        {
            "rule_id": e["rule_id"],
            "text": e["explanation"],
            "measured": e["measured"] or "",
            "threshold": e["threshold"],
            "source": e["source"],
            "effect": e["effect"],
        }
        for e in sorted(shown, key=lambda e: ["block", "condition", "warn"].index(e["effect"]))
    ]
    d = {"release": 0.15, "release_with_conditions": 0.35, "do_not_release": 0.8}[decision]
    summary = {
        "release": "This model can be released. The privacy checks found no meaningful risk to "
        "the people in the training data.",
        "release_with_conditions": "This model can be released only under the conditions below. "
        "One check found a moderate risk of attribute inference.",
        "do_not_release": "Do not release this model. An attacker could tell who was in the "
        "training data — fix the issues below and run the check again.",
    }[decision]
    next_steps = {
        "release": ["Keep this report with the release request."],
        "release_with_conditions": [
            "Record the conditions in the release agreement.",
            "Keep this report with the release request.",
        ],
        "do_not_release": [
            "Anonymize the training data with k ≥ 10 and retrain.",
            "Run the release check again and attach the new report.",
        ],
    }[decision]
    return {
        "schema_version": "1.0",
        "report_type": "anonml.release-report",
        "created_utc": "2026-11-22T07:30:00Z",
        "anonml_version": "0.1.0",
        "title": "Release check: RandomForestClassifier trained on adult",
        "verdict": {
            "decision": decision,
            "label": _LABELS[decision],
            "summary": summary,
            "reasons": reasons,
            "conditions": [e["condition"] for e in failing if e["effect"] == "condition"]
            if decision == "release_with_conditions"
            else [],
            "next_steps": next_steps,
        },
        "model": {
            "class": "SafeRandomForestClassifier",
            "family": "random_forest",
            "params": {
                "n_estimators": 100,
                "max_depth": 8,
                "min_samples_leaf": 5,
                "criterion": "gini",
                "bootstrap": True,
                "max_features": None,
            },
            "fingerprint": "sha256:" + _SHA,
            "file": {"name": "model.skops", "sha256": _SHA[::-1]},
            "n_features": len(_FEATURES),
            "n_classes": 2,
            "feature_names": list(_FEATURES),
        },
        "data": {
            "n_train": 30162,
            "n_test": 15060,
            "target": "income",
            "anonymization": {
                "method": "accuracy_guided",
                "k": 10,
                "k_achieved": 12,
                "l": None,
                "t": None,
                "quasi_identifiers": ["age", "education", "marital-status", "sex"],
                "verified": True,
                "detail": "Every group of quasi-identifier values holds at least 12 rows.",
            },
        },
        "rules": {
            "name": "anonml-default",
            "version": "2026.1",
            "origin": "anonml defaults",
            "sha256": _SHA,
            "n_rules": len(evidence),
        },
        "evidence": evidence,
        "attacks": [
            _binormal_attack("worst_case", "Worst-case attack (attacker knows the rest)", d * 1.6),
            _binormal_attack("lira", "Likelihood-ratio attack (LiRA)", d),
            _binormal_attack("shadow", "Shadow-model attack", d * 0.6),
        ],
        "attribute_risk": _attribute_rows(
            {"release": 0.02, "release_with_conditions": 0.3, "do_not_release": 0.6}[decision]
        ),
        "checks": {
            "preliminary": []
            if decision == "release"
            else [
                {
                    "rule_id": "max_depth",
                    "message": "max_depth 8 is above the suggested 6.",
                    "fix": "Set max_depth=6 or lower.",
                }
            ],
            "tamper": {"status": "unchanged", "changed": []},
            "structure": {
                "min_group_size": 5,
                "n_small_groups": 0,
                "class_disclosure_groups": 0,
                "n_params": 41230,
                "residual_dof": None,
                "train_accuracy": 0.871,
                "test_accuracy": 0.852,
                "generalisation_gap": 0.019,
                "fingerprint_present": True,
            },
        },
        "glossary": [
            {
                "term": "Membership inference",
                "definition": "Guessing whether a person's record was used to train the model.",
            },
            {
                "term": "AUC",
                "definition": "Area under the ROC curve: 0.5 is guessing, 1 is a perfect attack.",
            },
            {
                "term": "ROC curve",
                "definition": "True positive rate against false positive rate, "
                "for every attack threshold.",
            },
            {
                "term": "ARR",
                "definition": "Attribute risk ratio: how much better an attribute is "
                "guessed for training rows than for new rows (1 = no difference).",
            },
            {
                "term": "k-anonymity",
                "definition": "Each person's quasi-identifier values are "
                "shared by at least k people.",
            },
        ],
        "timings": {
            "total_seconds": 12.4,
            "stages": {"attacks": 9.1, "attribute": 2.8, "structure": 0.5},
        },
    }


def all_reports() -> dict[str, dict]:
    """One report per decision, keyed by decision."""
    return {decision: copy.deepcopy(make_report(decision)) for decision in DECISIONS}
