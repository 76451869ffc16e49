"""The :class:`Hierarchy` class: a generalization hierarchy (taxonomy tree) of one attribute.

Full-domain and local recoding generalize a value by replacing it with one of its ancestors in
a *generalization hierarchy* (Samarati & Sweeney, 1998; Sweeney, 2002). The layout is the one
of ARX (Prasser & Kohlmayer, 2015): one row per leaf value, column 0 the leaf, column ``j`` its
ancestor at level ``j``, and the last column the single root (usually ``"*"``)::

    Married-civ-spouse;Married;*
    Divorced;Previously-married;*
    Never-married;Never-married;*

A node is identified by its level and its label: the same label may appear at two levels
(``Never-married`` above), but at one level a label names one node, which has one parent.

References
----------
Samarati, P. & Sweeney, L. (1998). Protecting privacy when disclosing information:
k-anonymity and its enforcement through generalization and suppression. SRI-CSL-98-04.

Prasser, F. & Kohlmayer, F. (2015). Putting statistical disclosure control into practice: the
ARX data anonymization tool. In *Medical Data Privacy Handbook*, Springer, 111-148.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._output import atomic_write
from anonml._utils import check_int, check_real

__all__ = ["Hierarchy"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_missing(values: np.ndarray) -> np.ndarray:
    return np.asarray(pd.isna(values), dtype=bool)


def _as_leaf_array(values: Sequence[Any]) -> np.ndarray:
    """Leaves as a numeric array when they are all (non-bool) numbers, else an object array."""
    series = pd.Series(list(values) if not isinstance(values, (pd.Series, np.ndarray)) else values)
    if series.dtype == object:  # e.g. numbers from a list of rows: find their common type
        series = series.infer_objects()
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        arr = series.to_numpy()
        integral = np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
        if arr.dtype.kind == "f" and integral and np.all(np.abs(arr) < 2**53):
            return arr.astype(np.int64)
        return arr
    return np.asarray(series.to_numpy(dtype=object), dtype=object)


def _columns_of(table: Any, where: str = "the hierarchy") -> list[np.ndarray]:
    """The columns of a 2-D table (DataFrame, ndarray, list of rows) as 1-D arrays."""
    if isinstance(table, Hierarchy):
        return [table.labels(j)[table.node_ids[:, j]] for j in range(table.height + 1)]
    if isinstance(table, pd.DataFrame):
        return [table.iloc[:, j].to_numpy() for j in range(table.shape[1])]
    if isinstance(table, np.ndarray):
        if table.ndim != 2:
            raise InputError(
                f"a hierarchy table must be 2-D (one row per leaf), got shape {table.shape}; "
                "pass rows like [leaf, level1, ..., '*']"
            )
        return [table[:, j] for j in range(table.shape[1])]
    if isinstance(table, (str, bytes)) or not isinstance(table, Iterable):
        raise InputError(
            f"a hierarchy table must be a DataFrame, 2-D array or list of rows, got "
            f"{type(table).__name__}; to read an ARX file use Hierarchy.read_arx(path)"
        )
    rows = [list(r) if not isinstance(r, (str, bytes)) else None for r in table]
    for i, r in enumerate(rows):
        if r is None:
            raise InputError(
                f"{where}: row {i} is a string, not a row; pass rows like "
                "[leaf, level1, ..., '*'] (to read an ARX file use Hierarchy.read_arx)"
            )
    if not rows:
        return []
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise InputError(
                f"{where}: row {i} (leaf {_short(r[0]) if r else '<empty>'}) has {len(r)} "
                f"cells but row 0 has {width}; every leaf needs one cell per level up to the root"
            )
    return [
        np.asarray([r[j] for r in rows], dtype=object) if width else np.empty(0, dtype=object)
        for j in range(width)
    ]


class Hierarchy:
    """Generalization hierarchy of one attribute, in ARX layout.

    Parameters
    ----------
    table : DataFrame, 2-D array or list of rows
        ``n_leaves x (height + 1)``: column 0 the leaf values (strings or numbers, unique),
        column ``j`` the ancestor of each leaf at level ``j``, the last column a single root.
    name : str, optional
        The attribute's name, used in error messages.

    Attributes
    ----------
    name : str or None
    height : int
        Number of levels above the leaves (a flat hierarchy ``value -> *`` has height 1).
    n_leaves : int
    leaves : ndarray
        Leaf values in *hierarchy order*: the leaves of every node form a contiguous range.
        Numeric leaves are an int64 or float64 array, other leaves an object array.
    node_ids : ndarray of int64, shape (n_leaves, height + 1)
        Id of each leaf's ancestor at each level (column 0: the leaf index itself). Ids at a
        level run ``0 .. n_nodes(level) - 1`` in hierarchy order, so every column is
        non-decreasing and the leaves of node ``i`` at level ``j`` are
        ``range(node_start(j)[i], node_start(j)[i] + subtree_size(j)[i])``.

    Notes
    -----
    Hierarchy order keeps the order of first appearance in ``table``: sibling nodes are
    ordered by where they first occur, and leaves are grouped under their parents.

    Examples
    --------
    >>> h = Hierarchy([["a", "ab", "*"], ["c", "cd", "*"], ["b", "ab", "*"], ["d", "cd", "*"]])
    >>> h.leaves.tolist(), h.height
    (['a', 'b', 'c', 'd'], 2)
    >>> h.generalize(["b", "d"], 1).tolist()
    ['ab', 'cd']
    >>> levels, nodes = h.common_ancestor(h.leaf_codes(["a", "b", "a", "c"]), [0, 0, 1, 1], 2)
    >>> levels.tolist(), h.labels(2)[nodes[1]]
    ([1, 2], '*')
    """

    def __init__(self, table: Any, name: str | None = None) -> None:
        self.name = name
        columns = _columns_of(table, self._where())
        self._build(columns)

    # -- construction --------------------------------------------------------------------------
    def _where(self) -> str:
        return f"hierarchy {self.name!r}" if self.name is not None else "the hierarchy"

    def _build(self, columns: list[np.ndarray]) -> None:
        where = self._where()
        if len(columns) < 2:
            raise InputError(
                f"{where} has {len(columns)} column(s); it needs the leaf column and at least "
                "one level above it, e.g. rows like [value, '*']"
            )
        n = len(columns[0])
        if n == 0:
            raise InputError(f"{where} has no leaves; give one row per value of the attribute")
        leaves_in = _as_leaf_array(columns[0])
        levels_in = [leaves_in] + [np.asarray(c, dtype=object) for c in columns[1:]]
        for j, col in enumerate(levels_in):
            missing = _is_missing(col)
            if j > 0:
                missing |= np.asarray(col == "", dtype=bool)
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                what = "a missing leaf value" if j == 0 else f"an empty cell at level {j}"
                raise InputError(
                    f"{where} has {what} in row {i} (leaf {_short(levels_in[0][i])}); "
                    "fill every cell (use a category like '?' for missing values)"
                )
        height = len(levels_in) - 1
        codes: list[np.ndarray] = []
        uniques: list[np.ndarray] = []
        for col in levels_in:
            c, u = pd.factorize(pd.Series(col, dtype=col.dtype), use_na_sentinel=False)
            codes.append(c.astype(np.int64))
            uniques.append(np.asarray(u, dtype=col.dtype if col.dtype.kind in "if" else object))
        if len(uniques[0]) != n:
            dup = pd.Series(levels_in[0])
            value = dup[dup.duplicated()].iloc[0]
            raise InputError(
                f"{where} lists leaf {_short(value)} more than once; give each leaf value one row"
            )
        if len(uniques[height]) != 1:
            roots = ", ".join(_short(v) for v in uniques[height][:4])
            raise InputError(
                f"{where} has {len(uniques[height])} roots in its last column ({roots}"
                f"{', ...' if len(uniques[height]) > 4 else ''}); the last column must hold one "
                "value for every leaf, e.g. '*'"
            )
        # parent (code at level j+1) of each node at level j, from its first occurrence
        parents: list[np.ndarray] = []
        for j in range(height):
            first = np.full(len(uniques[j]), -1, dtype=np.int64)
            first[codes[j][::-1]] = np.arange(n)[::-1]
            parent = codes[j + 1][first]
            bad = parent[codes[j]] != codes[j + 1]
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                node = uniques[j][codes[j][i]]
                p1 = uniques[j + 1][parent[codes[j][i]]]
                p2 = uniques[j + 1][codes[j + 1][i]]
                raise InputError(
                    f"{where}: node {_short(node)} at level {j} has two parents at level "
                    f"{j + 1}, {_short(p1)} and {_short(p2)}; give every node one parent "
                    "(rename one of the two nodes if they are different)"
                )
            parents.append(parent)
        # hierarchy order, top-down: siblings by first appearance, grouped under the parent
        rank = [np.zeros(0, dtype=np.int64) for _ in range(height + 1)]
        rank[height] = np.zeros(1, dtype=np.int64)
        for j in range(height - 1, -1, -1):
            m = len(uniques[j])
            parent_rank = rank[j + 1][parents[j]]
            order = np.lexsort((np.arange(m), parent_rank))
            r = np.empty(m, dtype=np.int64)
            r[order] = np.arange(m)
            rank[j] = r
        leaf_order = np.argsort(rank[0], kind="stable")  # leaf codes are row positions
        node_ids = np.empty((n, height + 1), dtype=np.int64)
        labels = []
        for j in range(height + 1):
            node_ids[:, j] = rank[j][codes[j][leaf_order]]
            lab = np.empty(len(uniques[j]), dtype=uniques[j].dtype)
            lab[rank[j]] = uniques[j]
            labels.append(lab)
        self.height = height
        self.n_leaves = n
        self.leaves = labels[0]
        self.node_ids = node_ids
        self.node_ids.setflags(write=False)
        self._labels = labels
        for lab in labels:
            lab.setflags(write=False)
        self._sizes = [
            np.bincount(node_ids[:, j], minlength=len(labels[j])) for j in range(height + 1)
        ]
        self._starts = [
            np.concatenate(([0], np.cumsum(s)[:-1])).astype(np.int64) for s in self._sizes
        ]
        self._index = pd.Index(self.leaves, dtype=self.leaves.dtype)
        self._numeric_index: pd.Index | None | bool = False  # computed lazily

    # the pandas lookups are derived: saved files hold the arrays only (no pandas objects)
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_index", "_numeric_index")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for arr in (self.node_ids, *self._labels):
            arr.setflags(write=False)
        self._index = pd.Index(self.leaves, dtype=self.leaves.dtype)
        self._numeric_index = False

    # -- structure -----------------------------------------------------------------------------
    def _check_level(self, level: Any) -> int:
        return check_int("level", level, low=0, high=self.height,
                         why=f"{self._where()} has 0 (leaves) .. {self.height} (root)")

    def n_nodes(self, level: int) -> int:
        """Number of nodes at ``level`` (``n_leaves`` at level 0, 1 at the root level)."""
        return len(self._labels[self._check_level(level)])

    def labels(self, level: int) -> np.ndarray:
        """Label of each node id at ``level`` (level 0: the leaves)."""
        return self._labels[self._check_level(level)]

    def subtree_size(self, level: int) -> np.ndarray:
        """Number of leaves under each node id at ``level``."""
        return self._sizes[self._check_level(level)]

    def node_start(self, level: int) -> np.ndarray:
        """Index (in hierarchy order) of the first leaf under each node id at ``level``."""
        return self._starts[self._check_level(level)]

    def to_frame(self) -> pd.DataFrame:
        """The ARX table in hierarchy order, columns ``0 .. height``."""
        data = {j: self._labels[j][self.node_ids[:, j]] for j in range(self.height + 1)}
        return pd.DataFrame(data)

    # -- mapping values ------------------------------------------------------------------------
    def _numeric_lookup(self) -> pd.Index | None:
        """Leaves as float numbers (for string leaves like '30'), or None if they are not."""
        if self._numeric_index is False:
            parsed = pd.to_numeric(pd.Series(self.leaves, dtype=object), errors="coerce")
            ok = parsed.notna().all() and not parsed.duplicated().any()
            self._numeric_index = pd.Index(parsed.to_numpy(dtype=np.float64)) if ok else None
        return self._numeric_index  # type: ignore[return-value]

    def leaf_codes(self, values: Any) -> np.ndarray:
        """Leaf index (in hierarchy order) of each value.

        Numbers and their text form match each other (``30``, ``30.0`` and ``"30"``), so a
        hierarchy read from a CSV file without ``numeric=True`` still maps a numeric column.

        Raises
        ------
        InputError
            If a value is not a leaf of the hierarchy.
        """
        if np.ndim(values) == 0:
            values = [values]
        if isinstance(values, pd.Series):
            series = values
        else:
            arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
            if arr.ndim != 1:
                arr = np.asarray(list(values), dtype=object)
            series = pd.Series(arr)
        row_codes, uniques = pd.factorize(series, use_na_sentinel=False)
        uniq = pd.Index(np.asarray(uniques, dtype=object), dtype=object)
        if self._index.dtype.kind in "if":
            idx = (
                self._index.get_indexer(uniq.astype(object)) if len(uniq) else np.zeros(0, np.int64)
            )
        else:
            idx = self._index.get_indexer(uniq)
        miss = idx < 0
        if miss.any():
            idx = idx.copy()
            if self._index.dtype.kind in "if":  # numeric leaves, values given as text
                parsed = pd.to_numeric(pd.Series(uniq[miss], dtype=object), errors="coerce")
                found = pd.Index(self._index.to_numpy(dtype=np.float64)).get_indexer(
                    parsed.to_numpy(dtype=np.float64)
                )
                found[parsed.isna().to_numpy()] = -1
                idx[miss] = found
            else:
                lookup = self._numeric_lookup()
                if lookup is not None:  # text leaves like "30", numeric values
                    parsed = pd.to_numeric(pd.Series(uniq[miss], dtype=object), errors="coerce")
                    found = lookup.get_indexer(parsed.to_numpy(dtype=np.float64))
                    found[parsed.isna().to_numpy()] = -1
                    idx[miss] = found
            miss = idx < 0
        if miss.any():
            counts = np.bincount(row_codes, minlength=len(uniq))
            first = int(np.flatnonzero(miss)[0])
            n_bad = int(counts[miss].sum())
            others = int(miss.sum()) - 1
            more = f" and {others} other unknown value(s)" if others else ""
            raise InputError(
                f"value {_short(uniq[first])}{more} ({n_bad} rows) is not a leaf of "
                f"{self._where()}; add a row for it to the hierarchy (value;...;*) or clean "
                "the column"
            )
        return np.asarray(idx, dtype=np.int64)[row_codes]

    def generalize(self, values: Any, level: int) -> np.ndarray:
        """Label of each value's ancestor at ``level`` (level 0 returns the leaves)."""
        level = self._check_level(level)
        return self._labels[level][self.node_ids[self.leaf_codes(values), level]]

    def common_ancestor(
        self, leaf_codes: Any, groups: Any, n_groups: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lowest common ancestor of the leaves of each group, vectorized.

        Because node ids grow with the leaf index at every level, the leaves of a group share
        one node at level ``j`` exactly when its smallest and largest leaf do; one group-wise
        min and max of the leaf codes decide every level at once.

        Parameters
        ----------
        leaf_codes : array of int, shape (n,)
            Leaf index of each row (from :meth:`leaf_codes`).
        groups : array of int, shape (n,)
            Group id ``0 .. n_groups - 1`` of each row.
        n_groups : int

        Returns
        -------
        levels : ndarray of int64, shape (n_groups,)
            Lowest level at which all of the group's leaves have one ancestor (0 when the
            group holds one distinct leaf). A group without rows gets level 0.
        nodes : ndarray of int64, shape (n_groups,)
            Id of that ancestor at that level (-1 for a group without rows).
        """
        codes = np.asarray(leaf_codes)
        grp = np.asarray(groups)
        if codes.ndim != 1 or grp.shape != codes.shape:
            raise InputError(
                f"leaf_codes and groups must be 1-D of one length, got shapes {codes.shape} and "
                f"{grp.shape}; pass one leaf code and one group id per row"
            )
        if codes.size and (
            codes.dtype.kind not in "iu" or codes.min() < 0 or codes.max() >= self.n_leaves
        ):
            raise InputError(
                f"leaf_codes for {self._where()} must be integers 0..{self.n_leaves - 1}; "
                "compute them with Hierarchy.leaf_codes(values)"
            )
        n_groups = int(n_groups)
        if grp.size and (grp.dtype.kind not in "iu" or grp.min() < 0 or grp.max() >= n_groups):
            raise InputError(
                f"groups must be integers 0..n_groups-1={n_groups - 1}; renumber them, e.g. "
                "with np.unique(groups, return_inverse=True)[1]"
            )
        codes = codes.astype(np.int64, copy=False)
        grp = grp.astype(np.int64, copy=False)
        lo = np.full(n_groups, self.n_leaves, dtype=np.int64)
        hi = np.full(n_groups, -1, dtype=np.int64)
        np.minimum.at(lo, grp, codes)
        np.maximum.at(hi, grp, codes)
        empty = hi < 0
        lo[empty] = 0
        hi[empty] = 0
        same = self.node_ids[lo] == self.node_ids[hi]  # (G, height+1), monotone in the level
        levels = np.argmax(same, axis=1).astype(np.int64)
        nodes = self.node_ids[lo, levels]
        nodes[empty] = -1
        return levels, nodes

    # -- ARX files -----------------------------------------------------------------------------
    @classmethod
    def read_arx(
        cls,
        path_or_buffer: Any,
        sep: str = ";",
        name: str | None = None,
        *,
        numeric: bool = False,
    ) -> Hierarchy:
        """Read an ARX hierarchy CSV: ``value;level1;...;root``, one row per leaf, no header.

        Parameters
        ----------
        path_or_buffer : str, path or text/binary file-like
        sep : str, default ";"
            Field separator (ARX uses ``;``).
        name : str, optional
            Attribute name; defaults to the file's stem (``adult_age.csv`` -> ``"adult_age"``).
        numeric : bool, default False
            Parse the leaf column as numbers (int64 when all are integers, else float64), for
            a numeric attribute such as age. Otherwise every cell is kept as text.

        Raises
        ------
        InputError
            If the file is missing or unreadable, rows have different lengths, or the table is
            not a valid hierarchy (see :class:`Hierarchy`).
        """
        if isinstance(path_or_buffer, (str, os.PathLike)):
            p = Path(path_or_buffer)
            if not p.exists():
                raise InputError(f"hierarchy file {str(p)!r} does not exist; check the path")
            if name is None:
                name = p.name.split(".")[0]
            from anonml import _io

            raw = _io.read_bytes(p, "hierarchy file", max_bytes=_io.MAX_HIERARCHY_BYTES)
            try:
                text = raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read hierarchy file {str(p)!r}: {exc}") from None
            where = repr(str(p))
        else:
            if not hasattr(path_or_buffer, "read"):
                raise InputError(
                    f"read_arx needs a path or an open file, got "
                    f"{type(path_or_buffer).__name__}; pass e.g. 'adult_age.csv'"
                )
            data = path_or_buffer.read()
            if isinstance(data, bytes):
                try:
                    data = data.decode("utf-8-sig")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"hierarchy data is not UTF-8 ({exc}); re-save it as UTF-8"
                    ) from None
            text = data.lstrip("\ufeff")
            where = "the hierarchy data"
        if not isinstance(sep, str) or len(sep) != 1:
            raise InputError(f"sep={sep!r} must be a single character, e.g. ';'")
        rows = [
            r for r in csv.reader(io.StringIO(text), delimiter=sep) if r and any(c != "" for c in r)
        ]
        if not rows:
            raise InputError(f"{where} holds no rows; write one line per leaf: value;level1;...;*")
        width = len(rows[0])
        lines = [i for i, r in enumerate(rows) if len(r) != width]
        if lines:
            i = lines[0]
            raise InputError(
                f"{where}: row {i + 1} (leaf {_short(rows[i][0])}) has {len(rows[i])} fields but "
                f"row 1 has {width}; every leaf needs one field per level up to the root "
                f"(separator {sep!r})"
            )
        frame = pd.DataFrame(rows, dtype=object)
        if numeric:
            parsed = pd.to_numeric(frame[0], errors="coerce")
            bad = parsed.isna()
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise InputError(
                    f"{where}: leaf {_short(rows[i][0])} in row {i + 1} is not a number; "
                    "read with numeric=False, or fix the value"
                )
            frame[0] = _as_leaf_array(parsed.to_numpy())
        return cls(frame, name=name)

    def to_arx(self, path: Any, sep: str = ";") -> None:
        """Write the hierarchy as an ARX CSV file (no header), atomically.

        ``path`` may also be an open text file, which is written directly.
        """
        if not isinstance(sep, str) or len(sep) != 1:
            raise InputError(f"sep={sep!r} must be a single character, e.g. ';'")
        frame = self.to_frame()

        def cell(v: Any) -> str:
            if isinstance(v, (float, np.floating)) and float(v).is_integer():
                return str(float(v))
            return str(v)

        rows = [[cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]

        def write_to(f: Any) -> None:
            writer = csv.writer(f, delimiter=sep, lineterminator="\n")
            writer.writerows(rows)

        if hasattr(path, "write"):
            write_to(path)
            return

        def write(tmp: Path) -> None:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                write_to(f)

        atomic_write(path, write)

    # -- builders ------------------------------------------------------------------------------
    @classmethod
    def flat(cls, values: Iterable[Any], root: str = "*", name: str | None = None) -> Hierarchy:
        """Height-1 hierarchy: every value directly under ``root`` (suppression only)."""
        leaves = _unique_in_order(values, "values")
        return cls(
            pd.DataFrame({0: leaves, 1: np.full(len(leaves), root, dtype=object)}), name=name
        )

    @classmethod
    def from_intervals(
        cls,
        values: Iterable[Any],
        widths: Sequence[float],
        *,
        start: float | None = None,
        root: str = "*",
        name: str | None = None,
    ) -> Hierarchy:
        """Nested intervals over numeric values, labelled as ARX does: ``"[30, 35["``.

        Level ``j`` (1-based) puts each value ``v`` in the interval
        ``[start + i*w, start + (i+1)*w[`` of width ``w = widths[j-1]`` that holds it; the
        level above the last width is ``root``.

        Parameters
        ----------
        values : iterable of numbers
            The leaves (duplicates are dropped; the leaves are sorted).
        widths : sequence of positive numbers
            Interval widths, increasing, each a whole multiple of the previous one so that the
            intervals nest, e.g. ``[5, 10, 20]``.
        start : number, optional
            Left end of one interval at every level. Default: the largest multiple of the
            last width that is at most ``min(values)`` (0 for ages 17..90 with widths 5, 10, 20).
        root : str, default "*"
        name : str, optional
        """
        leaves = _unique_in_order(values, "values")
        num = pd.to_numeric(pd.Series(leaves, dtype=object), errors="coerce")
        if num.isna().any():
            bad = leaves[int(np.flatnonzero(num.isna().to_numpy())[0])]
            raise InputError(
                f"from_intervals needs numbers, got {_short(bad)}; use from_ordering or flat "
                "for categorical values"
            )
        x = num.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise InputError("from_intervals got an infinite value; drop or clip it first")
        order = np.argsort(x, kind="stable")
        leaf_arr = _as_leaf_array(x[order])
        x = x[order]
        w = _check_widths(widths)
        if start is None:
            start = math.floor(x.min() / w[-1]) * w[-1]
        start = float(start)
        if start > x.min():
            raise InputError(
                f"start={start:g} is above the smallest value {x.min():g}; pass a start at most "
                "min(values)"
            )
        cols: dict[int, Any] = {0: leaf_arr}
        for j, width in enumerate(w, start=1):
            i = np.floor((x - start) / width + 1e-12)
            lo = start + i * width
            uniq, inv = np.unique(lo, return_inverse=True)
            labs = np.array([f"[{_fmt(a)}, {_fmt(a + width)}[" for a in uniq], dtype=object)
            cols[j] = labs[inv]
        cols[len(w) + 1] = np.full(len(x), root, dtype=object)
        return cls(pd.DataFrame(cols), name=name)

    @classmethod
    def from_ordering(
        cls,
        ordered_values: Iterable[Any],
        fanouts: Sequence[int],
        *,
        root: str = "*",
        name: str | None = None,
    ) -> Hierarchy:
        """Group consecutive values of an ordered domain, ``fanouts[j]`` nodes per parent.

        Level 1 groups the leaves ``fanouts[0]`` at a time, level 2 groups the level-1 nodes
        ``fanouts[1]`` at a time, and so on; the last group of a level may be smaller. A
        group is labelled ``"first..last"`` by its first and last leaf (a one-leaf group by
        the leaf itself). The level above the last fanout is ``root``.

        Examples
        --------
        >>> h = Hierarchy.from_ordering(["a", "b", "c", "d", "e"], [2, 2])
        >>> h.to_frame().values.tolist()[-1]
        ['e', 'e', 'e', '*']
        >>> h.generalize(["a", "c"], 2).tolist()
        ['a..d', 'a..d']
        """
        leaves = _unique_in_order(ordered_values, "ordered_values", keep_duplicates=True)
        if len(pd.unique(pd.Series(leaves, dtype=object))) != len(leaves):
            s = pd.Series(leaves, dtype=object)
            raise InputError(
                f"ordered_values lists {_short(s[s.duplicated()].iloc[0])} more than once; "
                "give each value once, in order"
            )
        fans = list(fanouts)
        if not fans:
            raise InputError("fanouts is empty; pass at least one group size, e.g. [2, 2]")
        for f in fans:
            check_int("fanout", f, low=2, why="nodes per parent, e.g. fanouts=[2, 2]")
        n = len(leaves)
        leaf_arr = _as_leaf_array(leaves)
        text = np.array([str(v) for v in leaf_arr], dtype=object)
        cols: dict[int, Any] = {0: leaf_arr}
        node = np.arange(n)  # node index of each leaf at the current level
        for j, f in enumerate(fans, start=1):
            node = node // f
            first = np.full(node.max() + 1, n, dtype=np.int64)
            last = np.full(node.max() + 1, -1, dtype=np.int64)
            np.minimum.at(first, node, np.arange(n))
            np.maximum.at(last, node, np.arange(n))
            labs = np.array(
                [text[a] if a == b else f"{text[a]}..{text[b]}" for a, b in zip(first, last)],
                dtype=object,
            )
            cols[j] = labs[node]
        cols[len(fans) + 1] = np.full(n, root, dtype=object)
        return cls(pd.DataFrame(cols), name=name)

    # -- dunder --------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        if self.height != other.height or self.n_leaves != other.n_leaves:
            return False
        if not np.array_equal(self.node_ids, other.node_ids):
            return False
        return all(list(self._labels[j]) == list(other._labels[j]) for j in range(self.height + 1))

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return self.n_leaves

    def __repr__(self) -> str:
        nodes = "/".join(str(len(lab)) for lab in self._labels)
        return f"Hierarchy(name={self.name!r}, height={self.height}, nodes per level={nodes})"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _check_widths(widths: Sequence[float]) -> list[float]:
    if isinstance(widths, (str, bytes)) or np.ndim(widths) != 1 or len(widths) == 0:
        raise InputError(f"widths={widths!r} must be a non-empty list of numbers, e.g. [5, 10, 20]")
    w = []
    for v in widths:
        check_real("width", v, why="e.g. widths=[5, 10, 20]")
        w.append(float(v))
    for a, b in itertools.pairwise(w):
        ratio = b / a
        if b <= a or abs(ratio - round(ratio)) > 1e-9:
            raise InputError(
                f"widths {_fmt(a)} then {_fmt(b)} do not nest; each width must be a whole "
                "multiple (> 1) of the previous one, e.g. [5, 10, 20]"
            )
    return w


def _unique_in_order(values: Iterable[Any], what: str, keep_duplicates: bool = False) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError(f"{what} must be a list of values, got {type(values).__name__}")
    items = list(
        values.tolist() if isinstance(values, (np.ndarray, pd.Series, pd.Index)) else values
    )
    if not items:
        raise InputError(f"{what} is empty; pass at least one value")
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in items):
        raise InputError(f"{what} holds a missing value; drop it or use a category like '?'")
    if keep_duplicates:
        return items
    return list(pd.unique(pd.Series(items, dtype=object)))
