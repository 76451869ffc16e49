"""Summaries, markdown tables and the files ``reproduce`` writes. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from anonml.experiments.attack_tables._constants import DATASETS, MODELS, PAPER_TABLE1, PAPER_TABLE2
from anonml.experiments.attack_tables.table1 import _check_choice, _check_ints, _order, run_table1
from anonml.experiments.attack_tables.table2 import run_table2

# =============================================================================================
# summaries and outputs
# =============================================================================================
_T1_METRICS = (
    "train_acc",
    "test_acc",
    "test_majority_acc",
    "train_acc_anonymized",
    "mia_accuracy",
    "mia_precision",
    "mia_recall",
    "mia_auc",
    "mia_advantage",
    "mia_tpr_fpr0_1pct",
    "lira_auc",
    "lira_tpr_fpr0_1pct",
    "lira_tpr_fpr1pct",
    "rmia_auc",
    "rmia_tpr_fpr0_1pct",
    "rmia_tpr_fpr1pct",
    "worstcase_auc",
    "n_groups",
    "epsilon_spent",
    "seconds_train",
    "seconds_attacks",
    "seconds_lira",
)
_T2_METRICS = (
    "train_acc",
    "test_acc",
    "attr_accuracy",
    "attr_precision",
    "attr_recall",
    "attr_nonmember_accuracy",
    "attr_baseline_accuracy",
    "attr_baseline_precision",
    "attr_baseline_recall",
    "attr_majority_accuracy",
    "arr",
    "arr_pvalue",
    "arr_train_rate",
    "arr_test_rate",
    "n_groups",
)
_KEYS = ["dataset", "model", "defense", "k", "epsilon"]


def _setting(defense: str, k: Any, epsilon: Any, model: str) -> str:
    if defense == "none":
        return "undefended"
    if defense == "ag":
        return f"AG k={int(k)}"
    if model == "nn":
        return f"DP-SGD ε={epsilon:g}"
    return f"DP forest ε={epsilon:g}"


def _summarize(results: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    r = results[results["seed"] >= 0] if "seed" in results else results
    present = [m for m in metrics if m in r.columns]
    g = r.groupby(_KEYS, dropna=False, sort=False)
    parts = {"n_seeds": g["seed"].nunique()}
    for m in present:
        parts[f"{m}_mean"] = g[m].mean()
        parts[f"{m}_std"] = g[m].std()
    if "lira_auc" in r.columns:
        parts["n_seeds_lira"] = g["lira_auc"].count()
    out = pd.DataFrame(parts).reset_index()
    out.insert(
        5,
        "setting",
        [_setting(d, k, e, m) for d, k, e, m in zip(out.defense, out.k, out.epsilon, out.model)],
    )
    return _order(out.assign(seed=0)).drop(columns="seed")


def summarize_table1(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per (dataset, model, defense, k, ε)."""
    return _summarize(results, _T1_METRICS)


