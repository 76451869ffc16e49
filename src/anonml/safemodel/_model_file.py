"""Reading and writing model files without running code from them.

Unpickling a file runs whatever code it names, so a checker must not unpickle a researcher's
model just to audit it. anonml reads, without unpickling:

- ``.skops`` (the skops format, ``pip install 'anonml[report]'``): only types on a list are
  built — skops' own defaults, scikit-learn's ``Tree``, and anonml's safe wrappers; any other
  type in the file is refused unless ``trust=True``;
- ``.json`` / ``.ubj``: XGBoost's own model formats (``XGBClassifier.load_model``).

``.pkl``, ``.pickle`` and ``.joblib`` files are unpickled only with ``trust=True``
(``--trust-model``). :func:`save_model` writes ``.skops`` (or, with ``trust`` formats,
joblib) atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anonml._errors import InputError, UntrustedModelError
from anonml._io import atomic_write

SAFE_FORMATS = (".skops", ".json", ".ubj")
PICKLE_FORMATS = (".pkl", ".pickle", ".joblib")
# types built from a .skops file without --trust-model, beyond skops' defaults
_TRUSTED_PREFIXES = ("anonml.safemodel._wrappers.", "anonml.safemodel._optional.")
_TRUSTED_TYPES = ("sklearn.tree._tree.Tree",)


def _skops() -> Any:
    try:
        import skops.io as sio
    except ImportError:
        raise InputError("reading or writing .skops model files needs skops; fix: pip install "
                         "'anonml[report]'") from None
    return sio


def load_model(path: Any, *, trust: bool = False) -> Any:
    """Load a fitted model for an audit.

    Parameters
    ----------
    path : path
        ``.skops``, XGBoost ``.json``/``.ubj``, or (with ``trust``) ``.pkl``/``.joblib``.
    trust : bool, default False
        Allow unpickling, and any type in a ``.skops`` file.

    Raises
    ------
    UntrustedModelError
        The file would need unpickling, or holds a type not on the trusted list.
    InputError
        Missing file, unknown format, or a file that cannot be read.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"model file {str(p)!r} does not exist; fix: check the path")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        sio = _skops()
        try:
            untrusted = sio.get_untrusted_types(file=p)
        except Exception as exc:
            raise InputError(f"cannot read model {str(p)!r} as skops: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        ours = [t for t in untrusted if t.startswith(_TRUSTED_PREFIXES) or t in _TRUSTED_TYPES]
        others = [t for t in untrusted if t not in ours]
        if others and not trust:
            raise UntrustedModelError(
                f"model {str(p)!r} holds types anonml does not build without trust: "
                f"{', '.join(others[:5])}; fix: pass --trust-model (trust=True) if you trust "
                "the file's source")
        return sio.load(p, trusted=untrusted)
    if suffix in (".json", ".ubj"):
        try:
            from xgboost import XGBClassifier
        except ImportError:
            raise InputError(f"{str(p)!r} looks like an XGBoost model file; fix: pip install "
                             "'anonml[xgboost]'") from None
        model = XGBClassifier()
        try:
            model.load_model(p)
        except Exception as exc:
            raise InputError(f"cannot read {str(p)!r} as an XGBoost model: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from None
        return model
    if suffix in PICKLE_FORMATS:
        if not trust:
            raise UntrustedModelError(
                f"loading {str(p)!r} unpickles it, which runs code from the file; fix: pass "
                "--trust-model if you trust its source, save the model as .skops "
                "(anonml.safemodel.save_model), or audit probabilities only (--train-proba, "
                "--test-proba)")
        import joblib

        try:
            return joblib.load(p)
        except Exception as exc:
            raise InputError(f"cannot load model {str(p)!r}: {type(exc).__name__}: {exc}"
                             ) from None
    raise InputError(f"model file {str(p)!r} has unknown format {suffix!r}; fix: use .skops, "
                     "XGBoost .json/.ubj, or .pkl/.joblib with --trust-model")


def save_model(model: Any, path: Any) -> Path:
    """Write ``model`` to ``path`` atomically: ``.skops`` (readable without unpickling) or
    ``.joblib``/``.pkl``."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".skops":
        sio = _skops()
        atomic_write(p, lambda tmp: sio.dump(model, tmp))
    elif suffix in PICKLE_FORMATS:
        import joblib

        atomic_write(p, lambda tmp: joblib.dump(model, tmp))
    else:
        raise InputError(f"cannot save a model as {suffix!r}; fix: use a .skops file name")
    return p
