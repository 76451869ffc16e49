"""anonml.modelfile never imports anonml.safemodel (docs/architecture.md): the release policy
sits on the file readers, not the other way round, and the sandbox worker, started by module
path, loads no policy code."""

from __future__ import annotations

import ast
import pathlib

import anonml.modelfile

ROOT = pathlib.Path(anonml.modelfile.__file__).parent


def _imports(path: pathlib.Path) -> list:
    """Every module an import statement of ``path`` names, nested ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_no_module_of_modelfile_imports_safemodel():
    up = {f.name: [m for m in _imports(f) if m.startswith("anonml.safemodel")]
          for f in sorted(ROOT.glob("*.py"))}
    assert not {k: v for k, v in up.items() if v}, up


def test_safemodel_is_named_only_in_the_safe_wrapper_table():
    """The wrappers' modules are named as data in one place (_family's table), never imported
    (the public ``anonml.safemodel.save_model`` is named in refusals' fixes)."""
    named = sorted(f.name for f in ROOT.glob("*.py")
                   if any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                          and n.value.startswith("anonml.safemodel._")
                          for n in ast.walk(ast.parse(f.read_text()))))
    assert named == ["_family.py"], named


def test_the_worker_is_started_by_its_path_in_modelfile():
    from anonml.modelfile._sandbox_process import _CHILD

    assert "from anonml.modelfile._sandbox_worker import _worker_main" in _CHILD
    assert "from anonml.modelfile._sandbox_process import _apply_limits" in _CHILD
