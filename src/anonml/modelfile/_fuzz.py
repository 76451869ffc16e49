"""Mutation fuzzing of model files: genuine files, edited so that the container stays valid.

The vetting and validation of model files (:mod:`anonml.modelfile._skops_vet`,
:mod:`anonml.modelfile._validate`, :mod:`anonml.modelfile._validate_xgboost`) close the holes
anonml knows of, and the sandbox (:mod:`anonml.modelfile._sandbox`) bounds the ones it does not.
This module looks for the next class of hole by editing genuine files the way an attacker
would, keeping the container valid so the edits reach the parsers:

- ``.skops`` (a zip of ``schema.json`` and ``.npy`` members): schema nodes retyped, resized,
  dropped, duplicated, reordered, their ``__class__``/``__module__`` swapped among the names
  the file already uses, numbers (also those inside ``JsonNode`` texts and ``__id__``) made
  huge, negative, fractional or strings, ``file`` references pointed at other members; ``.npy``
  members rewritten with other dtypes, shapes and lengths, NaN/inf/huge/negative values, bit
  flips in the data or a header that lies about the shape; then re-zipped;
- XGBoost ``.json``/``.ubj``: the same kinds of edit on the decoded document (numbers, numeric
  strings, array lengths and values, keys, types), re-encoded as JSON or UBJSON.

:func:`mutants` makes them (deterministic for a seed);
:mod:`anonml.safemodel._fuzz_run` runs them through the sandbox and classifies the outcomes.
Run it with ``benchmarks/fuzz_model_files.py`` or
``python -m pytest -m slow tests/modelfile/test_fuzz_model_files.py`` (``docs/security.md``).
"""

from __future__ import annotations

import io
import json
import math
import struct
import warnings
import zipfile
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

#: a module that, if anything imports it, writes a file into the watched folder
MARKER_MODULE = "anonml_fuzz_marker"

_HUGE_INTS = (2**63, 2**63 - 1, 2**31, -(2**31) - 1, 10**18, -1, -(2**63), 0, 10**9)


@dataclass
class Mutant:
    """One edited file: ``data`` (the bytes), ``suffix``, and how it was made (``source``,
    ``seed``, ``index``, ``edit``: enough to make it again with :func:`mutants`)."""

    source: str
    seed: int
    index: int
    edit: str
    data: bytes
    suffix: str


# ---------------------------------------------------------------------------------------------
# edits of JSON-like trees (a skops schema, an XGBoost document)
# ---------------------------------------------------------------------------------------------
class _Pairs(list):
    """A JSON object written from a list of (key, value) pairs: keys may repeat."""


def _dumps(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dumps(v)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dumps(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, np.ndarray):
        return _dumps(value.tolist())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_dumps(v) for v in value) + "]"
    if isinstance(value, np.generic):
        return _dumps(value.item())
    return json.dumps(value)  # NaN and Infinity as Python's json writes them


