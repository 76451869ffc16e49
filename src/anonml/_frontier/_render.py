"""The frontier's figure (accuracy against attack AUC) and its self-contained HTML page.

Rendering only: every number comes from :class:`~anonml._frontier.FrontierResult`'s table.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import numpy as np
import pandas as pd

from anonml._methods import METHODS

__all__ = ["html_page", "plot", "png_bytes"]

_MARKERS = {name: spec.marker for name, spec in METHODS.items()}


def _pyplot() -> Any:
    from anonml._io import check_packages

    check_packages("matplotlib", purpose="drawing the frontier")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _err(part: pd.DataFrame, col: str, scale: float = 1.0) -> Any:
    """Error-bar lengths ``[below, above]`` from ``col_lo`` / ``col_hi`` (None without)."""
    v = part[col].to_numpy(float)
    lo, hi = part[f"{col}_lo"].to_numpy(float), part[f"{col}_hi"].to_numpy(float)
    if np.isnan(lo).all() or np.isnan(hi).all():
        return None
    return scale * np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)])


def _bars(ax: Any, part: pd.DataFrame, **kw: Any) -> Any:
    return ax.errorbar(part["attack_auc"], 100 * part["accuracy"],
                       xerr=_err(part, "attack_auc"), yerr=_err(part, "accuracy", 100),
                       elinewidth=0.7, capsize=1.5, **kw)


def _place_labels(ax: Any, labels: list, fontsize: float = 7.0) -> None:
    """Write the k labels next to their points so that no two overlap (greedy: the first
    of eight positions around the point that meets no label and no point already placed)."""
    fig = ax.figure
    ax.autoscale_view()
    px = fig.dpi / 72.0
    pts = ax.transData.transform(np.array([[x, y] for x, y, _ in labels]).reshape(-1, 2))
    taken = [(x - 3 * px, y - 3 * px, x + 3 * px, y + 3 * px) for x, y in pts]
    h = fontsize * 1.15 * px
    for (x, y), (_, _, text) in zip(pts, labels):
        w = 0.62 * fontsize * len(text) * px
        spots = [(4, 2), (4, -2 - h / px), (-4 - w / px, 2), (-4 - w / px, -2 - h / px),
                 (4, 4 + h / px), (-w / (2 * px), 5), (-w / (2 * px), -5 - h / px),
                 (4, -4 - 2 * h / px)]
        chosen = spots[0]
        for dx, dy in spots:
            box = (x + dx * px, y + dy * px, x + dx * px + w, y + dy * px + h)
            if not any(box[0] < t[2] and t[0] < box[2] and box[1] < t[3] and t[1] < box[3]
                       for t in taken):
                chosen = (dx, dy)
                break
        bx, by = x + chosen[0] * px, y + chosen[1] * px
        taken.append((bx, by, bx + w, by + h))
        data = ax.transData.inverted().transform((x, y))
        ax.annotate(text, data, textcoords="offset points", xytext=chosen, fontsize=fontsize,
                    ha="left", va="bottom")


def _draw(result: Any, ax: Any) -> None:
    t = result.table
    ok = t[t["status"] == "ok"]
    attack = str(result.settings.get("attack", "rmia")).upper()
    labels = []
    for method, part in ok[ok["k"].notna()].groupby("method", sort=False):
        part = part.sort_values("k")
        _bars(ax, part, marker=_MARKERS.get(method, "o"), label=method, linewidth=1.2,
              markersize=5)
        labels += [(r["attack_auc"], 100 * r["accuracy"], f"{int(r['k'])}")
                   for _, r in part.iterrows()]
    base = t.iloc[0]
    if base["status"] == "ok":
        _bars(ax, t.iloc[:1], marker="*", markersize=13, color="black", linestyle="none",
              zorder=5, label="undefended")
        ax.axhline(100 * base["accuracy"], color="black", linewidth=0.6, linestyle=":",
                   label=f"undefended accuracy ({100 * base['accuracy']:.2f}%)")
    dp = ok[ok["method"] == "dp"]
    for _, r in dp.iterrows():
        _bars(ax, dp.loc[[_]], marker="P", markersize=9, color="tab:red", linestyle="none",
              zorder=5, label=f"DP (ε={r['epsilon']:g})")
    front = ok[ok["pareto"].astype(bool)].sort_values("attack_auc")
    if not front.empty:
        ax.scatter(front["attack_auc"], 100 * front["accuracy"], s=140, facecolors="none",
                   edgecolors="tab:green", linewidths=1.5, zorder=6, label="Pareto front")
        ax.step(front["attack_auc"], 100 * front["accuracy"], where="post", color="tab:green",
                linewidth=0.8, alpha=0.6)
    ax.axvline(0.5, color="grey", linewidth=0.6, linestyle="--",
               label="AUC 0.5: the attack guesses")
    rec = getattr(result, "recommendation", None) or {}
    budgets = rec.get("budgets") or {}
    if budgets.get("accuracy_loss") is not None and base["status"] == "ok":
        level = 100 * (base["accuracy"] - budgets["accuracy_loss"])
        ax.axhline(level, color="tab:purple", linewidth=0.9, linestyle="-.",
                   label=f"accuracy budget: loss <= {100 * budgets['accuracy_loss']:.2f} points"
                   + (" (judged on mapped rows)" if budgets.get("mapped") else ""))
    if budgets.get("auc") is not None:
        ax.axvline(budgets["auc"], color="tab:purple", linewidth=0.9, linestyle=(0, (5, 2)),
                   label=f"risk budget: AUC <= {budgets['auc']:g}")
    mark = rec.get("point") if rec.get("met") else rec.get("nearest")
    if mark:
        hit = t[(t["method"] == mark["method"]) & (t["status"] == "ok")
                & ((t["k"].isna() & (mark.get("k") is None))
                   | (t["k"].astype(float) == float(mark.get("k") or -1)))]
        if not hit.empty:
            r = hit.iloc[0]
            ax.scatter([r["attack_auc"]], [100 * r["accuracy"]], s=320, marker="o",
                       facecolors="none", edgecolors="crimson", linewidths=2.2, zorder=7,
                       label="recommended" if rec.get("met") else "nearest (budget not met)")
    ax.set_xlabel(f"membership attack AUC ({attack}, real people as members)")
    ax.set_ylabel("test accuracy of the retrained model, raw test rows (%)")
    bars = " ; bars: 95% intervals" if result.settings.get("bootstrap") else ""
    ax.set_title(f"privacy–utility frontier (numbers: k{bars})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=3,
              frameon=False)
    if labels:
        if len(ax.figure.axes) == 1:
            ax.figure.tight_layout()  # the final axes size, so the labels are placed in it
        _place_labels(ax, labels)


def plot(result: Any, path: Any = None, *, ax: Any = None) -> Any:
    """Draw accuracy against attack AUC: one line per method with k at each point, the
    undefended model (star, dotted line), the DP baseline, and the Pareto front (rings).

    Writes ``path`` (PNG, SVG or PDF by its extension, atomically) when given; returns the
    matplotlib figure.
    """
    plt = _pyplot()
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(9.0, 6.4))
    else:
        fig = ax.figure
    _draw(result, ax)
    fig.tight_layout()
    if path is not None:
        from pathlib import Path

        from anonml._output import atomic_write

        fmt = Path(path).suffix.lstrip(".").lower() or "png"
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120))
    if own:
        plt.close(fig)
    return fig


def png_bytes(result: Any) -> bytes:
    """The figure as PNG bytes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 6.4))
    _draw(result, ax)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


