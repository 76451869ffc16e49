"""Speed of the release-report renderers on the example reports of the tests.

For each example report (one per decision: 3 attacks with 161 ROC points each, 7 attributes,
7 rules): ``validate``, ``render_html``, ``render_pdf`` and ``write_report`` (all three files)
into a temporary folder.

Usage::

    python benchmarks/bench_report.py             # a few seconds
    python benchmarks/bench_report.py --repeats 20

Writes benchmarks/results/report.json and prints a Markdown table (median of the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from anonml.report import render_html, render_pdf, validate, write_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from report_fixtures import all_reports


def median_time(fn, repeats):
    fn()  # warm-up: imports (jsonschema, fpdf2) and caches
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return float(np.median(runs)), runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    from importlib.metadata import version

    results = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "fpdf2": version("fpdf2"), "jsonschema": version("jsonschema")},
        "rows": [],
    }  # fmt: skip
    print("| report | step | median ms | output size |")
    print("|---|---|---:|---:|")
    with tempfile.TemporaryDirectory() as out:
        for decision, report in all_reports().items():
            steps = {
                "validate": (lambda r=report: validate(r), None),
                "render_html": (lambda r=report: render_html(r), len(render_html(report))),
                "render_pdf": (lambda r=report: render_pdf(r), len(render_pdf(report))),
                "write_report": (lambda r=report: write_report(r, out), None),
            }
            for step, (fn, size) in steps.items():
                seconds, runs = median_time(fn, args.repeats)
                results["rows"].append({"report": decision, "step": step, "seconds": seconds,
                                        "bytes": size, "runs": runs})  # fmt: skip
                print(f"| {decision} | {step} | {seconds * 1000:.1f} | {size or ''} |")
    target = Path(__file__).parent / "results" / "report.json"
    target.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
