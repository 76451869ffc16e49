"""Reading one model file's bytes into an object, vetted and validated, without isolation.

What the sandbox worker (:mod:`anonml.modelfile._sandbox`) and the isolated probe
(:mod:`anonml.modelfile._probe`) run inside their limits; :func:`anonml.safemodel.load_model`
and :func:`anonml.safemodel.open_model` are the public ways in. A leaf of the file-reading
modules: it imports the vetting and validation, never the loaders above it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anonml._errors import InputError, UntrustedModelError, one_line
from anonml.modelfile._skops_vet import _skops

__all__ = ["MAX_XGBOOST_BYTES", "PICKLE_FORMATS", "SAFE_FORMATS"]

SAFE_FORMATS = (".skops", ".json", ".ubj")
PICKLE_FORMATS = (".pkl", ".pickle", ".joblib")
#: largest XGBoost .json/.ubj file read (bytes)
MAX_XGBOOST_BYTES = 4 * 2**30


def _read_xgboost(p: Path) -> Any:
    from anonml.modelfile._validate_xgboost import decode_xgboost_raw, validate_xgboost_model

    try:
        from xgboost import XGBClassifier
    except ImportError:
        from anonml._install import install_hint

        raise InputError(f"{str(p)!r} looks like an XGBoost model file; fix: "
                         f"{install_hint('xgboost')}") from None
    if p.stat().st_size > MAX_XGBOOST_BYTES:
        raise InputError(f"model file {str(p)!r} is larger than {MAX_XGBOOST_BYTES:,} bytes")
    raw = p.read_bytes()
    try:
        doc = decode_xgboost_raw(raw)
        validate_xgboost_model(doc)
    except InputError as exc:
        raise InputError(f"model file {str(p)!r} is refused: {exc}") from None
    model = XGBClassifier()
    try:
        model.load_model(bytearray(raw))
    except Exception as exc:  # noqa: BLE001 - any parser error: one line
        raise InputError(f"cannot read {str(p)!r} as an XGBoost model: {one_line(exc, 200)}"
                         ) from None
    return model


def _read_and_validate(p: Path, trust: bool = False) -> Any:
    """Read a model file (no isolation) and validate its structure."""
    from anonml.modelfile._validate import validate_model

    suffix = p.suffix.lower()
    if suffix == ".skops":
        sio = _skops()
        from anonml.modelfile._skops_vet import load_vetted_skops

        if trust:
            try:
                model = sio.load(p, trusted=sio.get_untrusted_types(file=p))
            except Exception as exc:  # noqa: BLE001
                raise InputError(f"cannot read model {str(p)!r} as skops: {type(exc).__name__}"
                                 ) from None
        else:
            model = load_vetted_skops(p)
    elif suffix in (".json", ".ubj"):
        model = _read_xgboost(p)
    elif suffix in PICKLE_FORMATS:
        if not trust:
            raise UntrustedModelError(
                f"loading {str(p)!r} unpickles it, which runs code from the file; fix: pass "
                "--trust-model if you trust its source, save the model as .skops "
                "(anonml.safemodel.save_model), or audit probabilities only (--train-proba, "
                "--test-proba)")
        import joblib

        try:
            model = joblib.load(p)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"cannot load model {str(p)!r}: {type(exc).__name__}: "
                             f"{one_line(exc, 200)}") from None
    else:
        raise InputError(f"model file {str(p)!r} has unknown format {suffix!r}; fix: use "
                         ".skops, XGBoost .json/.ubj, or .pkl/.joblib with --trust-model")
    validate_model(model, where=f"model file {str(p)!r}: model", strict=not trust)
    return model
