"""Render a release report (schema v1) as a PDF with fpdf2.

The section order is fixed: "Verdict" (with the model, data and provenance), "Evidence" (with
the structure and tamper checks), "Membership attacks", "Attribute inference", "Glossary".
Sections follow each other on the page; a heading moves to a new page when the room left
under it is too small for its first block, and no block (a reason, a bullet, a glossary
entry, a table row, a passed rule) is split across pages. The evidence table holds the rules
that failed or could not be evaluated (a group's title stays with its first row); passed rules
follow as one compact block each, and a chart goes where it fits after its table. Measure
keys are shown by their labels, and an identifier is only ever broken after a dot. The core
Helvetica font covers Latin-1 only, so other characters are spelled out (``≤`` -> ``<=``,
Helvetica font covers Latin-1 only, so other characters are spelled out (``≤`` -> ``<=``,
``ε`` -> ``epsilon``; the building blocks are in :mod:`anonml.report._pdf_blocks`).
"""

from __future__ import annotations

from typing import Any

from anonml._errors import InputError
from anonml.report._common import (
    CATEGORY_LABELS,
    DECISION_COLOURS,
    EFFECT_LABELS,
    OUTCOME_LABELS,
    ROC_Y_TICKS,
    TAMPER_LABELS,
    arr_axis,
    chance_line,
    evidence_groups,
    fmt,
    fmt_ci,
    fmt_param,
    fmt_tick,
    label_of,
    privacy_words,
    roc_axis,
    roc_minor,
    roc_x,
)
from anonml.report._pdf_blocks import (
    _EFFECT_RGB,
    _INK,
    _LINE,
    _MUTED,
    _OUTCOME_RGB,
    _bullets,
    _document,
    _fit_ident,
    _key_values,
    _keys,
    _numeric_table,
    _para,
    _plain,
    _rgb,
    _section,
    _set_series,
    _subheading,
    _wrap_long_words,
    to_latin1,
)
from anonml.report._pdf_layout import pairs_height, render_glossary, render_pairs

__all__ = ["render_pdf"]

SECTIONS = ("Verdict", "Evidence", "Membership attacks", "Attribute inference", "Glossary")


def _verdict(pdf, report: dict) -> None:
    v = report["verdict"]
    labels = report.get("labels") or {}
    _section(pdf, "Verdict")
    pdf.set_fill_color(*_rgb(DECISION_COLOURS[v["decision"]]))
    pdf.set_text_color(255, 255, 255)
    pdf.set_font("Helvetica", "B", 24)
    pdf.multi_cell(
        0,
        12,
        to_latin1(v["label"]),
        fill=True,
        align="L",
        new_x="LMARGIN",
        new_y="NEXT",
        padding=(4, 5, 0, 5),
    )
    pdf.set_font("Helvetica", "", 11.5)
    pdf.multi_cell(
        0,
        6,
        _plain(v["summary"], labels),
        fill=True,
        align="L",
        new_x="LMARGIN",
        new_y="NEXT",
        padding=(1, 5, 4, 5),
    )
    pdf.set_fill_color(255, 255, 255)
    _para(pdf, report["title"], size=8.5, colour=_MUTED)
    _subheading(pdf, "Why")
    if not v["reasons"]:
        _para(pdf, "The report gives no reason.", colour=_MUTED)
    for r in v["reasons"]:
        with pdf.unbreakable() as doc:
            doc.set_font("Helvetica", "B", 9)
            doc.set_text_color(*_EFFECT_RGB[r["effect"]])
            doc.cell(
                0,
                5.5,
                to_latin1(f"{EFFECT_LABELS[r['effect']]}  ({r['rule_id']})"),
                new_x="LMARGIN",
                new_y="NEXT",
            )
            _para(doc, _plain(r["text"], labels), size=10.5, h=5.5)
            _para(
                doc,
                f"Measured: {_plain(r['measured'] or 'not measured', labels)}   Threshold: "
                f"{_plain(r['threshold'], labels)}   Source: {_plain(r['source'], labels)}",
                size=8.5,
                colour=_MUTED,
                h=4.5,
            )
            doc.ln(2)
    if v["conditions"]:
        _subheading(pdf, "Conditions of release")
        _para(pdf, "Release only if every condition below is met and recorded:", size=10)
        _bullets(pdf, [_plain(c, labels) for c in v["conditions"]])
    if v["next_steps"]:
        _subheading(pdf, "Next steps")
        _bullets(pdf, [_plain(t, labels) for t in v["next_steps"]], numbered=True)
    _model_data(pdf, report)


