"""Running model-file mutants through the sandbox, and the fuzzer's seed corpus.

:func:`run_mutants` (or :func:`run_mutant` for one file) runs each file through
:func:`~anonml.safemodel.open_model`, a prediction or transform of a small table and the audit's
facts (``facts``, or ``verify_mapping`` for a mapping) in a batch subprocess, so that nothing a
mutant does reaches the caller, and classifies the outcome (:data:`OUTCOMES`):

- ``ok``: loaded and answered with correctly shaped results;
- ``refused``: one line of :class:`~anonml._errors.InputError` (the sandbox worker dying, hanging
  or hitting a limit is fine when the auditor reports it so);
- findings (:data:`FINDINGS`): ``bad_answer`` (a wrongly shaped answer the sandbox let
  through), ``signal`` (the auditor's process died by a signal), ``hang`` (no answer within the
  budget), ``traceback`` (any other exception, or an error of more than one line) and
  ``code_ran`` (a marker module named by a mutant was imported, or a file appeared in the
  watched folder).

:func:`genuine_files` writes the genuine files the mutants are made from, and
:func:`campaign` runs a budget of mutants of them (``benchmarks/fuzz_model_files.py``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from anonml.modelfile._fuzz import MARKER_MODULE, mutants

#: every outcome of a mutant; the last five are findings
OUTCOMES = ("ok", "refused", "bad_answer", "signal", "hang", "traceback", "code_ran")
#: the outcomes that are findings (a hole to fix or explain)
FINDINGS = ("bad_answer", "signal", "hang", "traceback", "code_ran")


def genuine_files(folder: Any, *, n_rows: int = 200, seed: int = 0) -> dict:
    """The fuzzer's seed corpus: small genuine model and mapping files written to ``folder``.

    Returns
    -------
    dict
        ``name -> (path, (X, y))``: a decision tree, a random forest, a histogram gradient
        boosting model and a pipeline (``.skops``); an XGBoost model as ``.json`` and ``.ubj``
        (when XGBoost is installed); saved anonymizers (accuracy-guided, Mondrian, Hilbert,
        R+-tree) as ``.skops``; each with rows of its columns to call it on.
    """
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from anonml import (AccuracyGuidedAnonymizer, HilbertAnonymizer, MondrianAnonymizer,
                        RTreeAnonymizer)
    from anonml.safemodel import SafeDecisionTreeClassifier, save_model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n_rows), "b": rng.integers(0, 5, n_rows).astype(float),
                      "c": rng.choice(["x", "y", "z"], n_rows)})
    y = np.where(X["a"] + rng.normal(size=n_rows) > 0, "yes", "no")
    num = X[["a", "b"]]
    qi = ["a", "b", "c"]
    made = {
        "tree": (SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0), num),
        "forest": (RandomForestClassifier(n_estimators=3, min_samples_leaf=5, random_state=0),
                   num),
        "hgb": (HistGradientBoostingClassifier(max_iter=3, random_state=0), num),
        "pipeline": (Pipeline([("pre", ColumnTransformer([("c", OneHotEncoder(), ["c"]),
                                                          ("n", StandardScaler(), ["a", "b"])])),
                               ("m", RandomForestClassifier(n_estimators=2, max_depth=4,
                                                            random_state=0))]), X),
        "map_accuracy_guided": (AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi,
                                                         tree="hist"), X),
        "map_mondrian": (MondrianAnonymizer(k=10, quasi_identifiers=qi), X),
        "map_hilbert": (HilbertAnonymizer(k=10, quasi_identifiers=qi), X),
        "map_rtree": (RTreeAnonymizer(k=10, quasi_identifiers=qi), X),
    }
    out = {}
    for name, (est, rows) in made.items():
        est.fit(rows, y)
        out[name] = (save_model(est, folder / f"{name}.skops"), (rows, y))
    try:
        import xgboost
    except ImportError:
        return out
    codes = (y == "yes").astype(int)
    model = xgboost.XGBClassifier(n_estimators=3, max_depth=3, random_state=0,
                                  n_jobs=1).fit(num, codes)
    for suffix in (".json", ".ubj"):
        path = folder / f"xgboost{suffix}"
        model.save_model(path)
        out[f"xgboost{suffix.replace('.', '_')}"] = (path, (num, codes))
    return out


@dataclass
class Outcome:
    """What happened to one mutant: ``outcome`` (one of :data:`OUTCOMES`) and ``detail`` (the
    refusal's line, or the finding's evidence)."""

    path: str
    outcome: str
    detail: str
    seconds: float


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _stop(proc: subprocess.Popen) -> None:
    """Kill a batch process and the sandbox workers it started (they run in sessions of
    their own, so they are found by parent id)."""
    for pid in _children(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    proc.kill()
    proc.wait()


def run_mutants(paths: list, rows: Any, *, timeout: float = 120.0,
                workdir: Any = None) -> list[Outcome]:
    """Run model files through the sandbox in a batch subprocess and classify each.

    Each file is opened with :func:`~anonml.safemodel.open_model` (vetting, building and
    validation in a sandbox worker), asked ``predict_proba`` (or ``transform`` for a mapping)
    on ``rows`` and then its audit facts (``facts``, or ``verify_mapping`` for a mapping).
    A mutant that kills or hangs the batch process is recorded (``signal``, ``hang``) and the
    batch goes on with the next one in a new process.

    Parameters
    ----------
    paths : list of path
        The files (suffix ``.skops``, ``.json`` or ``.ubj``).
    rows : tuple (X, y), or a list of them (one per file)
        A small table (a DataFrame) and its labels, with the columns the models were fitted on.
    timeout : float
        Wall-clock seconds per file; the sandbox's own load and call budgets are set a little
        below, so a hang the sandbox stops is a refusal and only one it misses is a ``hang``.
    workdir : path, optional
        Where the batch keeps its rows, marker module and watched folder.

    Returns
    -------
    list of Outcome
        One per file, in order.
    """
    import pandas as pd

    per_path = rows if isinstance(rows, list) else [rows] * len(paths)
    tmp = tempfile.TemporaryDirectory(prefix="anonml-fuzz-", dir=workdir)
    root = Path(tmp.name)
    watch, mods = root / "watch", root / "mods"
    watch.mkdir()
    mods.mkdir()
    hit = watch / "CODE_RAN"
    (mods / f"{MARKER_MODULE}.py").write_text(
        f"import pathlib\npathlib.Path({str(hit)!r}).write_text('imported')\n"
        "class Thing:\n    def __init__(self, *a, **k):\n"
        f"        pathlib.Path({str(hit)!r}).write_text('called')\n")
    tables: dict = {}
    for X, y in per_path:  # our own rows, for our own batch process
        if (id(X), id(y)) not in tables:
            tables[id(X), id(y)] = str(root / f"rows{len(tables)}.pkl")
            pd.DataFrame(X).assign(__y__=np.asarray(y)).to_pickle(tables[id(X), id(y)])
    results: list[Outcome | None] = [None] * len(paths)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(mods)] + [p for p in sys.path if p and os.path.isdir(p)]))
    try:
        while (todo := [i for i, r in enumerate(results) if r is None]):
            job = {"paths": [str(paths[i]) for i in todo],
                   "rows": [tables[id(per_path[i][0]), id(per_path[i][1])] for i in todo],
                   "watch": str(watch), "timeout": max(timeout - 15.0, timeout * 0.8)}
            errors = open(root / f"stderr{todo[0]}.txt", "wb")  # noqa: SIM115 - not a pipe
            proc = subprocess.Popen([sys.executable, "-m", "anonml.safemodel._fuzz_run",
                                     json.dumps(job)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=errors, cwd=root, env=env)
            errors.close()  # (a pipe left undrained could fill and stall the batch)
            started, buf = time.monotonic(), b""
            while True:
                left = started + timeout - time.monotonic()
                ready = select.select([proc.stdout], [], [], max(left, 0))[0]
                if not ready:
                    _stop(proc)
                    proc.stdout.close()
                    i = next(i for i in todo if results[i] is None)
                    results[i] = Outcome(str(paths[i]), "hang", f"no answer in {timeout:.0f} s",
                                         timeout)
                    break
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    code = proc.wait()
                    proc.stdout.close()
                    err = (root / f"stderr{todo[0]}.txt").read_bytes()[-4000:].decode(
                        "utf-8", "replace")
                    i = next(i for i in todo if results[i] is None)
                    kind = "signal" if code < 0 else "traceback"
                    results[i] = Outcome(str(paths[i]), kind, f"batch process exit {code}: "
                                         f"{err.strip()[-800:]}", time.monotonic() - started)
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    msg = json.loads(line)
                    if "start" in msg:
                        started = time.monotonic()
                    else:
                        i = todo[msg["done"]]
                        results[i] = Outcome(str(paths[i]), msg["outcome"], msg["detail"],
                                             msg["seconds"])
                if all(results[i] is not None for i in todo):
                    proc.stdout.close()
                    proc.wait()
                    break
    finally:
        tmp.cleanup()
    return results  # type: ignore[return-value]


def run_mutant(path: Any, rows: Any, *, timeout: float = 120.0, workdir: Any = None
               ) -> Outcome:
    """:func:`run_mutants` of one file."""
    return run_mutants([path], [rows], timeout=timeout, workdir=workdir)[0]


def campaign(folder: Any, n_mutants: int, seed: int = 0, *, timeout: float = 120.0,
             jobs: int = 1, chunk: int = 25, progress: Any = None) -> dict:
    """Mutants of every genuine file (:func:`genuine_files`) run and counted.

    The ``n_mutants`` are shared out over the genuine files in turn (mutant ``i`` of file
    ``name`` is :func:`mutants` of that file with ``seed`` and index ``i``) and run in batches
    of ``chunk`` by :func:`run_mutants`, ``jobs`` batches at a time.

    Returns
    -------
    dict
        ``seed``, ``n_mutants``, ``per_format`` (``format -> outcome -> count``, formats
        ``model.skops``, ``mapping.skops``, ``xgboost.json``, ``xgboost.ubj``),
        ``per_source`` and ``per_edit`` (the same by genuine file and by kind of edit),
        ``refusals`` (the most common first words
        of the refusals), ``late_refusals`` (files that loaded and validated but whose model
        failed when called: one line each, but a check the validation could make) and
        ``findings`` (every one: source, seed, index, edit, outcome,
        detail).
    """
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    folder = Path(folder)
    corpus = genuine_files(folder / "genuine")
    names = list(corpus)
    counts = dict.fromkeys(names, 0)
    for i in range(n_mutants):
        counts[names[i % len(names)]] += 1
    todo = []
    (folder / "mutants").mkdir(exist_ok=True)
    for name, (path, rows) in corpus.items():
        for m in mutants(path.read_bytes(), path.suffix, seed, counts[name], source=name):
            dst = folder / "mutants" / f"{name}-{seed}-{m.index}{m.suffix}"
            dst.write_bytes(m.data)
            todo.append((m, dst, rows))
    batches = [todo[i:i + chunk] for i in range(0, len(todo), chunk)]

    def run(batch: list) -> list:
        out = run_mutants([d for _, d, _ in batch], [r for _, _, r in batch], timeout=timeout)
        if progress is not None:
            progress(len(batch))
        return out

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        outcomes = [o for res in pool.map(run, batches) for o in res]
    fmt = lambda name: ("mapping.skops" if name.startswith("map_") else  # noqa: E731
                        "xgboost" + name[len("xgboost"):].replace("_", ".")
                        if name.startswith("xgboost") else "model.skops")
    per_format: dict = {}
    per_source: dict = {}
    per_edit: dict = {}
    refusals: Counter = Counter()
    findings, late = [], []
    for (m, dst, _), o in zip(todo, outcomes):
        for table, key in ((per_format, fmt(m.source)), (per_source, m.source),
                           (per_edit, _edit_kind(m.edit))):
            table.setdefault(key, dict.fromkeys(OUTCOMES, 0))[o.outcome] += 1
        if o.outcome == "refused":
            words = o.detail.split(": ", 1)[-1].replace(str(dst), "<file>")
            refusals[" ".join(words.split()[:8])] += 1
            if " failed in the sandbox: " in o.detail and "reading the file" not in o.detail:
                late.append({"source": m.source, "seed": m.seed, "index": m.index,
                             "edit": m.edit, "detail": o.detail.replace(str(dst), "<file>")})
        if o.outcome in FINDINGS:
            findings.append({"source": m.source, "seed": m.seed, "index": m.index,
                             "edit": m.edit, "outcome": o.outcome, "detail": o.detail})
    return {"seed": seed, "n_mutants": len(todo), "per_format": per_format,
            "per_source": per_source, "per_edit": dict(sorted(per_edit.items())),
            "refusals": refusals.most_common(25), "late_refusals": late,
            "findings": findings}


def _edit_kind(edit: str) -> str:
    """The kind of a mutant's edit (``schema number``, ``member dtype``, ...; ``several`` when
    it has more than one)."""
    if " + " in edit:
        return "several"
    words = edit.split()
    if words[:1] == ["member"] and len(words) > 2:
        kind = words[2].rstrip(":")
        return "member " + ("values" if kind[:1].isdigit() and "values" in edit else
                            "bit flips" if "bit flips" in edit else kind)
    return " ".join(words[:2]).rstrip(":")


def _one(path: str, X: Any, y: Any, timeout: float) -> tuple[str, str]:  # pragma: no cover
    """Open, call and question one file in the sandbox (in the batch process)."""
    from anonml._errors import InputError
    from anonml.safemodel import open_model

    model = None
    try:
        model = open_model(path, timeout=timeout)
        n = len(X)
        half = n // 2
        if "predict_proba" in model.info["methods"]:
            p = model.predict_proba(X)
            width = p.shape[1] if model.classes_ is None else len(model.classes_)
            if p.ndim != 2 or p.shape != (n, width):
                return "bad_answer", f"predict_proba shape {p.shape}"
        if "transform" in model.info["methods"]:
            t = model.transform(X)
            if len(t) != n:
                return "bad_answer", f"transform gave {len(t)} rows for {n}"
        if model.info["is_anonymizer"]:
            model.verify_mapping(X, where="the fuzzed mapping")
        else:
            model.facts(X[:half], y[:half], X[half:], y[half:])
        return "ok", ""
    except InputError as exc:
        text = str(exc)
        if "\n" in text or not text.strip():
            return "traceback", f"{type(exc).__name__} of {text.count(chr(10)) + 1} lines: " \
                f"{text[:600]!r}"
        return "refused", text[:600]
    except BaseException as exc:  # noqa: BLE001 - anything else is a finding
        import traceback

        return "traceback", "".join(traceback.format_exception(exc))[-1500:]
    finally:
        if model is not None:
            model.close()


def _batch(job: dict) -> int:  # pragma: no cover - runs in the batch process
    import functools

    import pandas as pd

    from anonml.modelfile import _sandbox_process

    # the sandbox's call budget a little under the fuzzer's: a hang it stops is a refusal
    _sandbox_process._Worker.request.__defaults__ = (float(job["timeout"]),)
    tables: dict = {}
    for name in set(job["rows"]):
        table = pd.read_pickle(name)
        tables[name] = table, table.pop("__y__").to_numpy()
    watch = Path(job["watch"])
    out = functools.partial(print, flush=True)
    for i, (path, name) in enumerate(zip(job["paths"], job["rows"])):
        out(json.dumps({"start": i}))
        t0 = time.monotonic()
        outcome, detail = _one(path, *tables[name], float(job["timeout"]))
        ran = [p.name for p in watch.iterdir()]
        if ran or MARKER_MODULE in sys.modules:
            outcome, detail = "code_ran", f"marker: {ran} {MARKER_MODULE in sys.modules}"
        out(json.dumps({"done": i, "outcome": outcome, "detail": detail,
                        "seconds": round(time.monotonic() - t0, 2)}))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_batch(json.loads(sys.argv[1])))