def _slots(tree: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) in a tree of dicts, lists and arrays (the root included)."""
    yield path, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _slots(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _slots(v, path + (i,))


def _get(tree: Any, path: tuple) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def _put(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(tree, path[:-1])[path[-1]] = value
    return tree


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _numeric_text(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        float(v)
    except ValueError:
        return False
    return True


def _odd_number(rng: np.random.Generator, v: Any) -> Any:
    """A hostile replacement of a number: huge, negative, fractional, NaN/inf, str or null."""
    choice = int(rng.integers(9))
    if choice == 0:
        return _HUGE_INTS[int(rng.integers(len(_HUGE_INTS)))]
    if choice == 1:
        return -abs(v) - 1 if _is_num(v) and math.isfinite(float(v)) else -1
    if choice == 2:
        return float(v) + 0.5 if _is_num(v) and math.isfinite(float(v)) else 0.5
    if choice == 3:
        return [math.nan, math.inf, -math.inf, 1e308][int(rng.integers(4))]
    if choice == 4:
        return str(v)
    if choice == 5:
        return None
    if choice == 6:
        return bool(rng.integers(2))
    if choice == 7:
        return [v]
    return int(v) + int(rng.integers(-3, 4)) if _is_num(v) and math.isfinite(float(v)) else 1


def _odd_text(rng: np.random.Generator, v: str) -> str:
    """A numeric text made hostile (XGBoost writes many numbers as strings)."""
    return ["-1", "1e300", "nan", "inf", str(2**64), "0", "0.5", "", "x", v + v][
        int(rng.integers(10))]


def _edit_tree(tree: Any, rng: np.random.Generator, *, names: list | None = None,
               members: list | None = None) -> tuple[Any, str]:
    """One random edit of a JSON-like tree; returns the tree and what was done."""
    slots = list(_slots(tree))
    nums = [(p, v) for p, v in slots if p and (_is_num(v) or _numeric_text(v))]
    arrays = [(p, v) for p, v in slots if isinstance(v, (list, np.ndarray)) and p]
    dicts = [(p, v) for p, v in slots if isinstance(v, dict) and v]
    jsonnodes = [(p, v) for p, v in dicts if v.get("is_json") and isinstance(v.get("content"),
                                                                              str)]
    classed = [(p, v) for p, v in dicts if "__class__" in v]
    files = [(p, v) for p, v in dicts if isinstance(v.get("file"), str)]
    ops = ["number", "number", "array", "array", "drop", "dup", "retype", "reorder", "graft"]
    if jsonnodes:
        ops += ["jsonnode"] * 4
    if classed and names:
        ops += ["swap_class", "swap_class"]
    if files and members:
        ops += ["retarget"]
    op = ops[int(rng.integers(len(ops)))]
    pick = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    if op == "number" and nums:
        p, v = pick(nums)
        new = _odd_text(rng, v) if isinstance(v, str) else _odd_number(rng, v)
        return _put(tree, p, new), f"number {_where(p)}: {v!r} -> {new!r}"
    if op == "jsonnode":
        p, v = pick(jsonnodes)
        try:
            inner = json.loads(v["content"])
        except ValueError:
            inner = v["content"]
        new = _odd_number(rng, inner) if _is_num(inner) or inner is None else \
            pick([None, -1, 2**63, "", [inner], {"a": inner}, 1.5])
        v["content"] = _dumps(new)
        return tree, f"jsonnode {_where(p)}: {inner!r} -> {new!r}"
    if op == "swap_class":
        p, v = pick(classed)
        old = (v.get("__module__"), v.get("__class__"))
        mod, cls = pick(names)
        what = int(rng.integers(5))  # class, module, or (mostly) the pair
        if what != 1:
            v["__class__"] = cls
        if what != 0:
            v["__module__"] = mod
        return tree, f"class {_where(p)}: {old} -> {(v.get('__module__'), v.get('__class__'))}"
    if op == "retarget":
        p, v = pick(files)
        new = pick(members + ["schema.json", "missing.npy", "../x.npy"])
        old, v["file"] = v["file"], new
        return tree, f"file {_where(p)}: {old} -> {new}"
    if op == "array" and arrays:
        p, v = pick(arrays)
        return _put(tree, p, _edit_array(rng, v)), f"array {_where(p)} (len {len(v)}): " + \
            _LAST_ARRAY_EDIT[0]
    if op == "drop" and dicts:
        p, v = pick(dicts)
        k = pick(list(v))
        del v[k]
        return tree, f"drop key {_where(p + (k,))}"
    if op == "dup" and dicts:
        p, v = pick(dicts)
        k = pick(list(v))
        other = pick(list(v.values()))
        pairs = _Pairs(list(v.items()) + [(k, other)])
        return _put(tree, p, pairs), f"duplicate key {_where(p + (k,))} (second value from a " \
            "sibling)"
    if op == "retype":
        p, v = pick(slots[1:])
        new = pick([None, 0, -1, "", [], {}, "x", 1.5, True, [v], {"content": v}])
        return _put(tree, p, new), f"retype {_where(p)} to {type(new).__name__} {new!r:.40}"
    if op == "reorder" and dicts:
        p, v = pick(dicts)
        keys = list(v)
        rng.shuffle(keys)
        return _put(tree, p, {k: v[k] for k in keys}), f"reorder keys of {_where(p)}"
    if op == "graft" and len(dicts) > 1:
        p, _ = pick(dicts[1:])
        q, w = pick(dicts)
        if p[:len(q)] == q:  # a node into its own subtree would be a cycle in memory
            return tree, "graft skipped"
        return _put(tree, p, json.loads(_dumps(w))), f"graft {_where(q)} onto {_where(p)}"
    return tree, f"{op} (nothing to edit)"


_LAST_ARRAY_EDIT = [""]


def _edit_array(rng: np.random.Generator, v: Any) -> Any:
    """A list or array resized, retyped or given hostile values."""
    a = v.tolist() if isinstance(v, np.ndarray) else list(v)
    n = len(a)
    op = int(rng.integers(7))
    if op == 0 and n:
        del a[int(rng.integers(n))]
        what = "drop one"
    elif op == 1 and n:
        a.insert(int(rng.integers(n + 1)), a[int(rng.integers(n))])
        what = "duplicate one"
    elif op == 2:
        a = a[: int(rng.integers(n + 1) // 2)]
        what = f"truncate to {len(a)}"
    elif op == 3 and n:
        a = a * int(rng.integers(2, 50))
        what = f"repeat to {len(a)}"
    elif op == 4 and n:
        i = int(rng.integers(n))
        a[i] = _odd_number(rng, a[i]) if _is_num(a[i]) else None
        what = f"[{i}] -> {a[i]!r}"
    elif op == 5 and n:
        rng.shuffle(a)
        what = "shuffle"
    else:
        a = []
        what = "empty"
    _LAST_ARRAY_EDIT[0] = what
    if isinstance(v, np.ndarray) and all(_is_num(x) for x in a):
        try:
            return np.asarray(a, dtype=v.dtype)
        except (OverflowError, ValueError):
            return np.asarray(a, dtype=np.float64)
    return a


def _where(path: tuple, width: int = 90) -> str:
    text = "/".join(str(p) for p in path) or "<root>"
    return text if len(text) <= width else "..." + text[-width + 3:]


# ---------------------------------------------------------------------------------------------
# .npy members
# ---------------------------------------------------------------------------------------------
def _npy(a: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, a, allow_pickle=False)
    return out.getvalue()


def _edit_npy(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """An ``.npy`` member rewritten (dtype, shape, length, values), its data bits flipped, or
    its header made to lie about the shape."""
    try:
        a = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception:  # noqa: BLE001 - not a plain array: flip bits only
        a = None
    op = int(rng.integers(8)) if a is not None else 6
    if op == 0:
        dt = np.dtype(["<i8", "<i4", "<u1", "<f4", "<f2", "<f8", "?", "<c16", "<U3", ">i8",
                       "<u8"][int(rng.integers(11))])
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                b = a.astype(dt)
        except (TypeError, ValueError, OverflowError):
            b = np.zeros(a.shape, dtype=dt)
        return _npy(b), f"dtype {a.dtype} -> {dt}"
    if op == 1:
        shapes = [(a.size,), (a.size, 1), (1, a.size), (0,), a.shape[::-1], (a.size // 2,),
                  a.shape + (1,)]
        shape = shapes[int(rng.integers(len(shapes)))]
        flat = a.ravel()
        b = np.resize(flat, shape) if flat.size else np.zeros(shape, dtype=a.dtype)
        return _npy(b), f"shape {a.shape} -> {shape}"
    if op == 2:
        n = len(a) if a.ndim else 1
        k = int(rng.choice([0, max(n - 1, 0), n + 1, 2 * n + 3]))
        b = np.resize(a.reshape(-1) if a.ndim == 0 else a, (k,) + a.shape[1:])
        return _npy(b), f"length {n} -> {k}"
    if op in (3, 4, 5) and a.size and a.dtype.kind in "biuf":
        b = a.copy()
        flat = b.reshape(-1)
        idx = rng.integers(0, flat.size, size=max(1, flat.size // 10))
        if a.dtype.kind == "f":
            val = [np.nan, np.inf, -np.inf, np.finfo(a.dtype).max, -1.0, 0.0][int(rng.integers(6))]
        elif a.dtype.kind == "b":
            val = True
        else:
            info = np.iinfo(a.dtype)
            val = [info.max, info.min, -1 if info.min < 0 else 0, 10**6 % (info.max + 1), 0][
                int(rng.integers(5))]
        flat[idx] = val
        return _npy(b), f"{len(idx)} values -> {val!r} ({a.dtype})"
    if op == 7:
        header_end = data.index(b"\n") + 1 if b"\n" in data[:4096] else 0
        lie = a.shape[:-1] + (a.shape[-1] * 4 + 1,) if a.ndim else (7,)
        head = data[:header_end].decode("latin-1").replace(str(a.shape), str(lie), 1)
        pad = header_end - len(head)
        if pad >= 0:
            head = head[:-1] + " " * pad + "\n"
            return head.encode("latin-1") + data[header_end:], f"header shape {a.shape} -> {lie}"
    # bit flips after the header
    start = data.index(b"\n") + 1 if b"\n" in data[:4096] else 0
    out = bytearray(data)
    n = max(1, (len(out) - start) // 50)
    for _ in range(n):
        if len(out) > start:
            i = int(rng.integers(start, len(out)))
            out[i] ^= 1 << int(rng.integers(8))
    return bytes(out), f"{n} bit flips in the data"


# ---------------------------------------------------------------------------------------------
# the formats
# ---------------------------------------------------------------------------------------------
def _class_names(schema: Any) -> list:
    return sorted({(v["__module__"], v["__class__"]) for _, v in _slots(schema)
                   if isinstance(v, dict) and isinstance(v.get("__class__"), str)
                   and isinstance(v.get("__module__"), str)})


def mutate_skops(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One edit of a ``.skops`` file (schema or a member), re-zipped validly."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    schema = json.loads(members.pop("schema.json"))
    names = list(members)
    if names and rng.random() < 0.5:
        name = names[int(rng.integers(len(names)))]
        members[name], edit = _edit_npy(members[name], rng)
        edit = f"member {name}: {edit}"
    else:
        classes = _class_names(schema)
        if rng.random() < 0.05:
            classes = classes + [(MARKER_MODULE, "Thing")]
        schema, edit = _edit_tree(schema, rng, names=classes, members=names)
        edit = f"schema {edit}"
    order = list(members)
    if rng.random() < 0.1:
        rng.shuffle(order)
        edit += "; members reordered"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in [("schema.json", _dumps(schema).encode())] + \
                [(n, members[n]) for n in order]:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # same bytes each run
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, body)
    return out.getvalue(), edit


_UBJ_MARK = {"i1": b"i", "u1": b"U", "i2": b"I", "i4": b"l", "i8": b"L", "f4": b"d",
             "f8": b"D"}


def encode_ubj(value: Any) -> bytes:
    """UBJSON of a decoded XGBoost document (numpy arrays become typed arrays of their dtype;
    repeated keys of a :class:`_Pairs` object are written as they are)."""
    if isinstance(value, (dict, _Pairs)):
        items = value if isinstance(value, _Pairs) else value.items()
        out = [b"{"]
        for k, v in items:
            kb = str(k).encode()
            out += [b"L", struct.pack(">q", len(kb)), kb, encode_ubj(v)]
        return b"".join(out + [b"}"])
    if isinstance(value, np.ndarray):
        key = value.dtype.str[1:]
        if value.dtype.kind == "b":
            value, key = value.astype("u1"), "u1"
        if key not in _UBJ_MARK:
            value = value.astype(np.float64 if value.dtype.kind in "fc" else np.int64)
            key = value.dtype.str[1:]
        return (b"[$" + _UBJ_MARK[key] + b"#L" + struct.pack(">q", value.size)
                + value.astype(value.dtype.newbyteorder(">")).tobytes())
    if isinstance(value, (list, tuple)):
        return b"[" + b"".join(encode_ubj(v) for v in value) + b"]"
    if isinstance(value, (bool, np.bool_)):
        return b"T" if value else b"F"
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if -(2**63) <= v < 2**63:
            return b"L" + struct.pack(">q", v)
        s = str(v).encode()
        return b"HL" + struct.pack(">q", len(s)) + s  # a high-precision number
    if isinstance(value, (float, np.floating)):
        return b"D" + struct.pack(">d", float(value))
    if value is None:
        return b"Z"
    s = str(value).encode()
    return b"SL" + struct.pack(">q", len(s)) + s


def mutate_xgboost(data: bytes, suffix: str, rng: np.random.Generator) -> tuple[bytes, str]:
    """One edit of an XGBoost ``.json``/``.ubj`` document, re-encoded in its own format."""
    from anonml.modelfile._validate_xgboost import decode_xgboost_raw

    doc = decode_xgboost_raw(data)
    doc, edit = _edit_tree(doc, rng)
    if suffix == ".ubj":
        return encode_ubj(doc), f"document {edit}"
    return _dumps(doc).encode(), f"document {edit}"


def mutants(data: bytes, suffix: str, seed: int, n: int, *, source: str = "",
            start: int = 0) -> Iterator[Mutant]:
    """``n`` mutants of a genuine file (``suffix``: ``.skops``, ``.json`` or ``.ubj``).

    Mutant ``i`` of seed ``s`` is the same bytes on every run (its random generator is seeded
    with ``(s, i)``); about one in four carries two or three edits.
    """
    for i in range(start, start + n):
        rng = np.random.default_rng([seed, i])
        out, edits = data, []
        for _ in range(1 if rng.random() < 0.75 else int(rng.integers(2, 4))):
            try:
                out, edit = (mutate_skops(out, rng) if suffix == ".skops"
                             else mutate_xgboost(out, suffix, rng))
            except Exception as exc:  # noqa: BLE001 - an earlier edit left nothing to parse
                edit = f"(no further edit: {type(exc).__name__})"
            edits.append(edit)
        yield Mutant(source, seed, i, " + ".join(edits), out, suffix)

