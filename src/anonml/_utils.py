"""Small private utilities shared by every package: row counts, the parameter checks in the
house wording (one helper per kind of number, instead of one per module) and the one conversion
of values to JSON (:func:`json_safe`). The progress protocol is :mod:`anonml._progress`.

Kept free of heavy imports (numpy only), so any module may use it.
"""

from __future__ import annotations

from typing import Any

import dataclasses
import math
import numbers
import os
import sys

import numpy as np

__all__ = ["check_int", "check_real", "json_safe", "n_rows"]


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


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data, for every summary and report anonml writes.

    Dicts (keys made ``str``), lists, tuples and arrays (numpy, or anything with ``tolist``
    such as a pandas Series) become lists; numpy and Python bools, integers and reals become
    ``bool``, ``int`` and ``float``, NaN and +-inf ``None`` (JSON has neither; written with
    ``allow_nan=False`` the output is strict RFC 8259 JSON); pandas' missing values (``pd.NA``,
    ``pd.NaT``) ``None``; dataclasses their fields (:func:`dataclasses.asdict`); paths their
    text (:func:`os.fspath`); anything else its ``str``.
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    pd = sys.modules.get("pandas")  # not imported here: only values pandas made can be its NA
    if pd is not None:
        if value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, (pd.Series, pd.Index)):
            return [json_safe(v) for v in value.tolist()]
    return str(value)
