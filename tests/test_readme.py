"""The README's Python example runs as written (it is the first thing a user copies)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(monkeypatch, tmp_path):
    if not README.is_file():  # pragma: no cover - tests run from a checkout
        pytest.skip("README.md not found beside the tests")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)  # noqa: S102 - our own README
    result = namespace["result"]
    assert result.summary["min_class_size"] >= 100
    assert result.summary["accuracy_after_mapped"] > 0.8
