"""Engine-neutral per-partition kernels of out-of-core anonymization, and their merges.

Every function here takes plain pandas/numpy data of *one partition* (or two partial results)
and returns plain data. The Dask driver (:mod:`anonml.dask`) runs them on the workers and sums
their results with a tree reduction; a Spark adapter would run the same functions in
``mapInPandas`` and ``treeReduce``. Nothing here imports an engine.

Steps (docs/dask.md):

1. :func:`column_summary` / :func:`merge_summaries` / :func:`finalize_bins` -- global bins: numeric
   columns keep their distinct values while there are at most ``max_bins`` of them, else a
   mergeable quantile sketch (sorted weighted points, compressed to a fixed size after each
   merge, as in the "merge and prune" summaries of Greenwald & Khanna, 2004); categorical
   columns and labels are reduced value counts, so every partition gets the same codes.
2. :func:`bin_partition` -- the binned QIs and the guide's class codes (float64 targets for a
   regression guide, ``BinSpec.regression``) of a partition (computed once, kept on its worker).
3. One tree level (:mod:`anonml.engine._levels`): route the rows with the last level's
   splits, then class counts per (node, bin) of the smaller child of each sibling pair; the
   partials are summed by :func:`sum_arrays`.
4. :func:`group_bin_counts` (sparse per-group histograms), :func:`group_medians`,
   :func:`propose_representatives` -- the representatives, run on all the rows of a range of
   groups (:mod:`anonml.engine._ranges`, after a shuffle by range).
5. :func:`recode_partition` -- the output rows of a partition.
6. Nodes small enough to finish in memory: :mod:`anonml.engine._local`.

Verification of the written table uses :func:`anonml.dask._verify.class_stats` and the count
kernels of :mod:`anonml.privacy`; l/t merging uses :mod:`anonml.dask._merge`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.anonymize._medians import group_order, numeric_group_medians
from anonml.encoding import _midpoints, bins_dtype
from anonml.engine._levels import PartState

__all__ = [
    "BinSpec",
    "column_summary",
    "merge_summaries",
    "finalize_bins",
    "bin_partition",
    "PartState",
    "sum_arrays",
    "group_bin_counts",
    "group_medians",
    "group_order",
    "numeric_group_medians",
    "propose_representatives",
    "pick_rows",
    "binned_values",
    "pick_binned",
    "recode_partition",
]

SKETCH_SIZE = 4096  # weighted points kept by the quantile sketch of a numeric column


# -- 1. global bins ----------------------------------------------------------------------------
def _kind(s: pd.Series) -> str:
    return "numeric" if pd.api.types.is_numeric_dtype(s) and s.dtype != bool else "categorical"


def _compress(values: np.ndarray, weights: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``size`` weighted points with the same weighted quantiles (sorted input)."""
    if values.size <= size:
        return values, weights
    cum = np.cumsum(weights)
    total = cum[-1]
    targets = (np.arange(size) + 0.5) * (total / size)
    pick = np.searchsorted(cum, targets, side="left")
    return values[pick], np.full(size, total / size)


def column_summary(
    part: pd.DataFrame, numeric: Sequence[Any], categorical: Sequence[Any], label: Any,
    max_bins: int,
) -> dict:
    """Mergeable summary of one partition: per column its kind, moments, distinct values or
    quantile sketch (numeric), value counts (categorical, label)."""
    out: dict = {"n": int(part.shape[0]), "num": {}, "cat": {}, "label": None, "kinds": {}}
    for c in list(numeric) + list(categorical):
        out["kinds"][c] = _kind(part[c])
    for c in numeric:
        if out["kinds"][c] != "numeric":
            continue  # reported by merge_summaries / finalize_bins with the column name
        v = part[c].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(v)
        if bad.any():
            raise InputError(
                f"numeric quasi-identifier {c!r} has {int(bad.sum())} missing or infinite values "
                "in a partition; impute or drop them first (or declare the column categorical)"
            )
        v = np.sort(v)
        distinct = v[np.r_[True, v[1:] != v[:-1]]] if v.size else v  # np.unique, sorted already
        n = v.size
        mean = float(v.mean()) if n else 0.0
        m2 = float(((v - mean) ** 2).sum()) if n else 0.0
        pts, w = _compress(v, np.ones(n), SKETCH_SIZE)
        out["num"][c] = {
            "n": n, "mean": mean, "m2": m2,
            "distinct": distinct if distinct.size <= max_bins else None,
            "pts": pts, "w": w,
        }
    for c in categorical:
        counts = part[c].value_counts(dropna=False)
        counts.index = pd.Index(np.asarray(counts.index, dtype=object), dtype=object)
        out["cat"][c] = counts
    if label is not None:
        out["label"] = part[label].value_counts(dropna=False)
    return out


