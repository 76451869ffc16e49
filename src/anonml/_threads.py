"""Threads for the in-memory fit's work column by column.

The fit codes, checks and writes a table one column at a time (:meth:`TableEncoder.fit
<anonml.encoding.TableEncoder.fit>`, the record rules' distances to the median, the
verification's column codes, the output's columns).
Most of that time is spent in calls that release the GIL (pandas' and Arrow's factorizations,
Arrow's and numpy's gathers, sorts), so two columns on two cores take about the time of one.
As scikit-learn's histogram gradient boosting (OpenMP) and Arrow do, the fit uses the cores the
process may run on, up to :data:`MAX_THREADS`; the environment variable ``ANONML_NUM_THREADS``
sets the number (``1``: everything in the calling thread, as before). Results are put together
in column order by the calling thread, so they do not depend on the threads.

Memory: with ``t`` threads, ``t`` columns are worked on while the caller holds the result of
one more: ``t`` columns' work more than one at a time (measured in BENCHMARKS.md, "Session 24").
``ANONML_NUM_THREADS`` above the cores only adds memory. Each process of an outer parallel loop
(scikit-learn's ``n_jobs``, several fits at once) starts its own threads, as scikit-learn's
histogram gradient boosting does; set ``ANONML_NUM_THREADS=1`` there.

glibc gives each new thread an arena of its own, whose heaps hold at most 64 MB: a column's
arrays of 20M rows would each be mapped anew and faulted in (system time that grows with the
rows), and the pages freed there are not reused by the fit's other steps. So before its first
threads start, the process's threads are asked to share glibc's main arena
(``mallopt(M_ARENA_MAX, 1)``, the remedy often given for Python's memory growth under threads;
not when ``MALLOC_ARENA_MAX`` is set, which glibc reads itself): every large array then comes
from the one heap that :func:`anonml._utils.reuse_freed_memory` keeps for reuse. It holds for
the process from then on, as the variable would (glibc fixes the limit when a thread next needs
an arena), and it is best effort: threads that already have an arena keep it, and where other
threads made arenas before (a Jupyter kernel's), glibc hands those out in turn.

The Dask engine's tasks do not use these threads (its workers have their own).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

__all__ = ["ENV", "MAX_THREADS", "column_threads", "fit_threads", "in_order"]

ENV = "ANONML_NUM_THREADS"
MAX_THREADS = 4  # columns at once: more adds memory (a column's work each) for little time


def fit_threads() -> int:
    """Threads for the fit's column work: ``ANONML_NUM_THREADS`` when set, else the cores this
    process may run on, at most :data:`MAX_THREADS`."""
    raw = os.environ.get(ENV, "").strip()
    if raw:
        n = int(raw) if re.fullmatch(r"[0-9]{1,4}", raw) else 0
        if n < 1:
            from anonml._errors import InputError

            raise InputError(f"{ENV}={raw!r} must be a whole number from 1 to 9999, e.g. "
                             f"{ENV}=1 (the fit in one thread), or unset (the cores available)")
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


@contextmanager
def column_threads(n: int | None = None) -> Iterator[ThreadPoolExecutor | None]:
    """An executor of ``n`` threads (default :func:`fit_threads`) for :func:`in_order`, shut
    down at the end of the block; None for one thread (the work then runs in the caller).
    ``ANONML_NUM_THREADS`` is checked even when ``n`` is given: a bad value is an error, not
    ignored."""
    count = fit_threads()
    n = count if n is None else int(n)
    if n <= 1:
        yield None
        return
    _share_main_arena()
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="anonml-column") as pool:
        yield pool


_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
_ARENA_SHARED = False


def _share_main_arena() -> None:
    """New threads of this process share glibc's main arena (see the module docstring); once,
    and not where ``MALLOC_ARENA_MAX`` is set or the C library is not glibc."""
    global _ARENA_SHARED
    if _ARENA_SHARED:
        return
    _ARENA_SHARED = True
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    from anonml._utils import _glibc

    mallopt = _glibc("mallopt")
    if mallopt:
        mallopt(_M_ARENA_MAX, 1)


def in_order(pool: ThreadPoolExecutor | None, fn: Callable[[Any], Any],
             items: Iterable[Any]) -> Iterator[Any]:
    """``fn(item)`` for each item, yielded in the items' order. With a pool, as many items as
    it has threads are computed ahead of the one the caller holds (so at most that many
    results wait); without, each is computed when asked for. An exception is raised where its
    item's result is yielded; the items not started are then cancelled."""
    if pool is None:
        for item in items:
            yield fn(item)
        return
    ahead = max(1, getattr(pool, "_max_workers", 1))
    pending: deque[Future] = deque()
    source = iter(items)
    try:
        for item in source:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                break
        while pending:
            result = pending.popleft().result()
            for item in source:
                pending.append(pool.submit(fn, item))
                break
            yield result
            del result
    finally:
        for f in pending:
            f.cancel()
        # those already running finish before the caller goes on (their errors are dropped:
        # the error raised is the first item's, or the caller's own)
        wait(pending)
