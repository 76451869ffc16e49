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


def _draw(result: Any, ax: Any) -> None:
    t = result.table
    ok = t[t["status"] == "ok"]
    attack = str(result.settings.get("attack", "rmia")).upper()
    for method, part in ok[ok["k"].notna()].groupby("method", sort=False):
        part = part.sort_values("k")
        ax.plot(part["attack_auc"], 100 * part["accuracy"], marker=_MARKERS.get(method, "o"),
                label=method, linewidth=1.2, markersize=5)
        for _, r in part.iterrows():
            ax.annotate(f"{int(r['k'])}", (r["attack_auc"], 100 * r["accuracy"]),
                        textcoords="offset points", xytext=(4, 3), fontsize=7)
    base = t.iloc[0]
    if base["status"] == "ok":
        ax.scatter([base["attack_auc"]], [100 * base["accuracy"]], marker="*", s=160,
                   color="black", zorder=5, label="undefended")
        ax.axhline(100 * base["accuracy"], color="black", linewidth=0.6, linestyle=":")
    dp = ok[ok["method"] == "dp"]
    for _, r in dp.iterrows():
        ax.scatter([r["attack_auc"]], [100 * r["accuracy"]], marker="P", s=80, color="tab:red",
                   zorder=5, label=f"DP (ε={r['epsilon']:g})")
    front = ok[ok["pareto"].astype(bool)].sort_values("attack_auc")
    if not front.empty:
        ax.scatter(front["attack_auc"], 100 * front["accuracy"], s=140, facecolors="none",
                   edgecolors="tab:green", linewidths=1.5, zorder=6, label="Pareto front")
        ax.step(front["attack_auc"], 100 * front["accuracy"], where="post", color="tab:green",
                linewidth=0.8, alpha=0.6)
    ax.axvline(0.5, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xlabel(f"membership attack AUC ({attack}, real people as members)")
    ax.set_ylabel("test accuracy of the retrained model, raw test rows (%)")
    ax.set_title("privacy–utility frontier (numbers: k)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def plot(result: Any, path: Any = None, *, ax: Any = None) -> Any:
    """Draw accuracy against attack AUC: one line per method with k at each point, the
    undefended model (star, dotted line), the DP baseline, and the Pareto front (rings).

    Writes ``path`` (PNG, SVG or PDF by its extension, atomically) when given; returns the
    matplotlib figure.
    """
    plt = _pyplot()
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(7.5, 5.0))
    else:
        fig = ax.figure
    _draw(result, ax)
    fig.tight_layout()
    if path is not None:
        from pathlib import Path

        from anonml._io import atomic_write

        fmt = Path(path).suffix.lstrip(".").lower() or "png"
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120))
    if own:
        plt.close(fig)
    return fig


def png_bytes(result: Any) -> bytes:
    """The figure as PNG bytes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    _draw(result, ax)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _cell(value: Any, col: str) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        if col.startswith("accuracy") or col.startswith("tpr"):
            return f"{100 * value:.2f}%"
        if col == "seconds":
            return f"{value:.1f}"
        return f"{value:.3f}"
    return html.escape(str(value))


def html_page(result: Any) -> str:
    """A self-contained HTML page: the figure as an inline base64 PNG, the notes, the table."""
    png = base64.b64encode(png_bytes(result)).decode("ascii")
    t = result.table
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = []
    for _, r in t.iterrows():
        cls = ' class="front"' if bool(r["pareto"]) else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{_cell(r[c], c)}</td>" for c in t.columns)
                    + "</tr>")
    s = result.settings
    facts = (f"{s.get('n_train', 0):,} training rows (the members), {s.get('n_test', 0):,} "
             f"test rows; model: {s.get('model')}; attack: {s.get('attack')} with "
             f"{s.get('n_reference')} reference models ({s.get('reference')}); "
             f"{s.get('seconds_total', 0):.0f} s")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result.notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>anonml privacy–utility frontier</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 12px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 6px; text-align: right; }}
th {{ background: #f2f2f2; }} tr.front td {{ background: #eaf6ea; }}
img {{ max-width: 100%; height: auto; }} .scroll {{ overflow-x: auto; }}
</style></head><body>
<h1>Privacy–utility frontier</h1>
<p>{html.escape(facts)}</p>
<img alt="accuracy against membership attack AUC" src="data:image/png;base64,{png}">
<ul>{notes}</ul>
<p>Rows shaded green are on the Pareto front (no other point is both more accurate and
less exposed to the membership attack).</p>
<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>
{''.join(body)}
</tbody></table></div>
</body></html>
"""
