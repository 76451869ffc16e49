"""Starting a model-sandbox worker process, and starting one early (a *spare*).

A safe load (:func:`anonml.modelfile.open_model`) reads the model file in a fresh worker
process (:mod:`anonml.modelfile._sandbox_process`). Measured on an Adult random forest
(``benchmarks/bench_safe_load.py``, BENCHMARKS.md "Safe load, session 6"), most of a load is
that interpreter importing NumPy, SciPy, pandas, scikit-learn and skops (about 1.3 s of the
worker's 2 s on a quiet machine); reading, vetting and validating the file is about 0.5 s. The
command's own process imports much the same libraries at the same time it could be waiting.

:func:`prestart` starts the worker for one named model file **before** the caller imports its
own libraries, so the two sets of imports run side by side (on two cores); the next
:func:`~anonml.modelfile.open_model` of that file with the same limits takes it
(:func:`take`). The CLI calls it first thing for ``--model`` / ``--mapping``.

**Isolation is unchanged.** A spare is exactly the process :func:`launch` starts for any load
(same ``python -I -B`` command, minimal environment, private empty folder, same limits,
capabilities dropped and seccomp filter installed before its imports); it has read no model
file and received nothing when it is taken. It is taken at most once, by one file: there is
no pool, and no worker ever serves two files. A spare whose limits do not match the load
(another file size, another ``workdir``), or that died, is stopped and a new worker is started
as before. An unused spare is stopped at exit.

This module imports nothing heavy (``anonml`` and ``anonml.modelfile`` import their parts
lazily), so a command can call :func:`prestart` before pandas or scikit-learn are imported.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

__all__ = ["DEFAULT_CPU_SECONDS", "DEFAULT_MEMORY", "launch", "prestart", "take"]

#: address-space limit of a worker, in bytes (at least this, or 40 times the file's size)
DEFAULT_MEMORY = 6 * 2**30
#: CPU seconds a worker may use over its life
DEFAULT_CPU_SECONDS = 4 * 3600
#: Python threads a worker may run at once
MAX_THREADS = 16

_CHILD = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
          "from anonml.modelfile._sandbox_process import _apply_limits; "
          "_apply_limits(*json.loads(sys.argv[2])); "
          "from anonml.modelfile._sandbox_worker import _worker_main; "
          "sys.exit(_worker_main(sys.argv[3:]))")


def _user_tasks() -> int | None:
    """Processes and threads of this user now (for ``RLIMIT_NPROC``), or None for root, for
    whom the kernel does not enforce that limit."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    if uid == 0:
        return None
    try:
        count = 0
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        count += len(os.listdir(f"/proc/{entry.name}/task"))
                except OSError:
                    continue
        return count
    except OSError:
        return None


class Launched:
    """A started worker process: ``proc`` (its stderr a pipe), the auditor's ends of the
    request (``w``) and answer (``r``) pipes, its private folder ``tmp``, and the
    ``time.monotonic()`` at which it was started."""

    def __init__(self, proc: Any, w: int, r: int, tmp: Any, started: float) -> None:
        self.proc, self.w, self.r, self.tmp, self.started = proc, w, r, tmp, started

    def discard(self) -> None:
        """Stop the process (its whole session) and remove its folder."""
        try:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    self.proc.kill()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - best effort
            pass
        self.close_pipes()
        self.tmp.cleanup()

    def close_pipes(self) -> None:
        """Close this process's ends of the worker's pipes (an fd already closed is skipped)."""
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def launch(memory: int, cpu_seconds: int = DEFAULT_CPU_SECONDS,
           workdir: str | None = None) -> Launched:
    """Start one worker process (``python -I -B``, a minimal environment, an empty private
    folder as its home, current and temporary folder, the private pipes): the only way a
    sandbox worker is started."""
    import time

    from anonml.modelfile._probe import _child_path

    tmp = tempfile.TemporaryDirectory(prefix="anonml-sandbox-", dir=workdir)
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMEXPR_NUM_THREADS="1", VECLIB_MAXIMUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1", HOME=tmp.name, TMPDIR=tmp.name,
               JOBLIB_MULTIPROCESSING="0", LOKY_MAX_CPU_COUNT="1")
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # see the machine notes
        if key in os.environ:
            env[key] = os.environ[key]
    tasks = _user_tasks()
    nproc = None if tasks is None else tasks + 4 * MAX_THREADS
    argv = [sys.executable, "-I", "-B", "-c", _CHILD, json.dumps(_child_path()),
            json.dumps([int(memory), int(cpu_seconds), nproc]), str(req_r), str(rep_w)]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, pass_fds=(req_r, rep_w), cwd=tmp.name, env=env,
            start_new_session=True)
    except BaseException:
        os.close(req_w)
        os.close(rep_r)
        tmp.cleanup()
        raise
    finally:
        os.close(req_r)
        os.close(rep_w)
    return Launched(proc, req_w, rep_r, tmp, started)


