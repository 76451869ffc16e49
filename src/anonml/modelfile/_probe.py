"""Reading an untrusted model file first in a child process, with time and memory limits.

:func:`anonml.safemodel.load_model` vets a file as data and validates the model's structure
before anything calls it. Parsers that anonml does not own still read the bytes: skops and numpy
(the zip and ``.npy`` members), scikit-learn's ``__setstate__`` methods, and XGBoost's C++ model
reader. A bug in any of them that a crafted file can reach (a crash, a hang, a huge allocation)
would otherwise take the auditor down with it. So the whole read (vet, build, validate) runs
once in a child process first, under an address-space limit (``RLIMIT_AS``), a CPU-time limit
and a wall-clock timeout, with core dumps off. Only if the child read the file cleanly does the
auditor's own process read it again. A crash, a hang or an out-of-memory child becomes one
line, and nothing of the file reaches the parent.

The child is ``python -I -c`` in an empty private folder, with a minimal environment and the
parent's import path (without the current folder); it runs :func:`_main`, which exits 0 when
the file loads, validates and (on the given or synthetic rows) can be called, and exits 1 with
``anonml-probe-error: <one line>`` on stdout when anonml refuses it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from anonml._errors import InputError

_TAG = "anonml-probe-error: "
#: default wall-clock limit of the child, in seconds
DEFAULT_TIMEOUT = 300.0
#: default address-space limit of the child, in bytes (at least this, or 40x the file)
DEFAULT_MEMORY = 6 * 2**30


def _limits(memory: int, cpu_seconds: int):  # pragma: no cover - runs in the child
    def apply() -> None:
        try:
            import resource
        except ImportError:
            return
        for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_seconds),
                             (resource.RLIMIT_CORE, 0)):
            try:
                soft, hard = resource.getrlimit(limit)
                cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(limit, (cap, hard))
            except (ValueError, OSError):
                pass
    return apply


def sample_rows(*frames: Any, n: int = 1000, seed: int = 0) -> Any:
    """Up to ``n`` rows of each table (first rows and a random spread), stacked: what the
    isolated reader predicts on before the caller's process calls the model."""
    import numpy as np
    import pandas as pd

    parts = []
    for frame in frames:
        if frame is None or len(frame) == 0:
            continue
        m = len(frame)
        take = np.unique(np.concatenate([np.arange(min(m, n // 2)), np.random.default_rng(
            seed).choice(m, size=min(m, n - n // 2), replace=False)]))
        parts.append(frame.iloc[take] if isinstance(frame, pd.DataFrame) else
                     pd.DataFrame(np.asarray(frame)[take]))
    return pd.concat(parts, ignore_index=True) if parts else None


_CHILD = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
          "from anonml.modelfile._probe import _main; sys.exit(_main(sys.argv[2:]))")


def _child_path() -> list[str]:
    """The parent's import path for the child, absolute, without the current folder (the
    child runs with ``-I`` in an empty folder: nothing beside the model file is importable)."""
    here = os.path.realpath(os.getcwd())
    out = []
    for entry in sys.path:
        if not entry:
            continue
        full = os.path.abspath(entry)
        # compared resolved: the current folder named through a symlink (or ``dir/.``) is the
        # current folder too, and a downloaded model's folder may hold a ``skops.py``
        if os.path.realpath(full) != here and full not in out:
            out.append(full)
    return out


def probe_model_file(path: Path, *, rows: Any = None, timeout: float | None = None,
                     memory: int | None = None, workdir: Path | None = None) -> None:
    """Read ``path`` as :func:`~anonml.safemodel.load_model` would, in a limited child process.

    Parameters
    ----------
    path : Path
        A ``.skops``, ``.json`` or ``.ubj`` model file (never a pickle: those run code by
        design and are only read with ``trust=True``, in the caller's process). Give a private
        copy (``load_model`` does), so the child and the caller read the same bytes.
    rows : DataFrame or array, optional
        Rows to predict on in the child (a sample of the data the caller will use): a model
        that crashes or hangs on them is refused before the caller calls it. An exception in
        that prediction is not a refusal here; the caller meets it and reports it.
    timeout : float, optional
        Wall-clock seconds (default :data:`DEFAULT_TIMEOUT`).
    memory : int, optional
        Address-space bytes (default the larger of :data:`DEFAULT_MEMORY` and 40 times the
        file's size).
    workdir : Path, optional
        A private folder to run the child in (default: a new temporary one).

    Raises
    ------
    InputError
        The child refused the file (its one line), crashed (the signal is named), ran out of
        time or memory.
    """
    import tempfile

    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    if memory is None:
        memory = max(DEFAULT_MEMORY, 40 * path.stat().st_size)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    name = str(path)
    with tempfile.TemporaryDirectory(prefix="anonml-probe-", dir=workdir) as tmp:
        argv = [sys.executable, "-I", "-c", _CHILD, json.dumps(_child_path()),
                str(Path(path).resolve())]
        if rows is not None:
            import pandas as pd

            rows_path = Path(tmp) / "rows.pkl"  # our own data, in our own private folder
            (rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)).to_pickle(rows_path)
            argv.append(str(rows_path))
        env["HOME"] = tmp
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env,
                cwd=tmp,
                preexec_fn=_limits(int(memory), int(timeout) + 5) if os.name == "posix" else None)
        except subprocess.TimeoutExpired:
            raise InputError(f"model file {name!r} did not finish loading in {timeout:.0f} s in "
                             "an isolated reader; it is malformed or hostile, so anonml will "
                             "not read it") from None
    if proc.returncode == 0:
        return
    out = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    tagged = [line[len(_TAG):] for line in out if line.startswith(_TAG)]
    if proc.returncode == 1 and tagged:
        raise InputError(tagged[-1])
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = f"signal {-proc.returncode}"
        raise InputError(f"model file {name!r} crashed the isolated reader ({sig}); it is "
                         "malformed or hostile, so anonml will not read it in this process")
    err = proc.stderr.decode("utf-8", "replace")
    why = "it ran out of memory" if "MemoryError" in err or "bad_alloc" in err else \
        f"exit status {proc.returncode}"
    raise InputError(f"model file {name!r} could not be read in the isolated reader ({why}); "
                     "it is malformed, hostile, or larger than the reader's memory limit")


def _main(argv: list[str]) -> int:  # pragma: no cover - runs in the child
    from anonml.modelfile._read import _read_and_validate

    try:
        model = _read_and_validate(Path(argv[0]))
    except InputError as exc:
        print(_TAG + str(exc).replace("\n", " "), flush=True)
        return 1
    import numpy as np
    import pandas as pd

    if len(argv) > 1:
        rows = pd.read_pickle(argv[1])
    else:  # no sample given: numeric rows of the model's width, where it has one
        nf = getattr(model, "n_features_in_", None)
        if not isinstance(nf, (int, np.integer)) or not 0 < nf <= 100_000:
            return 0
        rows = np.random.default_rng(0).normal(size=(64, int(nf))) * 10.0 ** np.arange(
            -2, 6)[np.arange(64) % 8, None]
        names = getattr(model, "feature_names_in_", None)
        if names is not None and len(names) == nf:
            rows = pd.DataFrame(rows, columns=list(names))
    call = getattr(model, "predict_proba", None) or getattr(model, "predict", None) or \
        getattr(model, "transform", None)  # a classifier, or a saved anonymizer (a mapping)
    if call is None:
        return 0
    try:
        call(rows)
    except (MemoryError, RecursionError) as exc:
        print(_TAG + f"model file {argv[0]!r} ran out of memory or recursion depth "
              f"({type(exc).__name__}) when called on {len(rows):,} rows; it is malformed "
              "or hostile, so anonml will not call it", flush=True)
        return 1
    except Exception:  # noqa: BLE001 - an error, not a crash: the caller reports it
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
