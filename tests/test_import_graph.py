"""The package's layout, read from its own imports (docs/architecture.md): no two modules
import each other (directly or round a circle), and every import points down the list of rooms
in docs/architecture.md. Function-level imports count: a lazy import is still a dependency."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

# the checkout's source, read as text (the tests may run against an installed copy)
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "anonml"
DOC = ROOT / "docs" / "architecture.md"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        out: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # ``from anonml.x import y`` imports the module anonml.x.y when there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            out.update(t for t in targets if t in modules and t != name)
        graph[name] = out
    return graph


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _documented_order() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    rooms = [m.group(1) for m in re.finditer(r"^([A-Za-z_][\w.]*?)(?:/|\.py)?\s{2,}", block, re.MULTILINE)]
    return [r.removesuffix(".py") for r in rooms]


def test_no_import_circle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_imports_point_down_the_documented_rooms():
    order = _documented_order()
    assert "cli" in order and "anonymize" in order and "_utils" in order, order
    rank = {room: i for i, room in enumerate(order)}
    graph = _graph()
    wrong = []
    for src, targets in graph.items():
        a = _room(src)
        if a in ("", "__main__"):  # the package root re-exports; __main__ calls the CLI
            continue
        for dst in targets:
            b = _room(dst)
            if b in ("", a):
                continue
            assert a in rank and b in rank, f"{a!r} or {b!r} is not a room of docs/architecture.md"
            if rank[b] < rank[a]:
                wrong.append(f"{src} -> {dst}")
    assert not wrong, "imports that run up the documented rooms: " + "; ".join(sorted(wrong))


def test_every_import_of_anonml_resolves():
    """``from anonml.x import y`` anywhere in the package, inside functions too, names a module
    and a name that exist: a lazy import left behind by a move fails here, not at a user's."""
    import importlib

    missing = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").startswith("anonml")):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if alias.name == "*" or hasattr(module, alias.name):
                    continue
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{path.relative_to(SRC.parent)}:{node.lineno} "
                                   f"{node.module}.{alias.name}")
    assert not missing, "imports that do not resolve: " + "; ".join(missing)