def _add_counts(a: pd.Series | None, b: pd.Series | None) -> pd.Series | None:
    if a is None:
        return b
    if b is None:
        return a
    return pd.concat([a, b]).groupby(level=0, dropna=False, sort=False).sum()


def merge_summaries(a: dict, b: dict, max_bins: int) -> dict:
    """Merge two partition summaries (associative, commutative up to the sketch's error)."""
    out: dict = {"n": a["n"] + b["n"], "num": {}, "cat": {}, "kinds": {}}
    for c in set(a["kinds"]) | set(b["kinds"]):
        ka, kb = a["kinds"].get(c), b["kinds"].get(c)
        out["kinds"][c] = ka if ka == kb or kb is None else kb if ka is None else "mixed"
    for c in set(a["num"]) | set(b["num"]):
        x, y = a["num"].get(c), b["num"].get(c)
        if x is None or y is None:
            out["num"][c] = x or y
            continue
        n = x["n"] + y["n"]
        delta = y["mean"] - x["mean"]
        mean = x["mean"] + delta * y["n"] / max(n, 1)
        m2 = x["m2"] + y["m2"] + delta * delta * x["n"] * y["n"] / max(n, 1)  # Chan et al.
        distinct = None
        if x["distinct"] is not None and y["distinct"] is not None:
            distinct = np.union1d(x["distinct"], y["distinct"])
            if distinct.size > max_bins:
                distinct = None
        pts = np.concatenate([x["pts"], y["pts"]])
        w = np.concatenate([x["w"], y["w"]])
        order = np.argsort(pts, kind="stable")
        pts, w = _compress(pts[order], w[order], SKETCH_SIZE)
        out["num"][c] = {"n": n, "mean": mean, "m2": m2, "distinct": distinct, "pts": pts, "w": w}
    for c in set(a["cat"]) | set(b["cat"]):
        out["cat"][c] = _add_counts(a["cat"].get(c), b["cat"].get(c))
    out["label"] = _add_counts(a.get("label"), b.get("label"))
    return out


@dataclass
class BinSpec:
    """Global encoding shared by every partition: the same bins and codes everywhere.

    ``thresholds[c]``: upper bin edges of numeric column c (as ``TableEncoder.thresholds_``);
    ``bin_values[c]``: a value standing for each bin (the value itself when bins are distinct
    values, else the middle of the bin); ``categories[c]``: sorted known values (code m is
    'missing', m+1 'unknown'); ``classes``: the guide's class values (None: no guide, or a
    regression guide); ``regression``: the guide is a continuous target, binned as float64.
    """

    columns: list
    categorical: list
    thresholds: dict = field(default_factory=dict)
    bin_values: dict = field(default_factory=dict)
    categories: dict = field(default_factory=dict)
    mean: dict = field(default_factory=dict)
    scale: dict = field(default_factory=dict)
    classes: np.ndarray | None = None
    regression: bool = False

    @property
    def is_cat(self) -> np.ndarray:
        cat = set(self.categorical)
        return np.array([c in cat for c in self.columns], dtype=bool)

    @property
    def n_bins(self) -> np.ndarray:
        cat = set(self.categorical)
        return np.array(
            [len(self.categories[c]) + 2 if c in cat else len(self.thresholds[c]) + 1
             for c in self.columns], dtype=np.int64,
        )

    @property
    def n_classes(self) -> int:
        return 1 if self.classes is None else max(len(self.classes), 1)

    @classmethod
    def from_encoder(cls, encoder: Any, classes: np.ndarray | None = None) -> "BinSpec":
        """The bins of an in-memory ``TableEncoder`` (to compare the engines on the same bins)."""
        spec = cls(list(encoder.columns), list(encoder.categorical), classes=classes)
        for c in encoder.numeric:
            t = np.asarray(encoder.thresholds_[c], dtype=np.float64)
            spec.thresholds[c] = t
            vals = np.asarray(encoder.values_[c], dtype=np.float64)
            spec.bin_values[c] = _bin_values(t, vals[0], vals[-1], vals)
            spec.mean[c] = float(np.ldexp(encoder.mean_[c], encoder.exponent_[c]))
            spec.scale[c] = float(np.ldexp(encoder.scale_[c], encoder.exponent_[c]))
        for c in encoder.categorical:
            spec.categories[c] = np.asarray(encoder.cats_[c].categories, dtype=object)
        return spec


