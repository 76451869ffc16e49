"""Fingerprints of a fitted estimator: detect parameters or learned state changed after fit.

A released model must be the model that was checked. :func:`fingerprint` takes, at the end of
``fit``, a SHA-256 digest of the estimator's hyper-parameters and of every piece of its learned
state; :func:`diff_fingerprints` later names the pieces that changed (never their values), so a
post-hoc check can tell "``max_depth`` was raised after fit" or "a leaf value of tree 3 was
edited" from an untouched model. This is the tamper check of SACRO-ML's ``SafeModel``
(``posthoc_check``), which keeps a deep copy of the estimator's ``__dict__`` taken at fit and
compares it item by item, with model-specific code for items it cannot compare directly
(trees, lists of estimators). A digest over all learned state needs no second copy of the model
inside the released file, needs no model-specific comparison code, and reports where a change
happened down to the single tree or layer.

What is hashed
--------------
``params``
    ``get_params(deep=False)`` as canonical JSON (sorted keys; tuples, sets and dicts tagged;
    nested estimators by class and their own parameters, recursively; functions and classes by
    qualified name, plus the byte code of a function; NumPy arrays by dtype, shape and the
    SHA-256 of their bytes; random generators by their state).
learned state
    Every attribute in ``vars(estimator)`` whose name ends with ``_`` and does not start with
    ``_`` (the scikit-learn convention), except names starting with ``anonml_`` and the names
    in ``exclude`` (where the wrappers keep the fingerprint itself); plus the private attributes
    known to hold learned state: XGBoost's ``_Booster``, the trees, baseline, binning and label
    encoder of scikit-learn's histogram gradient boosting, the label binarizer of
    ``MLPClassifier``. Each attribute is one *part*; a list, tuple, dict or object
    array holding arrays or estimators is split into one part per element
    (``estimators_[3].tree_``, ``coefs_[0]``), and a nested estimator into its ``params`` and its
    own learned attributes, so a change is located to the tree or layer it touched.

Values are hashed by type, deterministically and without ``repr`` (which prints memory
addresses): arrays by dtype, shape and C-order bytes (structured arrays field by field, so that
padding bytes never enter the digest; object arrays element by element); scikit-learn ``Tree``
objects through ``__reduce__`` (the node and value arrays, which share memory with
``tree_.threshold``, ``tree_.value``, ... so an in-place edit of those is seen); XGBoost boosters
by ``save_raw("ubj")``; torch modules by their layer types, ``extra_repr`` and ``state_dict``
tensors (torch is used only when the object already is a torch object); pandas objects by
values, dtypes and index. Any other object is hashed through ``pickle.dumps(obj, protocol=5)``
of the in-memory object (it is never unpickled) and its path is listed under ``"fallback"``;
an object that cannot be pickled is listed under ``"unhashable"`` (its type alone is hashed, so
a change of its contents goes unnoticed: the report says so).

References
----------
Jefferson, E. et al. (2022). GRAIMATTER Green Paper: Recommendations for disclosure control of
trained machine learning (ML) models from trusted research environments (TREs). Zenodo,
doi:10.5281/zenodo.7089491 (the safe-wrapper and post-hoc check design).
SACRO-ML (AI-SDC/SACRO-ML): ``sacroml/safemodel/safemodel.py``, ``SafeModel.posthoc_check``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import struct
import types
from collections.abc import Iterable
from typing import Any

import numpy as np

from anonml._errors import InputError

__all__ = ["diff_fingerprints", "fingerprint"]

_EXCLUDED_PREFIX = "anonml_"
# private attributes that hold learned state the predictions depend on, by class in the MRO
_PRIVATE_STATE = {
    ("sklearn", "HistGradientBoostingClassifier"): (
        "_baseline_prediction",
        "_bin_mapper",
        "_label_encoder",
        "_predictors",
        "_preprocessor",
    ),
    ("sklearn", "HistGradientBoostingRegressor"): (
        "_baseline_prediction",
        "_bin_mapper",
        "_predictors",
        "_preprocessor",
    ),
    ("sklearn", "MLPClassifier"): ("_label_binarizer",),
    ("xgboost", "XGBModel"): ("_Booster",),
}
_ATOMIC = (type(None), bool, int, float, complex, str, bytes, np.generic)


class _Context:
    """Paths that needed the pickle fallback, or could not be hashed at all."""

    def __init__(self) -> None:
        self.fallback: list[str] = []
        self.unhashable: list[str] = []


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------
def fingerprint(estimator: Any, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """SHA-256 fingerprint of an estimator's parameters and learned state.

    Parameters
    ----------
    estimator : estimator with ``get_params``
        Usually fitted; an unfitted one has no learned parts.
    exclude : iterable of str, default ()
        Top-level attribute names left out of the learned state, in addition to every name
        starting with ``anonml_`` (for attributes that store the fingerprint or the check
        results themselves).

    Returns
    -------
    dict
        ``params``: hex SHA-256 of the canonical JSON of ``get_params(deep=False)``;
        ``state``: hex SHA-256 over all learned parts; ``parts``: ``{name: hex SHA-256}`` per
        learned part (``"tree_"``, ``"estimators_[3].tree_"``, ``"coefs_[0]"``,
        ``"estimators_[3].params"``); ``digest``: ``"sha256:<hex>"`` over params and state;
        ``fallback``: paths hashed through pickle; ``unhashable``: paths whose contents could
        not be hashed (see the module notes). All values are plain JSON types.

    Raises
    ------
    InputError
        ``estimator`` has no ``get_params`` (not a scikit-learn style estimator).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> tree = DecisionTreeClassifier(max_depth=2).fit([[0], [1], [2], [3]], [0, 0, 1, 1])
    >>> before = fingerprint(tree)
    >>> tree.tree_.value[1, 0, 0] = 0.5
    >>> diff_fingerprints(before, fingerprint(tree))
    ['tree_']
    """
    if not _is_estimator(estimator):
        raise InputError(
            f"fingerprint() needs a scikit-learn style estimator with get_params(); got "
            f"{_qualname(type(estimator))}: wrap the model in an estimator class first"
        )
    if isinstance(exclude, str):
        exclude = (exclude,)
    excluded = frozenset(exclude)
    ctx = _Context()
    params = _params_digest(estimator, ctx, "params")
    parts: dict[str, str] = {}
    for name, value in _learned_items(estimator, excluded):
        _walk(value, name, parts, ctx)
    _walk_fitted_params(estimator, "params", parts, ctx, set())
    state = _state_digest(parts)
    digest = hashlib.sha256(f"{params}:{state}".encode()).hexdigest()
    return {
        "params": params,
        "state": state,
        "parts": dict(sorted(parts.items())),
        "digest": f"sha256:{digest}",
        "fallback": ctx.fallback,
        "unhashable": ctx.unhashable,
    }


def diff_fingerprints(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names of what changed between two fingerprints: ``"params"`` and part names.

    Parameters
    ----------
    before, after : dict
        Results of :func:`fingerprint`.

    Returns
    -------
    list of str
        ``"params"`` first if the hyper-parameters differ, then, sorted, every part whose hash
        differs or that exists in only one of the two. Empty when nothing changed. Names only,
        never values.
    """
    for label, fp in (("before", before), ("after", after)):
        if not (isinstance(fp, dict) and isinstance(fp.get("parts"), dict) and "params" in fp):
            raise InputError(
                f"diff_fingerprints: {label} is not a fingerprint (a dict with 'params' and "
                f"'parts'); pass the result of fingerprint(estimator)"
            )
    changed = ["params"] if before["params"] != after["params"] else []
    b, a = before["parts"], after["parts"]
    changed += sorted(name for name in set(b) | set(a) if b.get(name) != a.get(name))
    return changed


