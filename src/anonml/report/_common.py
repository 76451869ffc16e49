"""Formatting and layout shared by the HTML and PDF renderers.

Nothing here computes a result: it formats numbers that are in the report, maps enumerated
values to words, orders rows for display, and maps given points to plot coordinates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CATEGORY_LABELS",
    "DECISION_COLOURS",
    "EFFECT_LABELS",
    "FPR_MIN",
    "OUTCOME_LABELS",
    "ROC_X_TICKS",
    "ROC_Y_TICKS",
    "SERIES_COLOURS",
    "SERIES_DASHES",
    "TAMPER_LABELS",
    "arr_axis",
    "chance_line",
    "evidence_groups",
    "fmt",
    "fmt_ci",
    "fmt_param",
    "fmt_tick",
    "humanize",
    "label_of",
    "roc_axis",
    "roc_minor",
    "roc_x",
    "segments",
]

#: banner colour (hex) per decision: green, amber, red; all pass WCAG AA with white text
DECISION_COLOURS = {
    "release": "#1e7b34",
    "release_with_conditions": "#b45309",
    "do_not_release": "#b91c1c",
}
OUTCOME_LABELS = {
    "fail": "Fail",
    "not_evaluated": "Not evaluated",
    "pass": "Pass",
    "not_applicable": "Not applicable",
}
EFFECT_LABELS = {"block": "Blocks release", "condition": "Condition of release", "warn": "Warning"}
CATEGORY_LABELS = {
    "hyperparameter": "Hyperparameter",
    "structure": "Model structure",
    "tamper": "Tamper check",
    "membership": "Membership attack",
    "attribute": "Attribute inference",
    "anonymization": "Anonymization",
    "privacy_budget": "Privacy budget",
    "performance": "Performance",
}
TAMPER_LABELS = {
    "unchanged": "Unchanged since it was trained through the safe wrapper",
    "changed": "Changed after training",
    "no_fingerprint": "No fingerprint: whether the model was changed cannot be checked",
}
_GROUP_TITLES = {
    "fail": "Failed",
    "not_evaluated": "Not evaluated",
    "pass": "Passed",
    "not_applicable": "Not applicable",
}
_EFFECT_ORDER = ("block", "condition", "warn")

#: Okabe-Ito colours (colour-blind safe), with dash patterns so the curves differ in greyscale too
SERIES_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
SERIES_DASHES = ((), (7, 3), (2, 2.5), (9, 3, 2, 3), (4, 4), (1, 3), (12, 4))

#: the log-FPR axis runs from FPR_MIN to 1; points with FPR below it are drawn at its left edge
FPR_MIN = 1e-4
ROC_X_TICKS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
ROC_Y_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def fmt(value: Any, missing: str = "not measured") -> str:
    """Format one report value for display.

    Integers get thousands separators; floats three significant digits, trailing zeros kept
    (none after the point from 100 on; two digits, maybe in scientific notation, below 0.001);
    booleans read "yes"/"no"; ``None`` reads ``missing``.
    """
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1e-3:
            return f"{value:#.3g}"
        return f"{value:.2g}"
    return str(value)


def fmt_tick(value: float) -> str:
    """An axis tick label: shortest form, ``0.0001``, ``0.5``, ``1``."""
    return f"{value:.4f}".rstrip("0").rstrip(".") if value < 1 else f"{value:g}"


def fmt_param(value: Any) -> str:
    """A hyperparameter value as Python writes it (``True``, ``None``, ``0.1``, ``gini``)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    return fmt(value)


def fmt_ci(low: Any, high: Any, sep: str = " - ") -> str:
    """A confidence interval ``low - high``, or "not measured" when a bound is missing."""
    if low is None or high is None:
        return "not measured"
    return f"{fmt(low)}{sep}{fmt(high)}"


def humanize(key: str) -> str:
    """``"min_group_size"`` -> ``"Min group size"`` (for dictionary keys shown as labels)."""
    text = key.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def evidence_groups(evidence: Iterable[dict]) -> list[tuple[str, str, list[dict]]]:
    """Evidence rows grouped for display: failing first (by effect: block, condition, warn).

    Returns
    -------
    list of (outcome, group title, rows)
        Only non-empty groups, in the order fail, not evaluated, pass, not applicable;
        file order is kept inside a group (failing rows are ordered by severity first).
    """
    rows = list(evidence)
    groups = []
    for outcome, title in _GROUP_TITLES.items():
        members = [r for r in rows if r["outcome"] == outcome]
        if outcome == "fail":
            members.sort(key=lambda r: _EFFECT_ORDER.index(r["effect"]))
        if members:
            groups.append((outcome, title, members))
    return groups


