"""Reading and writing tables and files: CSV or Parquet, always atomically (temp file + rename).

Files from users are data: a table's header is read as written (duplicated or empty column
names are refused, never renamed), a damaged or misnamed file gives one line naming it and the
fix. Outputs are checked before any work starts (:func:`check_output_file`,
:func:`check_output_folder`, :func:`check_packages`), and written through a temporary file or
folder beside the target that is renamed into place only when complete
(:func:`atomic_write`, :func:`atomic_write_set`).

Temporary paths are kept in a registry while they exist. Inside :func:`cleanup_on_signals`
(the CLI runs every command in it) SIGTERM and SIGINT first remove them, then end the run
(exit status 143, or ``KeyboardInterrupt``). SIGKILL cannot be caught: a run killed that way
can leave one hidden ``.<name>.<random>.tmp`` file or folder beside its target, which is safe
to delete. A signal arriving while a C extension writes (pandas, pyarrow) is handled when that
call returns.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import importlib.util
import io
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from anonml._errors import AnonmlError, InputError, OutputError, one_line

__all__ = [
    "atomic_write",
    "atomic_write_set",
    "check_output_file",
    "check_output_folder",
    "check_packages",
    "cleanup_on_signals",
    "read_array",
    "read_header",
    "read_table",
    "table_format",
    "write_table",
]

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
def _input_file(path: str | os.PathLike, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} {str(p)!r} does not exist; check the path")
    if p.is_dir():
        raise InputError(f"{what} {str(p)!r} is a folder; fix: name a file")
    return p


def _check_magic(p: Path, kind: str, fix: str) -> None:
    with open(p, "rb") as f:
        head = f.read(len(_MAGIC[kind]))
    if head != _MAGIC[kind]:
        raise InputError(f"{str(p)!r} is not a {_LABEL[kind]} file (it does not start like "
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
def _open_csv_text(p: Path) -> Iterator[Any]:
    """A text stream of the CSV in ``p``, decompressed the way pandas does it (by ending)."""
    codec = _codec(p)
    with contextlib.ExitStack() as stack:
        if codec is None:
            raw: Any = stack.enter_context(open(p, "rb"))
        else:
            _check_magic(p, codec, f"compress it with {codec}, or rename it without "
                                   f"{p.suffix} if it is plain CSV")
            if codec == "gzip":
                import gzip

                raw = stack.enter_context(gzip.open(p, "rb"))
            elif codec == "bz2":
                import bz2

                raw = stack.enter_context(bz2.open(p, "rb"))
            elif codec == "xz":
                import lzma

                raw = stack.enter_context(lzma.open(p, "rb"))
            else:
                import zipfile

                archive = stack.enter_context(zipfile.ZipFile(p))
                names = [n for n in archive.namelist()
                         if not n.endswith("/") and not n.startswith("__MACOSX/")]
                if len(names) != 1:
                    raise InputError(f"zip file {str(p)!r} holds {len(names)} files; fix: put "
                                     "exactly one CSV file in it")
                raw = stack.enter_context(archive.open(names[0]))
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        try:
            yield text
        finally:
            text.detach()


def read_header(path: str | os.PathLike, *, sep: str | None = None) -> list[str]:
    """The column names of a table file, exactly as written (nothing renamed).

    CSV (optionally ``.gz``, ``.bz2``, ``.xz``, ``.zip``): the first non-blank record, read with
    the :mod:`csv` module (fields separated by ``sep``, default ``,``); Parquet: the schema's
    field names (needs pyarrow).
    """
    p = _input_file(path, "input file")
    fmt = table_format(p)
    try:
        if fmt == "parquet":
            table_packages(p)
            _check_magic(p, "parquet", "if it is CSV, name it .csv")
            import pyarrow.parquet as pq

            return [str(n) for n in pq.read_schema(p).names]
        with _open_csv_text(p) as text:
            for row in csv.reader(text, delimiter=sep or ","):
                if row:
                    return row
        raise InputError(f"{str(p)!r} is empty; fix: give a table with a header line")
    except AnonmlError:
        raise
    except _read_errors() as exc:
        raise _why(exc, p, fmt) from None


def check_header(names: list, path: str | os.PathLike) -> None:
    """Refuse duplicated and empty column names (pandas would rename them silently: a second
    ``age`` becomes ``age.1`` and would leave the file unanonymized)."""
    seen: set = set()
    dups = list(dict.fromkeys(n for n in names if n in seen or seen.add(n)))
    if dups:
        shown = ", ".join(repr(n) for n in dups[:5])
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
               sep: str | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet table; one clear line if it is missing, misnamed, damaged, or has
    duplicated or unnamed columns (see :func:`read_header` and :func:`check_header`).

    Parameters
    ----------
    path : path
        ``.csv`` (optionally compressed) or ``.parquet``.
    na_values : str or list of str, optional
        CSV only: texts that mean a missing value (e.g. ``"?"``), besides pandas' defaults
        (empty, ``NA``, ``NaN``, ...).
    sep : str, optional
        CSV only: the field separator, one character (default ``,``).
    """
    p = _input_file(path, "input file")
    fmt = table_format(p)
    na = _check_csv_options(p, fmt, na_values, sep)
    names = read_header(p, sep=sep)
    check_header(names, p)
    try:
        if fmt == "parquet":
            frame = pd.read_parquet(p)
        else:
            frame = pd.read_csv(p, sep=sep or ",", na_values=na)
    except ImportError:
        from anonml._install import install_hint

        raise InputError(
            f"reading Parquet needs pyarrow; run: {install_hint('parquet', ('pyarrow',))}"
        ) from None
    except _read_errors() as exc:
        raise _why(exc, p, fmt) from None
    if fmt == "csv" and [str(c) for c in frame.columns] != names:
        raise InputError(f"{str(p)!r}: pandas read the columns as "
                         f"{', '.join(map(str, frame.columns[:8]))} but the header line names "
                         f"{', '.join(names[:8])}; fix: check the header line")
    return frame