def summarize_table2(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per defense (Nursery, decision tree)."""
    return _summarize(results, _T2_METRICS)


def _cell(row: pd.Series, metric: str, digits: int = 3) -> str:
    m, s = row.get(f"{metric}_mean", math.nan), row.get(f"{metric}_std", math.nan)
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "–"
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


_NAMES = {
    "adult": "Adult",
    "loan": "Loan (LendingClub 2007-2011 stand-in)",
    "nursery": "Nursery",
    "rf": "random forest",
    "nn": "neural network (1024-512-256 tanh)",
    "dt": "decision tree",
}


def markdown_table1(summary: pd.DataFrame, results: pd.DataFrame | None = None) -> str:
    """The Markdown of Table 1: one table per (dataset, model), paper comparison, claim checks."""
    cols = [
        ("train acc", "train_acc"),
        ("test acc", "test_acc"),
        ("MIA acc", "mia_accuracy"),
        ("MIA prec", "mia_precision"),
        ("MIA rec", "mia_recall"),
        ("MIA AUC", "mia_auc"),
        ("MIA TPR@0.1%", "mia_tpr_fpr0_1pct"),
        ("LiRA AUC", "lira_auc"),
        ("LiRA TPR@0.1%", "lira_tpr_fpr0_1pct"),
        ("LiRA TPR@1%", "lira_tpr_fpr1pct"),
        ("worst-case AUC", "worstcase_auc"),
    ]
    if "rmia_auc_mean" in summary.columns:
        cols += [("RMIA AUC", "rmia_auc"), ("RMIA TPR@0.1%", "rmia_tpr_fpr0_1pct")]
    lines = []
    for (d, m), part in summary.groupby(["dataset", "model"], sort=False):
        n = int(part["n_seeds"].max())
        lira = ""
        if (
            "n_seeds_lira" in part.columns
            and part["n_seeds_lira"].max() > 0
            and results is not None
        ):
            ns = results.loc[
                (results.dataset == d) & (results.model == m), "lira_n_shadow"
            ].dropna()
            lira = (
                (
                    f"; LiRA with {int(ns.max())} shadow models on "
                    f"{int(part['n_seeds_lira'].max())} seed(s)"
                )
                if len(ns)
                else ""
            )
        lines.append(
            f"\n### {_NAMES.get(d, d)}, {_NAMES.get(m, m)} ({n} seeds, mean ± std{lira})\n"
        )
        lines.append("| setting | " + " | ".join(c for c, _ in cols) + " | seeds |")
        lines.append("|---|" + "---:|" * (len(cols) + 1))
        for _, row in part.iterrows():
            lines.append(
                f"| {row.setting} | "
                + " | ".join(_cell(row, key) for _, key in cols)
                + f" | {int(row.n_seeds)} |"
            )
        if results is not None and "note" in results.columns:
            notes = (
                results.loc[(results.dataset == d) & (results.model == m), "note"].dropna().unique()
            )
            lines += [f"\n*Note: {x}.*" for x in notes]
    if results is not None and "seed" in results.columns:
        skipped = results[results["seed"] < 0]
        lines += [f"\n*{r.dataset}, {r.model}: {r.note}.*" for r in skipped.itertuples()]
    lines.append(
        _paper_comparison(
            summary,
            PAPER_TABLE1,
            [("train acc", "train_acc"), ("test acc", "test_acc"), ("attack acc", "mia_accuracy")],
        )
    )
    lines.append(_claims_table1(summary))
    return "\n".join(lines) + "\n"


def _paper_comparison(summary: pd.DataFrame, paper: pd.DataFrame, metrics: list) -> str:
    lines = [
        "\n### Comparison with the paper\n",
        "| dataset | model | setting | "
        + " | ".join(f"{n} (paper)" + f" | {n} (ours)" for n, _ in metrics)
        + " |",
        "|---|---|---|" + "---:|---:|" * len(metrics),
    ]
    found = 0
    for p in paper.itertuples():
        hit = summary[
            (summary.dataset == p.dataset)
            & (summary.model == p.model)
            & (summary.defense == p.defense)
            & (summary.k == p.k)
        ]
        if hit.empty:
            continue
        found += 1
        row = hit.iloc[0]
        cells = []
        for _, key in metrics:
            ref = getattr(p, key)
            cells += ["–" if pd.isna(ref) else f"{ref:.2f}", _cell(row, key)]
        lines.append(f"| {p.dataset} | {p.model} | {row.setting} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if found else ""


def _points(x: float) -> str:
    """A difference of accuracies in points, signed, without a negative zero."""
    return f"{round(100 * x, 1) + 0.0:+.1f}"


def _span(values: pd.Series) -> str:
    lo, hi = float(values.min()), float(values.max())
    return f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"


def _claims_table1(summary: pd.DataFrame) -> str:
    """Sentences computed from the numbers: attack figures and accuracy cost of AG and DP."""
    lines = ["\n### What the numbers say about the paper's claims (computed)\n"]
    for (d, m), part in summary.groupby(["dataset", "model"], sort=False):
        base = part[part.defense == "none"]
        if base.empty or "mia_accuracy_mean" not in part.columns:
            continue
        b = base.iloc[0]
        extra = [
            (name, f"{key}_mean")
            for name, key in (("LiRA AUC", "lira_auc"), ("worst-case AUC", "worstcase_auc"))
            if f"{key}_mean" in part.columns
        ]

        def figures(rows: pd.DataFrame, extra: list = extra) -> str:
            out = f"attack accuracy {_span(rows.mia_accuracy_mean)}"
            for name, col in extra:
                if rows[col].notna().any():
                    out += f", {name} {_span(rows[col].dropna())}"
            return out

        text = f"* **{d}, {m}**: undefended: test accuracy {b.test_acc_mean:.3f}, {figures(base)}."
        if "test_majority_acc_mean" in part.columns and not pd.isna(b.test_majority_acc_mean):
            flat = part[(part.test_acc_mean - b.test_majority_acc_mean).abs() < 0.005]
            if len(flat):
                text += (
                    f" Test accuracy within half a point of always guessing the majority class "
                    f"({b.test_majority_acc_mean:.3f}): {', '.join(flat.setting)}; accuracy does not "
                    "show what these models learned."
                )
        ag = part[part.defense == "ag"]
        if not ag.empty:
            change = ag.test_acc_mean - b.test_acc_mean
            text += (
                f" AG (k = {', '.join(str(int(x)) for x in ag.k)}): {figures(ag)}; test accuracy "
                f"change {_points(change.min())} to {_points(change.max())} points."
            )
            near = ag[ag.mia_accuracy_mean <= 0.52]
            if near.empty:
                text += " No k brings the attack accuracy down to 0.52 or below."
            else:
                k0 = int(near.k.min())
                c0 = near[near.k == k0].test_acc_mean.iloc[0] - b.test_acc_mean
                text += (
                    f" The smallest k with attack accuracy at most 0.52 (chance: 0.5) is {k0}, at a "
                    f"test accuracy change of {_points(c0)} points."
                )
        for _, r in part[part.defense == "dp"].iterrows():
            text += (
                f" {r.setting}: test accuracy {r.test_acc_mean:.3f} "
                f"({_points(r.test_acc_mean - b.test_acc_mean)} points), {figures(pd.DataFrame([r]))}."
            )
        lines.append(text)
    return "\n".join(lines)


def markdown_table2(summary: pd.DataFrame) -> str:
    """The Markdown of Table 2 with the paper's figures."""
    cols = [
        ("train acc", "train_acc"),
        ("test acc", "test_acc"),
        ("attack acc", "attr_accuracy"),
        ("attack prec", "attr_precision"),
        ("attack rec", "attr_recall"),
        ("attack acc, non-members", "attr_nonmember_accuracy"),
        ("no-output baseline acc", "attr_baseline_accuracy"),
        ("majority guess", "attr_majority_accuracy"),
        ("worst-case ARR", "arr"),
        ("ARR p-value", "arr_pvalue"),
    ]
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [
        f"\n### Nursery, decision tree, attribute `social` ({n} seeds, mean ± std)\n",
        "| setting | " + " | ".join(c for c, _ in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for _, row in summary.iterrows():
        lines.append(f"| {row.setting} | " + " | ".join(_cell(row, key) for _, key in cols) + " |")
    lines.append(
        _paper_comparison(
            summary, PAPER_TABLE2, [("test acc", "test_acc"), ("attack acc", "attr_accuracy")]
        )
    )
    lines.append(_NURSERY_NOTE)
    return "\n".join(lines) + "\n"


_NURSERY_NOTE = """
*Reading the attack columns.* Nursery is a full factorial design: every combination of the 8
features occurs exactly once, so each combination of the other 7 features occurs once with each of
the 3 values of `social`. An attack model that learns from some training records and is evaluated
on others therefore sees, for the same other features, the *other* values of `social`: it is pushed
below the majority guess (1/3), and the no-output baseline (same attack model without the target's
output) shows how far. The black-box attack reveals something about `social` only by as much as it
beats that baseline, and something about the *training* records only by as much as it beats its own
accuracy on non-members (test records).
"""


_PROTOCOL = """\
Reproduces Goldsteen et al. (2022), "Anonymizing Machine Learning Models", Tables 1 and 2, with
`anonml.attacks` and `anonml.dp`. The protocol, the public knowledge given to the DP models and the
simplifications are in the docstring of `anonml/experiments/attack_tables/__init__.py`. In short: fixed
splits (Adult published, Loan and Nursery stratified 80/20 with `random_state=0`); AG is the paper's
method guided by the undefended model's predictions, the model is then retrained on the anonymized
data; every membership attack attacks the released model with the *original* training records as
members and the test records as non-members (balanced); black-box MIA = attacker knows half the
members and as many non-members, random-forest attack model on (probabilities, one-hot label); LiRA
= online, shadows repeat the whole training procedure (train, anonymize, retrain), global variance
below 64 shadows; worst-case = SACRO-ML's attack, mean AUC over random 80/20 splits.
"""


def write_outputs(
    table1: pd.DataFrame | None,
    table2: pd.DataFrame | None,
    out_dir: str | Path,
    name1: str = "attack_table1",
    name2: str = "attack_table2",
    header: str | None = None,
) -> dict[str, Path]:
    """Write each table's raw rows, summary (CSV) and Markdown with :func:`write_bundle`.

    Returns the paths, keys prefixed ``table1_`` / ``table2_``. ``header`` (e.g. the command and
    its wall time) is put at the top of each Markdown file.
    """
    from anonml.experiments._output import write_bundle

    paths: dict[str, Path] = {}
    top = (header.rstrip() + "\n\n") if header else ""
    if table1 is not None:
        s1 = summarize_table1(table1)
        md = f"# Membership attacks: undefended vs AG vs DP (Table 1)\n\n{top}{_PROTOCOL}{markdown_table1(s1, table1)}"
        for key, p in write_bundle(out_dir, name1, table1, s1.round(5), md).items():
            paths[f"table1_{key}"] = p
    if table2 is not None:
        s2 = summarize_table2(table2)
        md = f"# Attribute inference: undefended vs AG (Table 2)\n\n{top}{_PROTOCOL}{markdown_table2(s2)}"
        for key, p in write_bundle(out_dir, name2, table2, s2.round(5), md).items():
            paths[f"table2_{key}"] = p
    return paths


def reproduce(
    out_dir: str | Path = "docs/results",
    *,
    datasets: Sequence[str] = DATASETS,
    models: Sequence[str] = MODELS,
    seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    lira_shadows: Mapping[str, int] | int | None = None,
    lira_seeds: Sequence[int] | None = (0,),
    dpsgd_seeds: Sequence[int] | None = (0,),
    table2: bool = True,
    command: str | None = None,
    progress: Callable[[str], None] | None = None,
    **table1_options: Any,
) -> dict[str, Path]:
    """Both tables in stages (Table 2, then Table 1 one model type at a time), writing the
    outputs after every stage, so an interrupted run leaves its finished part on disk.

    The defaults are the budget of the published run (docs/results/attack_table1.md): LiRA
    with 8 shadow models for the forests on seed 0 only (``lira_shadows={"rf": 8, "nn": 0}``,
    ``lira_seeds=(0,)``), DP-SGD on seed 0 only. ``table1_options`` go to :func:`run_table1`.
    Each Markdown file starts with ``command`` and the wall time at the moment it was written.
    """
    start = time.perf_counter()
    shadows = {"rf": 8, "nn": 0} if lira_shadows is None else lira_shadows
    cmd = f"Command: `{command}`. " if command else ""

    def header(stage: str) -> str:
        return f"{cmd}Wall time {time.perf_counter() - start:.0f} s ({stage})."

    paths: dict[str, Path] = {}
    # check every choice before any work, so a typo writes nothing
    models = _check_choice("models", models, MODELS)
    datasets = _check_choice("datasets", datasets, DATASETS)
    _check_ints("seeds", seeds, 0)
    if table2:
        t2 = run_table2(seeds, n_jobs=n_jobs, progress=progress)
        paths.update(write_outputs(None, t2, out_dir, header=header("Table 2 complete")))
    parts: list[pd.DataFrame] = []
    for i, m in enumerate(models):
        parts.append(
            run_table1(
                datasets,
                (m,),
                seeds=seeds,
                n_jobs=n_jobs,
                lira_shadows=shadows,
                lira_seeds=lira_seeds,
                dpsgd_seeds=dpsgd_seeds,
                progress=progress,
                **table1_options,
            )
        )
        done = ", ".join(models[: i + 1])
        stage = "complete" if i == len(models) - 1 else f"partial: models {done} done"
        paths.update(
            write_outputs(
                _order(pd.concat(parts, ignore_index=True)),
                None,
                out_dir,
                header=header(f"Table 1 {stage}"),
            )
        )
    return paths
