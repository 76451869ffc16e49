"""Reading files from users: tables (CSV or Parquet), arrays and other inputs, hostile-input safe.

Files from users are data: every one (tables, ``.npy`` arrays, rules, hierarchy, model and
mapping files) is opened by :func:`open_regular`, which reads only a regular file (never a
device, FIFO, socket or folder, even behind a symlink) of at most a stated size per kind
(``MAX_*_BYTES``), and reads it through the descriptor it checked. A table's header is read as
written, within :data:`MAX_HEADER_BYTES` (duplicated or empty column names are refused, never
renamed); a damaged or misnamed file gives one line naming it and the fix. A table read
carries no metadata beyond its schema (:func:`plain_frame`, also applied to every table written).

Writing (output checks before any work, atomic writes, tables without the input's metadata,
clean-up on signals) is in :mod:`anonml._output`; :func:`check_packages` serves both.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import importlib.util
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from anonml._errors import AnonmlError, InputError, names_list, one_line

__all__ = [
    "MAX_ARRAY_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_HIERARCHY_BYTES",
    "MAX_MODEL_BYTES",
    "MAX_RULES_BYTES",
    "MAX_TABLE_BYTES",
    "check_packages",
    "check_regular_file",
    "open_regular",
    "plain_frame",
    "read_array",
    "read_bytes",
    "read_header",
    "read_table",
    "safe_copy",
    "table_format",
]

# Largest file read, per kind (bytes, from st_size, so a sparse file counts at its full size).
# Library callers may pass another limit where a function takes ``max_bytes``, or set these
# module attributes; the command line never raises them.
#: a table (CSV, compressed CSV or Parquet), on disk and, for compressed CSV, decompressed
MAX_TABLE_BYTES = 16 * 2**30
#: a ``.npy`` array (predictions, probabilities)
MAX_ARRAY_BYTES = 4 * 2**30
#: a model or mapping file (``.skops``, XGBoost ``.json``/``.ubj``, pickles)
MAX_MODEL_BYTES = 2 * 2**30
#: a rules file (``.toml``/``.json``)
MAX_RULES_BYTES = 1 * 2**20
#: an ARX hierarchy file
MAX_HIERARCHY_BYTES = 256 * 2**20
#: the header record of a CSV table (its first line, or lines when a name is quoted), counted
#: in characters of the decoded text
MAX_HEADER_BYTES = 1 * 2**20

_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz"}
# the first bytes of each kind of file, to name a misnamed one before a parser trips on it
_MAGIC = {"gzip": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00", "zip": b"PK\x03\x04",
          "parquet": b"PAR1", "npy": b"\x93NUMPY"}
_LABEL = {"gzip": "gzip", "bz2": "bzip2", "xz": "xz", "zip": "zip", "parquet": "Parquet",
          "npy": "NumPy .npy"}
# optional packages: import name -> (pip name, anonml extra)
_PACKAGES = {"pyarrow": ("pyarrow", "parquet"), "fpdf": ("fpdf2", "report"),
             "jsonschema": ("jsonschema", "report"), "skops": ("skops", "report"),
             "tqdm": ("tqdm", None)}


# ----------------------------------------------------------------------------- names ----------
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


def _codec(path: Path) -> str | None:
    return _CODECS.get(path.suffix.lower())


def check_packages(*modules: str, purpose: str) -> None:
    """Raise one line naming the ``pip install`` command if an optional package is missing.

    ``modules`` are import names (``"pyarrow"``, ``"fpdf"``, ``"jsonschema"``, ``"skops"``);
    ``purpose`` completes the message, e.g. ``"writing 'out.parquet'"``.
    """
    from anonml._install import install_hint

    for module in modules:
        if importlib.util.find_spec(module) is None:
            pip_name, extra = _PACKAGES.get(module, (module, None))
            hint = install_hint(extra, (pip_name,))
            raise InputError(f"{purpose} needs {pip_name}; run: {hint}")


def table_packages(path: str | os.PathLike, reading: bool = True) -> None:
    """Fail early when the table format of ``path`` needs a package that is missing."""
    if table_format(path) == "parquet":
        verb = "reading" if reading else "writing"
        check_packages("pyarrow", purpose=f"{verb} Parquet ({str(path)!r})")


# ----------------------------------------------------------------------------- reading --------
def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


def _refuse_kind(p: str, what: str, mode: int) -> None:
    fix = "name a file" if stat.S_ISDIR(mode) else "copy the data into a regular file"
    via = f" (a symlink to {os.path.realpath(p)!r})" if os.path.islink(p) else ""
    raise InputError(f"{what} {p!r}{via} is {_kind_of(mode)}, not a regular file; anonml reads "
                     f"only regular files; fix: {fix}")


def open_regular(path: str | os.PathLike, what: str, *, max_bytes: int | None) -> io.BufferedReader:
    """Open a user's file for reading (a binary file object), only if it is a regular file of
    at most ``max_bytes`` bytes.

    The file is opened with ``O_NONBLOCK`` (a FIFO cannot hang the open) and ``O_NOCTTY``, then
    ``fstat`` of the opened descriptor decides: a device, FIFO, socket or folder is refused in
    one line naming ``path`` and what it is. Symlinks are followed, so the target is what must
    be a regular file. The size (``st_size``: a sparse file counts in full) is checked before
    any byte is read. Read through the returned object only (never re-open ``path``), so the
    file checked is the file read. ``max_bytes=None`` checks the kind only.
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(
        os, "O_CLOEXEC", 0)
    try:
        # a first look by name, so that a device is never even opened (opening some has side
        # effects); the decision that counts is fstat of the descriptor below
        if not stat.S_ISREG(os.stat(p).st_mode):
            _refuse_kind(p, what, os.stat(p).st_mode)
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise InputError(f"{what} {p!r} does not exist; fix: check the path") from None
    except PermissionError:
        raise InputError(f"cannot read {what} {p!r} (permission denied); fix: give a file you "
                         "can read") from None
    except OSError as exc:
        kind = "not a regular file"
        with contextlib.suppress(OSError):
            kind = _kind_of(os.stat(p).st_mode)
        if exc.errno == errno.ELOOP:
            kind = "a symlink loop"
        raise InputError(f"{what} {p!r} is {kind} ({one_line(exc.strerror or exc, 80)}); fix: "
                         "give a regular file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _refuse_kind(p, what, st.st_mode)
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"{what} {p!r} is {_size(st.st_size)} ({st.st_size:,} bytes), larger "
                             f"than the limit of {_size(max_bytes)} for this kind of file "
                             "(counted in full, holes of a sparse file too); nothing was read; "
                             "fix: give a smaller file")
        if hasattr(os, "O_NONBLOCK"):  # a regular file: back to ordinary reads
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(AttributeError):  # messages name the path, not the descriptor
        f.raw.name = p  # type: ignore[attr-defined]
    return f


