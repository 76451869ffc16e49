"""Direct identifiers left in a table: columns whose value is different on every row.

k-anonymity changes only the quasi-identifiers. A column that is unique per row (a record
number, an e-mail address, a national id) and is not among them passes through untouched and
names every person on its own, so the released table is not anonymous at all.
:func:`unique_columns` finds such columns so that a caller can refuse the table until each one
is dropped or kept on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["unique_columns"]


def unique_columns(table: pd.DataFrame, exclude: Iterable[Any] = ()) -> list[Any]:
    """Columns of ``table`` (other than ``exclude``) whose value differs on every row.

    A column counts when it has no missing value and as many distinct values as the table has
    rows (at least 2). Columns of fractional numbers (a float column holding a value that is
    not whole) are measurements, not identifiers, and are not reported: each value of a
    continuous measurement is usually unique, yet names no one by itself.

    Parameters
    ----------
    table : DataFrame
        The table to be released.
    exclude : iterable
        Columns not to test: the quasi-identifiers (they are anonymized), and any column the
        caller keeps on purpose.

    Returns
    -------
    list
        The unique-per-row columns, in table order.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"id": [7, 3, 9], "age": [30, 30, 41], "w": [0.5, 1.25, 2.0]})
    >>> unique_columns(t)
    ['id']
    >>> unique_columns(t, exclude=["id"])
    []
    """
    n = table.shape[0]
    if n < 2:
        return []
    skip = set(exclude)
    found = []
    for i, name in enumerate(table.columns):
        if name in skip:
            continue
        col = table.iloc[:, i]
        if col.isna().any():
            continue
        if pd.api.types.is_float_dtype(col.dtype):
            values = col.to_numpy(dtype=np.float64)
            if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
                continue
        try:
            distinct = col.nunique(dropna=False)
        except TypeError:  # unhashable objects: not a value column
            continue
        if distinct == n:
            found.append(name)
    return found
