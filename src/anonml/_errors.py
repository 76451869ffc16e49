"""Every exception and warning class of anonml.

Each message states what was wrong, the value seen, and how to fix it, on one line, so that the
command-line interface can print it as is.
"""

from __future__ import annotations

__all__ = [
    "AnonmlError",
    "InputError",
    "NotFittedError",
    "OutputError",
    "PrivacyViolationError",
    "UntrustedModelError",
    "AnonmlWarning",
]

from typing import Any

class AnonmlError(Exception):
    """Base class of every error raised by anonml on purpose."""


class InputError(AnonmlError, ValueError):
    """A parameter, table, column or value is not acceptable; the message names it and the fix."""


class OutputError(AnonmlError, OSError):
    """A file or folder could not be written (disk full, permission denied, ...); nothing was
    left behind. The message names the path and the fix."""


class PrivacyViolationError(AnonmlError, RuntimeError):
    """An output failed the independent privacy check and was not returned."""


class UntrustedModelError(AnonmlError, PermissionError):
    """Loading this model file would run code from it (unpickling) without an explicit opt-in."""


class AnonmlWarning(UserWarning):
    """Base class of every warning issued by anonml."""


def _not_fitted_error() -> type:
    # built on first use: it subclasses scikit-learn's NotFittedError, and importing
    # scikit-learn takes seconds, which `anonml --version` and `anonml --help` must not pay
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    class NotFittedError(AnonmlError, _SklearnNotFittedError):
        """An estimator was used before ``fit``."""

    NotFittedError.__module__ = __name__
    NotFittedError.__qualname__ = "NotFittedError"
    return NotFittedError


def __getattr__(name: str) -> Any:
    if name == "NotFittedError":
        cls = globals().get("_NotFittedError") or _not_fitted_error()
        globals()["_NotFittedError"] = cls
        globals()["NotFittedError"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def names_list(names: Any, limit: int = 12) -> str:
    """The first ``limit`` of ``names``, comma-separated, and how many more there are
    (``"a, b, c ... and 7 more"``), for a message that lists the columns of a table."""
    names = list(names)
    shown = ", ".join(map(str, names[:limit]))
    return shown + (f" ... and {len(names) - limit} more" if len(names) > limit else "")


def one_line(text: object, limit: int = 240) -> str:
    """``text`` (an exception or a message) squeezed onto one line of at most ``limit``
    characters, for a message that quotes another library's multi-line error; control and
    format characters are written as ``\\uXXXX``."""
    import unicodedata

    if isinstance(text, BaseException):
        text = str(text).strip() or type(text).__name__
    flat = " ".join(str(text).split())
    # control and format characters (terminal escapes, bidi overrides, zero-width marks) are
    # shown, never sent to the terminal: a hostile file's names cannot rewrite what is printed
    if not flat.isprintable():
        flat = "".join(c if unicodedata.category(c)[0] != "C" else f"\\u{ord(c):04x}"
                       for c in flat)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
