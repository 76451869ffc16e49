"""Which columns the representatives and the write read (issue 21, session 9).

Past :func:`~anonml.dask._columns._hold_qi` (about 14M rows on 2 x 4 GB) every proposal task
read the numeric QIs of its file, every picking task all QIs, and every write task all written
columns: at 30M rows these three were half the workers' task time after the tree (105 of 210
task-seconds, seven of the twelve Adult QIs being text). But most QI values are known from the
bins the workers hold (:func:`~anonml.engine._kernels.binned_values`: a category's code, a
numeric bin of one distinct value), and an output QI holds only its group's representative,
cast to the column's dtype. So, when the QI dtypes are the same in every file and none is a
``category`` (whose output categories depend on the partition's own), the proposals and the
picking read only the QIs the bins do not give, and the write reads only the non-QI columns
(:func:`~anonml.dask._partio._write_binned`): the same output, bit for bit
(``benchmarks/check_dask_output_identity.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["qi_dtypes", "ReadPlan", "range_count", "range_starts", "representatives"]

#: bytes a row takes in the shuffle of the representatives besides its bins and raw values:
#: group (4-8), class code (4), place (8), output partition (8)
_ROW_BYTES = 28
#: the most rows of a range (None: no bound but the local subtrees' share): larger ranges
#: cost more per row (``range_candidates`` 0.33 s per 1M rows in ranges of 2M rows, 0.19 in
#: ranges of 312,500; BENCHMARKS.md "Session 11")
MAX_RANGE_ROWS: int | None = 400_000


def range_starts(sizes: np.ndarray, n_out: int) -> np.ndarray:
    """The first group of each of ``n_out`` ranges of consecutive groups of about equal rows
    (``sizes``: rows per group); fewer ranges when groups are larger than a share."""
    cum = np.cumsum(np.asarray(sizes, dtype=np.int64))
    total = int(cum[-1]) if cum.size else 0
    cuts = np.searchsorted(cum, total * np.arange(1, max(1, n_out)) / max(1, n_out), "right")
    return np.unique(np.r_[0, cuts[cuts < cum.size]]).astype(np.int64)


def range_count(n_rows: int, threads: int, n_rounds: int) -> int:
    """How many ranges of groups to make of ``n_rows`` rows shuffled in ``n_rounds`` rounds:
    ranges of about half the rows of a local subtree's partition (the same memory bound,
    :func:`~anonml.dask._balance.auto_local_rows`) and at most :data:`MAX_RANGE_ROWS`; at
    most 32 a round (Dask's ``max_branch``: the round's shuffle, in one stage, then has few
    pieces, files x ranges), but at least four a worker thread."""
    from anonml.dask._balance import auto_local_rows

    share = max(1, auto_local_rows(n_rows, threads) // 2)
    if MAX_RANGE_ROWS is not None:
        share = min(share, MAX_RANGE_ROWS)
    return max(4 * threads, min(-(-int(n_rows) // share), 32 * max(1, int(n_rounds))))


def representatives(client: Any, states: list, groups: list, parts: list, spec: Any,
                    spec_f: Any, sizes: np.ndarray, rule: str, qi: list, exact: tuple,
                    tick: Any = None) -> Any:
    """A future of the winners ``{"group", "dist", "part", "row"}`` (one per group, in group
    order) by ranges of groups (:mod:`anonml.engine._ranges`): every partition's rows sent by
    Dask's own shuffle to the partition of their group's range, where each group's medians
    and closest record are found from all its rows. ``parts``: per partition, its frame (or a
    :class:`~anonml.dask._columns.Read`) of the numeric QIs whose bins are not exact, or None
    when there are none. In rounds of whole ranges that fit Dask's in-memory shuffle
    (:func:`~anonml.dask._balance.rounds`); ``tick(done, total)`` after each range."""
    import dask
    import dask.dataframe as dd

    from anonml.dask._balance import n_threads, rounds, shuffle_method, shuffle_to
    from anonml.dask._columns import Read, code_reading, group_rows_coded, group_rows_reading
    from anonml.dask._tree import _put
    from anonml.encoding import bins_dtype
    from anonml.engine import _ranges as R

    sizes = np.asarray(sizes, dtype=np.int64)
    n_groups, n_rows = int(sizes.size), int(sizes.sum())
    cat = set(spec.categorical)
    raw = [c for c in spec.columns if c not in cat and c not in set(exact)]
    with_y = rule == "majority_medoid"
    width = np.dtype(bins_dtype(spec.n_bins)).itemsize
    row_bytes = _ROW_BYTES + len(spec.columns) * width + 8 * len(raw)
    threads = n_threads(client)
    n_rounds = rounds(client, n_rows * row_bytes)
    starts = range_starts(sizes, range_count(n_rows, threads, n_rounds))
    n_ranges = starts.size
    stops = np.r_[starts[1:], n_groups]
    n_rounds = min(n_ranges, n_rounds)
    meta = R.group_rows_meta(spec.n_bins, raw, with_y, n_groups)
    # past one round, a file's raw columns are read once and kept as codes into their values
    # (1-2 bytes a row, R.code_columns), not read again by every round
    coded = [client.submit(code_reading, p, raw, s, pure=False)
             if n_rounds > 1 and raw and isinstance(p, Read) else None
             for p, s in zip(parts, states)]
    out: list = []
    for sel in np.array_split(np.arange(n_ranges), n_rounds):
        first, last = int(sel[0]), int(sel[-1])
        lo, hi = int(starts[first]), int(stops[last])
        starts_f = _put(client, starts[first:last + 1].copy())
        frames = [dask.delayed(group_rows_reading, pure=False)(
            p, s, g, starts_f, hi, i, raw, with_y, n_groups) if c is None else
            dask.delayed(group_rows_coded, pure=False)(
            p, c, s, g, starts_f, hi, i, raw, with_y, n_groups) for i, (p, c, s, g) in
            enumerate(zip(parts, coded, states, groups))]
        rows = dd.from_delayed(frames, meta=meta, verify_meta=False)
        rows_in = int(sizes[lo:hi].sum())
        shuffled = shuffle_to(rows, "_partitions", sel.size,
                              shuffle_method(client, rows_in * row_bytes))
        cands = client.compute([
            dask.delayed(R.range_candidates, pure=False)(
                p, int(starts[r]), int(stops[r]), spec_f, sizes[starts[r]:stops[r]], rule, qi,
                raw, exact)
            for r, p in zip(sel.tolist(), shuffled.to_delayed())])
        if n_rounds > 1:  # this round's rows gathered before the next round's come
            done = len(out)
            client.wait(cands, tick=None if tick is None else (
                lambda d, t, done=done: tick(done + d, n_ranges)))
        out += cands
        del frames, rows, shuffled
    del coded  # the codes: released once the last round's rows are made
    if n_rounds == 1:
        client.wait(out, tick=tick)
    return client.submit(R.concat_candidates, *out, pure=False)


def _reps_table(n_groups: int, qi: list, *picked: pd.DataFrame) -> pd.DataFrame:
    reps = pd.concat(picked, ignore_index=True).sort_values("__group", kind="stable")
    if reps.shape[0] != n_groups or not (reps["__group"].to_numpy() == np.arange(n_groups)).all():
        raise RuntimeError(
            f"internal error: {reps.shape[0]} representatives for {n_groups} groups; please report"
        )
    return reps[qi].reset_index(drop=True)


def qi_dtypes(files: list, qi: list) -> dict | None:
    """Each QI's pandas dtype when it is the same in every file and none is a category, else
    None (the columns are then read as before). Reads the files' footers only."""
    from anonml.engine._dataset import read_schema

    first: dict | None = None
    for f in files:
        frame = read_schema(f).empty_table().to_pandas()
        dtypes = {c: frame[c].dtype for c in qi}
        if any(isinstance(d, pd.CategoricalDtype) for d in dtypes.values()):
            return None
        if first is None:
            first = dtypes
        elif dtypes != first:
            return None
    return first


class ReadPlan:
    """The columns each stage reads past ``_hold_qi``: ``exact`` (QI -> dtype, from the bins),
    ``propose`` (the numeric QIs the proposals read, possibly none), ``pick`` (the QIs the
    picking reads, possibly none), and ``qi_meta`` (the QIs, no row, in their dtypes) for the
    write, which reads the other written columns only."""

    def __init__(self, exact: dict, qi: list, categorical: list, dtypes: dict):
        self.exact = exact
        cat = set(categorical)
        self.propose = [c for c in qi if c not in cat and c not in exact]
        self.pick = [c for c in qi if c not in exact]
        self.qi_meta = pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in qi})

    @classmethod
    def make(cls, files: list | None, spec: Any, summary: dict, qi: list, categorical: list,
             other: list) -> "ReadPlan | None":
        """The plan for a Parquet dataset (``files``) with other written columns to read, or
        None (a dask DataFrame source, a category QI, dtypes that differ between files)."""
        from anonml.engine._kernels import binned_values

        if not files or not other:
            return None
        dtypes = qi_dtypes(files, qi)
        if dtypes is None:
            return None
        return cls(binned_values(spec, summary, dtypes), qi, categorical, dtypes)
