"""Fitted state as plain data: DataFrames as arrays and lists, for files read without code.

A fitted anonymizer holds small pandas tables (the groups' representatives, SaNGreeA's
distinct training points). skops, which writes the ``.skops`` files that
:func:`anonml.safemodel.load_model` reads as data, cannot store a DataFrame, and a pickle
would run code. :func:`frame_to_state` therefore turns a DataFrame into plain numbers, text and
flags (NumPy arrays of numbers, booleans or text; lists of ``str``/``int``/``float``/``bool``/
``None``; dicts of them), and :func:`frame_from_state` builds the same DataFrame again: the
same columns, the same dtypes (NumPy, nullable ``Int64``/``Float64``/``boolean``,
``string``/``str``, ``category``, ``object``), the same values and missing values (``None``,
``nan``, ``pd.NA``, ``pd.NaT`` each restored as it was) and the same ``RangeIndex``.

A table this cannot express exactly (a non-``RangeIndex`` index, a column name that is not a
``str`` or ``int``, time zones, periods, objects other than plain scalars) gives ``None``: the
caller then keeps the DataFrame itself, which pickle stores and skops refuses with its own
message. :func:`frame_from_state` only builds arrays and DataFrames from the data it is given;
it imports and calls nothing named in it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["frame_from_state", "frame_to_state", "pop_frames", "push_frames"]

_VERSION = 1
# missing-value codes of object columns: 0 = present
_NA_KINDS = {1: None, 2: float("nan"), 3: pd.NA, 4: pd.NaT}
_PLAIN = (str, int, float, bool, type(None))


class _Unsupported(Exception):
    pass


def _na_code(value: Any) -> int:
    if value is None:
        return 1
    if value is pd.NA:
        return 3
    if value is pd.NaT:
        return 4
    if isinstance(value, (float, np.floating)) and value != value:
        return 2
    return 0


def _objects_to_state(values: np.ndarray) -> dict:
    """An object array of plain scalars (and missing values) as text or a list."""
    codes = np.fromiter((_na_code(v) for v in values), dtype=np.int8, count=len(values))
    present = values[codes == 0]
    items = [v.item() if isinstance(v, np.generic) else v for v in present]
    if not all(type(v) in _PLAIN for v in items):
        raise _Unsupported
    kinds = {type(v) for v in items}
    state: dict = {"na": codes}
    if kinds <= {str} and not any(v.endswith("\x00") for v in items):
        state["text"] = np.array(items, dtype=str) if items else np.array([], dtype="<U1")
    else:  # ints, floats, bools or a mix: a list of plain values keeps each one's type
        state["items"] = items
    return state


def _objects_from_state(state: dict) -> np.ndarray:
    codes = np.asarray(state["na"])
    out = np.empty(codes.shape[0], dtype=object)
    present = codes == 0
    if "text" in state:
        out[present] = np.asarray(state["text"], dtype=object)
    else:
        items = list(state["items"])
        tmp = np.empty(len(items), dtype=object)
        tmp[:] = items
        out[present] = tmp
    for code, value in _NA_KINDS.items():
        hit = codes == code
        if hit.any():
            out[hit] = value
    return out


def _column_to_state(col: pd.Series) -> dict:
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = pd.Series(dtype.categories)
        return {"kind": "category", "codes": col.cat.codes.to_numpy(),
                "categories": _column_to_state(cats), "ordered": bool(dtype.ordered)}
    if isinstance(dtype, np.dtype):
        if dtype.kind in "biufcMm":
            return {"kind": "numpy", "values": col.to_numpy()}
        if dtype.kind == "O":
            return {"kind": "object", **_objects_to_state(col.to_numpy())}
        raise _Unsupported
    if isinstance(dtype, pd.StringDtype):
        values = col.to_numpy(dtype=object)
        na_nan = getattr(dtype, "na_value", pd.NA) is not pd.NA
        return {"kind": "string", "storage": str(dtype.storage), "na_nan": na_nan,
                **_objects_to_state(values)}
    name = str(dtype)
    if name in ("boolean",) or name.startswith(("Int", "UInt", "Float")):
        mask = col.isna().to_numpy()
        numpy_type = dtype.numpy_dtype
        fill = False if numpy_type.kind == "b" else 0
        return {"kind": "masked", "dtype": name,
                "values": col.to_numpy(dtype=numpy_type, na_value=fill), "mask": mask}
    raise _Unsupported


def _column_from_state(state: dict) -> pd.Series:
    kind = state["kind"]
    if kind == "numpy":
        return pd.Series(np.asarray(state["values"]), copy=False)
    if kind == "object":
        return pd.Series(_objects_from_state(state), dtype=object)
    if kind == "string":
        try:
            na_value = np.nan if state["na_nan"] else pd.NA
            dtype = pd.StringDtype(state["storage"], na_value=na_value)
        except TypeError:  # pandas < 2.3: no na_value
            dtype = pd.StringDtype(state["storage"])
        return pd.Series(pd.array(_objects_from_state(state), dtype=dtype))
    if kind == "masked":
        arr = pd.array(np.asarray(state["values"]), dtype=state["dtype"])
        mask = np.asarray(state["mask"], dtype=bool)
        if mask.any():
            arr[mask] = pd.NA
        return pd.Series(arr)
    if kind == "category":
        cats = pd.Index(_column_from_state(state["categories"]))
        codes = np.asarray(state["codes"])
        values = pd.Categorical.from_codes(codes, categories=cats, ordered=state["ordered"])
        return pd.Series(values)
    raise ValueError(f"unknown column kind {kind!r}")


def frame_to_state(frame: pd.DataFrame) -> dict | None:
    """``frame`` as plain data, or None if it cannot be expressed exactly (see the module
    docstring)."""
    index = frame.index
    if not isinstance(index, pd.RangeIndex) or not isinstance(index.name, _PLAIN):
        return None
    names = list(frame.columns)
    if not all(type(c) in (str, int) for c in names) or frame.columns.name is not None:
        return None
    try:
        columns = [_column_to_state(frame.iloc[:, i]) for i in range(frame.shape[1])]
    except _Unsupported:
        return None
    return {"version": _VERSION, "columns": names,
            "columns_dtype": str(frame.columns.dtype), "data": columns,
            "index": [int(index.start), int(index.stop), int(index.step)],
            "index_name": index.name}


def frame_from_state(state: dict) -> pd.DataFrame:
    """The DataFrame :func:`frame_to_state` described."""
    start, stop, step = state["index"]
    index = pd.RangeIndex(start, stop, step, name=state["index_name"])
    data = {i: _column_from_state(s).set_axis(index) for i, s in enumerate(state["data"])}
    frame = pd.DataFrame(data, index=index)
    frame.columns = pd.Index(state["columns"], dtype=state.get("columns_dtype") or None)
    return frame


_KEY = "_plain_frames_"


def push_frames(state: dict) -> dict:
    """A copy of an object's ``__dict__`` state with its DataFrame attributes as plain data
    (under one key); DataFrames that cannot be expressed stay as they are."""
    frames = {}
    for name, value in state.items():
        if isinstance(value, pd.DataFrame):
            plain = frame_to_state(value)
            if plain is not None:
                frames[name] = plain
    if not frames:
        return state
    state = {k: v for k, v in state.items() if k not in frames}
    state[_KEY] = frames
    return state


def pop_frames(state: dict) -> dict:
    """The inverse of :func:`push_frames`."""
    frames = state.get(_KEY)
    if not frames:
        return state
    state = {k: v for k, v in state.items() if k != _KEY}
    for name, plain in frames.items():
        state[name] = frame_from_state(plain)
    return state
