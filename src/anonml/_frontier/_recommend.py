"""The recommendation a careful person would make from a frontier table, with its reasons.

The rule (also recorded with every recommendation, :data:`RULES`):

1. **Candidates**: every measured point, the undefended model included; not the DP baseline
   (no k, a comparison). A point **meets** the budgets when its figures (the estimates) are
   within them; a TPR budget is never met by a point whose TPR is not measurable.
2. **The undefended model first.** With a risk budget, when the model as it is meets every
   budget it is recommended: anonymizing would cost accuracy for a protection not asked for.
3. **With an accuracy budget** (alone or with a risk budget) the aim is the most protection
   within the cost: the meeting point of lowest attack AUC, *and every meeting point whose AUC
   interval overlaps its interval* (their risk cannot be told apart on this evaluation set),
   are the finalists; among them the higher accuracy on mapped rows wins (the undefended
   model's mapped accuracy is its raw accuracy: it needs no mapping), then on raw rows, then
   the simpler method (:data:`SIMPLICITY`), then the larger k.
4. **With a risk budget alone** the aim is the least cost within the risk: the meeting point
   of highest mapped, then raw accuracy, then the simpler method, then the lower AUC.
5. **Noise is said**: a budget the chosen point meets only by its estimate (its 95 % interval
   crosses the budget) is named "met only within noise", and the finalists (rule 3) or the
   points whose accuracy interval overlaps the chosen one's (rule 4) are named as "not
   significantly different".

Intervals are the frontier's bootstrap intervals (:mod:`anonml._frontier._uncertainty`);
a table without them (intervals NaN) is judged on the estimates alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError

__all__ = ["RULES", "SIMPLICITY", "choose", "fmt", "name_of"]

#: simpler first: no anonymization; methods grouping on the quasi-identifiers alone; the
#: accuracy-guided method (it also needs the model's predictions)
SIMPLICITY = {"none": 0, "mondrian": 1, "hilbert": 2, "rtree": 3, "sangreea": 4, "ag": 5}

RULES = {
    "undefended": "the undefended model meets every budget: no anonymization is needed",
    "accuracy": "most protection within the accuracy budget: lowest attack AUC, and among the "
                "points whose AUC interval overlaps it, the higher mapped then raw accuracy, "
                "then the simpler method, then the larger k",
    "risk": "least cost within the risk budget: the higher mapped then raw accuracy, then the "
            "simpler method, then the lower attack AUC",
}


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def ci(row: Any, col: str) -> tuple[float, float, float]:
    """``(estimate, lo, hi)`` of a column; lo/hi fall back to the estimate when missing."""
    v = _num(row.get(col))
    lo, hi = _num(row.get(f"{col}_lo")), _num(row.get(f"{col}_hi"))
    return v, (v if math.isnan(lo) else lo), (v if math.isnan(hi) else hi)


def fmt(row: Any, col: str, scale: float = 1.0, digits: int = 3, unit: str = "") -> str:
    """``0.842 [0.835, 0.850]`` (the interval only when the table has it)."""
    v = _num(row.get(col))
    if math.isnan(v):
        return "n/a"
    text = f"{scale * v:.{digits}f}{unit}"
    lo, hi = _num(row.get(f"{col}_lo")), _num(row.get(f"{col}_hi"))
    if not (math.isnan(lo) or math.isnan(hi)):
        text += f" [{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]"
    return text


def name_of(row: Any) -> str:
    if row["method"] == "none":
        return "the undefended model"
    if row["method"] == "dp":
        return f"DP (ε={_num(row.get('epsilon')):g})"
    return f"{row['method']} k={int(row['k'])}"


def _mapped(pts: pd.DataFrame) -> pd.Series:
    """Mapped accuracy, the raw accuracy where there is no mapping (the undefended model)."""
    return pts["accuracy_mapped"].astype(float).fillna(pts["accuracy"].astype(float))


def _loss(row: Any, mapped: bool) -> tuple[float, float, float]:
    if row["method"] == "none":
        return 0.0, 0.0, 0.0
    return ci(row, "accuracy_loss_mapped" if mapped else "accuracy_loss")


def _order(pts: pd.DataFrame, last: list[tuple[str, bool]]) -> pd.DataFrame:
    keyed = pts.assign(_m=_mapped(pts), _s=pts["method"].map(SIMPLICITY).fillna(9),
                       _k=pts["k"].astype(float).fillna(0))
    cols = ["_m", "accuracy", "_s"] + [c for c, _ in last]
    asc = [False, False, True] + [a for _, a in last]
    return keyed.sort_values(cols, ascending=asc, kind="mergesort")


def _overlap(a: tuple, b: tuple) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


def choose(result: Any, accuracy_budget: float | None, risk: dict, method: str | None,
           mapped: bool) -> dict:
    """The recommendation as a record: ``met``, ``point`` (method, k), ``line``, ``budgets``,
    ``rule``, ``within_noise``, ``not_significant`` and, when nothing meets, ``nearest``."""
    t = result.table
    pts = t[(t["status"] == "ok") & (t["method"] != "dp")]
    if method is not None:
        if method not in set(t["method"]):
            raise InputError(f"method {method!r} is not in this frontier; it holds "
                             f"{', '.join(sorted(set(pts['method']) - {'none'}))}")
        pts = pts[pts["method"].isin([method, "none"])]
    if pts.empty:
        raise InputError("no point of this frontier was measured (every one failed); see the "
                         "status column")
    budgets = {"accuracy_loss": accuracy_budget, "mapped": bool(mapped), **risk}
    loss = pts.apply(lambda r: _loss(r, mapped)[0], axis=1)
    excess = pd.Series(0.0, index=pts.index)
    what = []
    if accuracy_budget is not None:
        excess += (loss - accuracy_budget).clip(lower=0)
        what.append(f"an accuracy loss{' on mapped rows' if mapped else ''} of at most "
                    f"{100 * accuracy_budget:.2f} points")
    if "auc" in risk:
        excess += (pts["attack_auc"] - risk["auc"]).clip(lower=0)
        what.append(f"attack AUC <= {risk['auc']:g}")
    if "tpr" in risk:
        excess += (pts["tpr_at_0.1%_fpr"].fillna(np.inf) - risk["tpr"]).clip(lower=0)
        what.append(f"TPR at 0.1% FPR <= {risk['tpr']:g}")
    meets = pts[excess <= 1e-12]
    record: dict[str, Any] = {"budgets": budgets, "within_noise": [], "not_significant": []}
    if meets.empty:
        near = pts.loc[excess.idxmin()]
        fix = ("relax the budget or add smaller k" if not risk else
               "relax the budget or add larger k" if accuracy_budget is None else
               "relax a budget, or add other k")
        record.update(met=False, point=None, rule=None,
                      nearest={"method": near["method"], "k": _k(near)},
                      line=f"no point meets {' and '.join(what)}; the closest is "
                           f"{name_of(near)} ({result.describe(near)}); fix: {fix}")
        return record
    base = pts[pts["method"] == "none"]
    if risk and not base.empty and base.index[0] in meets.index:
        row, rule, others = base.iloc[0], "undefended", []
    elif accuracy_budget is not None:
        best = meets.loc[meets["attack_auc"].astype(float).idxmin()]
        b_ci = ci(best, "attack_auc")
        finalists = meets[[_overlap(ci(r, "attack_auc"), b_ci) for _, r in meets.iterrows()]]
        ranked = _order(finalists, [("_k", False), ("attack_auc", True)])
        row, rule = ranked.iloc[0], "accuracy"
        others = [r for _, r in ranked.iloc[1:].iterrows()]
    else:
        ranked = _order(meets, [("attack_auc", True)])
        row, rule = ranked.iloc[0], "risk"
        a_ci = ci(row, "accuracy_mapped" if not pd.isna(row["accuracy_mapped"]) else "accuracy")
        others = [r for _, r in ranked.iloc[1:].iterrows()
                  if _overlap(ci(r, "accuracy_mapped" if not pd.isna(r["accuracy_mapped"])
                                 else "accuracy"), a_ci)]
    noise = _within_noise(row, accuracy_budget, risk, mapped)
    record.update(met=True, point={"method": row["method"], "k": _k(row)}, rule=RULES[rule],
                  within_noise=noise, not_significant=[name_of(r) for r in others])
    record["line"] = _line(result, row, rule, others, noise, mapped)
    return record


def _k(row: Any) -> Any:
    return None if pd.isna(row["k"]) else int(row["k"])


def _within_noise(row: Any, accuracy_budget: Any, risk: dict, mapped: bool) -> list[str]:
    out = []
    if accuracy_budget is not None:
        v, _, hi = _loss(row, mapped)
        if hi > accuracy_budget + 1e-12:
            out.append(f"accuracy loss <= {100 * accuracy_budget:.2f} points (upper bound "
                       f"{100 * hi:.2f})")
    for key, col, label in (("auc", "attack_auc", "attack AUC"),
                            ("tpr", "tpr_at_0.1%_fpr", "TPR at 0.1% FPR")):
        if key in risk:
            _, _, hi = ci(row, col)
            if hi > risk[key] + 1e-12:
                out.append(f"{label} <= {risk[key]:g} (upper bound {hi:.3f})")
    return out


def _line(result: Any, row: Any, rule: str, others: list, noise: list, mapped: bool) -> str:
    attack = str(result.settings.get("attack", "attack")).upper()
    if rule == "undefended":
        text = (f"recommended: the undefended model as it is: it already meets the budgets "
                f"({attack} AUC {fmt(row, 'attack_auc')}); anonymizing would cost accuracy "
                "for protection not asked for")
    elif row["method"] == "none":
        text = (f"recommended: the undefended model as it is: no point within the budget has a "
                f"significantly lower attack AUC than its {attack} AUC "
                f"{fmt(row, 'attack_auc')}; anonymizing would cost accuracy for no measurable "
                "protection")
    else:
        col = "accuracy_loss_mapped" if mapped else "accuracy_loss"
        text = (f"recommended: {name_of(row)}: costs {fmt(row, col, 100, 2)} accuracy points "
                f"({result.describe(row).replace('; ', '); buys ', 1)}")
    if noise:
        text += "; budget met only within noise: " + ", ".join(noise)
    if others:
        what = "risk" if rule == "accuracy" else "accuracy"
        shown = ", ".join(f"{name_of(r)} (AUC {fmt(r, 'attack_auc')}, " + (
            f"accuracy {fmt(r, 'accuracy', 100, 2, '%')}" if pd.isna(r["accuracy_mapped"])
            else f"mapped accuracy {fmt(r, 'accuracy_mapped', 100, 2, '%')}") + ")"
            for r in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        text += (f"; not significantly different in {what}: {shown}{more}; chosen by "
                 + ("higher mapped, then raw accuracy, then the simpler method"
                    if rule == "accuracy" else "higher accuracy, then the simpler method"))
    return text