def _bin_values(t: np.ndarray, lo: float, hi: float, distinct: np.ndarray | None) -> np.ndarray:
    if distinct is not None and distinct.size == t.size + 1:
        return np.asarray(distinct, dtype=np.float64)
    edges = np.concatenate([[lo], t, [hi]])
    return _midpoints(edges[:-1], np.maximum(edges[1:], edges[:-1]))


def finalize_bins(summary: dict, columns: Sequence[Any], categorical: Sequence[Any],
                  max_bins: int, label: Any = None) -> BinSpec:
    """Global bins and codes from the merged summary (the same rules as ``TableEncoder``)."""
    for c, kind in summary["kinds"].items():
        want = "categorical" if c in set(categorical) else "numeric"
        if kind == "mixed":
            raise InputError(
                f"column {c!r} is numeric in some partitions and text in others; cast it to one "
                "type in every file (e.g. rewrite the dataset with a fixed schema)"
            )
        if kind != want and want == "numeric":
            raise InputError(
                f"quasi-identifier {c!r} was declared numeric but holds text; declare it "
                "categorical or fix its values"
            )
    spec = BinSpec(list(columns), list(categorical))
    for c in columns:
        if c in set(categorical):
            counts = summary["cat"][c]
            values = np.asarray([v for v in counts.index if not pd.isna(v)], dtype=object)
            try:
                values = np.sort(values)
            except TypeError:
                values = np.asarray(sorted(values, key=repr), dtype=object)
            spec.categories[c] = values
            continue
        s = summary["num"][c]
        n = s["n"]
        spec.mean[c] = s["mean"]
        std = float(np.sqrt(s["m2"] / max(n, 1)))
        spec.scale[c] = std if std > 0 else 1.0
        d = s["distinct"]
        if d is not None:
            t = _midpoints(d[:-1], d[1:])
            lo, hi = float(d[0]), float(d[-1])
        else:
            pts, w = s["pts"], s["w"]
            cum = np.cumsum(w)
            q = np.linspace(0, 1, max_bins + 1)[1:-1] * cum[-1]
            t = np.unique(pts[np.minimum(np.searchsorted(cum, q, side="left"), pts.size - 1)])
            lo, hi = float(pts[0]), float(pts[-1])
        spec.thresholds[c] = t
        spec.bin_values[c] = _bin_values(t, lo, hi, d)
    if label is not None and summary["label"] is not None:
        vals = [v for v in summary["label"].index if not pd.isna(v)]
        if len(vals) < len(summary["label"]):
            raise InputError(f"label column {label!r} has missing values; drop or impute them")
        try:
            spec.classes = np.asarray(sorted(vals), dtype=object)
        except TypeError:
            spec.classes = np.asarray(sorted(vals, key=repr), dtype=object)
    return spec


