"""The shared half of every anonymizer: *recode* the groups a partitioner found, then *verify*.

``partition(X_qi, y) -> group id per row`` is the algorithm's own business. Everything after it
lives here, so that no algorithm can return a table that was not independently checked:

* :func:`select_representatives` picks each group's representative: one real record (Goldsteen
  et al., 2022, Sec. 3.2: the record closest to the group's median among those with the majority
  label), one real value of the group per QI (the paper's "actual value from each
  range/group separately", the rule of IBM's ai-privacy-toolkit), or a real value of the group
  per numeric QI with the categorical QIs taken together from one real record of the group;
* :func:`recode` writes the representative's quasi-identifier values into every row of its group;
* :func:`verify_k_anonymity` re-derives the equivalence classes from the output table alone and
  raises :class:`~anonml._errors.PrivacyViolationError` if any is smaller than k.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml._errors import PrivacyViolationError
from anonml._threads import in_order as _ordered
from anonml._utils import release_free_memory, small_pages
from anonml.encoding import TableEncoder, bins_dtype
from anonml.anonymize._medians import _BLOCK
from anonml.anonymize._medians import group_block_counts, in_group_order
from anonml.anonymize._medians import group_order as _group_order
from anonml.anonymize._medians import numeric_group_medians
from anonml.privacy import PrivacyModel, k_anonymity, l_diversity, t_closeness

__all__ = [
    "select_representatives",
    "representative_values",
    "recode",
    "recode_plan",
    "Recoding",
    "verify_k_anonymity",
    "verify_model",
    "verify_recoding",
    "REPRESENTATIVE_RULES",
    "PER_FEATURE_RULES",
    "JOINT_CATEGORICAL_RULES",
]

REPRESENTATIVE_RULES = (
    "majority_medoid", "medoid", "per_feature", "majority_per_feature", "per_feature_joint"
)
#: rules whose representative is one value per QI, each from its own row of the group
PER_FEATURE_RULES = ("per_feature", "majority_per_feature", "per_feature_joint")
#: rules whose categorical QI values are all those of one real row of the group (record rules
#: take every QI from one row)
JOINT_CATEGORICAL_RULES = ("majority_medoid", "medoid", "per_feature_joint")


#: (group x category) cells of a table counted in row order (8 MB of counts, within the
#: cache); a larger one is counted walking the rows in group order
_DIRECT_CELLS = 1 << 20


def _distance_to_median(
    frame: pd.DataFrame, encoder: TableEncoder, qi: Sequence[Any], groups: np.ndarray, n_groups: int,
    order: np.ndarray | None = None, threads: Any = None,
) -> np.ndarray:
    """Squared Euclidean distance of each row to its group's median, on encoded QIs.

    Numeric QIs are z-scored; categorical QIs are one-hot, so their median is 1 for a category
    held by more than half of the group, 0.5 for exactly half, else 0. The one-hot block is never
    built: for a row of category ``c`` its distance to the median vector ``m`` is
    ``sum(m**2) - 2 m[c] + 1``. The medians of the numeric QIs are exact, from the one
    per-group median of both engines, :func:`anonml.anonymize._medians.numeric_group_medians`
    (linear time, no sort of all rows), one column at a time, so no n x d float matrix is
    held; the QIs' bins and codes (1-2 bytes each) are taken into group order together, one
    ``take`` of a packed item a row (:func:`anonml.anonymize._medians.in_group_order`).
    ``order`` (optional): the rows in group order, :func:`anonml.anonymize._medians.group_order`,
    if the caller has it. ``threads`` (:func:`anonml._threads.column_threads`): the columns'
    bins and terms computed one per thread, summed in column order (the same distances).

    A categorical QI's per-row term reads ``2 * median`` (0, 1 or 2, exact) from a one-byte
    (group, category) table at the cell index its counts were made with: on 20M rows that
    table is 5 MB where the float one was 40 MB, and each row's read missed the cache.
    """
    n = frame.shape[0]
    dist = np.zeros(n, dtype=np.float64)
    cat = set(encoder.categorical)
    num_cols = [c for c in qi if c not in cat]
    cat_cols = [c for c in qi if c in cat]
    size = np.bincount(groups, minlength=n_groups)
    # rows in group order (a linear radix sort): the per-group histograms below are then
    # counted walking memory forwards, not scattered over a groups x bins table
    if order is None:
        order = _group_order(groups, n_groups)
    # the numeric QIs' bins, and the codes of the categorical QIs whose (group, category)
    # table outgrows the cache, taken into group order in one pass for all of them
    # (:func:`in_group_order`: one cache miss a row, not one per column)
    thresholds = [encoder.thresholds_[c] for c in num_cols]
    widths = [encoder.cats_[c].n_codes + 1 for c in cat_cols]
    dtype = bins_dtype([len(t) + 1 for t in thresholds] + widths)

    def bins_of(j: int) -> np.ndarray:
        b = np.empty(n, dtype=dtype)
        v = frame[num_cols[j]].to_numpy(dtype=np.float64)
        for s in range(0, n, _BLOCK):
            b[s:s + _BLOCK] = np.searchsorted(thresholds[j], v[s:s + _BLOCK], side="left")
        return b

    bins = list(_ordered(threads, bins_of, range(len(num_cols))))
    by_rows = [n_groups * m <= _DIRECT_CELLS for m in widths]
    in_order = in_group_order(
        bins + [encoder.codes(frame, c, copy=False)
                for c, direct in zip(cat_cols, by_rows) if not direct], dtype, order)

    def numeric_term(j: int) -> np.ndarray:
        c = num_cols[j]
        # the column read once, for its z-scores (its bins are above)
        values = frame[c].to_numpy(dtype=np.float64)
        z = encoder.zscore_values(c, values)
        med = numeric_group_medians(
            size, rows=(z, values, thresholds[j], groups), order=order,
            bins=(bins[j], in_order[j]))
        del values
        bins[j] = None
        for s in range(0, n, _BLOCK):  # (no n-row temporary for med[groups])
            z[s:s + _BLOCK] -= med.take(groups[s:s + _BLOCK])
        z *= z
        return z

    # the columns summed in order, as ``(Z - M) ** 2).sum(axis=1)`` does
    for z in _ordered(threads, numeric_term, range(len(num_cols))):
        dist += z
        del z  # (not held through the categorical terms)
    bins.clear()
    size_f = size.astype(np.float64)
    packed = {}  # each categorical QI counted in group order: its row of ``in_order``
    for c, direct in zip(cat_cols, by_rows):
        if not direct:
            packed[c] = len(num_cols) + len(packed)

    def categorical_term(j: int) -> np.ndarray:
        c, m = cat_cols[j], widths[j]
        cell = groups * m  # each row's (group, category) cell
        cell += encoder.codes(frame, c, copy=False)  # (1-2 bytes a row, read only)
        if c not in packed:  # a table that fits the cache, counted in row order
            counts = np.bincount(cell, minlength=n_groups * m).reshape(n_groups, m)
        else:  # walking the rows in group order
            counts = group_block_counts(size, in_order[packed[c]], m)
        twice = 2.0 * counts
        med = np.where(twice > size_f[:, None], 1.0,
                       np.where(twice == size_f[:, None], 0.5, 0.0))
        # sum(m**2) - 2 m[c] + 1, in that order; 2 m[c] from the one-byte table
        term = (med**2).sum(axis=1)[groups]
        term -= (2.0 * med).astype(np.uint8).ravel().take(cell)
        del cell
        term += 1.0
        return term

    for term in _ordered(threads, categorical_term, range(len(cat_cols))):
        dist += term
        del term
    return dist


def select_representatives(
    frame: pd.DataFrame,
    encoder: TableEncoder,
    qi: Sequence[Any],
    groups: np.ndarray,
    n_groups: int,
    y_codes: np.ndarray | None,
    rule: str = "majority_medoid",
    threads: Any = None,
) -> np.ndarray:
    """Row positions of each group's representative values.

    Parameters
    ----------
    frame : DataFrame
        The training table.
    encoder : TableEncoder
        Fitted on ``frame``; gives z-scores and category codes of the QIs.
    qi : list
        Quasi-identifier columns.
    groups : ndarray of int, shape (n_rows,)
        Group id of each row, 0 .. n_groups-1, every id used.
    n_groups : int
        Number of groups.
    y_codes : ndarray of int or None
        Class code of each row's label (the model's prediction, or the true label); None for a
        regression target, where every record of the group is a candidate.
    rule : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}
        Record rules (one real record per group):

        * ``"majority_medoid"`` (Goldsteen et al., 2022, Sec. 3.2): among the records whose label
          is the group's most frequent one (ties: the smallest code), the one closest to the
          group's median (squared Euclidean on z-scored numeric and one-hot categorical QIs).
        * ``"medoid"``: the record closest to that median among all records of the group.
          Ties in distance go to the first row.

        Per-feature rules (one real value of the group per QI, each from its own row; the
        paper's "actual value from each range/group separately", as in IBM's
        ai-privacy-toolkit):

        * ``"per_feature"``: for a numeric QI the group's value closest to the group's median,
          ties to the smaller value (so the lower middle value of a group of even size; missing
          values are left out unless the whole group is missing); for a categorical QI the most
          frequent value, missing counted as a value of its own, ties to the first category in
          sorted order (then missing). The tuple need not be any one row of the group, but for a
          partition into axis-aligned product regions (trees, Mondrian cuts) it lies in the
          group's own region.
        * ``"majority_per_feature"``: the same, computed on the group's records with the
          majority label (as ``"majority_medoid"``).
        * ``"per_feature_joint"``: numeric QIs as in ``"per_feature"``; the categorical QIs all
          from one real row of the group, one whose combination of categorical values is the
          group's most frequent (missing counted as a value of its own). Ties go to the most
          typical combination, the one whose categories are held by the most rows of the
          group summed over the categorical QIs (the closest to the mean of the group's
          one-hot vectors); then to the combination first in lexicographic order of the
          columns' sorted categories, missing last in each column; of the rows holding it,
          the first. Every output combination
          of categorical values is thus held by a row of its own group, so no released row
          pairs, say, one record's sex with another's marital status. With no categorical
          QI it equals ``"per_feature"``, with no numeric QI it is one whole real record.

        With ``y_codes=None`` (regression) the majority rules equal their plain twins.
    threads : executor or None
        :func:`anonml._threads.column_threads`: the record rules' distances to the median
        computed a column a thread (summed in column order: the same distances).

    Returns
    -------
    ndarray of int
        Shape (n_groups,) for a record rule: the row of each group's representative. Shape
        (n_groups, len(qi)) for a per-feature rule: entry ``[g, j]`` is a row of group ``g``
        that holds the value chosen for ``qi[j]`` (for ``"per_feature_joint"``, the same row
        for every categorical QI).
    """
    majority_mask = None
    if rule in ("majority_medoid", "majority_per_feature") and y_codes is not None:
        n_classes = int(y_codes.max()) + 1
        counts = np.bincount(groups * n_classes + y_codes, minlength=n_groups * n_classes)
        majority = counts.reshape(n_groups, n_classes).argmax(axis=1)
        majority_mask = y_codes == majority[groups]
    if rule in PER_FEATURE_RULES:
        joint = rule == "per_feature_joint"
        cat = set(encoder.categorical)
        rows = _per_feature_rows(frame, encoder, qi, groups, n_groups, majority_mask,
                                 skip=cat if joint else ())
        if joint:
            cat_j = [j for j, c in enumerate(qi) if c in cat]
            if cat_j:
                rows[:, cat_j] = _joint_mode_rows(
                    frame, encoder, [qi[j] for j in cat_j], groups, n_groups)[:, None]
        return rows
    # the rows in group order by a linear radix sort (also above 65,536 groups, where a stable
    # argsort of the group ids was a comparison sort: 3.4 s on 20M rows, against 1.8), once for
    # the medians and the choice below
    by_group = _group_order(groups, n_groups)
    dist = _distance_to_median(frame, encoder, qi, groups, n_groups, order=by_group,
                               threads=threads)
    if majority_mask is not None:
        dist[~majority_mask] = np.inf
    # first row of smallest distance in each group, without a lexsort over all rows
    size = np.bincount(groups, minlength=n_groups)
    g_sorted = np.repeat(np.arange(n_groups), size)  # groups[by_group]: every id is used
    d_sorted = dist.take(by_group)
    del dist
    starts = np.cumsum(size) - size
    best = np.minimum.reduceat(d_sorted, starts)
    hits = np.flatnonzero(d_sorted == best[g_sorted])
    first_hit = hits[np.r_[True, g_sorted[hits][1:] != g_sorted[hits][:-1]]]
    return by_group[first_hit]


def _per_feature_rows(
    frame: pd.DataFrame,
    encoder: TableEncoder,
    qi: Sequence[Any],
    groups: np.ndarray,
    n_groups: int,
    candidates: np.ndarray | None,
    skip: Any = (),
) -> np.ndarray:
    """Rows ``[g, j]`` holding group g's per-feature value of ``qi[j]`` (see
    :func:`select_representatives`), among the ``candidates`` rows (all rows if None). The
    columns of ``qi`` in ``skip`` are left for the caller to fill (their entries are unset).

    One sort per numeric QI and one ``bincount`` per categorical QI, no loop over groups or rows.
    """
    rows = np.arange(frame.shape[0]) if candidates is None else np.flatnonzero(candidates)
    g = groups[rows]
    size = np.bincount(g, minlength=n_groups)
    cat = set(encoder.categorical)
    out = np.empty((n_groups, len(qi)), dtype=np.int64)
    for j, c in enumerate(qi):
        if c in skip:
            continue
        col = frame[c].iloc[rows]
        if c in cat:
            codes = encoder.codes(frame, c)[rows]
            m = encoder.cats_[c].n_codes + 1
            counts = np.bincount(g * m + codes, minlength=n_groups * m).reshape(n_groups, m)
            mode = counts.argmax(axis=1)  # ties: the smallest code (sorted categories, missing)
            hit = np.flatnonzero(codes == mode[g])
            _, first = np.unique(g[hit], return_index=True)  # every group has its mode
            out[:, j] = rows[hit[first]]
            continue
        missing = col.isna().to_numpy()
        v = col.to_numpy()
        if missing.any() or v.dtype == object:  # nullable extension types: as floats
            v = col.to_numpy(dtype=np.float64, na_value=np.nan)
        # by group, then missing last, then value: the lower middle of the present values is
        # the one closest to the median (ties to the smaller); an all-missing group takes its first
        order = np.lexsort((v, missing, g))
        present = np.bincount(g, weights=~missing, minlength=n_groups).astype(np.int64)
        starts = np.r_[0, np.cumsum(size)[:-1]]
        pick = starts + np.maximum(present - 1, 0) // 2
        out[:, j] = rows[order[pick]]
    return out


def _joint_mode_rows(
    frame: pd.DataFrame, encoder: TableEncoder, columns: Sequence[Any], groups: np.ndarray,
    n_groups: int,
) -> np.ndarray:
    """For each group, a row whose combination of the categorical ``columns`` is the group's
    most frequent one (see :func:`select_representatives`).

    Ties between combinations go to the most typical one: the largest sum, over the columns,
    of how many rows of the group share its category in that column (so the combination
    closest to the mean of the group's one-hot vectors); then to the combination first in
    lexicographic order of the columns' codes (sorted categories, missing last); of the rows
    holding it, the first.

    The combination is one integer per row, its code over the columns in mixed radix (re-coded
    by rank with ``np.unique``, which keeps the order, only if the next column could overflow
    it). One stable sort of the (group, combination) keys gives every combination's count in its
    group and its first row, and one ``lexsort`` over the (group, combination) pairs the chosen
    one of every group; no loop over groups or rows.
    """
    n = frame.shape[0]
    groups = groups.astype(np.int64, copy=False)
    limit = np.iinfo(np.int64).max // max(n_groups, 1) // 2
    combo = np.zeros(n, dtype=np.int64)
    typical = np.zeros(n, dtype=np.int64)
    for c in columns:
        codes = encoder.codes(frame, c)
        m = encoder.cats_[c].n_codes + 1
        cell = groups * m + codes
        typical += np.bincount(cell, minlength=n_groups * m)[cell]
        if n and (int(combo.max()) + 1) * m > limit:
            combo = np.unique(combo, return_inverse=True)[1].reshape(-1).astype(np.int64)
        combo = combo * m + codes
    n_combo = int(combo.max()) + 1 if n else 1
    if n_combo > limit:
        combo = np.unique(combo, return_inverse=True)[1].reshape(-1).astype(np.int64)
        n_combo = int(combo.max()) + 1
    key = groups * n_combo + combo
    order = np.argsort(key, kind="stable")  # by group, combination, then row
    k_sorted = key[order]
    start = np.flatnonzero(np.r_[True, k_sorted[1:] != k_sorted[:-1]])  # one per (g, combo)
    count = np.diff(np.r_[start, n])
    row = order[start]  # the first row of each (group, combination)
    # by group; then most frequent, most typical; ties keep the (group, combination) order of
    # the pairs (lexsort is stable): the smallest combination
    best = np.lexsort((-typical[row], -count, groups[row]))
    g_best = groups[row[best]]
    first = np.flatnonzero(np.r_[True, g_best[1:] != g_best[:-1]])  # every group has a pair
    return row[best[first]]


def representative_values(
    frame: pd.DataFrame, qi: Sequence[Any], rows: np.ndarray
) -> pd.DataFrame:
    """The representatives' QI values, one row per group (index ``group``), from the row
    positions of :func:`select_representatives` (one per group, or one per group and QI)."""
    if rows.ndim == 1:
        reps = pd.DataFrame({c: take_rows(frame[c], rows) for c in qi})
        reps.columns = frame.columns[frame.columns.get_indexer(qi)]  # (and their name)
    else:
        reps = pd.DataFrame(
            {c: take_rows(frame[c], rows[:, j]) for j, c in enumerate(qi)}
        )
    reps.index.name = "group"
    return reps


#: rows of a column read per slice by :func:`take_rows`
_TAKE_SLICE = 1 << 18


def take_rows(column: pd.Series, rows: np.ndarray) -> pd.Series:
    """``column.iloc[rows].reset_index(drop=True)`` for a few rows of a long column, read one
    slice of the column at a time.

    A text column held by Arrow in several chunks (pandas' ``str``, as read from Parquet or
    joined by ``pd.concat``) is concatenated whole by Arrow's ``take`` before the few rows
    are picked: a transient copy of the column (17 bytes a row on Adult's text). Slices of
    the column are views, so the rows are picked from each slice in turn, in position
    order, and then put back in the order asked. The same values and dtype."""
    rows = np.asarray(rows)
    n = len(column)
    if n <= _TAKE_SLICE or rows.size == 0:
        return column.iloc[rows].reset_index(drop=True)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    bounds = np.searchsorted(sorted_rows, np.arange(0, n + _TAKE_SLICE, _TAKE_SLICE))
    parts = []
    for i in np.flatnonzero(np.diff(bounds)):
        lo = i * _TAKE_SLICE
        picked = sorted_rows[bounds[i]:bounds[i + 1]] - lo
        parts.append(column.iloc[lo:lo + _TAKE_SLICE].iloc[picked])
    taken = pd.concat(parts, ignore_index=True)
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return taken.iloc[back].reset_index(drop=True)


class Recoding:
    """The output's quasi-identifier columns before they exist: for each QI, one value per
    group already in the output's dtype, so that the output column is that array taken at
    ``groups`` (:meth:`column`).

    Built by :func:`recode_plan`, which does every cast (the step that can fail on odd dtypes)
    on the groups' values, not on the rows. Then the columns are built one at a time: into a
    copy of the table (:meth:`new_frame`, what :func:`recode` returns), into the table itself
    (:meth:`write_into`, the anonymizers' ``copy=False``), or only to be checked
    (:func:`verify_recoding`), so that no second copy of the QI columns is ever held.
    """

    def __init__(self, groups: np.ndarray, index: pd.Index, per_group: dict) -> None:
        self.groups = groups
        self.index = index
        self.per_group = per_group  # QI -> values per group (numpy or extension array)
        self._text: dict = {}  # QI -> (distinct values, their code per group) or None

    @property
    def columns(self) -> list:
        return list(self.per_group)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.groups), len(self.per_group))

    def column(self, c: Any) -> pd.Series:
        """The output column ``c``: its group's value on every row, on the table's index."""
        values = self.per_group[c]
        if c not in self._text:
            self._text[c] = _distinct_text(values, len(self.groups))
        text = self._text[c]
        # a gather of the group values: no length-n index is built and then dropped; the
        # dtype is given, so that pandas >= 3 does not infer 'str' for an object column
        taken = (values.take(self.groups) if text is None
                 else text[0].take(text[1].take(self.groups)))
        return pd.Series(taken, index=self.index, name=c, dtype=values.dtype, copy=False)

    __getitem__ = column  # what the verification reads: ``table[c]`` and ``table.shape``

    def new_frame(self, frame: pd.DataFrame, threads: Any = None) -> pd.DataFrame:
        """A copy of ``frame`` with the recoded QI columns (non-QI columns shared where
        copy-on-write makes that safe, see :func:`_shallow_copy`). ``threads``: an executor
        of :func:`anonml._threads.column_threads` that builds the columns ahead, or None."""
        return self._assign(_shallow_copy(frame), threads)

    def write_into(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Replace ``frame``'s QI columns by the recoded ones, in place, one at a time: each
        old column is released (unless something else holds it) before the next new one is
        built, so the table never holds two copies of its QI columns. Plain column
        assignments: nothing in this loop checks or casts (:func:`recode_plan` did)."""
        return self._assign(frame)

    def _assign(self, target: pd.DataFrame, threads: Any = None) -> pd.DataFrame:
        """Assign every recoded QI column to ``target``, one at a time, with small pages for
        the new columns (see :func:`~anonml._utils.small_pages`); after each, the freed pages
        (the column's temporaries, and the old column where nothing else holds it) go back.
        With ``threads`` (a new table only: :meth:`write_into` builds one column at a time,
        after the one it replaces is gone) the next columns are built meanwhile."""
        cols = list(self.per_group)
        with small_pages(len(self.groups)):
            for c, column in zip(cols, _ordered(threads, self.column, cols)):
                target[c] = column
                del column
                release_free_memory(len(self.groups))
        return target


#: rows from which a text column is gathered through its distinct values (:func:`_distinct_text`)
_TEXT_MIN_ROWS = 1 << 16


def _distinct_text(values: Any, n_rows: int) -> tuple | None:
    """A pyarrow-backed text column's values per group as its distinct values (``values``'
    own type: a pandas array, missing values included as one of them) and each group's code
    into them, in the narrowest integer type; None for other columns, fewer than
    ``_TEXT_MIN_ROWS`` rows, or more than a quarter of the groups distinct.

    Then :meth:`Recoding.column` gathers the rows' codes from a table of a byte or two per
    group and the strings from a table of a few entries, instead of the strings from one
    entry per group, a table that outgrows a core's L2 cache past ~100,000 groups. Alone, at
    20M rows and 118,229 groups, 41-98 ns a row became 12-14 (13 either way with 7,107
    groups); the Dask write stage at 100M rows took 28-34 s instead of 34-48; within an
    in-memory fit no change was measurable (BENCHMARKS.md, "Session 16"). The same values and
    dtype: both gathers are pandas' own ``take``."""
    if n_rows < _TEXT_MIN_ROWS or not isinstance(values, pd.arrays.ArrowStringArray) \
            or not len(values):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    from anonml.privacy._k_anonymity import first_of_codes

    arr = values.__arrow_array__()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr, null_encoding="encode")  # codes by first appearance
    d = len(enc.dictionary)
    if 4 * d > len(values):
        return None
    codes = enc.indices.to_numpy(zero_copy_only=False)
    first = first_of_codes(codes)  # each distinct value's first group
    narrow = np.int8 if d <= 127 else np.int16 if d <= 32767 else np.int32
    return values.take(first), codes.astype(narrow)


def recode_plan(
    frame: pd.DataFrame,
    qi: Sequence[Any],
    groups: np.ndarray,
    representatives: pd.DataFrame,
    *,
    cast: bool = True,
) -> Recoding:
    """Each QI's output value per group, in the output dtype (see :func:`recode`).

    The casts are done on the representatives of the groups that occur in ``groups`` (all of
    them in a fit), which gives the same values and dtypes as casting the gathered rows: a
    cast acts value by value, and the dtype's choices (a nullable twin when a value is
    missing, the categories a category column gains) look only at the values that occur.
    """
    groups = np.asarray(groups)
    n_groups = representatives.shape[0]
    used = None
    if groups.size and n_groups:
        present = np.bincount(groups, minlength=n_groups) > 0
        if not present.all():  # transform of a few rows: the other groups' values do not count
            used = np.flatnonzero(present)
    per_group = {}
    for c in qi:
        col = representatives[c].reset_index(drop=True)
        seen = col if used is None else col.iloc[used].reset_index(drop=True)
        if not cast:
            values = seen.to_numpy(dtype=object)
        else:
            target = frame[c].dtype
            if isinstance(target, np.dtype) and seen.isna().any():  # suppressed: missing values
                target = _nullable(target)
            if isinstance(target, pd.CategoricalDtype):
                extra = _new_categories(seen, target, groups, used)
                if len(extra):
                    target = pd.CategoricalDtype(target.categories.append(extra), target.ordered)
                seen = seen.astype(target)
            elif seen.dtype != target:
                seen = seen.astype(target)
            values = seen.to_numpy() if isinstance(seen.dtype, np.dtype) else seen.array
        if used is not None:  # back to one entry per group id (the absent ones never read)
            where = np.zeros(n_groups, dtype=np.intp)
            where[used] = np.arange(used.size)
            values = values.take(where)
        per_group[c] = values
    return Recoding(groups, frame.index, per_group)


def _new_categories(seen: pd.Series, target: pd.CategoricalDtype, groups: np.ndarray,
                    used: np.ndarray | None) -> pd.Index:
    """The values of ``seen`` (one per used group) that ``target`` lacks, in the order the
    recoded rows would show them: ``Index.difference`` sorts them when it can, and keeps the
    order of first appearance among the rows when it cannot, so that order is rebuilt from
    the first row of each group (only when two or more values are new)."""
    values = seen.dropna().to_numpy(dtype=object)
    extra = pd.Index(pd.unique(values)).difference(target.categories)
    if len(extra) < 2:
        return extra
    n_groups = len(seen) if used is None else int(used.max()) + 1
    first = np.full(n_groups, groups.size, dtype=np.int64)
    np.minimum.at(first, groups, np.arange(groups.size))  # the first row of every group
    ids = np.arange(len(seen)) if used is None else used
    by_first = np.argsort(first[ids], kind="stable")
    ordered = seen.iloc[by_first]
    return pd.Index(pd.unique(ordered.dropna().to_numpy(dtype=object))).difference(
        target.categories)


def recode(
    frame: pd.DataFrame,
    qi: Sequence[Any],
    groups: np.ndarray,
    representatives: pd.DataFrame,
    *,
    cast: bool = True,
) -> pd.DataFrame:
    """Copy of ``frame`` whose QI values are those of each row's group representative.

    Non-QI columns, the column order and the index are unchanged. With ``cast`` (representative
    records), a QI column keeps the dtype of ``frame`` where the representatives' values fit it
    (a category column gains the categories it lacks; an integer or bool column holding
    suppressed, missing values becomes its pandas nullable twin, ``Int64``, ``UInt64``, ...,
    ``boolean``, so that every integer keeps its exact value). Without it (generalized labels)
    the QI columns hold text. ``recode_plan(...).write_into(frame)`` writes the same columns into
    ``frame`` itself.
    """
    return recode_plan(frame, qi, groups, representatives, cast=cast).new_frame(frame)


def _shallow_copy(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` that shares its column arrays where that is safe.

    With copy-on-write (always on in pandas >= 3, opt-in in pandas 2) the non-QI columns are
    shared and every QI column is replaced, not written into, so no column is copied in vain;
    without it, a deep copy as before.
    """
    if int(pd.__version__.split(".")[0]) >= 3 or pd.get_option("mode.copy_on_write") is True:
        return frame.copy(deep=False)
    return frame.copy()


def _nullable(dtype: np.dtype) -> Any:
    """The pandas dtype that holds ``dtype``'s values exactly plus missing values."""
    if dtype.kind in "iu":
        name = f"{'U' if dtype.kind == 'u' else ''}Int{8 * dtype.itemsize}"  # Int64, UInt8, ...
        return pd.api.types.pandas_dtype(name)
    if dtype.kind == "b":
        return pd.BooleanDtype()
    return dtype


def verify_k_anonymity(table: pd.DataFrame, qi: Sequence[Any], k: int) -> int:
    """Independent check: return the smallest class size, or raise if it is below ``k``."""
    smallest = k_anonymity(table, qi)
    if smallest < k:  # (the violating classes are listed only then)
        _, violations = k_anonymity(table, qi, k=k, return_violations=True)
        raise PrivacyViolationError(
            f"internal error: the output has {len(violations)} equivalence classes smaller than "
            f"k={k} (smallest {smallest}); nothing was returned; please report this with the "
            "parameters used"
        )
    return smallest


def verify_model(
    table: pd.DataFrame, qi: Sequence[Any], model: PrivacyModel, hierarchies: dict | None = None
) -> dict:
    """Independent check of l-diversity / t-closeness on the output table.

    Returns the achieved values (``{"l": ..., "t": ...}``, empty for k only), or raises
    :class:`~anonml._errors.PrivacyViolationError`.
    """
    achieved: dict = {}
    if model.l is not None:
        got = l_diversity(table, qi, model.sensitive, kind=model.l_kind, c=model.c)
        achieved["l"] = got
        if got < model.l * (1 - 1e-9):
            raise PrivacyViolationError(
                f"internal error: the output is only {model.l_kind} {got:g}-diverse in "
                f"{model.sensitive!r}, not l={model.l:g}; nothing was returned; please report this"
            )
    if model.t is not None:
        h = (hierarchies or {}).get(model.sensitive)
        got = t_closeness(table, qi, model.sensitive, distance=model.distance, hierarchy=h)
        achieved["t"] = got
        if got > model.t + 1e-9:
            raise PrivacyViolationError(
                f"internal error: the output is only {got:.4g}-close in {model.sensitive!r}, not "
                f"t={model.t:g}; nothing was returned; please report this"
            )
    return achieved


def verify_recoding(
    plan: Recoding,
    qi: Sequence[Any],
    k: int,
    model: PrivacyModel,
    hierarchies: dict | None = None,
    sensitive: pd.Series | np.ndarray | None = None,
    *,
    threads: Any = None,
) -> tuple[int, dict]:
    """:func:`verify_k_anonymity` and :func:`verify_model` on an output that is not built yet.

    The same independent check, from the output's own values: the equivalence classes are
    derived (by :func:`anonml.privacy._k_anonymity._classes`, as :func:`k_anonymity` does)
    from the recoded QI columns, each built from ``plan`` exactly as it will be written,
    coded, and dropped before the next, so the check holds one output column at a time, not
    the table. l and t are then measured on those classes (their one column of class ids
    stands for the QI columns: the same rows share a class) beside ``sensitive``, the
    sensitive values by row (a column of the input, which recoding does not change, or the
    label). This is what lets ``copy=False`` check everything before its first write.
    ``threads`` (:func:`anonml._threads.column_threads`): the next columns are built and
    coded meanwhile, one per thread; they are folded in order.

    Returns
    -------
    (int, dict)
        The smallest class size and the achieved ``{"l": ..., "t": ...}``, or raises
        :class:`~anonml._errors.PrivacyViolationError` with the messages of the two checks.
    """
    from anonml.privacy._k_anonymity import _classes

    # (each recoded column is dropped once coded; the fit runs this inside
    # reuse_freed_memory, so the next column's temporaries reuse its pages)
    class_of_row, sizes = _classes(plan, list(qi), threads)
    smallest = int(sizes.min()) if sizes.size else 0
    if smallest < k:
        raise PrivacyViolationError(
            f"internal error: the output has {int((sizes < k).sum())} equivalence classes "
            f"smaller than k={k} (smallest {smallest}); nothing was returned; please report "
            "this with the parameters used"
        )
    if model.l is None and model.t is None:
        return smallest, {}
    name = "__class__" if model.sensitive != "__class__" else "__classes__"
    table = pd.DataFrame({name: class_of_row}, index=plan.index)
    table[model.sensitive] = sensitive
    del class_of_row
    return smallest, verify_model(table, [name], model, hierarchies)