def _model_data(pdf, report: dict) -> None:
    m, d, rules = report["model"], report["data"], report["rules"]
    _subheading(pdf, "Model and data")
    pairs = [
        ("Model class", m["class"]),
        ("Family", m["family"]),
        (
            "Features / classes",
            f"{fmt(m['n_features'], 'unknown')} / {fmt(m['n_classes'], 'unknown')}",
        ),
        (
            "Hyperparameters",
            ", ".join(f"{k}={fmt_param(v)}" for k, v in m["params"].items()) or "none",
        ),
        ("Training / test rows", f"{fmt(d['n_train'], 'unknown')} / {fmt(d['n_test'], 'unknown')}"),
        ("Target column", d["target"] if d["target"] is not None else "unknown"),
    ]
    anon = d["anonymization"]
    if anon is None:
        pairs.append(("Anonymization", "none"))
    else:
        pairs += [
            (
                "Anonymization",
                (
                    f"{anon['method']}: k asked {fmt(anon['k'])}, achieved "
                    f"{fmt(anon['k_achieved'])}; l {fmt(anon['l'], 'not asked')}; "
                    f"t {fmt(anon['t'], 'not asked')}; verified {fmt(anon['verified'])}"
                ),
            ),
            ("Quasi-identifiers", ", ".join(anon["quasi_identifiers"]) or "none"),
        ]
        if anon["detail"]:
            pairs.append(("Anonymization detail", anon["detail"]))
    mp = d.get("mapping")
    if mp:
        pairs += [
            (
                "Mapping",
                (
                    f"{mp['method']} released with the model: k {fmt(mp['k'])}, "
                    f"{fmt(mp['n_groups'])} groups of {fmt(mp['n_training_rows'])} training "
                    f"rows, smallest {fmt(mp['smallest_group'])}"
                ),
            ),
            ("Mapping re-verified", "; ".join(mp["checks"])),
            ("Mapping reveals", mp["reveals"]),
        ]
        inv = mp.get("inventory")
        if inv:
            pairs.append(("File inventory", (
                f"{fmt(inv['members'])} members; {fmt(inv['hidden_values_mapping'])} values in "
                f"the mapping and {fmt(inv['hidden_values_model'])} in the model are training "
                "values the anonymized table does not show")))
        got = mp.get("measured")
        words = privacy_words((got or {}).get("privacy"), mp.get("privacy_claim"))
        if words:  # l and t: claimed against the training rows, or why not checked
            pairs.append(("Mapping l and t", words))
        if got:  # the training rows mapped through it: measured against claimed
            pairs += [
                (
                    "Mapping measured",
                    (
                        f"on {fmt(got['n_rows'])} training rows: k {fmt(got['k_measured'])} "
                        f"(the file claims {fmt(got['claims']['k'])}), "
                        f"{fmt(got['n_groups_measured'])} groups (the file claims "
                        f"{fmt(got['claims']['n_groups'])})"
                    ),
                ),
                (
                    "Mapping claims",
                    "match the training rows" if got["claims_match"]
                    else "MISMATCH: " + "; ".join(got["mismatches"]),
                ),
            ]
    _key_values(pdf, pairs)
    _subheading(pdf, "Provenance")
    model_file = m["file"]
    _key_values(
        pdf,
        [
            (
                "Rules",
                (
                    f"{rules['name']} version {rules['version']} ({fmt(rules['n_rules'])} rules), "
                    f"from {rules['origin']}"
                ),
            ),
            ("Rules sha256", rules["sha256"]),
            ("Model fingerprint", m["fingerprint"] or "none"),
            (
                "Model file",
                "none"
                if model_file is None
                else f"{model_file['name']} (sha256 {model_file['sha256']})",
            ),
            *([("Refit bounds", "reference models refitted with bounded values: " + "; ".join(
                f"{a['path']}.{a['parameter']} {a['file_value']} -> {a['value_used']}"
                for a in m["refit_adjustments"]))] if m.get("refit_adjustments") else []),
            (
                "Report",
                (
                    f"{report['report_type']} schema {report['schema_version']}, anonml "
                    f"{report['anonml_version']}, created {report['created_utc']}"
                ),
            ),
            ("Time taken", f"{fmt(report['timings']['total_seconds'])} s"),
        ],
    )


