"""The model sandbox: every call of an untrusted model runs in a limited worker process.

A model file's author is the adversary an audit exists for (threat model:
``docs/security.md``). Vetting the file as data (:mod:`anonml.modelfile._skops_vet`) and
validating its structure (:mod:`anonml.modelfile._validate`) close the holes anonml knows of;
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
  from the bounded refit schema (:mod:`anonml.modelfile._refit_schema` where present: ``memory``
  off, ``n_jobs`` the auditor's, bounded sizes) and hands it over as an opaque blob, which a new
  worker of its own rebuilds again from the schema, fits and keeps. The auditor never decodes
  the blob.

The worker process, its limits and the channel to it are in
:mod:`anonml.modelfile._sandbox_process` (the limits: address space, CPU seconds, no file
writes, no new processes, no capabilities, a seccomp filter; every request has a wall-clock
budget, :data:`CALL_TIMEOUT`). A crash, hang or limit is one
:class:`~anonml._errors.InputError` line naming the file, the step and what happened.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml._utils import n_rows as _rows
from anonml.modelfile._sandbox_process import (
    CALL_TIMEOUT,
    DEFAULT_MEMORY,
    LOAD_TIMEOUT,
    _answer_budget,
    _checked_output,
    _decode_result,
    _Worker,
)


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
        """The rule facts of :func:`anonml.modelfile._facts.posthoc_facts` and the report's
        model section, computed in the worker (``X_train``: the rows the model was fitted
        on)."""
        header, _, _ = self._worker.request(
            "facts", "the hyperparameter, tamper and structure checks", X_train=X_train,
            y_train=y_train, X_test=X_test, y_test=y_test)
        return _checked_facts(header.get("facts"), self.path, self.family)

    def verify_mapping(self, X: Any, *, where: str, X_train: Any = None,
                       labels: Any = None) -> dict:
        """:func:`anonml.modelfile._mapping.verify_mapping` of the model, in the worker."""
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
            from anonml.modelfile._mapping_privacy import privacy_facts_ok

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
        ``hidden_values_model`` and the first
        :data:`~anonml.modelfile._sandbox_process.MAX_INVENTORY_ROWS` ``rows``."""
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


def _forget_reopened() -> None:
    """In a forked child: the cached models' sandboxes are the parent's, so it opens its own."""
    global _REOPEN_LOCK
    _REOPEN_LOCK = threading.Lock()
    _REOPENED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_reopened)


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
    from anonml.modelfile._read import PICKLE_FORMATS, SAFE_FORMATS
    from anonml.modelfile._skops_vet import _skops

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
        from anonml.modelfile._worker_imports import skops_installed

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
    from anonml.modelfile._seccomp import filtered

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
    from anonml.modelfile._family import ESTIMATORS

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
