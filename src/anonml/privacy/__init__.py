"""Privacy models as pure functions of a released table.

These checks are independent of the anonymizers: they look only at the output table, never at
the groups an algorithm meant to build, so they catch a bug in any partitioner or recoder.
"""

from anonml.privacy._k_anonymity import equivalence_classes, k_anonymity

__all__ = ["equivalence_classes", "k_anonymity"]
