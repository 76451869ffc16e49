"""anonml: release machine-learning models trained on personal data without releasing the people in it.

The core method is accuracy-guided anonymization (Goldsteen et al., 2022): the training data is made
k-anonymous along a decision tree fitted to the model's own predictions, so that the anonymization
hurts that model least. Every anonymized table is checked independently before it is returned.

Heavy submodules are imported on first use, so ``import anonml`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AccuracyGuidedAnonymizer",
    "MondrianAnonymizer",
    "HilbertAnonymizer",
    "RTreeAnonymizer",
    "SaNGreeAAnonymizer",
    "AnonymizationResult",
    "anonymize_model",
    "attacks",
    "datasets",
    "hierarchies",
    "privacy",
    "__version__",
]

_LAZY = {
    "AccuracyGuidedAnonymizer": ("anonml.anonymize", "AccuracyGuidedAnonymizer"),
    "MondrianAnonymizer": ("anonml.anonymize", "MondrianAnonymizer"),
    "HilbertAnonymizer": ("anonml.anonymize", "HilbertAnonymizer"),
    "RTreeAnonymizer": ("anonml.anonymize", "RTreeAnonymizer"),
    "SaNGreeAAnonymizer": ("anonml.anonymize", "SaNGreeAAnonymizer"),
    "AnonymizationResult": ("anonml.anonymize", "AnonymizationResult"),
    "anonymize_model": ("anonml.anonymize", "anonymize_model"),
    "frontier": ("anonml._frontier", "frontier"), "FrontierResult": ("anonml._frontier", "FrontierResult"),
    "attacks": ("anonml.attacks", None),
    "datasets": ("anonml.datasets", None),
    "hierarchies": ("anonml.hierarchies", None),
    "privacy": ("anonml.privacy", None),
}

if TYPE_CHECKING:  # pragma: no cover
    from anonml import datasets, privacy
    from anonml.anonymize import AccuracyGuidedAnonymizer, AnonymizationResult, anonymize_model


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'anonml' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