class _WrappingRow:
    """A table row whose cells break over-wide words at their inner boundaries
    (:func:`_wrap_long_words`) for the width of their column."""

    def __init__(self, pdf, row, widths: tuple) -> None:
        self.pdf, self.row, self.widths, self.i = pdf, row, widths, 0

    def cell(self, text: str, **kw: Any) -> None:
        width = sum(self.widths[self.i:self.i + kw.get("colspan", 1)]) - 3
        self.i += kw.get("colspan", 1)
        self.row.cell(_wrap_long_words(self.pdf, text, width), **kw)


def _evidence(pdf, report: dict) -> None:
    from fpdf.fonts import FontFace

    rules = report["rules"]
    labels = report.get("labels") or {}
    _section(pdf, "Evidence")
    _para(
        pdf,
        f"Every rule of the rule set {rules['name']} (version {rules['version']}, from "
        f"{rules['origin']}), failing rules first; the rules that do not apply to this model "
        "are listed after the table.",
        size=9,
        colour=_MUTED,
    )
    pdf.ln(2)
    groups = evidence_groups(report["evidence"])
    # failing and unevaluated rules in the table; passed ones one compact block each below it
    shown = [g for g in groups if g[0] not in ("not_applicable", "pass")]
    if not report["evidence"]:
        _para(pdf, "No rule was evaluated.", colour=_MUTED)
    elif shown:
        widths = (58, 17, 33, 38, 32)
        pdf.set_font("Helvetica", "", 7.3)
        pdf.set_text_color(*_INK)
        pdf.set_draw_color(*_LINE)
        pdf.set_line_width(0.2)
        heading = FontFace(emphasis="BOLD", fill_color=(238, 241, 245))
        # one table per group, its column headings and group title as heading rows: fpdf2
        # keeps them with the first rule and repeats them at the top of a continuation page
        for outcome, title, members in shown:
            with pdf.table(
                col_widths=widths,
                text_align="LEFT",
                line_height=3.15,
                headings_style=heading,
                num_heading_rows=2,
                first_row_as_headings=True,
                borders_layout="HORIZONTAL_LINES",
                padding=(1.0, 1.2),
            ) as table:
                head = table.row()
                for text in ("Rule", "Outcome", "Measured", "Threshold (source)", "If it fails"):
                    head.cell(text)
                table.row().cell(
                    title.upper(), colspan=5,
                    style=FontFace(emphasis="BOLD", color=_MUTED, fill_color=(255, 255, 255)),
                )
                for r in members:
                    keys = _keys(f"{r['measured'] or ''} {r['threshold']}", labels)
                    ids = "\n".join(_fit_ident(pdf, k, widths[2] - 3) for k in keys)
                    row = _WrappingRow(pdf, table.row(), widths)
                    explanation = "\n" + _plain(r["explanation"], labels)
                    row.cell(
                        to_latin1(f"{r['title']}\n[{r['rule_id']}] "
                                  f"{CATEGORY_LABELS[r['category']]}") + explanation
                    )
                    row.cell(
                        to_latin1(f"{OUTCOME_LABELS[outcome]}\n{EFFECT_LABELS[r['effect']]}"),
                        style=FontFace(emphasis="BOLD", color=_OUTCOME_RGB[outcome]),
                    )
                    measured = (_plain(r["measured"], labels) if r["measured"] is not None
                                else "not measured")
                    if r.get("note"):
                        measured += "\n" + _plain(r["note"], labels)
                    if ids:
                        measured += "\n" + ids
                    row.cell(measured)
                    row.cell(_plain(r["threshold"], labels) + "\n("
                             + _plain(r["source"], labels) + ")")
                    if r["outcome"] == "fail" and r["condition"]:
                        action = f"Condition: {r['condition']}" + (
                            f"\n{r['fix']}" if r["fix"] else ""
                        )
                    else:
                        action = r["fix"] or "none"
                    row.cell(_plain(action, labels))
    passed = [g for g in groups if g[0] == "pass"]
    if passed:
        _passed(pdf, passed[0][2], labels, first=not shown)
    inapplicable = [g for g in groups if g[0] == "not_applicable"]
    if inapplicable:
        rows = inapplicable[0][2]
        by_note: dict = {}
        for r in rows:
            by_note.setdefault(r.get("note") or "Not applicable to this model.", []).append(r)
        pdf.ln(3)
        for i, (note, members) in enumerate(by_note.items()):
            names = ", ".join(f"{r['title']} [{r['rule_id']}]" for r in members)
            with pdf.unbreakable() as doc:  # the heading goes with the first note
                if i == 0:
                    _para(doc, f"Not applicable ({len(rows)} rules)", size=9.5, style="B")
                _para(doc, f"{_plain(note, labels)} {names}.", size=8, colour=_MUTED, h=4)
    _checks(pdf, report)


