"""The PDF report's multi-column layout (issue 23): a glossary term never stranded at the foot
of a column or page without its definition, the last page balanced, and a long label of the
structure figures never running under its value."""

from __future__ import annotations

import copy
import io
import json
import random
import sys
from pathlib import Path

import pytest

from anonml.report import render_pdf
from anonml.report._pdf_blocks import to_latin1
from anonml.report._pdf_layout import (
    GLOSSARY_LINE,
    PAIR_SPACE,
    column_layout,
    pair_rows,
)

sys.path.insert(0, str(Path(__file__).parent))
from report_fixtures import make_report

MM = 72 / 25.4  # points per millimetre


def _check_layout(heights, first_room, page_room, places, ncols=2):
    assert len(places) == len(heights)
    assert [p[:2] for p in places] == sorted(p[:2] for p in places)  # in reading order
    for (page, col, y), h in zip(places, heights):
        room = first_room if page == 0 else page_room
        assert 0 <= col < ncols
        if h <= room:
            assert y + h <= room + 1e-6, (page, col, y, h, room)  # never past the foot
    # blocks of one column follow one another without overlap
    for (p0, c0, y0), h0, (p1, c1, y1) in zip(places, heights, places[1:]):
        if (p0, c0) == (p1, c1):
            assert abs(y1 - (y0 + h0)) < 1e-6


def test_column_layout_fills_in_order_and_never_splits_a_block():
    heights = [15.0, 11.6, 11.6, 15.0, 15.0, 11.6, 18.4, 15.0, 11.6, 18.4, 11.6]
    places = column_layout(heights, 47.2, 263.0)
    _check_layout(heights, 47.2, 263.0, places)
    # the current page takes what fits under the heading, one column after the other
    assert places[:6] == [(0, 0, 0.0), (0, 0, 15.0), (0, 0, 26.6), (0, 1, 0.0), (0, 1, 15.0),
                          (0, 1, 30.0)]
    assert {p[0] for p in places[6:]} == {1}


def test_column_layout_balances_the_last_page():
    heights = [10.0] * 9
    places = column_layout(heights, 260.0, 260.0)
    # all on the current page, in two columns of 5 and 4 (not 9 in the left one)
    assert [p[1] for p in places] == [0] * 5 + [1] * 4
    tail = column_layout([12.0, 4.0, 4.0, 4.0, 12.0], 200.0, 200.0)
    heights_by_col = [sum(h for h, p in zip([12.0, 4, 4, 4, 12], tail) if p[1] == c)
                      for c in (0, 1)]
    assert max(heights_by_col) <= 20.0  # 12+4+4 | 4+12: the smallest cut


def test_column_layout_moves_the_first_block_off_a_page_that_cannot_hold_it():
    places = column_layout([20.0, 5.0], first_room=12.0, page_room=250.0)
    assert places[0][0] == 1  # the caller's heading is not left alone above nothing


@pytest.mark.parametrize("seed", range(20))
def test_column_layout_random(seed):
    rng = random.Random(seed)
    heights = [rng.choice([8.2, 11.6, 15.0, 18.4, 21.8]) for _ in range(rng.randint(1, 60))]
    first, page = rng.uniform(25, 260), 263.0
    places = column_layout(heights, first, page)
    _check_layout(heights, first, page, places)
    last = places[-1][0]
    cols = [sum(h for h, p in zip(heights, places) if p[0] == last and p[1] == c)
            for c in (0, 1)]
    if cols[1]:  # balanced: moving the right column's first block left would not be better
        assert cols[0] - cols[1] <= max(heights) + 1e-6


# ------------------------------------------------------------------ rendered PDFs
def _fragments(data: bytes) -> list[tuple[int, float, float, str]]:
    """Every drawn text fragment: (page, x, y, text), y in points from the foot of the page."""
    pypdf = pytest.importorskip("pypdf")
    out: list[tuple[int, float, float, str]] = []
    for i, page in enumerate(pypdf.PdfReader(io.BytesIO(data)).pages):
        def visit(text, cm, tm, font, size, i=i):
            if text.strip():
                out.append((i, tm[4] + cm[4], tm[5] + cm[5], text.strip()))
        page.extract_text(visitor_text=visit)
    return out


def _real_report() -> dict:
    """The committed do-not-release audit of docs/release (a real Adult audit)."""
    path = Path(__file__).parents[2] / "docs" / "release" / "do_not_release" / "report.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _variants() -> list[dict]:
    """Reports whose glossary starts at many heights of a page (fewer attribute rows push it
    up): the glossary's first entries land at the foot of a page in some of them."""
    real = _real_report()
    out = []
    for n in range(0, len(real["attribute_risk"]) + 1, 3):
        r = copy.deepcopy(real)
        r["attribute_risk"] = r["attribute_risk"][:n]
        out.append(r)
    return out + [make_report(d) for d in ("release", "do_not_release")]


@pytest.mark.parametrize("index", range(len(_variants())))
def test_pdf_glossary_term_never_stranded_from_its_definition(index):
    report = _variants()[index]
    frags = _fragments(render_pdf(report))
    line = GLOSSARY_LINE * MM
    start = next(i for i, f in enumerate(frags) if f[3] == "Glossary")
    glossary = frags[start + 1:]
    for g in report["glossary"]:
        term, definition = to_latin1(g["term"]), to_latin1(g["definition"])
        at = [i for i, f in enumerate(glossary) if f[3] == term]
        assert at, f"glossary term {term!r} not drawn on a line of its own"
        page, x, y, _ = glossary[at[0]]
        below = [f for f in glossary if f[0] == page and abs(f[1] - x) < 1
                 and abs(f[2] - (y - line)) < 1]
        assert below, f"{term!r} is the last line of its column on page {page + 1}"
        assert definition.startswith(below[0][3][:20]), (term, below[0][3])
    # the glossary's heading has its first entry under it on the same page
    assert glossary[0][0] == frags[start][0]


def test_structure_labels_wrap_short_of_their_values():
    from fpdf import FPDF

    report = _real_report()
    structure = report["checks"]["structure"]
    structure["residual_dof"] = None  # "not measured": the longest value
    structure["dof_risk"] = None
    pdf = FPDF(unit="mm", format="A4")
    pdf.add_page()
    pdf.set_margins(16, 16, 16)
    from anonml.report._common import fmt, label_of

    items = [(to_latin1(label_of(report, "structure." + k)), fmt(v))
             for k, v in structure.items()]
    col_w = (pdf.w - 32) / 2 - PAIR_SPACE
    rows = pair_rows(pdf, items, col_w)
    assert sum(len(values) for _, values in rows) == len(items)
    wrapped = 0
    for labels, values in rows:
        for lab, value in zip(labels, values):
            widest = max(pdf.get_string_width(t) for t in lab)
            assert widest + PAIR_SPACE + pdf.get_string_width(value) <= col_w, (lab, value)
            wrapped += len(lab) > 1
    assert wrapped  # "Residual degrees of freedom under their threshold" did not fit
    # in the rendered PDF, no label on the line of a "not measured" runs into it
    frags = _fragments(render_pdf(report))
    pdf.set_font("Helvetica", "", 8.5)
    texts = [f[3] for f in frags]
    block = frags[texts.index("Structure and tamper checks"):texts.index("Membership attacks")]
    values = [f for f in block if f[3] == "not measured"]
    assert len(values) == 2
    for page, x, y, _ in values:
        left = [f for f in frags if f[0] == page and abs(f[2] - y) < 0.5 and f[1] < x]
        assert left
        for _, lx, _, text in left:
            assert lx + pdf.get_string_width(text) * MM < x, (text, "runs under its value")
