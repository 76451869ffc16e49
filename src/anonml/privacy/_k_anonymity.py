"""k-anonymity (Samarati & Sweeney, 1998; Sweeney, 2002).

A table is k-anonymous on its quasi-identifiers (QIs) when every combination of QI values that
occurs in it occurs at least k times. The rows sharing one combination form an *equivalence
class*. Missing values count as a value of their own: two rows whose QIs are both missing in
the same column agree on that column.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._threads import in_order
from anonml.encoding import as_frame, resolve_columns

__all__ = ["equivalence_classes", "k_anonymity"]

_MAX_CODE = np.iinfo(np.int64).max // 4


def equivalence_classes(table: Any, quasi_identifiers: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """Equivalence class of every row on the quasi-identifiers.

    Parameters
    ----------
    table : DataFrame or 2-D array
        The released table.
    quasi_identifiers : list
        Column names (integer positions for an array); None means every column.

    Returns
    -------
    class_of_row : ndarray of int, shape (n_rows,)
        Class id of each row, numbered 0 .. n_classes-1 in order of first appearance.
    sizes : ndarray of int, shape (n_classes,)
        Number of rows in each class.
    """
    frame, _ = as_frame(table, what="table")
    return _classes(frame, resolve_columns(frame, quasi_identifiers))


def _classes(frame: pd.DataFrame, qi: list,
             threads: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`equivalence_classes`, one column's codes alive at a time (each folded in, then
    dropped, before the next column is read: the anonymizers' check builds each column only
    when it is read). With ``threads`` (:func:`anonml._threads.column_threads`), one column
    a thread is read and coded ahead of the fold, which stays in column order."""
    n = frame.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    combined = np.zeros(n, dtype=np.int64)
    n_combined = 1
    for codes, card in in_order(threads, lambda col: _column_codes(frame[col]), qi):
        combined, n_combined = fold_codes(combined, n_combined, codes, card)
        del codes
    class_of_row, n_classes = factorize_codes(combined)
    del combined
    sizes = np.bincount(class_of_row, minlength=n_classes)
    return class_of_row.astype(np.int64, copy=False), sizes


#: the fewest values for which :func:`factorize_codes` asks Arrow (below, pandas is as fast)
_ARROW_MIN = 1 << 16


