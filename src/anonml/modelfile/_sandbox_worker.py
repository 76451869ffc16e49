"""The sandboxed worker's side of :mod:`anonml.modelfile._sandbox`: what runs in the child
process after :func:`anonml.modelfile._sandbox_process._apply_limits` set its limits, dropped its
capabilities and installed the seccomp filter.

The audit hook that refuses new processes, file changes, the network and native code; the
guards checked before the file is read; the request loop (read a model file in the sandbox,
answer calls with ``.npy`` arrays and JSON facts, rebuild and refit from the refit schema).
The auditor never imports this module; the worker is started with it (``_CHILD``).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml.modelfile._sandbox_process import (
    _LEN,
    MAX_INVENTORY_ROWS,
    MAX_THREADS,
    _Broken,
    _frame,
    _npy_bytes,
    _read_exact,
    _write_all,
)

# ---------------------------------------------------------------------------------------------
# the worker's side (runs in the sandboxed child)
# ---------------------------------------------------------------------------------------------
#: audit events (PEP 578) the worker refuses: new processes, file changes, the network,
#: native code loaded by ctypes
_REFUSED_EVENTS = {
    "os.fork": "new processes", "os.forkpty": "new processes", "os.exec": "new processes",
    "os.posix_spawn": "new processes", "os.spawn": "new processes", "os.system":
    "new processes", "subprocess.Popen": "new processes", "os.kill": "signals",
    "os.killpg": "signals", "os.remove": "file changes", "os.rename": "file changes",
    "os.rmdir": "file changes", "os.mkdir": "file changes", "os.chmod": "file changes",
    "os.chown": "file changes", "os.link": "file changes", "os.symlink": "file changes",
    "os.truncate": "file changes", "os.utime": "file changes", "shutil.rmtree":
    "file changes", "socket.connect": "the network", "socket.bind": "the network",
    "socket.sendto": "the network", "socket.getaddrinfo": "the network",
    "ctypes.dlopen": "native libraries", "ctypes.dlsym": "native libraries",
    "sys.setrecursionlimit": "changing its limits", "resource.setrlimit": "changing its limits",
    "resource.prlimit": "changing limits", "socket.__new__": "the network",
    "socket.sendmsg": "the network", "os.mkfifo": "file changes", "os.mknod": "file changes",
    "os.setxattr": "file changes", "os.removexattr": "file changes",
    "signal.pthread_kill": "signals",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: the native libraries loaded before the guards whose own symbols the worker may look up
#: (XGBoost resolves each C function of its library on first use)
_KNOWN_LIBRARIES: list = []


def _audit(event: str, args: tuple) -> None:  # pragma: no cover - runs in the child
    what = _REFUSED_EVENTS.get(event)
    if what is not None and event == "ctypes.dlsym" and args and \
            any(args[0] is lib for lib in _KNOWN_LIBRARIES):
        return
    if what is None and event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & _WRITE_FLAGS):
            what = "writing files"
    if what is not None:
        raise PermissionError(f"the anonml sandbox does not allow {what} ({event})")


def _live_threads() -> int:  # pragma: no cover - runs in the child
    """Threads of this process as the kernel counts them (native ones included)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _guard_processes() -> bool:  # pragma: no cover - runs in the child
    """Close the worker in: the kernel's seccomp filter (:mod:`anonml.modelfile._seccomp`,
    Linux x86-64), then an audit hook (which cannot be removed) for what Python asks, a cap on
    live threads, and sequential joblib. Returns whether the seccomp filter is in force."""
    import _thread

    try:
        import joblib

        joblib.parallel_config(backend="sequential")
    except Exception:  # noqa: BLE001 - older joblib
        pass
    from anonml.modelfile._seccomp import filtered as _filtered

    filtered = _filtered(os.getpid())  # installed at start (_apply_limits)
    start = _thread.start_new_thread

    def limited(*args: Any, **kwargs: Any) -> Any:
        if _live_threads() >= MAX_THREADS:
            raise RuntimeError(f"the anonml sandbox allows at most {MAX_THREADS} threads")
        return start(*args, **kwargs)

    _thread.start_new_thread = limited
    _thread.start_new = limited  # the old alias
    threading._start_new_thread = limited  # type: ignore[attr-defined]
    for name in ("pidfd_open", "forkpty", "fork"):
        if hasattr(os, name):
            setattr(os, name, _refused(name))
    try:
        import _posixsubprocess

        _posixsubprocess.fork_exec = _refused("fork_exec")
    except ImportError:
        pass
    sys.addaudithook(_audit)
    return filtered


