"""The model sandbox: every call of an untrusted model runs in a limited worker process.

A model file's author is the adversary an audit exists for (threat model:
``docs/security.md``). Vetting the file as data (:mod:`anonml.safemodel._skops_vet`) and
validating its structure (:mod:`anonml.safemodel._validate`) close the holes anonml knows of;
the sandbox bounds what the ones it does not know of can do. The auditor's process never builds
the untrusted estimator. Instead:

- :func:`open_model` copies the file once to a private folder, hashing the bytes it copies (the
  hash in the report is of the bytes audited), and starts a **worker process** that reads that
  copy (vet, build, validate) and holds the model;
- :class:`SandboxedModel` stands in for it in the auditor: ``predict``, ``predict_proba``,
  ``decision_function`` and ``transform`` send the rows to the worker and receive arrays;
- what the rules and the report need (family, hyperparameters, structure, leaf sizes,
  fingerprint, a mapping's facts) is computed in the worker and comes back as JSON numbers;
- every refit (LiRA/RMIA reference models, ``--retrain``, the frontier) is a
  :class:`SandboxedEstimator`: the worker that holds the model rebuilds an *unfitted* estimator
  from the bounded refit schema (:mod:`anonml.safemodel._refit_schema` where present: ``memory``
  off, ``n_jobs`` the auditor's, bounded sizes) and hands it over as an opaque blob, which a new
  worker of its own rebuilds again from the schema, fits and keeps. The auditor never decodes
  the blob.

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
filter of :mod:`anonml.safemodel._seccomp` is installed on every thread, before anything is
imported or read. Inside the worker native thread pools run one thread, every ``n_jobs`` the
model holds is set to 1, an audit hook refuses processes, writes, signals, the network and
``ctypes`` at the Python level, and threads past :data:`MAX_THREADS` are refused. Every request has a wall-clock budget (:data:`CALL_TIMEOUT`):
a worker that does not answer in time is killed. A crash, hang or limit is one
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
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from anonml._errors import InputError, one_line
from anonml._sandbox_start import (  # noqa: F401 - MAX_THREADS: the worker's, named here
    DEFAULT_CPU_SECONDS,
    DEFAULT_MEMORY,
    MAX_THREADS,
)
from anonml._utils import n_rows as _rows

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
    from anonml.safemodel import _seccomp

    _seccomp.drop_capabilities()
    _seccomp.install()


class _Worker:
    """One sandboxed worker process and the private pipes to it (requests are serialized)."""

    def __init__(self, *, name: str, memory: int, cpu_seconds: int = DEFAULT_CPU_SECONDS,
                 workdir: str | None = None) -> None:
        from anonml._sandbox_start import launch, take

        self.name = name
        self.memory = memory
        self._lock = threading.Lock()
        # the spare started for this load by the command (anonml._sandbox_start.prestart), if
        # its limits match; else a new process: either way one process for this file only
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
        self._finalizer = weakref.finalize(self, _Worker._kill, self.proc, self._w, self._r,
                                           self._tmp)

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


class _Source:
    """Where a refit's unfitted estimator comes from: an opaque blob the model's worker made
    from the bounded refit schema (never decoded by the auditor), and the worker limits."""

    def __init__(self, blob: bytes, name: str, memory: int, adjustments: list,
                 family: str = "generic") -> None:
        self.blob = blob
        self.family = family
        self.name = name
        self.memory = memory
        self.adjustments = adjustments


def _tags(classifier: bool) -> Any:
    """scikit-learn's estimator tags for a sandboxed stand-in."""
    from sklearn.utils import Tags, TargetTags

    return Tags(estimator_type="classifier" if classifier else None,
                target_tags=TargetTags(required=classifier))


