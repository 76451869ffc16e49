"""Render a release report (schema v1) as one self-contained HTML page.

Inline CSS and inline SVG only: no script, no external font, image or style sheet, so the page
opens offline and prints as it shows. Every string from the report is escaped.
"""

from __future__ import annotations

import html
import re
from typing import Any

from anonml.report._common import (
    CATEGORY_LABELS,
    DECISION_COLOURS,
    EFFECT_LABELS,
    OUTCOME_LABELS,
    ROC_Y_TICKS,
    SERIES_COLOURS,
    SERIES_DASHES,
    TAMPER_LABELS,
    arr_axis,
    chance_line,
    evidence_groups,
    fmt,
    fmt_ci,
    fmt_param,
    fmt_tick,
    humanize,
    label_of,
    privacy_words,
    roc_axis,
    roc_minor,
    roc_x,
    segments,
)

__all__ = ["render_html"]

_RANGE = " \N{EN DASH} "


def _e(value: Any) -> str:
    """Escape text (and quotes) for HTML content and attribute values."""
    return html.escape(str(value), quote=True)


def _n(value: Any, missing: str = "not measured") -> str:
    """Format then escape a report number."""
    return _e(fmt(value, missing))


_CSS = """
:root { --ink:#1f2937; --muted:#5b6472; --line:#d7dce3; --soft:#f4f6f9; --accent:#0b4f8a;
  --pass:#1e7b34; --fail:#b91c1c; --cond:#b45309; --na:#6b7280; }
* { box-sizing:border-box; }
html { -webkit-print-color-adjust:exact; print-color-adjust:exact; }
body { margin:0; background:#eef1f5; color:var(--ink);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",
  "Liberation Sans",sans-serif; }
main { max-width:1120px; margin:0 auto; padding:24px 28px 40px; background:#fff; }
h1,h2,h3 { line-height:1.25; margin:0; }
h2 { font-size:1.3rem; margin:0 0 12px; padding-bottom:6px; border-bottom:2px solid var(--line); }
h3 { font-size:1.02rem; margin:16px 0 8px; }
section { margin:0 0 30px; }
p { margin:0 0 10px; }
.muted { color:var(--muted); }
.small { font-size:.86rem; }
code, .mono { font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace;
  font-size:.85em; }
.mono { overflow-wrap:anywhere; }
code.id { overflow-wrap:normal; word-break:normal; }
code.id > span, .nw { white-space:nowrap; }
section, .reason, figure, .card { min-width:0; max-width:100%; }
.verdict { color:#fff; border-radius:10px; padding:22px 28px 20px; margin:0 0 26px; }
.verdict .kicker { font-size:.82rem; letter-spacing:.08em; text-transform:uppercase; opacity:.92;
  margin-bottom:2px; }
.verdict .label { font-size:2.6rem; font-weight:800; letter-spacing:.01em; margin:0 0 6px; }
.verdict .summary { font-size:1.14rem; max-width:60em; margin:0; }
.verdict .title { font-size:.92rem; opacity:.92; margin-top:12px; }
.reasons { list-style:none; margin:0; padding:0; }
.reason { border:1px solid var(--line); border-left:6px solid var(--na); border-radius:6px;
  padding:10px 14px; margin:0 0 10px; break-inside:avoid; }
.reason.effect-block { border-left-color:var(--fail); }
.reason.effect-condition { border-left-color:var(--cond); }
.reason.effect-warn { border-left-color:var(--na); }
.reason p { margin:4px 0 6px; font-size:1.02rem; }
.facts { display:grid; grid-template-columns:max-content minmax(0,1fr); gap:2px 14px; margin:0; }
.facts dt { color:var(--muted); }
.facts dd { margin:0; overflow-wrap:anywhere; }
.inline-facts { display:flex; flex-wrap:wrap; gap:4px 22px; margin:0; }
.inline-facts div { display:flex; gap:6px; }
.inline-facts dt { color:var(--muted); }
.inline-facts dd { margin:0; font-weight:600; }
.two-col { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:10px 36px; }
.two-col > div { min-width:0; }
.intro { margin:0 0 8px; }
ul.plain, ol.steps { margin:0; padding-left:1.3em; }
ul.plain li, ol.steps li { margin:0 0 4px; }
.conditions li { font-weight:600; }
table { width:100%; border-collapse:collapse; font-size:.9rem; }
th, td { text-align:left; vertical-align:top; padding:7px 9px;
  border-bottom:1px solid var(--line); }
thead th { background:var(--soft); border-bottom:2px solid #c5ccd6; font-weight:650; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.wrap { overflow-wrap:anywhere; }
tr { break-inside:avoid; }
table.evidence-table { table-layout:fixed; }
td.measured { font-variant-numeric:tabular-nums; }
.source { color:var(--muted); font-size:.8rem; margin-top:4px; }
tr.group th { background:#fff; font-size:.8rem; letter-spacing:.08em; text-transform:uppercase;
  color:var(--muted); padding-top:14px; border-bottom:1px solid #c5ccd6; }
.badge { display:inline-block; font-size:.76rem; font-weight:700; border-radius:999px;
  padding:1px 9px; border:1.5px solid currentColor; white-space:nowrap; }
.o-fail { color:var(--fail); } .o-pass { color:var(--pass); }
.o-not_evaluated { color:var(--cond); } .o-not_applicable { color:var(--na); }
.e-block { color:var(--fail); } .e-condition { color:var(--cond); } .e-warn { color:var(--na); }
.explain { color:var(--muted); font-size:.84rem; margin-top:2px; }
figure { margin:14px 0 0; }
figcaption { color:var(--muted); font-size:.85rem; margin-top:4px; }
svg.chart { width:100%; max-width:860px; height:auto; display:block; background:#fff; }
svg.chart text { font-family:inherit; fill:#374151; font-size:12px; }
svg.chart .axis-title { font-size:13px; fill:#1f2937; }
svg.chart .grid { stroke:#e3e7ed; stroke-width:1; }
svg.chart .grid.minor { stroke:#f0f2f5; }
svg.chart .frame { fill:none; stroke:#9aa3af; stroke-width:1; }
.empty { background:var(--soft); border:1px dashed #c5ccd6; border-radius:6px; padding:14px 16px;
  color:var(--muted); }
dl.glossary { margin:0; }
dl.glossary dt { font-weight:700; margin-top:8px; }
dl.glossary dd { margin:0 0 4px; }
footer { border-top:2px solid var(--line); padding-top:12px; color:var(--muted); font-size:.84rem; }
@page { size:A4; margin:14mm; }
@media print {
  html { font-size:9.5pt; }
  body { background:#fff; font-size:10.5pt; }
  main { max-width:none; padding:0; }
  section { margin-bottom:18px; }
  h2 { break-after:avoid; }
  figure, .reason { break-inside:avoid; }
  table { font-size:8pt; }
  th, td { padding:4px 5px; }
  td.num, th.num { white-space:normal; }
  .verdict .label { font-size:26pt; }
}
@media (max-width:900px) {
  main { padding:18px 16px 32px; }
  .two-col { grid-template-columns:minmax(0,1fr); }
  .verdict { padding:18px 18px 16px; }
  .verdict .label { font-size:2rem; }
  table.evidence-table, table.evidence-table tbody, table.evidence-table tr,
  table.evidence-table td, table.evidence-table th { display:block; width:auto; }
  table.evidence-table thead, table.evidence-table colgroup { display:none; }
  table.evidence-table tr { border-bottom:1px solid #c5ccd6; padding:6px 0; }
  table.evidence-table td { border:0; padding:3px 4px; }
  table.evidence-table td[data-label]::before { content:attr(data-label); display:block;
    color:var(--muted); font-size:.74rem; text-transform:uppercase; letter-spacing:.06em; }
}
"""


