"""Free heap handed back to the system when a worker's memory is high (issue 21).

:func:`anonml.dask.local_cluster` starts its workers with glibc's own trim and mmap thresholds
(:func:`anonml.dask._cluster.worker_malloc_env`): arrays up to 32 MB come from the heap and
freed ones are reused (10M rows in 35 s instead of 47, BENCHMARKS.md "Session 8, the merged
main"). But glibc gives back only the free memory at the top of the heap; the holes left
between live arrays stay in the process, and Dask counts them as unmanaged memory, which it
cannot spill. On 100M rows (4 GB workers) a worker paused at 80 % of its limit with most of
its 3.4 GB unmanaged and never resumed (BENCHMARKS.md, "Dask cost, session 9"). With this
plugin and session 9's cuts of the memory held, every 100M run since finished and no worker
paused; the trims there gave back 570-600 MB each on average (BENCHMARKS.md, "Session 9, the
merged main").

:class:`HeapTrim` is a worker plugin that checks the worker's resident memory every half
second and, above ``fraction`` of its memory limit (0.65: below Dask's spill and pause
thresholds, 0.7 and 0.8), calls glibc's ``malloc_trim(0)``, which returns every free page of
every arena to the system, at most once a second. It runs on the worker's event loop, which
a paused worker still runs, so a worker paused by freed memory is trimmed and resumes. On a
system without glibc it does nothing.

A trim that gives back little (less than ``gain`` of the limit) means the memory above the
fraction is live, not freed: the next trim then waits twice as long, up to ``max_pause``
seconds, and a trim that gives back more brings the wait back to ``pause``, so a worker whose
live data sit above the fraction is not trimmed every second for nothing. (At 100M rows the
trims were not futile: with the back-off 32 and 43 trims per worker, against 38 and 58
without.)
"""

from __future__ import annotations

import time
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["HeapTrim"]


class HeapTrim(WorkerPlugin):
    """``malloc_trim(0)`` on a worker whose resident memory passes ``fraction`` of its limit.

    Parameters
    ----------
    fraction : float, default 0.65
        Of the worker's memory limit (no limit: the plugin does nothing).
    every : float, default 0.5
        Seconds between checks.
    pause : float, default 1.0
        Least seconds between two trims.
    max_pause : float, default 16.0
        Most seconds between two trims while trims give back little.
    gain : float, default 0.02
        Of the memory limit: a trim that gives back less doubles the wait before the next.
    """

    name = "anonml-heap-trim"

    def __init__(self, fraction: float = 0.65, every: float = 0.5, pause: float = 1.0,
                 max_pause: float = 16.0, gain: float = 0.02):
        self.fraction, self.every, self.pause = float(fraction), float(every), float(pause)
        self.max_pause, self.gain = max(float(max_pause), self.pause), float(gain)
        self.trims = 0  # on the worker: how many times it trimmed
        self.freed = 0  # on the worker: bytes the trims gave back (by resident memory)

    def due(self, rss: int, limit: int, now: float, last: float, wait: float | None = None
            ) -> bool:
        """Whether to trim now: memory above the fraction, the last trim at least ``wait``
        (default ``pause``) seconds ago."""
        wait = self.pause if wait is None else wait
        return bool(limit) and rss > self.fraction * limit and now - last >= wait

    def next_wait(self, freed: int, limit: int, wait: float) -> float:
        """The wait before the next trim, after one that gave back ``freed`` bytes: back to
        ``pause`` if it gave back at least ``gain`` of the limit, else doubled (at most
        ``max_pause``)."""
        if freed >= self.gain * limit:
            return self.pause
        return min(max(wait, self.pause) * 2, self.max_pause)

    def setup(self, worker: Any) -> None:
        from anonml._utils import _glibc

        trim = _glibc("malloc_trim")  # (the in-memory fit's hand-backs use the same)
        if not trim:  # not glibc: nothing to do
            return
        limit = int(getattr(getattr(worker, "memory_manager", None), "memory_limit", 0) or 0)
        if limit <= 0:
            return
        import psutil
        from tornado.ioloop import PeriodicCallback

        proc = psutil.Process()
        last, wait = [0.0], [self.pause]

        def check() -> None:
            now = time.monotonic()
            rss = proc.memory_info().rss
            if self.due(rss, limit, now, last[0], wait[0]):
                trim(0)
                freed = max(0, rss - proc.memory_info().rss)
                last[0], wait[0] = now, self.next_wait(freed, limit, wait[0])
                self.trims += 1
                self.freed += freed

        callback = PeriodicCallback(check, self.every * 1000)
        worker.periodic_callbacks[self.name] = callback
        callback.start()

    def teardown(self, worker: Any) -> None:
        callback = worker.periodic_callbacks.pop(self.name, None)
        if callback is not None:
            callback.stop()
