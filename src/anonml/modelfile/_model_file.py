"""Reading and writing model files without running code from them.

In a trusted research environment the model file under audit comes from the researcher being
checked, so anonml reads it as hostile data (threat model: ``docs/security.md``):

- ``.skops`` (``pip install 'anonml[report]'``): the schema is read and vetted by anonml before
  skops builds anything (:mod:`anonml.modelfile._skops_vet`): data loaders only, never a
  function, method, partial or operator node, and every type compared, as a whole
  ``(module, class)`` pair, with an exact list of vetted scikit-learn, XGBoost, diffprivlib
  and anonml classes. No prefix is trusted and attribute chains are refused.
- ``.json`` / ``.ubj``: XGBoost's model formats, decoded and validated by anonml
  (:mod:`anonml.modelfile._validate_xgboost`) before XGBoost's own parser reads them.
- ``.pkl``, ``.pickle``, ``.joblib``: unpickled only with ``trust=True`` (``--trust-model``).

Every loaded model's structure (tree node indices, features, thresholds, shapes; pipelines'
steps; XGBoost trees) is validated before anything calls it. Untrusted files are read first in
a child process with time and memory limits (:mod:`anonml.modelfile._probe`), so that a crash
or hang in a parser anonml does not own takes only the child down. :func:`save_model` writes
``.skops`` (or, for trusted formats, joblib) atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anonml._errors import InputError
from anonml._output import atomic_write
from anonml.modelfile._read import PICKLE_FORMATS, SAFE_FORMATS, _read_and_validate
from anonml.modelfile._skops_vet import _skops


def load_model(path: Any, *, trust: bool = False, isolate: bool = True,
               probe_rows: Any = None, timeout: float | None = None,
               memory: int | None = None) -> Any:
    """Load a fitted model for an audit, as data, and validate its structure.

    Parameters
    ----------
    path : path
        ``.skops``, XGBoost ``.json``/``.ubj``, or (with ``trust``) ``.pkl``/``.joblib``.
    trust : bool, default False
        Allow unpickling, and any type in a ``.skops`` file. Structure is validated all the
        same (without the refusals meant for files anonml cannot check to the end).
    isolate : bool, default True
        Read an untrusted file first in a child process with a time and memory limit
        (:func:`anonml.modelfile._probe.probe_model_file`); only if that succeeds is it read
        here. Both read the same private copy of the file. Turn off only for files you made
        yourself.
    probe_rows : DataFrame or array, optional
        A sample of the rows the model will be asked about: the child also predicts on them,
        so a model that crashes or hangs when called is refused before this process calls it.
    timeout, memory : optional
        The child's limits (seconds, bytes); defaults in :mod:`anonml.modelfile._probe`.

    Raises
    ------
    UntrustedModelError
        The file would need unpickling and ``trust`` is False.
    InputError
        Missing file, unknown format, a type or node that is not vetted, a malformed
        structure, or a file that crashed or hung the isolated reader; one line naming the
        file, the part and the fix.
    """
    import tempfile

    from anonml import _io

    p = Path(path)
    _io.check_regular_file(p, "model file", max_bytes=_io.MAX_MODEL_BYTES)
    suffix = p.suffix.lower()
    if trust or suffix not in SAFE_FORMATS:
        return _read_and_validate(p, trust=trust)  # pickles: UntrustedModelError unless trust
    if suffix == ".skops":
        _skops()  # a missing optional package is named here, not by the child
    with tempfile.TemporaryDirectory(prefix="anonml-model-") as tmp:
        copy = Path(tmp) / f"model{suffix}"  # one private copy: the child and this process
        _io.safe_copy(p, copy, max_bytes=_io.MAX_MODEL_BYTES, what="model file")  # same bytes
        try:
            if isolate:
                from anonml.modelfile._probe import probe_model_file

                probe_model_file(copy, rows=probe_rows, timeout=timeout, memory=memory)
            return _read_and_validate(copy)
        except InputError as exc:
            raise type(exc)(str(exc).replace(str(copy.resolve()), str(p)).replace(
                str(copy), str(p))) from None


def _check_written_by_worker(data: bytes, p: Path) -> None:
    """Bytes a sandbox worker wrote are read back as any untrusted file (a fresh sandbox:
    vetted, validated) before they are stored: they must hold a released pipeline."""
    import tempfile

    from anonml.modelfile._sandbox import open_model

    with tempfile.TemporaryDirectory(prefix="anonml-check-") as tmp:
        probe = Path(tmp) / "pipeline.skops"
        probe.write_bytes(data)
        try:
            written = open_model(probe)
        except InputError as exc:
            raise InputError(f"the pipeline written for {str(p)!r} did not pass anonml's own "
                             f"checks ({exc}); nothing was written") from None
        ok = written.info["is_released_pipeline"] and "predict" in written.info["methods"]
        written.close()
    if not ok:
        raise InputError(f"the pipeline written for {str(p)!r} is not a released pipeline; "
                         "nothing was written")


def save_model(model: Any, path: Any) -> Path:
    """Write ``model`` to ``path`` atomically: ``.skops`` (readable without unpickling) or
    ``.joblib``/``.pkl``.

    An anonml anonymizer (a mapping), alone or as the first step of a released pipeline
    (``Pipeline([("mapping", anonymizer), ("model", model)])``), is written without its per-row
    state (:func:`anonml.modelfile._mapping.release_copy`: no training rows, row indices or
    per-row arrays); a mapping that holds training records is refused in a pipeline.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    from anonml.modelfile._mapping import _is_anonymizer, is_released_pipeline, release_copy
    from anonml.modelfile._sandbox import is_sandboxed

    if is_released_pipeline(model) and len(model.steps) == 2 and is_sandboxed(model.steps[1][1]):
        # the model was refitted in a sandbox worker: the worker writes the file's bytes (the
        # mapping is this process's own), and this process only stores them
        if suffix != ".skops":
            raise InputError(f"a model refitted in the sandbox is saved as .skops only; fix: "
                             f"name the file {p.with_suffix('.skops').name!r}")
        (name, mapping), (_, fitted) = model.steps
        data = fitted.dumps_pipeline(name, mapping)
        _check_written_by_worker(data, p)
        atomic_write(p, lambda tmp: Path(tmp).write_bytes(data))
        return p
    if is_released_pipeline(model):
        from sklearn.pipeline import Pipeline

        (name, mapping), rest = model.steps[0], model.steps[1:]
        model = Pipeline([(name, release_copy(mapping, in_pipeline=True)), *rest],
                         memory=model.memory, verbose=model.verbose)
    elif _is_anonymizer(model):
        model = release_copy(model)
    if suffix == ".skops":
        sio = _skops()
        atomic_write(p, lambda tmp: sio.dump(model, tmp))
    elif suffix in PICKLE_FORMATS:
        import joblib

        atomic_write(p, lambda tmp: joblib.dump(model, tmp))
    else:
        raise InputError(f"cannot save a model as {suffix!r}; fix: use a .skops file name")
    return p