def _passed(pdf, rows: list[dict], labels: dict, first: bool) -> None:
    """The passed rules, one short block each (title, identifier, category and effect; what
    was measured against which threshold, from which source), never split across pages."""
    pdf.ln(1 if first else 3)
    with pdf.unbreakable() as doc:  # the heading goes with the first rule
        _para(doc, f"Passed ({len(rows)} rules)", size=9.5, style="B")
        _passed_rule(doc, rows[0], labels)
    for r in rows[1:]:
        with pdf.unbreakable() as doc:
            _passed_rule(doc, r, labels)


def _passed_rule(pdf, r: dict, labels: dict) -> None:
    h = 3.7
    pdf.ln(0.8)
    pdf.set_font("Helvetica", "B", 8)
    pdf.set_text_color(*_OUTCOME_RGB["pass"])
    pdf.write(h, "Pass  ")
    pdf.set_text_color(*_INK)
    pdf.write(h, to_latin1(f"{r['title']} [{r['rule_id']}]"))
    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_MUTED)
    pdf.write(h, to_latin1(f"  {CATEGORY_LABELS[r['category']]}; "
                           f"{EFFECT_LABELS[r['effect']]} if it fails"))
    pdf.ln(h)
    measured = (_plain(r["measured"], labels) if r["measured"] is not None
                else "not measured")
    if r.get("note"):
        measured += "; " + _plain(r["note"], labels)
    keys = _keys(f"{r['measured'] or ''} {r['threshold']}", labels)
    if keys:
        measured += f" ({', '.join(keys)})"
    pdf.set_x(pdf.l_margin + 8)
    pdf.set_text_color(*_INK)
    pdf.multi_cell(0, h, to_latin1(f"Measured: {measured}. Threshold: "
                                   f"{_plain(r['threshold'], labels)} "
                                   f"({_plain(r['source'], labels)})."),
                   align="L", new_x="LMARGIN", new_y="NEXT")


def _checks(pdf, report: dict) -> None:
    c = report["checks"]
    labels = report.get("labels") or {}
    items = [(to_latin1(label_of(report, "structure." + k)), to_latin1(fmt(v)))
             for k, v in (c["structure"] or {}).items()]
    # the heading goes with the tamper lines and the whole table of figures when it can
    _subheading(pdf, "Structure and tamper checks",
                need=min(120, 16 + pairs_height(pdf, items)) if items else 40)
    tamper = c["tamper"]
    _key_values(pdf, [("Tamper check", TAMPER_LABELS[tamper["status"]])])
    if tamper["changed"]:
        _key_values(pdf, [("Changed parts", ", ".join(tamper["changed"]))])
    if c["preliminary"]:
        _key_values(
            pdf,
            [
                (
                    f"Finding {p['rule_id']}",
                    _plain(p["message"], labels) + (f" Fix: {p['fix']}" if p["fix"] else ""),
                )
                for p in c["preliminary"]
            ],
        )
    else:
        _key_values(pdf, [("Hyperparameter findings", "none")])
    if c["structure"]:
        # two columns of label / value pairs; a long label wraps short of its value
        pdf.ln(1)
        render_pairs(pdf, items, (_INK, _MUTED))