#: the page's columns: plain-language header, the exact table column(s) (the tooltip and
#: the key), and how the cell reads
PAGE_COLUMNS = [
    ("Point", ("method", "k", "epsilon"), "the method and k (DP: its ε); the first row is the "
     "model as it is"),
    ("Accuracy (%)", ("accuracy", "accuracy_lo", "accuracy_hi"),
     "test accuracy of the retrained model on raw test rows, with its 95% interval"),
    ("Accuracy on mapped rows (%)", ("accuracy_mapped", "accuracy_mapped_lo", "accuracy_mapped_hi"),
     "test accuracy on test rows mapped through the anonymizer (the released pipeline)"),
    ("Cost (points)", ("accuracy_loss", "accuracy_loss_lo", "accuracy_loss_hi"),
     "accuracy points lost against the model as it is (paired interval)"),
    ("Membership attack AUC", ("attack_auc", "attack_auc_lo", "attack_auc_hi"),
     "how well the attack tells the training people from others: 0.5 = guessing, 1 = always"),
    ("People exposed at 0.1% false alarms (%)", ("tpr_at_0.1%_fpr", "tpr_at_0.1%_fpr_lo",
                                             "tpr_at_0.1%_fpr_hi", "tpr_measurable"),
     "share of the training people the attack finds while wrongly flagging 1 in 1,000 others "
     "(needs 1,000 test rows)"),
    ("Worst-case AUC", ("worst_case_auc", "worst_case_significant"),
     "SACRO-ML's worst-case attack, and its significant repetitions"),
    ("Attribute risk", ("max_arr_low",),
     "largest lower 95% bound of an attribute risk ratio (above 1: the model reveals its "
     "training people's attributes more than others')"),
    ("Groups / info lost", ("groups", "gcp", "ncp"),
     "equivalence classes formed, and the information lost (GCP)"),
]


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return f