# -- 2. binning --------------------------------------------------------------------------------
def _cat_codes(s: pd.Series, categories: np.ndarray) -> np.ndarray:
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    idx = pd.Index(categories, dtype=object).get_indexer(pd.Index(np.asarray(uniques, dtype=object), dtype=object))
    m = len(categories)
    idx = np.where(idx < 0, m + 1, idx)  # unknown
    out = np.append(idx, m)[codes]  # -1 (missing) -> last entry
    return out.astype(np.int64)


def bin_partition(part: pd.DataFrame, spec: BinSpec, guide: np.ndarray | pd.Series | None) -> "PartState":
    """Binned QIs (column-major, smallest unsigned type) and class codes of one partition
    (with ``spec.regression``: the guide's values as float64)."""
    n = part.shape[0]
    B = np.empty((n, len(spec.columns)), dtype=bins_dtype(spec.n_bins), order="F")
    cat = set(spec.categorical)
    for j, c in enumerate(spec.columns):
        s = part[c]
        if c in cat:
            B[:, j] = _cat_codes(s, spec.categories[c])
        else:
            if _kind(s) != "numeric":
                raise InputError(
                    f"column {c!r} is numeric in some partitions and text in others; cast it to "
                    "one type in every file"
                )
            v = s.to_numpy(dtype=np.float64, na_value=np.nan)
            if not np.isfinite(v).all():
                raise InputError(
                    f"numeric quasi-identifier {c!r} has missing or infinite values in a "
                    "partition; impute or drop them first"
                )
            B[:, j] = np.searchsorted(spec.thresholds[c], v, side="left")
    if guide is None:
        y = np.zeros(n, dtype=np.int8)
    elif spec.regression:
        y = pd.Series(guide).to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.isfinite(y).all():  # refused with the column's name by the first pass
            raise InputError("the regression guide holds a missing or infinite value absent "
                             "from the label summary")
    else:
        # a column is factorized as it is (an object copy of a text column costs as much)
        g = guide if isinstance(guide, pd.Series) else pd.Series(np.asarray(guide, dtype=object))
        y = _cat_codes(g, spec.classes)
        if (y >= len(spec.classes)).any():
            raise InputError("the guide labels hold a value absent from the label summary")
        y = y.astype(np.int16 if len(spec.classes) < 32000 else np.int32)  # kept per row
    return PartState(B, y)


def sum_arrays(*parts: Any) -> Any:
    """Sum of partial results: arrays, or lists of arrays (elementwise)."""
    first = parts[0]
    if isinstance(first, list):
        return [sum_arrays(*[p[i] for p in parts]) for i in range(len(first))]
    # integers (counts) add up in 64 bits, whatever the parts' width
    out = np.array(first, dtype=np.int64 if first.dtype.kind in "iu" else first.dtype,
                   copy=True)
    for p in parts[1:]:
        out += p
    return out


# -- 4. representatives ------------------------------------------------------------------------
def group_bin_counts(
    state: PartState, groups: np.ndarray, n_bins: np.ndarray, n_classes: int,
    columns: Sequence[Any] | None = None,
) -> dict:
    """Sparse per-group histograms of this partition: for each QI position j (of ``columns``;
    default all) the sorted keys ``group * n_bins_j + bin`` and their counts, and for ``"y"``
    the group class counts. One column at a time keeps the merged result small."""
    out: dict = {}
    g = np.asarray(groups, dtype=np.int64)
    n_groups = int(g.max()) + 1 if g.size else 0
    for j in (list(range(state.B.shape[1])) + ["y"]) if columns is None else columns:
        width = n_classes if j == "y" else int(n_bins[j])
        keys = g * width + (state.y if j == "y" else state.B[:, j])
        out[j] = _sparse_counts(keys, n_groups * width)
    return out


def _dense_ok(cells: int, n: int) -> bool:
    """Whether a dense array of ``cells`` counts is cheaper than sorting ``n`` keys (and small)."""
    return cells <= max(8 * n, 1 << 22) and cells <= 1 << 26


