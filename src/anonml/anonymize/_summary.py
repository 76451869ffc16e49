"""What a fitted anonymizer did, as plain numbers: groups, privacy reached, information lost."""

from __future__ import annotations

from typing import Any

from anonml._errors import InputError, NotFittedError
from anonml.encoding import as_frame

__all__ = ["FEW_GROUPS", "few_groups_warning", "summarize"]

#: an l or t that leaves fewer groups than this has collapsed the table: a warning, and a line
#: of the summary, say so (the output is still verified and written)
FEW_GROUPS = 2


def few_groups_warning(anonymizer: Any, frame: Any = None) -> str | None:
    """One line when the anonymizer's l or t left fewer than :data:`FEW_GROUPS` groups (every
    row gets the same quasi-identifier values, so the QIs say nothing), else None. k alone
    never warns, nor an l of 1, a t of 1 or a sensitive attribute of one value (they hold on
    any group), nor a table of fewer than ``FEW_GROUPS * k`` rows (k alone leaves one group
    there), nor (given the training ``frame``) one whose quasi-identifiers are the same on all
    but fewer than k rows (no two groups of k rows could differ in them)."""
    model = getattr(anonymizer, "model_", None)
    n_groups = int(getattr(anonymizer, "n_groups_", FEW_GROUPS))
    rows = len(getattr(anonymizer, "groups_", ()))
    binding = model is not None and int(model.n_values) >= 2 and (
        (model.l is not None and model.l > 1) or (model.t is not None and model.t < 1))
    if not binding or n_groups >= FEW_GROUPS or rows < FEW_GROUPS * int(anonymizer.k):
        return None
    if frame is not None:  # the rare path: the QI combinations counted once
        largest = int(frame[list(anonymizer.qi_)].value_counts(dropna=False).max())
        if rows - largest < int(anonymizer.k):
            return None
    fixes = []
    if model.t is not None:
        fixes.append(f"raise t (e.g. t={min(1.0, max(0.2, 10 * model.t)):g})")
    if model.l is not None:
        fixes.append(f"lower l (e.g. l={max(1.0, model.l - 1):g})")
    return (f"{model.describe()} leaves {n_groups} group of {rows:,} rows (fewer than "
            f"{FEW_GROUPS}): every row gets the same quasi-identifier values; fix: "
            f"{' or '.join(fixes)}")


def summarize(anonymizer: Any, X: Any) -> dict[str, Any]:
    """Numbers that describe a fitted anonymizer's output on its training data ``X``.

    Parameters
    ----------
    anonymizer : fitted anonymizer
        Any anonml anonymizer (:class:`~anonml.anonymize.AccuracyGuidedAnonymizer`,
        Mondrian, Hilbert, R+-tree, SaNGreeA), after ``fit``.
    X : DataFrame or 2-D array
        The *original* training data it was fitted on (information loss compares the groups
        with the original values).

    Returns
    -------
    dict
        ``method`` (class name), ``k``, ``rows``, ``quasi_identifiers``, ``groups``,
        ``smallest_class_verified``, ``suppressed_rows``, ``recoding``; ``l`` / ``t`` reached
        (as verified on the output) when they were asked for; and the information loss of
        the groups, each in [0, 1]: ``ncp`` (mean Normalized Certainty Penalty of a group, per
        QI; Xu et al. 2006), ``gcp`` (Global Certainty Penalty, the row-weighted NCP; Ghinita
        et al. 2007) and ``discernibility_normalized`` (the discernibility metric divided by
        ``rows**2``: 1 when everything is one class or suppressed), plus the raw
        ``discernibility`` (``sum |E|^2 + rows * suppressed``, Bayardo & Agrawal 2005). See
        :mod:`anonml.privacy._metrics`. ``warning``, when l or t collapsed the table into
        fewer than :data:`FEW_GROUPS` groups (:func:`few_groups_warning`).
    """
    from anonml.privacy import information_loss

    if not hasattr(anonymizer, "representatives_"):
        raise NotFittedError(f"this {type(anonymizer).__name__} is not fitted yet; call fit "
                             "before summarize")
    frame, _ = as_frame(X)
    if frame.shape[0] != len(anonymizer.groups_):
        raise InputError(f"X has {frame.shape[0]} rows but the anonymizer was fitted on "
                         f"{len(anonymizer.groups_)}; pass the training data it was fitted on")
    hierarchies = anonymizer._check_hierarchies(frame)
    loss = information_loss(
        frame, anonymizer.groups_, anonymizer.qi_, k=int(anonymizer.k),
        categorical=anonymizer.categorical_, hierarchies=hierarchies or None,
        suppressed=anonymizer.suppressed_,
    )
    n = int(loss["n_rows"])
    out: dict[str, Any] = {
        "method": type(anonymizer).__name__,
        "k": int(anonymizer.k),
        "rows": n,
        "quasi_identifiers": len(anonymizer.qi_),
        "groups": int(anonymizer.n_groups_),
        "smallest_class_verified": int(anonymizer.min_class_size_),
        "suppressed_rows": int(anonymizer.n_suppressed_),
        "recoding": anonymizer.recoding_,
    }
    for name, value in (anonymizer.privacy_ or {}).items():
        out[f"{name}_verified"] = float(value)
    out.update(
        ncp=float(loss["ncp_mean"]),
        gcp=float(loss["gcp"]),
        discernibility=int(loss["dm"]),
        discernibility_normalized=float(loss["dm"]) / float(n * n),
    )
    warning = few_groups_warning(anonymizer, frame)
    if warning:
        out["warning"] = warning
    return out