def _fig(r: Any, col: str, pct: bool) -> str:
    v = _num(r.get(col))
    if np.isnan(v):
        return '<span class="muted">–</span>'
    s = 100 if pct else 1
    d = 2 if pct else 3
    text = f"<b>{s * v:.{d}f}</b>"
    lo, hi = _num(r.get(f"{col}_lo")), _num(r.get(f"{col}_hi"))
    if not (np.isnan(lo) or np.isnan(hi)):
        text += f'<br><span class="ci">[{s * lo:.{d}f}, {s * hi:.{d}f}]</span>'
    return text


def _cells(r: Any) -> list[str]:
    from anonml._frontier._recommend import name_of

    point = html.escape(name_of(r) if r["method"] != "none" else "undefended model")
    if str(r["status"]) != "ok":
        point += f'<br><span class="ci">{html.escape(str(r["status"]))[:120]}</span>'
    elif bool(r["pareto"]):
        point += '<br><span class="badge front">Pareto front</span>'
    tpr = (_fig(r, "tpr_at_0.1%_fpr", True) if r.get("tpr_measurable") is not False
           else '<span class="muted">not measurable</span>')
    wc = _fig(r, "worst_case_auc", False)
    if r.get("worst_case_significant"):
        wc += f'<br><span class="ci">{html.escape(str(r["worst_case_significant"]))} sig.</span>'
    groups = "–" if pd.isna(r.get("groups")) else f"{int(r['groups']):,}"
    gcp = _num(r.get("gcp"))
    groups += "" if np.isnan(gcp) else f'<br><span class="ci">GCP {gcp:.3f}</span>'
    return [point, _fig(r, "accuracy", True), _fig(r, "accuracy_mapped", True),
            _fig(r, "accuracy_loss", True), _fig(r, "attack_auc", False), tpr, wc,
            _fig(r, "max_arr_low", False), groups]