class SandboxedModel:
    """Stands in, in the auditor's process, for a model held by a sandbox worker.

    Made by :func:`open_model`. ``predict``, ``predict_proba``, ``decision_function`` and
    ``transform`` (where the model has them) send the rows to the worker and return its
    arrays; ``sklearn.base.clone`` gives an unfitted :class:`SandboxedEstimator` rebuilt from
    the bounded refit schema.

    Attributes
    ----------
    info : dict
        What the worker reported about the model: ``class``, ``description``, ``family``,
        ``methods``, ``is_anonymizer``, ``is_released_pipeline`` and ``params`` (JSON values).
    sha256 : str
        SHA-256 of the file's bytes as audited (the private copy, hashed while copying).
    path : str
        The file's path as given.
    load_times : dict
        ``time.monotonic()`` readings of the load's steps (set by :func:`open_model`; the
        ``worker_`` ones are the worker's word, for ``benchmarks/bench_safe_load.py`` only).
    """

    _anonml_sandboxed = True

    def __init__(self, worker: _Worker, info: dict, *, sha256: str, path: str) -> None:
        self._worker = worker
        self.info = info
        self.sha256 = sha256
        self.path = path
        self._source: _Source | None = None
        self.classes_ = _decode_result(*info["classes"]) if info.get("classes") else None
        self.n_features_in_ = info.get("n_features_in")
        names = info.get("feature_names_in")
        self.feature_names_in_ = np.asarray(names, dtype=object) if names else None

    # the model's methods, where it has them
    def __getattr__(self, name: str) -> Any:
        if name in ("predict", "predict_proba", "decision_function", "transform") and \
                name in self.__dict__.get("info", {}).get("methods", ()):
            return lambda X: self._call(name, X)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def _call(self, method: str, X: Any) -> Any:
        header, arrays, _ = self._worker.request(
            "call", f"{method} on {_rows(X):,} rows", handle="model", method=method, X=X,
            answer_bytes=_answer_budget(X))
        return _checked_output(self._worker, self.path, method, header, arrays, X,
                               self.classes_)

    def facts(self, X_train: Any, y_train: Any, X_test: Any, y_test: Any) -> dict:
        """The rule facts of :func:`anonml.safemodel._wrappers.posthoc_facts` and the report's
        model section, computed in the worker (``X_train``: the rows the model was fitted
        on)."""
        header, _, _ = self._worker.request(
            "facts", "the hyperparameter, tamper and structure checks", X_train=X_train,
            y_train=y_train, X_test=X_test, y_test=y_test)
        return _checked_facts(header.get("facts"), self.path, self.family)

    def verify_mapping(self, X: Any, *, where: str, X_train: Any = None,
                       labels: Any = None) -> dict:
        """:func:`anonml.safemodel._mapping.verify_mapping` of the model, in the worker."""
        header, _, _ = self._worker.request("verify_mapping", "the mapping's verification",
                                            X=X, where=where, X_train=X_train, labels=labels)
        facts = header.get("mapping")

        def count(d: Any, key: str) -> bool:
            return isinstance(d.get(key), int) and not isinstance(d.get(key), bool)

        def strings(v: Any) -> bool:
            return isinstance(v, list) and all(isinstance(x, str) for x in v)

        ok = (isinstance(facts, dict) and all(count(facts, k) for k in (
            "k", "n_groups", "smallest_group")) and isinstance(facts.get("method"), str)
            and strings(facts.get("quasi_identifiers"))
            and (facts.get("n_training_rows") is None or count(facts, "n_training_rows"))
            and (facts.get("privacy_claim") is None or isinstance(facts["privacy_claim"], str)))
        if ok and X_train is not None:
            from anonml.safemodel._mapping_privacy import privacy_facts_ok

            got = facts.get("measured")
            ok = (isinstance(got, dict) and all(count(got, k) for k in (
                      "k_measured", "n_groups_measured", "n_rows"))
                  and isinstance(got.get("claims_match"), bool)
                  and strings(got.get("mismatches"))
                  and isinstance(got.get("claims"), dict)
                  and all(count(got["claims"], k) for k in ("k", "n_groups"))
                  and (got["claims_match"] or bool(got["mismatches"]))
                  and privacy_facts_ok(got.get("privacy")))
        if not ok:
            raise InputError(f"model file {self.path!r}: the sandbox sent malformed mapping "
                             "facts; the mapping is malformed or hostile")
        return facts

    #: refit a file whose hyperparameters lie outside the refit bounds with the bounded
    #: values (True), or refuse it (False, the default); see ``refit_adjustments``
    clip_refit = False

    @property
    def refit_adjustments(self) -> list:
        """What a refit changed in the file's hyperparameters (empty until a refit was asked
        for, and when nothing was outside the bounds)."""
        return list(self._source.adjustments) if self._source is not None else []

    def inventory(self, X_train: Any) -> dict:
        """What a released pipeline's file holds, member by member, and how many of its values
        are training values that the anonymized training table does not show
        (:func:`anonml.safemodel.inventory`, run in the worker on ``X_train`` and the mapping's
        own ``transform`` of it): ``members``, ``hidden_values_mapping``,
        ``hidden_values_model`` and the first :data:`MAX_INVENTORY_ROWS` ``rows``."""
        header, _, _ = self._worker.request("inventory", "the file's inventory",
                                            X_train=X_train)
        inv = header.get("inventory")

        def count(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and v >= 0

        ok = (isinstance(inv, dict) and all(count(inv.get(k)) for k in (
            "members", "hidden_values_mapping", "hidden_values_model"))
            and isinstance(inv.get("rows"), list) and all(
                isinstance(r, dict) and isinstance(r.get("path"), str)
                and r.get("part") in ("mapping", "model") and count(r.get("size"))
                and (r.get("what") is None or isinstance(r.get("what"), str))
                and (r.get("training_values_not_shown") is None
                     or count(r.get("training_values_not_shown")))
                for r in inv["rows"]))
        if not ok:
            self._worker.close()
            raise InputError(f"model file {self.path!r}: the sandbox sent a malformed "
                             "inventory; the file is malformed or hostile")
        return {"members": inv["members"],
                "hidden_values_mapping": inv["hidden_values_mapping"],
                "hidden_values_model": inv["hidden_values_model"],
                "rows": [{"path": r["path"][:300], "part": r["part"],
                          "what": (r["what"] or "")[:300], "size": r["size"],
                          "training_values_not_shown": r["training_values_not_shown"]}
                         for r in inv["rows"]]}

    def _refit_source(self) -> _Source:
        if self._source is None:
            header, _, blobs = self._worker.request("refit_blob",
                                                    "rebuilding the estimator for a refit",
                                                    blobs=1, clip=bool(self.clip_refit))
            if len(blobs) != 1:
                raise InputError(f"model file {self.path!r}: the sandbox sent no estimator")
            adjustments = header.get("adjustments") or []
            if not isinstance(adjustments, list) or not all(
                    isinstance(a, dict) and all(isinstance(k, str) for k in a)
                    for a in adjustments):
                self._worker.close()
                raise InputError(f"model file {self.path!r}: the sandbox sent a malformed "
                                 "refit; the model is malformed or hostile")
            self._source = _Source(blobs[0], self.path, self._worker.memory, adjustments,
                                   self.family)
        return self._source

    def __sklearn_clone__(self) -> SandboxedEstimator:
        return SandboxedEstimator(self._refit_source())

    def get_params(self, deep: bool = True) -> dict:
        return dict(self.info.get("params") or {})

    @property
    def family(self) -> str:
        """The rules family the worker found (``"random_forest"``, ...)."""
        return self.info["family"]

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def __sklearn_tags__(self) -> Any:
        return _tags("predict_proba" in self.info["methods"])

    def fit(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """Not in place: the model in the file is never refitted; ``sklearn.base.clone`` it
        (a :class:`SandboxedEstimator`, rebuilt from the refit schema) and fit the clone."""
        raise InputError("a model held in the sandbox is not refitted in place; fix: fit "
                         "sklearn.base.clone(model), which is rebuilt from the refit bounds")

    def set_handle_unknown(self, value: str) -> None:
        """A mapping's ``handle_unknown`` (the one parameter the auditor may set on it)."""
        self._worker.request("set_handle_unknown", "setting handle_unknown", value=str(value))

    def __reduce__(self) -> tuple:
        # sent to another process (a Dask worker): the file's bytes travel, and that process
        # opens a sandbox of its own on them (once per process and file)
        data = self.__dict__.get("_bytes")
        if data is None:
            raise TypeError(f"the model file {self.path!r} is larger than "
                            f"{MAX_SHIPPED_BYTES:,} bytes and cannot be sent to other processes")
        return (_reopen, (data, Path(self.path).suffix.lower(), self.__dict__.get("_trust",
                                                                                 False),
                          self.sha256, self.path))

    def close(self) -> None:
        """Stop the worker (also done when this object is garbage-collected)."""
        self._worker.close()

    def __repr__(self) -> str:
        return f"SandboxedModel({self.info.get('description')}, {self.path!r})"


class SandboxedEstimator:
    """An unfitted estimator rebuilt from the bounded refit schema, fitted and called in a
    sandbox worker of its own (one per fit, so reference models train in parallel).

    Follows the scikit-learn contract as far as the attacks use it: ``get_params`` /
    ``set_params`` (``random_state``, which the worker sets on every nested estimator),
    ``clone``, ``fit``, ``predict``, ``predict_proba``, ``classes_``.
    """

    _anonml_sandboxed = True

    def __init__(self, source: _Source, random_state: Any = None) -> None:
        self.source = source
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict:
        return {"source": self.source, "random_state": self.random_state}

    def set_params(self, **params: Any) -> SandboxedEstimator:
        for key, value in params.items():
            if key not in ("source", "random_state"):
                raise InputError(f"a sandboxed estimator has no parameter {key!r}")
            setattr(self, key, value)
        return self

    def __sklearn_clone__(self) -> SandboxedEstimator:
        return SandboxedEstimator(self.source, self.random_state)

    @property
    def family(self) -> str:
        """The rules family of the estimator this refits."""
        return self.source.family

    def __sklearn_is_fitted__(self) -> bool:
        return "_worker" in self.__dict__

    def __sklearn_tags__(self) -> Any:
        return _tags(True)

    def fit(self, X: Any, y: Any, **fit_params: Any) -> SandboxedEstimator:
        if fit_params:
            raise InputError(f"a sandboxed refit takes no fit parameters; got "
                             f"{', '.join(map(str, fit_params))}")
        old = self.__dict__.pop("_worker", None)
        if old is not None:
            old.close()
        worker = _Worker(name=self.source.name, memory=self.source.memory)
        header, arrays, _ = worker.request(
            "fit", f"a refit on {_rows(X):,} rows", timeout=CALL_TIMEOUT, blob=self.source.blob,
            X=X, y=np.asarray(y), random_state=self.random_state, clip=True)
        methods, nf = header.get("methods"), header.get("n_features_in")
        if not (isinstance(methods, list) and set(methods) <= {
                "predict", "predict_proba", "decision_function", "transform"}
                and (nf is None or (isinstance(nf, int) and not isinstance(nf, bool)))
                and len(arrays) == (1 if header.get("has_classes") else 0)
                and all(a.ndim == 1 for a in arrays)):
            worker.close()
            raise InputError(f"model file {self.source.name!r}: a refit in the sandbox sent a "
                             "malformed answer; the model is malformed or hostile")
        self._worker = worker
        self.classes_ = _decode_result({"result": "array"}, arrays) if arrays else None
        self.n_features_in_ = nf
        self.methods_ = tuple(methods)
        return self

    def __getattr__(self, name: str) -> Any:
        if name in ("predict", "predict_proba", "decision_function") and \
                name in self.__dict__.get("methods_", ()):
            return lambda X: self._call(name, X)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def _call(self, method: str, X: Any) -> Any:
        header, arrays, _ = self._worker.request(
            "call", f"{method} of a refitted model on {_rows(X):,} rows", handle="model",
            method=method, X=X, answer_bytes=_answer_budget(X))
        return _checked_output(self._worker, self.source.name, method, header, arrays, X,
                               self.classes_)

    def dumps_pipeline(self, mapping_name: str, mapping: Any) -> bytes:
        """The ``.skops`` bytes of ``Pipeline([(mapping_name, mapping), ("model", this)])``,
        written by the worker (the auditor only stores them)."""
        _, _, blobs = self._worker.request("dumps_pipeline", "writing the released pipeline",
                                           blobs=1, mapping_name=mapping_name, mapping=mapping)
        if len(blobs) != 1:
            raise InputError("the sandbox sent no pipeline")
        return blobs[0]

    def close(self) -> None:
        worker = self.__dict__.get("_worker")
        if worker is not None:
            worker.close()

    def __getstate__(self) -> dict:
        raise TypeError("a sandboxed estimator cannot be pickled: its model lives in a worker")

    def __repr__(self) -> str:
        return f"SandboxedEstimator({self.source.name!r}, random_state={self.random_state!r})"


#: largest model file a sandboxed model carries to other processes (Dask workers)
MAX_SHIPPED_BYTES = 256 * 2**20
_REOPENED: dict = {}
_REOPEN_LOCK = threading.Lock()


def _reopen(data: bytes, suffix: str, trust: bool, sha256: str, path: str) -> SandboxedModel:
    """A sandboxed model opened from shipped bytes, in this process (cached by hash)."""
    import hashlib

    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError(f"model file {path!r}: the bytes sent to this process do not match the "
                         "hash audited")
    with _REOPEN_LOCK:
        model = _REOPENED.get(sha256)
        if model is None:
            with tempfile.TemporaryDirectory(prefix="anonml-shipped-") as tmp:
                copy = Path(tmp) / f"model{suffix}"
                copy.write_bytes(data)
                model = open_model(copy, trust=trust)
            model.path = path
            _REOPENED[sha256] = model
        return model


def is_sandboxed(model: Any) -> bool:
    """True for a :class:`SandboxedModel` or :class:`SandboxedEstimator`."""
    return bool(getattr(type(model), "_anonml_sandboxed", False))


def open_model(path: Any, *, trust: bool = False, memory: int | None = None,
               timeout: float | None = None, max_bytes: int | None = None,
               workdir: Any = None) -> SandboxedModel:
    """Open a model file in a sandbox worker; the auditor's process never builds it.

    Parameters
    ----------
    path : path
        ``.skops``, XGBoost ``.json``/``.ubj``, or (with ``trust``) ``.pkl``/``.joblib``.
    trust : bool, default False
        Allow unpickling (in the worker) and any type in a ``.skops`` file.
    memory : int, optional
        The worker's address-space limit in bytes (default the larger of
        :data:`DEFAULT_MEMORY` and 40 times the file's size).
    timeout : float, optional
        Wall-clock seconds to start the worker and read the file (default
        :data:`LOAD_TIMEOUT`).
    max_bytes : int, optional
        Largest file accepted (default :data:`anonml._io.MAX_MODEL_BYTES`); checked on the
        opened file before any byte is copied.

    Returns
    -------
    SandboxedModel

    Raises
    ------
    UntrustedModelError
        A pickle without ``trust``.
    InputError
        Not a regular file, too large, unknown format, refused by the vetting or the
        validation, or the worker crashed, hung or hit a limit: one line.
    """
    from anonml._errors import UntrustedModelError
    from anonml.safemodel._read import PICKLE_FORMATS, SAFE_FORMATS
    from anonml.safemodel._skops_vet import _skops

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in PICKLE_FORMATS and not trust:
        raise UntrustedModelError(
            f"loading {str(p)!r} unpickles it, which runs code from the file; fix: pass "
            "--trust-model if you trust its source, save the model as .skops "
            "(anonml.safemodel.save_model), or audit probabilities only (--train-proba, "
            "--test-proba)")
    if suffix not in SAFE_FORMATS + PICKLE_FORMATS:
        raise InputError(f"model file {str(p)!r} has unknown format {suffix!r}; fix: use "
                         ".skops, XGBoost .json/.ubj, or .pkl/.joblib with --trust-model")
    if suffix == ".skops":
        from anonml.safemodel._worker_imports import skops_installed

        if not skops_installed():  # named here, not by the worker (found, not imported: only
            _skops()  # the worker reads the file, and importing skops takes seconds)
    from anonml import _io

    if max_bytes is None:
        max_bytes = _io.MAX_MODEL_BYTES
    worker = None
    tmp = tempfile.mkdtemp(prefix="anonml-model-", dir=workdir)
    times = {"opened": time.monotonic()}
    try:
        copy = Path(tmp) / f"model{suffix}"
        size, digest = _copy_regular(p, copy, max_bytes)
        data = copy.read_bytes() if size <= MAX_SHIPPED_BYTES else None  # the hashed bytes
        times["copied"] = time.monotonic()
        if memory is None:
            memory = max(DEFAULT_MEMORY, 40 * size)
        worker = _Worker(name=str(p), memory=int(memory), workdir=workdir)
        times["started"] = worker.started
        header, arrays, _ = worker.request(
            "load", "reading the file", timeout=LOAD_TIMEOUT if timeout is None else timeout,
            path=str(copy), trust=bool(trust))
        times["answered"] = time.monotonic()
    except InputError as exc:
        if worker is not None:
            worker.close()
        raise InputError(str(exc).replace(str(Path(tmp) / f"model{suffix}"), str(p))) from None
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)  # the worker has read the file
    try:
        info = _checked_info(header.get("info"), str(p))
    except InputError:
        worker.close()
        raise
    if info.get("classes") is not None:
        if len(arrays) != 1 or arrays[0].ndim != 1:
            worker.close()
            raise InputError(f"model file {str(p)!r}: the sandbox sent malformed classes; the "
                             "model is malformed or hostile")
        info["classes"] = ({"result": "array"}, arrays[:1])
    model = SandboxedModel(worker, info, sha256=digest, path=str(p))
    from anonml.safemodel._seccomp import filtered

    # read from /proc by this process, not taken from the worker's word
    model.seccomp = filtered(worker.proc.pid)
    model._trust = bool(trust)
    phases = header.get("phases")  # the worker's clock readings: shown, never relied on
    if isinstance(phases, dict) and len(phases) <= 16:
        times.update({f"worker_{k}": float(v) for k, v in phases.items()
                      if isinstance(k, str) and len(k) <= 32 and isinstance(v, float)})
    model.load_times = times
    if data is not None:
        model._bytes = data
    return model


def _checked_info(info: Any, name: str) -> dict:
    """The worker's description of the model, with every field the auditor reads checked for
    its type (a worker is not trusted to send well-formed data)."""
    from anonml.safemodel._family import ESTIMATORS

    def bad(field: str) -> InputError:
        return InputError(f"model file {name!r}: the sandbox sent a malformed description "
                          f"({field}); the model is malformed or hostile")

    if not isinstance(info, dict):
        raise bad("not a dict")
    for key in ("class", "description", "family"):
        if not isinstance(info.get(key), str) or len(info[key]) > 1000:
            raise bad(key)
    if info["family"] not in ESTIMATORS:
        raise bad("family")
    methods = info.get("methods")
    if not isinstance(methods, list) or not set(methods) <= {
            "predict", "predict_proba", "decision_function", "transform"}:
        raise bad("methods")
    for key in ("is_anonymizer", "is_released_pipeline"):
        if not isinstance(info.get(key), bool):
            raise bad(key)
    if not isinstance(info.get("routes_unnamed_categories", False), bool):
        raise bad("routes_unnamed_categories")
    if not isinstance(info.get("params"), dict):
        raise bad("params")
    nf = info.get("n_features_in")
    if nf is not None and (not isinstance(nf, int) or isinstance(nf, bool) or nf < 0):
        raise bad("n_features_in")
    for key in ("feature_names_in", "columns", "quasi_identifiers"):
        v = info.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(c, str)
                                                                 for c in v)):
            raise bad(key)
    if info["is_anonymizer"] and (info.get("columns") is None or
                                  info.get("quasi_identifiers") is None):
        raise bad("columns")
    return info


