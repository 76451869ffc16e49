"""anonml: release machine-learning models trained on personal data without releasing the people in it.

The core method is accuracy-guided anonymization (Goldsteen et al., 2022): the training data is made
k-anonymous along a decision tree fitted to the model's own predictions, so that the anonymization
hurts that model least. Every anonymized table is checked independently before it is returned.

Heavy submodules are imported on first use, so ``import anonml`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anonml._lazy import lazy_attributes
from anonml.exceptions import __all__ as _EXCEPTIONS

__version__ = "0.1.0"

__all__ = [
    "AccuracyGuidedAnonymizer",
    "MondrianAnonymizer",
    "HilbertAnonymizer",
    "RTreeAnonymizer",
    "SaNGreeAAnonymizer",
    "AnonymizationResult",
    "anonymize_model",
    "frontier",
    "FrontierResult",
    *_EXCEPTIONS,  # anonml.exceptions' names, NotFittedError among them (lazy)
    "anonymize",
    "attacks",
    "datasets",
    "dp",
    "exceptions",
    "hierarchies",
    "modelfile",
    "privacy",
    "report",
    "safemodel",
    "__version__",
]

_LAZY = {
    "AccuracyGuidedAnonymizer": "anonml.anonymize",
    "MondrianAnonymizer": "anonml.anonymize",
    "HilbertAnonymizer": "anonml.anonymize",
    "RTreeAnonymizer": "anonml.anonymize",
    "SaNGreeAAnonymizer": "anonml.anonymize",
    "AnonymizationResult": "anonml.anonymize",
    "anonymize_model": "anonml.anonymize",
    "frontier": "anonml._frontier",
    "FrontierResult": "anonml._frontier",
    **{name: "anonml.exceptions" for name in _EXCEPTIONS},  # loaded with anonml itself
    **{name: (f"anonml.{name}", None) for name in (
        "anonymize", "attacks", "datasets", "dp", "exceptions", "hierarchies", "modelfile",
        "privacy", "report", "safemodel")},
}

if TYPE_CHECKING:  # pragma: no cover
    from anonml import datasets, privacy
    from anonml.anonymize import AccuracyGuidedAnonymizer, AnonymizationResult, anonymize_model

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