_PAGE_CSS = """
.verdict.rec-none { background:#4b5563; }
.verdict .label { font-size:2rem; }
.verdict .summary { font-size:1rem; overflow-wrap:anywhere; }
.verdict .rule { font-size:.9rem; opacity:.95; margin-top:10px; }
table.frontier { table-layout:fixed; font-size:.84rem; }
table.frontier th { font-size:.78rem; cursor:help; overflow-wrap:anywhere; hyphens:auto; }
table.frontier td { overflow-wrap:anywhere; }
table.frontier td:first-child, table.frontier th:first-child { text-align:left; }
table.frontier .ci { color:var(--muted); font-size:.76rem; white-space:nowrap; }
table.frontier tr.chosen td { background:#fdf2e9; }
table.frontier tr.chosen td:first-child { box-shadow:inset 4px 0 0 #c2410c; }
.badge.front { color:var(--pass); font-size:.68rem; padding:0 6px; }
img.plot { width:100%; height:auto; display:block; }
@media (max-width:900px) {
  table.frontier, table.frontier tbody, table.frontier tr, table.frontier td {
    display:block; width:auto; }
  table.frontier thead, table.frontier colgroup { display:none; }
  table.frontier tr { border-bottom:2px solid #c5ccd6; padding:6px 0;
    display:grid; grid-template-columns:repeat(3, minmax(0,1fr)); gap:2px 10px; }
  table.frontier td { border:0; padding:3px 4px; text-align:left; }
  table.frontier tr.chosen { background:#fdf2e9; box-shadow:inset 4px 0 0 #c2410c; }
  table.frontier td:first-child { grid-column:1 / -1; font-size:1rem; font-weight:700; }
  table.frontier td[data-label]:first-child::before { display:none; }
  table.frontier td[data-label]::before { content:attr(data-label); display:block;
    color:var(--muted); font-size:.7rem; text-transform:uppercase; letter-spacing:.05em; }
}
"""


def _banner(result: Any) -> str:
    rec = getattr(result, "recommendation", None)
    if not rec:
        return ('<div class="verdict rec-none"><div class="kicker">Recommendation</div>'
                '<div class="label">No budget given</div><p class="summary">Ask for one: '
                '<code>--accuracy-budget 0.01</code> (the most protection within one accuracy '
                'point) or <code>--risk-budget auc=0.55</code> (the least cost within an '
                'attack AUC); or <code>result.recommend(...)</code>.</p></div>')
    b = rec.get("budgets") or {}
    stated = []
    if b.get("accuracy_loss") is not None:
        stated.append(f"accuracy loss <= {100 * b['accuracy_loss']:.2f} points"
                      + (" on mapped rows" if b.get("mapped") else ""))
    if b.get("auc") is not None:
        stated.append(f"attack AUC <= {b['auc']:g}")
    if b.get("tpr") is not None:
        stated.append(f"TPR at 0.1% FPR <= {b['tpr']:g}")
    budgets = "Budgets: " + "; ".join(stated) + "."
    if not rec.get("met"):
        near = rec.get("nearest") or {}
        label = "No point meets the budgets"
        colour = "#b91c1c"
        rule = (f"{budgets} The closest point ({html.escape(str(near.get('method')))}"
                + (f" k={near['k']}" if near.get("k") is not None else "")
                + ") is ringed on the plot and marked in the table.")
        summary = rec.get("line", "")
    else:
        p = rec["point"]
        label = ("The undefended model" if p["method"] == "none"
                 else f"{p['method']} k={p['k']}")
        colour = "#b45309" if rec.get("within_noise") else "#1e7b34"
        rule = (f"{budgets} Rule: {rec.get('rule')}."
                + (" The budget is met only within noise." if rec.get("within_noise") else ""))
        summary = rec.get("line", "")
    return (f'<div class="verdict" style="background:{colour}"><div class="kicker">'
            f'Recommendation</div><div class="label">{html.escape(label)}</div>'
            f'<p class="summary">{html.escape(summary)}</p>'
            f'<p class="rule">{html.escape(rule)}</p></div>')