def check_regular_file(path: str | os.PathLike, what: str, *,
                       max_bytes: int | None = None) -> Path:
    """:func:`open_regular`, closed at once: ``path`` is a regular file within ``max_bytes``."""
    open_regular(path, what, max_bytes=max_bytes).close()
    return Path(path)


def read_bytes(path: str | os.PathLike, what: str, *, max_bytes: int) -> bytes:
    """The whole content of a small regular file (see :func:`open_regular`), never more than
    ``max_bytes`` bytes even if the file grows while it is read."""
    with open_regular(path, what, max_bytes=max_bytes) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{what} {os.fspath(path)!r} grew beyond {_size(max_bytes)} while "
                         "it was read; fix: give a file that is not being written")
    return data


def safe_copy(src: str | os.PathLike, dst: str | os.PathLike, *, max_bytes: int,
              what: str) -> str:
    """Copy the regular file ``src`` to the new file ``dst``; return the SHA-256 (hex) of
    exactly the bytes copied.

    ``src`` is opened once by :func:`open_regular` (a device, FIFO, socket or folder is refused;
    its size is checked against ``max_bytes`` before any byte is copied, so a sparse file is
    refused at its full size) and copied through that descriptor, never re-opened. A file that
    grows past ``max_bytes`` while it is copied is refused too. ``dst`` must not exist (it is
    created with ``O_EXCL``, mode 0600, not following a symlink); on any error it is removed.
    """
    digest = hashlib.sha256()
    with open_regular(src, what, max_bytes=max_bytes) as f:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(
            os, "O_CLOEXEC", 0)
        out_fd = os.open(os.fspath(dst), flags, 0o600)
        try:
            with os.fdopen(out_fd, "wb") as out:
                copied = 0
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    copied += len(chunk)
                    if copied > max_bytes:
                        raise InputError(f"{what} {os.fspath(src)!r} grew beyond "
                                         f"{_size(max_bytes)} while it was copied; fix: give a "
                                         "file that is not being written")
                    digest.update(chunk)
                    out.write(chunk)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(dst)
            raise
    return digest.hexdigest()


def _input_file(path: str | os.PathLike, what: str, *, max_bytes: int | None = None) -> Path:
    """Check, before any work, that ``path`` is a regular file (see :func:`open_regular`)."""
    return check_regular_file(path, what, max_bytes=max_bytes)


