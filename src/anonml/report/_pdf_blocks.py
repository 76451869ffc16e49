"""The PDF report's building blocks (fpdf2): the document, headings, text and small tables.

Every section of :mod:`anonml.report._pdf` is drawn with these: the A4 document with its
footer and metadata (:func:`_document`), section and sub-section headings that move to the
next page with their first block, paragraphs, bullets and key / value lines that are never
split across pages, the numeric table style and the chart series styles. The core Helvetica
font covers Latin-1 only, so :func:`to_latin1` spells other characters out (``≤`` -> ``<=``,
``ε`` -> ``epsilon``); an identifier is only ever broken after a dot (:func:`_fit_ident`), a
long word only at its inner boundaries (:func:`_wrap_long_words`).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

from anonml.report._common import SERIES_COLOURS, SERIES_DASHES, segments

__all__ = ["to_latin1"]


_SPELLED = {  # characters outside Latin-1 and how the PDF spells them
    "\N{LESS-THAN OR EQUAL TO}": "<=",
    "\N{GREATER-THAN OR EQUAL TO}": ">=",
    "\N{NOT EQUAL TO}": "!=",
    "\N{ALMOST EQUAL TO}": "~",
    "\N{MINUS SIGN}": "-",
    "\N{RIGHTWARDS ARROW}": "->",
    "\N{LEFTWARDS ARROW}": "<-",
    "\N{RIGHTWARDS DOUBLE ARROW}": "=>",
    "\N{INFINITY}": "infinity",
    "\N{SQUARE ROOT}": "sqrt",
    "\N{N-ARY SUMMATION}": "sum",
    "\N{HORIZONTAL ELLIPSIS}": "...",
    "\N{BULLET}": "-",
    "\N{EM DASH}": " - ",
    "\N{EN DASH}": "-",
    "\N{LEFT SINGLE QUOTATION MARK}": "'",
    "\N{RIGHT SINGLE QUOTATION MARK}": "'",
    "\N{LEFT DOUBLE QUOTATION MARK}": '"',
    "\N{RIGHT DOUBLE QUOTATION MARK}": '"',
    "\N{NARROW NO-BREAK SPACE}": " ",
    "\N{GREEK SMALL LETTER EPSILON}": "epsilon",
    "\N{GREEK SMALL LETTER DELTA}": "delta",
    "\N{GREEK SMALL LETTER ALPHA}": "alpha",
    "\N{GREEK SMALL LETTER BETA}": "beta",
    "\N{GREEK SMALL LETTER GAMMA}": "gamma",
    "\N{GREEK SMALL LETTER LAMDA}": "lambda",
    "\N{GREEK SMALL LETTER MU}": "mu",
    "\N{GREEK SMALL LETTER SIGMA}": "sigma",
    "\N{GREEK SMALL LETTER THETA}": "theta",
    "\N{GREEK SMALL LETTER PI}": "pi",
    "\N{GREEK SMALL LETTER CHI}": "chi",
    "\N{GREEK CAPITAL LETTER DELTA}": "Delta",
    "\N{GREEK CAPITAL LETTER SIGMA}": "Sigma",
}
_SPELLED_TABLE = str.maketrans(_SPELLED)


def to_latin1(text: Any) -> str:
    """Spell out characters the PDF core fonts lack (``≤`` -> ``<=``, ``ε`` -> ``epsilon``).

    Characters with no spelling lose their accents when that makes them Latin-1, else become "?".
    """
    text = str(text).translate(_SPELLED_TABLE)
    try:
        text.encode("latin-1")
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for ch in text:
        try:
            ch.encode("latin-1")
            out.append(ch)
        except UnicodeEncodeError:
            plain = "".join(
                c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)
            )
            out.append(plain if plain and plain.isascii() else "?")
    return "".join(out)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


_INK, _MUTED, _LINE = (31, 41, 55), (91, 100, 114), (200, 205, 214)
_OUTCOME_RGB = {
    "fail": (185, 28, 28),
    "pass": (30, 123, 52),
    "not_evaluated": (180, 83, 9),
    "not_applicable": (107, 114, 128),
}
_EFFECT_RGB = {"block": (185, 28, 28), "condition": (180, 83, 9), "warn": (107, 114, 128)}


def _document(report: dict):
    """An FPDF with fonts, margins, metadata and a page footer set up."""
    from fpdf import FPDF

    footer_text = to_latin1(f"{report['title']} | anonml {report['anonml_version']} | ")

    class _ReportPDF(FPDF):
        def footer(self) -> None:
            self.set_y(-12)
            self.set_font("Helvetica", "", 7.5)
            self.set_text_color(*_MUTED)
            self.cell(0, 6, footer_text + f"page {self.page_no()} of {{nb}}", align="C")

    pdf = _ReportPDF(orientation="P", unit="mm", format="A4")
    pdf.set_margins(16, 16, 16)
    pdf.set_auto_page_break(True, margin=18)
    pdf.set_title(to_latin1(report["title"]))
    pdf.set_subject(to_latin1(f"Release report: {report['verdict']['label']}"))
    pdf.set_creator(to_latin1(f"anonml {report['anonml_version']}"))
    created = dt.datetime.strptime(report["created_utc"][:19], "%Y-%m-%dT%H:%M:%S")
    pdf.set_creation_date(created.replace(tzinfo=dt.timezone.utc))
    return pdf


def _room(pdf) -> float:
    return pdf.h - pdf.b_margin - pdf.get_y()


def _section(pdf, title: str, need: float = 40) -> None:
    """A section heading: on a new page for the first section or when less than ``need`` mm
    is left under it."""
    if pdf.page == 0 or _room(pdf) < need + 20:
        pdf.add_page()
    else:
        pdf.ln(7)
    pdf.set_font("Helvetica", "B", 20)
    pdf.set_text_color(*_INK)
    pdf.cell(0, 11, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_draw_color(*_LINE)
    pdf.set_line_width(0.5)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
    pdf.ln(4)


def _subheading(pdf, title: str, need: float = 30) -> None:
    """A sub-heading, moved to the next page with what follows when less than ``need`` mm
    would be left under it."""
    if _room(pdf) < need + 12:
        pdf.add_page()
    pdf.ln(3)
    pdf.set_font("Helvetica", "B", 12.5)
    pdf.set_text_color(*_INK)
    pdf.cell(0, 7, title, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(1)


def _para(pdf, text: str, size: float = 10, style: str = "", colour=_INK, h: float = 5) -> None:
    pdf.set_font("Helvetica", style, size)
    pdf.set_text_color(*colour)
    pdf.multi_cell(0, h, to_latin1(text), align="L", new_x="LMARGIN", new_y="NEXT")


def _bullets(pdf, items: list[str], numbered: bool = False) -> None:
    pdf.set_font("Helvetica", "", 10)
    pdf.set_text_color(*_INK)
    for i, item in enumerate(items, 1):
        mark = f"{i}." if numbered else "-"
        with pdf.unbreakable() as doc:
            doc.cell(7, 5.5, mark)
            doc.multi_cell(0, 5.5, to_latin1(item), align="L", new_x="LMARGIN", new_y="NEXT")


def _plain(text: Any, labels: dict) -> str:
    """``text`` with every measure key replaced by its label (Latin-1)."""
    return to_latin1("".join(labels[p] if kind == "measure" else p
                             for kind, p in segments(str(text), labels)))


def _keys(text: Any, labels: dict) -> list[str]:
    return list(dict.fromkeys(p for kind, p in segments(str(text), labels) if kind == "measure"))


def _pack(pdf, parts: list[str], width: float) -> str:
    """``parts`` joined into lines no wider than ``width`` in the current font (a part wider
    than that stands on a line of its own), the lines joined by newlines."""
    lines, line = [], ""
    for part in parts:
        if line and pdf.get_string_width(line + part) > width:
            lines.append(line)
            line = part
        else:
            line += part
    lines.append(line)
    return "\n".join(lines)


def _fit_ident(pdf, name: str, width: float) -> str:
    """``name`` with line breaks only after its dots, so that no line is wider than ``width``
    in the current font (an identifier is never broken inside a part)."""
    return _pack(pdf, re.split(r"(?<=\.)(?=[A-Za-z_])", name), width)


_PART = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[._/])(?=\w)")


def _wrap_long_words(pdf, text: str, width: float) -> str:
    """``text`` with every word wider than ``width`` (in the current font) broken at its
    inner boundaries (``SafeRandomForest`` / ``Classifier``, after a dot, underscore or
    slash), never inside a part, so that a table cell does not cut ``Classi`` / ``fier``."""
    def wrap(word: str) -> str:
        if pdf.get_string_width(word) <= width:
            return word
        return _pack(pdf, _PART.split(word), width)

    return "\n".join(" ".join(wrap(w) for w in ln.split(" ")) for ln in text.split("\n"))


def _key_values(pdf, pairs: list[tuple[str, Any]], key_width: float = 46) -> None:
    for key, value in pairs:
        pdf.set_font("Helvetica", "", 9)
        pdf.set_text_color(*_MUTED)
        pdf.cell(key_width, 5, to_latin1(key))
        pdf.set_text_color(*_INK)
        pdf.multi_cell(0, 5, to_latin1(value), align="L", new_x="LMARGIN", new_y="NEXT")


def _numeric_table(pdf: Any, col_widths: tuple) -> Any:
    """An fpdf2 table of right-aligned figures with a shaded header row."""
    from fpdf.fonts import FontFace

    return pdf.table(
        col_widths=col_widths,
        text_align="RIGHT",
        line_height=3.6,
        borders_layout="HORIZONTAL_LINES",
        padding=(0.8, 1.2),
        cell_fill_color=(255, 255, 255),
        cell_fill_mode="ALL",
        headings_style=FontFace(emphasis="BOLD", fill_color=(238, 241, 245)),
    )


def _set_series(pdf, i: int) -> None:
    pdf.set_draw_color(*_rgb(SERIES_COLOURS[i % len(SERIES_COLOURS)]))
    dash = SERIES_DASHES[i % len(SERIES_DASHES)]
    pdf.set_dash_pattern(
        dash=dash[0] * 0.35, gap=dash[1] * 0.35
    ) if dash else pdf.set_dash_pattern()
