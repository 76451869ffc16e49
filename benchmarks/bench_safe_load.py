"""How long a safe load takes (issue 23): ``open_model`` on an Adult random forest, then one
``predict``, with this checkout's code and with another checkout's side by side in one run.

The model is the one the issue timed: an Adult pipeline (one-hot encoding of the categorical
columns, the numeric ones passed through) and a random forest of 100 trees
(``min_samples_leaf=5``), fitted on Adult's 32,561 training rows and saved once with
``anonml.safemodel.save_model``. Each measurement is a **fresh interpreter** (as every
``anonml`` command is), run with ``PYTHONPATH`` set to one checkout's ``src``; the variants
alternate (A B B A ...) so that the shared machine's load hits them alike. Each run reports:

* ``import``: ``from anonml.safemodel import open_model`` in the caller;
* ``open + predict``: ``open_model(path)`` (copy and hash the file, start the sandbox worker,
  which imports its libraries, installs its guards, vets, builds and validates the model) and
  ``predict`` on 300 test rows;
* ``process``: the whole fresh process, start to exit;
* ``transform``: the issue's other figure, the whole ``anonml transform`` command on 300 test
  rows with a mapping (an accuracy-guided anonymizer, k=10 on five quasi-identifiers, fitted on
  the training rows and saved with ``save_model``), which opens the mapping in the sandbox.
* ``700-row forest``: ``open`` + ``predict`` of the same pipeline fitted on Adult's first
  700 training rows (the issue's other file), cold and early;
* ``early``: the same fresh process, with the worker started first thing
  (``anonml.modelfile._sandbox_start.prestart(path)``, as the CLI does for ``--model`` /
  ``--mapping``), then the imports, then ``open_model`` + ``predict`` (a checkout without
  ``prestart`` just runs as above).

Where a checkout records them (``SandboxedModel.load_times``), each load is broken down into
its steps (medians): the auditor's own work before the copy (``pre``), copying and hashing the
file (``copy``), the worker's interpreter start, first import line and limits
(``w.imports``), its libraries (:func:`~anonml.modelfile._worker_imports.preload`) and guards
(``w.guards``; with ``anonml.modelfile`` the libraries are imported here, after the limits and
the seccomp filter, no longer in the first line), waiting for the request (``w.idle``: an
early worker that is ready before the load), reading, vetting, building and validating the file
(``w.read``), describing the model (``w.info``), the answer's trip back (``ipc``), and the
part of the load spent waiting for the worker's start (``wait``: from the copy's end to the
worker being ready, when it was not yet). ``--importtime`` adds the worker's imports by
package (``python -X importtime``, one run).

Usage::

    PYTHONPATH=src python benchmarks/bench_safe_load.py --baseline ../anonml-main/src --repeats 5

Prints Markdown tables (medians and bests), writes ``benchmarks/results/safe_load.json``, and
with ``--record`` appends the tables and the load average to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_RUN = r"""
import json, sys, time
t0 = time.perf_counter()
if sys.argv[3] == "early":
    try:
        from anonml.modelfile._sandbox_start import prestart
    except ImportError:  # a checkout without it
        pass
    else:
        prestart(sys.argv[1])
import pandas as pd
from anonml.safemodel import open_model
t1 = time.perf_counter()
called = time.monotonic()
model = open_model(sys.argv[1])
loaded = time.perf_counter()
rows = pd.read_pickle(sys.argv[2])
pred = model.predict(rows)
t2 = time.perf_counter()
times = dict(getattr(model, "load_times", {}), called=called)
model.close()
print(json.dumps({"import": t1 - t0, "open": loaded - t1, "open_predict": t2 - t1,
                  "n": int(len(pred)), "first": str(pred[0]), "times": times}))
