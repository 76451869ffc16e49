"""l-diversity and t-closeness of a released mapping, re-derived from the training rows.

A mapping fitted with ``sensitive=..., l=...`` or ``t=...`` claims that the table it makes of
its training rows is l-diverse (Machanavajjhala et al., "l-Diversity: Privacy Beyond
k-Anonymity", ICDE 2006) or t-close (Li, Li and Venkatasubramanian, "t-Closeness: Privacy
Beyond k-Anonymity and l-Diversity", ICDE 2007) in that column. The file holds the claim (its
``l``, ``l_kind``, ``c``, ``t`` parameters and ``t_distance_``, the ground distance fit
resolved), never the sensitive values. :func:`measure_privacy` maps the training rows through
the file's own routing, forms the equivalence classes of the table those rows become (groups
with the same representative are one class, suppressed groups one class), counts the
sensitive values of the *training rows* in each class and computes l and t with the same
kernels the anonymizers' independent check uses (:mod:`anonml.privacy._diversity`). Nothing in
the file is trusted for the measured side.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

#: longest name a mapping's sensitive attribute may have (a column or label name, no more: a
#: longer text would be a place to carry data out in the file)
MAX_NAME = 256
#: the ground distances t can be re-measured with, without a hierarchy
_PLAIN_DISTANCES = ("equal", "ordered")


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating)) \
        and bool(np.isfinite(v))


def check_privacy_params(m: Any, refuse: Any) -> None:
    """The l and t a mapping claims are numbers in range, of a column that is not a QI, or of
    the label (a name, not one of its columns: ``fit(X, y, sensitive_values=)``);
    ``refuse(text)`` makes the error raised otherwise."""
    from anonml.privacy._diversity import L_KINDS, T_DISTANCES

    d = m.__dict__
    l, t = d.get("l"), d.get("t")
    sensitive = d.get("sensitive")
    if sensitive is not None and not (
            isinstance(sensitive, (str, int, np.integer)) and not isinstance(sensitive, bool)
            and (not isinstance(sensitive, str) or (
                0 < len(sensitive) <= MAX_NAME and sensitive.isprintable()))):
        raise refuse(f"its sensitive attribute {str(sensitive)[:40]!r} is not a column name "
                     f"or a label name of at most {MAX_NAME} printable characters")
    if l is None and t is None:
        return
    if l is not None and not (_number(l) and l >= 1):
        raise refuse(f"its l {str(l)[:20]!r} is not a number >= 1")
    if t is not None and not (_number(t) and 0 <= t <= 1):
        raise refuse(f"its t {str(t)[:20]!r} is not a number in [0, 1]")
    if l is not None and d.get("l_kind", "distinct") not in L_KINDS:
        raise refuse(f"its l_kind {str(d.get('l_kind'))[:20]!r} is not one of "
                      f"{', '.join(L_KINDS)}")
    if l is not None and d.get("l_kind") == "recursive" and not (
            _number(d.get("c")) and d["c"] > 0):
        raise refuse(f"its c {str(d.get('c'))[:20]!r} is not a positive number")
    distance = d.get("t_distance_")
    if distance is not None and distance not in T_DISTANCES:
        raise refuse(f"its t_distance_ {str(distance)[:20]!r} is not one of "
                      f"{', '.join(T_DISTANCES)}")
    sensitive = d.get("sensitive")
    columns = d.get("columns_") or []
    if sensitive in (d.get("qi_") or []) or (
            sensitive not in columns and not isinstance(sensitive, str)):
        raise refuse(f"its sensitive attribute {str(sensitive)[:40]!r} is neither one of "
                      "its non-QI columns nor the name of a label")


def _claimed_distance(m: Any, column: pd.Series, hierarchies: dict | None) -> str | None:
    """The ground distance the file's t claim was made with (``t_distance_``, set at fit; a
    file from before it re-resolves its ``t_distance`` parameter)."""
    from anonml.privacy._diversity import resolve_distance

    got = m.__dict__.get("t_distance_")
    if isinstance(got, str):
        return got
    return resolve_distance(str(m.t_distance), column, (hierarchies or {}).get(m.sensitive))


def _against_claim(per: np.ndarray, live: np.ndarray, claimed: float, first_group: np.ndarray,
                   lines: list, measure: str, claim: str, **what: Any) -> dict:
    """One value per live class (``per``) against the claimed bound of ``measure``: each class
    at least the claim for l, at most for t. Returns the facts; a class that breaks the claim
    adds one line naming the worst class's first group."""
    at_least = measure == "l"
    ids = np.flatnonzero(live)
    failing = ids[per < claimed * (1 - 1e-9)] if at_least else ids[per > claimed + 1e-9]
    worst = int(np.argmin(per) if at_least else np.argmax(per)) if per.size else 0
    got = float(per[worst]) if per.size else 0.0
    if failing.size:
        lines.append(f"group {int(first_group[ids[worst]])}: the file claims {claim}; the "
                     f"training rows give {measure} = {got:.4g} ({failing.size:,} classes "
                     f"{'below' if at_least else 'above'})")
    return {"claimed": claimed, **what, "measured": got, "classes_failing": int(failing.size),
            "first_group": int(first_group[failing[0]]) if failing.size else None}