def _sparse_counts(keys: np.ndarray, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``keys`` (in ``0..cells-1``) and their counts, as ``np.unique`` gives
    them: by a dense ``bincount`` when the key range is small, else by sorting."""
    if _dense_ok(cells, keys.size):
        counts = np.bincount(keys, minlength=cells)
        nz = np.flatnonzero(counts)
        return nz.astype(np.int64, copy=False), counts[nz].astype(np.int64, copy=False)
    uk, counts = np.unique(keys, return_counts=True)
    return uk.astype(np.int64, copy=False), counts.astype(np.int64)


def group_medians(
    counts: dict, spec: BinSpec, n_groups: int, rule: str, size: np.ndarray | None = None
) -> dict:
    """Per group: the z-scored median of each numeric QI (the value of its median bin,
    :func:`numeric_group_medians` at bin resolution), the
    one-hot median of each categorical QI (1 above half, 0.5 at half, else 0) and the
    majority class (Goldsteen et al., 2022, Sec. 3.2), for the entries of ``counts``
    (:func:`group_bin_counts`). ``size``: rows per group (needed without ``"y"``)."""
    out: dict = {"majority": None, "num": {}, "cat": {}}
    if "y" in counts:
        kc, cc = counts["y"]
        nc = spec.n_classes
        Y = np.zeros(n_groups * nc, dtype=np.int64)
        Y[kc] = cc
        Y = Y.reshape(n_groups, nc)
        size = Y.sum(1)
        if rule == "majority_medoid" and spec.classes is not None:
            out["majority"] = Y.argmax(1)
    cat = set(spec.categorical)
    n_bins = spec.n_bins
    for j, c in enumerate(spec.columns):
        if j not in counts:
            continue
        keys, cnt = counts[j]
        g = keys // int(n_bins[j])
        if c in cat:
            twice = 2 * cnt
            m = np.where(twice > size[g], 1.0, np.where(twice == size[g], 0.5, 0.0))
            keep = m > 0
            sumsq = np.bincount(g[keep], weights=m[keep] ** 2, minlength=n_groups)
            out["cat"][j] = (keys[keep], m[keep], sumsq)
        else:  # at bin resolution (no row is read here)
            value = numeric_group_medians(
                size, histogram=(keys, cnt, n_bins[j], spec.bin_values[c]))
            out["num"][j] = (value - spec.mean[c]) / spec.scale[c]
    return out


def assemble_medians(*parts: dict) -> dict:
    """One medians table from the per-column ones of :func:`group_medians`."""
    out: dict = {"majority": None, "num": {}, "cat": {}}
    for p in parts:
        if p["majority"] is not None:
            out["majority"] = p["majority"]
        out["num"].update(p["num"])
        out["cat"].update(p["cat"])
    return out


def propose_representatives(
    part: pd.DataFrame, state: PartState, groups: np.ndarray, medians: dict, spec: BinSpec,
    qi: Sequence[Any], part_index: int, exact: Sequence[Any] = (),
) -> pd.DataFrame:
    """The best candidate per group of these rows: the row closest to the group's median (among
    the group's majority class when asked), with its distance and position, and its QI values.
    The numeric QIs in ``exact`` (:func:`binned_values`) are taken from the bins, not from
    ``part`` (which may then be None or lack them): the same float64 values."""
    g = np.asarray(groups, dtype=np.int64)
    dist = np.zeros(g.size)
    cat = set(spec.categorical)
    n_bins = spec.n_bins
    for j, c in enumerate(spec.columns):
        if c in cat:
            keys, m, sumsq = medians["cat"][j]
            width = int(n_bins[j])
            key = g * width + state.B[:, j]
            mc = np.zeros(g.size)
            if keys.size and _dense_ok(sumsq.size * width, g.size):
                table = np.zeros(sumsq.size * width)  # the group's one-hot median, by key
                table[keys] = m
                mc = table[key]
            elif keys.size:
                at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
                mc = np.where(keys[at] == key, m[at], 0.0)
            dist += sumsq[g] - 2.0 * mc + 1.0
        else:
            v = spec.bin_values[c][state.B[:, j]] if c in exact else \
                part[c].to_numpy(dtype=np.float64)
            z = (v - spec.mean[c]) / spec.scale[c]
            dist += (z - medians["num"][j][g]) ** 2
    if medians["majority"] is not None:
        dist = np.where(state.y == medians["majority"][g], dist, np.inf)
    rows = np.flatnonzero(np.isfinite(dist))
    # per group the smallest distance, then the first row at it (as a sort by group, distance,
    # row would give, without sorting the rows)
    gr, dr = g[rows], dist[rows]
    best = np.full(int(gr.max()) + 1 if gr.size else 0, np.inf)
    np.minimum.at(best, gr, dr)
    hit = rows[dr == best[gr]]  # increasing rows
    _, at = np.unique(g[hit], return_index=True)
    first = hit[at]
    return {
        "group": g[first], "dist": dist[first],
        "part": np.full(first.size, part_index, dtype=np.int64), "row": first.astype(np.int64),
    }


def pick_rows(part: pd.DataFrame, winners: dict, part_index: int, qi: Sequence[Any]) -> pd.DataFrame:
    """The QI values of this partition's winning records, with their group (``"__group"``)."""
    mine = winners["part"] == part_index
    out = part.iloc[winners["row"][mine]][list(qi)].reset_index(drop=True)
    out.insert(0, "__group", winners["group"][mine])
    return out


def binned_values(spec: BinSpec, summary: dict, dtypes: dict) -> dict:
    """The QIs whose every value is known from its bin, with the dtype to give them
    (``dtypes``: each QI's pandas dtype, the same in every partition): a categorical QI of
    bool or text (every category a ``str``) without missing values (its value is its code's
    category), a numeric QI of a NumPy dtype binned by its distinct values (its value is its
    bin's, ``spec.bin_values``; integers within 2**53, which float64 holds exactly; floats
    without a zero, whose sign the distinct values do not keep). The representatives and the
    recoding read the others only."""
    out = {}
    cat = set(spec.categorical)
    for c in spec.columns:
        dt = dtypes.get(c)
        if dt is None or isinstance(dt, pd.CategoricalDtype):
            continue
        if c in cat:
            if any(pd.isna(v) for v in summary["cat"][c].index):
                continue
            if dt == np.dtype(bool) or (pd.api.types.is_string_dtype(dt) and all(
                    isinstance(v, str) for v in spec.categories[c])):
                out[c] = dt
            continue
        d = summary["num"][c]["distinct"]
        if d is None or not isinstance(dt, np.dtype) or dt.kind not in "iuf" or not d.size:
            continue
        if (dt.kind in "iu" and float(np.abs(d).max()) > 2.0**53) or (
                dt.kind == "f" and (d == 0).any()):
            continue
        out[c] = dt
    return out


def pick_binned(part: pd.DataFrame | None, state: PartState, winners: dict, part_index: int,
                qi: Sequence[Any], spec: BinSpec, exact: dict) -> pd.DataFrame:
    """:func:`pick_rows` with the QIs of ``exact`` (:func:`binned_values`) from the bins and
    the others from ``part`` (a read of those only; None when there are none): the same
    values in the same dtypes."""
    mine = winners["part"] == part_index
    rows = winners["row"][mine]
    cat = set(spec.categorical)
    cols = {}
    for j, c in enumerate(spec.columns):
        if c in exact:
            codes = state.B[rows, j].astype(np.intp)
            vals = spec.categories[c][codes] if c in cat else spec.bin_values[c][codes]
            cols[c] = pd.Series(vals).astype(exact[c])
        else:
            cols[c] = part[c].iloc[rows].reset_index(drop=True)
    out = pd.DataFrame(cols)[list(qi)]
    out.insert(0, "__group", winners["group"][mine])
    return out


# -- 5. recode ---------------------------------------------------------------------------------
def recode_partition(part: pd.DataFrame, groups: np.ndarray, reps: pd.DataFrame, qi: Sequence[Any]) -> pd.DataFrame:
    """The output rows of a partition: QIs replaced by their group representative's values."""
    from anonml.anonymize._pipeline import recode

    return recode(part, qi, np.asarray(groups, dtype=np.int64), reps)
