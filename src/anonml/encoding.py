"""Tables to numeric matrices and back: schema checks, categorical codes, one-hot and bins.

Every anonymizer takes a pandas DataFrame (or a numpy array, treated as a frame with integer
column names) and needs three numeric views of its quasi-identifiers:

* ``onehot``: numeric columns as they are plus one-hot indicators of the categorical ones, the
  input of scikit-learn's exact decision tree (as in Goldsteen et al., 2022);
* ``bins``: one small integer per cell (quantile bins of numeric columns, category codes of
  categorical ones), the input of the histogram tree in :mod:`anonml.anonymize._hist_tree`;
* ``distance`` parts: z-scored numeric columns and category codes, to find the record closest to
  a group's median.

Conventions
-----------
* A column is categorical when its dtype is not numeric or is boolean (object, ``str``, category,
  bool), unless the caller lists the categorical columns.
* A missing value in a categorical column is a category of its own ("missing").
* A missing or infinite value in a numeric quasi-identifier is an error: impute or drop first.
  Every finite float is accepted, from subnormals to ``±1.8e308``: numeric views scale each
  column by a power of two (:func:`pow2_scale`) before they subtract or average, so no range
  overflows, and the exact tree reads ranks (a tree only needs the order).
* A datetime, timedelta or period column is categorical like any non-numeric dtype: its values
  are unordered categories (a missing ``NaT`` is the "missing" category) and a representative
  is one of them. To have it ordered (ranges, cuts between dates), convert it to numbers first,
  e.g. ``df[col].dt.year`` or ``df[col].astype("int64")``.
* A column that mixes types (strings and numbers) is an error: cast it to one type first.
* Column names are compared as a reader sees them (:func:`normalize_name`): two columns whose
  names differ only by invisible characters, case or look-alike letters are refused
  (:func:`check_lookalike_columns`), since one of them could carry a quasi-identifier raw
  past the anonymizer. Names are never renamed.
"""

from __future__ import annotations

import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd
from scipy.sparse import issparse

from anonml._errors import InputError
from anonml._threads import in_order

__all__ = [
    "as_frame",
    "check_lookalike_columns",
    "normalize_name",
    "from_frame",
    "resolve_columns",
    "detect_categorical",
    "check_table",
    "TableEncoder",
    "pow2_scale",
    "scaled_values",
]


def _names(columns: Sequence[Any], limit: int = 12) -> str:
    from anonml._errors import names_list

    return names_list(columns, limit)


# Letters of other scripts that look like Latin ones, mapped to the Latin letter (after NFKC and
# case folding, so lower case is enough; the capitals fold to these). A small hand-made table
# of the Cyrillic and Greek letters most often mistaken for Latin, not the full Unicode
# confusables list (https://www.unicode.org/Public/security/latest/confusables.txt).
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "\u0430": "a", "\u0432": "b", "\u0435": "e",
    "\u043a": "k", "\u043c": "m", "\u043d": "h", "\u043e": "o", "\u0440": "p",
    "\u0441": "c", "\u0442": "t", "\u0443": "y", "\u0445": "x", "\u0456": "i",
    "\u0458": "j", "\u0455": "s", "\u04bb": "h", "\u0501": "d",
    "\u051b": "q", "\u051d": "w", "\u04cf": "l",
    # Greek
    "\u03b1": "a", "\u03b2": "b", "\u03b5": "e", "\u03b9": "i", "\u03ba": "k",
    "\u03bd": "v", "\u03bf": "o", "\u03c1": "p", "\u03c4": "t", "\u03c5": "u",
    "\u03c7": "x", "\u03b7": "n", "\u03c9": "w", "\u03f2": "c",
    "\u03f3": "j", "\u03b6": "z",
    # Latin: dotless i, long s, script g
    "\u0131": "i", "\u017f": "s", "\u0261": "g",
})