def _metrics_table(pdf, attacks: list[dict]) -> None:

    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_INK)
    pdf.set_draw_color(*_LINE)
    pdf.set_line_width(0.2)
    keys = (
        "auc",
        "auc_pvalue",
        "accuracy",
        "advantage",
        "tpr_at_fpr_0.001",
        "tpr_at_fpr_0.01",
        "tpr_at_fpr_0.1",
    )
    with _numeric_table(pdf, (46, 14, 17, 16, 17, 17, 17, 17, 17)) as table:
        head = table.row()
        for i, text in enumerate(
            (
                "Attack",
                "AUC",
                "AUC p-value",
                "Accuracy",
                "Advantage",
                "TPR at FPR 0.001",
                "TPR at FPR 0.01",
                "TPR at FPR 0.1",
                "Seconds",
            )
        ):
            head.cell(text, align="LEFT" if i == 0 else "RIGHT")
        for a in attacks:
            row = table.row()
            row.cell(to_latin1(f"{a['name']}\n[{a['id']}]"), align="LEFT")
            for key in keys:
                row.cell(fmt(a["metrics"][key]))
            row.cell(fmt(a["seconds"]))


#: the ROC chart: plot width and height, legend width to its right (mm)
_ROC_W, _ROC_H = 100.0, 46.0
#: height of the whole ROC block: the plot, its axis labels and the caption below
_ROC_BLOCK_H = _ROC_H + 4 + 12 + 14


def _roc_chart(pdf, attacks: list[dict]) -> None:
    width, height = _ROC_W, _ROC_H
    lo, x_ticks = roc_axis(attacks)
    if pdf.get_y() + _ROC_BLOCK_H > pdf.h - pdf.b_margin:
        pdf.add_page()
    x0, y0 = pdf.l_margin + 16, pdf.get_y() + 4

    def pt(x: float, y: float) -> tuple[float, float]:
        return x0 + x * width, y0 + (1 - y) * height

    pdf.set_line_width(0.15)
    pdf.set_draw_color(236, 239, 243)
    for v in roc_minor(lo):
        x = x0 + roc_x(v, lo) * width
        pdf.line(x, y0, x, y0 + height)
    pdf.set_draw_color(215, 220, 227)
    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_INK)
    for tick in x_ticks:
        x = x0 + roc_x(tick, lo) * width
        pdf.line(x, y0, x, y0 + height)
        label = fmt_tick(tick)
        pdf.text(x - pdf.get_string_width(label) / 2, y0 + height + 4.5, label)
    for tick in ROC_Y_TICKS:
        y = y0 + (1 - tick) * height
        pdf.line(x0, y, x0 + width, y)
        label = fmt_tick(tick)
        pdf.text(x0 - 2 - pdf.get_string_width(label), y + 1.2, label)
    pdf.set_draw_color(154, 163, 175)
    pdf.rect(x0, y0, width, height)
    pdf.set_font("Helvetica", "", 9)
    title = "False positive rate (log scale)"
    pdf.text(x0 + width / 2 - pdf.get_string_width(title) / 2, y0 + height + 10, title)
    with pdf.rotation(90, x0 - 11, y0 + height / 2):
        title = "True positive rate"
        pdf.text(x0 - 11 - pdf.get_string_width(title) / 2, y0 + height / 2, title)
    pdf.set_draw_color(138, 146, 158)
    pdf.set_line_width(0.3)
    pdf.set_dash_pattern(dash=1.5, gap=1.2)
    pdf.polyline([pt(x, y) for x, y in chance_line(lo=lo)])
    pdf.set_line_width(0.7)
    for i, attack in enumerate(attacks):
        _set_series(pdf, i)
        pdf.polyline(
            [
                pt(roc_x(f, lo), t)
                for f, t in zip(attack["roc"]["fpr"], attack["roc"]["tpr"], strict=True)
            ]
        )
    # legend to the right of the plot, so it never covers a curve; a long name wraps
    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_INK)
    names = [to_latin1(a["name"]) for a in attacks] + ["Chance (a guess)"]
    pdf.set_dash_pattern()
    lx = x0 + width + 5
    ly = y0 + 2
    for i, name in enumerate(names):
        if i < len(attacks):
            pdf.set_line_width(0.7)
            _set_series(pdf, i)
        else:
            pdf.set_line_width(0.3)
            pdf.set_draw_color(138, 146, 158)
            pdf.set_dash_pattern(dash=1.5, gap=1.2)
        pdf.line(lx, ly + 2, lx + 7, ly + 2)
        pdf.set_dash_pattern()
        pdf.set_xy(lx + 9, ly)
        pdf.multi_cell(pdf.w - pdf.r_margin - lx - 9, 4, name, align="L",
                       new_x="LMARGIN", new_y="NEXT")
        ly = pdf.get_y() + 1.5
    pdf.set_line_width(0.2)
    pdf.set_y(y0 + height + 13)