class _Bounded(io.RawIOBase):
    """A binary stream that refuses to yield more than ``limit`` bytes (decompressed CSV)."""

    def __init__(self, raw: Any, limit: int, where: str):
        self.raw, self.limit, self.where, self.count = raw, limit, where, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        data = self.raw.read(len(view))
        n = len(data)
        self.count += n
        if self.count > self.limit:
            raise InputError(f"{self.where} decompresses to more than {_size(self.limit)}, the "
                             "limit for a table; nothing was read; fix: give a smaller table, "
                             "or use --engine dask with Parquet files")
        view[:n] = data
        return n


def _check_magic(f: Any, kind: str, fix: str) -> None:
    """The open binary file ``f`` starts like a ``kind`` file (read from the start, then
    rewound)."""
    f.seek(0)
    head = f.read(len(_MAGIC[kind]))
    f.seek(0)
    if head != _MAGIC[kind]:
        raise InputError(f"{str(f.name)!r} is not a {_LABEL[kind]} file (it does not start like "
                         f"one); fix: {fix}")


def _read_errors() -> tuple:
    import lzma
    import zipfile
    import zlib

    errors: tuple = (ValueError, OSError, EOFError, UnicodeDecodeError, csv.Error, lzma.LZMAError,
                     zipfile.BadZipFile, zlib.error)
    try:
        import pyarrow

        errors += (pyarrow.ArrowException,)
    except ImportError:
        pass
    return errors


def _why(exc: BaseException, p: Path, fmt: str) -> InputError:
    """One line for a file that a parser could not read, with the likely fix."""
    text = one_line(exc, 160)
    if isinstance(exc, UnicodeDecodeError):
        fix = "save it as UTF-8 text"
    elif isinstance(exc, pd.errors.EmptyDataError):
        fix = "give a table with a header line"
    elif isinstance(exc, pd.errors.ParserError) or isinstance(exc, csv.Error):
        fix = "correct the line named (every row needs as many fields as the header)"
    else:
        fix = "the file is cut short or damaged: copy or export it again"
    return InputError(f"cannot read {str(p)!r} as {fmt}: {text}; fix: {fix}")


@contextlib.contextmanager
def _csv_stream(f: Any, p: Path, limit: int) -> Iterator[Any]:
    """The CSV bytes of the open file ``f``, decompressed the way pandas does it (by the name's
    ending), never more than ``limit`` bytes decompressed."""
    codec = _codec(p)
    f.seek(0)
    if codec is None:
        yield f
        return
    _check_magic(f, codec, f"compress it with {codec}, or rename it without {p.suffix} if it "
                           "is plain CSV")
    with contextlib.ExitStack() as stack:
        if codec == "gzip":
            import gzip

            raw: Any = stack.enter_context(gzip.GzipFile(fileobj=f, mode="rb"))
        elif codec == "bz2":
            import bz2

            raw = stack.enter_context(bz2.BZ2File(f, "rb"))
        elif codec == "xz":
            import lzma

            raw = stack.enter_context(lzma.LZMAFile(f, "rb"))
        else:
            import zipfile

            archive = stack.enter_context(zipfile.ZipFile(f))
            names = [n for n in archive.namelist()
                     if not n.endswith("/") and not n.startswith("__MACOSX/")]
            if len(names) != 1:
                raise InputError(f"zip file {str(p)!r} holds {len(names)} files; fix: put "
                                 "exactly one CSV file in it")
            raw = stack.enter_context(archive.open(names[0]))
        yield io.BufferedReader(_Bounded(raw, limit, repr(str(p))), 1 << 16)


def _csv_header(f: Any, p: Path, sep: str | None, limit: int) -> list[str]:
    """The first non-blank record of the CSV in ``f``, read within :data:`MAX_HEADER_BYTES`."""
    bound = MAX_HEADER_BYTES
    with _csv_stream(f, p, limit) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        try:
            chunk = text.read(bound + 1)
        finally:
            text.detach()
    buf = io.StringIO(chunk, newline="")
    for row in csv.reader(buf, delimiter=sep or ","):
        if not row:
            continue
        if len(chunk) > bound and (buf.tell() >= len(chunk) or chunk[buf.tell() - 1] not in
                                   "\r\n"):
            break  # the record runs to the end of what was read: longer than the bound
        return row
    else:
        if len(chunk) <= bound:
            raise InputError(f"{str(p)!r} is empty; fix: give a table with a header line")
    raise InputError(f"the header line of {str(p)!r} is longer than {_size(bound)}; anonml "
                     "reads at most that much to find the column names; fix: give a table "
                     "with a header line of column names")


