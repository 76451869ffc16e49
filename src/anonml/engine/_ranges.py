"""Engine-neutral kernels of the representatives by ranges of groups (step 4 of
:mod:`anonml.engine._kernels`).

A group's representative is the record of the group closest to the group's median (among the
group's majority class when there are labels; Goldsteen et al., 2022, arXiv:2007.13086, Sec.
3.2). Its median needs the group's histogram of every QI, over all partitions. Summing sparse
per-partition histograms across partitions costs partitions x groups (each partition holds
rows of nearly every group): at 100M rows, 50 files x 576,143 groups, 3.8 times the wall per
row of 10M (BENCHMARKS.md, "What still grows at 100M"). Here the rows travel instead:

1. :func:`group_rows` -- each partition's rows as a frame (group, class code, place
   ``partition << 32 | row``, bins, and the raw values of the numeric QIs whose bins are not
   exact), each row sent to the output partition that holds its group's range (an engine's
   own shuffle moves them; the ranges are contiguous runs of groups of about equal rows);
2. :func:`range_candidates` -- in one partition, every row of each of its groups: the sparse
   histograms, the medians and the closest record per group, by the same kernels as before
   (:func:`~anonml.engine._kernels.group_bin_counts`,
   :func:`~anonml.engine._kernels.group_medians`,
   :func:`~anonml.engine._kernels.propose_representatives`) on the range's own groups.

The cost is one pass over the rows and one shuffle of about 50 bytes a row (Adult), whatever
the number of groups. The winners are the same rows as before: the smallest distance, then the
smallest place (the rows are put in place order first, so the first row at the smallest
distance is the one of the smallest partition, then row), bit for bit the same distances
(the same kernels, row by row).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml.encoding import bins_dtype
from anonml.engine._kernels import (BinSpec, PartState, group_bin_counts, group_medians,
                                    propose_representatives)

__all__ = ["group_rows", "group_rows_meta", "range_candidates", "concat_candidates",
           "code_columns"]

#: the most distinct values of a raw column kept as codes by :func:`code_columns`
MAX_CODED_VALUES = 1 << 16


def code_columns(part: pd.DataFrame, raw: Sequence[Any]) -> dict:
    """Each raw column of ``part`` as codes into its distinct values (``(codes, values)``,
    codes of 1 or 2 bytes, ``values[codes]`` the column as float64), or None for a column
    with more than :data:`MAX_CODED_VALUES` distinct values. The representatives' rounds
    (:func:`anonml.dask._reps.representatives`) take a column's values from these, a
    fraction of its size, instead of reading the partition's file again each round. Equal
    values share a code (0.0 and -0.0 too: the same distance to any median; a missing
    value keeps its NaN)."""
    out: dict = {}
    for c in raw:
        codes, values = pd.factorize(part[c].to_numpy(dtype=np.float64), use_na_sentinel=False)
        if len(values) > MAX_CODED_VALUES:
            out[c] = None
            continue
        out[c] = (codes.astype(np.uint8 if len(values) <= 256 else np.uint16),
                  np.asarray(values, dtype=np.float64))
    return out


def group_rows_meta(n_bins: np.ndarray, raw: Sequence[Any], with_y: bool,
                    n_groups: int) -> pd.DataFrame:
    """The empty frame of :func:`group_rows` (its columns and dtypes)."""
    gdtype = np.int32 if n_groups < 2**31 else np.int64
    bdtype = bins_dtype(n_bins)
    return pd.DataFrame({"__g": np.zeros(0, gdtype),
                         **({"__y": np.zeros(0, np.int32)} if with_y else {}),
                         "__at": np.zeros(0, np.int64),
                         **{f"__b{j}": np.zeros(0, bdtype) for j in range(len(n_bins))},
                         **{f"__v{i}": np.zeros(0, np.float64) for i in range(len(raw))},
                         "_partitions": np.zeros(0, np.int64)})


def group_rows(part: pd.DataFrame | None, state: PartState, groups: np.ndarray,
               starts: np.ndarray, stop: int, part_index: int, raw: Sequence[Any],
               with_y: bool, n_groups: int, coded: dict | None = None) -> pd.DataFrame:
    """The rows of this partition whose group is in ``starts[0] <= group < stop``, as the
    frame of :func:`group_rows_meta`: ``"_partitions"`` is the range of each row's group
    (``starts``: the first group of each range, increasing), ``"__at"`` its place
    ``part_index << 32 | row``, ``"__v<i>"`` the values of ``raw[i]`` (numeric QIs) from
    ``part`` or, for a column in ``coded`` (:func:`code_columns`), from its codes;
    ``n_groups``: all the groups (the width of ``"__g"``, as in the meta)."""
    g = np.asarray(groups)
    if g.size >= 2**31:  # a row's place holds its row in 32 bits
        from anonml._errors import InputError

        raise InputError(f"a partition holds {g.size} rows, more than 2**31 - 1; split its "
                         "file into smaller files")
    starts = np.asarray(starts, dtype=np.int64)
    act = np.flatnonzero((g >= starts[0]) & (g < stop))
    ga = g[act].astype(np.int64)
    cols: dict = {"__g": ga.astype(np.int32 if n_groups < 2**31 else np.int64)}
    if with_y:
        cols["__y"] = state.y[act].astype(np.int32)
    cols["__at"] = (np.int64(part_index) << np.int64(32)) | act.astype(np.int64)
    for j in range(state.B.shape[1]):
        cols[f"__b{j}"] = state.B[act, j]
    for i, c in enumerate(raw):
        kept = None if coded is None else coded.get(c)
        cols[f"__v{i}"] = kept[1][kept[0][act]] if kept is not None else \
            part[c].to_numpy(dtype=np.float64)[act]
    cols["_partitions"] = np.searchsorted(starts, ga, side="right") - 1
    return pd.DataFrame(cols)


def range_candidates(rows: pd.DataFrame, lo: int, hi: int, spec: BinSpec, sizes: np.ndarray,
                     rule: str, qi: Sequence[Any], raw: Sequence[Any],
                     exact: Sequence[Any] = ()) -> dict:
    """The representative of each group ``lo <= g < hi`` from all its rows (``rows``: the
    output partition of :func:`group_rows`'s shuffle for this range; ``sizes``: the rows of
    each of these groups): ``{"group", "dist", "part", "row"}``, one entry per group in group
    order (the winner's partition and row in it, for the picking of its values)."""
    n_local = int(hi - lo)
    at = rows["__at"].to_numpy(dtype=np.int64)
    # place order: ties go to the first place. Dask's task shuffle hands each output the
    # pieces of its inputs in order, so the places usually come sorted already: checked in
    # one pass, and sorted (a merge of one run per input file, and a gather of every
    # column) only when they are not
    order = None if bool((at[1:] > at[:-1]).all()) else np.argsort(at, kind="stable")

    def col(name: str) -> np.ndarray:
        v = rows[name].to_numpy()
        return v if order is None else v[order]

    if order is not None:
        at = at[order]
    g = col("__g").astype(np.int64) - np.int64(lo)
    n_cols = len(spec.columns)
    B = np.empty((at.size, n_cols), dtype=bins_dtype(spec.n_bins), order="F")
    for j in range(n_cols):
        B[:, j] = col(f"__b{j}")
    majority = rule == "majority_medoid"
    # (a copy: the shuffle's partition is Dask's, never written to)
    y = np.array(col("__y")) if majority else np.zeros(at.size, dtype=np.int8)
    state = PartState(B, y)
    columns = (["y"] if majority else []) + list(range(n_cols))
    counts = group_bin_counts(state, g, spec.n_bins, spec.n_classes, columns)
    med = group_medians(counts, spec, n_local, rule, np.asarray(sizes, dtype=np.int64))
    part = pd.DataFrame({c: col(f"__v{i}") for i, c in enumerate(raw)})
    cand = propose_representatives(part, state, g, med, spec, qi, 0, exact)
    if cand["group"].size != n_local:
        raise RuntimeError(f"internal error: {cand['group'].size} representatives for the "
                           f"{n_local} groups of a range; please report")
    place = at[cand["row"]]
    return {"group": cand["group"] + np.int64(lo), "dist": cand["dist"],
            "part": place >> np.int64(32), "row": place & np.int64(0xFFFFFFFF)}


def concat_candidates(*parts: dict) -> dict:
    """The winners of consecutive ranges, in group order (one entry per group)."""
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