def factorize_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``pd.factorize(values, use_na_sentinel=False)``'s codes and number of distinct values,
    for a numpy array of integers or floats: the same codes, numbered by first appearance,
    equal exactly where the values are equal (every NaN equal to every NaN, ``-0.0`` to
    ``0.0``).

    pandas sizes its hash table by the values, not by the distinct ones: on 20M values of
    200,000 distinct ones each lookup misses the cache (25-55 ns a value at 1M, 50-74 at
    20M, measured in session 15). Arrow's ``dictionary_encode`` grows its table with the
    distinct values (10-20 ns a value at 1M, 21-39 at 20M); it compares floats by their
    bits, so the values are first made canonical (``+ 0.0`` turns ``-0.0`` into ``0.0``,
    and every NaN becomes one NaN). Used when pyarrow is installed (it is an optional
    dependency) and for at least :data:`_ARROW_MIN` values; else pandas.
    """
    values = np.asarray(values)
    if not values.dtype.isnative:  # (byte-swapped: neither pandas' hash table nor Arrow reads it)
        values = values.astype(values.dtype.newbyteorder("="))
    dtype = values.dtype
    # (Arrow's types: integers of 1-8 bytes, floats of 4 or 8; its indices are 32-bit)
    if (_ARROW_MIN <= values.size < 2**31 and values.ndim == 1
            and (dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize in (4, 8)))):
        kind = dtype.kind
        try:
            import pyarrow as pa
        except ImportError:  # pragma: no cover - pyarrow is optional
            pa = None
        if pa is not None:
            if kind == "f":
                values = values + 0.0  # (a copy: -0.0 + 0.0 is 0.0)
                nan = np.isnan(values)
                if nan.any():
                    values[nan] = np.nan
                del nan
            encoded = pa.array(values).dictionary_encode()
            return np.asarray(encoded.indices), len(encoded.dictionary)
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes, len(uniques)


def first_of_codes(codes: np.ndarray) -> np.ndarray:
    """Position of each code's first occurrence, for codes numbered by first appearance (as
    :func:`factorize_codes`, ``pd.factorize`` and Arrow's ``dictionary_encode`` number them):
    where the running largest code steps up, one more each time. Linear, no hash table."""
    return np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1))


def fold_codes(combined: np.ndarray, n_combined: int, codes: np.ndarray,
               card: int) -> tuple[np.ndarray, int]:
    """Fold one column's ``codes`` (0 .. ``card`` - 1) into the mixed-radix code ``combined``
    of the columns before it (``n_combined`` distinct values at most): equal exactly when the
    rows are equal in every column folded. ``combined`` (int64) is updated in place (one
    column's codes and the mixed code alive, no n-row temporaries), renumbered first when the
    next column could overflow it. Returns the code and its new bound."""
    card = max(int(card), 1)
    if n_combined * card > _MAX_CODE:  # keep the mixed code from overflowing
        combined, n_combined = factorize_codes(combined)
        combined = combined.astype(np.int64, copy=False)
    combined *= card
    combined += codes
    return combined, n_combined * card


def _column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """One integer per row, equal for equal values (missing equal to missing), 0 .. m-1, and
    m, the number of distinct values.

    Only the equality of the codes matters (the classes are numbered afterwards by first
    appearance), so a plain integer column of small range is coded by its value's rank among
    the values present (one ``bincount``), not through ``pd.factorize``, whose hash table is
    sized by the rows, not by the distinct values: 17 bytes a row more, and a cache miss per
    row once it outgrows the cache."""
    values = column.to_numpy() if isinstance(column.dtype, np.dtype) else None
    if values is not None and values.dtype.kind in "iub" and values.size:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * values.size + 1024 and hi <= np.iinfo(np.int64).max:
            offset = values.astype(np.int64)
            if lo:
                offset -= lo
            present = np.bincount(offset, minlength=hi - lo + 1) > 0
            rank = np.cumsum(present) - 1
            return rank.take(offset), int(rank[-1]) + 1
    if values is not None and values.dtype.kind in "iuf":
        return factorize_codes(values)
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes, len(uniques)


def k_anonymity(
    table: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    k: int | None = None,
    return_violations: bool = False,
) -> int | tuple[int, pd.DataFrame]:
    """The k for which ``table`` is k-anonymous: the size of its smallest equivalence class.

    Parameters
    ----------
    table, quasi_identifiers
        As in :func:`equivalence_classes`.
    k : int, optional
        Required with ``return_violations``: classes smaller than ``k`` are violations.
    return_violations : bool, default False
        Also return the violating classes: one row per class with its QI values and its size
        in a column ``"count"``, smallest first.

    Returns
    -------
    int, or (int, DataFrame)
        The smallest class size (0 for an empty table), and the violating classes on request.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [30, 30, 40], "sex": ["F", "F", "M"]})
    >>> k_anonymity(t, ["age", "sex"])
    1
    """
    if return_violations and k is None:
        raise InputError("return_violations=True needs k=<int>, the size a class must reach")
    frame, _ = as_frame(table, what="table")
    qi = resolve_columns(frame, quasi_identifiers)
    class_of_row, sizes = _classes(frame, qi)
    smallest = int(sizes.min()) if sizes.size else 0
    if not return_violations:
        return smallest
    bad = np.flatnonzero(sizes < k)
    first_row = np.full(sizes.size, -1, dtype=np.int64)
    first_row[class_of_row[::-1]] = np.arange(class_of_row.size)[::-1]
    violations = frame[qi].iloc[first_row[bad]].reset_index(drop=True)
    violations["count"] = sizes[bad]
    violations = violations.sort_values("count", kind="stable").reset_index(drop=True)
    return smallest, violations
