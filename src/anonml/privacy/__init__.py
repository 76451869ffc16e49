"""Privacy models as pure functions of a released table, and as constraints for partitioners.

The checks are independent of the anonymizers: they look only at the output table, never at
the groups an algorithm meant to build, so they catch a bug in any partitioner or recoder.
"""

from anonml.privacy._constraints import PrivacyModel, build_privacy_model
from anonml.privacy._diversity import l_diversity, t_closeness
from anonml.privacy._k_anonymity import equivalence_classes, k_anonymity

__all__ = [
    "PrivacyModel",
    "build_privacy_model",
    "equivalence_classes",
    "k_anonymity",
    "l_diversity",
    "t_closeness",
]
