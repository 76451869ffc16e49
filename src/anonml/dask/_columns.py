"""Which columns of a partition the Dask engine keeps on the workers between stages, and the
tasks that read their partition when they run (:mod:`anonml.dask._api`; a partition put back
together from two reads: :func:`anonml.dask._partio._join_columns`)."""

from __future__ import annotations

from typing import Any

from anonml.dask._partio import _read_file, _write_binned, _write_task

__all__ = ["_hold_qi", "Read", "run_reading", "group_rows_reading", "code_reading",
           "group_rows_coded",
           "pick_reading", "write_reading", "pick_binned_reading", "write_binned_reading"]

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
    return func(*[_read_file(a.path, a.columns, a.name) if isinstance(a, Read) else a
                  for a in args])


# the engine's tasks that may read their partition (their names are the task names in Dask's
# task stream: benchmarks/profile_dask_stages.py sorts them into stages)
def group_rows_reading(*args: Any) -> Any:
    """:func:`~anonml.engine._ranges.group_rows` through :func:`run_reading`."""
    from anonml.engine._ranges import group_rows

    return run_reading(group_rows, *args)


def code_reading(read: Read, raw: list, state: Any) -> dict:
    """:func:`~anonml.engine._ranges.code_columns` of a partition's ``raw`` columns, read
    here (``state``: the partition's binned state, an argument only so that Dask runs this
    task on the worker that holds it, where the rounds that use the codes run)."""
    from anonml.engine._ranges import code_columns

    return code_columns(_read_file(read.path, list(raw), read.name), raw)


def group_rows_coded(read: Read, coded: dict, state: Any, groups: Any, starts: Any,
                     stop: int, part_index: int, raw: list, *args: Any) -> Any:
    """:func:`~anonml.engine._ranges.group_rows` with the ``raw`` columns taken from
    ``coded`` (:func:`code_reading`); only those with too many values to code are read
    again."""
    from anonml.engine._ranges import group_rows

    again = [c for c in raw if coded.get(c) is None]
    part = _read_file(read.path, again, read.name) if again else None
    return group_rows(part, state, groups, starts, stop, part_index, raw, *args, coded=coded)


def pick_reading(*args: Any) -> Any:
    """:func:`~anonml.engine._kernels.pick_rows` through :func:`run_reading`."""
    from anonml.engine._kernels import pick_rows

    return run_reading(pick_rows, *args)


def write_reading(*args: Any) -> Any:
    """The engine's ``_write_task`` through :func:`run_reading`."""
    return run_reading(_write_task, *args)


def pick_binned_reading(*args: Any) -> Any:
    """:func:`~anonml.engine._kernels.pick_binned` through :func:`run_reading`."""
    from anonml.engine._kernels import pick_binned

    return run_reading(pick_binned, *args)


def write_binned_reading(*args: Any) -> Any:
    """The engine's ``_write_binned`` through :func:`run_reading`."""
    return run_reading(_write_binned, *args)
