"""The sandbox's worker process as the auditor sees it: its limits, how it is started, and
the channel to it (:mod:`anonml.modelfile._sandbox` builds the stand-ins on top; the worker's
own side is :mod:`anonml.modelfile._sandbox_worker`).

**The channel.** The auditor sends requests (its own rows and labels) as pickles on a private
pipe; the worker answers on another with a JSON header (at most :data:`MAX_HEADER_BYTES`) and
``.npy`` arrays read with ``allow_pickle=False`` (numbers, booleans and fixed-width strings
only), each length checked before it is read. Nothing the worker sends is ever unpickled by the
auditor. The worker's own stdout goes nowhere; its stderr is kept only as a bounded tail.

**The limits** (the first thing the worker does, hard): address space
(:data:`DEFAULT_MEMORY`, or 40x the file), CPU seconds over the worker's life
(:data:`DEFAULT_CPU_SECONDS`), file size 0 (a write past it fails), no core dumps, at most
:data:`MAX_OPEN_FILES` descriptors, and (for a user other than root, for whom the kernel
enforces it) the user's process count; then every capability is dropped and the seccomp
filter of :mod:`anonml.modelfile._seccomp` is installed on every thread, before anything is
imported or read. Inside the worker native thread pools run one thread, every ``n_jobs`` the
model holds is set to 1, an audit hook refuses processes, writes, signals, the network and
``ctypes`` at the Python level, and threads past :data:`MAX_THREADS` are refused. Every
request has a wall-clock budget (:data:`CALL_TIMEOUT`): a worker that does not answer in time
is killed. A crash, hang or limit is one
:class:`~anonml._errors.InputError` line naming the file, the step and what happened.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import select
import signal
import struct
import subprocess
import threading
import time
import weakref
from typing import Any

import numpy as np

from anonml._errors import InputError, one_line
from anonml._utils import n_rows as _rows
from anonml.modelfile._sandbox_start import (  # noqa: F401 - the worker's, named here too
    _CHILD,
    DEFAULT_CPU_SECONDS,
    DEFAULT_MEMORY,
    MAX_THREADS,
)

#: wall-clock seconds a worker may take to start and read the model file
LOAD_TIMEOUT = 300.0
#: wall-clock seconds of any one request (a prediction, a refit, the structure facts)
CALL_TIMEOUT = 1800.0
#: largest JSON header a worker may send (bytes)
MAX_HEADER_BYTES = 16 * 2**20
#: largest total of the arrays in one answer (bytes)
MAX_ANSWER_BYTES = 4 * 2**30
#: largest opaque blob (an unfitted estimator, a saved pipeline) a worker may send (bytes)
MAX_BLOB_BYTES = 512 * 2**20
#: file descriptors a worker may hold
MAX_OPEN_FILES = 256
#: members of a released file's inventory kept in the report (all are counted)
MAX_INVENTORY_ROWS = 500

_LEN = struct.Struct("<Q")


# ---------------------------------------------------------------------------------------------
# the channel
# ---------------------------------------------------------------------------------------------
class ModelCallError(InputError):
    """The model raised an error of its own when called in the sandbox (``detail``: that
    error, on one line)."""

    detail: str = ""


class _Broken(Exception):
    """The worker closed its end, or did not answer in time."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _write_all(fd: int, data: bytes, deadline: float | None) -> None:
    view = memoryview(data)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Broken("timeout")
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                raise _Broken("timeout")
        try:
            n = os.write(fd, view[: 1 << 20])
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError):
            raise _Broken("closed") from None
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Broken("timeout")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise _Broken("timeout")
        try:
            chunk = os.read(fd, min(n - len(buf), 1 << 22))
        except BlockingIOError:
            continue
        except OSError:
            raise _Broken("closed") from None
        if not chunk:
            raise _Broken("closed")
        buf += chunk
    return buf  # no copy: callers read it as bytes


def _frame(data: bytes) -> bytes:
    return _LEN.pack(len(data)) + data


