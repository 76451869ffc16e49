"""Helper of bench_accuracy_vs_ibm.py, run by the Python of IBM's ai-privacy-toolkit venv.

It imports no anonml: it reads the training table (CSV) and the NN's predictions on it, one file
per seed, and writes apt's anonymized training table for every (seed, QI set, k) it is given.

    /tmp/apt/bin/python benchmarks/_apt_anonymize.py WORKDIR SEED QI_JSON KS

WORKDIR holds train.csv and pred_<seed>.csv; QI_JSON maps QI-set name -> list of columns; KS is
comma-separated. Output: WORKDIR/apt_<seed>_<qi>_<k>.csv, written to a temporary name and renamed,
and WORKDIR/apt_<seed>_times.json with the seconds of each call.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd


def main() -> None:
    from apt.anonymization import Anonymize
    from apt.utils.datasets import ArrayDataset

    work, seed, qi_sets, ks = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    X = pd.read_csv(work / "train.csv")
    y = pd.read_csv(work / f"pred_{seed}.csv")["pred"].to_numpy()
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    times = {}
    for name, qi in qi_sets.items():
        for k in (int(v) for v in ks.split(",")):
            # apt's defaults (train_only_QI=False: the tree reads every feature)
            anonymizer = Anonymize(k, qi, categorical_features=cat)
            t = time.perf_counter()
            out = pd.DataFrame(anonymizer.anonymize(ArrayDataset(X, y)), columns=X.columns)
            times[f"{name}_{k}"] = time.perf_counter() - t
            dest = work / f"apt_{seed}_{name}_{k}.csv"
            out.to_csv(str(dest) + ".tmp", index=False)
            os.replace(str(dest) + ".tmp", dest)
    (work / f"apt_{seed}_times.json").write_text(json.dumps(times))


if __name__ == "__main__":
    main()
