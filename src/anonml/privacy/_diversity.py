"""l-diversity and t-closeness, as pure functions of a released table and as vectorized kernels.

l-diversity (Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam, "l-Diversity: Privacy beyond
k-anonymity", ICDE 2006 / TKDD 2007). An equivalence class is

* *distinct* l-diverse when it holds at least l distinct sensitive values;
* *entropy* l-diverse when the entropy of its sensitive values, ``-sum p log p``, is at least
  ``log l``;
* *recursive (c, l)-diverse* when, with the counts of its sensitive values sorted in
  **decreasing** order ``r1 >= r2 >= ... >= rm``, ``r1 < c * (r_l + r_(l+1) + ... + r_m)``: the
  most frequent value is not too frequent compared with the l-1 .. m least frequent ones.
  (pycanon sorts the counts increasingly, which tests a different and wrong condition; the
  tests check this definition on hand-made tables.)

t-closeness (Li, Li & Venkatasubramanian, "t-Closeness: Privacy beyond k-anonymity and
l-diversity", ICDE 2007): the Earth Mover's Distance (EMD) between the distribution P of the
sensitive values in a class and their distribution Q in the whole table is at most t, under

* *equal* distance (every two values at distance 1, for categorical values):
  ``EMD = 1/2 * sum |p_i - q_i|``;
* *ordered* distance (numeric values, rank i and j at distance |i - j| / (m - 1)):
  ``EMD = 1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)|``;
* *hierarchical* distance (categorical values under a generalization hierarchy of height H, two
  leaves at the height of their lowest common ancestor divided by H):
  ``EMD = sum over internal nodes N of height(N)/H * min(pos(N), neg(N))``, where ``extra(N)``
  is the sum of ``p - q`` over the leaves below N and ``pos``/``neg`` sum the positive and
  negative ``extra`` of N's children (Li et al., Sec. 4.2).

Missing sensitive values count as a value of their own, as in :mod:`anonml.privacy` elsewhere.
The kernels take a (G, m) matrix of counts, one row per class, so partitioners can test many
candidate groups at once (:mod:`anonml.privacy._constraints`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError, names_list
from anonml._utils import check_real
from anonml.encoding import as_frame, resolve_columns

__all__ = [
    "l_diversity",
    "t_closeness",
    "L_KINDS",
    "T_DISTANCES",
    "distinct_l",
    "entropy_l",
    "recursive_l",
    "emd",
    "sensitive_codes",
]

L_KINDS = ("distinct", "entropy", "recursive")
T_DISTANCES = ("equal", "ordered", "hierarchical")


# -- kernels on a (G, m) count matrix --------------------------------------------------------------
def distinct_l(counts: np.ndarray) -> np.ndarray:
    """Number of distinct sensitive values of each class."""
    return (np.asarray(counts) > 0).sum(axis=1)


def entropy_l(counts: np.ndarray) -> np.ndarray:
    """``exp(entropy)`` of each class: the largest l for which it is entropy l-diverse."""
    counts = np.asarray(counts, dtype=np.float64)
    size = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, size, out=np.zeros_like(counts), where=size > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(p), 0.0)
    return np.exp(-plogp.sum(axis=1))


def recursive_l(counts: np.ndarray, c: float) -> np.ndarray:
    """Largest l for which each class is recursive (c, l)-diverse (0 when not even l = 1).

    With the counts sorted decreasingly, ``r1 < c * (r_l + ... + r_m)``. The tail sum shrinks
    as l grows, so the classes's l is the number of tail sums that still exceed ``r1 / c``.
    """
    r = -np.sort(-np.asarray(counts, dtype=np.float64), axis=1)  # decreasing
    tails = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tails[:, j] = r_(j+1) + ... + r_m
    return (c * tails > r[:, :1]).sum(axis=1)


def emd(
    counts: np.ndarray,
    q: np.ndarray,
    distance: str,
    parents: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """Earth Mover's Distance of each class's sensitive distribution to the table's ``q``.

    Parameters
    ----------
    counts : ndarray, shape (G, m)
        Rows of counts; for ``"ordered"`` the columns are in increasing value order, for
        ``"hierarchical"`` in the hierarchy's leaf order.
    q : ndarray, shape (m,)
        The whole table's distribution.
    distance : {"equal", "ordered", "hierarchical"}
    parents : list of ndarray, for "hierarchical"
        ``parents[j]`` maps each node of level j to its parent at level j + 1, for
        j = 0 .. H-1 (level 0 = the m leaves).
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, size, out=np.zeros_like(counts), where=size > 0)
    diff = p - np.asarray(q, dtype=np.float64)[None, :]
    m = diff.shape[1]
    if distance == "equal":
        return 0.5 * np.abs(diff).sum(axis=1)
    if distance == "ordered":
        if m < 2:
            return np.zeros(diff.shape[0])
        return np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / (m - 1)
    if distance == "hierarchical":
        if parents is None:
            raise InputError("hierarchical distance needs the sensitive attribute's hierarchy")
        height = len(parents)
        total = np.zeros(diff.shape[0])
        # one contiguous vector per node (over the classes): the sums over a parent's children
        # are then whole-vector additions
        extra = [np.ascontiguousarray(diff[:, i]) for i in range(m)]  # nodes of this level
        for level, parent in enumerate(parents, start=1):
            n_up = int(parent.max()) + 1 if parent.size else 0
            up = [np.zeros(diff.shape[0]) for _ in range(n_up)]
            pos = [np.zeros(diff.shape[0]) for _ in range(n_up)]
            for child, node in enumerate(parent.tolist()):
                up[node] += extra[child]
                pos[node] += np.maximum(extra[child], 0.0)
            weight = level / height
            for node in range(n_up):
                neg = pos[node] - up[node]  # sum of the negative extras, as a positive number
                total += weight * np.minimum(pos[node], neg)
            extra = up
        return total
    raise InputError(f"distance={distance!r}; use one of {', '.join(T_DISTANCES)}")