# ---------------------------------------------------------------------------------------------
# structure: estimators -> named parts
# ---------------------------------------------------------------------------------------------
def _is_estimator(obj: Any) -> bool:
    return (
        not isinstance(obj, type)
        and callable(getattr(obj, "get_params", None))
        and hasattr(obj, "__dict__")
    )


def _learned_items(est: Any, excluded: frozenset[str] = frozenset()) -> list[tuple[str, Any]]:
    """(name, value) of the learned attributes, in sorted name order."""
    items = []
    for name, value in vars(est).items():
        if (
            name.endswith("_")
            and not name.startswith("_")
            and not name.startswith(_EXCLUDED_PREFIX)
            and name not in excluded
        ):
            items.append((name, value))
    state = vars(est)
    for name in _private_state_names(type(est)):
        if state.get(name) is not None:
            items.append((name, state[name]))
    return sorted(items, key=lambda kv: kv[0])


def _private_state_names(cls: type) -> list[str]:
    """Known private learned attributes of ``cls`` (XGBoost's booster, HGB's trees, ...)."""
    names: list[str] = []
    for klass in cls.__mro__:
        key = (klass.__module__.split(".")[0], klass.__name__)
        names += [n for n in _PRIVATE_STATE.get(key, ()) if n not in names]
    return names


