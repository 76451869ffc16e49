"""Anonymizers: each decides the groups; recoding and verification are shared.

See :mod:`anonml.anonymize._pipeline` for the shared *recode → verify* half and
:mod:`anonml.anonymize._generalize` for generalized recoding, suppression and merging.
"""

from importlib import import_module
from typing import Any

from anonml.anonymize._accuracy_guided import AccuracyGuidedAnonymizer
from anonml.anonymize._model import AnonymizationResult, anonymize_model, retrain
from anonml.anonymize._summary import summarize

_LAZY = {
    "MondrianAnonymizer": "anonml.anonymize._mondrian",
    "HilbertAnonymizer": "anonml.anonymize._hilbert",
    "RTreeAnonymizer": "anonml.anonymize._rtree",
    "SaNGreeAAnonymizer": "anonml.anonymize._sangreea",
}

__all__ = ["AccuracyGuidedAnonymizer", "AnonymizationResult", "anonymize_model", "retrain",
           "summarize", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