def _verdict(report: dict) -> str:
    v = report["verdict"]
    colour = DECISION_COLOURS[v["decision"]]
    return (
        f'<section id="verdict" class="verdict decision-{_e(v["decision"])}" '
        f'style="background:{colour}" aria-label="Verdict">'
        '<div class="kicker">Verdict</div>'
        f'<h1 class="label">{_e(v["label"])}</h1>'
        f'<p class="summary">{_labelled(v["summary"], report.get("labels") or {}, keys=False)}'
        "</p>"
        f'<div class="title">{_e(report["title"])}</div>'
        "</section>"
    )


def _reasons(report: dict) -> str:
    v = report["verdict"]
    labels = report.get("labels") or {}
    parts = ['<section id="reasons"><h2>Why</h2>']
    if v["reasons"]:
        parts.append('<ol class="reasons">')
        for r in v["reasons"]:
            parts.append(
                f'<li class="reason effect-{_e(r["effect"])}">'
                f'<span class="badge e-{_e(r["effect"])}">{_e(EFFECT_LABELS[r["effect"]])}</span> '
                f'<span class="muted">{_ident(r["rule_id"])}</span>'
                f"<p>{_labelled(r['text'], labels, keys=False)}</p>"
                '<dl class="inline-facts small">'
                "<div><dt>Measured</dt>"
                f"<dd>{_labelled(r['measured'] or 'not measured', labels, keys=False)}</dd></div>"
                f"<div><dt>Threshold</dt><dd>{_labelled(r['threshold'], labels)}</dd></div>"
                f"</dl><div class=\"source\">Source: {_labelled(r['source'], labels)}</div></li>"
            )
        parts.append("</ol>")
    else:
        parts.append('<p class="muted">The report gives no reason.</p>')
    parts.append("</section>")
    if v["conditions"]:
        items = "".join(f"<li>{_e(c)}</li>" for c in v["conditions"])
        parts.append(
            '<section id="conditions"><h2>Conditions of release</h2>'
            '<p class="intro">Release only if every condition below is met and recorded:</p>'
            f'<ul class="plain conditions">{items}</ul></section>'
        )
    if v["next_steps"]:
        items = "".join(f"<li>{_e(s)}</li>" for s in v["next_steps"])
        parts.append(
            f'<section id="next-steps"><h2>Next steps</h2><ol class="steps">{items}</ol></section>'
        )
    return "".join(parts)


