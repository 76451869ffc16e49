"""anonml's exceptions and warnings (public home; also importable from :mod:`anonml`).

Every error anonml raises on purpose is an :class:`AnonmlError`; each message states what was
wrong, the value seen and how to fix it, on one line, so the command line prints it as is.

* :class:`InputError` (also a ``ValueError``): a parameter, table, column, value or file.
* :class:`OutputError` (an ``OSError``): a file or folder could not be written; nothing was
  left behind.
* :class:`PrivacyViolationError`: an output failed the independent privacy check and was not
  returned.
* :class:`UntrustedModelError` (a ``PermissionError``): loading a model file would run code
  from it without ``trust=True`` / ``--trust-model``.
* :class:`NotFittedError`: an estimator used before ``fit`` (also scikit-learn's
  ``NotFittedError``; built on first use, so importing this module does not import
  scikit-learn).
* :class:`AnonmlWarning`: the base of every warning anonml issues.
"""

from __future__ import annotations

from typing import Any

from anonml._errors import (
    AnonmlError,
    AnonmlWarning,
    InputError,
    OutputError,
    PrivacyViolationError,
    UntrustedModelError,
)

__all__ = [
    "AnonmlError",
    "AnonmlWarning",
    "InputError",
    "NotFittedError",
    "OutputError",
    "PrivacyViolationError",
    "UntrustedModelError",
]


def __getattr__(name: str) -> Any:
    if name == "NotFittedError":
        from anonml import _errors

        return _errors.NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
