"""The value checks of :mod:`anonml.modelfile._refit_schema`: the kinds of value a refit
parameter may take (:class:`Lit`, :class:`Int`, :class:`Real`, :class:`NaN`, :class:`Custom`),
the check of one value against its alternatives (:func:`check`), and the checks of structured
values (class weights, label lists, constraints, categories, dtypes, ...).

Every check returns a new plain value (Python scalars, lists, tuples), never the file's object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from anonml._errors import InputError
from anonml.modelfile._limits import MAX_CLASSES

MAX_FEATURES = 100_000        # columns named in a list (masks, constraints, column specs)
MAX_CATEGORIES = 1_000_000    # categories over all columns of an encoder
MAX_STEPS = 100
MAX_TRANSFORMERS = 1_000
MAX_TEXT = 1_000
MAX_NESTING = 20
_BIG = 10**9                  # a count that only has to be an int (data bound it anyway)


class _Bad(Exception):
    """A value refused by a custom check: ``text`` continues the message, ``fix`` ends it."""

    def __init__(self, text: str, fix: str | None = None):
        super().__init__(text)
        self.text, self.fix = text, fix


def _finite(x: Any) -> bool:
    """``x`` is an int or float (never a bool) that a float can hold, and not NaN or ±inf."""
    if type(x) is int:
        return abs(x) < 2**1000
    return type(x) is float and math.isfinite(x)


def _short(value: Any, width: int = 80) -> str:
    if type(value) is int and abs(value) >= 10**60:
        return f"<an int of {value.bit_length():,} bits>"  # repr refuses > 4,300 digits
    try:
        text = repr(value)
    except ValueError:  # e.g. a tuple holding such an int
        text = f"<a {type(value).__name__} holding a huge int>"
    if type(value) is float and math.isnan(value):
        text = "nan"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars (``np.int64(3)`` -> ``3``, ``np.True_`` -> ``True``)."""
    return value.item() if isinstance(value, np.generic) else value