def _facts(pairs: list[tuple[str, str]]) -> str:
    """A definition list from (label, already-escaped html) pairs."""
    body = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{body}</dl>'


def _mapping(mp: dict | None) -> str:
    """The released pipeline's mapping: k, groups, what was re-verified, what it reveals."""
    if not mp:
        return ""
    pairs = [
        ("Method", _e(mp["method"])),
        ("k / smallest group", f"{_n(mp['k'])} / {_n(mp['smallest_group'])}"),
        ("Groups / training rows", f"{_n(mp['n_groups'])} / {_n(mp['n_training_rows'])}"),
        ("Quasi-identifiers", _e(", ".join(mp["quasi_identifiers"]) or "none")),
        ("Re-verified", _e("; ".join(mp["checks"]))),
        ("Releasing it reveals", _e(mp["reveals"])),
    ]
    inv = mp.get("inventory")
    if inv:  # what the file holds, and the training values it reveals beyond the table
        pairs.append(("Inventory of the file",
                      f"{_n(inv['members'])} members; {_n(inv['hidden_values_mapping'])} values "
                      f"in the mapping and {_n(inv['hidden_values_model'])} in the model are "
                      "training values the anonymized table does not show"))
    got = mp.get("measured")
    words = privacy_words((got or {}).get("privacy"), mp.get("privacy_claim"))
    if words:  # l and t: claimed against the training rows, or why not checked
        pairs.append(("l and t against the training rows", _e(words)))
    if got:  # the training rows mapped through it: measured against claimed
        pairs.insert(2, ("Measured on the training rows",
                         f"k {_n(got['k_measured'])} (the file claims {_n(got['claims']['k'])})"
                         f"; {_n(got['n_groups_measured'])} groups (the file claims "
                         f"{_n(got['claims']['n_groups'])}) of {_n(got['n_rows'])} rows"))
        pairs.insert(3, ("Claims against the training rows",
                         _e("match" if got["claims_match"] else
                            "MISMATCH: " + "; ".join(got["mismatches"]))))
    return f"<div><h3>Mapping (released with the model)</h3>{_facts(pairs)}</div>"


