"""Anonymizers: each decides the groups; recoding and verification are shared.

See :mod:`anonml.anonymize._pipeline` for the shared *recode → verify* half and
:mod:`anonml.anonymize._generalize` for generalized recoding, suppression and merging.
"""

from anonml._lazy import lazy_attributes
from anonml.anonymize._accuracy_guided import AccuracyGuidedAnonymizer
from anonml.anonymize._model import AnonymizationResult, anonymize_model, retrain
from anonml.anonymize._summary import summarize

_LAZY = {
    "MondrianAnonymizer": "anonml.anonymize._mondrian",
    "HilbertAnonymizer": "anonml.anonymize._hilbert",
    "RTreeAnonymizer": "anonml.anonymize._rtree",
    "SaNGreeAAnonymizer": "anonml.anonymize._sangreea",
    "AnonymizeThenFit": "anonml.anonymize._then_fit",
}

__all__ = ["AccuracyGuidedAnonymizer", "AnonymizationResult", "anonymize_model", "retrain",
           "summarize", *_LAZY]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
