"""The public API resolves (issue 20, item 4): every name a package lists in ``__all__`` is an
attribute and is in ``dir()``, the exceptions have one public home, and every dotted public
path written in docstrings, the README and docs/ names something that exists."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

import anonml

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ["anonml", "anonml.anonymize", "anonml.attacks", "anonml.datasets", "anonml.dp",
            "anonml.exceptions", "anonml.hierarchies", "anonml.modelfile", "anonml.privacy",
            "anonml.report", "anonml.safemodel"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves_and_is_listed(name):
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names {missing}, which do not resolve"
    assert set(module.__all__) <= set(dir(module))


def test_exceptions_have_one_public_home():
    from anonml import exceptions

    for n in exceptions.__all__:
        assert getattr(anonml, n) is getattr(exceptions, n)
    assert issubclass(anonml.InputError, anonml.AnonmlError)
    assert issubclass(anonml.InputError, ValueError)
    from sklearn.exceptions import NotFittedError

    assert issubclass(anonml.NotFittedError, NotFittedError)
    with pytest.raises(anonml.InputError):
        anonml.AccuracyGuidedAnonymizer(k=1).fit([[1.0], [2.0]], [0, 1])


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        anonml.nope  # noqa: B018


def _resolve(path: str) -> bool:
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return False
    return True


def _written_paths():
    files = list((ROOT / "src" / "anonml").rglob("*.py")) + list((ROOT / "docs").glob("*.md"))
    files.append(ROOT / "README.md")
    seen = {}
    for f in files:
        for m in re.finditer(r"(?<![\w.])(anonml(?:\.[A-Za-z_]\w*)+)", f.read_text()):
            path = m.group(1)
            if any(p.startswith("_") for p in path.split(".")) or path.endswith(
                    (".py", ".md", ".toml", ".json", ".skops", ".csv")) or \
                    f.read_text()[m.end():m.end() + 1] == "-":  # "anonml.release-report"
                continue
            seen.setdefault(path, f.relative_to(ROOT).as_posix())
    return seen


def test_every_public_path_written_down_resolves():
    bad = {p: where for p, where in _written_paths().items() if not _resolve(p)}
    assert not bad, f"public paths that do not resolve: {bad}"


def test_anonymize_then_fit_docstring_example():
    import doctest

    from anonml.anonymize import _then_fit

    assert doctest.testmod(_then_fit).failed == 0
