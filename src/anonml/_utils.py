"""Small private utilities shared by every package: row counts, the parameter checks in the
house wording (one helper per kind of number, instead of one per module) and the one conversion
of values to JSON (:func:`json_safe`). The progress protocol is :mod:`anonml._progress`.

Kept free of heavy imports (numpy only), so any module may use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dataclasses
import math
import numbers
import os
import sys
import threading

import numpy as np

__all__ = ["check_int", "check_n_jobs", "check_real", "json_safe", "n_rows",
           "release_free_memory", "reuse_freed_memory", "small_pages"]


def n_rows(data: Any) -> int:
    """Number of rows of a table-like ``data``: a DataFrame, Series, array, sparse matrix,
    list of rows, or any object numpy can turn into an array (scikit-learn's "array-likes"
    without ``len``); 0 for None."""
    if data is None:
        return 0
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(data)
    except TypeError:
        arr = np.asarray(data)  # e.g. an object with only __array__
        return int(arr.shape[0]) if arr.ndim else 0


def check_int(name: str, value: Any, *, low: int = 1, high: int | None = None,
              example: Any = None, why: str | None = None) -> int:
    """``value`` as an int if it is a whole number (not a bool) >= ``low`` (and <= ``high``);
    otherwise an :class:`~anonml.exceptions.InputError` in one line naming ``name``, the value,
    the bounds and, with ``example``, a value to pass (``"n_grid=1 must be an integer >= 2,
    e.g. n_grid=50"``), then ``why`` (what the bound is for) after a semicolon."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low
            or (high is not None and value > high)):
        from anonml._errors import InputError

        if high is not None:
            bound = f"an integer from {low} to {high}"
        else:
            bound = "a positive integer" if low == 1 else f"an integer >= {low}"
        hint = f", e.g. {name}={example}" if example is not None else ""
        hint += f"; {why}" if why else ""
        raise InputError(f"{name}={value!r} must be {bound}{hint}")
    return int(value)


def check_real(name: str, value: Any, *, low: float = 0.0, high: float | None = None,
               closed: str = "neither", example: Any = None, why: str | None = None) -> float:
    """``value`` as a float if it is a finite number (not a bool) above ``low`` (and below
    ``high``); ``closed`` ("neither", "left", "right", "both") says which bounds it may equal.
    Otherwise an :class:`~anonml.exceptions.InputError` in one line naming ``name``, the value
    and the bounds (``"gamma=0 must be a positive finite number, e.g. gamma=1.0"``, ``"fpr=2
    must be a number in [0, 1]"``), then ``why`` after a semicolon."""
    left, right = closed in ("left", "both"), closed in ("right", "both")
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real)
          and math.isfinite(value)
          and (value >= low if left else value > low)
          and (high is None or (value <= high if right else value < high)))
    if not ok:
        from anonml._errors import InputError

        if high is not None:
            bound = (f"a number in {'[' if left else '('}{low:g}, {high:g}"
                     f"{']' if right else ')'}")
        elif low == 0:
            bound = "a non-negative finite number" if left else "a positive finite number"
        else:
            bound = f"a finite number {'>=' if left else '>'} {low:g}"
        hint = f", e.g. {name}={example}" if example is not None else ""
        hint += f"; {why}" if why else ""
        raise InputError(f"{name}={value!r} must be {bound}{hint}")
    return float(value)


def check_n_jobs(value: Any, *, high: int | None = None, name: str = "n_jobs") -> int | None:
    """``value`` if it is a worker count as joblib takes it: None (joblib's default, one
    worker), -1 (every core) or a whole number from 1 (up to ``high``); otherwise an
    :class:`~anonml.exceptions.InputError` in one line (``"n_jobs=0 must be None, -1 (all
    cores) or a positive integer, e.g. n_jobs=1"``)."""
    if value is None or (value == -1 and not isinstance(value, bool)
                         and isinstance(value, numbers.Integral)):
        return None if value is None else -1
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1
            or (high is not None and value > high)):
        from anonml._errors import InputError

        upto = f"an integer from 1 to {high}" if high is not None else "a positive integer"
        raise InputError(f"{name}={value!r} must be None, -1 (all cores) or {upto}, "
                         f"e.g. {name}=1")
    return int(value)


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data, for every summary and report anonml writes.

    Dicts (keys made ``str``), lists, tuples and arrays (numpy, or anything with ``tolist``
    such as a pandas Series) become lists; numpy and Python bools, integers and reals become
    ``bool``, ``int`` and ``float``, NaN and +-inf ``None`` (JSON has neither; written with
    ``allow_nan=False`` the output is strict RFC 8259 JSON); pandas' missing values (``pd.NA``,
    ``pd.NaT``) ``None``; dataclasses their fields (:func:`dataclasses.asdict`); paths their
    text (:func:`os.fspath`); anything else its ``str``.
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    pd = sys.modules.get("pandas")  # not imported here: only values pandas made can be its NA
    if pd is not None:
        if value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, (pd.Series, pd.Index)):
            return [json_safe(v) for v in value.tolist()]
    return str(value)


_LIBC: Any = None


#: the fewest rows of a table for which the fit's later hand-backs (between the columns it
#: builds, at its start and end) are made: below, the pages freed are few, and a trim costs up
#: to milliseconds on a fragmented heap (a transform of a few rows would pay it per column)
RELEASE_MIN_ROWS = 1 << 18