def _header(f: Any, p: Path, fmt: str, sep: str | None, limit: int) -> list[str]:
    try:
        if fmt == "parquet":
            table_packages(p)
            _check_magic(f, "parquet", "if it is CSV, name it .csv")
            import pyarrow.parquet as pq

            names = [str(n) for n in pq.read_schema(f).names]
            f.seek(0)
            return names
        return _csv_header(f, p, sep, limit)
    except AnonmlError:
        raise
    except _read_errors() as exc:
        raise _why(exc, p, fmt) from None


def read_header(path: str | os.PathLike, *, sep: str | None = None,
                max_bytes: int | None = None) -> list[str]:
    """The column names of a table file, exactly as written (nothing renamed).

    CSV (optionally ``.gz``, ``.bz2``, ``.xz``, ``.zip``): the first non-blank record, read with
    the :mod:`csv` module (fields separated by ``sep``, default ``,``) from at most
    :data:`MAX_HEADER_BYTES` of text (a longer header is refused); Parquet: the schema's field
    names (needs pyarrow). Only a regular file of at most ``max_bytes`` (default
    :data:`MAX_TABLE_BYTES`) is read (:func:`open_regular`).
    """
    limit = MAX_TABLE_BYTES if max_bytes is None else max_bytes
    with open_regular(path, "input file", max_bytes=limit) as f:
        p = Path(path)
        return _header(f, p, table_format(p), sep, limit)


def check_header(names: list, path: str | os.PathLike) -> None:
    """Refuse duplicated and empty column names (pandas would rename them silently: a second
    ``age`` becomes ``age.1`` and would leave the file unanonymized)."""
    seen: set = set()
    dups = list(dict.fromkeys(n for n in names if n in seen or seen.add(n)))
    if dups:
        shown = ", ".join(repr(n) for n in dups[:5]) + (
            f" ... and {len(dups) - 5} more" if len(dups) > 5 else "")
        raise InputError(f"{str(path)!r} has duplicated column names: {shown}; fix: give each "
                         "column a unique name in the header line")
    empty = [i + 1 for i, n in enumerate(names) if not str(n).strip()]
    if empty:
        raise InputError(f"column {empty[0]} of {str(path)!r} has no name; fix: name it in the "
                         "header line, or drop it (an index saved with to_csv() has no name: "
                         "save with index=False)")


def _check_csv_options(p: Path, fmt: str, na_values: Any, sep: str | None) -> list | None:
    if fmt != "csv" and (na_values is not None or sep is not None):
        what = "--na-values/na_values" if na_values is not None else "--sep/sep"
        raise InputError(f"{what} applies to CSV files, and {str(p)!r} is Parquet (which "
                         "stores missing values and columns itself); fix: leave it out")
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in "\"\r\n"):
        raise InputError(f"sep={sep!r} is not one character; fix: give the field separator, "
                         "e.g. ';' or a tab")
    if na_values is None:
        return None
    if isinstance(na_values, str):
        na_values = [na_values]
    values = [str(v) for v in na_values]
    if not values:
        raise InputError("na_values is empty; fix: give the texts that mean missing, e.g. '?'")
    return values


