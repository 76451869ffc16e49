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

Usage::

    PYTHONPATH=src python benchmarks/bench_safe_load.py --baseline ../anonml-main/src --repeats 5

Prints a Markdown table (medians), writes ``benchmarks/results/safe_load.json``, and with
``--record`` appends the table and the load average to BENCHMARKS.md.
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
import pandas as pd
from anonml.safemodel import open_model
t1 = time.perf_counter()
model = open_model(sys.argv[1])
rows = pd.read_pickle(sys.argv[2])
pred = model.predict(rows)
t2 = time.perf_counter()
model.close()
print(json.dumps({"import": t1 - t0, "open_predict": t2 - t1, "n": int(len(pred)),
                  "first": str(pred[0])}))
"""


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
    X_test.iloc[:300].to_pickle(rows)
    X_test.iloc[:300].to_csv(tmp / "rows.csv", index=False)
    from anonml import AccuracyGuidedAnonymizer

    save_model(AccuracyGuidedAnonymizer(k=10, quasi_identifiers=[
        "age", "sex", "race", "education-num", "workclass"]).fit(X, y), tmp / "mapping.skops")
    return path, rows, [str(v) for v in model.predict(X_test.iloc[:300])]


def _once(src: str, path: Path, rows: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _RUN, str(path), str(rows)], env=env,
                         capture_output=True, text=True, check=False)
    total = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"the run with PYTHONPATH={src} failed: "
                         f"{out.stderr.strip().splitlines()[-1:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process"] = total
    tmp = path.parent
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=str(ROOT.parent / "anonml-main" / "src"),
                    help="another checkout's src folder to compare with")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--record", action="store_true", help="append the table to BENCHMARKS.md")
    args = ap.parse_args()
    ours = str(ROOT / "src")
    variants = {f"baseline ({args.baseline}, {_commit(args.baseline)})": args.baseline,
                f"this checkout ({_commit(ours)})": ours}
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    tmp = Path(tempfile.mkdtemp(prefix="bench-safe-load-"))
    path, rows, expected = _build(tmp)
    runs: dict = {name: [] for name in variants}
    names = list(variants)
    for i in range(args.repeats):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            res = _once(variants[name], path, rows)
            if res["n"] != 300 or res["first"] != expected[0]:
                raise SystemExit(f"{name}: the sandboxed prediction differs from the model's")
            runs[name].append(res)
            print(f"run {i + 1} {name}: import {res['import']:.2f} s, open + predict "
                  f"{res['open_predict']:.2f} s, process {res['process']:.2f} s, transform "
                  f"{res['transform']:.2f} s", flush=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    lines = ["| code | import (s) | open_model + predict (s) | whole process (s) | "
             "`anonml transform`, 300 rows (s) | runs |", "|---|---:|---:|---:|---:|---:|"]
    summary = {}
    for name, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("import", "open_predict",
                                                                 "process", "transform")}
        summary[name] = {"median": med, "runs": rs}
        lines.append(f"| {name} | {med['import']:.2f} | {med['open_predict']:.2f} | "
                     f"{med['process']:.2f} | {med['transform']:.2f} | {len(rs)} |")
    table = "\n".join(lines)
    load = f"load average {' '.join(load_before)} before, {' '.join(load_after)} after"
    print()
    print(table)
    print(f"\n{load}; file {path.stat().st_size:,} bytes")
    out = HERE / "results" / "safe_load.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"file_bytes": path.stat().st_size, "load_before": load_before,
                               "load_after": load_after, "variants": summary}, indent=1))
    if args.record:
        with open(ROOT / "BENCHMARKS.md", "a", encoding="utf-8") as fh:
            fh.write(f"\n### Safe load run, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                     f" ({load}; {args.repeats} runs each, medians)\n\n{table}\n")


if __name__ == "__main__":
    main()