def _is_container_of_compound(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(not isinstance(v, _ATOMIC) for v in obj)
    if isinstance(obj, dict):
        return any(not isinstance(v, _ATOMIC) for v in obj.values())
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject and obj.size:
        return any(not isinstance(v, _ATOMIC) for v in obj.flat)
    return False


def _walk(obj: Any, path: str, parts: dict[str, str], ctx: _Context) -> None:
    """Split ``obj`` into named parts (nested estimators and containers of compound values)."""
    if _is_estimator(obj):
        parts[f"{path}.params"] = _params_digest(obj, ctx, f"{path}.params")
        for name, value in _learned_items(obj):
            _walk(value, f"{path}.{name}", parts, ctx)
        _walk_fitted_params(obj, f"{path}.params", parts, ctx, set())
    elif _is_container_of_compound(obj):
        if isinstance(obj, dict):
            for key in sorted(obj, key=_key_order):
                _walk(obj[key], f"{path}[{key!r}]", parts, ctx)
        elif isinstance(obj, np.ndarray):
            for index in np.ndindex(obj.shape):
                _walk(obj[index], f"{path}[{', '.join(map(str, index))}]", parts, ctx)
        else:
            for i, value in enumerate(obj):
                _walk(value, f"{path}[{i}]", parts, ctx)
    else:
        parts[path] = _value_digest(obj, ctx, path)


def _walk_fitted_params(est: Any, path: str, parts: dict[str, str], ctx: _Context,
                        seen: set) -> None:
    """Learned state of estimators held in *parameters*: a fitted ``Pipeline`` keeps its steps
    in ``steps``, a ``ColumnTransformer`` its fitted transformers beside them. Unfitted
    templates (a forest's ``estimator``) have no learned attributes and add no part."""
    if id(est) in seen:
        return
    seen.add(id(est))
    for name, value in sorted(est.get_params(deep=False).items()):
        stack = [(value, f"{path}.{name}")]
        while stack:
            obj, where = stack.pop()
            if _is_estimator(obj):
                learned = _learned_items(obj)
                for attr, val in learned:
                    _walk(val, f"{where}.{attr}", parts, ctx)
                _walk_fitted_params(obj, where, parts, ctx, seen)
            elif isinstance(obj, (list, tuple)):
                stack.extend((v, f"{where}[{i}]") for i, v in enumerate(obj))


def _key_order(key: Any) -> str:
    return _value_digest(key, _Context(), "")


def _state_digest(parts: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(parts):
        h.update(name.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
        h.update(parts[name].encode())
        h.update(b"\n")
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# parameters: canonical JSON
# ---------------------------------------------------------------------------------------------
def _qualname(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or "?"
    return f"{module}.{name}" if module else name


def _params_digest(est: Any, ctx: _Context, path: str) -> str:
    canon = _canon(est.get_params(deep=False), ctx, path)
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _canon(obj: Any, ctx: _Context, path: str) -> Any:
    """A JSON-able, deterministic stand-in for a parameter value."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, (complex, np.complexfloating)):
        return {"__complex__": [obj.real, obj.imag]}
    if isinstance(obj, bytes):
        return {"__bytes__": hashlib.sha256(obj).hexdigest()}
    if isinstance(obj, tuple):
        return {"__tuple__": [_canon(v, ctx, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_canon(v, ctx, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        pairs = [[_canon(k, ctx, path), _canon(v, ctx, f"{path}[{k!r}]")] for k, v in obj.items()]
        return {"__dict__": sorted(pairs, key=lambda kv: json.dumps(kv[0], sort_keys=True))}
    if isinstance(obj, (set, frozenset)):
        items = [_canon(v, ctx, path) for v in obj]
        return {"__set__": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(obj, np.ndarray):
        return {
            "__ndarray__": _dtype_text(obj.dtype),
            "shape": list(obj.shape),
            "sha256": _value_digest(obj, ctx, path),
        }
    if isinstance(obj, np.dtype):
        return {"__dtype__": _dtype_text(obj)}
    if _is_estimator(obj):
        return {
            "__estimator__": _qualname(type(obj)),
            "params": _canon(obj.get_params(deep=False), ctx, path),
        }
    if isinstance(obj, (np.random.RandomState, np.random.Generator, np.random.BitGenerator)):
        return {"__rng__": _qualname(type(obj)), "sha256": _value_digest(obj, ctx, path)}
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return {"__callable__": _qualname(obj), "sha256": _value_digest(obj, ctx, path)}
    return {"__object__": _qualname(type(obj)), "sha256": _value_digest(obj, ctx, path)}


# ---------------------------------------------------------------------------------------------
# values: typed byte streams
# ---------------------------------------------------------------------------------------------
def _value_digest(obj: Any, ctx: _Context, path: str) -> str:
    h = hashlib.sha256()
    _feed(h, obj, ctx, path)
    return h.hexdigest()


def _dtype_text(dtype: np.dtype) -> str:
    return str(dtype.descr) if dtype.fields else dtype.str


def _len(h: Any, n: int) -> None:
    h.update(struct.pack("<q", n))


def _text(h: Any, s: str) -> None:
    b = s.encode("utf-8", "surrogatepass")
    _len(h, len(b))
    h.update(b)


def _feed_array(h: Any, a: np.ndarray, ctx: _Context, path: str) -> None:
    if a.dtype.hasobject:
        h.update(b"O")
        _text(h, repr(a.shape))
        for v in a.flat:
            _feed(h, v, ctx, path)
        return
    h.update(b"A")
    _text(h, _dtype_text(a.dtype))
    _text(h, repr(a.shape))
    if a.dtype.fields:
        # field by field: padding bytes between fields are uninitialized memory
        for name in a.dtype.names:
            _feed_array(h, np.ascontiguousarray(a[name]), ctx, path)
        return
    a = np.ascontiguousarray(a)
    if a.size:
        h.update(memoryview(a.reshape(-1)).cast("B"))


def _feed(h: Any, obj: Any, ctx: _Context, path: str) -> None:
    if obj is None:
        h.update(b"N")
    elif isinstance(obj, bool):
        h.update(b"B1" if obj else b"B0")
    elif isinstance(obj, int):
        h.update(b"I")
        _text(h, str(obj))
    elif isinstance(obj, float):
        h.update(b"F" + struct.pack("<d", obj))
    elif isinstance(obj, complex):
        h.update(b"C" + struct.pack("<dd", obj.real, obj.imag))
    elif isinstance(obj, str):
        h.update(b"S")
        _text(h, obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        b = bytes(obj)
        h.update(b"Y")
        _len(h, len(b))
        h.update(b)
    elif isinstance(obj, np.generic):
        if isinstance(obj, np.object_):  # pragma: no cover (NumPy never builds these)
            _fallback(h, obj, ctx, path)
        else:
            h.update(b"G")
            _feed_array(h, np.asarray(obj), ctx, path)
    elif isinstance(obj, np.ndarray):
        _feed_array(h, obj, ctx, path)
    elif isinstance(obj, (list, tuple)):
        h.update(b"L" if isinstance(obj, list) else b"T")
        _len(h, len(obj))
        for v in obj:
            _feed(h, v, ctx, path)
    elif isinstance(obj, dict):
        h.update(b"D")
        _len(h, len(obj))
        for key in sorted(obj, key=_key_order):
            _feed(h, key, ctx, path)
            _feed(h, obj[key], ctx, path)
    elif isinstance(obj, (set, frozenset)):
        h.update(b"Z")
        _len(h, len(obj))
        for d in sorted(_value_digest(v, ctx, path) for v in obj):
            h.update(bytes.fromhex(d))
    elif _is_estimator(obj):
        h.update(b"E")
        _text(h, _qualname(type(obj)))
        h.update(bytes.fromhex(_params_digest(obj, ctx, f"{path}.params")))
        sub: dict[str, str] = {}
        for name, value in _learned_items(obj):
            _walk(value, name, sub, ctx)
        h.update(bytes.fromhex(_state_digest(sub)))
    elif isinstance(obj, (np.random.RandomState, np.random.Generator)):
        h.update(b"R")
        state = (
            obj.get_state(legacy=False)
            if isinstance(obj, np.random.RandomState)
            else (obj.bit_generator.state)
        )
        _feed(h, state, ctx, path)
    elif isinstance(obj, np.random.BitGenerator):
        h.update(b"R")
        _feed(h, obj.state, ctx, path)
    elif isinstance(obj, np.dtype):
        h.update(b"d")
        _text(h, _dtype_text(obj))
    elif isinstance(obj, type):
        h.update(b"K")
        _text(h, _qualname(obj))
    elif isinstance(obj, types.FunctionType):
        h.update(b"f")
        _text(h, _qualname(obj))
        code = obj.__code__
        h.update(code.co_code)
        _feed(h, tuple(c for c in code.co_consts if isinstance(c, _ATOMIC)), ctx, path)
    elif isinstance(obj, (types.BuiltinFunctionType, types.MethodType)):
        h.update(b"m")
        _text(h, _qualname(obj))
        owner = getattr(obj, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            _text(h, _qualname(type(owner)))  # the bound object's type, not its contents
    else:
        root = type(obj).__module__.split(".")[0]
        name = type(obj).__name__
        if root == "sklearn" and name == "Tree":
            _feed_sklearn_tree(h, obj, ctx, path)
        elif root == "xgboost" and hasattr(obj, "save_raw"):
            h.update(b"X")
            raw = bytes(obj.save_raw("ubj"))
            _len(h, len(raw))
            h.update(raw)
        elif root == "torch":
            _feed_torch(h, obj, ctx, path)
        elif root == "pandas":
            _feed_pandas(h, obj, ctx, path)
        elif root == "sklearn" and hasattr(obj, "__dict__"):
            # a plain scikit-learn helper object (e.g. a histogram-GBM TreePredictor): its fields
            h.update(b"o")
            _text(h, _qualname(type(obj)))
            _feed(h, vars(obj), ctx, path)
        else:
            _fallback(h, obj, ctx, path)


def _feed_sklearn_tree(h: Any, tree: Any, ctx: _Context, path: str) -> None:
    """A scikit-learn ``Tree``: its constructor arguments and state (nodes, values, depth)."""
    _cls, args, state = tree.__reduce__()[:3]
    h.update(b"t")
    _feed(h, tuple(args), ctx, path)
    _feed(h, state, ctx, path)


def _feed_torch(h: Any, obj: Any, ctx: _Context, path: str) -> None:
    import torch  # already imported: obj is a torch object

    if isinstance(obj, torch.nn.Module):
        h.update(b"M")
        for name, module in obj.named_modules():
            _text(h, name)
            _text(h, _qualname(type(module)))
            extra = module.extra_repr()
            _text(h, "" if "0x" in extra else extra)
            h.update(b"1" if module.training else b"0")
        for name, tensor in obj.state_dict(keep_vars=False).items():
            _text(h, name)
            _feed_torch(h, tensor, ctx, f"{path}.{name}")
    elif isinstance(obj, torch.Tensor) and obj.layout == torch.strided and not obj.is_quantized:
        t = obj.detach().cpu().contiguous()
        h.update(b"V")
        _text(h, str(t.dtype))
        _text(h, repr(tuple(t.shape)))
        if t.numel():
            h.update(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
    else:
        _fallback(h, obj, ctx, path)


def _feed_pandas(h: Any, obj: Any, ctx: _Context, path: str) -> None:
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        h.update(b"PD")
        _feed_pandas(h, obj.columns, ctx, path)
        _feed_pandas(h, obj.index, ctx, path)
        for j in range(obj.shape[1]):
            _feed_pandas(h, obj.iloc[:, j], ctx, path)
    elif isinstance(obj, pd.Series):
        h.update(b"PS")
        _text(h, str(obj.dtype))
        _feed(h, obj.name, ctx, path)
        _feed_array(h, _pandas_values(obj), ctx, path)
        _feed_pandas(h, obj.index, ctx, path)
    elif isinstance(obj, pd.Index):
        h.update(b"PI")
        _text(h, type(obj).__name__)
        _text(h, str(obj.dtype))
        _feed(h, list(obj.names), ctx, path)
        _feed_array(h, _pandas_values(obj), ctx, path)
    else:
        _fallback(h, obj, ctx, path)


def _pandas_values(obj: Any) -> np.ndarray:
    import pandas as pd

    if pd.api.types.is_numeric_dtype(obj.dtype) and not isinstance(obj.dtype, pd.CategoricalDtype):
        try:
            return np.asarray(obj.to_numpy())
        except (TypeError, ValueError):  # pragma: no cover (nullable numerics with NA)
            pass
    return np.asarray(obj.to_numpy(dtype=object), dtype=object)


def _fallback(h: Any, obj: Any, ctx: _Context, path: str) -> None:
    """Unknown object: bytes of pickling it in memory (never unpickled)."""
    h.update(b"P")
    _text(h, _qualname(type(obj)))
    try:
        raw = pickle.dumps(obj, protocol=5)
    except Exception:  # noqa: BLE001 (any failure to pickle means: cannot be hashed)
        if path not in ctx.unhashable:
            ctx.unhashable.append(path)
        return
    if path not in ctx.fallback:
        ctx.fallback.append(path)
    _len(h, len(raw))
    h.update(raw)