def _model_data(report: dict) -> str:
    m, d = report["model"], report["data"]
    model_file = m["file"]
    model_pairs = [
        ("Model class", _e(m["class"])),
        ("Family", _e(m["family"])),
        ("Features", _n(m["n_features"], "unknown")),
        ("Classes", _n(m["n_classes"], "unknown")),
        ("Fingerprint", f'<span class="mono">{_e(m["fingerprint"] or "none")}</span>'),
        (
            "Model file",
            "none"
            if model_file is None
            else f"{_e(model_file['name'])}<br>"
            f'<span class="mono">sha256 {_e(model_file["sha256"])}</span>',
        ),
    ]
    if m.get("refit_adjustments"):
        model_pairs.append(("Refit bounds", "reference models refitted with bounded values: " +
                            "; ".join(f"{_e(a['path'])}.{_e(a['parameter'])} "
                                      f"{_e(a['file_value'])} &rarr; {_e(a['value_used'])}"
                                      for a in m["refit_adjustments"])))
    data_pairs = [
        ("Training rows", _n(d["n_train"], "unknown")),
        ("Test rows", _n(d["n_test"], "unknown")),
        ("Target column", _e(d["target"] if d["target"] is not None else "unknown")),
    ]
    anon = d["anonymization"]
    if anon is None:
        data_pairs.append(("Anonymization", "none"))
    else:
        data_pairs += [
            ("Anonymization", _e(anon["method"])),
            ("k asked / achieved", f"{_n(anon['k'])} / {_n(anon['k_achieved'])}"),
            ("l-diversity", _n(anon["l"], "not asked")),
            ("t-closeness", _n(anon["t"], "not asked")),
            ("Quasi-identifiers", _e(", ".join(anon["quasi_identifiers"]) or "none")),
            ("Independently verified", _n(anon["verified"])),
        ]
        if anon["detail"]:
            data_pairs.append(("Detail", _e(anon["detail"])))
    params = "".join(
        f'<tr><td>{_ident(k)}</td><td class="wrap">{_e(fmt_param(v))}</td></tr>'
        for k, v in m["params"].items()
    )
    params_html = (
        '<table class="params"><thead><tr><th>Hyperparameter</th><th>Value</th></tr></thead>'
        f"<tbody>{params}</tbody></table>"
        if params
        else '<p class="muted">No hyperparameters given.</p>'
    )
    features = _e(", ".join(m["feature_names"])) if m["feature_names"] else "not given"
    return (
        '<section id="model-data"><h2>Model and data</h2><div class="two-col">'
        f"<div><h3>Model</h3>{_facts(model_pairs)}</div>"
        f"<div><h3>Data</h3>{_facts(data_pairs)}</div>"
        f"{_mapping(d.get('mapping'))}"
        f"<div><h3>Hyperparameters</h3>{params_html}</div>"
        f'<div><h3>Feature names</h3><p class="small">{features}</p></div>'
        "</div></section>"
    )


def _ident(name: str) -> str:
    """An identifier in ``<code class="id">``: never broken inside a part, only after a dot
    that starts a new name (``membership.`` / ``max_tpr_at_fpr_0.001``) or at ``__``."""
    parts = re.split(r"(?<=\.)(?=[A-Za-z_])|(?<=__)(?=[A-Za-z])", str(name))
    inner = "<wbr>".join(f"<span>{_e(p)}</span>" for p in parts)
    return f'<code class="id">{inner}</code>'


def _labelled(text: str, labels: dict, keys: bool = True) -> str:
    """``text`` with each measure key shown as its label (the keys then listed in code below
    when ``keys``) and every other identifier kept whole in code."""
    out, seen = [], []
    for kind, part in segments(str(text), labels):
        if kind == "text":
            out.append(_e(part))
        elif kind == "measure":
            out.append(_e(labels[part]))
            if part not in seen:
                seen.append(part)
        else:
            out.append(_ident(part))
    html_text = "".join(out)
    if keys and seen:
        html_text += '<div class="explain">' + ", ".join(_ident(k) for k in seen) + "</div>"
    return html_text


def _section_head(section_id: str, title: str, intro: str) -> str:
    """A section's opening tag, its heading and its muted introduction (``intro`` is HTML)."""
    return f'<section id="{section_id}"><h2>{title}</h2><p class="muted small">{intro}</p>'


def _empty_section(head: str, text: str) -> str:
    """``head`` closed with the one line saying the section has nothing to show."""
    return head + f'<p class="empty">{text}</p></section>'


