"""The library's messages in the command line's words: one place that maps parameter names to
flags.

The library's errors name Python arguments (``handle_unknown='ignore'``,
``categorical_features``, ``X_train``), as they must for a Python user. On the command line the
same message must name what the user typed: the flag (``--handle-unknown ignore``,
``--categorical``) and the file (``--train 'train.csv'``). :func:`cli_words` rewrites a
one-line message; :func:`anonml.cli.main` applies it to every error it prints.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PARAM_FLAGS", "cli_words"]

#: Python parameter -> the flag that sets it on the command line (the same for every command
#: that has it). A ``name=value`` becomes ``--flag value``; a bare name becomes the flag.
PARAM_FLAGS = {
    "handle_unknown": "--handle-unknown",
    "categorical_features": "--categorical",
    "quasi_identifiers": "--qi",
    "sensitive": "--sensitive",
    "l_kind": "--l-kind",
    "t_distance": "--t-distance",
    "suppression": "--suppression",
    "recoding": "--recoding",
    "representative": "--representative",
    "random_state": "--seed",
    "n_jobs": "--n-jobs",
    "n_reference": "--n-reference",
    "dp_epsilon": "--dp-epsilon",
    "trust": "--trust-model",
    "k": "--k",
    "l": "--l",
    "c": "--c",
    "t": "--t",
}
#: names a bare mention of which is the flag (the one-letter ones only as ``name=value``: a
#: bare "k" or "t" is a word of the message)
_BARE = [p for p in PARAM_FLAGS if len(p) > 1 and p not in ("sensitive", "representative",
                                                            "recoding", "suppression", "trust")]

# a value as the library writes it: 'text', "text", a number or a word
_VALUE = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[-+\w.<>]+)"""
#: the commands whose --k, --l, --t, --c set one anonymizer's k, l, t, c; elsewhere a
#: ``k=10`` in a message is not a flag's (audit: the file's own k; frontier: a point of the
#: sweep, "mondrian k=10")
_PRIVACY_COMMANDS = ("anonymize",)
_SHORT = ("k", "l", "c", "t")


def _assign(names: list) -> re.Pattern:
    return re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, names)) + r")=" + _VALUE)


_ASSIGN = _assign(list(PARAM_FLAGS))
_ASSIGN_LONG = _assign([p for p in PARAM_FLAGS if p not in _SHORT])
_NAME = re.compile(r"(?<![\w.'-])(" + "|".join(map(re.escape, _BARE)) + r")(?![\w=.'/-])")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner if inner and re.fullmatch(r"[\w.,<>+-]+", inner) else value
    return value


def cli_words(message: str, args: Any = None) -> str:
    """``message`` with Python parameter names replaced by the command line's flags, and the
    tables (``X_train``, ``X_test``, ``X``) by the files the user gave.

    Parameters
    ----------
    message : str
        One line from the library.
    args : argparse.Namespace, optional
        The parsed command line: ``train``, ``test`` or ``input`` name the files.

    Returns
    -------
    str
    """
    assign = _ASSIGN if getattr(args, "command", None) in _PRIVACY_COMMANDS else _ASSIGN_LONG
    out = assign.sub(lambda m: f"{PARAM_FLAGS[m.group(1)]} {_unquote(m.group(2))}", message)
    out = _NAME.sub(lambda m: PARAM_FLAGS[m.group(1)], out)
    tables: dict = {}
    if hasattr(args, "train"):  # audit, frontier: --train and --test tables, --target labels
        target = getattr(args, "target", None)
        label = f"the --target column {target!r}" if isinstance(target, str) else "the labels"
        tables = {"X_train": _file("--train", args.train), "X_test": _file("--test", args.test),
                  "y_train": f"{label} of --train", "y_test": f"{label} of --test"}
    elif isinstance(getattr(args, "input", None), str):  # anonymize, transform
        tables = {"X": f"the input {args.input!r}"}
    for name, words in tables.items():
        out = re.sub(r"(?<![\w.'/-])" + re.escape(name) + r"(?![\w.'/-])", words, out)
    return out


def _file(flag: str, path: Any) -> str:
    return f"{flag} {path!r}" if isinstance(path, str) else f"the {flag} table"