def roc_axis(attacks: Iterable[dict]) -> tuple[float, tuple[float, ...]]:
    """Left end and ticks of the log FPR axis: the smallest false positive rate the attacks'
    test sets resolve (their ``fpr_min`` = 1 / non-members; ``FPR_MIN`` for reports that do
    not give it), then the decades above it."""
    given = [a["fpr_min"] for a in attacks if a.get("fpr_min")]
    lo = min(min(given), 0.1) if given else FPR_MIN
    first = math.ceil(math.log10(lo) - 1e-9)
    decades = [10.0 ** k for k in range(first, 1)]
    ticks = [d for d in decades if d >= lo or math.isclose(d, lo)]
    if ticks[0] > lo * 1.8:  # label the left end unless a decade sits next to it
        ticks.insert(0, lo)
    return lo, tuple(ticks)


def roc_minor(lo: float) -> list[float]:
    """Minor grid positions of the log FPR axis: 2..9 times each decade, right of ``lo``."""
    start = math.floor(math.log10(lo) + 1e-9)
    return [10.0 ** k * m for k in range(start, 0) for m in range(2, 10) if 10.0 ** k * m > lo]


def roc_x(fpr: float, lo: float = FPR_MIN) -> float:
    """Position (0 = left, 1 = right) of a false-positive rate on the log10 axis [lo, 1]."""
    low = math.log10(lo)
    return (math.log10(max(fpr, lo)) - low) / -low


def chance_line(n: int = 49, lo: float = FPR_MIN) -> list[tuple[float, float]]:
    """The chance line TPR = FPR as (x position, tpr) pairs; it is a curve on the log axis."""
    low = math.log10(lo)
    points = []
    for i in range(n):
        fpr = 10 ** (low * (1 - i / (n - 1)))
        points.append((roc_x(fpr, lo), fpr))
    return points


def label_of(report: dict, key: str) -> str:
    """The report's human label of a measure key, else the key made readable."""
    labels = report.get("labels") or {}
    return labels.get(key) or humanize(key.rsplit(".", 1)[-1])


_IDENT = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)+(?![\w])"
                    r"|(?<![\w.])[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+(?![\w.])")


def segments(text: str, labels: dict) -> list[tuple[str, str]]:
    """``text`` cut into ``("text", ...)``, ``("measure", key)`` (a key with a label in
    ``labels``) and ``("id", name)`` (another identifier, such as a hyperparameter name), so a
    renderer can show labels and keep identifiers whole."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _IDENT.finditer(text):
        if m.start() > pos:
            out.append(("text", text[pos : m.start()]))
        token = m.group(0)
        out.append(("measure" if token in labels else "id", token))
        pos = m.end()
    if pos < len(text):
        out.append(("text", text[pos:]))
    return out


def arr_axis(rows: Iterable[dict]) -> tuple[float, list[float]]:
    """Upper end and ticks of the linear ARR axis, which starts at 0 and always shows ARR = 1.

    The upper end is the largest ARR or CI bound shown, at least 2, rounded up to a half.
    """
    values = [2.0]
    for row in rows:
        values += [v for v in (row["arr"], row["ci_low"], row["ci_high"]) if v is not None]
    hi = math.ceil(max(values) * 2) / 2
    step = 0.5 if hi <= 4 else 1.0 if hi <= 10 else math.ceil(hi / 10)
    hi = math.ceil(hi / step) * step
    ticks = [i * step for i in range(round(hi / step) + 1)]
    return hi, ticks


def privacy_words(got: Any, claim: Any = None) -> str | None:
    """One line for the report: the l and t claimed against those measured on the training
    rows (``got``: ``measure_privacy``'s answer or None), or, without training rows, that the
    claim (``claim``, :func:`privacy_claim`'s words) could not be checked."""
    if not got:
        if claim:
            return (f"the file claims {claim}; not checked: the audit had no training rows "
                    "(--train)")
        return None
    parts = []
    for name in ("l", "t"):
        part = got.get(name)
        if not part:
            continue
        if part.get("measured") is None:
            parts.append(f"{name}: the file claims {part['claimed']:g}; not checked "
                         f"({part.get('not_checked')})")
            continue
        ok = "below" if name == "l" else "above"
        bad = part.get("classes_failing") or 0
        parts.append(f"{name}: the file claims {part['claimed']:g}; the training rows give "
                     f"{part['measured']:.4g}"
                     + (f" ({bad:,} classes {ok} the claim)" if bad else ""))
    return f"{got['sensitive']!r}: " + "; ".join(parts)
