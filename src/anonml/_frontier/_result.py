"""The frontier's result: the tidy table, its files, the Pareto front and automatic k."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._frontier._recommend import _order, _overlap, ci, fmt

__all__ = ["COLUMNS", "FrontierResult", "pareto_mask"]

#: the table's columns, in order
COLUMNS = ["method", "k", "epsilon", "status",
           "accuracy", "accuracy_lo", "accuracy_hi",
           "accuracy_mapped", "accuracy_mapped_lo", "accuracy_mapped_hi",
           "accuracy_loss", "accuracy_loss_lo", "accuracy_loss_hi",
           "accuracy_loss_mapped", "accuracy_loss_mapped_lo", "accuracy_loss_mapped_hi",
           "ncp", "gcp", "groups", "attack",
           "attack_auc", "attack_auc_lo", "attack_auc_hi",
           "tpr_at_0.1%_fpr", "tpr_at_0.1%_fpr_lo", "tpr_at_0.1%_fpr_hi", "tpr_measurable",
           "worst_case_auc", "worst_case_significant",
           "max_arr_low", "reference_models", "pareto", "model", "seconds"]
#: the columns that carry a 95 % interval (``<col>_lo``, ``<col>_hi``)
WITH_INTERVAL = ("accuracy", "accuracy_mapped", "accuracy_loss", "accuracy_loss_mapped",
                 "attack_auc", "tpr_at_0.1%_fpr")


def pareto_mask(accuracy: np.ndarray, risk: np.ndarray) -> np.ndarray:
    """True for the points no other point beats: at least as accurate and at most as risky,
    and strictly better in one of the two. NaN points are never on the front."""
    acc = np.asarray(accuracy, dtype=float)
    risk = np.asarray(risk, dtype=float)
    ok = np.isfinite(acc) & np.isfinite(risk)
    a, r = acc[:, None], risk[:, None]
    dominated = ((acc[None, :] >= a) & (risk[None, :] <= r)
                 & ((acc[None, :] > a) | (risk[None, :] < r)) & ok[None, :])
    return ok & ~dominated.any(axis=1)


def _pct(v: float) -> str:
    return f"{100 * v:.2f}%"


class FrontierResult:
    """What :func:`anonml.frontier` returns.

    Attributes
    ----------
    table : DataFrame
        One row per point: the undefended model first (``method="none"``), then each
        (method, k), then the DP baseline (``method="dp"``, with ``epsilon``). Columns:
        ``accuracy`` (retrained model on raw test rows), ``accuracy_mapped`` (on test rows
        mapped through the anonymizer), ``accuracy_loss`` / ``accuracy_loss_mapped`` (the
        undefended accuracy minus these), ``ncp``, ``gcp``, ``groups``, ``attack`` and
        ``attack_auc`` (RMIA or LiRA), ``tpr_at_0.1%_fpr`` with ``tpr_measurable`` (False and
        NaN below 1,000 non-members), ``worst_case_auc`` and ``worst_case_significant``
        (significant repetitions / repetitions), ``max_arr_low`` (largest lower 95 % bound of
        an attribute risk ratio), ``reference_models`` (shared or own), ``pareto`` (on the
        accuracy–AUC front), ``status`` ("ok", "failed: ...", "unavailable: ...") and
        ``seconds``. ``<column>_lo`` / ``<column>_hi``: the 95 % bootstrap interval of each
        column of :data:`WITH_INTERVAL` (NaN when not computed; the losses' intervals are
        paired differences on the same resampled test rows).
    settings : dict
        The sweep's parameters, sizes and total (wall and CPU) seconds.
    notes : list of str
        What the reader must know (shared reference models, unmeasurable rates, ...).
    recommendation : dict or None
        The last :meth:`recommend` asked (also when no point met the budgets: ``met`` is then
        False and ``nearest`` names the closest point); written into the JSON, the HTML and
        the plot.
    """

    def __init__(self, rows: pd.DataFrame, settings: dict, notes: list[str],
                 recommendation: dict | None = None) -> None:
        table = rows.copy()
        base = float(table.loc[0, "accuracy"])
        table["k"] = pd.array(table["k"], dtype="Int64")
        bounds = [f"{c}_{e}" for c in WITH_INTERVAL for e in ("lo", "hi")]
        for col in ("epsilon", "accuracy", "accuracy_mapped", "ncp", "gcp", "attack_auc",
                    "tpr_at_0.1%_fpr", "worst_case_auc", "max_arr_low", "seconds", *bounds):
            if col not in table:
                table[col] = np.nan
            table[col] = pd.to_numeric(table[col], errors="coerce").astype(float)
        table["groups"] = pd.array(pd.to_numeric(table.get("groups"), errors="coerce")
                                   .round(), dtype="Int64")
        table["accuracy_loss"] = base - table["accuracy"]
        table["accuracy_loss_mapped"] = base - table["accuracy_mapped"]
        table["attack"] = np.where(table["status"] == "ok", settings.get("attack"), None)
        for col in ("tpr_measurable", "worst_case_significant", "reference_models", "model"):
            if col not in table:
                table[col] = None
        table["tpr_measurable"] = table["tpr_measurable"].astype(object)
        table["pareto"] = pareto_mask(table["accuracy"].to_numpy(),
                                      table["attack_auc"].to_numpy())
        self.table = table[COLUMNS].reset_index(drop=True)
        self.settings = settings
        self.notes = list(notes)
        self.recommendation = recommendation

    @classmethod
    def from_dict(cls, doc: dict) -> FrontierResult:
        """The result back from :meth:`to_dict` (or a ``frontier.json`` read with ``json``):
        ask it for other budgets without running the sweep again."""
        if not isinstance(doc, dict) or not isinstance(doc.get("points"), list) \
                or not doc["points"]:
            raise InputError("not a frontier document: it has no 'points' list; fix: give "
                             "the frontier.json the sweep wrote")
        rows = pd.DataFrame(doc["points"])
        keep = [c for c in rows.columns if c not in ("accuracy_loss", "accuracy_loss_mapped",
                                                     "attack", "pareto")]
        return cls(rows[keep], dict(doc.get("settings") or {}), list(doc.get("notes") or []),
                   doc.get("recommendation"))

    def __repr__(self) -> str:
        return (f"FrontierResult({len(self.table)} points, undefended accuracy "
                f"{_pct(self.baseline['accuracy'])}, AUC {self.baseline['attack_auc']:.3f})")

    @property
    def baseline(self) -> dict:
        """The undefended model's row, as a dict."""
        return self.table.iloc[0].to_dict()

    # ------------------------------------------------------------------------ files -------
    def to_csv(self, path: Any = None) -> str | None:
        """The table as CSV (to ``path``, written atomically, or returned as text)."""
        text = self.table.to_csv(index=False)
        if path is None:
            return text
        from anonml._output import atomic_write

        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return None

    def to_dict(self) -> dict:
        """Plain data: ``settings``, ``notes`` and ``points`` (the table's rows)."""
        from anonml._utils import json_safe

        points = []
        for rec in self.table.astype(object).where(self.table.notna(), None).to_dict("records"):
            points.append({k: (None if isinstance(v, float) and math.isnan(v) else v)
                           for k, v in rec.items()})
        return json_safe({"settings": self.settings, "notes": self.notes,
                          "recommendation": self.recommendation, "points": points})

    def to_json(self, path: Any = None) -> str | None:
        """The settings, notes and table as JSON (to ``path``, atomically, or as text)."""
        text = json.dumps(self.to_dict(), indent=2)
        if path is None:
            return text
        from anonml._output import atomic_write

        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return None

    def plot(self, path: Any = None, *, ax: Any = None) -> Any:
        """Accuracy against attack AUC (see :func:`anonml._frontier._render.plot`)."""
        from anonml._frontier._render import plot

        return plot(self, path, ax=ax)

    def to_html(self, path: Any = None) -> str | None:
        """A self-contained page: the plot (inline PNG) and the table."""
        from anonml._frontier._render import html_page

        text = html_page(self)
        if path is None:
            return text
        from anonml._output import atomic_write

        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return None

    # ------------------------------------------------------------------------ automatic k -
    def _points(self, method: str | None) -> pd.DataFrame:
        pts = self.table[(self.table["status"] == "ok") & self.table["k"].notna()]
        if method is not None:
            if method not in set(self.table["method"]):
                raise InputError(f"method {method!r} is not in this frontier; it holds "
                                 f"{', '.join(sorted(set(pts['method'])))}")
            pts = pts[pts["method"] == method]
        if pts.empty:
            raise InputError("no anonymized point of this frontier was measured (every one "
                             "failed); see the status column")
        return pts

    @staticmethod
    def _name(row: Any) -> str:
        return f"{row['method']} k={int(row['k'])}"

    def _closest(self, pts: pd.DataFrame, excess: pd.Series, what: str,
                 fix: str = "relax the budget") -> InputError:
        best = pts.loc[excess.idxmin()]
        return InputError(f"no point meets {what}; the closest is {self._name(best)} "
                          f"({self.describe(best)}); fix: {fix}")

    def largest_k(self, max_accuracy_loss: float = 0.01, method: str | None = None, *,
                  mapped: bool = False) -> dict:
        """The point with the largest k whose accuracy loss is at most ``max_accuracy_loss``.

        Ties in k (several methods): among the points whose attack-AUC interval overlaps the
        lowest one's (risk not distinguishable), the higher mapped, then raw accuracy, then
        the simpler method. ``mapped=True`` judges the accuracy on test rows mapped through
        the anonymizer. Raises InputError naming the closest point when none meets the budget.
        """
        pts = self._points(method)
        loss = pts["accuracy_loss_mapped" if mapped else "accuracy_loss"]
        ok = pts[loss <= max_accuracy_loss + 1e-12]
        if ok.empty:
            raise self._closest(pts, loss - max_accuracy_loss,
                                f"an accuracy loss of at most {100 * max_accuracy_loss:.2f} "
                                "points", "relax the budget or add smaller k")
        top = ok[ok["k"] == ok["k"].max()]
        best = top.loc[top["attack_auc"].astype(float).idxmin()]
        b_ci = ci(best, "attack_auc")
        tied = top[[_overlap(ci(r, "attack_auc"), b_ci) for _, r in top.iterrows()]]
        return _order(tied, [("attack_auc", True)]).iloc[0][list(self.table.columns)].to_dict()

    def smallest_k(self, max_auc: float | None = None, max_tpr: float | None = None,
                   method: str | None = None) -> dict:
        """The point with the smallest k whose attack AUC is at most ``max_auc`` (and/or TPR
        at 0.1 % FPR at most ``max_tpr``; a point whose TPR is not measurable does not meet a
        TPR budget). Ties in k go to the higher mapped, then raw accuracy, then the simpler
        method. Raises InputError naming the closest point when none meets the budget."""
        if max_auc is None and max_tpr is None:
            raise InputError("smallest_k needs max_auc= or max_tpr= (e.g. max_auc=0.55)")
        pts = self._points(method)
        excess = pd.Series(0.0, index=pts.index)
        what = []
        if max_auc is not None:
            excess = excess + (pts["attack_auc"] - max_auc).clip(lower=0)
            what.append(f"attack AUC <= {max_auc:g}")
        if max_tpr is not None:
            tpr = pts["tpr_at_0.1%_fpr"].fillna(np.inf)
            excess = excess + (tpr - max_tpr).clip(lower=0)
            what.append(f"TPR at 0.1% FPR <= {max_tpr:g}")
        ok = pts[excess <= 0]
        if ok.empty:
            raise self._closest(pts, excess, " and ".join(what),
                                "relax the budget or add larger k")
        top = ok[ok["k"] == ok["k"].min()]
        return _order(top, [("attack_auc", True)]).iloc[0][list(self.table.columns)].to_dict()

    def describe(self, row: Any) -> str:
        """What a point costs and buys, in a few words, each figure with its 95 % interval."""
        base = self.baseline
        cost = (f"accuracy {fmt(row, 'accuracy', 100, 2, '%')} vs "
                f"{fmt(base, 'accuracy', 100, 2, '%')} undefended")
        if row.get("accuracy_mapped") is not None and not pd.isna(row["accuracy_mapped"]):
            cost += f", {fmt(row, 'accuracy_mapped', 100, 2, '%')} on mapped rows"
        buys = (f"{str(self.settings.get('attack', 'attack')).upper()} AUC "
                f"{fmt(row, 'attack_auc')} vs {fmt(base, 'attack_auc')}")
        if not pd.isna(row.get("tpr_at_0.1%_fpr")) and not pd.isna(base.get("tpr_at_0.1%_fpr")):
            buys += (f", TPR at 0.1% FPR {fmt(row, 'tpr_at_0.1%_fpr', 100, 2, '%')} vs "
                     f"{fmt(base, 'tpr_at_0.1%_fpr', 100, 2, '%')}")
        return f"{cost}; {buys}"

    def recommend(self, accuracy_budget: float | None = None,
                  risk_budget: Any = None, *, method: str | None = None,
                  mapped: bool = False) -> str:
        """One plain line: the recommended point, what it costs and buys, and the noise.

        Parameters
        ----------
        accuracy_budget : float, optional
            Largest accuracy loss allowed (0.01 = one point).
        risk_budget : float or dict, optional
            Largest attack AUC (a number), or ``{"auc": 0.55}`` / ``{"tpr": 0.01}``.
        method : str, optional
            Only this method's points (and the undefended model).
        mapped : bool
            Judge the accuracy loss on mapped test rows.

        The rule is :mod:`anonml._frontier._recommend`'s: the undefended model is a candidate
        and is recommended when it meets a risk budget; with an accuracy budget, the lowest
        attack AUC within it, and among points whose AUC intervals overlap, the higher mapped
        then raw accuracy, then the simpler method; with a risk budget alone, the most
        accurate point within it. The line says when a budget is met only within noise and
        which points are not significantly different. The record (point, budgets, rule) is
        kept in :attr:`recommendation`. Raises InputError naming the closest point when none
        qualifies (:attr:`recommendation` then has ``met=False`` and ``nearest``).
        """
        from anonml._frontier._recommend import choose

        if accuracy_budget is None and risk_budget is None:
            raise InputError("recommend needs accuracy_budget= or risk_budget= "
                             "(e.g. accuracy_budget=0.01, risk_budget={'auc': 0.55})")
        risk = _risk(risk_budget)
        if "tpr" in risk and not self.table.loc[self.table["status"] == "ok",
                                                "tpr_measurable"].astype(bool).any():
            raise InputError(f"a TPR budget cannot be judged: TPR at 0.1% FPR is not "
                             f"measurable with {self.settings.get('n_test', 'these')} test "
                             "rows (it needs at least 1,000 non-members); fix: a budget on "
                             "the AUC, or a test set of at least 1,000 rows")
        record = choose(self, accuracy_budget, risk, method, mapped)
        self.recommendation = record
        if not record["met"]:
            raise InputError(record["line"])
        return record["line"]


def _risk(budget: Any) -> dict:
    if budget is None:
        return {}
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        return {"auc": float(budget)}
    if isinstance(budget, dict) and budget and set(budget) <= {"auc", "tpr"}:
        return {k: float(v) for k, v in budget.items()}
    raise InputError(f"risk_budget={budget!r}; fix: a largest AUC (0.55) or a dict such as "
                     "{'auc': 0.55} or {'tpr': 0.01}")


def parse_risk_budget(text: str) -> dict:
    """``"auc=0.55"``, ``"tpr=0.01"`` or both comma-separated -> dict (the CLI's syntax)."""
    out = {}
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, eq, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not eq or name.strip() not in ("auc", "tpr") or not 0 <= number <= 1:
            raise InputError(f"--risk-budget {part!r} is not auc=NUMBER or tpr=NUMBER with a "
                             "number in [0, 1]; fix: e.g. --risk-budget auc=0.55")
        out[name.strip()] = number
    if not out:
        raise InputError("--risk-budget is empty; fix: e.g. --risk-budget auc=0.55")
    return out

