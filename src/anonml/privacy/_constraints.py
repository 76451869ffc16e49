"""Privacy models as constraints a partitioner honours while it builds groups.

A partitioner may make a cut, or close a group, only where every resulting group satisfies the
model. :class:`PrivacyModel` answers that for many candidate groups at once from their counts of
sensitive values, a ``(G, m)`` matrix, so a Mondrian level, a Hilbert segmentation or a
cluster's growth tests all its candidates in one vectorized call. The verdicts use the same
kernels as the table-level checks :func:`~anonml.privacy.l_diversity` and
:func:`~anonml.privacy.t_closeness`, which the pipeline runs again, independently, on every
output table.

All three models are preserved by merging groups (Machanavajjhala et al. 2007, Sec. 5; Li et al.
2007, Sec. 4.3): the union of two l-diverse (or t-close) groups is l-diverse (t-close). This is
what lets a partitioner repair a violating group by merging it into a neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError, names_list
from anonml._utils import check_real
from anonml.privacy._diversity import (
    L_KINDS,
    check_c,
    distinct_l,
    emd,
    entropy_l,
    recursive_l,
    resolve_distance,
    sensitive_codes,
)

__all__ = ["PrivacyModel", "build_privacy_model"]

_EPS = 1e-9  # float slack for entropy and EMD comparisons


@dataclass
class PrivacyModel:
    """k-anonymity plus, optionally, l-diversity or t-closeness of one sensitive attribute.

    Attributes
    ----------
    k : int
        Smallest group size.
    codes : ndarray of int, shape (n_rows,)
        Sensitive-value code (0 .. m-1) of every training row; zeros without a sensitive
        attribute.
    n_values : int
        m, the number of sensitive values (1 without a sensitive attribute).
    l, l_kind, c : l-diversity parameters, or l None.
    t, distance : t-closeness threshold and ground distance, or t None.
    q : ndarray, shape (m,)
        Distribution of the sensitive values in the whole training table.
    parents : list of ndarray or None
        Parent maps of the sensitive attribute's hierarchy (hierarchical distance).
    sensitive : column name or None
    """

    k: int
    codes: np.ndarray
    n_values: int = 1
    l: float | None = None
    l_kind: str = "distinct"
    c: float | None = None
    t: float | None = None
    distance: str | None = None
    q: np.ndarray | None = None
    parents: list | None = None
    sensitive: Any = None

    @property
    def trivial(self) -> bool:
        """True when only k is asked: a group is allowed iff it has at least k rows."""
        return self.l is None and self.t is None

    def allowed(self, counts: np.ndarray) -> np.ndarray:
        """Which candidate groups satisfy the model.

        Parameters
        ----------
        counts : ndarray of int, shape (G, m) or (G,)
            Rows of each sensitive value in each candidate group; a 1-D array is read as the
            group sizes (only valid for a trivial model).

        Returns
        -------
        ndarray of bool, shape (G,)
        """
        counts = np.asarray(counts)
        if counts.ndim == 1:
            if not self.trivial:
                raise ValueError("internal: l/t need the (G, m) counts, not sizes")
            return counts >= self.k
        ok = counts.sum(axis=1) >= self.k
        if self.l is not None:
            if self.l_kind == "distinct":
                ok &= distinct_l(counts) >= self.l
            elif self.l_kind == "entropy":
                ok &= entropy_l(counts) >= self.l * (1 - _EPS)
            else:
                ok &= recursive_l(counts, self.c) >= self.l
        if self.t is not None:
            ok &= self._t_close(counts)
        return ok

    def _t_close(self, counts: np.ndarray) -> np.ndarray:
        """EMD <= t for each row of counts. Equal and ordered distances are tested on the
        counts, ``|G| * EMD <= |G| * t``, without dividing by the group sizes (the same test,
        one pass less). The slack is half the verification's, so that rounding can never let
        through a group the independent check of the output would refuse."""
        slack = self.t + _EPS / 2
        if self.distance in ("equal", "ordered"):
            c = counts.astype(np.float64)
            size = c.sum(axis=1)
            c -= size[:, None] * self.q[None, :]
            m = c.shape[1]
            if self.distance == "equal":
                np.abs(c, out=c)
                return 0.5 * c.sum(axis=1) <= slack * size
            if m < 2:
                return np.ones(c.shape[0], dtype=bool)
            np.cumsum(c, axis=1, out=c)
            np.abs(c, out=c)
            return c[:, :-1].sum(axis=1) <= slack * (m - 1) * size
        return emd(counts, self.q, self.distance, self.parents) <= slack

    def counts(self, groups: np.ndarray, n_groups: int) -> np.ndarray:
        """(n_groups, m) counts of sensitive values for a labelling of the training rows."""
        m = self.n_values
        groups = np.asarray(groups, dtype=np.int64)
        return np.bincount(groups * m + self.codes, minlength=n_groups * m).reshape(n_groups, m)

    def allowed_rows(self, rows: np.ndarray) -> bool:
        """Whether the training rows at positions ``rows`` may form one group."""
        counts = np.bincount(self.codes[np.asarray(rows)], minlength=self.n_values)
        return bool(self.allowed(counts[None, :])[0])

    def describe(self) -> str:
        """Human-readable statement of the model, e.g. ``"10-anonymity, distinct 3-diversity"``."""
        parts = [f"{self.k}-anonymity"]
        if self.l is not None:
            extra = f" (c={self.c:g})" if self.l_kind == "recursive" else ""
            parts.append(f"{self.l_kind} {self.l:g}-diversity{extra} of {self.sensitive!r}")
        if self.t is not None:
            parts.append(f"{self.t:g}-closeness ({self.distance} distance) of {self.sensitive!r}")
        return ", ".join(parts)


def _check_number(name: str, value: Any, low: float, high: float | None, example: str) -> float:
    return check_real(name, value, low=low, high=high, closed="both", example=example)


def build_privacy_model(
    frame: pd.DataFrame,
    qi: Sequence[Any],
    k: int,
    *,
    sensitive: Any = None,
    l: Any = None,
    l_kind: str = "distinct",
    c: Any = None,
    t: Any = None,
    t_distance: str = "auto",
    hierarchies: Mapping[Any, Any] | None = None,
    sensitive_values: pd.Series | None = None,
) -> PrivacyModel:
    """Validate the privacy parameters of an anonymizer and build its :class:`PrivacyModel`.

    ``sensitive_values``, when given, are the values of the attribute ``sensitive`` names
    when it is not a column of ``frame`` (the label: l-diversity of a diagnosis), one per
    row of ``frame``.

    Raises :class:`InputError` for a bad parameter, and when the whole table already fails the
    model (then no grouping can satisfy it).
    """
    n = frame.shape[0]
    if sensitive is None:
        if l is not None or t is not None:
            which = "l" if l is not None else "t"
            raise InputError(
                f"{which}={l if l is not None else t!r} needs a sensitive attribute; pass "
                "sensitive='<column>'"
            )
        return PrivacyModel(k=k, codes=np.zeros(n, dtype=np.int64))
    if sensitive_values is None and sensitive not in set(frame.columns):
        raise InputError(
            f"sensitive={sensitive!r} is not a column; columns are: "
            f"{names_list(frame.columns)}"
        )
    if sensitive in set(qi):
        raise InputError(
            f"sensitive={sensitive!r} is also a quasi-identifier; remove it from "
            "quasi_identifiers (a sensitive attribute is protected, not generalized)"
        )
    if l is None and t is None:
        raise InputError(
            f"sensitive={sensitive!r} is given without a model; pass l=<int> (l-diversity) or "
            "t=<float> (t-closeness)"
        )
    model = PrivacyModel(k=k, codes=np.zeros(n, dtype=np.int64), sensitive=sensitive)
    column = frame[sensitive] if sensitive_values is None else sensitive_values
    hierarchy = (hierarchies or {}).get(sensitive)
    distance = None
    if t is not None:
        model.t = _check_number("t", t, 0.0, 1.0, "t=0.2")
        distance = resolve_distance(t_distance, column, hierarchy)
        model.distance = distance
    codes, m, parents = sensitive_codes(column, distance, hierarchy)
    model.codes, model.n_values, model.parents = codes, m, parents
    model.q = np.bincount(codes, minlength=m) / max(n, 1)
    if l is not None:
        if l_kind not in L_KINDS:
            raise InputError(f"l_kind={l_kind!r}; use one of {', '.join(L_KINDS)}")
        model.l = _check_number("l", l, 1.0, None, "l=3")
        model.l_kind = l_kind
        if l_kind == "recursive":
            model.c = check_c(c)
    whole = np.bincount(codes, minlength=m)[None, :]
    if not model.allowed(whole)[0]:
        present = int((whole > 0).sum())
        raise InputError(
            f"the whole table does not satisfy {model.describe()} ({present} distinct values of "
            f"{sensitive!r}), so no grouping can; lower l or raise t"
        )
    return model
