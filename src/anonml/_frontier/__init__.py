"""The privacy–utility frontier: methods × k in one run, and automatic k.

:func:`frontier` anonymizes the training data with each method at each k, retrains the model,
and measures what each point costs (test accuracy on raw and on mapped test rows, information
loss) and buys (membership attack AUC and TPR at 0.1 % FPR on the real people, the worst-case
attack, the attribute risk), each with its 95 % bootstrap interval
(:mod:`anonml._frontier._uncertainty`). :class:`FrontierResult` holds the tidy table, writes
CSV, JSON, a plot and an HTML page, and answers ``largest_k`` / ``smallest_k`` / ``recommend``
(the rule: :mod:`anonml._frontier._recommend`).
See docs/frontier.md.
"""

from anonml._frontier._result import FrontierResult
from anonml._frontier._sweep import METHODS, AnonymizeThenFit, frontier

__all__ = ["METHODS", "AnonymizeThenFit", "FrontierResult", "frontier"]