def read_array(path: str | os.PathLike, what: str) -> Any:
    """A NumPy array from a ``.npy`` file, never unpickled; one line if it is not a plain
    ``.npy`` file of numbers or strings."""
    import numpy as np

    p = _input_file(path, f"{what} file")
    fix = "save numbers or strings with numpy.save(path, array), or give a .csv with a header line"
    try:
        _check_magic(p, "npy", fix)
        arr = np.load(p, allow_pickle=False)
    except AnonmlError:
        raise
    except ValueError as exc:
        if "pickle" in str(exc) or "Object arrays" in str(exc):
            raise InputError(f"{what} file {str(p)!r} holds Python objects, which anonml "
                             f"never unpickles; fix: {fix}") from None
        raise InputError(f"cannot read {what} file {str(p)!r}: {one_line(exc, 160)}; fix: "
                         f"{fix}") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read {what} file {str(p)!r}: {one_line(exc, 160)}; fix: the "
                         "file is cut short or damaged: save it again") from None
    if arr.dtype.kind in "OV":
        raise InputError(f"{what} file {str(p)!r} holds {arr.dtype} values; fix: {fix}")
    return arr


# ----------------------------------------------------------------------------- checks ---------
def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def check_output_file(path: str | os.PathLike, *, inputs: Iterable = ()) -> Path:
    """Check, before any work, that a file can be written at ``path``: it is not a folder, its
    folder exists and is writable, and it is none of ``inputs``. Returns ``path`` as a Path."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"output {str(p)!r} is a folder; fix: name a file, e.g. "
                         f"{str(p / ('output' + ''.join(p.suffixes)))!r}")
    if p.exists() and not p.is_file():
        raise InputError(f"output {str(p)!r} exists and is not a regular file; fix: name "
                         "another file")
    parent = p.parent
    if not parent.exists():
        raise InputError(f"output folder {str(parent)!r} does not exist; create it first")
    if not parent.is_dir():
        raise InputError(f"output folder {str(parent)!r} is a file; fix: give a path inside a "
                         "folder")
    if not _writable(parent):
        raise InputError(f"cannot write to the output folder {str(parent)!r} (permission "
                         "denied); fix: choose a folder you can write to")
    for other in inputs:
        if other is None:
            continue
        same = p.resolve() == Path(other).resolve() or (
            p.exists() and Path(other).exists() and os.path.samefile(p, other))
        if same:
            raise InputError(f"the output path {str(p)!r} is the input {str(other)!r}; write "
                             "to another file")
    return p


def check_output_folder(path: str | os.PathLike) -> Path:
    """Check, before any work, that ``path`` is a folder or can be made one: not a file, and
    its nearest existing ancestor is a writable folder. Nothing is created here."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"output {str(p)!r} is a file; fix: give a folder")
    existing = p
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"cannot make the folder {str(p)!r}: {str(existing)!r} is a file; "
                         "fix: give another folder")
    if not _writable(existing):
        raise InputError(f"cannot write to {str(existing)!r} (permission denied); fix: choose "
                         "a folder you can write to")
    return p


# ----------------------------------------------------------------------------- writing --------
_LIVE: dict = {}  # temporary paths that exist right now (an ordered set)
_LIVE_LOCK = threading.Lock()


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _remove_live() -> None:
    """Remove every temporary file and folder still in the registry (signal handlers)."""
    for path in list(_LIVE):
        _remove(path)
        _LIVE.pop(path, None)