#: the one spare: ``(key, Launched, pid)`` (``pid``: the process that started it), or empty
_SPARE: list = []
_LOCK = threading.Lock()


def _key(memory: int, cpu_seconds: int, workdir: Any) -> tuple:
    return (int(memory), int(cpu_seconds),
            None if workdir is None else os.path.abspath(os.fspath(workdir)))


def prestart(path: Any, *, memory: int | None = None, workdir: Any = None) -> bool:
    """Start the sandbox worker for the model file ``path`` now, for the next
    :func:`~anonml.modelfile.open_model` of it (with the same ``memory`` and ``workdir``).

    Call it first thing, before the caller imports pandas or scikit-learn: the worker's
    imports then run beside the caller's. Nothing is read from the file (only its size, which
    sets the default memory limit as :func:`~anonml.modelfile.open_model` does). A spare
    already waiting is stopped first: there is at most one, used by at most one load.

    Returns
    -------
    bool
        True when a worker was started; False when ``path`` is not a regular file (the load
        itself will then say why) or the worker could not be started.
    """
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return False
    import stat

    if not stat.S_ISREG(st.st_mode):
        return False
    if memory is None:
        memory = max(DEFAULT_MEMORY, 40 * st.st_size)
    key = _key(memory, DEFAULT_CPU_SECONDS, workdir)
    _discard()
    try:
        launched = launch(int(memory), DEFAULT_CPU_SECONDS,
                          None if workdir is None else os.fspath(workdir))
    except (OSError, ValueError):
        return False
    with _LOCK:  # one spare: a start that raced this one is replaced, never kept beside it
        older = list(_SPARE)
        _SPARE[:] = [(key, launched, os.getpid())]
    _stop(older)
    return True


def take(memory: int, cpu_seconds: int, workdir: Any) -> Launched | None:
    """The spare started by :func:`prestart` if it was started with these limits and is still
    running (it is then no longer the spare), else None; a spare that does not match is
    stopped."""
    with _LOCK:
        spare = _SPARE.pop() if _SPARE else None
    if spare is None:
        return None
    key, launched, owner = spare
    if owner != os.getpid():  # a forked copy of the starter: the spare is not this process's
        _forget([spare])
        return None
    if key != _key(memory, cpu_seconds, workdir) or launched.proc.poll() is not None:
        launched.discard()
        return None
    return launched


def _stop(spares: list) -> None:
    """Stop the spares this process started; forget (never stop) those of another."""
    for spare in spares:
        if spare[2] == os.getpid():
            spare[1].discard()
        else:
            _forget([spare])


def _forget(spares: list) -> None:
    """Close this process's copies of the pipes to spares another process started (inherited
    by a fork), leaving the processes and their folders to their owner."""
    for _, launched, _owner in spares:
        launched.close_pipes()
        # the folder is the owner's: collecting this copy must not remove it
        finalizer = getattr(launched.tmp, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()


def _discard() -> None:
    with _LOCK:
        spares = list(_SPARE)
        _SPARE.clear()
    _stop(spares)


def _after_fork_in_child() -> None:
    """A forked child (multiprocessing's fork, a process pool forked from the command) is not
    given the spare: it forgets it, and a lock held by another thread at the fork is new."""
    global _LOCK
    _LOCK = threading.Lock()
    spares = list(_SPARE)
    _SPARE.clear()
    _forget(spares)


atexit.register(_discard)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
