"""One way for every experiment to write its results: raw rows, summary, Markdown, plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from anonml._output import atomic_write, write_table

__all__ = ["finish_k_panel", "plot_raw_and_mapped", "write_bundle", "write_summarized"]


def write_bundle(
    out_dir: str | Path,
    name: str,
    raw: pd.DataFrame,
    summary: pd.DataFrame,
    markdown: str,
    plot: Callable[[Any], Any] | None = None,
    dpi: int = 110,
) -> dict[str, Path]:
    """Write ``name``.csv (raw rows), ``name``_summary.csv, ``name``.md and, when ``plot`` is
    given and matplotlib is installed, ``name``.png; every file atomically.

    ``plot(plt)`` draws and returns a figure, or None for no plot.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"raw": out / f"{name}.csv", "summary": out / f"{name}_summary.csv",
             "markdown": out / f"{name}.md"}
    write_table(raw, paths["raw"])
    write_table(summary, paths["summary"])
    atomic_write(paths["markdown"], lambda p: p.write_text(markdown))
    if plot is None:
        return paths
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the plot is optional (extra "plot")
        return paths
    fig = plot(plt)
    if fig is not None:
        paths["plot"] = out / f"{name}.png"
        atomic_write(paths["plot"], lambda p: fig.savefig(p, dpi=dpi, format="png"))
        plt.close(fig)
    return paths


def write_summarized(
    out_dir: str | Path,
    name: str,
    raw: pd.DataFrame,
    summary: pd.DataFrame,
    markdown: Callable[[pd.DataFrame], str],
    plot: Callable[[pd.DataFrame, Any], Any] | None = None,
) -> dict[str, Path]:
    """:func:`write_bundle` of ``raw`` and ``summary`` (rounded to 5 decimals), with the
    Markdown ``markdown(summary)`` and the figure ``plot(summary, plt)``."""
    return write_bundle(out_dir, name, raw, summary.round(5), markdown(summary),
                        None if plot is None else (lambda plt: plot(summary, plt)))


def plot_raw_and_mapped(ax: Any, part: pd.DataFrame, label: str, color: Any, **style: Any) -> None:
    """Draw the accuracy of anonymized models against ``k`` (mean with std error bars) on the
    raw test rows (circles) and on the test rows mapped by the anonymizer (squares, dashed)."""
    ax.errorbar(part.k, part.accuracy_mean, yerr=part.accuracy_std, marker="o", color=color,
                label=f"{label}, raw test rows", **style)
    ax.errorbar(part.k, part.mapped_mean, yerr=part.mapped_std, marker="s", color=color, ls="--",
                label=f"{label}, test rows mapped", **style)


def finish_k_panel(ax: Any, baseline: float, baseline_label: str, xlabel: str, title: str) -> None:
    """Finish a panel of accuracy against ``k``: the baseline's accuracy as a dotted line, ``k``
    on a log scale, the labels and a light grid."""
    ax.axhline(baseline, color="black", ls=":", label=baseline_label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
