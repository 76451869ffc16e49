"""Writing tables and files: checked before any work, always atomically (temp file + rename).

Outputs are checked before any work starts (:func:`check_output_file`,
:func:`check_output_folder`, and :func:`anonml._io.check_packages`), carry no metadata of the
input beyond the schema (:func:`anonml._io.plain_frame`, :func:`write_parquet`), and are
written through a temporary file or folder beside the target that is renamed into place only
when complete (:func:`atomic_write`, :func:`atomic_write_set`). Reading files from users is in
:mod:`anonml._io`.

Temporary paths are kept in a registry while they exist. Inside :func:`cleanup_on_signals`
(the CLI runs every command in it) SIGTERM and SIGINT first remove them, then end the run
(exit status 143, or ``KeyboardInterrupt``). SIGKILL cannot be caught: a run killed that way
can leave one hidden ``.<name>.<random>.tmp`` file or folder beside its target, which is safe
to delete. A signal arriving while a C extension writes (pandas, pyarrow) is handled when that
call returns.
"""

from __future__ import annotations

import contextlib
import errno
import json
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
from anonml._io import _codec, plain_frame, table_format

__all__ = [
    "atomic_write",
    "atomic_write_set",
    "check_output_file",
    "check_output_folder",
    "cleanup_on_signals",
    "write_parquet",
    "write_table",
]


# ----------------------------------------------------------------------------- checks ---------
def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def _check_writable_folder(folder: Path, not_a_folder: str, denied: str) -> None:
    """InputError ``not_a_folder`` unless ``folder`` is a folder, ``denied`` unless this
    process may create files in it."""
    if not folder.is_dir():
        raise InputError(not_a_folder)
    if not _writable(folder):
        raise InputError(denied)


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
    _check_writable_folder(
        parent,
        f"output folder {str(parent)!r} is a file; fix: give a path inside a folder",
        f"cannot write to the output folder {str(parent)!r} (permission denied); fix: choose a "
        "folder you can write to",
    )
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
    _check_writable_folder(
        existing,
        f"cannot make the folder {str(p)!r}: {str(existing)!r} is a file; fix: give another "
        "folder",
        f"cannot write to {str(existing)!r} (permission denied); fix: choose a folder you can "
        "write to",
    )
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


def _plain_pandas_metadata(raw: bytes) -> bytes:
    """pandas' schema metadata (column names, dtypes, the pandas version) without
    ``attributes`` (which is where ``DataFrame.attrs`` would go)."""
    meta = json.loads(raw)
    meta.pop("attributes", None)
    return json.dumps(meta).encode("utf-8")


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` (without its index) as Parquet at ``path``, directly (not atomically),
    carrying no metadata of its own: no ``attrs``, and no schema key-value metadata but
    pandas' description of the columns (``b"pandas"``, which holds names and dtypes, not
    values). Used by :func:`write_table` and the Dask engine's writer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(plain_frame(frame), preserve_index=False)
    meta = table.schema.metadata or {}
    keep = {b"pandas": _plain_pandas_metadata(meta[b"pandas"])} if b"pandas" in meta else {}
    table = table.replace_schema_metadata(keep)
    pq.write_table(table, os.fspath(path))


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` as CSV or Parquet (by the name's ending), atomically, without its index
    and without any metadata of the input (:func:`write_parquet`)."""
    fmt = table_format(path)
    frame = plain_frame(frame)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from anonml._install import install_hint

            raise InputError(
                f"writing Parquet needs pyarrow; run: {install_hint('parquet', ('pyarrow',))}"
            ) from None
        atomic_write(path, lambda p: write_parquet(frame, p))
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
