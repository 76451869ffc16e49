"""Safe release of trained models (ante-hoc and post-hoc disclosure control).

* Rules: :func:`load_rules`, :func:`default_rules` — the TRE's risk appetite (TOML/JSON).
* Wrappers: :class:`SafeDecisionTreeClassifier`, :class:`SafeRandomForestClassifier`, ...,
  :class:`SafeModel` for any classifier — drop-in estimators that warn at fit about rule
  violations, record a fingerprint, and offer ``preliminary_check``, ``apply_constraints`` and
  ``posthoc_check``.
* :func:`request_release`: checks + attacks + verdict + report data (rendered by
  :mod:`anonml.report`).

Based on SACRO-ML (AI-SDC) ``safemodel`` and its attack suite; see ``docs/release.md``.
"""

from anonml._lazy import lazy_attributes
from anonml.safemodel._family import model_family
from anonml.safemodel._rules import (
    FAMILIES,
    MEASURES,
    Rule,
    RuleOutcome,
    RuleSet,
    default_rules,
    default_rules_text,
    evaluate_rules,
    load_rules,
)
from anonml.safemodel._wrappers import (
    Finding,
    PosthocResult,
    SafeDecisionTreeClassifier,
    SafeExtraTreesClassifier,
    SafeGradientBoostingClassifier,
    SafeHistGradientBoostingClassifier,
    SafeLogisticRegression,
    SafeMLPClassifier,
    SafeModel,
    SafeModelMixin,
    SafeRandomForestClassifier,
)

_LAZY = {
    "SafeDPRandomForestClassifier": "anonml.safemodel._optional",
    "SafeDPLogisticRegression": "anonml.safemodel._optional",
    "SafeDPSGDClassifier": "anonml.safemodel._optional",
    "SafeDPSVC": "anonml.safemodel._optional",
    "SafeXGBClassifier": "anonml.safemodel._optional",
    "request_release": "anonml.safemodel._release",
    "ReleaseDecision": "anonml.safemodel._release",
    "fingerprint": "anonml.safemodel._fingerprint",
    "diff_fingerprints": "anonml.safemodel._fingerprint",
    "structural_measures": "anonml.safemodel._structure",
    "load_model": "anonml.safemodel._model_file",
    "save_model": "anonml.safemodel._model_file",
    "open_model": "anonml.safemodel._sandbox",
    "SandboxedModel": "anonml.safemodel._sandbox",
    "SandboxedEstimator": "anonml.safemodel._sandbox",
    "verify_mapping": "anonml.safemodel._mapping",
    "release_pipeline": "anonml.safemodel._mapping",
    "inventory": "anonml.safemodel._inventory",
}

__all__ = [
    "FAMILIES", "MEASURES", "Finding", "PosthocResult", "Rule", "RuleOutcome", "RuleSet",
    "SafeModel", "SafeModelMixin", "SafeDecisionTreeClassifier", "SafeExtraTreesClassifier",
    "SafeGradientBoostingClassifier", "SafeHistGradientBoostingClassifier",
    "SafeLogisticRegression", "SafeMLPClassifier", "SafeRandomForestClassifier",
    "default_rules", "default_rules_text", "evaluate_rules", "load_rules", "model_family",
    *_LAZY,
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
