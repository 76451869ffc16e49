"""Anonymizers: each decides the groups; recoding and verification are shared.

See :mod:`anonml.anonymize._pipeline` for the shared *recode → verify* half.
"""

from anonml.anonymize._accuracy_guided import AccuracyGuidedAnonymizer
from anonml.anonymize._model import AnonymizationResult, anonymize_model

__all__ = ["AccuracyGuidedAnonymizer", "AnonymizationResult", "anonymize_model"]
