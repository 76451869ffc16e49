"""The README's Python example runs as written (it is the first thing a user copies)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run(monkeypatch, tmp_path):
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
    # the classic-anonymization example continues in the same session
    assert len(blocks) >= 2, "README lost its classic-anonymization example"
    exec(compile(blocks[1], "README.md", "exec"), namespace)  # noqa: S102
    X_readable, qi = namespace["X_readable"], namespace["qi"]
    assert X_readable["age"].str.contains("-").any()  # ranges such as "31-34"
    from anonml.privacy import k_anonymity

    assert k_anonymity(X_readable, qi) >= 20