def measure_privacy(m: Any, frame: pd.DataFrame, groups: np.ndarray, lines: list,
                    hierarchies: dict | None = None, labels: Any = None) -> dict | None:
    """Measure the l and t a mapping claims on its training rows.

    Parameters
    ----------
    m : fitted anonymizer (verified)
    frame : DataFrame
        The training rows, with the sensitive column.
    groups : ndarray of int
        Each training row's group, from the mapping's own routing (-1 or out of range: none).
    lines : list of str
        Mismatch lines; one is appended per claim the rows do not give.
    hierarchies : dict, optional
        Column -> Hierarchy, for a t claimed with the hierarchical distance (a released file
        does not hold hierarchies).
    labels : Series, optional
        The training rows' labels, named: taken when the sensitive attribute is not a column
        of ``frame`` and is their name (a mapping fitted on the label).

    Returns
    -------
    dict or None
        None when the mapping claims neither l nor t. Otherwise ``{"sensitive": name, "l":
        {...} or None, "t": {...} or None}``: each with ``claimed``, ``measured`` (None when
        it could not be measured, with ``not_checked`` giving why), ``classes_failing`` and
        ``first_group`` (a group of the first failing class).
    """
    from anonml.privacy._diversity import distinct_l, emd, entropy_l, recursive_l, sensitive_codes
    from anonml.privacy._k_anonymity import _classes

    l_claim = m.__dict__.get("l")
    t_claim = m.__dict__.get("t")
    if l_claim is None and t_claim is None:
        return None
    sensitive = m.__dict__.get("sensitive")
    out: dict = {"sensitive": str(sensitive)[:MAX_NAME], "l": None, "t": None}
    label = None
    if sensitive not in set(frame.columns) and isinstance(labels, pd.Series) and \
            labels.name == sensitive and labels.shape[0] == frame.shape[0]:
        label = labels.reset_index(drop=True)
    if sensitive not in set(frame.columns) and label is None:
        why = (f"the training table has no column {str(sensitive)[:60]!r}, the sensitive "
               "attribute the file names")
        for name, claim in (("l", l_claim), ("t", t_claim)):
            if claim is not None:
                out[name] = {"claimed": float(claim), "measured": None, "not_checked": why}
        lines.append(f"the file claims {privacy_claim(m)}, which cannot be checked: {why}")
        return out
    reps = m.representatives_
    G = int(reps.shape[0])
    inside = (groups >= 0) & (groups < G)
    g = groups[inside]
    # the equivalence classes of the released table: groups with equal representatives merge
    class_of_group, _ = _classes(reps.reset_index(drop=True), list(m.qi_))
    cls = class_of_group[g] if G else np.zeros(0, dtype=np.int64)
    n_cls = int(class_of_group.max()) + 1 if G else 0
    first_group = np.full(max(n_cls, 1), G, dtype=np.int64)  # the lowest group of each class
    np.minimum.at(first_group, class_of_group, np.arange(G, dtype=np.int64))
    column = (frame[sensitive] if label is None else label)[inside]

    def counts_for(codes: np.ndarray, n_values: int) -> np.ndarray:
        return np.bincount(cls * n_values + codes, minlength=n_cls * n_values).reshape(
            n_cls, n_values)

    if l_claim is not None:
        kind = str(m.__dict__.get("l_kind") or "distinct")
        codes, n_values, _ = sensitive_codes(column)
        counts = counts_for(codes, n_values)
        live = counts.sum(axis=1) > 0
        if kind == "entropy":
            per = entropy_l(counts)
        elif kind == "recursive":
            per = recursive_l(counts, float(m.c)).astype(np.float64)
        else:
            per = distinct_l(counts).astype(np.float64)
        out["l"] = _against_claim(
            per[live], live, float(l_claim), first_group, lines, "l",
            f"{kind} l-diversity of {str(sensitive)[:60]!r} with l = {float(l_claim):g}",
            kind=kind)
    if t_claim is not None:
        distance = _claimed_distance(m, column, hierarchies)
        hierarchy = (hierarchies or {}).get(sensitive)
        if distance not in _PLAIN_DISTANCES and hierarchy is None:
            why = (f"it was claimed with the {distance} distance, which needs the "
                   f"hierarchy of {str(sensitive)[:60]!r}; pass it to measure t")
            out["t"] = {"claimed": float(t_claim), "distance": distance, "measured": None,
                        "not_checked": why}
            return out
        codes, n_values, parents = sensitive_codes(column, distance, hierarchy)
        counts = counts_for(codes, n_values)
        live = counts.sum(axis=1) > 0
        q = np.bincount(codes, minlength=n_values) / max(codes.size, 1)
        per = emd(counts, q, distance, parents)[live]
        out["t"] = _against_claim(
            per, live, float(t_claim), first_group, lines, "t",
            f"t-closeness of {str(sensitive)[:60]!r} with t = {float(t_claim):g} ({distance} "
            "distance)", distance=distance)
    return out


