"""The guide labels on Dask: classes, or a regression target.

In memory, the accuracy-guided tree follows scikit-learn's rule for the task (``task="auto"``,
``type_of_target``): float labels that are not all whole numbers are a regression target, and
the histogram tree then splits by variance reduction (``criterion="squared_error"``; Breiman,
Friedman, Olshen & Stone, 1984, ch. 8). The Dask engine does the same:

* The first pass summarises the guide of each partition (:func:`guide_summary`): the value
  counts of class labels, or -- as soon as a partition holds a float that is not whole -- only
  that it is continuous and how many values are missing or infinite, so a continuous target of
  10^8 distinct values never travels to the client as value counts. :func:`merge_guide` merges
  two summaries, :func:`is_continuous` reads the merged one.
* A continuous guide is carried as float64 in each partition's
  :class:`~anonml.engine._kernels.PartState`; the tree's histograms are (count, sum of y) per
  (node, bin), the layout of the in-memory ``HistTree``'s regression histograms, and the node
  totals are (count, sum, sum of squares) for the in-memory purity test
  (:func:`anonml.dask._tree.grow`).
* A missing or infinite target is refused in one line naming the user's column
  (:func:`check_guide`), as a missing class label is.
* Representatives: in memory a regression target has no majority class (``y_codes=None``), so
  the majority rules equal their plain twins and the default is the plain medoid; the Dask
  engine uses the medoid too, for AG and Mondrian alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError

__all__ = ["guide_summary", "merge_guide", "is_continuous", "check_guide", "resolve_criterion"]

_CLASS_CRITERIA = ("gini", "entropy", "log_loss")


def _counts(values: Any) -> pd.Series:
    return pd.Series(values).value_counts(dropna=False)


def guide_summary(values: Any) -> dict | None:
    """Mergeable summary of one partition's guide: ``{"continuous": False, "counts": ...}``
    (value counts, missing values included), or for floats not all whole
    ``{"continuous": True, "missing": m, "infinite": i}`` (no counts)."""
    if values is None:
        return None
    s = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values))
    if pd.api.types.is_float_dtype(s.dtype):  # numpy or nullable floats
        f = s.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = np.isfinite(f)
        if np.any(f[finite] != np.round(f[finite])):
            return {"continuous": True, "missing": int(np.isnan(f).sum()),
                    "infinite": int(np.isinf(f).sum())}
    return {"continuous": False, "counts": _counts(s)}


def _as_continuous(g: dict) -> dict:
    if g["continuous"]:
        return g
    idx = pd.Index(g["counts"].index)
    cnt = g["counts"].to_numpy()
    nan = np.asarray(pd.isna(idx), dtype=bool)
    inf = np.zeros(idx.size, dtype=bool)
    if idx.dtype.kind == "f":
        inf = np.isinf(np.asarray(idx, dtype=np.float64))
    return {"continuous": True, "missing": int(cnt[nan].sum()), "infinite": int(cnt[inf].sum())}


def merge_guide(a: dict | None, b: dict | None) -> dict | None:
    """Merge two :func:`guide_summary` results (continuous when either is)."""
    if a is None or b is None:
        return a if b is None else b
    if a["continuous"] or b["continuous"]:
        a, b = _as_continuous(a), _as_continuous(b)
        return {"continuous": True, "missing": a["missing"] + b["missing"],
                "infinite": a["infinite"] + b["infinite"]}
    counts = pd.concat([a["counts"], b["counts"]]).groupby(level=0, dropna=False, sort=False).sum()
    return {"continuous": False, "counts": counts}


def is_continuous(guide: dict | pd.Series | None) -> bool:
    """Whether the merged guide summary (or reduced value counts) is that of a regression
    target: floats, not all whole (scikit-learn's ``type_of_target`` rule, as in memory)."""
    if guide is None:
        return False
    if isinstance(guide, dict):
        if guide["continuous"]:
            return True
        guide = guide["counts"]
    if not len(guide):
        return False
    values = pd.Index(guide.index).dropna()
    if values.dtype.kind != "f":  # as in memory: a numeric dtype of floats
        return False
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return bool(np.any(v != np.round(v)))


def check_guide(guide: dict, name: Any) -> None:
    """Refuse a continuous guide with missing or infinite values, in one line naming it."""
    g = _as_continuous(guide)
    if g["missing"]:
        raise InputError(f"label column {name!r} has {g['missing']} missing values; drop or "
                         "impute them")
    if g["infinite"]:
        raise InputError(f"label column {name!r} has {g['infinite']} infinite values; a "
                         "regression target must be finite: drop those rows or clip them")


def resolve_criterion(criterion: str | None, regression: bool, name: Any) -> str:
    """The tree's criterion for the guide, as ``AccuracyGuidedAnonymizer._resolve`` (hist):
    gini by default for classes, squared_error for a regression target; one that does not fit
    the guide is refused in one line."""
    if regression:
        if criterion in (None, "squared_error"):
            return "squared_error"
        raise InputError(
            f"criterion {criterion!r} does not fit the guide {name!r}: its numbers are not whole "
            "(a regression target); fix: squared_error (--tree-criterion squared_error), or "
            "leave the criterion out")
    if criterion is None:
        return "gini"
    if criterion == "squared_error":
        raise InputError(
            f"criterion 'squared_error' does not fit the guide {name!r}: it holds classes; fix: "
            "gini or entropy (--tree-criterion gini), or leave the criterion out")
    return "entropy" if criterion == "log_loss" else criterion
