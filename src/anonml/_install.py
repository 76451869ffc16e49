"""The ``pip install`` command that fits how this copy of anonml was installed.

``pip install 'anonml[parquet]'`` is right for a copy installed from a package index, but
wrong for one installed from a source tree (``pip install -e .``), where it would fetch another
anonml from the index. :func:`install_hint` reads the installation record
(``direct_url.json``, PEP 610) and names the command for the case at hand:

* from a package index or a wheel: ``pip install 'anonml[parquet]'``;
* from a source tree: ``pip install -e '/path/to/checkout[parquet]'`` (without ``-e`` for a
  non-editable install), or the plain packages;
* not installed (``PYTHONPATH=src``): the plain packages, ``pip install pyarrow``.

Every message of anonml that names an optional package uses it.
"""

from __future__ import annotations

import functools
import json
from urllib.parse import unquote, urlparse

__all__ = ["EXTRAS", "install_hint", "source_tree"]

#: anonml's extras and the packages each installs (as in pyproject.toml)
EXTRAS: dict[str, tuple[str, ...]] = {
    "parquet": ("pyarrow",),
    "plot": ("matplotlib",),
    "dp": ("diffprivlib",),
    "torch": ("torch", "opacus"),
    "xgboost": ("xgboost",),
    "report": ("fpdf2", "jsonschema", "skops"),
}


@functools.lru_cache(maxsize=1)
def source_tree() -> tuple[str, bool] | None | bool:
    """``(folder, editable)`` when anonml was installed from a source tree, ``None`` when it
    was installed from a package index or wheel, ``False`` when it is not installed at all."""
    from importlib import metadata

    try:
        dist = metadata.distribution("anonml")
    except metadata.PackageNotFoundError:
        return False
    try:
        text = dist.read_text("direct_url.json")
        info = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or "dir_info" not in info:
        return None
    url = urlparse(str(info.get("url", "")))
    if url.scheme != "file":
        return None
    editable = bool((info.get("dir_info") or {}).get("editable"))
    return unquote(url.path), editable


def install_hint(extra: str | None = None, packages: tuple[str, ...] | list[str] = ()) -> str:
    """The command that installs an optional part of anonml, e.g. ``pip install pyarrow``.

    Parameters
    ----------
    extra : str, optional
        anonml's extra (``"parquet"``, ``"report"``, ``"dp"``, ``"torch"``, ``"xgboost"``,
        ``"plot"``).
    packages : sequence of str, optional
        The plain packages needed (default: every package of ``extra``).
    """
    pkgs = " ".join(packages or EXTRAS.get(extra or "", ()))
    where = source_tree()
    if extra is None or where is False:
        return f"pip install {pkgs}"
    if where is None:
        return f"pip install 'anonml[{extra}]'"
    folder, editable = where
    flag = "-e " if editable else ""
    return f"pip install {flag}'{folder}[{extra}]' (or pip install {pkgs})"
