"""Which columns the representatives and the write read (issue 21, session 9).

Past :func:`~anonml.dask._columns._hold_qi` (about 14M rows on 2 x 4 GB) every proposal task
read the numeric QIs of its file, every picking task all QIs, and every write task all written
columns: at 30M rows these three were half the workers' task time after the tree (105 of 210
task-seconds, seven of the twelve Adult QIs being text). But most QI values are known from the
bins the workers hold (:func:`~anonml.engine._kernels.binned_values`: a category's code, a
numeric bin of one distinct value), and an output QI holds only its group's representative,
cast to the column's dtype. So, when the QI dtypes are the same in every file and none is a
``category`` (whose output categories depend on the partition's own), the proposals and the
picking read only the QIs the bins do not give, and the write reads only the non-QI columns
(:func:`~anonml.dask._partio._write_binned`): the same output, bit for bit
(``benchmarks/check_dask_output_identity.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["qi_dtypes", "ReadPlan"]

_MERGED_KEYS = 32_000_000  # nonzero (group, bin) counts one reduction may hold (~0.5 GB)


def _column_batches(n_rows: int, n_groups: int, n_bins: np.ndarray, n_classes: int,
                    classes: bool = True) -> list:
    """Columns of the per-group histograms reduced together: as many as keep the merged sparse
    histogram under ``_MERGED_KEYS`` keys (at most one group x bin per row and column); the
    class codes ("y") unless ``classes`` is False (a regression guide)."""
    cols = ["y"][:classes] + list(range(len(n_bins)))
    size = [min(n_rows, n_groups * n_classes)][:classes] + [
        min(n_rows, n_groups * int(b)) for b in n_bins]
    batches, cur, total = [], [], 0
    for col, sz in zip(cols, size):
        if cur and total + sz > _MERGED_KEYS:
            batches.append(cur)
            cur, total = [], 0
        cur.append(col)
        total += sz
    return batches + [cur]


def _reps_table(n_groups: int, qi: list, *picked: pd.DataFrame) -> pd.DataFrame:
    reps = pd.concat(picked, ignore_index=True).sort_values("__group", kind="stable")
    if reps.shape[0] != n_groups or not (reps["__group"].to_numpy() == np.arange(n_groups)).all():
        raise RuntimeError(
            f"internal error: {reps.shape[0]} representatives for {n_groups} groups; please report"
        )
    return reps[qi].reset_index(drop=True)


def qi_dtypes(files: list, qi: list) -> dict | None:
    """Each QI's pandas dtype when it is the same in every file and none is a category, else
    None (the columns are then read as before). Reads the files' footers only."""
    from anonml.engine._dataset import read_schema

    first: dict | None = None
    for f in files:
        frame = read_schema(f).empty_table().to_pandas()
        dtypes = {c: frame[c].dtype for c in qi}
        if any(isinstance(d, pd.CategoricalDtype) for d in dtypes.values()):
            return None
        if first is None:
            first = dtypes
        elif dtypes != first:
            return None
    return first


class ReadPlan:
    """The columns each stage reads past ``_hold_qi``: ``exact`` (QI -> dtype, from the bins),
    ``propose`` (the numeric QIs the proposals read, possibly none), ``pick`` (the QIs the
    picking reads, possibly none), and ``qi_meta`` (the QIs, no row, in their dtypes) for the
    write, which reads the other written columns only."""

    def __init__(self, exact: dict, qi: list, categorical: list, dtypes: dict):
        self.exact = exact
        cat = set(categorical)
        self.propose = [c for c in qi if c not in cat and c not in exact]
        self.pick = [c for c in qi if c not in exact]
        self.qi_meta = pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in qi})

    @classmethod
    def make(cls, files: list | None, spec: Any, summary: dict, qi: list, categorical: list,
             other: list) -> "ReadPlan | None":
        """The plan for a Parquet dataset (``files``) with other written columns to read, or
        None (a dask DataFrame source, a category QI, dtypes that differ between files)."""
        from anonml.engine._kernels import binned_values

        if not files or not other:
            return None
        dtypes = qi_dtypes(files, qi)
        if dtypes is None:
            return None
        return cls(binned_values(spec, summary, dtypes), qi, categorical, dtypes)
