"""The equivalence classes of a written dataset and their sizes, counted on the cluster from
the written files alone (:func:`anonml.dask._verify.verify`; issue 21, session 9).

A file's rows hold nearly every class (rows keep their order, and the classes are spread over
the whole dataset), so a groupby that keeps the QI *values* of each file's classes and
shuffles them (Dask's ``groupby(qi).size(split_out=...)``, used before) moves and re-groups
files x classes rows of text: at 100M rows (50 files, 576,143 classes) 29M rows, a cost per
row that grew with the dataset (verification 0.3 s per 1M rows at 10M, 0.7 at 100M).

Here each file is reduced to its distinct QI tuples as small integer codes into per-column
lists of values (the text columns read as Arrow dictionaries, so no string is built per row)
with their row counts; the reduction puts the value lists of its parts together (values
compared as values, a missing value as its own, as ``groupby(dropna=False)`` does), maps every
part's codes into them, and adds the counts of equal tuples. Exact: no hashing of the values.

A tree of such reductions moves files x classes tuples of codes through about log8(files)
merges, the last on one worker (at 100M rows 33M tuples, 11 s of task time, 0.11 s per 1M
rows against 0.00 at 10M; BENCHMARKS.md "Session 19"; at 1B rows its last merge alone would
hold gigabytes). So :func:`class_sizes` joins only the files' value lists (a few values per
column, by a tree reduction on the workers; the client sees their lengths), gives every
tuple one int64 key in the joined codes (the mixed radix of :func:`_tuple_keys`, now the
same in every file), and sends each file's (key, count) pairs to buckets by the key's
Fibonacci hash, through Dask's own shuffle: one merge per bucket, in parallel, each
returning its row count, smallest class and class count. When the joined codes would
overflow an int64 key, the tree of merges is used as before. Still exact: the keys are
codes, not hashes of values; the hash only picks a tuple's bucket.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["file_classes", "merge_classes", "class_sizes", "join_value_lists", "joined_values",
           "bucket_keys", "bucket_sizes", "n_buckets"]

#: about how many (key, count) pairs one bucket of :func:`class_sizes` merges
BUCKET_TUPLES = 4_000_000


def _tuple_keys(codes: list[np.ndarray], widths: list[int]) -> np.ndarray:
    """One int64 per row, equal exactly when all its codes are (the mixed-radix fold of
    :func:`anonml.privacy._k_anonymity.fold_codes`, as the in-memory check's classes)."""
    from anonml.privacy._k_anonymity import fold_codes

    key = np.zeros(codes[0].size if codes else 0, dtype=np.int64)
    span = 1
    for c, w in zip(codes, widths):
        key, span = fold_codes(key, span, c, w)
    return key


def _distinct(codes: list[np.ndarray], widths: list[int], weights: np.ndarray | None,
              values: list) -> dict:
    from anonml.privacy._k_anonymity import first_of_codes

    key = _tuple_keys(codes, widths)
    # by hashing, not sorting: a third of np.unique's time on 2M keys (BENCHMARKS.md,
    # "Session 11"); the tuples come in the order of their first row, which no caller uses
    inv, uniq = pd.factorize(key)
    first = first_of_codes(inv)  # each tuple's first row
    # counts added as float64: exact below 2**53 rows
    counts = np.bincount(inv, weights=weights, minlength=len(uniq))
    return {"values": values, "codes": [c[first].astype(np.int32) for c in codes],
            "counts": counts.astype(np.int64)}


def _column_codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a column's rows into its distinct values (an object array, missing values
    left out), a missing value coded as ``len(values)``."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    values = np.asarray(uniques, dtype=object)
    codes = np.where(codes < 0, values.size, codes)
    return codes.astype(np.int64), values