def _read_len(fd: int, deadline: float | None, limit: int, what: str) -> int:
    (n,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if n > limit:
        raise _Broken(f"sent a {what} of {n:,} bytes (limit {limit:,})")
    return n


_ARRAY_KINDS = "biufU"


def _npy_bytes(a: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, a, allow_pickle=False)
    return out.getvalue()


def _read_npy(data: bytes) -> np.ndarray:
    """An array from the worker: ``.npy`` only, never pickled objects; plain kinds only."""
    try:
        a = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - a malformed array from the worker
        raise _Broken(f"sent a malformed array ({type(exc).__name__})") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in _ARRAY_KINDS or \
            a.dtype.fields is not None or a.ndim > 2 or a.dtype.itemsize > 4096:
        raise _Broken("sent an array of a refused kind")
    return a


# ---------------------------------------------------------------------------------------------
# the parent's side
# ---------------------------------------------------------------------------------------------
def _apply_limits(memory: int, cpu_seconds: int, nproc: int | None) -> None:  # child
    """Hard resource limits on this process (the worker, first thing it does)."""
    try:
        import resource
    except ImportError:
        return
    caps = [(resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_seconds),
            (resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 0),
            (resource.RLIMIT_NOFILE, MAX_OPEN_FILES)]
    if nproc is not None:
        caps.append((resource.RLIMIT_NPROC, nproc))
    for limit, value in caps:
        try:
            soft, hard = resource.getrlimit(limit)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (cap, cap))  # hard too: the worker cannot raise it
        except (ValueError, OSError):
            pass
    try:  # die with the auditor, and be the first the kernel kills when memory runs out
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux
        pass
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass
    # the kernel's walls, before anything else is imported or read: no capabilities (as root,
    # they would let the worker past the kernel's checks), then the seccomp filter on every
    # thread (imports only read files, which it allows)
    from anonml.modelfile import _seccomp

    _seccomp.drop_capabilities()
    _seccomp.install()


