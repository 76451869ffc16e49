"""Small private utilities shared by every package: row counts and the parameter checks in the
house wording (one helper per kind of number, instead of one per module).

Kept free of heavy imports (numpy only), so any module may use it.
"""

from __future__ import annotations

from typing import Any

import math
import numbers

import numpy as np

__all__ = ["check_int", "check_real", "n_rows"]


def n_rows(data: Any) -> int:
    """Number of rows of a table-like ``data``: a DataFrame, Series, array, sparse matrix,
    list of rows, or any object numpy can turn into an array (scikit-learn's "array-likes"
    without ``len``); 0 for None."""
    if data is None:
        return 0
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(data)
    except TypeError:
        arr = np.asarray(data)  # e.g. an object with only __array__
        return int(arr.shape[0]) if arr.ndim else 0


def check_int(name: str, value: Any, *, low: int = 1, example: Any = None) -> int:
    """``value`` as an int if it is a whole number (not a bool) >= ``low``; otherwise an
    :class:`~anonml.exceptions.InputError` in one line naming ``name``, the value, the bound and,
    with ``example``, a value to pass (``"n_grid=1 must be an integer >= 2, e.g. n_grid=50"``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        from anonml._errors import InputError

        bound = "a positive integer" if low == 1 else f"an integer >= {low}"
        hint = f", e.g. {name}={example}" if example is not None else ""
        raise InputError(f"{name}={value!r} must be {bound}{hint}")
    return int(value)


def check_real(name: str, value: Any, *, example: Any = None) -> float:
    """``value`` as a float if it is a positive finite number (not a bool); otherwise an
    :class:`~anonml.exceptions.InputError` in one line naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            math.isfinite(value) and value > 0):
        from anonml._errors import InputError

        hint = f", e.g. {name}={example}" if example is not None else ""
        raise InputError(f"{name}={value!r} must be a positive finite number{hint}")
    return float(value)