def _evidence(report: dict) -> str:
    rules = report["rules"]
    labels = report.get("labels") or {}
    head = _section_head(
        "evidence", "Evidence",
        f"Every rule of the rule set <strong>{_e(rules['name'])}</strong> "
        f"(version {_e(rules['version'])}, from {_e(rules['origin'])}), failing rules first.",
    )
    if not report["evidence"]:
        return _empty_section(head, "No rule was evaluated.")
    rows = []
    for outcome, title, members in evidence_groups(report["evidence"]):
        rows.append(f'<tr class="group"><th colspan="5">{_e(title)}</th></tr>')
        for r in members:
            action = r["condition"] if r["outcome"] == "fail" and r["condition"] else r["fix"]
            action_html = _labelled(action, labels) if action else '<span class="muted">none</span>'
            if r["outcome"] == "fail" and r["condition"]:
                action_html = f"<strong>Condition:</strong> {action_html}"
                if r["fix"]:
                    action_html += f'<div class="explain">{_labelled(r["fix"], labels)}</div>'
            if r["measured"] is None:
                measured = '<span class="muted">not measured</span>'
            else:
                measured = _labelled(r["measured"], labels)
            if r.get("note"):
                measured += f'<div class="explain note">{_labelled(r["note"], labels)}</div>'
            rows.append(
                f'<tr class="outcome-{_e(outcome)}">'
                f'<td data-label="Rule"><strong>{_e(r["title"])}</strong>'
                f'<div class="explain">{_ident(r["rule_id"])} · '
                f"{_e(CATEGORY_LABELS[r['category']])}</div>"
                f'<div class="explain">{_labelled(r["explanation"], labels)}</div></td>'
                f'<td data-label="Outcome"><span class="badge o-{_e(outcome)}">'
                f"{_e(OUTCOME_LABELS[outcome])}</span>"
                f'<div class="explain e-{_e(r["effect"])}">'
                f"{_e(EFFECT_LABELS[r['effect']])}</div></td>"
                f'<td class="measured" data-label="Measured">{measured}</td>'
                f'<td class="measured" data-label="Threshold">{_labelled(r["threshold"], labels)}'
                f'<div class="source">Source: {_labelled(r["source"], labels)}</div></td>'
                f'<td class="small" data-label="If it fails">{action_html}</td></tr>'
            )
    return (
        head + '<table class="evidence-table"><colgroup><col style="width:24%">'
        '<col style="width:13%"><col style="width:20%"><col style="width:21%">'
        '<col style="width:22%"></colgroup>'
        '<thead><tr><th>Rule</th><th>Outcome</th>'
        "<th>Measured</th><th>Threshold and its source</th>"
        "<th>If it fails</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></section>"
    )


def _dash_attr(dash: tuple) -> str:
    return f' stroke-dasharray="{" ".join(f"{d:g}" for d in dash)}"' if dash else ""


