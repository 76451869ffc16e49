"""The identifier-column refusal of the in-memory CLI, on the Dask engine.

A column other than the quasi-identifiers whose value differs on every row (a record id, an
e-mail address) would name every person in the released dataset, however well the
quasi-identifiers are generalized; :func:`anonml.privacy.unique_columns` finds them in memory
and ``anonml anonymize`` refuses them unless they are dropped (``--drop``) or kept on purpose
(``--keep``). On Dask the same rule runs in two steps:

1. in the first pass over the rows (with the bin summaries), every partition reports which
   columns are unique *within it* (:func:`unique_flags`, the rule of ``unique_columns``: no
   missing value, no fractional float); a column that repeats inside one partition is not an
   identifier, and most columns stop here at no extra pass;
2. a column unique within every partition is counted exactly across the dataset
   (:func:`count_distinct`: Dask's ``drop_duplicates`` with ``split_out``, a shuffle, so no
   worker holds all the values). With one partition step 1 is already exact.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from anonml._errors import InputError

__all__ = ["IdentifierColumnError", "unique_flags", "merge_flags", "count_distinct", "refuse_identifiers"]


class IdentifierColumnError(InputError):
    """Columns with a different value on every row that are not quasi-identifiers."""

    def __init__(self, columns: list):
        self.columns = list(columns)
        shown = ", ".join(repr(c) for c in self.columns[:5])
        super().__init__(
            f"column {shown} has a different value on every row and is not a quasi-identifier: "
            f"it would name every person in the output; fix: drop={self.columns!r} (or keep=[...] "
            "if it must stay, or add it to quasi_identifiers); nothing was written")


def unique_flags(part: pd.DataFrame, columns: list) -> dict:
    """For each of ``columns``: could it be unique in the whole dataset, judged from this
    partition (unique here, no missing value, no fractional float)? A partition of fewer than
    two rows rules nothing out."""
    if part.shape[0] < 2 or not columns:
        return {c: True for c in columns}
    from anonml.privacy import unique_columns

    found = set(unique_columns(part[list(columns)]))
    return {c: c in found for c in columns}


def merge_flags(a: dict | None, b: dict | None) -> dict | None:
    """A column stays a candidate only if every partition says so."""
    if a is None or b is None:
        return a if b is None else b
    return {c: bool(a[c] and b.get(c, True)) for c in a}


def count_distinct(client: Any, dd: Any, parts: list, meta: pd.DataFrame, column: Any) -> int:
    """Distinct values of ``column`` over the partitions, exactly, on the cluster."""
    ddf = dd.from_delayed(parts, meta=meta, verify_meta=False)
    col = ddf[column]
    uniq = col.drop_duplicates(split_out=max(1, ddf.npartitions))
    return int(client.gather(client.compute(uniq.map_partitions(len).sum())))


def refuse_identifiers(client, dd, parts_of, meta, flags, n_rows) -> None:
    """Raise IdentifierColumnError for the columns unique on every row (two steps, see
    :mod:`anonml.dask._identifiers`)."""
    candidates = [c for c, ok in dict(flags or {}).items() if ok]
    if not candidates or n_rows < 2:
        return
    parts = parts_of(None)
    if len(parts) > 1:  # exact, across partitions, for the few columns still in doubt
        found = []
        for c in candidates:
            cols = parts_of([c])
            if count_distinct(client, dd, cols, meta[[c]], c) == n_rows:
                found.append(c)
        candidates = found
    if candidates:
        raise IdentifierColumnError(candidates)
