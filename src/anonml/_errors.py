"""Every exception and warning class of anonml.

Each message states what was wrong, the value seen, and how to fix it, on one line, so that the
command-line interface can print it as is.
"""

from __future__ import annotations

__all__ = [
    "AnonmlError",
    "InputError",
    "NotFittedError",
    "PrivacyViolationError",
    "UntrustedModelError",
    "AnonmlWarning",
]

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError


class AnonmlError(Exception):
    """Base class of every error raised by anonml on purpose."""


class InputError(AnonmlError, ValueError):
    """A parameter, table, column or value is not acceptable; the message names it and the fix."""


class NotFittedError(AnonmlError, _SklearnNotFittedError):
    """An estimator was used before ``fit``."""


class PrivacyViolationError(AnonmlError, RuntimeError):
    """An output failed the independent privacy check and was not returned."""


class UntrustedModelError(AnonmlError, PermissionError):
    """Loading this model file would run code from it (unpickling) without an explicit opt-in."""


class AnonmlWarning(UserWarning):
    """Base class of every warning issued by anonml."""