class _Worker:
    """One sandboxed worker process and the private pipes to it (requests are serialized)."""

    def __init__(self, *, name: str, memory: int, cpu_seconds: int = DEFAULT_CPU_SECONDS,
                 workdir: str | None = None) -> None:
        from anonml.modelfile._sandbox_start import launch, take

        self.name = name
        self.memory = memory
        self._lock = threading.Lock()
        # the spare started for this load by the command (_sandbox_start.prestart), if its
        # limits match; else a new process: either way one process for this file only
        launched = take(memory, cpu_seconds, workdir) or launch(memory, cpu_seconds, workdir)
        self.proc, self._tmp, self.started = launched.proc, launched.tmp, launched.started
        self._w, self._r = req_w, rep_r = launched.w, launched.r
        # non-blocking: a worker that stops reading (or writing) cannot stall this process
        # past a request's deadline
        os.set_blocking(req_w, False)
        os.set_blocking(rep_r, False)
        self._tail = bytearray()
        threading.Thread(target=self._drain, daemon=True).start()
        self._closed = False
        self._pid = os.getpid()  # the one process that talks to this worker
        self._finalizer = weakref.finalize(self, _Worker._kill, self.proc, self._w, self._r,
                                           self._tmp)
        _LIVE.add(self)

    def _orphan(self) -> None:
        """In a forked child: never talk to the parent's worker (the answers would cross),
        never stop it or remove its folder; close this process's copies of the pipes."""
        self._finalizer.detach()
        finalizer = getattr(self._tmp, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._closed = True
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        # the worker's stderr is left open and never collected here: the parent's reading
        # thread held that stream's lock at the fork, so closing it would wait for ever
        _ORPHANS.append(self.proc)

    def _drain(self) -> None:
        stream = self.proc.stderr
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                return
            self._tail += chunk
            del self._tail[:-8192]

    @staticmethod
    def _kill(proc: Any, w: int, r: int, tmp: Any) -> None:
        try:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
            proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        for fd in (w, r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            tmp.cleanup()
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        self._closed = True
        self._finalizer()

    def _failure(self, why: str, step: str, timeout: float) -> InputError:
        name = self.name
        if why == "timeout":
            self.close()
            return InputError(f"model file {name!r}: {step} did not finish in {timeout:.0f} s in "
                              "the sandbox, which was stopped; the model is malformed or hostile "
                              "(or the budget too small for this data)")
        if why != "closed":
            self.close()
            return InputError(f"model file {name!r}: the sandbox {why} during {step}; it is "
                              "malformed or hostile, so anonml stopped it")
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        tail = bytes(self._tail).decode("utf-8", "replace")
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = f"signal {-code}"
            what = {"SIGXCPU": "used up its CPU-time limit",
                    "SIGXFSZ": "tried to write a file, which the sandbox forbids",
                    "SIGKILL": "was killed (out of memory, or stopped)"}.get(sig, "crashed")
            return InputError(f"model file {name!r}: the sandbox {what} ({sig}) during {step}; "
                              "the model is malformed or hostile, so anonml will not use it")
        if "MemoryError" in tail or "bad_alloc" in tail:
            return InputError(f"model file {name!r}: the sandbox ran out of its memory limit "
                              f"({self.memory / 2**30:.1f} GiB) during {step}; the model is "
                              "malformed, hostile or too large for the limit")
        return InputError(f"model file {name!r}: the sandbox stopped during {step} (exit status "
                          f"{code}); the model is malformed or hostile, so anonml will not use "
                          "it")

    def request(self, op: str, step: str, timeout: float = CALL_TIMEOUT, *,
                answer_bytes: int = 64 * 2**20, blobs: int = 0,
                **kwargs: Any) -> tuple[dict, list, list]:
        """Send one request and read the answer: ``(header, arrays, blobs)``, the arrays
        within ``answer_bytes`` in all and exactly ``blobs`` blobs (or an error)."""
        with self._lock:
            if self._pid != os.getpid():
                raise InputError(f"model file {self.name!r}: its sandbox belongs to the process "
                                 f"that opened it, not to this forked one; cannot run {step}; "
                                 "fix: open the model in this process, or send it by pickling "
                                 "(a spawned process reopens it)")
            if self._closed:
                raise InputError(f"model file {self.name!r}: the sandbox was already stopped; "
                                 f"cannot run {step}")
            deadline = time.monotonic() + timeout
            try:
                _write_all(self._w, _frame(pickle.dumps((op, kwargs), protocol=5)), deadline)
                n = _read_len(self._r, deadline, MAX_HEADER_BYTES, "header")
                try:
                    header = json.loads(_read_exact(self._r, n, deadline))
                except (ValueError, RecursionError):  # incl. JSON nested past the stack
                    raise _Broken("sent a malformed answer") from None
                if not isinstance(header, dict):
                    raise _Broken("sent a malformed answer")
                n_arrays, n_blobs = header.get("n_arrays", 0), header.get("n_blobs", 0)
                if not (isinstance(n_arrays, int) and isinstance(n_blobs, int)
                        and 0 <= n_arrays <= 100_000
                        and n_blobs == (0 if header.get("status") == "error" else blobs)):
                    raise _Broken("sent a malformed answer")
                arrays, budget = [], min(int(answer_bytes), MAX_ANSWER_BYTES)
                for _ in range(n_arrays):
                    n = _read_len(self._r, deadline, budget, "set of arrays")
                    budget -= n
                    arrays.append(_read_npy(_read_exact(self._r, n, deadline)))
                blobs = [_read_exact(self._r, _read_len(self._r, deadline, MAX_BLOB_BYTES,
                                                        "blob"), deadline)
                         for _ in range(n_blobs)]
            except _Broken as exc:
                raise self._failure(exc.why, step, timeout) from None
        if header.get("status") == "error":
            message = header.get("message")
            if not isinstance(message, str):
                message = "the model was refused"
            message = one_line(message, 600)  # one line, control characters shown
            if header.get("kind") == "refused":
                raise InputError(message if message.startswith("model file ") else
                                 f"model file {self.name!r}: {message}")
            err = ModelCallError(f"model file {self.name!r}: {step} failed in the sandbox: "
                                 f"{message}")
            err.detail = message
            raise err
        return header, arrays, blobs


#: the workers this process opened (a forked child orphans its copies: :meth:`_Worker._orphan`)
_LIVE: weakref.WeakSet = weakref.WeakSet()
_ORPHANS: list = []


def _after_fork_in_child() -> None:
    for worker in list(_LIVE):
        worker._orphan()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- tables over the channel -----------------------------------------------------------------
def _decode_result(header: dict, arrays: list, index: Any = None, rows: int | None = None
                   ) -> Any:
    """Rebuild what the worker encoded with :func:`_encode_result`: an array or a table
    (``rows``: the number of rows it must have, checked before any conversion)."""
    import pandas as pd

    if rows is not None and any(a.ndim == 0 or a.shape[0] != rows for a in arrays):
        raise InputError(f"the sandbox sent an answer that is not {rows:,} rows long")
    kind = header.get("result")
    if kind == "array":
        if len(arrays) != 1 or arrays[0].ndim == 0:
            raise InputError("the sandbox sent a malformed array")
        a = arrays[0]
        return a.astype(object) if a.dtype.kind == "U" else a
    if kind == "frame":
        cols = header.get("columns")
        if not isinstance(cols, list) or len(arrays) != 2 * len(cols):
            raise InputError("the sandbox sent a malformed table")
        data = {}
        for i, name in enumerate(cols):
            values, missing = arrays[2 * i], arrays[2 * i + 1]
            if values.ndim != 1 or missing.shape != values.shape or missing.dtype.kind != "b":
                raise InputError("the sandbox sent a malformed table")
            col = values.astype(object) if values.dtype.kind == "U" else values
            if missing.any():
                col = col.astype(object) if col.dtype.kind in "biu" else col.copy()
                col[missing] = np.nan if col.dtype.kind == "f" else None
            data[str(name)] = col
        lengths = {len(v) for v in data.values()}
        if len(lengths) > 1:
            raise InputError("the sandbox sent a malformed table")
        frame = pd.DataFrame(data)
        if index is not None and len(index) == len(frame):
            frame.index = index
        return frame
    raise InputError("the sandbox sent an answer of an unknown kind")


def _answer_budget(X: Any) -> int:
    """Bytes of arrays a call on ``X`` may return: 16 MiB, plus 4 KiB a row (512 float
    columns, or a row of text)."""
    return 16 * 2**20 + 4096 * _rows(X)


def _checked_output(worker: _Worker, name: str, method: str, header: dict, arrays: list,
                    X: Any, classes: Any) -> Any:
    """A call's answer, decoded and checked against the request: one row per row sent,
    probabilities finite, in [0, 1] and summing to 1 over the model's classes. A malformed
    answer stops the worker."""
    def bad(why: str) -> InputError:
        worker.close()
        return InputError(f"model file {name!r}: {method} in the sandbox {why}; the model is "
                          "malformed or hostile, so anonml stopped it")

    try:
        out = _decode_result(header, arrays, getattr(X, "index", None), rows=_rows(X))
    except InputError as exc:
        raise bad(f"sent a malformed answer ({exc})") from None
    if _rows(out) != _rows(X):
        raise bad(f"returned {_rows(out):,} rows for {_rows(X):,}")
    if method == "predict_proba":
        if not isinstance(out, np.ndarray) or out.dtype.kind not in "biuf" or out.ndim != 2:
            raise bad("returned something other than a table of probabilities")
        out = out.astype(np.float64, copy=False)
        if classes is not None and out.shape[1] != len(classes):
            raise bad(f"returned {out.shape[1]} probability columns for {len(classes)} classes")
        if out.size and (not np.isfinite(out).all() or out.min() < -1e-9 or out.max() > 1 + 1e-9
                         or np.abs(out.sum(axis=1) - 1).max() > 1e-6):
            raise bad("returned probabilities that are not finite, outside [0, 1] or do not sum "
                      "to 1")
    elif method in ("predict", "decision_function") and getattr(out, "ndim", 1) > 2:
        raise bad("returned an array of the wrong shape")
    return out