def _fmt(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


# ---------------------------------------------------------------------------------------------
# specs: the alternatives a parameter may take
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lit:
    """Fixed values (``None``, strings, booleans), matched with their exact type."""

    values: tuple

    def matches(self, v: Any) -> bool:
        return any(type(v) is type(x) and v == x for x in self.values)

    def describe(self) -> str:
        return " or ".join(repr(x) for x in self.values)


@dataclass(frozen=True)
class Int:
    """An ``int`` (never a ``bool``) in ``lo..hi``; ``unbounded`` values mean "no limit"."""

    lo: int
    hi: int
    unbounded: tuple = ()

    def matches(self, v: Any) -> bool:
        return type(v) is int or any(type(v) is type(u) and v == u for u in self.unbounded)

    def describe(self) -> str:
        return f"int {_fmt(self.lo)}..{_fmt(self.hi)}"


@dataclass(frozen=True)
class Real:
    """A finite number in ``[lo, hi]`` (open ends with ``lo_open``/``hi_open``)."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False

    def matches(self, v: Any) -> bool:
        return type(v) in (int, float)

    def describe(self) -> str:
        if self.lo == -math.inf and self.hi == math.inf:
            return "finite float"
        if self.hi == math.inf:
            return f"float {'>' if self.lo_open else '≥'} {_fmt(self.lo)}"
        return (f"float in {'(' if self.lo_open else '['}{_fmt(self.lo)}, {_fmt(self.hi)}"
                f"{')' if self.hi_open else ']'}")


@dataclass(frozen=True)
class NaN:
    """A float NaN (a missing-value marker)."""

    def matches(self, v: Any) -> bool:
        return type(v) is float and math.isnan(v)

    def describe(self) -> str:
        return "nan"


@dataclass(frozen=True)
class Custom:
    """A structured value checked (and rebuilt) by ``fn(value, ctx, where)``."""

    fn: Callable
    text: str

    def matches(self, v: Any) -> bool:
        return True

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class P:
    """One parameter: its alternatives, tried in order, and why it is bounded (for the docs)."""

    alts: tuple
    why: str = ""

    def describe(self) -> str:
        return " or ".join(a.describe() for a in self.alts)


def p(*alts: Any, why: str = "") -> P:
    return P(tuple(alts), why)


BOOL = p(Lit((True, False)))
NONE = Lit((None,))


@dataclass
class _Ctx:
    n_jobs: int
    clip: bool
    unwrap: bool
    adjustments: list = field(default_factory=list)
    depth: int = 0
    record: bool = False  # refit_params: return the checked values instead of an estimator

    def adjust(self, where: str, param: str, old: Any, new: Any) -> None:
        self.adjustments.append({"class": where.rsplit("/", 1)[-1].split(":")[-1],
                                 "path": where, "parameter": param,
                                 "file_value": _json(old), "value_used": _json(new)})


def _fail(where: str, param: str, value: Any, text: str, fix: str) -> InputError:
    return InputError(f"{where}.{param}={_short(value)} {text}; fix: {fix}")


def check(spec: P, value: Any, ctx: _Ctx, where: str, param: str) -> Any:
    """The value to use for ``param``, or an InputError (see the module docstring)."""
    v = _plain(value)
    for alt in spec.alts:
        if not alt.matches(v):
            continue
        if isinstance(alt, Custom):
            try:
                return alt.fn(v, ctx, f"{where}.{param}")
            except _Bad as bad:
                raise _fail(where, param, value, bad.text,
                            bad.fix or f"save the model with {param} as {alt.text}") from None
        if isinstance(alt, (Lit, NaN)):
            return v
        if isinstance(alt, Real) and not _finite(v):
            raise _fail(where, param, value, "is not a finite number",
                        f"save the model with a finite {param} ({spec.describe()})")
        if isinstance(alt, Int) and any(type(v) is type(u) and v == u for u in alt.unbounded):
            low, high = False, True
        elif isinstance(alt, Int):
            low, high = v < alt.lo, v > alt.hi
        else:
            low = v < alt.lo or (alt.lo_open and v == alt.lo)
            high = v > alt.hi or (alt.hi_open and v == alt.hi)
        if not (low or high):
            return float(v) if isinstance(alt, Real) else v
        edge = alt.hi if high else alt.lo
        can_clip = ctx.clip and not getattr(alt, "hi_open" if high else "lo_open", False)
        if isinstance(alt, Real):
            edge = float(edge)
        if can_clip:
            ctx.adjust(where, param, v, edge)
            return edge
        raise _fail(where, param, value, f"is outside the refit bounds ({alt.describe()})",
                    f"save the model with {param} {'at most' if high else 'at least'} "
                    f"{_fmt(edge)}, or refit with clip=True to use {_fmt(edge)}")
    raise _fail(where, param, value, f"is not accepted for a refit (allowed: "
                f"{spec.describe()})", f"save the model with {param} as {spec.describe()}")


# ---------------------------------------------------------------------------------------------
# structured values
# ---------------------------------------------------------------------------------------------
def _seq(v: Any, what: str, limit: int) -> list:
    """A list/tuple/1-D array as a list of plain scalars, at most ``limit`` long."""
    if isinstance(v, np.ndarray) and (v.ndim != 1 or v.dtype.kind not in "biufUSO"):
        raise _Bad(f"is not a 1-D list of {what}")
    if not isinstance(v, (list, tuple, np.ndarray)):
        raise _Bad(f"is not a list of {what}")
    if len(v) > limit:
        raise _Bad(f"is outside the refit bounds (at most {limit:,} {what})",
                   f"save the model with at most {limit:,} {what}")
    return [_plain(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]


def _scalar(x: Any, nan: bool = False, none: bool = False) -> Any:
    """A label or category: str (bounded), int, bool or finite float (NaN/None if allowed)."""
    x = _plain(x)
    if type(x) is str and len(x) <= MAX_TEXT:
        return x
    if type(x) in (int, bool) or (type(x) is float and math.isfinite(x)):
        return x
    if (nan and type(x) is float and math.isnan(x)) or (none and x is None):
        return x
    raise _Bad(f"holds {_short(x, 40)}, not a string, int or finite float label")


def _random_state(v: Any, ctx: _Ctx, where: str) -> Any:
    if isinstance(v, (np.random.RandomState, np.random.Generator)):
        # a state object cannot be bounded and the refit would consume it: a fresh seed
        ctx.adjust(where.rsplit(".", 1)[0], "random_state", type(v).__name__, None)
        return None
    raise _Bad("is not None, an int seed or a random state")


def _class_weight(v: Any, ctx: _Ctx, where: str) -> dict:
    if not isinstance(v, dict) or len(v) > MAX_CLASSES:
        raise _Bad(f"is not None, 'balanced' or a dict of at most {MAX_CLASSES:,} labels")
    out = {}
    for k, w in v.items():
        w = _plain(w)
        if not _finite(w) or w < 0:
            raise _Bad(f"gives label {_short(k, 40)} the weight {_short(w, 40)}, not a "
                       "finite number ≥ 0")
        out[_scalar(k)] = float(w)
    return out


def _labels(v: Any, ctx: _Ctx, where: str) -> list:
    labels = [_scalar(x) for x in _seq(v, "labels", MAX_CLASSES)]
    if len(labels) < 2:
        raise _Bad("holds fewer than two labels")
    return labels


def _label(v: Any, ctx: _Ctx, where: str) -> Any:
    return _scalar(v)


def _ints_in(v: Any, lo: int, hi: int, what: str, limit: int = MAX_FEATURES) -> list:
    out = _seq(v, what, limit)
    if any(type(x) is not int or not lo <= x <= hi for x in out):
        raise _Bad(f"holds a value that is not an int in {lo}..{hi}")
    return out


def _monotonic(v: Any, ctx: _Ctx, where: str) -> Any:
    if isinstance(v, dict):
        if len(v) > MAX_FEATURES or any(type(k) is not str or len(k) > MAX_TEXT for k in v):
            raise _Bad("is a dict whose keys are not column names")
        return dict(zip(v, _ints_in(list(v.values()), -1, 1, "constraints")))
    return _ints_in(v, -1, 1, "constraints")


def _groups(v: Any, ctx: _Ctx, where: str) -> list:
    """Interaction constraints: a list of groups of feature indices (or names)."""
    groups = _seq(list(v) if isinstance(v, (list, tuple)) else v, "groups", MAX_FEATURES)
    out, total = [], 0
    for g in groups:
        members = _seq(sorted(g) if isinstance(g, (set, frozenset)) else g, "features",
                       MAX_FEATURES)
        total += len(members)
        if total > MAX_FEATURES or any(
                not (type(m) is int and 0 <= m < MAX_FEATURES)
                and not (type(m) is str and len(m) <= MAX_TEXT) for m in members):
            raise _Bad(f"is not a list of groups of feature indices (at most {MAX_FEATURES:,} "
                       "in all)")
        out.append(members)
    return out


def _categorical_features(v: Any, ctx: _Ctx, where: str) -> list:
    items = _seq(v, "features", MAX_FEATURES)
    kinds = {type(x) for x in items}
    if not (kinds <= {bool} or kinds <= {int} or kinds <= {str}) or any(
            type(x) is str and len(x) > MAX_TEXT for x in items):
        raise _Bad("is not a boolean mask, a list of indices or a list of column names")
    return items


def _categories(v: Any, ctx: _Ctx, where: str) -> list:
    cols = _seq(v if not isinstance(v, np.ndarray) or v.ndim == 1 else list(v), "columns",
                MAX_FEATURES)
    out, total = [], 0
    for col in cols:
        cats = [_scalar(x, nan=True, none=True) for x in _seq(col, "categories",
                                                                 MAX_CATEGORIES)]
        total += len(cats)
        if total > MAX_CATEGORIES:
            raise _Bad(f"is outside the refit bounds (at most {MAX_CATEGORIES:,} categories)")
        out.append(cats)
    return out


def _drop_list(v: Any, ctx: _Ctx, where: str) -> list:
    return [_scalar(x, nan=True, none=True) for x in _seq(v, "categories", MAX_FEATURES)]


_DTYPES = {np.dtype(t).name: t for t in (np.float64, np.float32, np.float16, np.int64,
                                          np.int32, np.int16, np.int8, np.uint8, np.bool_)}
_DTYPES.update({"float": np.float64, "int": np.int64, "bool": np.bool_})


def _dtype(v: Any, ctx: _Ctx, where: str) -> Any:
    if isinstance(v, str) and v in _DTYPES:
        return _DTYPES[v]
    if v in (float, int, bool) or (isinstance(v, type) and issubclass(v, np.generic)):
        name = v.__name__ if v in (float, int, bool) else np.dtype(v).name
        if name in _DTYPES:
            return _DTYPES[name]
    raise _Bad("is not a numeric dtype")


def _text(v: Any, ctx: _Ctx, where: str) -> str:
    if type(v) is str and len(v) <= MAX_TEXT:
        return v
    raise _Bad(f"is not a string of at most {MAX_TEXT:,} characters")


def _range_pair(lo: float, hi: float) -> Callable:
    def check(v: Any, ctx: _Ctx, where: str) -> tuple:
        pair = _seq(v, "numbers", 2)
        if (len(pair) != 2 or not all(_finite(x) for x in pair)
                or not lo <= pair[0] < pair[1] <= hi):
            raise _Bad(f"is not a pair (a, b) of finite numbers with {_fmt(lo)} ≤ a < b ≤ "
                       f"{_fmt(hi)}")
        return (pair[0], pair[1])
    return check


def _dp_bounds(v: Any, ctx: _Ctx, where: str) -> tuple:
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise _Bad("is not a pair (lower, upper)")
    out = []
    for side in v:
        side = _plain(side)
        scalar = type(side) in (int, float)
        nums = _seq([side] if scalar else side, "features", MAX_FEATURES)
        if not all(_finite(x) for x in nums):
            raise _Bad("holds a bound that is not a finite number")
        out.append(float(nums[0]) if scalar else np.asarray(nums, dtype=np.float64))
    return (out[0], out[1])


def _floats(v: Any, ctx: _Ctx, where: str) -> list:
    nums = _seq(v, "weights", MAX_FEATURES)
    if not all(_finite(x) and x >= 0 for x in nums):
        raise _Bad("holds a weight that is not a finite number ≥ 0")
    return [float(x) for x in nums]


def _feature_types(v: Any, ctx: _Ctx, where: str) -> list:
    items = _seq(v, "feature types", MAX_FEATURES)
    if any(x not in ("q", "c", "int", "float", "i") for x in items):
        raise _Bad("holds a feature type other than 'q', 'c', 'int', 'float' or 'i'")
    return items


def _hidden(v: Any, ctx: _Ctx, where: str) -> tuple:
    sizes = [v] if type(v) is int else _seq(v, "layers", 10)
    if not sizes or any(type(s) is not int or s < 1 for s in sizes):
        raise _Bad("is not a tuple of 1 to 10 positive ints")
    return tuple(sizes)



def _json(v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, dict):
        return {str(_json(k)): _json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json(x) for x in v]
    if isinstance(v, np.ndarray):
        return _json(v.tolist())
    if isinstance(v, slice):
        return {"slice": [_json(v.start), _json(v.stop), _json(v.step)]}
    if type(v) is int and abs(v) >= 2**63:
        return _short(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, type):
        return np.dtype(v).name if issubclass(v, np.generic) else v.__name__
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return f"<{type(v).__name__}>"
