"""One reading of a Parquet dataset for the Dask engine: which files, and their schemas.

Used by both :func:`anonml.dask.anonymize_dataset` and ``anonml anonymize --engine dask``, so
the files the command checks are the files the engine reads (and counts). Files and folders
whose name starts with ``.`` or ``_`` are skipped, as Arrow's dataset discovery and Dask's
``read_parquet`` skip them (``_metadata``, ``_SUCCESS``, ``.old/`` copies, Spark's
``_temporary``). Only metadata (each file's footer) is read here, never rows.

Sources: a local folder (``*.parquet`` files, searched recursively), a glob, one file, a
``file://`` URL of any of them, or another fsspec URL (``s3://bucket/prefix/``,
``gs://...``: the filesystem's package, e.g. s3fs, must be installed; credentials come from
the environment as for fsspec). Every problem is one :class:`~anonml._errors.InputError` line
naming the file and the fix.
"""

from __future__ import annotations

import glob as _glob
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from anonml._errors import InputError

__all__ = ["list_files", "read_schema", "check_schema", "display_name"]

_MAGIC = b"PAR1"


def _hidden(parts: Any) -> bool:
    return any(str(p).startswith((".", "_")) for p in parts)


def _local_path(text: str) -> str | None:
    """The local path of ``text`` (a path or a ``file://`` URL), None for another URL."""
    if text.startswith("file://"):
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise InputError(f"{text!r} names a file on host {parsed.netloc!r}; fix: give "
                             "file:///absolute/path (or a path) on a storage every worker reads")
        return unquote(parsed.path)
    if "://" in text:
        return None
    return text


def _glob_root(pattern: str) -> str:
    """The folder part of a glob before its first wildcard."""
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if _glob.has_magic(part):
            return str(Path(*parts[:i])) if i else "."
    return str(Path(pattern).parent)


def _inside(files: list, root: Path, shown: str) -> None:
    """Refuse a member that a link takes outside the dataset's folder (another project's file
    linked into the folder would be read and released with it)."""
    top = os.path.realpath(root)
    for f in files:
        real = os.path.realpath(f)
        if os.path.commonpath([top, real]) != top:
            raise InputError(f"{f!r} in {shown!r} is a link to {real!r}, outside the dataset's "
                             "folder; fix: copy the file into the folder, or remove the link")


def _list_local(text: str, shown: str) -> list[str]:
    p = Path(text)
    if p.is_dir():
        # every entry but folders: a FIFO or device named *.parquet is refused, not skipped
        files = sorted(str(f) for f in p.rglob("*.parquet")
                       if not f.is_dir() and not _hidden(f.relative_to(p).parts))
        _inside(files, p, shown)
        if not files:
            raise InputError(f"folder {shown!r} holds no .parquet file (names starting with "
                             "'.' or '_' are skipped); fix: give the folder of a Parquet "
                             "dataset (or a glob such as 'data/*.parquet')")
        return files
    if _glob.has_magic(text):
        root = Path(_glob_root(text))
        files = []
        for f in sorted(_glob.glob(text, recursive=True)):
            fp = Path(f)
            if fp.is_dir():
                continue
            try:
                rel = fp.relative_to(root).parts
            except ValueError:
                rel = (fp.name,)
            if not _hidden(rel):
                files.append(f)
        _inside(files, root, shown)
        if not files:
            raise InputError(f"no file matches {shown!r} (names starting with '.' or '_' are "
                             "skipped); fix: check the pattern, e.g. 'data/*.parquet'")
        return files
    if p.exists() or p.is_symlink():
        return [text]  # a regular file or not: read_schema opens it and says which
    raise InputError(f"Parquet dataset {shown!r} does not exist; fix: give a folder of Parquet "
                     "files or a glob such as 'data/*.parquet'")


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec comes with dask
        raise InputError(f"{url!r} is a URL, which needs fsspec; fix: pip install fsspec") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise InputError(f"reading {url!r} needs the package for its filesystem ({exc}); fix: "
                         "install it (e.g. pip install s3fs for s3://, gcsfs for gs://)") from None
    except ValueError as exc:
        raise InputError(f"{url!r} is not a URL fsspec knows ({exc}); fix: give a path, a "
                         "file:// URL or e.g. s3://bucket/prefix/") from None
    except Exception as exc:  # noqa: BLE001 - e.g. hdfs:// without a JVM: OSError, many lines
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot open the filesystem of {url!r} ({type(exc).__name__}: "
                         f"{why[:200]}); fix: install and configure its fsspec package, or "
                         "copy the dataset to a path or an s3:// URL") from None


def _list_remote(url: str) -> list[str]:
    fs, path = _filesystem(url)
    protocol = url.split("://", 1)[0]

    def full(p: str) -> str:
        return p if "://" in p else f"{protocol}://{p.lstrip('/') if protocol != 'file' else p}"

    try:
        if _glob.has_magic(path):
            root = _glob_root(path)
            found = [f for f in sorted(fs.glob(path)) if not fs.isdir(f)]
        elif fs.isdir(path):
            root = path
            found = sorted(f for f in fs.find(path) if f.endswith(".parquet"))
        elif fs.exists(path):
            return [full(path)]
        else:
            found, root = None, path
    except Exception as exc:  # noqa: BLE001 - network, credentials, permissions
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        unreachable = isinstance(exc, (ConnectionError, TimeoutError)) or \
            "connect" in type(exc).__name__.lower()  # botocore's EndpointConnectionError, ...
        fix = ("check that the storage server is reachable from here (for s3://, the endpoint "
               "in AWS_ENDPOINT_URL or the profile), then the URL" if unreachable
               else "check the URL and the credentials")
        raise InputError(f"cannot list {url!r} ({type(exc).__name__}: {why[:200]}); fix: "
                         f"{fix}") from None
    if found is None:
        raise InputError(f"Parquet dataset {url!r} does not exist; fix: check the URL")
    root = root.rstrip("/")
    files = [full(f) for f in found
             if not _hidden(f[len(root):].strip("/").split("/") if f.startswith(root) else
                            [f.rsplit("/", 1)[-1]])]
    if not files:
        raise InputError(f"{url!r} holds no .parquet file (names starting with '.' or '_' are "
                         "skipped); fix: check the URL")
    return files