def release_free_memory(n_rows: int | None = None) -> bool:
    """Hand the C heap's free pages back to the operating system (glibc's ``malloc_trim``).

    numpy allocates arrays below glibc's mmap threshold (which grows up to 32 MB as large
    arrays are freed) on the heap; once freed, their pages stay in the process (its resident
    memory) until the heap is trimmed, and memory taken later by another allocator (Arrow's,
    which holds pandas' ``str`` columns) cannot reuse them. A fit calls this between its steps
    so that a step's temporaries do not add to the peak of the next one; the remedy Dask's
    documentation gives for worker memory "not released back to the OS". Returns whether
    memory was released; a no-op (False) where the C library is not glibc.

    Arrow's memory pool (where pandas' ``str`` columns live, mimalloc or jemalloc) keeps
    freed pages for reuse as well; when pyarrow is loaded, its pool is asked to give back
    what it does not use (``release_unused``) first. With ``n_rows`` (the rows of the table
    being worked on), nothing is done below :data:`RELEASE_MIN_ROWS` rows.
    """
    if n_rows is not None and n_rows < RELEASE_MIN_ROWS:
        return False
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pool = pa.default_memory_pool()
        if hasattr(pool, "release_unused"):  # (older Arrow builds lack it)
            pool.release_unused()
    trim = _glibc("malloc_trim")
    return bool(trim(0)) if trim else False


def _glibc(name: str) -> Any:
    """A function of glibc (``malloc_trim``, ``mallopt``), or False elsewhere."""
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            import ctypes
            import ctypes.util

            try:
                _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            except OSError:
                _LIBC = False
    return getattr(_LIBC, name, False) if _LIBC else False


# glibc's mallopt parameters (malloc.h), and the values its dynamic mmap threshold reaches once
# large arrays have been freed (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit; trim at twice that)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_MAX_DYNAMIC = 32 * 1024 * 1024
_HEAP_DEPTH = 0
_HEAP_LOCK = threading.Lock()


@contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Within the block, glibc serves large arrays from its heap and keeps freed ones for reuse.

    glibc gives every allocation above its mmap threshold (which grows as large blocks are
    freed, but to 32 MB at most) pages of its own and unmaps them when it is freed, and it
    trims the top of its heap when more than the trim threshold is free there; the next large
    array then takes fresh pages, each faulted in and zeroed by the kernel. A fit on n rows
    makes hundreds of temporaries of n 8-byte items: below 4M rows they stay under the
    threshold and are recycled; above, every one is faulted anew, system CPU time that grows
    with the rows. Here both thresholds are raised for the block (``mallopt``), so that freed
    arrays stay in the heap and are reused; at the end the heap's free pages go back to the
    system (``malloc_trim``) and the thresholds are set to the values glibc's own dynamic
    threshold reaches after large frees (32 MB, trim at 64 MB). Nested and threaded blocks: the
    outermost one restores. A no-op where the C library is not glibc. Nothing computed changes.
    """
    global _HEAP_DEPTH
    mallopt = _glibc("mallopt")
    if not mallopt:
        yield
        return
    with _HEAP_LOCK:
        _HEAP_DEPTH += 1
        if _HEAP_DEPTH == 1:
            mallopt(_M_MMAP_THRESHOLD, 2**31 - 1)
            mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
    try:
        yield
    finally:
        with _HEAP_LOCK:
            _HEAP_DEPTH -= 1
            if _HEAP_DEPTH == 0:
                mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX_DYNAMIC)
                mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_MAX_DYNAMIC)
                release_free_memory()


# prctl(2) options (linux/prctl.h): the process's "no transparent huge pages" flag
_PR_SET_THP_DISABLE, _PR_GET_THP_DISABLE = 41, 42
_THP_DEPTH = 0
_THP_SET = False


@contextmanager
def small_pages(n_rows: int | None = None) -> Iterator[None]:
    """Within the block, memory the process touches for the first time comes in pages of
    4 KB, not as transparent huge pages of 2 MB (Linux's ``PR_SET_THP_DISABLE``, set for the
    block and then cleared, unless it was set before).

    Arrow's memory pool (mimalloc, where pandas' ``str`` columns live) asks for huge pages on
    its arenas (``MADV_HUGEPAGE``). The output's text columns are new memory, built by
    Arrow's ``take`` in buffers that grow as it writes; with huge pages, a 20M-row column of
    0.46 GB was faulted in as about 1,000 pages of 2 MB (2.1 GB zeroed by the kernel, 53-56
    ns a row of system time), with 4 KB pages as 110,000 pages (0.45 GB, 9-15 ns a row;
    BENCHMARKS.md, session 15). The flag is the process's, so other threads get small pages
    too while the block runs: only their speed can differ, never a value. Nested and threaded
    blocks: the outermost one clears it. With ``n_rows`` below :data:`RELEASE_MIN_ROWS`, or
    where the C library is not glibc or the kernel lacks the flag (before 3.15), a no-op.
    """
    global _THP_DEPTH, _THP_SET
    prctl = _glibc("prctl") if n_rows is None or n_rows >= RELEASE_MIN_ROWS else False
    if not prctl:
        yield
        return
    import ctypes

    zero = ctypes.c_ulong(0)
    with _HEAP_LOCK:
        _THP_DEPTH += 1
        if _THP_DEPTH == 1:
            # 0: huge pages allowed (so set the flag, and clear it at the end); 1: already
            # disabled by the program (leave it); -1: no such option (nothing to do)
            _THP_SET = prctl(_PR_GET_THP_DISABLE, zero, zero, zero, zero) == 0 and prctl(
                _PR_SET_THP_DISABLE, ctypes.c_ulong(1), zero, zero, zero) == 0
    try:
        yield
    finally:
        with _HEAP_LOCK:
            _THP_DEPTH -= 1
            if _THP_DEPTH == 0 and _THP_SET:
                prctl(_PR_SET_THP_DISABLE, zero, zero, zero, zero)
                _THP_SET = False
