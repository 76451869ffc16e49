"""Privacy models and information-loss metrics, as pure functions of a released table.

The checks are independent of the anonymizers: they look only at the output table, never at
the groups an algorithm meant to build, so they catch a bug in any partitioner or recoder.
:class:`PrivacyModel` is the same models as constraints that partitioners honour while they
build groups. The metrics (:mod:`anonml.privacy._metrics`) measure what a grouping costs.
"""

from anonml.privacy._constraints import PrivacyModel, build_privacy_model
from anonml.privacy._diversity import l_diversity, t_closeness
from anonml.privacy._identifiers import unique_columns
from anonml.privacy._k_anonymity import equivalence_classes, k_anonymity
from anonml.privacy._metrics import (
    average_class_size,
    classification_metric,
    discernibility,
    gcp,
    gil,
    information_loss,
    ncp,
    ngil,
)

__all__ = [
    "PrivacyModel",
    "average_class_size",
    "build_privacy_model",
    "classification_metric",
    "discernibility",
    "equivalence_classes",
    "gcp",
    "gil",
    "information_loss",
    "k_anonymity",
    "l_diversity",
    "ncp",
    "ngil",
    "t_closeness",
    "unique_columns",
]