def _refused(name: str) -> Any:  # pragma: no cover - runs in the child
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(f"the anonml sandbox does not allow {name}")
    return refuse


def _single_jobs(model: Any) -> None:  # pragma: no cover - runs in the child
    """Every ``n_jobs`` / ``nthread`` the model holds, nested ones included, set to 1."""
    try:
        params = model.get_params(deep=True)
    except Exception:  # noqa: BLE001 - not a scikit-learn estimator
        return
    change = {k: 1 for k, v in params.items()
              if (k == "n_jobs" or k.endswith("__n_jobs") or k == "nthread"
                  or k.endswith("__nthread")) and v not in (None, 1)}
    if change:
        try:
            model.set_params(**change)
        except Exception:  # noqa: BLE001
            pass


def _encode_result(out: Any) -> tuple[dict, list]:  # pragma: no cover - runs in the child
    import pandas as pd

    def plain(a: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "biuf":
            return np.ascontiguousarray(a)
        if a.dtype.kind in "US":
            return a.astype(str)
        if a.dtype.kind == "O" or a.dtype.kind == "T":
            return np.asarray([str(v) for v in a.ravel()], dtype=str).reshape(a.shape)
        raise TypeError(f"the model returned values of dtype {a.dtype}")

    if isinstance(out, pd.DataFrame):
        arrays = []
        for name in out.columns:
            col = out[name]
            missing = col.isna().to_numpy()
            if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
                values = col.to_numpy(dtype=float if missing.any() else None)
            else:
                values = col.astype(object).where(~missing, "").to_numpy()
            arrays += [plain(np.asarray(values)), missing]
        return {"result": "frame", "columns": [str(c) for c in out.columns]}, arrays
    if hasattr(out, "toarray"):
        out = out.toarray()
    return {"result": "array"}, [plain(np.asarray(out))]


def _seed_all(est: Any, seed: Any) -> None:  # pragma: no cover - runs in the child
    from anonml.attacks._shadow import _seed_params

    names = _seed_params(est)
    if names and seed is not None:
        est.set_params(**{n: seed for n in names})


def _for_refit(model: Any, clip: bool = False) -> tuple[Any, list]:  # pragma: no cover
    """An unfitted estimator rebuilt from the bounded refit schema (and what it changed)."""
    from sklearn.pipeline import Pipeline

    from anonml.modelfile._mapping import _is_anonymizer
    from anonml.modelfile._refit_schema import rebuild_for_refit

    steps = getattr(model, "steps", None) if isinstance(model, Pipeline) else None
    first = steps[0][1] if steps and len(steps) >= 2 else None
    inner = getattr(first, "estimator", None) if type(first).__name__ == "FrozenEstimator" \
        else first
    if first is not None and _is_anonymizer(inner):
        # a released pipeline: the reference models keep the released mapping as it is
        # (frozen: it routes, it is not refitted) and refit the model behind it
        from sklearn.frozen import FrozenEstimator

        rest = steps[1][1] if len(steps) == 2 else Pipeline(steps[1:])
        est, adjustments = _for_refit(rest, clip=clip)
        return Pipeline([(steps[0][0], FrozenEstimator(inner)), ("model", est)]), adjustments
    est, adjustments = rebuild_for_refit(model, n_jobs=1, clip=clip, unwrap=True)
    return est, list(adjustments or [])


def _facts(model: Any, kw: dict) -> dict:  # pragma: no cover - runs in the child
    from anonml.modelfile._facts import fingerprint_holder, posthoc_facts
    from anonml.modelfile._family import describe_model, model_params, unwrap

    facts = posthoc_facts(model, kw["X_train"], kw["y_train"], kw["X_test"], kw["y_test"])
    holder = fingerprint_holder(model)
    fp = getattr(holder, "anonml_fingerprint_", None)
    inner = unwrap(model)
    n_features = getattr(inner, "n_features_in_", None)
    facts["tamper"] = [facts["tamper"][0], [str(c) for c in facts["tamper"][1]]]
    facts["model_section"] = {
        "class": describe_model(model),
        "inner_class": describe_model(inner),
        "params": model_params(model),
        "fingerprint": fp["digest"] if isinstance(fp, dict) and "digest" in fp else None,
        "n_features": int(n_features) if isinstance(n_features, (int, np.integer)) else None,
    }
    return facts


def _to_json(obj: Any) -> Any:  # pragma: no cover - runs in the child
    """``obj`` with numpy scalars, arrays and tuples made plain JSON values."""
    if isinstance(obj, dict):
        return {str(k): _to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_to_json(v) for v in obj]
    if isinstance(obj, np.generic):
        return _to_json(obj.item())
    if isinstance(obj, np.ndarray):
        return _to_json(obj.tolist())
    if isinstance(obj, float) and not np.isfinite(obj):
        return None if np.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def _info(model: Any) -> tuple[dict, list]:  # pragma: no cover - runs in the child
    from anonml.modelfile._family import describe_model, model_family, model_params
    from anonml.modelfile._mapping import _is_anonymizer, is_released_pipeline

    methods = [m for m in ("predict", "predict_proba", "decision_function", "transform")
               if callable(getattr(model, m, None))]
    try:
        if "predict_proba" in methods:
            getattr(model, "predict_proba")  # sklearn's available_if may hide it
    except AttributeError:
        methods.remove("predict_proba")
    names = getattr(model, "feature_names_in_", None)
    nf = getattr(model, "n_features_in_", None)
    classes = getattr(model, "classes_", None)
    arrays = []
    if classes is not None:
        arrays = _encode_result(np.asarray(classes))[1]
    info = {"class": type(model).__name__, "description": describe_model(model),
            "family": model_family(model), "methods": methods,
            "is_anonymizer": bool(_is_anonymizer(model)),
            "is_released_pipeline": bool(is_released_pipeline(model)),
            "params": _to_json(model_params(model)),
            "classes": True if classes is not None else None,
            "n_features_in": int(nf) if isinstance(nf, (int, np.integer)) else None,
            "feature_names_in": [str(n) for n in names] if names is not None else None}
    if info["is_anonymizer"]:
        info["columns"] = [str(c) for c in getattr(model, "columns_", [])]
        info["quasi_identifiers"] = [str(c) for c in getattr(model, "qi_", [])]
        from anonml.anonymize._base import routes_unnamed_categories

        info["routes_unnamed_categories"] = routes_unnamed_categories(model)
    return info, arrays


def _worker_main(argv: list[str]) -> int:  # pragma: no cover - runs in the child
    rfd, wfd = int(argv[0]), int(argv[1])
    import time

    phases = {"imported": time.monotonic()}  # when the load's steps ended (the benchmark's)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # noqa: BLE001
        pass
    from anonml.modelfile._worker_imports import preload

    preload()  # pandas, scikit-learn, skops: before the guards, their set-up may touch files
    try:
        from sklearn.utils.parallel import _get_threadpool_controller

        _get_threadpool_controller()  # made once here; scikit-learn reuses it later
    except Exception:  # noqa: BLE001 - another scikit-learn layout
        pass
    try:  # loaded before the guards, which refuse loading native libraries
        import xgboost.core

        _KNOWN_LIBRARIES.append(xgboost.core._LIB)
    except Exception:  # noqa: BLE001 - not installed, or another layout
        pass
    filtered = _guard_processes()
    phases["guarded"] = time.monotonic()
    state: dict = {"filtered": filtered}

    def send(header: dict, arrays: list = (), blobs: list = ()) -> None:
        header = dict(header, n_arrays=len(arrays), n_blobs=len(blobs))
        parts = [_frame(json.dumps(header).encode())]
        parts += [_frame(_npy_bytes(a)) for a in arrays]
        parts += [_frame(bytes(b)) for b in blobs]
        _write_all(wfd, b"".join(parts), None)

    while True:
        try:
            (n,) = _LEN.unpack(_read_exact(rfd, _LEN.size, None))
            op, kw = pickle.loads(_read_exact(rfd, n, None))  # the auditor's own data
        except _Broken:
            return 0
        try:
            if op == "load":
                from anonml.modelfile._read import _read_and_validate

                phases["request"] = time.monotonic()
                model = _read_and_validate(Path(kw["path"]), trust=kw["trust"])
                phases["read"] = time.monotonic()
                info, arrays = _info(model)  # the file's own parameters, for the report
                _single_jobs(model)
                state["model"] = model
                phases["described"] = time.monotonic()
                send({"status": "ok", "info": info, "seccomp": state["filtered"],
                      "phases": phases}, arrays)
            elif op == "call":
                out = getattr(state[kw["handle"]], kw["method"])(kw["X"])
                header, arrays = _encode_result(out)
                send(dict(header, status="ok"), arrays)
            elif op == "set_handle_unknown":
                state["model"].set_params(handle_unknown=kw["value"])
                send({"status": "ok"})
            elif op == "facts":
                send({"status": "ok", "facts": _to_json(_facts(state["model"], kw))})
            elif op == "verify_mapping":
                from anonml.modelfile._mapping import verify_mapping

                try:
                    facts = verify_mapping(state["model"], kw["X"], where=kw["where"],
                                           X_train=kw["X_train"], labels=kw.get("labels"))
                except TypeError:  # a verify_mapping without the training rows
                    facts = verify_mapping(state["model"], kw["X"], where=kw["where"])
                send({"status": "ok", "mapping": _to_json(facts)})
            elif op == "inventory":
                from anonml.modelfile._inventory import inventory, leaked_total

                model = state["model"]
                X = kw["X_train"]
                anonymized = model.steps[0][1].transform(X)
                rows = inventory(model, X, anonymized)
                send({"status": "ok", "inventory": _to_json({
                    "members": len(rows),
                    "hidden_values_mapping": leaked_total(rows, "mapping"),
                    "hidden_values_model": leaked_total(rows, "model"),
                    "rows": [{k: r.get(k) for k in ("path", "part", "what", "size",
                                                    "training_values_not_shown")}
                             for r in rows[:MAX_INVENTORY_ROWS]]})})
            elif op == "refit_blob":
                est, adjustments = _for_refit(state["model"], clip=bool(kw.get("clip")))
                send({"status": "ok", "adjustments": _to_json(adjustments)},
                     blobs=[pickle.dumps(est, protocol=5)])
            elif op == "fit":
                # the blob came from a worker like this one, through the auditor, which never
                # decoded it; it is rebuilt from the bounded schema again before the fit
                est, _ = _for_refit(pickle.loads(kw["blob"]), clip=bool(kw.get("clip")))
                _seed_all(est, kw["random_state"])
                _single_jobs(est)
                est.fit(kw["X"], kw["y"])
                state["model"] = est
                info, arrays = _info(est)
                send({"status": "ok", "n_features_in": info["n_features_in"],
                      "methods": info["methods"], "has_classes": bool(arrays)}, arrays)
            elif op == "dumps_pipeline":
                import skops.io as sio
                from sklearn.pipeline import Pipeline

                from anonml.modelfile._mapping import release_copy

                pipe = Pipeline([(kw["mapping_name"], release_copy(kw["mapping"],
                                                                   in_pipeline=True)),
                                 ("model", state["model"])])
                send({"status": "ok"}, blobs=[sio.dumps(pipe)])
            else:
                send({"status": "error", "kind": "refused", "message": f"unknown request {op}"})
        except InputError as exc:
            send({"status": "error", "kind": "refused", "message": str(exc)})
        except (MemoryError, RecursionError) as exc:
            send({"status": "error", "kind": "call",
                  "message": f"it ran out of memory or recursion depth ({type(exc).__name__})"})
        except Exception as exc:  # noqa: BLE001 - the model's own error: one line
            from anonml._errors import one_line

            send({"status": "error", "kind": "call",
                  "message": f"{type(exc).__name__}: {one_line(exc, 300)}"})