def _attacks(pdf, report: dict) -> None:
    attacks = report["attacks"]
    # the heading goes with the introduction and the table; the chart follows where it fits
    _section(pdf, "Membership attacks", need=24 + 9.0 * len(attacks) + 10 if attacks else 30)
    _para(
        pdf,
        "Each attack tries to tell whether a person was in the training data. An AUC of 0.5 "
        "and a curve on the chance line mean the attack does no better than a guess; what "
        "matters most is the true positive rate at a low false positive rate.",
        size=9,
        colour=_MUTED,
    )
    pdf.ln(2)
    if not attacks:
        _para(pdf, "No membership attack was run.", size=11)
        return
    _metrics_table(pdf, attacks)
    pdf.ln(4)
    _roc_chart(pdf, attacks)
    _para(
        pdf,
        "ROC curves. The false positive rate axis is logarithmic and starts at the smallest "
        "rate the test set can resolve (1 / its non-members); the dashed grey curve is the "
        "chance line (true positive rate = false positive rate).",
        size=8.5,
        colour=_MUTED,
    )


#: height of one feature's row in the attribute risk chart (mm)
_ARR_ROW_H = 5.5


def _arr_chart(pdf, rows: list[dict]) -> None:
    row_h, label_w, plot_w = _ARR_ROW_H, 38.0, 88.0
    hi, ticks = arr_axis(rows)
    x0 = pdf.l_margin + label_w
    if pdf.get_y() + 14 + row_h * len(rows) + 12 > pdf.h - pdf.b_margin:
        pdf.add_page()
    top = pdf.get_y() + 8
    bottom = top + row_h * len(rows)

    def px(v: float) -> float:
        return x0 + v / hi * plot_w

    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_INK)
    pdf.set_line_width(0.15)
    pdf.set_draw_color(225, 229, 235)
    for tick in ticks:
        pdf.line(px(tick), top - 2, px(tick), bottom)
        label = fmt_tick(tick)
        pdf.text(px(tick) - pdf.get_string_width(label) / 2, bottom + 4.5, label)
    pdf.set_draw_color(55, 65, 81)
    pdf.set_line_width(0.35)
    pdf.set_dash_pattern(dash=1.5, gap=1.0)
    pdf.line(px(1.0), top - 3, px(1.0), bottom)
    pdf.set_dash_pattern()
    pdf.text(px(1.0) + 1.5, top - 3.5, "ARR = 1: no extra risk")
    pdf.set_font("Helvetica", "B", 8)
    pdf.text(x0 + plot_w + 6, top - 3.5, "ARR [95% CI]")
    for i, r in enumerate(rows):
        y = top + row_h * (i + 0.5)
        sig = r["significant"]
        pdf.set_font("Helvetica", "B" if sig else "", 8.5)
        pdf.set_text_color(*_INK)
        name = to_latin1(r["feature"])
        pdf.text(x0 - 3 - pdf.get_string_width(name), y + 1.2, name)
        if r["arr"] is None:
            pdf.set_font("Helvetica", "I", 8)
            pdf.set_text_color(*_MUTED)
            pdf.text(x0 + 2, y + 1.2, "not measured (reason below the table)")
            continue
        colour = (185, 28, 28) if sig else (51, 65, 85)
        pdf.set_draw_color(*colour)
        pdf.set_line_width(0.45)
        if r["ci_low"] is not None and r["ci_high"] is not None:
            a, b = px(r["ci_low"]), px(r["ci_high"])
            pdf.line(a, y, b, y)
            pdf.line(a, y - 1.6, a, y + 1.6)
            pdf.line(b, y - 1.6, b, y + 1.6)
            text = f"{fmt(r['arr'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
        else:
            text = fmt(r["arr"])
        pdf.set_fill_color(*(colour if sig else (255, 255, 255)))
        pdf.ellipse(px(r["arr"]) - 1.7, y - 1.7, 3.4, 3.4, style="FD")
        pdf.set_font("Helvetica", "", 8)
        pdf.text(x0 + plot_w + 6, y + 1.2, text)
        if sig:
            pdf.set_font("Helvetica", "B", 8)
            pdf.set_text_color(*colour)
            pdf.text(x0 + plot_w + 40, y + 1.2, "significant")
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_INK)
    title = "Attribute risk ratio (ARR) with 95% confidence interval"
    pdf.text(x0 + plot_w / 2 - pdf.get_string_width(title) / 2, bottom + 10, title)
    pdf.set_line_width(0.2)
    pdf.set_y(bottom + 15)


