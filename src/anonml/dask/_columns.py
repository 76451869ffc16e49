"""Which columns of a partition the Dask engine keeps on the workers between stages, and how a
partition is put back together from two reads (:mod:`anonml.dask._api`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["_hold_qi", "_join_columns", "Read", "run_reading", "propose_reading",
           "pick_reading", "write_reading"]

_QI_VALUE_BYTES = 16  # a QI value held by pandas, text included (Adult: 13.5; BENCHMARKS.md)


def _hold_qi(client: Any, n_rows: int, n_qi: int) -> bool:
    """Whether every partition's QI columns may stay on the workers from the representatives
    to the write: when they take at most a third of the smallest worker's memory limit. Else
    each task reads the columns it needs (more reads, bounded memory)."""
    try:
        n_workers = len(client.client.nthreads())
        limits = [w.get("memory_limit") or 0
                  for w in client.client.scheduler_info()["workers"].values()]
    except Exception:  # noqa: BLE001 - no information: the memory is not the question
        return True
    if not n_workers or not limits or min(limits) <= 0:
        return True
    return n_rows * n_qi * _QI_VALUE_BYTES / n_workers <= min(limits) / 3


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


class Read:
    """A partition's read, made inside the task that uses it (:func:`run_reading`): a read
    task of its own has no dependency, so idle worker threads run it as soon as it is
    submitted, ahead of the reduction its user waits for, and its frame waits in memory (or
    spilled) meanwhile; inside the user, a partition is read when it is used, once per task."""

    __slots__ = ("path", "columns", "name")

    def __init__(self, path: str, columns: list | None, name: str):
        self.path, self.columns, self.name = path, columns, name


def run_reading(func: Any, *args: Any) -> Any:
    """``func(*args)`` with every :class:`Read` argument replaced by its partition."""
    from anonml.dask._api import _read_file

    return func(*[_read_file(a.path, a.columns, a.name) if isinstance(a, Read) else a
                  for a in args])


# the engine's tasks that may read their partition (their names are the task names in Dask's
# task stream: benchmarks/profile_dask_stages.py sorts them into stages)
def propose_reading(*args: Any) -> Any:
    """:func:`~anonml.engine._kernels.propose_representatives` through :func:`run_reading`."""
    from anonml.engine._kernels import propose_representatives

    return run_reading(propose_representatives, *args)


def pick_reading(*args: Any) -> Any:
    """:func:`~anonml.engine._kernels.pick_rows` through :func:`run_reading`."""
    from anonml.engine._kernels import pick_rows

    return run_reading(pick_rows, *args)


def write_reading(*args: Any) -> Any:
    """The engine's ``_write_task`` through :func:`run_reading`."""
    from anonml.dask._api import _write_task

    return run_reading(_write_task, *args)