def list_files(source: Any) -> list[str]:
    """The Parquet files of ``source`` (a folder, a glob, a file or an fsspec URL), sorted.

    Parameters
    ----------
    source : str or os.PathLike
        A folder (searched recursively for ``*.parquet``), a glob such as ``data/*.parquet``,
        one file, a ``file://`` URL of them, or an fsspec URL (``s3://bucket/prefix/``).

    Returns
    -------
    list of str
        Local paths, or full URLs for a non-local filesystem. Names (files or folders below
        the dataset's root) starting with ``.`` or ``_`` are skipped, as Arrow and Dask do.
    """
    text = os.fspath(source)
    local = _local_path(text)
    if local is None:
        return _list_remote(text)
    return _list_local(local, text)


def display_name(path: str, source: Any) -> str:
    """``path`` as the user knows it: relative to a local dataset folder, else as given."""
    local = _local_path(os.fspath(source))
    if local is not None and "://" not in path:
        try:
            rel = Path(path).relative_to(local)
            if str(rel) != ".":
                return str(rel)
        except ValueError:
            pass
    return path


def _open(path: str, max_bytes: int | None) -> Any:
    if "://" in path:
        fs, p = _filesystem(path)
        return fs.open(p, "rb")
    from anonml import _io

    return _io.open_regular(path, "Parquet file", max_bytes=max_bytes)


def _not_parquet(fh: Any) -> bool:
    """True when the file lacks Parquet's magic bytes at its start or its end."""
    try:
        fh.seek(0)
        head = fh.read(4)
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size < 12:
            return True
        fh.seek(size - 4)
        return head != _MAGIC or fh.read(4) != _MAGIC
    except (OSError, ValueError):
        return False


def read_schema(path: str, shown: str | None = None) -> Any:
    """The Arrow schema of one Parquet file (its footer only); one-line errors."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover
        from anonml._install import install_hint

        raise InputError(f"reading Parquet needs pyarrow; {install_hint('parquet')}") from None
    from anonml import _io

    shown = shown or path
    with _open(path, _io.MAX_TABLE_BYTES) as fh:
        try:
            return pq.read_schema(fh)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            if _not_parquet(fh):
                looks = " (it looks like CSV)" if str(shown).lower().endswith(
                    (".csv", ".csv.gz", ".txt", ".tsv")) else ""
                raise InputError(
                    f"{shown!r} is not a readable Parquet file{looks}: the Dask engine reads "
                    f"Parquet only (file {shown}); fix: convert it, e.g. "
                    "pandas.read_csv(f).to_parquet('data/part-0.parquet'), or use --engine "
                    "memory for a CSV table") from None
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{shown!r} is not a readable Parquet file ({first[:200]}); fix: "
                             "remove it from the dataset or rewrite it") from None


def _kind(arrow_type: Any) -> str:
    """The logical type of an Arrow column: string and large_string, or a dictionary of
    strings, are the same column for pandas."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)):
        return "string"
    if pa.types.is_null(t):
        return "null"
    return str(t)


def _index_columns(schema: Any) -> set:
    """The columns pandas stored for a DataFrame's index (``__index_level_0__`` ...)."""
    try:
        meta = schema.pandas_metadata or {}
    except Exception:  # noqa: BLE001 - malformed pandas metadata: no index columns
        return set()
    return {c for c in meta.get("index_columns", []) if isinstance(c, str)}


def check_schema(files: list[str], columns: list | None, source: Any) -> tuple[list, dict]:
    """Read every file's schema; check that each of ``columns`` (first) and every column of
    the first file is in every file, with one type across files.

    Returns the first file's column names (without pandas' stored index columns, which read
    back as the index) and ``{column: type}``. One-line errors name the column, the file (as
    :func:`display_name`) and the fix. A column that is all missing in a file (Arrow type
    null) takes any type.
    """
    seen: dict = {}
    names0: list = []
    needed = list(columns or [])
    for i, f in enumerate(files):
        shown = display_name(f, source)
        schema = read_schema(f, shown)
        if i == 0:  # pandas' stored index columns are read back as the index, not columns
            names0 = [c for c in schema.names if c not in _index_columns(schema)]
            needed = list(dict.fromkeys(needed + names0))
        names = set(schema.names)
        for c in needed:
            if c not in names:
                raise InputError(f"column {c!r} is missing from {shown!r} (a partition of the "
                                 "dataset); fix: write that column in every file, or leave it "
                                 "out of the command")
            kind = _kind(schema.field(c).type)
            if c not in seen or seen[c][0] == "null":
                seen[c] = (kind, shown)
            elif kind != seen[c][0] and kind != "null":
                raise InputError(f"column {c!r} is {seen[c][0]} in {seen[c][1]!r} but {kind} in "
                                 f"{shown!r}; fix: rewrite the partitions with one type, e.g. "
                                 f"cast it to {seen[c][0]}")
    return names0, {c: kind for c, (kind, _) in seen.items()}