def html_page(result: Any) -> str:
    """A self-contained page a decision-maker reads: the recommendation in a banner (with the
    budgets and the rule that chose it), the sweep's facts, the figure (inline PNG), the
    table with plain-language column labels (the exact column names in each header's tooltip
    and in the key below) and the 95 % intervals, the notes. The audit report's stylesheet;
    no script, nothing fetched."""
    from anonml.report._html import _CSS

    png = base64.b64encode(png_bytes(result)).decode("ascii")
    t = result.table
    rec = getattr(result, "recommendation", None) or {}
    mark = rec.get("point") if rec.get("met") else rec.get("nearest")
    head = "".join(f'<th class="num" title="{html.escape(", ".join(cols))}">'
                   f"{html.escape(label)}</th>" for label, cols, _ in PAGE_COLUMNS)
    body = []
    for _, r in t.iterrows():
        chosen = bool(mark) and r["method"] == mark["method"] and (
            (pd.isna(r["k"]) and mark.get("k") is None)
            or (not pd.isna(r["k"]) and mark.get("k") is not None
                and int(r["k"]) == int(mark["k"])))
        cls = ' class="chosen"' if chosen else ""
        cells = "".join(
            f'<td class="num" data-label="{html.escape(label)}">{c}</td>'
            for (label, _, _), c in zip(PAGE_COLUMNS, _cells(r)))
        body.append(f"<tr{cls}>{cells}</tr>")
    s = result.settings
    facts = [("Training rows (the people at risk)", f"{s.get('n_train', 0):,}"),
             ("Test rows", f"{s.get('n_test', 0):,}"), ("Model", s.get("model")),
             ("Attack", f"{str(s.get('attack')).upper()}, {s.get('n_reference')} reference "
              f"models ({s.get('reference')})"),
             ("Intervals", s.get("interval") or "none"),
             ("Seconds", f"{s.get('seconds_total', 0):.0f}")]
    facts_html = "".join(f"<div><dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd></div>"
                         for k, v in facts)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result.notes)
    key = "".join(f"<dt>{html.escape(label)}</dt><dd>{html.escape(what)} "
                  f"<span class=\"muted\">(<code>{html.escape(', '.join(cols))}</code>)"
                  "</span></dd>" for label, cols, what in PAGE_COLUMNS)
    how = ("Each figure is measured on a finite set of test rows and attacked people; the "
           "bracket under it is its 95% interval (bootstrap over those rows): another test set "
           "of the same size could give any value in it. Two points whose intervals overlap "
           "cannot be told apart on this data. A budget met by the figure but not by its "
           "whole interval is met only within noise. Training noise (another seed) is not in "
           "the interval: repeat the sweep with other seeds to see it.")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>anonml privacy–utility frontier</title>
<style>{_CSS}{_PAGE_CSS}</style></head><body><main>
<h1 style="margin:0 0 14px">Privacy–utility frontier</h1>
{_banner(result)}
<section><dl class="inline-facts">{facts_html}</dl></section>
<section><h2>Accuracy against membership risk</h2>
<figure><img class="plot" alt="accuracy against membership attack AUC, one line per method,
numbers are k, bars are 95% intervals" src="data:image/png;base64,{png}">
<figcaption>Up is more accurate, left is safer. Ringed green: the Pareto front (no other point
is both more accurate and less exposed). Ringed red: the recommended point (or the closest one
when no point meets the budgets). Dashed lines: the budgets; dotted: the model as it is.
</figcaption></figure></section>
<section><h2>Every point</h2>
<p class="small muted">{html.escape(how)} Hover a header for the exact column name of
<code>frontier.csv</code> / <code>frontier.json</code>.</p>
<table class="frontier"><thead><tr>{head}</tr></thead><tbody>
{''.join(body)}
</tbody></table></section>
<section><h2>Notes</h2><ul class="plain">{notes or "<li>none</li>"}</ul></section>
<section><h2>Key</h2><dl class="glossary">{key}</dl></section>
</main></body></html>
"""
