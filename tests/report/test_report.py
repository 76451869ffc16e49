"""Release reports: schema validation, HTML and PDF rendering, atomic writing.

The browser test (the HTML opened in headless chromium) is in test_report_browser.py.
"""

from __future__ import annotations

import copy
import io
import json
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from report_fixtures import DECISIONS, all_reports, make_report

from anonml._errors import InputError
from anonml.report import (
    load_schema,
    render_html,
    render_pdf,
    to_json,
    validate,
    write_report,
)
from anonml.report._common import (
    ROC_X_TICKS,
    ROC_Y_TICKS,
    arr_axis,
    evidence_groups,
    fmt,
    fmt_tick,
    roc_x,
)
from anonml.report._pdf import SECTIONS
from anonml.report._pdf_blocks import to_latin1

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def reports():
    return all_reports()


def _error(report) -> str:
    with pytest.raises(InputError) as info:
        validate(report)
    message = str(info.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- schema and validation


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {"const": "1.0"}
    # load_schema returns a copy: changing it does not change validation
    schema["properties"]["schema_version"] = {"const": "9"}
    validate(make_report("release"))


@pytest.mark.parametrize("decision", DECISIONS)
def test_fixtures_validate(reports, decision):
    validate(reports[decision])
    # and survive a JSON round trip unchanged
    assert json.loads(to_json(reports[decision])) == reports[decision]


def test_missing_verdict_names_the_path():
    report = make_report("release")
    del report["verdict"]
    message = _error(report)
    assert "$.verdict" in message and "missing" in message


def test_bad_decision_names_the_path_and_the_allowed_values():
    report = make_report("release")
    report["verdict"]["decision"] = "maybe"
    message = _error(report)
    assert "$.verdict.decision" in message and "'maybe'" in message
    assert "release_with_conditions" in message


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_number_names_the_path(bad):
    report = make_report("do_not_release")
    report["attacks"][1]["metrics"]["auc"] = bad
    message = _error(report)
    assert "$.attacks[1].metrics.auc" in message and "null" in message


def test_non_json_value_is_refused_with_its_type():
    np = pytest.importorskip("numpy")
    report = make_report("release")
    report["data"]["n_train"] = np.int64(5)
    message = _error(report)
    assert "$.data.n_train" in message and "int64" in message


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda r: r["verdict"].update(label="Release"), "$.verdict.label"),
        (lambda r: r["verdict"].update(conditions=[]), "$.verdict.conditions"),
        (lambda r: r.update(surprise=1), "$.surprise"),
        (lambda r: r["evidence"][2].update(outcome="passed"), "$.evidence[2].outcome"),
        (lambda r: r["attacks"][0]["metrics"].pop("tpr_at_fpr_0.01"), "tpr_at_fpr_0.01"),
        (lambda r: r["attribute_risk"][0].update(p_value=1.5), "$.attribute_risk[0].p_value"),
        (lambda r: r["model"].update(fingerprint="md5:abc"), "$.model.fingerprint"),
        (lambda r: r.update(created_utc="22/11/2026"), "$.created_utc"),
        (lambda r: r["checks"]["tamper"].update(status="ok"), "$.checks.tamper.status"),
        (lambda r: r["attacks"][0]["roc"]["tpr"].pop(), "$.attacks[0].roc"),
        (lambda r: r["attacks"][0]["roc"]["fpr"].reverse(), "$.attacks[0].roc.fpr[1]"),
    ],
)
def test_broken_reports_fail_naming_the_field(edit, path):
    report = make_report("release_with_conditions")
    edit(report)
    assert path in _error(report)


def test_not_a_dict():
    assert "$" in _error([make_report("release")])


def test_missing_jsonschema_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(InputError, match=r"pip install 'anonml\[report\]'"):
        validate(make_report("release"))


# ---------------------------------------------------------------- shared formatting


