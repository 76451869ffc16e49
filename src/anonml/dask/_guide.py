"""The guide labels on Dask: classes only.

In memory, the accuracy-guided tree follows scikit-learn's rule for the task (``task="auto"``):
float labels that are not all whole numbers are a regression target, and the tree then splits
by variance reduction (``criterion="squared_error"``). The Dask engine grows classification
trees only (its histograms are class counts, summed exactly); a continuous guide is refused
in one line rather than grown as a classification over every distinct value. For Mondrian the
labels only choose representatives, and a continuous target has no majority class: as in
memory (``y_codes=None``), the rule is then the plain medoid.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError

__all__ = ["is_continuous", "refuse_regression"]


def is_continuous(counts: pd.Series | None) -> bool:
    """Whether the reduced value counts of the guide are those of a regression target
    (floats, not all whole: scikit-learn's ``type_of_target`` rule, as in memory)."""
    if counts is None or not len(counts):
        return False
    values = pd.Index(counts.index).dropna()
    if values.dtype.kind != "f":  # as in memory: a numeric dtype of floats
        return False
    v = np.asarray(values, dtype=np.float64)
    return bool(np.any(v != np.round(v)))


def refuse_regression(name: Any) -> InputError:
    """The one line for a continuous guide on the Dask engine."""
    return InputError(
        f"the guide {name!r} holds numbers that are not whole (a regression target); the Dask "
        "engine grows classification trees only; fix: anonymize in memory (--engine memory: "
        "a regression tree split by variance reduction), or bin the target into classes")
