"""The one progress protocol of anonml: every long-running function that takes ``progress=``
calls it the same way, and the command line has one adapter for it
(:class:`anonml.cli._common.Progress`).

The protocol
------------
``progress(stage: str, done: int, total: int | None) -> None``

``stage``
    Words saying what is being done (``"RMIA reference models"``, ``"binning the
    partitions"``), never an internal key; names from the data are not put in it.
``done``, ``total`` an int
    A counted stage: ``done`` of ``total`` parts are finished. The first call of a stage has
    the smallest ``done`` (0 when the count starts before any part), the last has
    ``done == total``; ``done`` never goes down.
``total`` None
    A stage whose size is not known: it has started (``done`` 0), or ``done`` parts of it
    (e.g. tree levels) are finished so far. A step that is only announced
    (``"reading the model"``) is ``progress(stage, 0, None)``.

The callback is called from the calling thread only, never from a worker process or thread.
It must not raise; what it prints is its own business (the library never prints progress).

Functions here: :func:`check_progress` (a callable, or a no-op for None), :func:`announce`
(the one-argument form for steps) and :func:`counter` (a counted stage's ticks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ProgressCallback", "announce", "check_progress", "counter"]

#: the type of a ``progress=`` argument
ProgressCallback = Callable[[str, int, "int | None"], None]


def _silent(stage: str, done: int = 0, total: int | None = None) -> None:
    return None


def check_progress(progress: Any, name: str = "progress") -> ProgressCallback:
    """``progress`` itself if callable, a no-op for None; otherwise an
    :class:`~anonml.exceptions.InputError` naming ``name`` and the protocol."""
    if progress is None:
        return _silent
    if not callable(progress):
        from anonml._errors import InputError

        raise InputError(f"{name}={progress!r} must be a callable taking (stage, done, total) "
                         "or None")
    return progress


def announce(progress: Any) -> Callable[[str], None]:
    """``say(stage)``: announces a step to ``progress`` as ``progress(stage, 0, None)``
    (a no-op without a callback)."""
    call = check_progress(progress)
    return lambda stage: call(stage, 0, None)


def counter(progress: Any, stage: str, total: int) -> Callable[[int], None]:
    """Report ``progress(stage, 0, total)`` now and return ``tick(n=1)``, which reports ``n``
    more finished parts each call (``done`` rising to ``total``); without ``progress`` both do
    nothing."""
    call = check_progress(progress)
    total = int(total)
    call(stage, 0, total)
    state = {"done": 0}

    def tick(n: int = 1) -> None:
        state["done"] += int(n)
        call(stage, state["done"], total)

    return tick