def normalize_name(name: Any) -> str:
    """A column name as a reader sees it, to compare names (never to rename one).

    NFKC normalization (full-width and compatibility forms become plain letters), then every
    format character (Unicode category Cf: zero-width spaces and joiners, direction marks, soft
    hyphens, ...) removed, then case folding, then Cyrillic and Greek letters that look like
    Latin ones mapped to them (a small table, :data:`_CONFUSABLES`, not the full Unicode
    confusables list), then NFKC again. ``'a\u200bge'``, ``'AGE'`` and ``'\u0430ge'`` (a
    Cyrillic a) all become ``'age'``.
    """
    text = unicodedata.normalize("NFKC", str(name))
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = text.casefold().translate(_CONFUSABLES)
    return unicodedata.normalize("NFKC", text)


def _shown(name: Any) -> str:
    """A name quoted so that invisible and look-alike characters show (``'\u0430ge'``)."""
    text = str(name)
    return repr(text) if text.isascii() else ascii(text)


def check_lookalike_columns(columns: Sequence[Any], quasi_identifiers: Sequence[Any] = (), *,
                            where: str = "X") -> None:
    """Refuse two columns whose names look the same (:func:`normalize_name`), in one line.

    A column that looks like a quasi-identifier but is not one (``'a\u200bge'`` beside the
    QI ``'age'``) would be written raw beside the anonymized one; two look-alike columns are
    refused whether or not one is a quasi-identifier. Only string names are compared (a numpy
    array's columns are integers).
    """
    qi = [q for q in quasi_identifiers if isinstance(q, str)]
    qi_set = set(qi)
    seen: dict[str, Any] = {}
    for q in qi:  # the quasi-identifiers first, so a message names the QI
        seen.setdefault(normalize_name(q), q)
    for col in columns:
        if not isinstance(col, str):
            continue
        key = normalize_name(col)
        first = seen.setdefault(key, col)
        if first == col:
            continue
        if first in qi_set and col not in qi_set:
            raise InputError(
                f"column {_shown(col)} of {where} looks like the quasi-identifier "
                f"{_shown(first)} (both read as {key!r} once invisible characters, case and "
                "look-alike letters are ignored) and would be written unanonymized beside it; "
                "fix: rename or drop one"
            )
        raise InputError(
            f"columns {_shown(first)} and {_shown(col)} of {where} look the same (both read "
            f"as {key!r} once invisible characters, case and look-alike letters are ignored); "
            "fix: rename or drop one"
        )


def as_frame(X: Any, *, what: str = "X") -> tuple[pd.DataFrame, bool]:
    """Return ``X`` as a DataFrame and whether it came in as a numpy array (or list).

    A numpy array becomes a frame with integer column names ``0 .. d-1``; an object array has
    its column types inferred, so numbers stored as objects count as numeric.
    """
    if isinstance(X, pd.DataFrame):
        if X.columns.has_duplicates:
            dup = X.columns[X.columns.duplicated()].unique().tolist()
            raise InputError(f"{what} has duplicate column names {_names(dup)}; rename them")
        return X, False
    if isinstance(X, pd.Series):
        raise InputError(f"{what} is a Series; pass a 2-D table, e.g. X.to_frame()")
    if issparse(X):
        raise InputError(
            f"{what} is a sparse matrix of shape {X.shape}; sparse input is not supported, "
            "pass a dense table, e.g. X.toarray() or a DataFrame"
        )
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - numpy's own message is kept
        raise InputError(f"{what} cannot be read as a table ({exc}); pass a DataFrame") from None
    if arr.ndim != 2:
        raise InputError(
            f"{what} must be 2-D (rows x columns), got {arr.ndim}-D with shape {arr.shape}; "
            "reshape it, e.g. X.reshape(-1, 1) for a single column"
        )
    frame = pd.DataFrame(arr)
    if arr.dtype == object:
        frame = frame.infer_objects()
    return frame, True


def from_frame(frame: pd.DataFrame, like: Any) -> Any:
    """Convert ``frame`` back to the container type of ``like`` (numpy array or DataFrame)."""
    if isinstance(like, pd.DataFrame):
        return frame
    arr = np.asarray(like)
    return frame.to_numpy(dtype=arr.dtype if arr.dtype != object else object)


