"""Render a release report's HTML page to a full-page PNG with headless chromium (for the docs).

Usage::

    python benchmarks/render_report_png.py REPORT.json OUT.png [--width 1280]

REPORT.json is a release report (schema v1, e.g. report.json written by write_report). The page
is rendered by anonml.report.render_html, opened from a temporary file with the network off, and
captured whole (beyond the window) at the given CSS width, one device pixel per CSS pixel.
Needs Debian's chromium and chromium-driver (/usr/bin) and selenium; downloads nothing.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

from anonml.report import render_html, validate


def render_png(report: dict, out: Path, width: int = 1280) -> tuple[int, int]:
    """Write the full-page screenshot of ``render_html(report)`` to ``out``; return its size."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(render_html(report), encoding="utf-8")
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--window-size={width},900",
                    f"--user-data-dir={Path(tmp) / 'profile'}"):  # fmt: skip
            options.add_argument(arg)
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        driver = webdriver.Chrome(service=service, options=options)
        try:
            driver.get(page.as_uri())
            height = driver.execute_script("return document.documentElement.scrollHeight")
            shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            })  # fmt: skip
        finally:
            driver.quit()
    out.write_bytes(base64.b64decode(shot["data"]))
    return width, height


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args()
    report = json.loads(args.report.read_text(encoding="utf-8"))
    validate(report)
    width, height = render_png(report, args.out, args.width)
    print(f"wrote {args.out} ({width} x {height} px)")


if __name__ == "__main__":
    main()
