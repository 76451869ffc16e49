"""The bounds a model file read from a stranger must keep, and the one-line refusal: shared by
the scikit-learn and the XGBoost validators (a leaf module: it imports nothing of anonml's but
the errors)."""

from __future__ import annotations

from typing import Any

import numpy as np

from anonml._errors import InputError

__all__ = ["MAX_CLASSES", "MAX_TREE_DEPTH", "bad", "exact_int", "n_features", "per_feature"]

#: deepest tree read (scikit-learn or XGBoost): genuine trees are far shallower, and XGBoost
#: walks trees recursively (a chain 400,000 deep overflowed its stack)
MAX_TREE_DEPTH = 10_000


def bad(where: str, text: str) -> InputError:
    if len(where) > 160:  # deep paths: keep the start (the file) and the end (the part)
        where = where[:60] + "..." + where[-90:]
    return InputError(f"{where}: {text}; the file is malformed or was edited by hand, so anonml "
                      "will not run it; fix: save the model again from the fitted estimator")


#: most classes a classifier read from an untrusted file may have (its probabilities are an
#: n_rows x n_classes array the audit computes many times over)
MAX_CLASSES = 10_000


def exact_int(value: Any) -> bool:
    """A whole number stored as one (int or numpy integer), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def n_features(obj: Any, where: str) -> int:
    """A fitted estimator's ``n_features_in_``, checked to be a positive whole number."""
    nf = obj.__dict__.get("n_features_in_")
    if not exact_int(nf) or int(nf) < 1:
        raise bad(where, f"n_features_in_ is {nf!r}, not a positive whole number (scikit-learn "
                  "checks the input's width against it)")
    return int(nf)


def per_feature(obj: Any, where: str, names: tuple, *, numeric: bool = False,
                finite: tuple = ()) -> int:
    """Each array ``names`` a fitted ``obj`` holds has one entry per input feature (of numbers,
    with ``numeric``; finite numbers for the ``finite`` ones); returns ``n_features_in_``."""
    nf = n_features(obj, where)
    for name in names:
        value = obj.__dict__.get(name)
        if value is None:
            continue
        arr = np.asarray(value)
        if arr.shape != (nf,) or (numeric and arr.dtype.kind not in "biuf"):
            raise bad(f"{where}.{name}", f"has shape {arr.shape}, not ({nf},)"
                      f"{' numbers' if numeric else ''} for its {nf} features")
        if name in finite and arr.dtype.kind in "biuf" and not np.isfinite(arr).all():
            raise bad(f"{where}.{name}", "holds a value that is not finite")
    return nf