def privacy_claim(m: Any) -> str | None:
    """The l and t a mapping claims, in words (``"distinct l = 3 for 'disease'"``), or None."""
    d = m.__dict__
    parts = []
    if d.get("l") is not None:  # numbers: checked by the mapping's verification first
        parts.append(f"{str(d.get('l_kind') or 'distinct')[:20]} l-diversity with "
                     f"l = {float(d['l']):g}")
    if d.get("t") is not None:
        distance = d.get("t_distance_")
        how = f" ({distance} distance)" if isinstance(distance, str) else ""
        parts.append(f"t-closeness with t = {float(d['t']):g}{how}")
    if not parts:
        return None
    return " and ".join(parts) + f" of {str(d.get('sensitive'))[:60]!r}"


def privacy_facts_ok(got: Any) -> bool:
    """Whether ``measure_privacy``'s answer, as a sandbox worker sent it, has its shape: None,
    or the sensitive column's name and, for l and t, None or numbers (a measured None with the
    reason it was not checked)."""
    if got is None:
        return True
    if not isinstance(got, dict) or not isinstance(got.get("sensitive"), str) or \
            set(got) - {"sensitive", "l", "t"}:
        return False
    for name in ("l", "t"):
        part = got.get(name)
        if part is None:
            continue
        if not isinstance(part, dict) or not _number(part.get("claimed")):
            return False
        measured = part.get("measured")
        if measured is None:
            if not isinstance(part.get("not_checked"), str):
                return False
        elif not (_number(measured) and isinstance(part.get("classes_failing"), int)
                  and not isinstance(part.get("classes_failing"), bool)):
            return False
    return True

