"""Small private utilities shared by every package: row counts (more to come here, not in
each module: parameter checks in the house wording, JSON conversion, the progress protocol).

Kept free of heavy imports (numpy only), so any module may use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["n_rows"]


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