def _dictionary_codes(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_column_codes` of a column read as an Arrow dictionary (a ChunkedArray)."""
    import pyarrow as pa

    col = col.unify_dictionaries()
    if not col.num_chunks:
        return np.zeros(0, np.int64), np.zeros(0, dtype=object)
    idx = np.concatenate([ch.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                          .astype(np.int64) for ch in col.chunks])
    dictionary = col.chunk(0).dictionary
    if not isinstance(dictionary, pa.Array) or not len(dictionary):
        return np.full(idx.size, 0, np.int64), np.zeros(0, dtype=object)
    # the dictionary may repeat a value: codes into its distinct values
    dcodes, values = _column_codes(pd.Series(dictionary.to_pandas(), dtype=object))
    return np.where(idx < 0, values.size, dcodes[np.maximum(idx, 0)]), values


def file_classes(path: str, qi: list) -> dict:
    """The distinct QI tuples of one written Parquet file with their row counts: ``values``
    (per QI, its distinct non-missing values), ``codes`` (per QI, each tuple's code into
    them, ``len(values)`` for missing) and ``counts``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        text = [c for c in qi if pa.types.is_string(schema.field(c).type)
                or pa.types.is_large_string(schema.field(c).type)]
        table = pq.read_table(path, columns=list(qi), read_dictionary=text or None)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - Arrow's errors vary: one line naming the file
        import socket

        from anonml._errors import OutputError

        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OutputError(
            f"the written file {path!r} could not be read back for the verification by the "
            f"Dask worker on {socket.gethostname()!r} ({type(exc).__name__}: {why[:200]}); "
            "nothing was written; fix: write the output to storage that every worker and "
            "the client reach at the same path (a shared file system)") from None
    codes, values = [], []
    for c in qi:
        col = table.column(c)
        if pa.types.is_dictionary(col.type):  # the dictionary's codes: no string per row
            code, vals = _dictionary_codes(col)
        else:
            code, vals = _column_codes(col.to_pandas())
        codes.append(code)
        values.append(vals)
    del table
    return _distinct(codes, [v.size + 1 for v in values], None, values)


def merge_classes(*parts: dict) -> dict:
    """The distinct tuples of several :func:`file_classes` results (or merges), counts
    added: each QI's value lists joined, every part's codes mapped into the joined list."""
    joined = joined_values([p["values"] for p in parts])
    codes = [np.concatenate([_joined_codes(index, p["values"][j], p["codes"][j])
                             for p in parts]) for j, index in enumerate(joined)]
    weights = np.concatenate([p["counts"] for p in parts]).astype(np.float64)
    values = [np.asarray(index, dtype=object) for index in joined]
    return _distinct(codes, [v.size + 1 for v in values], weights, values)


def _joined_codes(index: pd.Index, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """A part's ``codes`` into its own ``values`` (``len(values)``: missing) as codes into the
    joined ``index`` of :func:`joined_values` (``len(index)``: missing), int64."""
    where = index.get_indexer(pd.Index(values, dtype=object))
    if (where < 0).any():  # the joined values hold every part's: a bug, never a class
        raise RuntimeError("internal error: a value missing from the joined lists of the "
                           "verification; please report")
    return np.append(where, index.size).astype(np.int64)[codes]  # missing stays missing


def _value_lists(part: dict) -> dict:
    """A :func:`file_classes` result's value lists and its number of tuples, for
    :func:`join_value_lists` (the codes stay where they are)."""
    return {"values": part["values"], "tuples": int(part["counts"].size)}


def join_value_lists(*items: dict) -> dict:
    """:func:`_value_lists` of several files (or joins) together: per QI, the distinct values
    of all of them (values compared as :func:`merge_classes` compares them), and the tuples
    added up."""
    return {"values": [np.asarray(v, dtype=object) for v in
                       joined_values([item["values"] for item in items])],
            "tuples": sum(item["tuples"] for item in items)}


def joined_values(lists: list) -> list:
    """Per QI, the distinct values of all the files' value lists (``lists``: per file, its
    per-QI lists) as an object ``pd.Index``, compared as :func:`merge_classes` compares them."""
    return [pd.Index(np.concatenate([v[j] for v in lists]), dtype=object).unique()
            for j in range(len(lists[0]))]


def _widths(joined: dict) -> tuple[list, int]:
    """The number of joined values of each QI, and the files' tuples (for the client)."""
    return [len(v) for v in joined["values"]], joined["tuples"]


def _joined_span(widths: list) -> int | None:
    """The bound of the joined mixed-radix key (each QI's joined values and a missing code;
    ``widths``: the numbers of joined values), or None when it would not fit
    :data:`anonml.privacy._k_anonymity._MAX_CODE`."""
    from anonml.privacy._k_anonymity import _MAX_CODE

    span = 1
    for width in widths:
        span *= int(width) + 1
        if span > _MAX_CODE:
            return None
    return span


def _bucket_of(key: np.ndarray, bits: int) -> np.ndarray:
    """Bucket of each key, 0 .. 2**bits - 1: the top bits of its Fibonacci hash (Knuth, TAOCP
    vol. 3, 6.4), which spreads consecutive keys over all the buckets."""
    if bits == 0:
        return np.zeros(key.size, dtype=np.int64)
    h = key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # wraps modulo 2**64
    return (h >> np.uint64(64 - bits)).astype(np.int64)


def bucket_keys(part: dict, joined: dict, bits: int) -> pd.DataFrame:
    """A :func:`file_classes` result's tuples as (key, count) pairs in the codes of ``joined``
    (:func:`join_value_lists`: every file's keys comparable), with each pair's bucket (0 ..
    ``2**bits`` - 1) in ``"_partitions"``, the column Dask's shuffle sends it by
    (:func:`~anonml.dask._balance.shuffle_to`)."""
    index = [pd.Index(v, dtype=object) for v in joined["values"]]
    widths = [len(i) + 1 for i in index]
    if _joined_span([len(i) for i in index]) is None:  # _tuple_keys would renumber per file
        raise RuntimeError("internal error: the joined key of the verification overflows; "
                           "please report")
    key = _tuple_keys([_joined_codes(i, part["values"][j], part["codes"][j])
                       for j, i in enumerate(index)], widths)
    return pd.DataFrame({"key": key, "count": np.asarray(part["counts"], dtype=np.int64),
                         "_partitions": _bucket_of(key, bits)})


#: the frame of :func:`bucket_keys` and of :func:`bucket_sizes`, no row
_KEYS_META = pd.DataFrame({"key": np.zeros(0, np.int64), "count": np.zeros(0, np.int64),
                           "_partitions": np.zeros(0, np.int64)})
_SIZES_META = pd.DataFrame({"rows": np.zeros(0, np.int64), "smallest": np.zeros(0, np.int64),
                            "classes": np.zeros(0, np.int64)})


def bucket_sizes(frame: pd.DataFrame) -> pd.DataFrame:
    """One bucket's classes from the (key, count) pairs of every file that Dask's shuffle
    put together: one row of ``rows``, ``smallest`` (class) and ``classes`` (0, 0, 0 when the
    bucket holds none)."""
    keys = frame["key"].to_numpy()
    if not keys.size:
        return pd.DataFrame({"rows": [0], "smallest": [0], "classes": [0]}, dtype=np.int64)
    inv, uniq = pd.factorize(keys)
    # counts added as float64: exact below 2**53 rows
    sizes = np.bincount(inv, weights=frame["count"].to_numpy(dtype=np.float64),
                        minlength=len(uniq))
    return pd.DataFrame({"rows": [sizes.sum()], "smallest": [sizes.min()],
                         "classes": [len(uniq)]}).astype(np.int64)


def n_buckets(tuples: int) -> int:
    """How many buckets :func:`class_sizes` sends ``tuples`` (key, count) pairs to: a power
    of two, about :data:`BUCKET_TUPLES` a bucket, at least one."""
    return 1 << int(max(1, -(-int(tuples) // BUCKET_TUPLES)) - 1).bit_length()


def class_sizes(client: Any, files: list, qi: list) -> tuple[int, int, int]:
    """``(rows, smallest class, classes)`` over the written ``files``: each file's
    :func:`file_classes`, their value lists joined by a tree reduction on the workers
    (:func:`join_value_lists`; the client gets only their lengths), then each file's (key,
    count) pairs (:func:`bucket_keys`) sent to their buckets by Dask's own shuffle (staged
    past 32 files and buckets, so the tasks grow as files x log(buckets), not files x
    buckets) and counted there (:func:`bucket_sizes`); a tree reduction of
    :func:`merge_classes` when the joined key would overflow."""
    import dask.dataframe as dd

    from anonml.dask._balance import shuffle_method, shuffle_to
    from anonml.dask._tree import tree_reduce

    if not files:
        return 0, 0, 0
    parts = [client.submit(file_classes, f, list(qi), pure=False) for f in files]
    joined = tree_reduce(client, [client.submit(_value_lists, p, pure=False) for p in parts],
                         join_value_lists)
    widths, tuples = client.gather(client.submit(_widths, joined, pure=False))
    if _joined_span(widths) is None:  # the tree of merges, whose codes are renumbered
        del joined
        counts = client.gather(tree_reduce(client, parts, merge_classes))["counts"]
        return (int(counts.sum()), int(counts.min()) if counts.size else 0, int(counts.size))
    n_out = n_buckets(tuples)
    bits = n_out.bit_length() - 1
    keyed = dd.from_delayed([client.submit(bucket_keys, p, joined, bits, pure=False)
                             for p in parts], meta=_KEYS_META, verify_meta=False)
    del parts, joined
    # 24 bytes a pair: key, count and bucket
    shuffled = shuffle_to(keyed, "_partitions", n_out, shuffle_method(client, 24 * int(tuples)))
    got = client.gather(client.compute(shuffled.map_partitions(bucket_sizes, meta=_SIZES_META)))
    held = got[got["classes"] > 0]
    return (int(got["rows"].sum()), int(held["smallest"].min()) if held.shape[0] else 0,
            int(got["classes"].sum()))
