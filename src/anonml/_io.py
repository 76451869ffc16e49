"""Reading and writing tables and files: CSV or Parquet, always atomically (temp file + rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd

from anonml._errors import InputError

__all__ = ["atomic_write", "read_table", "write_table", "table_format"]

_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path: str | os.PathLike) -> str:
    """"csv" or "parquet", from the file name's ending (``.csv.gz`` counts as CSV)."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes[-1:] in ([".gz"], [".bz2"], [".zip"], [".xz"]) and len(suffixes) >= 2:
        suffixes = suffixes[:-1]
    fmt = _FORMATS.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        raise InputError(
            f"cannot tell the format of {str(path)!r}; name it .csv, .csv.gz or .parquet"
        )
    return fmt


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a CSV or Parquet table; a clear error if it is missing or unreadable."""
    p = Path(path)
    fmt = table_format(p)
    if not p.is_file():
        raise InputError(f"input file {str(p)!r} does not exist; check the path")
    try:
        if fmt == "parquet":
            return pd.read_parquet(p)
        return pd.read_csv(p)
    except ImportError:
        raise InputError(
            "reading Parquet needs pyarrow; run: pip install 'anonml[parquet]'"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {str(p)!r} as {fmt}: {first}") from None


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``.

    On any error the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise InputError(
            f"output folder {str(target.parent)!r} does not exist; create it first"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        # mkstemp makes the file owner-only (0600); give it the mode a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` as CSV or Parquet (by the name's ending), atomically, without its index."""
    fmt = table_format(path)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(
                "writing Parquet needs pyarrow; run: pip install 'anonml[parquet]'"
            ) from None
        atomic_write(path, lambda p: frame.to_parquet(p, index=False))
    else:
        codec = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz"}.get(
            Path(path).suffix.lower()
        )
        atomic_write(path, lambda p: frame.to_csv(p, index=False, compression=codec))
