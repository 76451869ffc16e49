"""Recursive (c, l)-diversity and hierarchical t-closeness on the Dask engine.

The engine already reduces, per group (:mod:`anonml.dask._merge`) and per equivalence class of
the written table (:func:`anonml.dask._verify.class_stats`), the count of every sensitive
value, in one fixed order (:func:`anonml.dask._verify._value_order`, missing last). The
privacy checks are then those of memory on those counts, with the kernels of
:mod:`anonml.privacy`:

* recursive (c, l)-diversity (Machanavajjhala et al., 2007, Def. 4.2):
  :func:`anonml.privacy._diversity.recursive_l` of the counts, as
  :meth:`~anonml.privacy._constraints.PrivacyModel.allowed` tests it in memory;
* hierarchical t-closeness (Li, Li and Venkatasubramanian, ICDE 2007, Sec. 4.2): the counts
  are folded onto the hierarchy's leaves (a value's leaf code is
  :meth:`~anonml.hierarchies.Hierarchy.leaf_codes`, as
  :func:`~anonml.privacy._diversity.sensitive_codes` codes them in memory), then
  :func:`~anonml.privacy._diversity.emd` with the hierarchy's parent maps.

Nothing here touches rows: only (groups x values) counts and the value list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError

__all__ = ["SensitiveCoding", "sensitive_coding", "fold_counts", "fold_keys"]


@dataclass
class SensitiveCoding:
    """How the engine's value-ordered counts become the codes a privacy model reads.

    Attributes
    ----------
    values : list
        The sensitive values in the engine's order (missing values not listed: their count is
        the column after the last value).
    leaf : ndarray of int64 or None
        For the hierarchical distance, the hierarchy leaf of each of ``values`` (and nothing
        for missing values, refused); None otherwise (the counts are read as they are).
    n_codes : int
        Columns of the folded counts: the hierarchy's leaves, or the values (+1 when some are
        missing).
    parents : list of ndarray or None
        The hierarchy's parent maps (:func:`~anonml.privacy._diversity.sensitive_codes`).
    """

    values: list
    leaf: np.ndarray | None
    n_codes: int
    parents: list | None = None


def sensitive_coding(values: list, has_missing: bool, distance: str | None, hierarchy: Any,
                     sensitive: Any) -> SensitiveCoding:
    """The coding of ``values`` for ``distance`` (hierarchical: through ``hierarchy``)."""
    if distance != "hierarchical":
        return SensitiveCoding(list(values), None, len(values) + int(has_missing))
    from anonml.privacy._diversity import sensitive_codes

    if has_missing:
        raise InputError(f"sensitive column {sensitive!r} has missing values, which its "
                         "hierarchy cannot place; fix: impute them, or use --t-distance equal")
    leaf, m, parents = sensitive_codes(pd.Series(values, dtype=object, name=sensitive),
                                       "hierarchical", hierarchy)
    return SensitiveCoding(list(values), np.asarray(leaf, dtype=np.int64), int(m), parents)


def fold_counts(counts: np.ndarray, coding: SensitiveCoding) -> np.ndarray:
    """(G, len(values) + 1) counts in the engine's order -> (G, n_codes) counts in the model's
    codes (the hierarchy's leaf order; missing last otherwise)."""
    counts = np.asarray(counts)
    if coding.leaf is None:
        return counts[:, : coding.n_codes]
    out = np.zeros((counts.shape[0], coding.n_codes), dtype=counts.dtype)
    np.add.at(out.T, coding.leaf, counts[:, : coding.leaf.size].T)
    return out


def fold_keys(keys: np.ndarray, width: int, coding: SensitiveCoding) -> tuple[np.ndarray, int]:
    """Sparse keys ``group * width + value`` -> ``group * (n_codes + 1) + code`` and the new
    width (duplicate keys are summed by whoever builds the matrix)."""
    if coding.leaf is None:
        return keys, width
    code = np.append(coding.leaf, coding.n_codes)  # (no missing value: the last never used)
    g, v = keys // width, keys % width
    new_width = coding.n_codes + 1
    return g * new_width + code[np.minimum(v, coding.leaf.size)], new_width


def check_hierarchies(hierarchies: Any, sensitive: Any, t: Any, t_distance: str) -> Any:
    """The sensitive column's hierarchy (or None), checked: the Dask engine reads a hierarchy
    for the hierarchical ground distance of t-closeness only (its representatives are real
    records: no generalization of the quasi-identifiers)."""
    from anonml.privacy._diversity import T_DISTANCES

    if t_distance != "auto" and t_distance not in T_DISTANCES:
        raise InputError(f"t_distance={t_distance!r}; use 'auto' or one of "
                         f"{', '.join(T_DISTANCES)}")
    if t_distance != "auto" and t is None:
        raise InputError(f"t_distance={t_distance!r} needs t=<number>, the closeness asked for")
    if hierarchies is None:
        hierarchies = {}
    if not isinstance(hierarchies, dict):
        raise InputError("hierarchies must be a dict of column -> anonml.hierarchies.Hierarchy")
    others = [c for c in hierarchies if c != sensitive]
    if others:
        raise InputError(f"hierarchy of column {others[0]!r}: the Dask engine reads the "
                         "hierarchy of the sensitive column only (hierarchical t-closeness); "
                         "fix: leave it out, or use the in-memory engine to generalize with it")
    hierarchy = hierarchies.get(sensitive) if sensitive is not None else None
    if t_distance == "hierarchical" and hierarchy is None:
        raise InputError(f"t_distance='hierarchical' needs a hierarchy for the sensitive column "
                         f"{sensitive!r}; fix: give it (CLI: --hierarchies DIR with a file "
                         f"named {sensitive}.csv)")
    if hierarchy is not None and t is None:
        raise InputError(f"a hierarchy of {sensitive!r} is read for hierarchical t-closeness "
                         "only; fix: add t=<number>, or leave the hierarchy out")
    return hierarchy