@contextlib.contextmanager
def _temporary(folder: Path, name: str, make: Callable[[str], None]) -> Iterator[str]:
    """A fresh hidden path ``folder/.name.<random>.tmp``, registered before it is created and
    removed (unless renamed away) when the block ends."""
    for _ in range(100):
        tmp = str(folder / f".{name}.{secrets.token_hex(4)}.tmp")
        with _LIVE_LOCK:
            _LIVE[tmp] = None
        try:
            make(tmp)
            break
        except FileExistsError:
            _LIVE.pop(tmp, None)
        except BaseException:
            _LIVE.pop(tmp, None)
            raise
    else:  # pragma: no cover - 100 random collisions
        raise OutputError(errno.EEXIST, f"cannot make a temporary file in {str(folder)!r}")
    try:
        yield tmp
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)
        _LIVE.pop(tmp, None)


def _create_file(tmp: str) -> None:
    # the mode a plain open() would give (0o666 less the umask), not mkstemp's 0o600
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


def _output_error(exc: OSError, target: Path) -> OutputError:
    code = exc.errno
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        problem, fix = "no space left on the device", "free some space or write elsewhere"
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        problem, fix = "permission denied", "choose a folder you can write to"
    else:
        problem, fix = one_line(exc.strerror or exc, 120), "check the path and the disk"
    return OutputError(code, f"cannot write {str(target)!r}: {problem}; nothing was written; "
                             f"fix: {fix}")


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``.

    On any error (or SIGTERM/SIGINT inside :func:`cleanup_on_signals`) the temporary file is
    removed and ``path`` is left as it was. An ``OSError`` while writing (disk full, permission
    denied) becomes :class:`~anonml._errors.OutputError` with one line naming ``path``. SIGKILL
    cannot be caught and may leave the hidden ``.<name>.<random>.tmp`` file.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(f"output {str(target)!r} is a folder; fix: name a file")
    if not target.parent.is_dir():
        raise InputError(
            f"output folder {str(target.parent)!r} does not exist; create it first"
        )
    try:
        with _temporary(target.parent, target.name, _create_file) as tmp:
            write(Path(tmp))
            os.replace(tmp, target)
    except AnonmlError:
        raise
    except OSError as exc:
        raise _output_error(exc, target) from None


def atomic_write_set(folder: str | os.PathLike, files: Mapping[str, Any], *,
                     replaces: Iterable[str] = ()) -> dict[str, Path]:
    """Write several files into ``folder`` as a set: all of them, or none.

    ``files`` maps a file name to its content (bytes, or a callable ``write(path)``). Every
    file is first written into a hidden temporary folder; only when all are complete:

    - if ``folder`` does not exist (its parent must), the temporary folder is renamed to it,
      so the folder appears with every file at once;
    - if it exists, each file is renamed into it (a rename cannot run out of space), and the
      names in ``replaces`` that this set does not hold are removed, so the folder never mixes
      two sets (e.g. a new ``report.json`` beside an older ``report.pdf``). Other files in the
      folder are left alone.

    On any error, or SIGTERM/SIGINT inside :func:`cleanup_on_signals`, the temporary folder is
    removed and ``folder`` is as it was (a signal between the final renames, a few
    microseconds, can leave part of the new set in place of the old). Returns the paths.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"output {str(folder)!r} is a file; fix: give a folder")
    new = not folder.exists()
    base = folder.parent if new else folder
    if not base.is_dir():
        raise InputError(f"output folder {str(base)!r} does not exist; create it first")
    for name in files:
        if not name or Path(name).name != name:
            raise InputError(f"file name {name!r} is not a plain name; fix: no folders in it")
    paths = {name: folder / name for name in files}
    try:
        with _temporary(base, folder.name if new else "anonml", os.mkdir) as tmp:
            for name, content in files.items():
                dest = Path(tmp) / name
                if callable(content):
                    content(dest)
                else:
                    dest.write_bytes(content)
            if new:
                os.rename(tmp, folder)
            else:
                for name in files:
                    os.replace(Path(tmp) / name, folder / name)
                for name in replaces:
                    if name not in files:
                        (folder / name).unlink(missing_ok=True)
    except AnonmlError:
        raise
    except OSError as exc:
        raise _output_error(exc, folder) from None
    return paths


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` as CSV or Parquet (by the name's ending), atomically, without its index."""
    fmt = table_format(path)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from anonml._install import install_hint

            raise InputError(
                f"writing Parquet needs pyarrow; run: {install_hint('parquet', ('pyarrow',))}"
            ) from None
        atomic_write(path, lambda p: frame.to_parquet(p, index=False))
    else:
        codec = _codec(Path(path))
        atomic_write(path, lambda p: frame.to_csv(p, index=False, compression=codec))


# ----------------------------------------------------------------------------- signals --------
@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """Within this block, SIGTERM and SIGINT remove every temporary file and folder of
    :func:`atomic_write` / :func:`atomic_write_set` at once, then end the run: SIGINT raises
    ``KeyboardInterrupt``, SIGTERM raises ``SystemExit(143)``; both unwind through the writers,
    so nothing partial is left. The previous handlers are restored on exit. Outside the main
    thread it does nothing. SIGKILL cannot be handled (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        _remove_live()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
