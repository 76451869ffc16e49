"""A folder of ARX hierarchy files, one per column."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from anonml._errors import InputError
from anonml.hierarchies._hierarchy import Hierarchy

__all__ = ["read_arx_folder"]


def _column_of(stem: str, columns: list[str]) -> str | None:
    """The column a file stem names: the stem itself, or ARX's ``<dataset>_<column>``."""
    if stem in columns:
        return stem
    hits = [c for c in columns if stem.endswith("_" + c)]
    return max(hits, key=len) if hits else None


def read_arx_folder(
    folder: str | os.PathLike,
    columns: Iterable[Any],
    *,
    numeric: Iterable[Any] = (),
    sep: str = ";",
) -> dict[str, Hierarchy]:
    """Read the ARX hierarchies of a folder: ``<column>.csv`` or ``<dataset>_<column>.csv``.

    Parameters
    ----------
    folder : path
        A folder of ARX CSV files (``value;level1;...;*``, no header), e.g. the hierarchies
        ARX exports (``adult_age.csv``, ``adult_sex.csv``, ...).
    columns : iterable of str
        The table's columns; a file is matched to the column its name ends with. Files that
        match no column are not read (a folder may hold hierarchies of other data sets).
    numeric : iterable of str
        The numeric columns: their files' leaves are read as numbers.
    sep : str, default ";"
        Field separator of the files.

    Returns
    -------
    dict
        ``{column: Hierarchy}`` for every column with a file.

    Raises
    ------
    InputError
        The folder does not exist or is a file; two files name the same column; a file is not
        a valid hierarchy (one line naming the file and the row).
    """
    p = Path(folder)
    if not p.exists():
        raise InputError(f"hierarchies folder {str(p)!r} does not exist; check the path")
    if not p.is_dir():
        raise InputError(f"hierarchies {str(p)!r} is a file; fix: give the folder holding one "
                         "ARX .csv file per column")
    cols = [str(c) for c in columns]
    num = {str(c) for c in numeric}
    found: dict[str, Path] = {}
    for f in sorted(p.iterdir()):
        if not f.is_file() or f.suffix.lower() != ".csv":
            continue
        col = _column_of(f.name[: -len(".csv")], cols)
        if col is None:
            continue
        if col in found:
            raise InputError(f"hierarchies folder {str(p)!r} holds two files for column "
                             f"{col!r} ({found[col].name}, {f.name}); fix: keep one")
        found[col] = f
    return {col: Hierarchy.read_arx(f, sep=sep, name=col, numeric=col in num)
            for col, f in found.items()}
