"""Layout of the PDF report's multi-column parts, as plain functions that can be tested alone.

* :func:`column_layout` places blocks of known height (a glossary entry: its term with its
  definition) in columns, page after page, never splitting a block and never leaving a block's
  first line at the foot of a column without the rest; the last page's blocks are balanced
  across its columns, so it is no taller than it needs to be. (fpdf2's ``text_columns`` with
  ``balance=True`` broke an entry between its term and its definition, and between pages, and
  left the heading "Class disclosure" stranded at the foot of a column; issue 23.)
* :func:`pair_rows` lays out label / value pairs in two columns so that a long label wraps
  instead of running under its value ("Residual degrees of freedom under their threshold"
  over "not measured"; issue 23).

The renderers :func:`render_glossary` and :func:`render_pairs` draw with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["column_layout", "pair_rows", "pairs_height", "render_glossary", "render_pairs"]

#: glossary text: font size (pt), line height (mm), gap after an entry (mm), gutter (mm)
GLOSSARY_SIZE, GLOSSARY_LINE, GLOSSARY_GAP, GLOSSARY_GUTTER = 8, 3.4, 1.4, 8
#: label / value pairs: font size (pt), line height (mm), space between label and value (mm)
PAIR_SIZE, PAIR_LINE, PAIR_SPACE = 8.5, 4.4, 3


def _fits(heights: Sequence[float], height: float, ncols: int) -> bool:
    """Whether the blocks fill at most ``ncols`` columns of ``height``, in order."""
    col, y = 0, 0.0
    for h in heights:
        if y > 0 and y + h > height:
            col, y = col + 1, 0.0
        if col >= ncols or h > height:
            return False
        y += h
    return True


def column_layout(heights: Sequence[float], first_room: float, page_room: float,
                  ncols: int = 2) -> list[tuple[int, int, float]]:
    """Where each block goes: ``(page, column, y)``, page 0 being the current one.

    Parameters
    ----------
    heights : sequence of float
        Each block's height, gap included, in order; a block is never split.
    first_room : float
        Height left on the current page under the heading.
    page_room : float
        Height of a column on a fresh page.
    ncols : int, default 2

    Returns
    -------
    list of (int, int, float)
        Page offset, column (0 = left) and offset from the top of the columns, per block.
        Blocks fill the columns of a page in order; a block that does not fit under the one
        above starts the next column (or page). The blocks of the last page are balanced: its
        columns are cut at the smallest height that holds them in order. A block taller than
        a whole column gets one of its own (it runs past the foot; glossary entries are a few
        lines). When no block fits on the current page at all, the first goes on page 1, so a
        caller that put a heading above should move it (:func:`render_glossary` asks for room
        for the first block under its heading).
    """
    out: list[tuple[int, int, float]] = []
    page, col, y, room = 0, 0, 0.0, float(first_room)
    if heights and heights[0] > room:
        page, room = 1, float(page_room)
    for h in heights:
        if y > 0 and y + h > room:
            col, y = col + 1, 0.0
            if col == ncols:
                page, col, room = page + 1, 0, float(page_room)
        out.append((page, col, y))
        y += h
    if not out:
        return out
    # balance the last page: the smallest column height that holds its blocks in order
    last = out[-1][0]
    start = next(i for i, p in enumerate(out) if p[0] == last)
    tail = list(heights[start:])
    room = float(first_room if last == 0 else page_room)
    lo, hi = max(tail), max(room, max(tail))
    if _fits(tail, lo, ncols):
        hi = lo
    for _ in range(50):  # bisection on the column height (blocks are a few mm each)
        if hi - lo < 0.01:
            break
        mid = (lo + hi) / 2
        if _fits(tail, mid, ncols):
            hi = mid
        else:
            lo = mid
    col, y = 0, 0.0
    for i, h in enumerate(tail, start):
        if y > 0 and y + h > hi + 1e-9:
            col, y = col + 1, 0.0
        out[i] = (last, col, y)
        y += h
    return out


def _lines(pdf: Any, width: float, text: str, line: float) -> list[str]:
    """The lines fpdf2 breaks ``text`` into in a cell ``width`` wide (current font)."""
    return pdf.multi_cell(width, line, text, dry_run=True, output="LINES")


def render_glossary(pdf: Any, entries: Sequence[tuple[str, str]], colours: tuple,
                    heading: Any) -> None:
    """The glossary: ``heading(need)`` draws the heading (moving it to a new page when less
    than ``need`` mm is left), then the entries (term, definition; Latin-1 text) in two
    columns laid out by :func:`column_layout`."""
    ink, muted = colours
    width = (pdf.w - pdf.l_margin - pdf.r_margin - GLOSSARY_GUTTER) / 2
    blocks = []
    for term, definition in entries:
        pdf.set_font("Helvetica", "B", GLOSSARY_SIZE)
        t = _lines(pdf, width, term, GLOSSARY_LINE)
        pdf.set_font("Helvetica", "", GLOSSARY_SIZE)
        d = _lines(pdf, width, definition, GLOSSARY_LINE)
        blocks.append((t, d, (len(t) + len(d)) * GLOSSARY_LINE + GLOSSARY_GAP))
    heights = [b[2] for b in blocks]
    # the heading keeps at least its first two entries (one per column) under it
    heading(sum(heights[:2]) if heights else 10)
    page_room = pdf.h - pdf.t_margin - pdf.b_margin
    places = column_layout(heights, pdf.h - pdf.b_margin - pdf.get_y(), page_room)
    top, page, bottom = pdf.get_y(), 0, pdf.get_y()
    auto = pdf.auto_page_break
    pdf.set_auto_page_break(False, margin=pdf.b_margin)  # every block is placed to fit
    try:
        for (t, d, h), (p, col, y) in zip(blocks, places):
            while page < p:
                pdf.add_page()
                page, top, bottom = page + 1, pdf.t_margin, pdf.t_margin
            x = pdf.l_margin + col * (width + GLOSSARY_GUTTER)
            pdf.set_xy(x, top + y)
            pdf.set_font("Helvetica", "B", GLOSSARY_SIZE)
            pdf.set_text_color(*ink)
            for text in t:
                pdf.set_x(x)
                pdf.cell(width, GLOSSARY_LINE, text, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", GLOSSARY_SIZE)
            pdf.set_text_color(*muted)
            for text in d:
                pdf.set_x(x)
                pdf.cell(width, GLOSSARY_LINE, text, new_x="LMARGIN", new_y="NEXT")
            bottom = max(bottom, top + y + h)
    finally:
        pdf.set_auto_page_break(auto, margin=pdf.b_margin)
    pdf.set_xy(pdf.l_margin, bottom)


def pair_rows(pdf: Any, items: Sequence[tuple[str, str]], col_w: float,
              ncols: int = 2) -> list[tuple[list[list[str]], list[str]]]:
    """Label / value pairs in ``ncols`` columns ``col_w`` wide, row by row (column-major:
    the first half of ``items`` fills the left column).

    Returns
    -------
    list of (labels, values)
        Per row, each column's label lines and value (``labels[j]`` wraps at the width left of
        that column's value, so a label never reaches its value).
    """
    pdf.set_font("Helvetica", "", PAIR_SIZE)
    per = (len(items) + ncols - 1) // ncols
    rows = []
    for i in range(per):
        labels, values = [], []
        for key, value in items[i::per][:ncols]:
            room = col_w - pdf.get_string_width(value) - PAIR_SPACE - 1
            labels.append(_lines(pdf, max(room, col_w / 3), key, PAIR_LINE))
            values.append(value)
        rows.append((labels, values))
    return rows


def _pair_width(pdf: Any) -> float:
    return (pdf.w - pdf.l_margin - pdf.r_margin) / 2 - PAIR_SPACE


def pairs_height(pdf: Any, items: Sequence[tuple[str, str]]) -> float:
    """Height (mm) :func:`render_pairs` takes for ``items`` (so a heading can ask for it)."""
    return sum(max(len(lab) for lab in labels) * PAIR_LINE
               for labels, _ in pair_rows(pdf, items, _pair_width(pdf)))


def render_pairs(pdf: Any, items: Sequence[tuple[str, str]], colours: tuple) -> None:
    """Draw :func:`pair_rows`: labels muted on the left, values right-aligned at each
    column's right edge (``PAIR_SPACE`` mm short of the next column)."""
    ink, muted = colours
    col_w = (pdf.w - pdf.l_margin - pdf.r_margin) / 2
    inner = _pair_width(pdf)
    for labels, values in pair_rows(pdf, items, inner):
        h = max(len(lab) for lab in labels) * PAIR_LINE
        if pdf.h - pdf.b_margin - pdf.get_y() < h:
            pdf.add_page()
        y = pdf.get_y()
        for j, (lab, value) in enumerate(zip(labels, values)):
            x = pdf.l_margin + j * col_w
            pdf.set_text_color(*muted)
            for n, text in enumerate(lab):
                pdf.set_xy(x, y + n * PAIR_LINE)
                pdf.cell(inner - pdf.get_string_width(value) - PAIR_SPACE, PAIR_LINE, text)
            pdf.set_text_color(*ink)
            pdf.set_xy(x, y)
            pdf.cell(inner, PAIR_LINE, value, align="R")
        pdf.set_xy(pdf.l_margin, y + h)