def _attribute(pdf, report: dict) -> None:

    rows = report["attribute_risk"]
    # the heading goes with its introduction and chart
    _section(pdf, "Attribute inference", need=30 + _ARR_ROW_H * len(rows) + 27 if rows else 30)
    _para(
        pdf,
        "For each feature, how much better an attacker who has the model guesses its value "
        "for people in the training data than for other people (attribute risk ratio, ARR). "
        "An ARR of 1 means no extra risk; filled red dots mark features where the extra risk "
        "is statistically significant.",
        size=9,
        colour=_MUTED,
    )
    if not rows:
        pdf.ln(2)
        _para(pdf, "No attribute inference attack was run.", size=11)
        return
    _arr_chart(pdf, rows)
    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_INK)
    pdf.set_draw_color(*_LINE)
    with _numeric_table(pdf, (34, 20, 16, 30, 18, 20, 20, 20)) as table:
        head = table.row()
        for i, text in enumerate(
            (
                "Feature",
                "Kind",
                "ARR",
                "95% CI",
                "p-value",
                "Success, training rows",
                "Success, other rows",
                "Significant",
            )
        ):
            head.cell(text, align="LEFT" if i < 2 else "RIGHT")
        for r in rows:
            row = table.row()
            row.cell(to_latin1(r["feature"]), align="LEFT")
            row.cell(r["kind"], align="LEFT")
            row.cell(fmt(r["arr"]))
            row.cell(fmt_ci(r["ci_low"], r["ci_high"]))
            row.cell(fmt(r["p_value"]))
            row.cell(fmt(r["train_rate"]))
            row.cell(fmt(r["test_rate"]))
            row.cell("significant" if r["significant"] else "no")
    notes = [r for r in rows if r["arr"] is None]
    if notes:
        pdf.ln(2)
        for r in notes:
            with pdf.unbreakable() as doc:
                _para(doc, f"{r['feature']}: not measured: "
                      f"{r.get('note') or 'the report gives no reason'}.",
                      size=8, colour=_MUTED, h=4)


def _glossary(pdf, report: dict) -> None:
    # two balanced columns; an entry (term and definition) is never split between columns or
    # pages, and the heading keeps its first entries under it (_pdf_layout.column_layout)
    render_glossary(pdf, [(to_latin1(g["term"]), to_latin1(g["definition"]))
                          for g in report["glossary"]], (_INK, _INK),
                    lambda need: _section(pdf, "Glossary", need=max(40, need)))


def render_pdf(report: dict) -> bytes:
    """Render a release report as a PDF document.

    Parameters
    ----------
    report : dict
        A release report of schema v1 (see :func:`anonml.report.validate`); not validated here.

    Returns
    -------
    bytes
        The PDF. Its sections, in this order, are "Verdict", "Evidence", "Membership
        attacks", "Attribute inference" and "Glossary" (the first heading is the first text).
        The output depends on the report only (its creation date is ``created_utc``).

    Raises
    ------
    anonml.InputError
        If fpdf2 is not installed.
    """
    try:
        import fpdf
    except ImportError:
        raise InputError(
            "rendering a PDF report needs fpdf2; run: pip install 'anonml[report]'"
        ) from None
    pdf = _document(report)
    _verdict(pdf, report)
    _evidence(pdf, report)
    _attacks(pdf, report)
    _attribute(pdf, report)
    _glossary(pdf, report)
    return bytes(pdf.output())