def _roc_svg(attacks: list[dict]) -> str:
    lo, x_ticks = roc_axis(attacks)
    entries = [
        (a["name"], SERIES_COLOURS[i % len(SERIES_COLOURS)],
         SERIES_DASHES[i % len(SERIES_DASHES)], "2.6")
        for i, a in enumerate(attacks)
    ]
    entries.append(("Chance (a guess)", "#8a929e", (5, 4), "1.4"))
    width, plot_h = 760, 390
    left, right, top = 70, 24, 18
    legend_top = top + plot_h + 58
    height = legend_top + 22 * len(entries) + 8
    pw, ph = width - left - right, plot_h

    def xy(x: float, y: float) -> str:
        return f"{left + x * pw:.1f},{top + (1 - y) * ph:.1f}"

    out = [
        (
            f'<svg id="roc-plot" class="chart" viewBox="0 0 {width} {height}" role="img" '
            'xmlns="http://www.w3.org/2000/svg" aria-labelledby="roc-title">'
            '<title id="roc-title">ROC curves of the membership attacks, false positive rate on a '
            "log scale</title>"
        )
    ]
    for v in roc_minor(lo):
        x = left + roc_x(v, lo) * pw
        out.append(
            f'<line class="grid minor" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}"/>'
        )
    for tick in x_ticks:
        x = left + roc_x(tick, lo) * pw
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}"/>')
        out.append(
            f'<text x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">'
            f"{_e(fmt_tick(tick))}</text>"
        )
    for tick in ROC_Y_TICKS:
        y = top + (1 - tick) * ph
        out.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}"/>')
        out.append(
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(fmt_tick(tick))}</text>'
        )
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>')
    out.append(
        f'<text class="axis-title" x="{left + pw / 2:.1f}" y="{top + ph + 42}" '
        'text-anchor="middle">False positive rate (log scale, from the smallest rate the test '
        "set resolves)</text>"
        f'<text class="axis-title" transform="translate(18 {top + ph / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">True positive rate</text>'
    )
    chance = " ".join(xy(x, y) for x, y in chance_line(lo=lo))
    out.append(
        f'<polyline points="{chance}" fill="none" stroke="#8a929e" stroke-width="1.4" '
        'stroke-dasharray="5 4"/>'
    )
    for i, attack in enumerate(attacks):
        colour, dash = entries[i][1], entries[i][2]
        points = " ".join(
            xy(roc_x(f, lo), t)
            for f, t in zip(attack["roc"]["fpr"], attack["roc"]["tpr"], strict=True)
        )
        out.append(
            f'<polyline class="roc-curve" points="{points}" fill="none" stroke="{colour}" '
            f'stroke-width="2.6" stroke-linejoin="round"{_dash_attr(dash)}>'
            f"<title>{_e(attack['name'])}</title></polyline>"
        )
    # legend below the plot, so it never covers a curve
    for i, (name, colour, dash, sw) in enumerate(entries):
        y = legend_top + 22 * i
        out.append(
            f'<line class="legend" x1="{left + 4}" y1="{y - 4}" x2="{left + 36}" y2="{y - 4}" '
            f'stroke="{colour}" stroke-width="{sw}"{_dash_attr(dash)}/>'
            f'<text x="{left + 44}" y="{y}">{_e(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _attacks(report: dict) -> str:
    attacks = report["attacks"]
    head = _section_head(
        "attacks", "Membership attacks",
        "Each attack tries to tell whether a person was in the training data. "
        "An AUC of 0.5 and a curve on the chance line mean the attack does no better than a guess; "
        "what matters most is the true positive rate at a low false positive rate.",
    )
    if not attacks:
        return _empty_section(head, "No membership attack was run.")
    def tpr(a: dict, rate: str) -> str:
        fpr_min = a.get("fpr_min")
        if fpr_min and fpr_min > float(rate) * (1 + 1e-9):
            return '<span class="muted">cannot be resolved</span>'
        return _n(a["metrics"][f"tpr_at_fpr_{rate}"])

    def tested(a: dict) -> str:
        n = a.get("n_nonmembers")
        return f'<div class="explain">{_n(n)} non-members tested</div>' if n else ""

    rows = "".join(
        f'<tr><td>{_e(a["name"])}<div class="explain">{_ident(a["id"])}</div>{tested(a)}</td>'
        f'<td class="num">{_n(a["metrics"]["auc"])}</td>'
        f'<td class="num">{_n(a["metrics"]["auc_pvalue"])}</td>'
        f'<td class="num">{_n(a["metrics"]["accuracy"])}</td>'
        f'<td class="num">{_n(a["metrics"]["advantage"])}</td>'
        f'<td class="num">{tpr(a, "0.001")}</td>'
        f'<td class="num">{tpr(a, "0.01")}</td>'
        f'<td class="num">{tpr(a, "0.1")}</td>'
        f'<td class="num">{_n(a["seconds"])}</td></tr>'
        for a in attacks
    )
    table = (
        '<table class="attack-table"><thead><tr><th>Attack</th><th class="num">AUC</th>'
        '<th class="num">AUC p-value</th><th class="num">Accuracy</th>'
        '<th class="num">Advantage</th>'
        '<th class="num">TPR at FPR 0.001</th><th class="num">TPR at FPR 0.01</th>'
        '<th class="num">TPR at FPR 0.1</th><th class="num">Seconds</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    return (
        head + table + f"<figure>{_roc_svg(attacks)}<figcaption>ROC curves. The false positive "
        "rate axis is logarithmic, so the low-error region an attacker cares about is visible; it "
        "starts at the smallest rate the test set can resolve (1 / its non-members). The dashed "
        "grey curve is the chance line (true positive rate = false positive rate)."
        "</figcaption></figure></section>"
    )


def _arr_svg(rows: list[dict]) -> str:
    width, row_h = 760, 34
    left, right, top, bottom = 170, 210, 34, 48
    height = top + row_h * len(rows) + bottom
    pw = width - left - right
    hi, ticks = arr_axis(rows)

    def px(v: float) -> float:
        return left + v / hi * pw

    plot_bottom = top + row_h * len(rows)
    out = [
        (
            f'<svg id="arr-chart" class="chart" viewBox="0 0 {width} {height}" role="img" '
            'xmlns="http://www.w3.org/2000/svg" aria-labelledby="arr-title">'
            '<title id="arr-title">Attribute risk ratio per feature with 95% confidence intervals'
            "</title>"
        )
    ]
    for tick in ticks:
        x = px(tick)
        out.append(
            f'<line class="grid" x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{plot_bottom}"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{plot_bottom + 18}" text-anchor="middle">'
            f"{_e(fmt_tick(tick))}</text>"
        )
    for i in range(len(rows) + 1):
        y = top + row_h * i
        out.append(f'<line class="grid minor" x1="10" y1="{y}" x2="{width - 10}" y2="{y}"/>')
    x1 = px(1.0)
    out.append(
        f'<line x1="{x1:.1f}" y1="{top - 8}" x2="{x1:.1f}" y2="{plot_bottom}" stroke="#374151" '
        'stroke-width="1.6" stroke-dasharray="6 4"/>'
        f'<text x="{x1 + 6:.1f}" y="{top - 12}" class="small">ARR = 1: no extra risk</text>'
        f'<text class="axis-title" x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        "Attribute risk ratio (ARR) with 95% confidence interval</text>"
        f'<text x="{width - right + 14}" y="{top - 12}" font-weight="bold">ARR [95% CI]</text>'
    )
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        sig = r["significant"]
        weight = ' font-weight="bold"' if sig else ""
        out.append(
            f'<text x="{left - 12}" y="{y + 4:.1f}" text-anchor="end"{weight}>'
            f"{_e(r['feature'])}</text>"
        )
        if r["arr"] is None:
            out.append(
                f'<text x="{left + 6}" y="{y + 4:.1f}" fill="#6b7280" font-style="italic">'
                "not measured (reason in the table)</text>"
            )
            continue
        colour = "#b91c1c" if sig else "#334155"
        if r["ci_low"] is not None and r["ci_high"] is not None:
            a, b = px(r["ci_low"]), px(r["ci_high"])
            stroke = f'stroke="{colour}" stroke-width="2"'
            out.append(
                f'<line x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}" {stroke}/>'
                f'<line x1="{a:.1f}" y1="{y - 6:.1f}" x2="{a:.1f}" y2="{y + 6:.1f}" {stroke}/>'
                f'<line x1="{b:.1f}" y1="{y - 6:.1f}" x2="{b:.1f}" y2="{y + 6:.1f}" {stroke}/>'
            )
        fill = colour if sig else "#fff"
        out.append(
            f'<circle class="{"arr-significant" if sig else "arr-dot"}" cx="{px(r["arr"]):.1f}" '
            f'cy="{y:.1f}" r="6.5" fill="{fill}" stroke="{colour}" stroke-width="2.2"/>'
        )
        ci = (
            f" [{_n(r['ci_low'])}, {_n(r['ci_high'])}]"
            if r["ci_low"] is not None and r["ci_high"] is not None
            else ""
        )
        out.append(f'<text x="{width - right + 14}" y="{y + 4:.1f}">{_n(r["arr"])}{ci}</text>')
        if sig:
            out.append(
                f'<text x="{width - 12}" y="{y + 4:.1f}" text-anchor="end" fill="#b91c1c" '
                'font-weight="bold">significant</text>'
            )
    out.append("</svg>")
    return "".join(out)


def _attribute(report: dict) -> str:
    rows = report["attribute_risk"]
    head = _section_head(
        "attribute-risk", "Attribute inference",
        "For each feature, how much better an attacker who has the model guesses its value for "
        "people in the training data than for other people (attribute risk ratio, ARR). An ARR "
        "of 1 means no extra risk; filled red dots mark features where the extra risk is "
        "statistically significant.",
    )
    if not rows:
        return _empty_section(head, "No attribute inference attack was run.")
    significant = '<strong class="o-fail">significant</strong>'
    def note(r: dict) -> str:
        if r["arr"] is not None:
            return ""
        why = r.get("note") or "the report gives no reason"
        return f'<div class="explain note">Not measured: {_e(why)}</div>'

    body = "".join(
        f"<tr><td>{_e(r['feature'])}{note(r)}</td><td>{_e(r['kind'])}</td>"
        f'<td class="num">{_n(r["arr"])}</td>'
        f'<td class="num">{_e(fmt_ci(r["ci_low"], r["ci_high"], _RANGE))}</td>'
        f'<td class="num">{_n(r["p_value"])}</td>'
        f'<td class="num">{_n(r["train_rate"])}</td><td class="num">{_n(r["test_rate"])}</td>'
        f"<td>{significant if r['significant'] else 'no'}</td></tr>"
        for r in rows
    )
    table = (
        '<table class="attribute-table"><thead><tr><th>Feature</th><th>Kind</th>'
        '<th class="num">ARR</th><th class="num">95% CI</th><th class="num">p-value</th>'
        '<th class="num">Success on training rows</th><th class="num">Success on other rows</th>'
        f"<th>Significant</th></tr></thead><tbody>{body}</tbody></table>"
    )
    return head + f"<figure>{_arr_svg(rows)}</figure>" + table + "</section>"


def _checks(report: dict) -> str:
    c = report["checks"]
    tamper = c["tamper"]
    status_class = {"unchanged": "o-pass", "changed": "o-fail", "no_fingerprint": "o-not_evaluated"}
    out = [
        '<section id="checks"><h2>Structure and tamper checks</h2><div class="two-col"><div>',
        "<h3>Tamper check</h3>",
        (
            f'<p><span class="badge {status_class[tamper["status"]]}">'
            f"{_e(humanize(tamper['status']))}</span> "
            f"{_e(TAMPER_LABELS[tamper['status']])}</p>"
        ),
    ]
    if tamper["changed"]:
        out.append(
            '<p>Changed parts:</p><ul class="plain">'
            + "".join(f"<li><code>{_e(p)}</code></li>" for p in tamper["changed"])
            + "</ul>"
        )
    out.append("<h3>Findings on the hyperparameters</h3>")
    if c["preliminary"]:
        out.append(
            '<ul class="plain">'
            + "".join(
                f"<li>{_ident(p['rule_id'])}: {_labelled(p['message'], report.get('labels') or {})}"
                + (f'<div class="explain">Fix: {_e(p["fix"])}</div>' if p["fix"] else "")
                + "</li>"
                for p in c["preliminary"]
            )
            + "</ul>"
        )
    else:
        out.append('<p class="muted">None.</p>')
    out.append("</div><div><h3>Model structure</h3>")
    if c["structure"]:
        out.append(
            '<table class="structure"><tbody>'
            + "".join(
                f'<tr><td>{_e(label_of(report, "structure." + k))}'
                f'<div class="explain">{_ident("structure." + k)}</div></td>'
                f'<td class="num">{_n(v, "not measured")}</td></tr>'
                for k, v in c["structure"].items()
            )
            + "</tbody></table>"
        )
    else:
        out.append('<p class="muted">No structural check was run.</p>')
    out.append("</div></div></section>")
    return "".join(out)


def _glossary(report: dict) -> str:
    items = "".join(
        f"<dt>{_e(g['term'])}</dt><dd>{_e(g['definition'])}</dd>" for g in report["glossary"]
    )
    return f'<section id="glossary"><h2>Glossary</h2><dl class="glossary">{items}</dl></section>'


def _footer(report: dict) -> str:
    rules, model, timings = report["rules"], report["model"], report["timings"]
    pairs = [
        (
            "Rules",
            (
                f"{_e(rules['name'])} version {_e(rules['version'])} "
                f"({_n(rules['n_rules'])} rules), from {_e(rules['origin'])}"
            ),
        ),
        ("Rules sha256", f'<span class="mono">{_e(rules["sha256"])}</span>'),
        ("Model fingerprint", f'<span class="mono">{_e(model["fingerprint"] or "none")}</span>'),
        (
            "Report",
            (
                f"{_e(report['report_type'])}, schema {_e(report['schema_version'])}, "
                f"made by anonml {_e(report['anonml_version'])} at {_e(report['created_utc'])}"
            ),
        ),
        ("Time taken", f"{_n(timings['total_seconds'])} s"),
    ]
    return f"<footer>{_facts(pairs)}</footer>"


def render_html(report: dict) -> str:
    """Render a release report as one self-contained HTML page.

    The verdict comes first, then the reasons, conditions and next steps, the model and data,
    the evidence (failing rules first), the membership attacks with their ROC curves, the
    attribute inference chart, the structure and tamper checks, the glossary and the provenance.

    Parameters
    ----------
    report : dict
        A release report of schema v1 (see :func:`anonml.report.validate`). It is not validated
        here; :func:`anonml.report.write_report` validates before rendering.

    Returns
    -------
    str
        The HTML document. It loads nothing from elsewhere (inline CSS and SVG, no script), and
        its stable element ids are ``verdict``, ``evidence``, ``roc-plot``, ``arr-chart`` and
        ``glossary``.
    """
    body = "".join(
        [
            _verdict(report),
            _reasons(report),
            _model_data(report),
            _evidence(report),
            _attacks(report),
            _attribute(report),
            _checks(report),
            _glossary(report),
            _footer(report),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(report['verdict']['label'])}: {_e(report['title'])}</title>"
        f"<style>{_CSS}</style></head><body><main>{body}</main></body></html>\n"
    )
