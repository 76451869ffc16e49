"""Information-loss (utility) metrics of a partition of a table into equivalence classes.

Every metric takes the *original* table and ``groups``, the equivalence class of each of its
rows (an anonymizer's ``groups_``, or ``anonml.privacy.equivalence_classes(output, qi)[0]``),
and measures how much the released classes blur the original values. Suppressed rows are
given by a boolean mask ``suppressed`` (an anonymizer's ``suppressed_``) or by a negative
class id; they belong to no class and count as fully generalized.

Notation: ``n`` rows in all, ``E`` an equivalence class (``G`` a group, ``cl`` a cluster: the
same thing in the three papers), ``|E|`` its size, ``d`` the number of quasi-identifiers
(QIs), ``S`` the set of suppressed rows.

=================================  =========================================================
metric                             definition
=================================  =========================================================
NCP (Xu et al. 2006)               ``NCP_A(G)`` per QI in [0, 1]; ``NCP(G) = sum_A w_A NCP_A(G)``
GCP (Ghinita et al. 2007)          ``(sum_G |G| NCP(G) + |S| d) / (n d)``, in [0, 1]
DM (Bayardo & Agrawal 2005)        ``sum_E |E|^2 + n |S|``
C_AVG (LeFevre et al. 2006)        ``(n - |S|) / #classes / k``
CM (Iyengar 2002)                  ``(#rows not of their class's majority label + |S|) / n``
GIL, NGIL (Campan & Truta 2009)    ``GIL = sum_cl |cl| IL(cl) + |S| d``; ``NGIL = GIL / (n d)``
=================================  =========================================================

Per-QI penalties. A numeric QI ``A`` without a hierarchy is measured by ranges:
``(max_G A - min_G A) / (max_T A - min_T A)``, where ``T`` is the whole table (0 for a
constant column), in NCP and GIL alike. A QI with a hierarchy (whatever its dtype) is measured
in its hierarchy through the class's lowest common ancestor ``u``:
``NCP_A(G) = |leaves(u)| / |leaves|`` (0 when ``u`` is a leaf, i.e. one distinct value) and
``GIL``'s ``height(u) / height(H)``. A categorical QI without a hierarchy is measured as set
recoding: ``NCP_A(G) = #distinct values in G / #distinct values in T`` when ``G`` holds more
than one value (else 0), and in GIL as a flat hierarchy ``value -> *`` (0 for one value, else 1).

Weights. ``weights`` (one non-negative number per QI, default 1 each) are rescaled to sum to
``d``: ``w_A = d * weight_A / sum(weight)``. Equal weights therefore give the unweighted
formulas of the papers, and GCP and NGIL stay in [0, 1]. Malle et al. (2016) use weights that
sum to 1 inside GIL; their ``GIL / n`` equals our NGIL.

References
----------
Bayardo, R. J. & Agrawal, R. (2005). Data privacy through optimal k-anonymization. *ICDE*.

Campan, A. & Truta, T. M. (2009). Data and structural k-anonymity in social networks.
*PinKDD 2008*, LNCS 5456, 33-54.

Ghinita, G., Karras, P., Kalnis, P. & Mamoulis, N. (2007). Fast data anonymization with low
information loss. *VLDB*, 758-769.

Iyengar, V. S. (2002). Transforming data to satisfy privacy constraints. *KDD*, 279-288.

LeFevre, K., DeWitt, D. J. & Ramakrishnan, R. (2006). Mondrian multidimensional
k-anonymity. *ICDE*.

Malle, B., Kieseberg, P., Weippl, E. & Holzinger, A. (2016). The right to be forgotten:
towards machine learning on perturbed knowledge bases. *CD-ARES*, LNCS 9817, 251-266.

Xu, J., Wang, W., Pei, J., Wang, X., Shi, B. & Fu, A. W.-C. (2006). Utility-based
anonymization using local recoding. *KDD*, 785-790.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._utils import check_int
from anonml.encoding import as_frame, detect_categorical, resolve_columns, scaled_values

__all__ = [
    "average_class_size",
    "classification_metric",
    "discernibility",
    "gcp",
    "gil",
    "information_loss",
    "ncp",
    "ngil",
]


# -- shared preparation -------------------------------------------------------------------------
def _classes(
    groups: Any, suppressed: Any, n: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """(class index 0..G-1 per row or -1 when suppressed, class ids in order, G)."""
    g = np.asarray(groups.to_numpy() if isinstance(groups, pd.Series) else groups)
    if g.ndim != 1:
        raise InputError(
            f"groups must be 1-D (one class id per row), got shape {g.shape}; pass e.g. "
            "an anonymizer's groups_"
        )
    if n is not None and g.shape[0] != n:
        raise InputError(
            f"groups has {g.shape[0]} entries but the table has {n} rows; pass one class id per "
            "row of the original table"
        )
    if g.dtype.kind == "f" and g.size and np.all(np.isfinite(g)) and np.all(g == np.round(g)):
        g = g.astype(np.int64)
    if g.dtype.kind not in "iu":
        raise InputError(
            f"groups must hold integer class ids, got dtype {g.dtype}; number the classes, e.g. "
            "pd.factorize(labels)[0]"
        )
    g = g.astype(np.int64, copy=False)
    supp = g < 0
    if suppressed is not None:
        s = np.asarray(suppressed.to_numpy() if isinstance(suppressed, pd.Series) else suppressed)
        if s.shape != g.shape:
            raise InputError(
                f"suppressed has shape {s.shape} but groups has {g.shape}; pass one bool per row"
            )
        if s.dtype.kind != "b":
            if s.dtype.kind in "iu" and np.isin(s, (0, 1)).all():
                s = s.astype(bool)
            else:
                raise InputError(
                    f"suppressed must be a boolean mask (one per row), got dtype {s.dtype}; "
                    "pass e.g. an anonymizer's suppressed_"
                )
        supp = supp | s
    kept = g[~supp]
    cls = np.full(g.shape[0], -1, dtype=np.int64)
    top = int(kept.max()) + 1 if kept.size else 0
    if top <= 4 * g.shape[0] + 16:  # small ids (the usual 0..G-1): renumber in O(n)
        present = np.bincount(kept, minlength=top) > 0
        new_id = np.cumsum(present) - 1
        ids = np.flatnonzero(present)
        cls[~supp] = new_id[kept]
    else:
        ids, inv = np.unique(kept, return_inverse=True)
        cls[~supp] = inv.reshape(-1)
    return cls, ids, len(ids)


def _weights(weights: Any, qi: list) -> np.ndarray:
    d = len(qi)
    if weights is None:
        return np.ones(d)
    if isinstance(weights, Mapping):
        unknown = [c for c in weights if c not in qi]
        if unknown:
            raise InputError(
                f"weights names {unknown[0]!r}, which is not a quasi-identifier; weight only "
                f"these columns: {', '.join(map(str, qi))}"
            )
        w = np.array([weights.get(c, 1.0) for c in qi], dtype=object)
    else:
        w = np.asarray(weights, dtype=object).reshape(-1)
        if w.shape[0] != d:
            raise InputError(
                f"weights has {w.shape[0]} entries for {d} quasi-identifiers; give one per QI "
                "(or a dict column -> weight)"
            )
    try:
        w = w.astype(np.float64)
    except (TypeError, ValueError):
        raise InputError(f"weights must be numbers, got {list(w)!r}") from None
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InputError(
            f"weights must be finite, non-negative and not all 0, got {w.tolist()}; "
            "pass e.g. one 1.0 per QI"
        )
    return w * d / w.sum()


@dataclass
class _Prepared:
    frame: pd.DataFrame
    qi: list
    categorical: set
    hierarchies: dict
    cls: np.ndarray  # class index per row, -1 when suppressed
    ids: np.ndarray  # original class id of each class index
    n_classes: int
    sizes: np.ndarray
    n_suppressed: int
    w: np.ndarray
    cache: dict = field(default_factory=dict)  # per-column LCAs and distinct counts


def _prepare(
    table: Any,
    groups: Any,
    quasi_identifiers: Any,
    categorical: Any,
    hierarchies: Any,
    weights: Any,
    suppressed: Any,
) -> _Prepared:
    frame, _ = as_frame(table, what="table")
    if frame.shape[0] == 0:
        raise InputError("the table has no rows; information loss needs at least one row")
    qi = resolve_columns(frame, quasi_identifiers)
    cat = set(detect_categorical(frame, qi, categorical))
    hier: dict = {}
    if hierarchies is not None:
        if not isinstance(hierarchies, Mapping):
            raise InputError(
                f"hierarchies must be a dict column -> Hierarchy, got "
                f"{type(hierarchies).__name__}; e.g. anonml.datasets.load_adult_hierarchies()"
            )
        from anonml.hierarchies import Hierarchy

        for c in qi:
            h = hierarchies.get(c)
            if h is None:
                continue
            if not isinstance(h, Hierarchy):
                raise InputError(
                    f"hierarchies[{c!r}] is a {type(h).__name__}, not a Hierarchy; build it with "
                    "anonml.hierarchies.Hierarchy(...) or Hierarchy.read_arx(path)"
                )
            hier[c] = h
    for c in qi:
        if c in cat or c in hier:
            continue
        v = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.all(np.isfinite(v)):
            raise InputError(
                f"numeric quasi-identifier {c!r} has missing or infinite values; impute or drop "
                "them first (or declare the column categorical)"
            )
    cls, ids, n_classes = _classes(groups, suppressed, frame.shape[0])
    sizes = np.bincount(cls[cls >= 0], minlength=n_classes)
    return _Prepared(
        frame,
        qi,
        cat,
        hier,
        cls,
        ids,
        n_classes,
        sizes,
        int((cls < 0).sum()),
        _weights(weights, qi),
    )


def _range_share(values: np.ndarray, cls: np.ndarray, n_classes: int) -> np.ndarray:
    """(max - min) of each class over the whole column's (max - min); 0 for a constant column.

    The values are scaled by a power of two first (exact), so that ranges of values near
    ``±1.8e308`` cannot overflow.
    """
    values = scaled_values(values)
    span = float(values.max() - values.min())
    keep = cls >= 0
    lo = np.full(n_classes, np.inf)
    hi = np.full(n_classes, -np.inf)
    np.minimum.at(lo, cls[keep], values[keep])
    np.maximum.at(hi, cls[keep], values[keep])
    if span <= 0 or n_classes == 0:
        return np.zeros(n_classes)
    return (hi - lo) / span


def _ancestors(p: _Prepared, col: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    if ("lca", col) not in p.cache:
        h = p.hierarchies[col]
        keep = p.cls >= 0
        codes = h.leaf_codes(p.frame[col])
        levels, nodes = h.common_ancestor(codes[keep], p.cls[keep], p.n_classes)
        p.cache[("lca", col)] = (h, levels, nodes)
    return p.cache[("lca", col)]


def _distinct(p: _Prepared, col: Any) -> tuple[np.ndarray, int]:
    """Number of distinct values of ``col`` in each class, and in the whole column."""
    if ("distinct", col) not in p.cache:
        p.cache[("distinct", col)] = _count_distinct(p, col)
    return p.cache[("distinct", col)]


def _count_distinct(p: _Prepared, col: Any) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(p.frame[col], use_na_sentinel=False)
    m = max(len(uniques), 1)
    keep = p.cls >= 0
    joint = p.cls[keep] * m + codes[keep].astype(np.int64)
    if p.n_classes * m <= 4 * len(joint) + 1024:  # dense count table, O(n)
        present = np.bincount(joint, minlength=p.n_classes * m).reshape(p.n_classes, m) > 0
        return present.sum(axis=1), len(uniques)
    pairs = np.unique(joint)
    return np.bincount(pairs // m, minlength=p.n_classes), len(uniques)


def _ncp_matrix(p: _Prepared) -> np.ndarray:
    """NCP_A(G) for every class (rows) and QI (columns), unweighted."""
    out = np.zeros((p.n_classes, len(p.qi)))
    for j, c in enumerate(p.qi):
        if c in p.hierarchies:
            h, levels, nodes = _ancestors(p, c)
            leaves = np.zeros(p.n_classes)
            for lev in np.unique(levels):
                if lev == 0:
                    continue  # one distinct value: no loss
                sel = levels == lev
                leaves[sel] = h.subtree_size(int(lev))[nodes[sel]]
            out[:, j] = leaves / h.n_leaves
        elif c in p.categorical:
            distinct, m = _distinct(p, c)
            out[:, j] = np.where(distinct > 1, distinct / m, 0.0)
        else:
            out[:, j] = _range_share(p.frame[c].to_numpy(dtype=np.float64), p.cls, p.n_classes)
    return out


def _gil_matrix(p: _Prepared) -> np.ndarray:
    """IL_A(cl) of Campan & Truta for every class (rows) and QI (columns), unweighted."""
    out = np.zeros((p.n_classes, len(p.qi)))
    for j, c in enumerate(p.qi):
        if c in p.hierarchies:
            h, levels, _ = _ancestors(p, c)
            out[:, j] = levels / h.height
        elif c in p.categorical:
            distinct, _ = _distinct(p, c)
            out[:, j] = (distinct > 1).astype(np.float64)  # flat hierarchy value -> *
        else:
            out[:, j] = _range_share(p.frame[c].to_numpy(dtype=np.float64), p.cls, p.n_classes)
    return out


# -- NCP / GCP ----------------------------------------------------------------------------------
def ncp(
    table: Any,
    groups: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    categorical: Sequence[Any] | None = None,
    hierarchies: Mapping[Any, Any] | None = None,
    weights: Any = None,
    suppressed: Any = None,
    per_attribute: bool = False,
) -> np.ndarray | pd.DataFrame:
    """Normalized Certainty Penalty of each equivalence class (Xu et al. 2006).

    ``NCP_A(G)`` is, for a numeric QI, ``(max_G A - min_G A) / (max_T A - min_T A)`` (0 for a
    constant column); for a QI with a hierarchy, ``|leaves(u)| / |leaves|`` with ``u`` the
    lowest common ancestor of the class's values (0 for one distinct value); for a categorical
    QI without a hierarchy (set recoding), ``#distinct(G) / #distinct(T)`` when ``G`` holds
    more than one value, else 0. ``NCP(G) = sum_A w_A NCP_A(G)``, in ``[0, d]``, with the
    weights rescaled to sum to ``d`` (see the module docstring).

    Parameters
    ----------
    table : DataFrame or 2-D array
        The original (not anonymized) table.
    groups : array of int, shape (n_rows,)
        Equivalence class id of each row; a negative id marks a suppressed row.
    quasi_identifiers : list or None
        The QI columns (None: every column).
    categorical : list, optional
        The categorical QIs; detected from dtype when None (see
        :func:`anonml.encoding.detect_categorical`).
    hierarchies : dict column -> Hierarchy, optional
        QIs measured in their hierarchy (extra keys are ignored).
    weights : dict column -> float, or sequence aligned with the QIs, optional
        Attribute weights (default 1 each; a column missing from a dict weighs 1).
    suppressed : array of bool, shape (n_rows,), optional
        Suppressed rows (for instance an anonymizer's ``suppressed_``); they are in no class.
    per_attribute : bool, default False
        Return the unweighted ``NCP_A(G)`` of every class and QI instead.

    Returns
    -------
    ndarray of float, shape (n_classes,), or DataFrame (n_classes x d)
        One entry per class, in increasing order of class id (entry ``i`` is class ``i`` when
        the ids are ``0 .. G-1``, as from ``groups_`` or ``equivalence_classes``). The
        DataFrame is indexed by class id.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["F", "M", "F", "F"]})
    >>> ncp(t, [0, 0, 1, 1], ["age", "sex"]).tolist()  # (10/40 + 2/2), (20/40 + 0)
    [1.25, 0.5]
    """
    p = _prepare(table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed)
    mat = _ncp_matrix(p)
    if per_attribute:
        return pd.DataFrame(mat, index=pd.Index(p.ids, name="class"), columns=p.qi)
    return mat @ p.w


def gcp(
    table: Any,
    groups: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    categorical: Sequence[Any] | None = None,
    hierarchies: Mapping[Any, Any] | None = None,
    weights: Any = None,
    suppressed: Any = None,
) -> float:
    """Global Certainty Penalty (Ghinita et al. 2007), the size-weighted mean NCP, in [0, 1].

    ``GCP = (sum_G |G| NCP(G) + |S| d) / (n d)``: a suppressed row costs the most, 1 per QI
    (weighted). 0 when every class holds one distinct QI combination; 1 when everything is
    generalized to the root (or suppressed). Parameters as in :func:`ncp`.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["F", "M", "F", "F"]})
    >>> gcp(t, [0, 0, 1, 1], ["age", "sex"])  # (2*1.25 + 2*0.5) / (4*2)
    0.4375
    """
    p = _prepare(table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed)
    d = len(p.qi)
    total = float(p.sizes @ (_ncp_matrix(p) @ p.w)) + p.n_suppressed * d
    return total / (p.frame.shape[0] * d)


# -- GIL / NGIL ---------------------------------------------------------------------------------
def gil(
    table: Any,
    groups: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    hierarchies: Mapping[Any, Any] | None = None,
    weights: Any = None,
    categorical: Sequence[Any] | None = None,
    suppressed: Any = None,
    per_class: bool = False,
) -> float | np.ndarray:
    """Generalization Information Loss (Campan & Truta 2009; weights as in Malle et al. 2016).

    ``GIL(cl) = |cl| (sum_numeric w_A size([min_cl A, max_cl A]) / size([min_T A, max_T A])
    + sum_categorical w_C height(LCA_C(cl)) / height(H_C))``, where ``size`` of an interval is
    ``max - min`` (0 for a constant column) and ``LCA_C(cl)`` is the lowest common ancestor of
    the class's values in the hierarchy ``H_C`` (a flat ``value -> *`` hierarchy when none is
    given). ``GIL = sum_cl GIL(cl) + |S| d``: a suppressed row costs 1 per QI (weighted).
    Weights are rescaled to sum to ``d`` (equal weights: the unweighted formula).

    Parameters
    ----------
    table, groups, quasi_identifiers, hierarchies, weights, categorical, suppressed
        As in :func:`ncp`. A QI with a hierarchy is measured in it, whatever its dtype.
    per_class : bool, default False
        Return ``GIL(cl)`` of every class (in increasing order of class id) instead of the sum.

    Returns
    -------
    float, or ndarray of float (n_classes,)

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["F", "M", "F", "F"]})
    >>> gil(t, [0, 0, 1, 1], ["age", "sex"])  # 2*(10/40 + 1) + 2*(20/40 + 0)
    3.5
    """
    p = _prepare(table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed)
    per = p.sizes * (_gil_matrix(p) @ p.w)
    if per_class:
        return per
    return float(per.sum()) + p.n_suppressed * len(p.qi)


def ngil(
    table: Any,
    groups: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    hierarchies: Mapping[Any, Any] | None = None,
    weights: Any = None,
    categorical: Sequence[Any] | None = None,
    suppressed: Any = None,
) -> float:
    """Normalized GIL, ``GIL / (n d)``, in [0, 1] (Campan & Truta 2009).

    ``d`` is the number of QIs (numeric plus categorical). Parameters as in :func:`gil`.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["F", "M", "F", "F"]})
    >>> ngil(t, [0, 0, 1, 1], ["age", "sex"])  # 3.5 / (4 * 2)
    0.4375
    """
    p = _prepare(table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed)
    total = float(p.sizes @ (_gil_matrix(p) @ p.w)) + p.n_suppressed * len(p.qi)
    return total / (p.frame.shape[0] * len(p.qi))


# -- metrics of the class sizes and labels ------------------------------------------------------
def discernibility(groups: Any, *, suppressed: Any = None, k: int | None = None) -> int:
    """Discernibility metric (Bayardo & Agrawal 2005): ``sum_E |E|^2 + n |S|``.

    Every row is charged the size of its class (hence ``sum_E |E|^2``), and a suppressed row
    the size ``n`` of the whole table. When every class has at least k rows, ``DM >= n k``.

    Parameters
    ----------
    groups : array of int, shape (n_rows,)
        Class id of each row; a negative id marks a suppressed row.
    suppressed : array of bool, shape (n_rows,), optional
        Suppressed rows.
    k : int, optional
        As in Bayardo & Agrawal, the rows of a class smaller than ``k`` count as suppressed
        (charged ``n`` each). Without ``k`` every class is charged ``|E|^2``.

    Returns
    -------
    int

    Examples
    --------
    >>> discernibility([0, 0, 0, 1, 1], suppressed=[False, False, False, False, True])  # 9+1+5
    15
    >>> discernibility([0, 0, 0, 1], k=2)  # 3^2 + one row of a too small class: 4
    13
    """
    if k is not None:
        check_int("k", k, why="the k the table was anonymized for")
    cls, _, n_classes = _classes(groups, suppressed)
    sizes = np.bincount(cls[cls >= 0], minlength=n_classes).astype(np.int64)
    n = cls.shape[0]
    small = sizes < (k or 0)
    n_charged_n = int((cls < 0).sum()) + int(sizes[small].sum())
    return int((sizes[~small] ** 2).sum()) + n * n_charged_n


def average_class_size(groups: Any, k: int, *, suppressed: Any = None) -> float:
    """Normalized average equivalence class size (LeFevre et al. 2006): ``(n' / #classes) / k``.

    ``n'`` counts the rows that are not suppressed. 1 is the ideal (every class exactly k
    rows); NaN when every row is suppressed.

    Examples
    --------
    >>> average_class_size([0, 0, 0, 1, 1, 1, 1], 3)  # (7 / 2) / 3
    1.1666666666666667
    """
    check_int("k", k, why="the k the table was anonymized for")
    cls, _, n_classes = _classes(groups, suppressed)
    if n_classes == 0:
        return float("nan")
    return float(int((cls >= 0).sum()) / n_classes / int(k))


def classification_metric(groups: Any, labels: Any, *, suppressed: Any = None) -> float:
    """Classification metric (Iyengar 2002): the share of rows penalized, in [0, 1].

    A row is penalized when it is suppressed or when its class label differs from the
    majority label of its equivalence class (a tie picks any majority label: the count is the
    same). ``CM = (sum_E (|E| - max_label count_E(label)) + |S|) / n``.

    Parameters
    ----------
    groups : array of int, shape (n_rows,)
        Class id of each row; a negative id marks a suppressed row.
    labels : array-like, shape (n_rows,)
        The class label (target) of each row; missing values count as one label.
    suppressed : array of bool, shape (n_rows,), optional

    Examples
    --------
    >>> classification_metric([0, 0, 0, 1, 1], ["a", "a", "b", "b", "b"])  # 1 of 5 is off
    0.2
    """
    cls, _, n_classes = _classes(groups, suppressed)
    lab = labels if isinstance(labels, pd.Series) else np.asarray(labels, dtype=object)
    if lab.ndim != 1 or lab.shape[0] != cls.shape[0]:
        raise InputError(
            f"labels has shape {lab.shape} but groups has {cls.shape[0]} rows; pass one label "
            "per row"
        )
    n = cls.shape[0]
    if n == 0:
        raise InputError("groups is empty; the classification metric needs at least one row")
    codes, uniques = pd.factorize(lab, use_na_sentinel=False)
    m = max(len(uniques), 1)
    keep = cls >= 0
    counts = np.bincount(cls[keep] * m + codes[keep], minlength=n_classes * m).reshape(n_classes, m)
    majority = counts.max(axis=1).sum() if n_classes else 0
    penalized = int(keep.sum()) - int(majority) + int((~keep).sum())
    return penalized / n


# -- everything at once -------------------------------------------------------------------------
def information_loss(
    table: Any,
    groups: Any,
    quasi_identifiers: Sequence[Any] | None,
    *,
    k: int | None = None,
    labels: Any = None,
    categorical: Sequence[Any] | None = None,
    hierarchies: Mapping[Any, Any] | None = None,
    weights: Any = None,
    suppressed: Any = None,
) -> dict[str, float | int]:
    """Every information-loss metric of one partition, as a flat dict.

    Parameters
    ----------
    table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed
        As in :func:`ncp`.
    k : int, optional
        The k the table was anonymized for; adds ``"c_avg"``, and the rows of classes smaller
        than ``k`` count as suppressed in ``"dm"`` (see :func:`discernibility`).
    labels : array-like, optional
        Class label of each row; adds ``"cm"``.

    Returns
    -------
    dict
        ``n_rows``, ``n_classes``, ``n_suppressed``, ``min_class_size`` (0 with no class),
        ``gcp``, ``ncp_mean`` (mean NCP over the classes, unweighted by size, divided by d),
        ``dm``, ``gil``, ``ngil``, and ``c_avg`` / ``cm`` when ``k`` / ``labels`` are given.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["F", "M", "F", "F"]})
    >>> r = information_loss(t, [0, 0, 1, 1], ["age", "sex"], k=2, labels=[1, 1, 0, 1])
    >>> r["gcp"], r["dm"], r["c_avg"], r["cm"], r["ngil"]
    (0.4375, 8, 1.0, 0.25, 0.4375)
    """
    p = _prepare(table, groups, quasi_identifiers, categorical, hierarchies, weights, suppressed)
    n, d = p.frame.shape[0], len(p.qi)
    ncp_class = _ncp_matrix(p) @ p.w
    gil_total = float(p.sizes @ (_gil_matrix(p) @ p.w)) + p.n_suppressed * d
    supp_mask = p.cls < 0
    out: dict[str, float | int] = {
        "n_rows": n,
        "n_qi": d,
        "n_classes": p.n_classes,
        "n_suppressed": p.n_suppressed,
        "min_class_size": int(p.sizes.min()) if p.n_classes else 0,
        "gcp": (float(p.sizes @ ncp_class) + p.n_suppressed * d) / (n * d),
        "ncp_mean": float(ncp_class.mean() / d) if p.n_classes else float("nan"),
        "dm": discernibility(p.cls, suppressed=supp_mask, k=k),
        "gil": gil_total,
        "ngil": gil_total / (n * d),
    }
    if k is not None:
        out["c_avg"] = average_class_size(p.cls, k, suppressed=supp_mask)
    if labels is not None:
        out["cm"] = classification_metric(p.cls, labels, suppressed=supp_mask)
    return out