#: the rule measures a worker may report; every other measure is the auditor's own
_WORKER_MEASURES = ("structure.", "tamper.", "dp.", "model.")


def _checked_facts(facts: Any, name: str, family: str) -> dict:
    """The rule facts from the worker, type-checked before the rules read them."""
    def bad(field: str) -> InputError:
        return InputError(f"model file {name!r}: the sandbox sent malformed facts ({field}); "
                          "the model is malformed or hostile")

    if not isinstance(facts, dict):
        raise bad("not a dict")
    if facts.get("family") != family:  # the description the worker gave at load
        raise bad("family")
    for key in ("params", "measures", "structure", "model_section"):
        if not isinstance(facts.get(key), dict):
            raise bad(key)
    if not all(isinstance(k, str) and k.startswith(_WORKER_MEASURES) and
               (isinstance(v, (bool, int, float, str)) or v is None)
               for k, v in facts["measures"].items()):
        raise bad("measures")
    section = facts.get("model_section")
    if isinstance(section, dict):
        fp, nf = section.get("fingerprint"), section.get("n_features")
        if not (fp is None or isinstance(fp, str)) or not (
                nf is None or (isinstance(nf, int) and not isinstance(nf, bool) and nf >= 0)):
            raise bad("model_section")
    tamper = facts.get("tamper")
    if not (isinstance(tamper, list) and len(tamper) == 2 and isinstance(tamper[0], str)
            and isinstance(tamper[1], list)):
        raise bad("tamper")
    section = facts["model_section"]
    for key in ("class", "inner_class"):
        if not isinstance(section.get(key), str):
            raise bad(f"model_section.{key}")
    if not isinstance(section.get("params"), dict):
        raise bad("model_section.params")
    evidence = facts.get("stores_training_records_evidence")
    # a new dict of the keys the auditor reads, nothing else of the worker's passes
    out = {"family": family, "params": facts["params"], "measures": facts["measures"],
           "structure": facts["structure"], "tamper": tamper, "n_samples": None,
           "model_section": {k: section.get(k) for k in (
               "class", "inner_class", "params", "fingerprint", "n_features")}}
    if isinstance(evidence, str):
        out["stores_training_records_evidence"] = evidence[:1000]
    return out


def _copy_regular(src: Path, dst: Path, max_bytes: int) -> tuple[int, str]:
    """Copy a regular file through one opened descriptor (:func:`anonml._io.safe_copy`: its
    kind and size checked before any byte is copied); return the size and the SHA-256 of
    exactly the bytes copied."""
    from anonml._io import safe_copy

    digest = safe_copy(src, dst, max_bytes=max_bytes, what="model file")
    return dst.stat().st_size, digest
