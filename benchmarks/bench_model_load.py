"""Cost of reading a model file as hostile data, against skops' own load, side by side.

An Adult random forest (100 trees, ``min_samples_leaf=5``, behind a one-hot/scaling
``ColumnTransformer`` in a ``Pipeline``; the shape `anonml audit` sees in practice) and a
300-round XGBoost model (depth 6; when xgboost is installed) are saved once. Then, alternating
in one run so the shared machine's load hits every variant alike:

1. ``skops.io.load(path, trusted=get_untrusted_types(path))``: the peer, no vetting;
2. ``anonml.safemodel.load_model(path, isolate=False)``: vet the schema, build, validate the
   structure, in this process;
3. ``anonml.safemodel.load_model(path)``: the default: the same first in a limited child
   process, then here;
4. for XGBoost: ``XGBClassifier.load_model(path)`` against ``load_model(path, isolate=False)``
   on a ``.ubj`` file (anonml decodes and validates the document first).

Usage::

    python benchmarks/bench_model_load.py --repeats 5

Writes benchmarks/results/model_load.json and prints a Markdown table (median of the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.datasets import load_adult
from anonml.safemodel import load_model, save_model


def _forest(X, y):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    num = [c for c in X.columns if c not in cat]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                             ("num", StandardScaler(), num)])
    return Pipeline([("pre", pre), ("rf", RandomForestClassifier(
        n_estimators=100, min_samples_leaf=5, n_jobs=2, random_state=0))]).fit(X, y)


def _xgb(X, y):
    import xgboost as xgb

    X = X.select_dtypes("number")
    return xgb.XGBClassifier(n_estimators=300, max_depth=6, random_state=0, n_jobs=2).fit(
        X, (np.asarray(y) == np.asarray(y)[0]).astype(int))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import skops.io as sio

    X, _, y, _ = load_adult().train_test_split()
    tmp = Path(tempfile.mkdtemp())
    rf_path = tmp / "rf.skops"
    save_model(_forest(X, y), rf_path)
    variants = {
        "forest: skops.io.load (no vetting)": lambda: sio.load(
            rf_path, trusted=sio.get_untrusted_types(file=rf_path)),
        "forest: load_model(isolate=False)": lambda: load_model(rf_path, isolate=False),
        "forest: load_model() (child first)": lambda: load_model(rf_path),
    }
    sizes = {"forest .skops bytes": rf_path.stat().st_size}
    try:
        import xgboost as xgb

        ubj = tmp / "xgb.ubj"
        _xgb(X, y).save_model(ubj)
        sizes["xgboost .ubj bytes"] = ubj.stat().st_size

        def xgb_plain():
            m = xgb.XGBClassifier()
            m.load_model(ubj)
            return m
        variants["xgboost: XGBClassifier.load_model"] = xgb_plain
        variants["xgboost: load_model(isolate=False)"] = lambda: load_model(ubj, isolate=False)
    except ImportError:
        pass
    runs: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) for k, v in runs.items()}
    base = {"forest": med["forest: skops.io.load (no vetting)"],
            "xgboost": med.get("xgboost: XGBClassifier.load_model")}
    rows = []
    print("| variant | median s | ratio to the plain load |\n|---|---:|---:|")
    for name, t in med.items():
        ratio = t / base[name.split(":")[0]]
        rows.append({"variant": name, "median_s": round(t, 3), "ratio": round(ratio, 2),
                     "runs": [round(r, 3) for r in runs[name]]})
        print(f"| {name} | {t:.3f} | {ratio:.2f} |")
    print(sizes)
    out = Path(__file__).parent / "results" / "model_load.json"
    out.write_text(json.dumps({"rows": rows, "sizes": sizes, "repeats": args.repeats,
                               "cpus": os.cpu_count(), "load": os.getloadavg(),
                               "python": platform.python_version()}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
