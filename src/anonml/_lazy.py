"""The one lazy-attribute helper every anonml package uses (PEP 562).

A package lists the names it exports but does not import at once (heavy dependencies, or
modules only some users need) in a table, and gets its ``__getattr__`` and ``__dir__`` from
:func:`lazy_attributes`. ``import anonml`` then stays cheap, every exported name resolves on
first use and is cached in the package's namespace, and ``dir()`` lists exactly what
``__all__`` promises.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Iterable, Mapping

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, table: Mapping[str, Any],
                    exported: Iterable[str]) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    table : mapping
        Name -> ``"module"`` (the attribute of that name in the module), or
        ``("module", attribute)``, or ``("module", None)`` (the module itself).
    exported : iterable of str
        The package's ``__all__``; ``__dir__`` lists it with the names already loaded.

    Returns
    -------
    (getattr, dir)
        Assign them to ``__getattr__`` and ``__dir__`` in the package.
    """
    exported = list(exported)

    def __getattr__(name: str) -> Any:
        try:
            where = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module_name, attr = (where, name) if isinstance(where, str) else where
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        setattr(sys.modules[package], name, value)  # cached: the next lookup is a plain one
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exported))

    return __getattr__, __dir__