def test_formatting_of_numbers():
    assert [fmt(v) for v in (0.0, 1.0, 0.0351, 0.7123, 30162, 12345.6, 3.2e-5, True, None)] == [
        "0", "1.00", "0.0351", "0.712", "30,162", "12,346", "3.2e-05", "yes", "not measured",
    ]  # fmt: skip
    assert [fmt_tick(t) for t in ROC_X_TICKS] == ["0.0001", "0.001", "0.01", "0.1", "1"]


def test_log_fpr_axis_positions():
    assert roc_x(1e-4) == pytest.approx(0)
    assert roc_x(0.0) == pytest.approx(0)  # FPR 0 is clipped to the left edge
    assert roc_x(1e-3) == pytest.approx(0.25)
    assert roc_x(1e-2) == pytest.approx(0.5)
    assert roc_x(1.0) == pytest.approx(1)


def test_arr_axis_shows_one_and_every_interval():
    rows = [
        {"arr": 2.7, "ci_low": 2.1, "ci_high": 3.3},
        {"arr": None, "ci_low": None, "ci_high": None},
    ]
    hi, ticks = arr_axis(rows)
    assert hi == 3.5 and ticks[0] == 0 and 1.0 in ticks and ticks[-1] == hi
    assert arr_axis([])[0] == 2.0


def test_evidence_groups_put_failures_first_by_severity(reports):
    groups = evidence_groups(reports["do_not_release"]["evidence"])
    assert [g[0] for g in groups] == ["fail", "not_evaluated", "pass", "not_applicable"]
    fails = groups[0][2]
    assert [r["effect"] for r in fails] == sorted(
        (r["effect"] for r in fails), key=["block", "condition", "warn"].index
    )
    assert sum(len(g[2]) for g in groups) == len(reports["do_not_release"]["evidence"])


def test_to_latin1_spells_out_symbols():
    assert to_latin1("ε ≤ 10, δ ≥ 1e-5 — ok") == "epsilon <= 10, delta >= 1e-5  -  ok"
    latin1 = (
        "\N{PLUS-MINUS SIGN} 0.1 \N{MULTIPLICATION SIGN} 2, "
        "caf\N{LATIN SMALL LETTER E WITH ACUTE}"
    )
    assert to_latin1(latin1) == latin1  # Latin-1 already
    assert to_latin1("Łódź 北") == "?ódz ?"  # accents dropped when that gives Latin-1, else '?'


# ---------------------------------------------------------------- HTML


