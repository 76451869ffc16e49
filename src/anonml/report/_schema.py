"""The v1 JSON schema of the release report, and validation against it.

The schema file lies in ``anonml/report/schema/report-v1.schema.json`` and is read with
:mod:`importlib.resources`, so it works from a wheel, a zip or an editable install.
"""

from __future__ import annotations

import functools
import json
import math
import re
from importlib import resources
from typing import Any

from anonml._errors import InputError

__all__ = ["SCHEMA_VERSION", "load_schema", "validate"]

SCHEMA_VERSION = "1.0"
_SCHEMA_FILE = "report-v1.schema.json"
_INSTALL_HINT = "pip install 'anonml[report]'"
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@functools.lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files("anonml.report").joinpath("schema", _SCHEMA_FILE).read_text("utf-8")


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(_schema_text()))


def load_schema() -> dict[str, Any]:
    """Return the release-report JSON schema (draft 2020-12), version 1, as a fresh dict.

    Returns
    -------
    dict
        The parsed schema; changing it does not change the one used by :func:`validate`.
    """
    return json.loads(_schema_text())


def _path(parts: Any) -> str:
    """JSONPath-like text for a sequence of keys and indices, e.g. ``$.attacks[0].roc.fpr``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def _short(text: str, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(parts: Any, problem: str) -> InputError:
    return InputError(
        f"release report is not valid at {_path(parts)}: {_short(problem)}; "
        "fix that field (reports are built by anonml.safemodel.request_release)"
    )


def _check_json_safe(value: Any, parts: list) -> None:
    """Raise if ``value`` holds anything but plain, finite JSON (NaN, numpy types, tuples)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(parts, f"{value!r} is not allowed; write a missing number as null (None)")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(parts, f"key {key!r} is not a string; JSON object keys must be strings")
            _check_json_safe(item, [*parts, key])
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_safe(item, [*parts, i])
        return
    raise _fail(
        parts,
        f"a {type(value).__name__} is not a JSON value; "
        "use str, int, float, bool, None, list or dict",
    )


def _check_consistency(report: dict) -> None:
    """Rules the schema language cannot state: ROC arrays of equal length, FPR ascending."""
    for i, attack in enumerate(report["attacks"]):
        fpr, tpr = attack["roc"]["fpr"], attack["roc"]["tpr"]
        if len(fpr) != len(tpr):
            raise _fail(
                ["attacks", i, "roc"],
                f"fpr has {len(fpr)} points but tpr has {len(tpr)}; give one tpr per fpr",
            )
        for j in range(1, len(fpr)):
            if fpr[j] < fpr[j - 1]:
                raise _fail(
                    ["attacks", i, "roc", "fpr", j],
                    f"{fpr[j]!r} is below the previous value {fpr[j - 1]!r}; "
                    "sort the points by fpr",
                )


def validate(report: dict) -> None:
    """Check a release report against the v1 schema; raise a one-line error naming the field.

    Parameters
    ----------
    report : dict
        The report as built by ``anonml.safemodel.request_release``: plain JSON values only
        (no NaN or infinity: a missing number is ``None``).

    Raises
    ------
    anonml.InputError
        If ``jsonschema`` is not installed, or the report breaks the schema. The message names
        the JSON path of the first offending field (e.g. ``$.verdict.decision``) and the problem.
    """
    try:
        import jsonschema
    except ImportError:
        raise InputError(
            f"validating a release report needs jsonschema; run: {_INSTALL_HINT}"
        ) from None
    if not isinstance(report, dict):
        raise _fail([], f"the report must be a dict, got a {type(report).__name__}")
    _check_json_safe(report, [])
    validator = _validator()
    error = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if error is not None:
        parts = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [k for k in error.validator_value if k not in error.instance]
            if missing:
                raise _fail([*parts, missing[0]], "this required field is missing")
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            extra = sorted(k for k in error.instance if k not in allowed)
            if extra:
                raise _fail(
                    [*parts, extra[0]],
                    f"this field is not part of schema {SCHEMA_VERSION}; allowed here: "
                    + ", ".join(sorted(allowed)),
                )
        raise _fail(parts, error.message)
    _check_consistency(report)