def resolve_columns(
    frame: pd.DataFrame, columns: Sequence[Any] | str | None, *, what: str = "quasi-identifier"
) -> list[Any]:
    """Validate a list of column names (or integer positions for numpy input) against ``frame``.

    ``None`` means every column.
    """
    if columns is None:
        return list(frame.columns)
    if isinstance(columns, (str, int, np.integer)):
        columns = [columns]
    columns = list(columns)
    if not columns:
        raise InputError(f"the list of {what}s is empty; name at least one column")
    seen = set()
    out = []
    for col in columns:
        if col not in frame.columns:
            raise InputError(
                f"{what} {col!r} is not a column; columns are: {_names(list(frame.columns))}"
            )
        if col in seen:
            raise InputError(f"{what} {col!r} is listed twice; list each column once")
        seen.add(col)
        out.append(col)
    return out


def _is_categorical_dtype(series: pd.Series) -> bool:
    return (not pd.api.types.is_numeric_dtype(series.dtype)) or pd.api.types.is_bool_dtype(
        series.dtype
    )


def pow2_scale(values: np.ndarray) -> int:
    """Exponent ``e`` with ``max|values| / 2**e`` in [0.5, 1) (0 for an all-zero column).

    ``np.ldexp(values, -e)`` then lies in [-1, 1], so differences and sums of the scaled values
    never overflow, even for ``±1.8e308``; scaling by a power of two is exact for normal numbers
    (subnormals are scaled up, exactly), so ratios of ranges equal those of the raw values.
    """
    if values.size == 0:
        return 0
    top = float(np.max(np.abs(values)))
    if not np.isfinite(top) or top == 0.0:
        return 0
    return int(np.frexp(top)[1])


def scaled_values(values: np.ndarray) -> np.ndarray:
    """``values`` scaled by a power of two into [-1, 1] (see :func:`pow2_scale`)."""
    values = np.asarray(values, dtype=np.float64)
    return np.ldexp(values, -pow2_scale(values))


def detect_categorical(
    frame: pd.DataFrame, columns: Sequence[Any], categorical_features: Sequence[Any] | None
) -> list[Any]:
    """Return the categorical columns among ``columns``.

    Detected from dtype when ``categorical_features`` is None; otherwise the given list (which
    must name columns of the frame) restricted to ``columns``. A non-numeric column that is not
    listed is an error, because it cannot be treated as a number.
    """
    if categorical_features is None:
        return [c for c in columns if _is_categorical_dtype(frame[c])]
    if not isinstance(categorical_features, (str, int, np.integer)) and not len(
        list(categorical_features)
    ):
        given = []  # an empty list: no categorical column
    else:
        given = resolve_columns(frame, categorical_features, what="categorical feature")
    given_set = set(given)
    for c in columns:
        if c not in given_set and not pd.api.types.is_numeric_dtype(frame[c].dtype):
            raise InputError(
                f"column {c!r} has non-numeric dtype {frame[c].dtype} but is not in "
                "categorical_features; add it there or cast it to a number"
            )
    return [c for c in columns if c in given_set]


def check_table(
    frame: pd.DataFrame, columns: Sequence[Any], categorical: Sequence[Any], *, what: str = "X"
) -> None:
    """Raise :class:`InputError` on an empty table, mixed types, or NaN/inf in numeric columns."""
    if frame.shape[0] == 0:
        raise InputError(f"{what} has no rows; pass a table with at least k rows")
    if frame.shape[1] == 0:
        raise InputError(f"{what} has no columns; pass a table with the quasi-identifiers")
    cat = set(categorical)
    for c in columns:
        s = frame[c]
        if c in cat:
            inferred = pd.api.types.infer_dtype(s, skipna=True)
            if inferred.startswith("mixed") and inferred != "mixed-integer-float":
                kinds = sorted({type(v).__name__ for v in s.dropna().unique()[:50]})
                raise InputError(
                    f"column {c!r} mixes value types ({', '.join(kinds)}); "
                    "cast it to one type, e.g. df[col].astype(str)"
                )
            continue
        if s.dtype.kind == "c":
            raise InputError(
                f"Complex data not supported: column {c!r} has dtype {s.dtype}; "
                "split it into real columns first, e.g. x.real and x.imag"
            )
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values)
        if bad.any():
            n_nan = int(np.isnan(values).sum())
            n_inf = int(bad.sum()) - n_nan
            raise InputError(
                f"numeric quasi-identifier {c!r} has {n_nan} missing and {n_inf} infinite "
                "values; impute or drop them first (or declare the column categorical)"
            )


