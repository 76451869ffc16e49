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
from anonml.modelfile._family import model_family
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
    "fingerprint": "anonml.modelfile",
    "diff_fingerprints": "anonml.modelfile",
    "structural_measures": "anonml.modelfile",
    "load_model": "anonml.modelfile",
    "save_model": "anonml.modelfile",
    "open_model": "anonml.modelfile",
    "SandboxedModel": "anonml.modelfile",
    "SandboxedEstimator": "anonml.modelfile",
    "verify_mapping": "anonml.modelfile",
    "release_pipeline": "anonml.modelfile",
    "inventory": "anonml.modelfile",
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
