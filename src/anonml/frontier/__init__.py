"""The privacy–utility frontier: methods × k in one run, and automatic k.

:func:`frontier` anonymizes the training data with each method at each k, retrains the model,
and measures what each point costs (test accuracy on raw and on mapped test rows, information
loss) and buys (membership attack AUC and TPR at 0.1 % FPR on the real people, the worst-case
attack, the attribute risk). :class:`FrontierResult` holds the tidy table, writes CSV, JSON,
a plot and an HTML page, and answers ``largest_k`` / ``smallest_k`` / ``recommend``.
See docs/frontier.md.
"""

from anonml.frontier._result import FrontierResult
from anonml.frontier._sweep import METHODS, AnonymizeThenFit, frontier

__all__ = ["METHODS", "AnonymizeThenFit", "FrontierResult", "frontier"]


# ``import anonml.frontier`` binds this package to ``anonml.frontier``, where ``anonml`` would
# otherwise give the function: the package is callable too, so ``anonml.frontier(...)`` runs the
# sweep either way.
import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    def __call__(self, *args, **kwargs):
        return frontier(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