def read_table(path: str | os.PathLike, *, na_values: Any = None,
               sep: str | None = None, max_bytes: int | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet table; one clear line if it is missing, not a regular file, too
    large, misnamed, damaged, or has duplicated or unnamed columns (see :func:`read_header` and
    :func:`check_header`).

    Parameters
    ----------
    path : path
        ``.csv`` (optionally compressed) or ``.parquet``; a regular file (:func:`open_regular`),
        opened once: the header and the rows are read through the same descriptor.
    na_values : str or list of str, optional
        CSV only: texts that mean a missing value (e.g. ``"?"``), besides pandas' defaults
        (empty, ``NA``, ``NaN``, ...).
    sep : str, optional
        CSV only: the field separator, one character (default ``,``).
    max_bytes : int, optional
        Largest file (and decompressed CSV) read, default :data:`MAX_TABLE_BYTES`.

    The frame returned carries no ``attrs`` (pandas restores them from a Parquet file's
    metadata; they are the input's, not data anonml vouches for).
    """
    limit = MAX_TABLE_BYTES if max_bytes is None else max_bytes
    with open_regular(path, "input file", max_bytes=limit) as f:
        p = Path(path)
        fmt = table_format(p)
        na = _check_csv_options(p, fmt, na_values, sep)
        names = _header(f, p, fmt, sep, limit)
        check_header(names, p)
        try:
            f.seek(0)
            if fmt == "parquet":
                frame = pd.read_parquet(f)
            else:
                with _csv_stream(f, p, limit) as raw:
                    frame = pd.read_csv(raw, sep=sep or ",", na_values=na, compression=None)
        except AnonmlError:
            raise
        except ImportError:
            from anonml._install import install_hint

            raise InputError(
                f"reading Parquet needs pyarrow; run: {install_hint('parquet', ('pyarrow',))}"
            ) from None
        except _read_errors() as exc:
            raise _why(exc, p, fmt) from None
    if fmt == "csv" and [str(c) for c in frame.columns] != names:
        raise InputError(f"{str(p)!r}: pandas read the columns as "
                         f"{names_list(frame.columns, 8)} but the header line names "
                         f"{names_list(names, 8)}; fix: check the header line")
    return plain_frame(frame)


def read_array(path: str | os.PathLike, what: str, *, kinds: str = "biuf",
               max_bytes: int | None = None) -> Any:
    """A 1-D or 2-D NumPy array from a ``.npy`` file, never unpickled.

    Only a regular file of at most ``max_bytes`` (default :data:`MAX_ARRAY_BYTES`) is read. The
    header is checked before the data: the dtype's kind must be one of ``kinds`` (default
    ``"biuf"``: booleans, integers, floats; ``"U"`` adds text, for labels), so complex, object
    (pickled), structured, datetime and other dtypes are refused in one line, and the data
    length the header announces must be the file's.
    """
    import numpy as np

    limit = MAX_ARRAY_BYTES if max_bytes is None else max_bytes
    wanted = "numbers" if set(kinds) <= set("biuf") else "numbers or strings"
    fix = f"save {wanted} with numpy.save(path, array), or give a .csv with a header line"
    with open_regular(path, f"{what} file", max_bytes=limit) as f:
        p = Path(path)
        size = os.fstat(f.fileno()).st_size
        try:
            _check_magic(f, "npy", fix)
            fmt = np.lib.format
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(f)
            else:
                raise InputError(f"{what} file {str(p)!r} is .npy version {version}, which "
                                 f"anonml does not read; fix: {fix}")
            if dtype.hasobject:
                raise InputError(f"{what} file {str(p)!r} holds Python objects, which anonml "
                                 f"never unpickles; fix: {fix}")
            if dtype.kind not in kinds or dtype.fields is not None or dtype.subdtype is not None:
                raise InputError(f"{what} file {str(p)!r} holds {dtype} values ("
                                 f"{_DTYPE_WORDS.get(dtype.kind, 'not plain ' + wanted)}); "
                                 f"fix: {fix}")
            if len(shape) not in (1, 2):
                raise InputError(f"{what} file {str(p)!r} holds a {len(shape)}-D array of shape "
                                 f"{shape}; fix: save a 1-D array (one value per row) or a 2-D "
                                 "one (one column per class)")
            expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if expected != size - f.tell():
                raise InputError(f"{what} file {str(p)!r} announces {expected:,} bytes of data "
                                 f"but holds {size - f.tell():,}; fix: the file is cut short or "
                                 "damaged: save it again")
            f.seek(0)
            arr = np.load(f, allow_pickle=False)
        except AnonmlError:
            raise
        except ValueError as exc:
            if "pickle" in str(exc) or "Object arrays" in str(exc):
                raise InputError(f"{what} file {str(p)!r} holds Python objects, which anonml "
                                 f"never unpickles; fix: {fix}") from None
            raise InputError(f"cannot read {what} file {str(p)!r}: {one_line(exc, 160)}; fix: "
                             f"{fix}") from None
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read {what} file {str(p)!r}: {one_line(exc, 160)}; fix: "
                             "the file is cut short or damaged: save it again") from None
    return arr


_DTYPE_WORDS = {"c": "complex numbers", "V": "structured records", "M": "dates", "m": "durations",
                "U": "text", "S": "bytes", "O": "Python objects"}


# ----------------------------------------------------------------------------- metadata -------
def plain_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without any pandas ``attrs`` and without a name on its column index (a
    shallow copy when it had either).

    ``attrs`` are free-form metadata that pandas carries through operations and writes into a
    Parquet file (and reads back from one): an input's ``attrs`` could hold its raw values, and
    so could the column index's name, which pandas also restores from a Parquet file. Column
    Series take their ``attrs`` from the frame, so clearing the frame's clears theirs.
    """
    named = any(n is not None for n in frame.columns.names)
    if not frame.attrs and not named:
        return frame
    out = frame.copy(deep=False)
    out.attrs = {}
    if named:  # the name of the column index, restored from a Parquet file's pandas metadata
        out.columns = out.columns.set_names([None] * out.columns.nlevels)
    return out
