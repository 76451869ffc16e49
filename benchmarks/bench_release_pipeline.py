"""The released model (issue 13, section 3): anonymize_model -> .pipeline -> save_model ->
load_model (vetted, isolated child) -> verify_mapping, on all of Adult (32,561 training rows,
12 QI, random forest, accuracy-guided k in {100, 1000}).

Prints and records (benchmarks/results/release_pipeline.json): file size, seconds to save, to
load (isolated reader + this process), to re-verify the mapping, and the pipeline's test
accuracy against the retrained model on raw rows.

    PYTHONPATH=src python benchmarks/bench_release_pipeline.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from anonml import anonymize_model
from anonml.datasets import load_adult
from anonml.safemodel import load_model, save_model, verify_mapping


def main() -> None:
    d = load_adult()
    Xtr, Xte, ytr, yte = d.train_test_split()
    cat = [c for c in Xtr.columns if not pd.api.types.is_numeric_dtype(Xtr[c])]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat),
                                remainder="passthrough"),
        RandomForestClassifier(n_estimators=100, min_samples_leaf=5, n_jobs=2, random_state=0))
    rows = []
    for k in (100, 1000):
        r = anonymize_model(model, Xtr, k, list(d.qi_sets["12"]), y=ytr, X_test=Xte, y_test=yte,
                            tree="exact")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "released.skops"
            t0 = time.perf_counter()
            save_model(r.pipeline, path)
            t1 = time.perf_counter()
            back = load_model(path, probe_rows=Xte.iloc[:1000])
            t2 = time.perf_counter()
            facts = verify_mapping(back, Xte)
            t3 = time.perf_counter()
            size = path.stat().st_size
        row = {"k": k, "n_groups": facts["n_groups"], "smallest_group": facts["smallest_group"],
               "file_mb": round(size / 2**20, 2), "seconds_save": round(t1 - t0, 2),
               "seconds_load_isolated": round(t2 - t1, 2),
               "seconds_verify_mapping": round(t3 - t2, 2),
               "accuracy_before": r.summary["accuracy_before"],
               "accuracy_raw_rows": r.summary["accuracy_after"],
               "accuracy_pipeline": float(np.mean(back.predict(Xte) == yte.to_numpy()))}
        print(row, flush=True)
        rows.append(row)
    out = Path(__file__).parent / "results" / "release_pipeline.json"
    out.write_text(json.dumps({"dataset": "adult", "qi": 12, "model": "RandomForest(100, "
                               "min_samples_leaf=5)", "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