@dataclass
class _CatSpec:
    categories: np.ndarray  # sorted known values (missing excluded)
    has_missing: bool

    def __post_init__(self) -> None:
        self.index = pd.Index(self.categories, dtype=object)

    # the index is derived: saved files hold the categories only (no pandas objects)
    def __getstate__(self) -> dict:
        return {"categories": self.categories, "has_missing": self.has_missing}

    def __setstate__(self, state: dict) -> None:
        self.categories = state["categories"]
        self.has_missing = state["has_missing"]
        self.__post_init__()

    @property
    def n_codes(self) -> int:
        """Known categories plus one code for 'missing' (always reserved)."""
        return len(self.categories) + 1


def bins_dtype(n_bins: Any) -> type:
    """The smallest type of a column-major matrix of bin codes, ``n_bins`` bins per column at
    most (none: 1): uint8 up to 256 bins, uint16 up to 65,536, else int32. One rule for every
    binned matrix (:meth:`TableEncoder.bins`, the Dask engine's partitions and the rows its
    shuffles move), so that their codes keep one type."""
    top = int(np.max(n_bins)) if len(n_bins) else 1
    return np.uint8 if top <= 256 else np.uint16 if top <= 65536 else np.int32


@dataclass
class TableEncoder:
    """Fitted numeric views of a table's columns (see the module docstring).

    Parameters
    ----------
    columns : list
        Columns to encode, in order.
    categorical : list
        The categorical ones among ``columns``.
    max_bins : int
        Largest number of quantile bins of a numeric column (``bins`` view).
    """

    columns: list[Any]
    categorical: list[Any]
    max_bins: int = 255
    mean_: dict[Any, float] = field(default_factory=dict)
    scale_: dict[Any, float] = field(default_factory=dict)
    cats_: dict[Any, _CatSpec] = field(default_factory=dict)
    thresholds_: dict[Any, np.ndarray] = field(default_factory=dict)
    exponent_: dict[Any, int] = field(default_factory=dict)
    values_: dict[Any, np.ndarray] = field(default_factory=dict)

    @property
    def numeric(self) -> list[Any]:
        cat = set(self.categorical)
        return [c for c in self.columns if c not in cat]

    def fit(self, frame: pd.DataFrame, threads: Any = None) -> "TableEncoder":
        """Fit every column's view on ``frame``. ``threads``: an executor of
        :func:`anonml._threads.column_threads` that codes the columns concurrently (each
        column's work is its own; the results are stored in column order), or None."""
        memo = self._memo if getattr(self, "_memo_frame", None) is frame else None
        keep = memo is not None
        cat = set(self.categorical)
        cols = self.numeric + list(self.categorical)

        def one(c: Any) -> tuple:
            if c in cat:
                return self._fit_categorical(c, frame[c], keep)
            return self._fit_numeric(frame[c].to_numpy(dtype=np.float64), keep)

        for c, got in zip(cols, in_order(threads, one, cols)):
            if c in cat:
                spec, codes, factorized = got
                self.cats_[c] = spec
                if keep:
                    memo[(c, "error")] = memo[(c, "ignore")] = codes
                    self._memo_factorized.setdefault(c, factorized)
            else:
                e, mean, scale, values, rank, thresholds = got
                self.exponent_[c], self.mean_[c], self.scale_[c] = e, mean, scale
                self.values_[c] = values
                if rank is not None:  # each row's value is values_[c][rank]
                    memo[(c, "rank")] = rank
                self.thresholds_[c] = thresholds
            del got
        return self

    def _fit_numeric(self, v: np.ndarray, keep: bool) -> tuple:
        """One numeric column's fit (``v``: its values as floats): its scale's exponent, mean
        and std, its distinct values in order, the rows' ranks among them (with ``keep``, for
        few distinct values; else None) and its bins' thresholds."""
        # mean and std of the values scaled by a power of two: finite for any finite floats
        e = pow2_scale(v)
        z = np.ldexp(v, -e)
        mean = float(z.mean())
        std = float(z.std())
        del z
        # the distinct values (pd.unique's, by the same hash table) and, for the fit
        # frame's rows, their ranks among them: what :meth:`ranks` would search for
        row_codes, uniques = pd.factorize(v, use_na_sentinel=False)
        order = np.argsort(uniques, kind="stable")
        values = uniques[order]
        rank_of_row = None
        # (kept in 1-2 bytes a row, as the category codes: not for columns of more
        # distinct values, whose rows would cost 4-8 bytes each while the partition runs)
        if keep and order.size <= _RANK_MEMO_MAX and not np.isnan(uniques).any():
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            rank_of_row = _smallest_codes(rank.take(row_codes), order.size)
        del row_codes
        return (e, mean, std if std > 0 else 1.0, values, rank_of_row,
                _bin_thresholds(v, self.max_bins, values))

    def _fit_categorical(self, c: Any, s: pd.Series, keep: bool) -> tuple:
        """One categorical column's fit: its categories, and with ``keep`` the fit frame's
        codes (from this factorization, for free) and the factorization itself."""
        row_codes, uniques = pd.factorize(s, use_na_sentinel=True)
        values = np.asarray(uniques, dtype=object)
        code_of = None  # each unique's code (its position among the sorted categories)
        try:
            order = np.argsort(values, kind="stable")
            values = values[order]
            code_of = np.empty(order.size, dtype=np.int64)
            code_of[order] = np.arange(order.size)
        except TypeError:  # values of one kind that do not order (checked before)
            values = np.asarray(sorted(values, key=repr), dtype=object)
        spec = _CatSpec(np.asarray(values, dtype=object), bool((row_codes < 0).any()))
        if not keep:
            return spec, None, None
        # kept in the smallest integer dtype (1 byte a row, not 8, for each column while
        # the partition runs)
        row_codes = _smallest_codes(row_codes, len(uniques))
        if code_of is not None:  # known values 0..m-1, missing m (as _codes gives)
            codes = np.append(code_of, len(values))[row_codes]
        else:
            codes = self._codes_with(spec, c, s, "error", (row_codes, uniques))
        return spec, _smallest_codes(codes, spec.n_codes + 1), (row_codes, uniques)

    # -- views ---------------------------------------------------------------------------------
    @contextmanager
    def memoize(self, frame: pd.DataFrame, factorized: dict | None = None) -> Iterator[dict]:
        """Within the block, category codes of ``frame`` are computed once per column (from
        ``factorized[column]``, the column's ``pd.factorize``, where given).

        Yields the dict of those factorizations, to which :meth:`fit` within the block adds
        its own (the caller may keep it past the block; the encoder does not)."""
        self._memo_frame, self._memo = frame, {}
        self._memo_factorized = factorized if factorized is not None else {}
        try:
            yield self._memo_factorized
        finally:
            self._memo_frame, self._memo = None, {}
            self.__dict__.pop("_memo_factorized", None)  # the fitted state as before

    def forget_ranks(self) -> None:
        """Within :meth:`memoize`: drop the fit frame's value ranks that :meth:`fit` kept (1-2
        bytes a row per numeric column), once the caller has the bins it kept them for; later
        :meth:`bins` and :meth:`ranks` compute them again (the same values)."""
        memo = getattr(self, "_memo", None)
        if memo:
            for key in [key for key in memo if key[1] == "rank"]:
                del memo[key]

    def codes(self, frame: pd.DataFrame, column: Any, handle_unknown: str = "error", *,
              copy: bool = True) -> np.ndarray:
        """Category codes: known values 0..m-1, missing m, unknown m+1 (or an error).

        Within :meth:`memoize`, ``copy=False`` returns the memo's own array (the smallest
        integer dtype, 1-2 bytes a row, to be read and not changed) instead of an int64 copy.
        """
        memo = getattr(self, "_memo", None)
        if memo is not None and self._memo_frame is frame:
            key = (column, handle_unknown)
            if key not in memo:
                memo[key] = _smallest_codes(
                    self._codes(frame, column, handle_unknown,
                                getattr(self, "_memo_factorized", {}).get(column)),
                    self.cats_[column].n_codes + 1)
            # the memo holds 1-2 bytes a row; each caller gets its own int64 copy, alive only
            # while it uses it (or, to read only, the memo's array)
            return memo[key].astype(np.int64) if copy else memo[key]
        return self._codes(frame, column, handle_unknown)

    def _codes(
        self, frame: pd.DataFrame, column: Any, handle_unknown: str, factorized: tuple | None = None
    ) -> np.ndarray:
        return self._codes_with(self.cats_[column], column, frame[column], handle_unknown,
                                factorized)

    @staticmethod
    def _codes_with(spec: "_CatSpec", column: Any, s: pd.Series, handle_unknown: str,
                    factorized: tuple | None = None) -> np.ndarray:
        """:meth:`_codes` of the column ``s`` (named ``column``) for the categories ``spec``."""
        # factorize first: mapping the few distinct values is far cheaper than every cell
        row_codes, uniques = factorized or pd.factorize(s, use_na_sentinel=True)
        missing = row_codes < 0
        codes = spec.index.get_indexer(pd.Index(np.asarray(uniques, dtype=object), dtype=object))
        codes = np.append(codes, -1)[row_codes].astype(np.int64, copy=False)
        m = len(spec.categories)
        codes[missing] = m
        unknown = (codes < 0) & ~missing
        if unknown.any():
            if handle_unknown == "error":
                value = s.iloc[int(np.flatnonzero(unknown)[0])]
                raise InputError(
                    f"column {column!r} has value {value!r} not seen in fit "
                    f"({int(unknown.sum())} rows); refit on data that includes it, or pass "
                    "handle_unknown='ignore'"
                )
            codes[unknown] = m + 1
        return codes

    def zscores(self, frame: pd.DataFrame, columns: Sequence[Any] | None = None) -> np.ndarray:
        """Numeric columns (all, or those given) standardized with the fit's mean and std.

        The mean and std are those of the column scaled by ``2**-exponent_`` (the same
        z-scores, without overflow on extreme values).
        """
        cols = self.numeric if columns is None else list(columns)
        out = np.empty((frame.shape[0], len(cols)), dtype=np.float64)
        for j, c in enumerate(cols):
            out[:, j] = self.zscore_values(c, frame[c].to_numpy(dtype=np.float64))
        return out

    def zscore_values(self, column: Any, values: np.ndarray) -> np.ndarray:
        """:meth:`zscores` of one numeric column from its values (float64, not changed),
        computed in one new array: the same numbers."""
        z = np.ldexp(values, -self.exponent_[column])
        z -= self.mean_[column]
        z /= self.scale_[column]
        return z

    def _memo_rank(self, frame: pd.DataFrame, column: Any) -> np.ndarray | None:
        """Within :meth:`memoize` on the fit frame: each row's position of its value in
        ``values_[column]``, as fit found it (None when not kept)."""
        memo = getattr(self, "_memo", None)
        if memo is None or self._memo_frame is not frame:
            return None
        return memo.get((column, "rank"))

    def ranks(self, frame: pd.DataFrame, column: Any) -> np.ndarray:
        """Rank of each value among the fit's distinct values of a numeric column.

        A value seen in fit gets its rank ``0 .. m-1``; any other value ``i - 0.5``, where
        ``i`` is the number of fit values below it, so that the order is kept.
        """
        rank = self._memo_rank(frame, column)
        if rank is not None:  # the fit frame's, found by fit
            return rank.astype(np.float64)
        u = self.values_[column]
        v = frame[column].to_numpy(dtype=np.float64)
        i = np.searchsorted(u, v, side="left")
        seen = np.take(u, np.minimum(i, u.size - 1)) == v
        return np.where(seen, i, i - 0.5)

    def onehot(self, frame: pd.DataFrame, handle_unknown: str = "error",
               rows: np.ndarray | None = None) -> np.ndarray:
        """Ranks of the numeric columns (:meth:`ranks`), then one indicator per seen category
        (and 'missing'); of the rows at positions ``rows`` only, when given.

        A tree only needs the order of a numeric column; ranks keep it in float32 (the dtype of
        scikit-learn's trees), where ``±1.8e308`` would overflow and subnormals become 0.
        """
        n = frame.shape[0] if rows is None else len(rows)

        def pick(values: np.ndarray) -> np.ndarray:
            return values if rows is None else values.take(rows)

        num = self.numeric
        widths = [self.cats_[c].n_codes if self.cats_[c].has_missing else
                  self.cats_[c].n_codes - 1 for c in self.categorical]
        # one C-ordered float32 matrix, filled in place (scikit-learn's trees read it as it is)
        out = np.zeros((n, len(num) + sum(widths)), dtype=np.float32)
        for j, c in enumerate(num):
            out[:, j] = pick(self.ranks(frame, c))
        start = len(num)
        flat = out.reshape(-1)
        row_start = np.arange(n, dtype=np.int64) * out.shape[1]
        for c, width in zip(self.categorical, widths):
            codes = pick(self.codes(frame, c, handle_unknown))
            known = np.flatnonzero(codes < width)  # unknown (and unseen missing) stay all-zero
            flat[row_start.take(known) + start + codes.take(known)] = 1.0
            start += width
        return out

    def bins(
        self, frame: pd.DataFrame, handle_unknown: str = "error", columns: Sequence[Any] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Integer bins per column, whether each column is categorical, and each one's bin count.

        Numeric values fall into quantile bins (at most ``max_bins``); categorical values are
        their codes (known, missing, unknown). The matrix is column-major and of the smallest
        unsigned type that holds every bin (uint8 for up to 256 bins), so that gathers are cheap.
        """
        cols = self.columns if columns is None else list(columns)
        cat = set(self.categorical)
        is_cat = np.array([c in cat for c in cols], dtype=bool)
        n_bins = np.array(
            [self.cats_[c].n_codes + 1 if c in cat else len(self.thresholds_[c]) + 1 for c in cols],
            dtype=np.int64,
        )
        out = np.empty((frame.shape[0], len(cols)), dtype=bins_dtype(n_bins), order="F")
        for j, c in enumerate(cols):
            if is_cat[j]:
                out[:, j] = self.codes(frame, c, handle_unknown)
            else:
                t = self.thresholds_[c]
                rank = self._memo_rank(frame, c)
                if rank is not None:  # the fit frame: each distinct value's bin, then the rows'
                    out[:, j] = np.searchsorted(t, self.values_[c], side="left").take(rank)
                else:
                    out[:, j] = np.searchsorted(t, frame[c].to_numpy(dtype=np.float64),
                                                side="left")
        return out, is_cat, n_bins


_BIN_SAMPLE = 200_000
#: most distinct values of a numeric column whose fit-frame ranks ``fit`` keeps (int16)
_RANK_MEMO_MAX = int(np.iinfo(np.int16).max)


def _smallest_codes(codes: np.ndarray, top: int) -> np.ndarray:
    """``codes`` (integers from -1 to ``top``) in the smallest signed integer dtype holding
    them; the same array when it is that dtype already."""
    codes = np.asarray(codes)
    dt = next(t for t in (np.int8, np.int16, np.int32, np.int64) if top <= np.iinfo(t).max)
    return codes if codes.dtype == dt else codes.astype(dt)


def _midpoints(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A point in ``[a, b)`` for each ``a < b``: their midpoint, computed without overflow."""
    m = a / 2.0 + b / 2.0  # (a + b) / 2 overflows for a, b near the largest float
    return np.where((m >= a) & (m < b), m, a)  # adjacent (or subnormal) floats: a itself


def _bin_thresholds(
    values: np.ndarray, max_bins: int, distinct: np.ndarray | None = None
) -> np.ndarray:
    """Upper bin edges: midpoints between distinct values, or quantiles when there are more
    than ``max_bins`` distinct values. As in histogram gradient boosting, quantiles of a large
    column come from a fixed subsample of 200,000 values (deterministic: seed 0). Quantiles are
    taken of the values scaled by a power of two, so that they cannot overflow."""
    if distinct is None:
        distinct = np.sort(pd.unique(values))
    if len(distinct) <= max_bins:
        return _midpoints(distinct[:-1], distinct[1:])
    if values.size > _BIN_SAMPLE:
        values = values[np.random.default_rng(0).choice(values.size, _BIN_SAMPLE, replace=False)]
    e = pow2_scale(values)
    q = np.quantile(np.ldexp(values, -e), np.linspace(0, 1, max_bins + 1)[1:-1], method="midpoint")
    return np.unique(np.ldexp(q, e))
