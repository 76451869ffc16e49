"""Independent verification of a written dataset on the cluster.

The equivalence classes are re-derived from the *written* Parquet files alone: k from the
classes' sizes counted file by file and added up by a tree reduction
(:mod:`anonml.dask._classes`); l-diversity and t-closeness from the per-class counts of the
sensitive value, after Dask's own shuffle on the QIs puts each class in one partition, with the
same count kernels as the in-memory checks (:mod:`anonml.privacy._diversity`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import PrivacyViolationError
from anonml.privacy._diversity import distinct_l, emd, entropy_l, recursive_l, resolve_distance

__all__ = ["verify", "class_stats"]


def _value_order(vc: pd.Series) -> list:
    """The sensitive values in increasing order (by text when they do not order), missing last."""
    vals = [v for v in vc.index if not pd.isna(v)]
    try:
        vals = sorted(vals)
    except TypeError:
        vals = sorted(vals, key=str)
    return vals


def class_stats(
    part: pd.DataFrame, qi: list, sensitive: Any, values: list, q: np.ndarray, distance: str | None,
    l_kind: str, c: float | None = None, coding: Any = None,
) -> pd.DataFrame:
    """Smallest l and largest t over the equivalence classes held whole by ``part``."""
    from anonml.privacy._k_anonymity import _classes

    if part.shape[0] == 0:
        return pd.DataFrame({"l": [np.inf], "t": [0.0]})
    m = len(values)
    idx = pd.Index(values, dtype=object).get_indexer(
        pd.Index(part[sensitive].to_numpy(dtype=object), dtype=object)
    )
    codes = np.where(idx < 0, m, idx).astype(np.int64)  # missing (the only value not listed)
    width = m + 1
    cls, sizes = _classes(part, qi)
    counts = np.bincount(cls * width + codes, minlength=sizes.size * width).reshape(sizes.size, width)
    if coding is not None:  # recursive l, hierarchical t: anonml.dask._privacy
        from anonml.dask._privacy import fold_counts

        counts = fold_counts(counts, coding)
    lv = (entropy_l(counts) if l_kind == "entropy" else recursive_l(counts, c)
          if l_kind == "recursive" else distinct_l(counts)).min()
    tv = 0.0
    if distance is not None:
        tv = float(emd(counts[:, : q.size], q, distance,
                       None if coding is None else coding.parents).max())
    return pd.DataFrame({"l": [float(lv)], "t": [tv]})


def verify(
    dd: Any, client: Any, path: str, qi: list, k: int, *, sensitive: Any = None,
    l: float | None = None, l_kind: str = "distinct", t: float | None = None,
    n_rows: int | None = None, c: float | None = None, t_distance: str = "auto",
    hierarchy: Any = None,
) -> tuple[int, dict]:
    """Check the written dataset at ``path``; return (smallest class, achieved l/t) or raise
    :class:`~anonml._errors.PrivacyViolationError`. Everything runs on ``client`` (a
    :class:`~anonml.dask._cluster.Watched` client), never on a default one."""
    from anonml.dask._classes import class_sizes
    from anonml.engine._dataset import list_files

    # the classes' sizes from each written file's distinct QI tuples (anonml.dask._classes);
    # the row count is their sum: one read of the files for both
    n, smallest, _ = class_sizes(client, list_files(path), qi)
    if n_rows is not None and n != n_rows:
        raise PrivacyViolationError(
            f"internal error: the output holds {n} rows, not {n_rows}; nothing was written"
        )
    if smallest < k:
        raise PrivacyViolationError(
            f"internal error: the output has an equivalence class of {smallest} < k={k} rows; "
            "nothing was written; please report this with the parameters used"
        )
    achieved: dict = {}
    if sensitive is None or (l is None and t is None):
        return smallest, achieved
    ddf = dd.read_parquet(path)
    sub = ddf[qi + [sensitive]]
    vc = client.gather(client.compute(sub[sensitive].value_counts(dropna=False)))
    values = _value_order(vc)
    total = float(vc.sum())
    q = np.array([vc.get(v, 0) for v in values], dtype=np.float64)
    n_missing = total - q.sum()
    distance = resolve_distance(t_distance, ddf._meta[sensitive], hierarchy) if t is not None \
        else None
    coding = None
    if l_kind == "recursive" or distance == "hierarchical":
        from anonml.dask._privacy import fold_counts, sensitive_coding

        coding = sensitive_coding(values, n_missing > 0, distance, hierarchy, sensitive)
        q = fold_counts(np.append(q, n_missing)[None, :], coding)[0]
    elif n_missing > 0:
        q = np.append(q, n_missing)
    q /= total
    stats = sub.shuffle(on=qi).map_partitions(
        class_stats, qi, sensitive, values, q, distance, l_kind, c, coding,
        meta=pd.DataFrame({"l": pd.Series(dtype=float), "t": pd.Series(dtype=float)}),
    )
    stats = client.gather(client.compute(stats))
    if l is not None:
        got = float(stats["l"].min())
        achieved["l"] = got
        if got < l * (1 - 1e-9):
            raise PrivacyViolationError(
                f"internal error: the output is only {l_kind} {got:g}-diverse in {sensitive!r}, "
                f"not l={l:g}; nothing was written; please report this"
            )
    if t is not None:
        got = float(stats["t"].max())
        achieved["t"] = got
        if got > t + 1e-9:
            raise PrivacyViolationError(
                f"internal error: the output is only {got:.4g}-close in {sensitive!r}, not "
                f"t={t:g}; nothing was written; please report this"
            )
    return smallest, achieved
