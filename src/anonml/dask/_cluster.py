"""The engine's view of a Dask cluster: the client it is given, waits that notice a cluster
without workers, and one line when a worker's loss cannot be repaired.

Every task of the engine has a recipe (its function and its inputs' keys), nothing is
``scatter``-ed, so when a worker dies the scheduler recomputes what the worker held from the
lineage (Dask's own fault tolerance, see the "Resilience" page of the distributed docs). What
Dask cannot repair surfaces as one of three exceptions:

* :class:`distributed.scheduler.KilledWorker` -- one task was running on workers that died
  ``distributed.scheduler.allowed-failures`` times (the task itself may be killing them, e.g.
  by memory);
* :class:`distributed.client.FutureCancelledError` / ``FuturesCancelledError`` -- the scheduler
  forgot a result the run depends on (the scheduler restarted, or the client was disconnected);
* no worker at all for ``no_workers_timeout`` seconds (Dask would wait for ever).

:class:`Watched` turns them into :class:`ClusterError`, one line naming the cause and the fix.
The engine never uses a default client: every submit, compute and wait goes through the client
it is given (``distributed.wait`` and ``as_completed`` without a loop look for a default
client, so they are not used).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from anonml._errors import AnonmlError

__all__ = ["ClusterError", "Watched", "lost_message"]

_POLL = 2.0  # seconds between checks of the cluster while waiting


class ClusterError(AnonmlError, RuntimeError):
    """The Dask cluster lost work it could not recompute (nothing is left at the target)."""


_FIX = ("fix: run again (the output was not written); if workers keep dying, give them more "
        "memory (--worker-memory, or the cluster's own settings) or keep the scheduler and "
        "enough workers alive for the whole run")


def lost_message(exc: BaseException) -> str:
    """One line for a lost worker, a cancelled future or a cluster without workers."""
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (f"a Dask worker was lost and the work could not be recomputed: "
            f"{type(exc).__name__}: {why[:240]}; {_FIX}")


def lost_types() -> tuple:
    """The exceptions that mean the cluster lost work (dask's own classes)."""
    from asyncio import CancelledError as AsyncCancelled

    from distributed.client import FutureCancelledError, FuturesCancelledError
    from distributed.scheduler import KilledWorker

    return (KilledWorker, FutureCancelledError, FuturesCancelledError, AsyncCancelled)


class Watched:
    """The given ``distributed.Client``, with waits that check each future and the cluster.

    ``submit`` and ``compute`` are the client's own; ``gather`` and ``wait`` wait for every
    future (checking every few seconds that the cluster still has a worker), raise the task's
    own error if one failed, and raise :class:`ClusterError` for a cancelled future, a killed
    worker or ``no_workers_timeout`` seconds without any worker.
    """

    def __init__(self, client: Any, no_workers_timeout: float = 60.0):
        self.client = client
        self.no_workers_timeout = float(no_workers_timeout)
        self._empty_since: float | None = None

    # the client's own calls --------------------------------------------------------------
    def submit(self, *args: Any, **kwargs: Any) -> Any:
        return self.client.submit(*args, **kwargs)

    def compute(self, *args: Any, **kwargs: Any) -> Any:
        return self.client.compute(*args, **kwargs)

    # waits -------------------------------------------------------------------------------
    def lost(self, exc: BaseException) -> ClusterError:
        """The one-line error for ``exc`` (a lost scheduler is named as such)."""
        if getattr(self.client, "status", "running") != "running":
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return ClusterError(
                f"the connection to the Dask scheduler was lost ({type(exc).__name__}: "
                f"{why[:200]}); the run cannot go on without its scheduler; {_FIX}")
        return ClusterError(lost_message(exc))

    def _check_workers(self) -> None:
        try:
            n = len(self.client.nthreads())
        except Exception as exc:  # noqa: BLE001 - the scheduler itself is gone
            raise ClusterError(
                f"the connection to the Dask scheduler was lost: it stopped answering "
                f"({type(exc).__name__}); the run cannot go on without its scheduler; {_FIX}"
            ) from None
        if n:
            self._empty_since = None
            return
        now = time.monotonic()
        if self._empty_since is None:
            self._empty_since = now
        elif now - self._empty_since >= self.no_workers_timeout:
            raise ClusterError(
                "a Dask worker was lost and the work could not be recomputed: the cluster has "
                f"had no worker for {self.no_workers_timeout:g} s; {_FIX}")

    def _wait_one(self, future: Any) -> None:
        from distributed import TimeoutError as DaskTimeout

        while True:
            try:
                exc = future.exception(timeout=_POLL)
            except (DaskTimeout, TimeoutError):
                self._check_workers()
                continue
            except lost_types() as err:
                raise self.lost(err) from None
            break
        if future.status == "cancelled":
            raise self.lost(_cancelled(future))
        if exc is not None:
            if isinstance(exc, lost_types()):
                raise self.lost(exc) from None
            future.result()  # the task's own error, as raised on the worker

    def wait(self, futures: Iterable[Any],
             tick: Callable[[int, int], None] | None = None) -> list:
        """Wait for every future (in order); ``tick(done, total)`` after each."""
        futures = list(futures)
        for i, f in enumerate(futures, start=1):
            self._wait_one(f)
            if tick is not None:
                tick(i, len(futures))
        return futures

    def gather(self, futures: Any) -> Any:
        """The results of a future or a list of futures, once each is checked."""
        import asyncio
        from concurrent.futures import TimeoutError as WaitTimeout

        single = not isinstance(futures, (list, tuple))
        items = [futures] if single else list(futures)
        self.wait(items)
        # A result can be lost between the wait and the fetch (its worker died): Dask then
        # recomputes it, and a plain gather waits for a worker for ever. The fetch runs on the
        # client's loop while this thread checks the cluster every few seconds; it is never
        # cancelled (a cancelled fetch leaves Dask's own wait tasks to fail unheard, which
        # asyncio then prints), so with no worker left it ends when the client closes.
        fetch = asyncio.run_coroutine_threadsafe(self.client._gather(items),
                                                 self.client.loop.asyncio_loop)
        while True:
            try:
                out = fetch.result(timeout=_POLL)
            except WaitTimeout:
                self._check_workers()
                continue
            except lost_types() as err:
                raise self.lost(err) from None
            return out[0] if single else out


def _cancelled(future: Any) -> BaseException:
    from distributed.client import FutureCancelledError

    try:
        return FutureCancelledError(future.key, reason=None, msg=None)
    except TypeError:  # older signatures
        return FutureCancelledError(future.key)


#: glibc's own thresholds once its dynamic mmap threshold has grown to its maximum (64-bit):
#: arrays up to 32 MB come from the heap, and up to 64 MB of free heap top is kept for reuse
_MMAP_MAX, _TRIM_MAX = 32 * 2**20, 64 * 2**20
#: Arrow's allocations from glibc's heap too (read by pyarrow when it makes its default pool)
_ARROW_POOL = {"ARROW_DEFAULT_MEMORY_POOL": "system"}


def worker_malloc_env(memory_limit: int) -> dict:
    """The environment (glibc's ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_``,
    Arrow's ``ARROW_DEFAULT_MEMORY_POOL``) that :func:`anonml.dask.local_cluster` gives its
    worker processes before they start.

    Dask's default (``distributed.nanny.pre-spawn-environ``) sets the trim threshold to 64 kB,
    so that a worker hands freed memory back to the system at once. Setting it also stops
    glibc's dynamic mmap threshold, which stays at 128 kB: every array of a partition's length
    (millions of 1-8 byte items; the engine makes many, one after another) is then mapped
    anew, faulted in and zeroed by the kernel, and unmapped when freed. Here the workers get the
    values a plain process reaches by itself (arrays up to 32 MB from the heap, up to 64 MB of
    free heap kept; at most an eighth of the memory limit each), not more: larger thresholds
    (256 / 512 MB, tried) made 10M rows as fast but kept so much freed memory on 100M rows that
    Dask counted it as unmanaged and paused the 4 GB workers for good (BENCHMARKS.md, "Session
    8, the merged main"). glibc reads both variables when the process starts; other C
    libraries ignore them.

    ``ARROW_DEFAULT_MEMORY_POOL=system`` makes Arrow (the reading of the Parquet files)
    allocate from the same glibc heap instead of its bundled mimalloc. mimalloc kept the pages
    of the reads (0.4-0.8 GB per 4 GB worker on 100M rows) for Arrow alone after the reads
    ended: no numpy array could reuse them, ``malloc_trim`` (:class:`~anonml.dask._trim.HeapTrim`)
    could not give them back, and Dask counted them as unmanaged memory, so the workers often
    passed its spill threshold in the tree's levels, where every level reads every partition's
    state, and wrote 6-42 GB each to disk. From one heap, the reads' freed blocks serve the
    tree's arrays: 1.4-4.1 GB written, the spill only in the refinement (BENCHMARKS.md,
    "Session 19").
    """
    if int(memory_limit) <= 0:  # no limit known ("auto", 0): glibc's own values
        return {"MALLOC_MMAP_THRESHOLD_": _MMAP_MAX, "MALLOC_TRIM_THRESHOLD_": _TRIM_MAX,
                **_ARROW_POOL}
    cap = max(128 * 1024, int(memory_limit) // 8)  # never below glibc's default
    return {"MALLOC_MMAP_THRESHOLD_": min(_MMAP_MAX, cap),
            "MALLOC_TRIM_THRESHOLD_": min(_TRIM_MAX, cap), **_ARROW_POOL}