"""

#: the steps of a load: (name, from, to) over ``SandboxedModel.load_times``
_STEPS = [("pre", "called", "opened"), ("copy", "opened", "copied"),
          ("w.imports", "started", "worker_imported"),
          ("w.guards", "worker_imported", "worker_guarded"),
          ("w.idle", "worker_guarded", "worker_request"),
          ("w.read", "worker_request", "worker_read"),
          ("w.info", "worker_read", "worker_described"),
          ("ipc", "worker_described", "answered")]


def _steps(times: dict) -> dict:
    """A load's steps in seconds (see the module docstring); empty for a checkout that does
    not record them."""
    if "worker_read" not in times:
        return {}
    out = {name: max(0.0, times[b] - times[a]) for name, a, b in _STEPS}
    out["wait"] = max(0.0, times["worker_guarded"] - max(times["copied"], times["started"]))
    return out


def _build(tmp: Path) -> tuple[Path, Path, list]:
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from anonml.datasets import load_adult
    from anonml.safemodel import save_model

    X, X_test, y, _ = load_adult().train_test_split()
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        RandomForestClassifier(n_estimators=100, min_samples_leaf=5, n_jobs=2,
                               random_state=0)).fit(X, y)
    path, rows = tmp / "adult_rf.skops", tmp / "rows.pkl"
    save_model(model, path)
    small = make_pipeline(  # the other file: a forest fitted on 700 rows
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        RandomForestClassifier(n_estimators=100, min_samples_leaf=5, n_jobs=2,
                               random_state=0)).fit(X.iloc[:700], y.iloc[:700])
    save_model(small, tmp / "rf_700.skops")
    X_test.iloc[:300].to_pickle(rows)
    X_test.iloc[:300].to_csv(tmp / "rows.csv", index=False)
    from anonml import AccuracyGuidedAnonymizer

    save_model(AccuracyGuidedAnonymizer(k=10, quasi_identifiers=[
        "age", "sex", "race", "education-num", "workclass"]).fit(X, y), tmp / "mapping.skops")
    return path, rows, [str(v) for v in model.predict(X_test.iloc[:300])]


def _run(src: str, path: Path, rows: Path, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _RUN, str(path), str(rows), mode], env=env,
                         capture_output=True, text=True, check=False)
    total = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"the run with PYTHONPATH={src} failed: "
                         f"{out.stderr.strip().splitlines()[-1:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process"] = total
    res["steps"] = _steps(res.pop("times"))
    return res


def _once(src: str, path: Path, rows: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    res = _run(src, path, rows, "cold")
    early = _run(src, path, rows, "early")
    res.update({f"early_{k}": early[k] for k in ("import", "open", "open_predict", "process")})
    res["early_steps"] = early["steps"]
    res["early_first"] = early["first"]
    tmp = path.parent
    for mode in ("cold", "early"):  # the forest fitted on 700 rows
        small = _run(src, tmp / "rf_700.skops", rows, mode)
        if small["n"] != 300:
            raise SystemExit(f"the 700-row forest answered {small['n']} rows for 300")
        res[f"small_{mode}_open_predict"] = small["open_predict"]
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "anonml", "transform", "--mapping",
                          str(tmp / "mapping.skops"), str(tmp / "rows.csv"), "-o",
                          str(tmp / "mapped.csv"), "-q"], env=env, capture_output=True,
                         text=True, check=False)
    res["transform"] = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"anonml transform with PYTHONPATH={src} failed: "
                         f"{out.stderr.strip().splitlines()[-1:]}")
    return res


def _commit(src: str) -> str:
    out = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip() or "?"


def _importtime(src: str) -> dict:
    """Seconds of the worker's imports by top-level package (``python -X importtime``, the
    worker's own import line and :func:`~anonml.modelfile._worker_imports.preload`)."""
    code = ("import anonml.modelfile._sandbox_process, anonml.modelfile._sandbox_worker; "
            "from anonml.modelfile._worker_imports import preload; preload()")
    out = subprocess.run([sys.executable, "-X", "importtime", "-I", "-B", "-c",
                          f"import sys, json; sys.path[:0] = json.loads(sys.argv[1]); {code}",
                          json.dumps([os.path.abspath(src)])], capture_output=True, text=True,
                         check=False)
    by: dict = {}
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[0].startswith("import time:"):
            continue
        try:
            own = int(parts[0].split(":")[1])
        except ValueError:
            continue
        top = parts[2].strip().split(".")[0]
        by[top] = by.get(top, 0.0) + own / 1e6
    return dict(sorted(by.items(), key=lambda kv: -kv[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=str(ROOT.parent / "anonml-main" / "src"),
                    help="another checkout's src folder to compare with")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--record", action="store_true", help="append the table to BENCHMARKS.md")
    ap.add_argument("--files", metavar="DIR",
                    help="keep the model, mapping and rows in DIR and reuse them if there")
    ap.add_argument("--importtime", action="store_true",
                    help="also the worker's imports by package (python -X importtime, one run)")
    args = ap.parse_args()
    ours = str(ROOT / "src")
    variants = {f"baseline ({_commit(args.baseline)})": args.baseline,
                f"this checkout ({_commit(ours)})": ours}
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    if args.files:  # the files of an earlier run, kept to save the fit
        tmp = Path(args.files)
        tmp.mkdir(parents=True, exist_ok=True)
        if not (tmp / "expected.json").exists():
            path, rows, expected = _build(tmp)
            (tmp / "expected.json").write_text(json.dumps(expected))
        path, rows = tmp / "adult_rf.skops", tmp / "rows.pkl"
        expected = json.loads((tmp / "expected.json").read_text())
    else:
        tmp = Path(tempfile.mkdtemp(prefix="bench-safe-load-"))
        path, rows, expected = _build(tmp)
    runs: dict = {name: [] for name in variants}
    names = list(variants)
    for i in range(args.repeats):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            res = _once(variants[name], path, rows)
            if res["n"] != 300 or expected[0] != res["first"] or \
                    expected[0] != res["early_first"]:
                raise SystemExit(f"{name}: the sandboxed prediction differs from the model's")
            res["load"] = Path("/proc/loadavg").read_text().split()[0]
            runs[name].append(res)
            print(f"run {i + 1} {name} (load {res['load']}): import {res['import']:.2f} s, "
                  f"open + predict {res['open_predict']:.2f} s (early worker "
                  f"{res['early_open_predict']:.2f} s), process {res['process']:.2f} s "
                  f"({res['early_process']:.2f} s), 700-row forest "
                  f"{res['small_cold_open_predict']:.2f} s "
                  f"({res['small_early_open_predict']:.2f} s), transform "
                  f"{res['transform']:.2f} s",
                  flush=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    keys = ("import", "open_predict", "early_open_predict", "process", "early_process",
            "small_cold_open_predict", "small_early_open_predict", "transform")
    lines = [("| code | import (s) | open_model + predict (s) | the same, worker started "
              "early (s) | whole process (s) | the same, early (s) | 700-row forest: open + "
              "predict (s) | the same, early (s) | `anonml transform`, 300 rows (s) | runs |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    step_lines = ["| code | load | " + " | ".join(n for n, _, _ in _STEPS) + " | wait |",
                  "|---|---|" + "---:|" * (len(_STEPS) + 1)]
    summary = {}
    for name, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in keys}
        best = {k: min(r[k] for r in rs) for k in keys}
        summary[name] = {"median": med, "best": best, "runs": rs}
        lines.append(f"| {name} | " + " | ".join(f"{med[k]:.2f} ({best[k]:.2f})"
                                                 for k in keys) + f" | {len(rs)} |")
        for label, field in (("cold", "steps"), ("early", "early_steps")):
            got = [r[field] for r in rs if r[field]]
            if got:
                cells = [statistics.median(g[n] for g in got) for n, _, _ in _STEPS]
                cells.append(statistics.median(g["wait"] for g in got))
                step_lines.append(f"| {name} | {label} | " + " | ".join(f"{c:.2f}"
                                                                     for c in cells) + " |")
    table = "\n".join(lines)
    steps = "\n".join(step_lines)
    load = f"load average {' '.join(load_before)} before, {' '.join(load_after)} after"
    print()
    print("medians (best in brackets)")
    print(table)
    print()
    print("the load's steps, medians (s)")
    print(steps)
    imports = {}
    if args.importtime:
        imports = _importtime(ours)
        print("\nthe worker's imports by package (s, one run): " + ", ".join(
            f"{k} {v:.2f}" for k, v in list(imports.items())[:10]))
    print(f"\n{load}; file {path.stat().st_size:,} bytes")
    out = HERE / "results" / "safe_load.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"file_bytes": path.stat().st_size, "load_before": load_before,
                               "load_after": load_after, "variants": summary,
                               "worker_imports": imports}, indent=1))
    if args.record:
        with open(ROOT / "BENCHMARKS.md", "a", encoding="utf-8") as fh:
            fh.write(f"\n### Safe load run, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                     f" ({load}; {args.repeats} runs each, medians, best in brackets)\n\n"
                     f"{table}\n\nThe load's steps (medians, s):\n\n{steps}\n")


if __name__ == "__main__":
    main()