class _Text(HTMLParser):
    """Visible text nodes and every src/href value of an HTML document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts, self.links, self.tags, self._skip = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._skip += tag == "style"
        self.links += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action")]

    def handle_endtag(self, tag):
        self._skip -= tag == "style"

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(data.strip())


def _parse(page: str) -> _Text:
    parser = _Text()
    parser.feed(page)
    return parser


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


@pytest.mark.parametrize("decision", DECISIONS)
def test_html_verdict_comes_first_and_ids_are_there(reports, decision):
    report = reports[decision]
    page = render_html(report)
    for element_id in ("verdict", "roc-plot", "arr-chart", "evidence", "glossary"):
        assert page.count(f'id="{element_id}"') == 1
    body = page[page.index("<body>") :]
    label = report["verdict"]["label"]
    # the first text in the body is the verdict banner: its kicker, then the decision label
    assert _parse(body).texts[:3] == ["Verdict", label, report["verdict"]["summary"]]
    order = ['id="verdict"', 'id="reasons"', 'id="next-steps"', 'id="model-data"',
             'id="evidence"', 'id="attacks"', 'id="roc-plot"', 'id="arr-chart"', 'id="checks"',
             'id="glossary"', "<footer>"]  # fmt: skip
    positions = [body.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert ('id="conditions"' in body) == (decision == "release_with_conditions")


def test_html_banner_colour_depends_on_decision(reports):
    colours = {d: re.search(r'id="verdict"[^>]*background:(#[0-9a-f]{6})', render_html(r)).group(1)
               for d, r in reports.items()}  # fmt: skip
    assert colours == {"release": "#1e7b34", "release_with_conditions": "#b45309",
                       "do_not_release": "#b91c1c"}  # fmt: skip


def test_html_escapes_every_string():
    report = make_report("do_not_release")
    attack = "<script>alert('x')</script>"
    report["evidence"][0]["title"] = attack
    report["verdict"]["reasons"][0]["text"] = attack
    report["attacks"][0]["name"] = attack
    report["attribute_risk"][0]["feature"] = attack
    report["glossary"][0]["term"] = attack
    report["model"]["params"]["criterion"] = attack
    report["title"] = 'quote" onload="x'
    validate(report)
    page = render_html(report)
    assert "<script" not in page.lower()
    assert page.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") >= 7  # + ROC legend
    assert 'quote" onload' not in page and "quote&quot; onload=&quot;x" in page


@pytest.mark.parametrize("decision", DECISIONS)
def test_html_is_self_contained(reports, decision):
    page = render_html(reports[decision])
    parsed = _parse(page)
    assert parsed.links == []  # no src= or href= at all, so nothing remote
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert re.search(r"url\(|@import|@font-face", page) is None
    # the only URL is the SVG namespace name (an identifier, never fetched)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}


def test_html_without_attacks_says_so():
    report = make_report("release")
    report["attacks"], report["attribute_risk"] = [], []
    validate(report)
    page = render_html(report)
    assert "No membership attack was run." in page and 'id="roc-plot"' not in page
    assert "No attribute inference attack was run." in page and 'id="arr-chart"' not in page


def test_html_roc_points_on_the_log_axis():
    report = make_report("release")
    report["attacks"] = report["attacks"][:1]
    report["attacks"][0]["roc"] = {"fpr": [0.0, 0.001, 0.01, 1.0], "tpr": [0.0, 0.2, 0.5, 1.0]}
    validate(report)
    page = render_html(report)
    svg = page[page.index('id="roc-plot"') : page.index("</svg>", page.index('id="roc-plot"'))]
    frame = re.search(
        r'class="frame" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg
    )
    x0, y0, w, h = map(float, frame.groups())
    points = re.search(r'class="roc-curve" points="([^"]+)"', svg).group(1).split()
    got = [tuple(map(float, p.split(","))) for p in points]
    want = [(x0, y0 + h), (x0 + w / 4, y0 + 0.8 * h), (x0 + w / 2, y0 + h / 2), (x0 + w, y0)]
    assert got == [pytest.approx(p, abs=0.06) for p in want]
    # the chance line passes through (FPR 0.01, TPR 0.01): halfway across, near the bottom
    chance = [tuple(map(float, p.split(","))) for p in
              re.search(r'<polyline points="([^"]+)"', svg).group(1).split()]  # fmt: skip
    mid = min(chance, key=lambda p: abs(p[0] - (x0 + w / 2)))
    assert mid == pytest.approx((x0 + w / 2, y0 + 0.99 * h), abs=0.06)
    assert "Chance (a guess)" in svg and report["attacks"][0]["name"] in svg  # legend


def test_html_marks_significant_attributes(reports):
    report = reports["release_with_conditions"]
    page = render_html(report)
    n_significant = sum(r["significant"] and r["arr"] is not None for r in report["attribute_risk"])
    assert n_significant >= 1
    assert page.count('class="arr-significant"') == n_significant
    assert page.count('class="arr-dot"') == sum(
        (not r["significant"]) and r["arr"] is not None for r in report["attribute_risk"]
    )
    assert "ARR = 1: no extra risk" in page


def test_html_evidence_lists_failures_first(reports):
    page = render_html(reports["do_not_release"])
    table = page[page.index('id="evidence"') : page.index('id="attacks"')]
    outcomes = re.findall(r'<tr class="outcome-(\w+)"', table)
    order = ["fail", "not_evaluated", "pass", "not_applicable"]
    assert outcomes == sorted(outcomes, key=order.index)
    assert len(outcomes) == len(reports["do_not_release"]["evidence"])


# numbers that are part of the fixed wording ("An AUC of 0.5", "95% CI", "TPR at FPR 0.001")
_TEMPLATE_NUMBERS = {"0.5", "1", "95", "0.001", "0.01", "0.1"}
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?(?!\w)")


@pytest.mark.parametrize("decision", DECISIONS)
def test_html_shows_no_number_that_is_not_in_the_report(reports, decision):
    """Renderers compute nothing: every number shown is a report value or an axis tick."""
    report = reports[decision]
    leaves = list(_leaves(report))
    strings = {v for v in leaves if isinstance(v, str)}
    allowed = {t for s in strings for t in _NUMBER.findall(s)}
    allowed |= {fmt(v) for v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)}
    ticks = (*ROC_X_TICKS, *ROC_Y_TICKS, *arr_axis(report["attribute_risk"])[1])
    allowed |= {fmt_tick(t) for t in ticks}
    allowed |= _TEMPLATE_NUMBERS
    for text in _parse(render_html(report)).texts:
        if text in strings:
            continue
        for token in _NUMBER.findall(text):
            assert token in allowed, f"{token!r} in {text!r} is not a value of the report"


def test_renderers_depend_on_the_report_only(reports):
    report = reports["release_with_conditions"]
    before = copy.deepcopy(report)
    assert render_html(report) == render_html(copy.deepcopy(report))
    assert render_pdf(report) == render_pdf(copy.deepcopy(report))
    assert report == before  # and do not change it


# ---------------------------------------------------------------- PDF


def _pdf_pages(data: bytes) -> list[str]:
    pypdf = pytest.importorskip("pypdf")
    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def _footerless(page: str) -> list[str]:
    return [line for line in page.split("\n") if line.strip() and " | anonml " not in line]


def _by_section(pages: list[str]) -> dict:
    """The text under each section heading (headings are lines of their own, in order)."""
    lines = [line.strip() for page in pages for line in _footerless(page)]
    starts = [lines.index(section) for section in SECTIONS]
    assert starts == sorted(starts) and starts[0] == 0
    ends = [*starts[1:], None]
    return {s: "\n".join(lines[a:b]) for s, a, b in zip(SECTIONS, starts, ends, strict=True)}


@pytest.mark.parametrize("decision", DECISIONS)
def test_pdf_has_the_fixed_sections(reports, decision):
    report = reports[decision]
    data = render_pdf(report)
    assert data.startswith(b"%PDF-")
    pages = _pdf_pages(data)
    assert pages[0].split("\n", 1)[0].strip() == "Verdict"
    assert report["verdict"]["label"] in pages[0]
    assert to_latin1(report["verdict"]["summary"])[:60] in pages[0].replace("\n", " ")
    by_section = _by_section(pages)
    for section in SECTIONS:
        assert sum(line.strip() == section for p in pages for line in p.split("\n")) == 1
    for reason in report["verdict"]["reasons"]:
        assert reason["rule_id"] in by_section["Verdict"]
    for item in report["evidence"]:
        assert item["rule_id"] in by_section["Evidence"]
    for attack in report["attacks"]:
        assert attack["id"] in by_section["Membership attacks"]
    assert "False positive rate (log scale)" in by_section["Membership attacks"]
    for row in report["attribute_risk"]:
        assert row["feature"] in by_section["Attribute inference"]
    for term in report["glossary"]:
        assert term["term"] in by_section["Glossary"].replace("\n", " ")
    if decision == "release_with_conditions":
        assert report["verdict"]["conditions"][0] in by_section["Verdict"].replace("\n", " ")


def _real_report() -> dict:
    """The committed do-not-release audit of docs/release (a real Adult audit)."""
    path = Path(__file__).parents[2] / "docs" / "release" / "do_not_release" / "report.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("which", [*DECISIONS, "docs"])
def test_pdf_layout_keeps_blocks_together_and_has_no_near_empty_page(reports, which):
    report = _real_report() if which == "docs" else reports[which]
    pages = _pdf_pages(render_pdf(report))
    assert len(pages) <= 6  # issue 14: a do-not-release audit of an Adult model in <= 6 pages
    for i, page in enumerate(pages):
        lines = _footerless(page)
        text = "".join(lines)
        # no near-empty page: every page but the last holds a good part of a page of text
        assert len(text) >= (150 if i == len(pages) - 1 else 450), (i, text[:200])
        # no heading stranded at the bottom of a page
        headings = set(SECTIONS) | {"Why", "Next steps", "Conditions of release",
                                    "Model and data", "Provenance", "Structure and tamper checks"}
        assert lines[-1].strip() not in headings, (i, lines[-1])
        assert not lines[-1].strip().startswith(("Passed (", "Not applicable (")), lines[-1]
        # a table's group title (FAILED, NOT EVALUATED) is never the last line of a page
        assert lines[-1].strip() not in ("FAILED", "NOT EVALUATED"), (i, lines[-1])
    # every reason is on one page: its header and its measured line together
    for r in report["verdict"]["reasons"]:
        head = f"({r['rule_id']})"
        page = next(p for p in pages if head in p)
        after = page.split(head, 1)[1]
        assert "Measured:" in after and "Source:" in after.replace("\n", " ")


def test_pdf_never_breaks_an_identifier(reports):
    report = _real_report()
    text = "\n".join(_pdf_pages(render_pdf(report)))
    for key in report.get("labels") or {}:
        if key in text.replace("\n", ""):
            parts = re.split(r"(?<=\.)(?=[A-Za-z_])", key)
            for part in parts:  # a line break only ever after a dot
                assert part in text, (key, part)


def test_pdf_spells_out_non_latin1_characters(reports):
    report = copy.deepcopy(reports["do_not_release"])
    report["evidence"][0]["threshold"] = "ε ≤ 10"  # inapplicable rows show no threshold
    text = "\n".join(_pdf_pages(render_pdf(report)))
    assert "epsilon <= 10" in text
    assert "k >= 10" in text


def test_pdf_without_attacks_says_so():
    report = make_report("release")
    report["attacks"], report["attribute_risk"] = [], []
    pages = _pdf_pages(render_pdf(report))
    _by_section(pages)
    text = "\n".join(pages)
    assert "No membership attack was run." in text
    assert "No attribute inference attack was run." in text


def test_missing_fpdf_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "fpdf", None)
    with pytest.raises(InputError, match=r"pip install 'anonml\[report\]'"):
        render_pdf(make_report("release"))


# ---------------------------------------------------------------- write_report


def test_write_report_writes_all_three(tmp_path, reports):
    report = reports["release_with_conditions"]
    paths = write_report(report, tmp_path)
    assert paths == {f: tmp_path / f"report.{f}" for f in ("json", "html", "pdf")}
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["report.html", "report.json", "report.pdf"]
    assert json.loads(paths["json"].read_text("utf-8")) == report
    assert paths["json"].read_text("utf-8").startswith('{\n  "schema_version": "1.0"')
    assert paths["html"].read_text("utf-8") == render_html(report)
    assert paths["pdf"].read_bytes() == render_pdf(report)


def test_write_report_some_formats(tmp_path, reports):
    paths = write_report(reports["release"], tmp_path, formats=["html"])
    assert list(paths) == ["html"] and [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_report_nothing_written_when_a_renderer_fails(tmp_path, monkeypatch, reports):
    import anonml.report._pdf as pdf_module

    def broken(report):
        raise RuntimeError("renderer broke")

    monkeypatch.setattr(pdf_module, "render_pdf", broken)
    (tmp_path / "report.html").write_text("old")
    with pytest.raises(RuntimeError, match="renderer broke"):
        write_report(reports["release"], tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no new file, no temp file
    assert (tmp_path / "report.html").read_text() == "old"


def test_write_report_nothing_written_when_invalid(tmp_path):
    report = make_report("release")
    report["verdict"]["decision"] = "ship it"
    with pytest.raises(InputError, match=r"\$\.verdict\.decision"):
        write_report(report, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_write_report_bad_arguments(tmp_path, reports):
    with pytest.raises(InputError, match="format 'docx'; choose from json, html, pdf"):
        write_report(reports["release"], tmp_path, formats=("json", "docx"))
    with pytest.raises(InputError, match="no report format given"):
        write_report(reports["release"], tmp_path, formats=())
    with pytest.raises(InputError, match="does not exist; create it first"):
        write_report(reports["release"], tmp_path / "missing")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- labels and identifiers


def test_every_measure_has_a_label_and_the_report_carries_them():
    from anonml.safemodel import MEASURES
    from anonml.safemodel._rules import MEASURE_LABELS

    assert set(MEASURES) <= set(MEASURE_LABELS)
    assert all(label.strip() and label != key for key, label in MEASURE_LABELS.items())
    report = make_report("do_not_release")
    report["labels"] = dict(MEASURE_LABELS)
    report["evidence"][0]["measured"] = "membership.max_tpr_at_fpr_0.001 = 0.65"
    report["checks"]["structure"]["loss_ks_pvalue"] = 0.5
    validate(report)
    page = render_html(report)
    assert "Highest TPR at 0.1 % FPR = 0.65" in page
    assert MEASURE_LABELS["structure.loss_ks_pvalue"] in page and "Loss ks pvalue" not in page
    # the key is shown whole: a break is allowed only after the dot that starts a new name
    assert "<span>membership.</span><wbr><span>max_tpr_at_fpr_0.001</span>" in page
    pdf_text = "\n".join(_pdf_pages(render_pdf(report)))
    assert "Highest TPR at 0.1 % FPR = 0.65" in pdf_text.replace("\n", " ")


def test_not_measured_rows_say_why():
    report = make_report("do_not_release")
    report["attribute_risk"][-1]["note"] = "no test record had its value inferred"
    report["evidence"][4]["note"] = "Applies to dp sgd only; this model is random forest."
    validate(report)
    page = render_html(report)
    assert "Not measured: no test record had its value inferred" in page
    assert "Applies to dp sgd only" in page
    text = "\n".join(_pdf_pages(render_pdf(report))).replace("\n", " ")
    assert "no test record had its value inferred" in text and "Applies to dp sgd only" in text


def test_roc_axis_starts_at_the_smallest_rate_the_test_set_resolves():
    from anonml.report._common import roc_axis

    lo, ticks = roc_axis([{"fpr_min": 1 / 300}, {"fpr_min": 1 / 60}])
    assert lo == pytest.approx(1 / 300) and ticks[0] == pytest.approx(1 / 300)
    assert ticks[1:] == (0.01, 0.1, 1.0)
    assert roc_axis([])[0] == 1e-4  # older reports without fpr_min
    report = make_report("release")
    for a in report["attacks"]:
        a["n_nonmembers"], a["fpr_min"] = 300, 1 / 300
    validate(report)
    page = render_html(report)
    svg = page[page.index('id="roc-plot"') : page.index("</svg>", page.index('id="roc-plot"'))]
    assert ">0.0033<" in svg and ">0.0001<" not in svg
    assert "cannot be resolved" in page  # TPR at FPR 0.001 on 300 non-members


def test_pdf_passed_rules_keep_what_a_checker_needs():
    """Passed rules are one compact block each, still with the rule, its effect, the measured
    value, the threshold and its source."""
    report = _real_report()
    text = " ".join(" ".join(_pdf_pages(render_pdf(report))).split())
    passed = [r for r in report["evidence"] if r["outcome"] == "pass"]
    assert passed and f"Passed ({len(passed)} rules)" in text
    labels = report.get("labels") or {}
    from anonml.report._pdf_blocks import _plain

    for r in passed:
        assert f"{to_latin1(r['title'])} [{r['rule_id']}]" in text
        for part in (r["measured"], r["threshold"], r["source"]):
            assert " ".join(_plain(part, labels).split()) in text, (r["rule_id"], part)