# -- table-level functions ---------------------------------------------------------------------------
def sensitive_codes(
    column: pd.Series, distance: str | None = None, hierarchy: Any = None
) -> tuple[np.ndarray, int, list[np.ndarray] | None]:
    """Code the sensitive values 0..m-1 in the order the distance needs.

    Returns (codes per row, m, parents for the hierarchical distance or None). Numeric and
    ordered categorical values are coded in increasing order; others sorted by their text;
    missing values get the last code. With a hierarchy, codes are leaf indices in hierarchy
    order and m is its number of leaves.
    """
    if distance == "hierarchical":
        if hierarchy is None:
            raise InputError(
                f"t_distance='hierarchical' needs a hierarchy for sensitive column "
                f"{column.name!r}; pass hierarchies={{{column.name!r}: Hierarchy(...)}}"
            )
        codes = np.asarray(hierarchy.leaf_codes(column.to_numpy(dtype=object)), dtype=np.int64)
        ids = np.asarray(hierarchy.node_ids)
        parents = []
        for j in range(1, ids.shape[1]):
            parent = np.zeros(int(ids[:, j - 1].max()) + 1, dtype=np.int64)
            parent[ids[:, j - 1]] = ids[:, j]
            parents.append(parent)
        return codes, int(hierarchy.n_leaves), parents
    try:
        codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=True)
    except TypeError:
        codes, uniques = pd.factorize(column.astype(str), sort=True, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    m = len(uniques)
    if (codes < 0).any():
        codes = np.where(codes < 0, m, codes)
        m += 1
    return codes, max(m, 1), None


def _class_counts(frame: pd.DataFrame, qi: list, codes: np.ndarray, m: int) -> np.ndarray:
    from anonml.privacy._k_anonymity import _classes

    class_of_row, sizes = _classes(frame, qi)
    n_classes = sizes.size
    return np.bincount(class_of_row * m + codes, minlength=n_classes * m).reshape(n_classes, m)


def _check_sensitive(frame: pd.DataFrame, qi: list, sensitive: Any) -> None:
    if sensitive not in set(frame.columns):
        raise InputError(
            f"sensitive attribute {sensitive!r} is not a column; columns are: "
            f"{names_list(frame.columns)}"
        )
    if sensitive in set(qi):
        raise InputError(
            f"sensitive attribute {sensitive!r} is also a quasi-identifier; remove it from the QIs"
        )


def l_diversity(
    table: Any,
    quasi_identifiers: Sequence[Any] | None,
    sensitive: Any,
    *,
    kind: str = "distinct",
    c: float | None = None,
) -> float:
    """The l for which ``table`` is l-diverse in ``sensitive``: the worst class's l.

    Parameters
    ----------
    table : DataFrame or 2-D array
        The released table.
    quasi_identifiers : list
        QI columns; they define the equivalence classes.
    sensitive : column name
        The sensitive attribute (not a QI).
    kind : {"distinct", "entropy", "recursive"}, default "distinct"
        ``"distinct"``: the smallest number of distinct sensitive values in a class (an int).
        ``"entropy"``: the smallest ``exp(entropy)`` of a class (a float; the table is entropy
        l-diverse for every l up to it). ``"recursive"``: the largest l for which every class is
        recursive (c, l)-diverse (an int, 0 if some class fails even l = 1); needs ``c``.
    c : float, for kind="recursive"

    Returns
    -------
    float
        The l achieved (0 for an empty table).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"zip": [1, 1, 1, 2, 2, 2], "disease": ["a", "a", "b", "a", "b", "c"]})
    >>> l_diversity(t, ["zip"], "disease")
    2
    >>> l_diversity(t, ["zip"], "disease", kind="recursive", c=2)  # class 1: 2 < 2*1 fails l=2
    1
    """
    if kind not in L_KINDS:
        raise InputError(f"kind={kind!r}; use one of {', '.join(L_KINDS)}")
    if kind == "recursive":
        c = check_c(c)
    frame, _ = as_frame(table, what="table")
    qi = resolve_columns(frame, quasi_identifiers)
    _check_sensitive(frame, qi, sensitive)
    if frame.shape[0] == 0:
        return 0
    codes, m, _ = sensitive_codes(frame[sensitive])
    counts = _class_counts(frame, qi, codes, m)
    if kind == "distinct":
        return int(distinct_l(counts).min())
    if kind == "entropy":
        return float(entropy_l(counts).min())
    return int(recursive_l(counts, c).min())


def t_closeness(
    table: Any,
    quasi_identifiers: Sequence[Any] | None,
    sensitive: Any,
    *,
    distance: str = "auto",
    hierarchy: Any = None,
) -> float:
    """The t for which ``table`` is t-close in ``sensitive``: the largest class EMD.

    Parameters
    ----------
    table, quasi_identifiers, sensitive
        As in :func:`l_diversity`; the distribution of ``sensitive`` over the whole table is
        the reference.
    distance : {"auto", "equal", "ordered", "hierarchical"}, default "auto"
        Ground distance of the EMD (module docstring). ``"auto"``: ordered for a numeric
        attribute, hierarchical when a hierarchy is given, else equal.
    hierarchy : anonml.hierarchies.Hierarchy, optional
        The sensitive attribute's hierarchy, for the hierarchical distance.

    Returns
    -------
    float
        The largest EMD of a class (0 for an empty table).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"zip": [1, 1, 2, 2], "disease": ["a", "a", "b", "b"]})
    >>> t_closeness(t, ["zip"], "disease")  # each class differs from (1/2, 1/2) by 1/2
    0.5
    """
    frame, _ = as_frame(table, what="table")
    qi = resolve_columns(frame, quasi_identifiers)
    _check_sensitive(frame, qi, sensitive)
    distance = resolve_distance(distance, frame[sensitive], hierarchy)
    if frame.shape[0] == 0:
        return 0.0
    codes, m, parents = sensitive_codes(frame[sensitive], distance, hierarchy)
    counts = _class_counts(frame, qi, codes, m)
    q = np.bincount(codes, minlength=m) / codes.size
    return float(emd(counts, q, distance, parents).max())


def resolve_distance(distance: str, column: pd.Series, hierarchy: Any) -> str:
    """Resolve ``"auto"`` and check the name; see :func:`t_closeness`."""
    if distance == "auto":
        if hierarchy is not None:
            return "hierarchical"
        numeric = pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
            column.dtype
        )
        ordered = isinstance(column.dtype, pd.CategoricalDtype) and column.dtype.ordered
        return "ordered" if numeric or ordered else "equal"
    if distance not in T_DISTANCES:
        raise InputError(
            f"t_distance={distance!r}; use 'auto' or one of {', '.join(T_DISTANCES)}"
        )
    return distance


def check_c(c: Any) -> float:
    """Validate the c of recursive (c, l)-diversity."""
    if c is None:
        raise InputError("recursive (c, l)-diversity needs c; pass e.g. c=3")
    return check_real("c", c, example=3)
