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
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["file_classes", "merge_classes", "class_sizes"]

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
    m = len(parts[0]["values"])
    values, codes = [], [[] for _ in range(m)]
    for j in range(m):
        joined = pd.Index(np.concatenate([p["values"][j] for p in parts]), dtype=object).unique()
        values.append(np.asarray(joined, dtype=object))
        for p in parts:
            where = joined.get_indexer(pd.Index(p["values"][j], dtype=object))
            where = np.append(where, joined.size)  # missing stays missing
            codes[j].append(where[p["codes"][j]])
    codes = [np.concatenate(c).astype(np.int64) for c in codes]
    weights = np.concatenate([p["counts"] for p in parts]).astype(np.float64)
    return _distinct(codes, [v.size + 1 for v in values], weights, values)


def class_sizes(client: Any, files: list, qi: list) -> np.ndarray:
    """Every class's row count over the written ``files`` (a tree reduction of
    :func:`merge_classes` over the files' :func:`file_classes`)."""
    from anonml.dask._tree import tree_reduce

    parts = [client.submit(file_classes, f, list(qi), pure=False) for f in files]
    return client.gather(tree_reduce(client, parts, merge_classes))["counts"]
