"""Release reports: one versioned JSON schema (the data), rendered as HTML and PDF.

A report is a plain, JSON-safe dict built by ``anonml.safemodel.request_release``. This package
validates it against the v1 schema and renders it; the renderers format what the report holds
and compute nothing (no statistic, no data access), so the HTML and PDF say exactly what the
JSON says. The HTML is one self-contained page (inline CSS and SVG, no script, nothing fetched);
the PDF has a fixed structure (Verdict, Evidence, Membership attacks, Attribute inference,
Glossary). Validation needs ``jsonschema`` and the PDF needs ``fpdf2``: ``pip install
'anonml[report]'``.

Examples
--------
>>> from anonml.report import write_report          # doctest: +SKIP
>>> paths = write_report(report, "out/")             # doctest: +SKIP
>>> sorted(paths)                                     # doctest: +SKIP
['html', 'json', 'pdf']
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from anonml._errors import InputError
from anonml.report._schema import SCHEMA_VERSION, load_schema, validate

__all__ = [
    "SCHEMA_VERSION",
    "check_formats",
    "load_schema",
    "render_html",
    "render_pdf",
    "to_json",
    "validate",
    "write_report",
]

_FORMATS = ("json", "html", "pdf")


def render_html(report: dict) -> str:
    """Render a release report as one self-contained HTML page; see :mod:`anonml.report._html`."""
    from anonml.report._html import render_html as _render

    return _render(report)


def render_pdf(report: dict) -> bytes:
    """Render a release report as a PDF (needs fpdf2); see :mod:`anonml.report._pdf`."""
    from anonml.report._pdf import render_pdf as _render

    return _render(report)


def to_json(report: dict) -> str:
    """The report as JSON text: indented by 2, keys in the report's order, NaN refused."""
    try:
        return json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"the release report cannot be written as JSON: {exc}; "
            "validate it with anonml.report.validate to find the field"
        ) from None


def check_formats(formats: Iterable[str]) -> list[str]:
    """The requested report formats, checked before any work: known names, and the packages
    they need (jsonschema for every report, fpdf2 for the PDF) installed.

    Raises
    ------
    anonml.InputError
        One line naming the format or the package and the fix.
    """
    from anonml._io import check_packages

    wanted = list(dict.fromkeys(formats))
    unknown = [f for f in wanted if f not in _FORMATS]
    if unknown or not wanted:
        problem = f"unknown report format {unknown[0]!r}" if unknown else "no report format given"
        raise InputError(f"{problem}; choose from {', '.join(_FORMATS)}")
    check_packages("jsonschema", purpose="validating the release report")
    if "pdf" in wanted:
        check_packages("fpdf", purpose="rendering a PDF report")
    return wanted


def write_report(
    report: dict, out_dir: str | os.PathLike, formats: Iterable[str] = _FORMATS, *,
    create: bool = False,
) -> dict[str, Path]:
    """Validate a release report, render it, and write ``report.json``/``.html``/``.pdf``.

    Everything is validated and rendered in memory first, so a bad report or a failing
    renderer writes nothing. The files are then written as a set (see
    :func:`anonml._output.atomic_write_set`): into a temporary folder first, then renamed into
    place, so after a failure (a full disk while writing the PDF, SIGTERM) the folder holds
    either the whole new set or what it held before.

    Parameters
    ----------
    report : dict
        A release report of schema v1.
    out_dir : str or path-like
        The report folder; it must exist unless ``create``. If it exists, its
        ``report.json``/``.html``/``.pdf`` are replaced as a set: an older report file of a
        format not written this time is removed, so the folder never mixes two reports.
        Other files there are left alone.
    formats : iterable of {"json", "html", "pdf"}, default all three
        Which files to write.
    create : bool, default False
        Create a missing ``out_dir`` (its parent must exist) with the reports in it, in one
        rename: the folder appears complete or not at all.

    Returns
    -------
    dict of str to Path
        The path written for each format.

    Raises
    ------
    anonml.InputError
        If a format is unknown, the folder (or with ``create`` its parent) does not exist,
        the report is not valid (the message names the field), or a needed package
        (jsonschema, fpdf2) is missing.
    anonml.OutputError
        If writing failed (disk full, permission denied); nothing was changed.
    """
    from anonml._output import atomic_write_set

    wanted = check_formats(formats)
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"output {str(folder)!r} is a file; fix: give a folder")
    missing = folder if not create else folder.parent
    if not folder.exists() and not missing.is_dir():
        raise InputError(f"output folder {str(missing)!r} does not exist; create it first")
    validate(report)
    renderers = {
        "json": lambda: to_json(report).encode("utf-8"),
        "html": lambda: render_html(report).encode("utf-8"),
        "pdf": lambda: render_pdf(report),
    }
    contents = {f"report.{fmt}": renderers[fmt]() for fmt in wanted}
    paths = atomic_write_set(folder, contents, replaces=[f"report.{f}" for f in _FORMATS])
    return {fmt: paths[f"report.{fmt}"] for fmt in wanted}
