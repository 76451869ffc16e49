"""Reading and writing one partition of a Dask run (:mod:`anonml.dask._api`): the tasks that
read a Parquet file on a worker, put a partition back together from two reads, and recode and
write it. Kept apart from the driver so that the tasks of :mod:`anonml.dask._columns` and
:mod:`anonml.dask._transform` use them without importing the driver."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.engine import _kernels as K

__all__ = ["_read_file", "worker_path", "_join_columns", "_write_task", "_write_binned",
           "cast_representatives"]


def _read_file(path: str, columns: list | None, name: str | None = None) -> pd.DataFrame:
    """One Parquet file (one partition) at ``path`` (absolute: a worker's working folder is
    not the client's); a damaged or unreachable one is one line naming the file as listed
    (``name``)."""
    name = path if name is None else name
    try:
        if "://" in path:  # through the fsspec filesystem that listed it, not Arrow's own
            from anonml.engine._dataset import _filesystem  # (whose GCS client, e.g., differs)

            fs, inner = _filesystem(path)
            return pd.read_parquet(inner, columns=columns, filesystem=fs)
        return pd.read_parquet(path, columns=columns)
    except (MemoryError, KeyboardInterrupt):
        raise
    except (FileNotFoundError, PermissionError) as exc:  # read on the client, not here
        import socket

        raise InputError(
            f"Parquet file {name!r} cannot be read by the Dask worker on "
            f"{socket.gethostname()!r} ({type(exc).__name__}); fix: put the dataset on "
            "storage every worker and the client reach at the same path (a shared file "
            "system, or an s3:// URL)") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for damaged pages vary
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"Parquet file {name!r} could not be read ({type(exc).__name__}: {why[:200]}); "
            "fix: the file is damaged: rewrite it, or remove it from the dataset") from None


def worker_path(path: str) -> str:
    """``path`` as a worker must be told it: absolute when local (a ``dask worker`` runs in
    its own working folder), a URL as is."""
    return path if "://" in path else os.path.abspath(path)


def _join_columns(qi_part: pd.DataFrame | None, rest: pd.DataFrame | None, qi: list,
                  columns: list) -> pd.DataFrame:
    """``columns`` of one partition, the QIs from ``qi_part`` and the others from ``rest`` (two
    reads of the same file or partition: the same rows in the same order); ``qi_part`` None:
    ``rest`` holds them all."""
    if qi_part is None:
        return rest[columns] if list(rest.columns) != columns else rest
    if rest is None or rest is qi_part:
        return qi_part[columns] if list(qi_part.columns) != columns else qi_part
    if rest.shape[0] != qi_part.shape[0]:
        raise RuntimeError("internal error: two reads of a partition differ in length; please report")
    other = [c for c in columns if c not in set(qi)]
    both = pd.concat([qi_part[qi].reset_index(drop=True), rest[other].reset_index(drop=True)],
                     axis=1)
    return both[columns].set_axis(qi_part.index)


def _write_task(qi_part, rest, groups, reps, qi, folder, i, columns):
    """Recode and write partition ``i``: its QI columns as read for the representatives
    (``qi_part``, still on the workers, so the file is not read again for them) beside the
    other written ``columns`` (``rest``, read now), in the dataset's column order."""
    from anonml._output import write_parquet

    part = _join_columns(qi_part, rest, qi, columns)
    out = K.recode_partition(part, groups, reps, qi)
    # no metadata of the input (pandas attrs, schema key-values): the columns and their types
    write_parquet(out, os.path.join(folder, f"part.{i:05d}.parquet"))
    return int(out.shape[0])


def cast_representatives(reps: pd.DataFrame, qi_meta: pd.DataFrame) -> dict | None:
    """Every group's output QI values in the output dtypes, cast once for all the partitions
    (:func:`_write_binned`), or None when a partition's own groups decide a dtype: a QI of a
    NumPy dtype with a missing representative, whose nullable twin the in-memory
    ``recode_plan`` chooses only where such a group occurs. Otherwise a cast acts value by
    value, so casting all the groups' values once gives each partition's values: without it
    each of the 50 write tasks of 100M rows cast all 576,143 groups' values again."""
    from anonml.anonymize._pipeline import recode_plan

    qi = list(qi_meta.columns)
    if any(isinstance(qi_meta[c].dtype, np.dtype) and bool(reps[c].isna().any()) for c in qi):
        return None
    return recode_plan(qi_meta, qi, np.arange(reps.shape[0], dtype=np.int64), reps).per_group


def _write_binned(rest, groups, reps, qi_meta, folder, i, columns, per_group=None):
    """Recode and write partition ``i`` without its QI columns: an output QI holds only its
    group's representative value, cast to the column's dtype (``qi_meta``: the QIs, no row;
    ``per_group``: those values cast once, :func:`cast_representatives`, else cast here),
    so only the other written columns are read (``rest``); the same frame as
    :func:`_write_task` builds, in the dataset's column order, on ``rest``'s index."""
    from anonml._output import write_parquet
    from anonml.anonymize._pipeline import Recoding, recode_plan

    qi = list(qi_meta.columns)
    if per_group is None:
        per_group = recode_plan(qi_meta, qi, np.asarray(groups, dtype=np.int64),
                                reps).per_group
    plan = Recoding(np.asarray(groups, dtype=np.int64), rest.index, per_group)
    qis = set(qi)
    out = pd.DataFrame({c: plan.column(c) if c in qis else rest[c] for c in columns},
                       index=rest.index, copy=False)
    write_parquet(out, os.path.join(folder, f"part.{i:05d}.parquet"))
    return int(out.shape[0])
