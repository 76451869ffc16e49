"""IBM ai-privacy-toolkit 0.2.1 (``apt.anonymization.Anonymize``) on the data of
bench_accuracy_guided.py, timed on this machine, for the comparison in BENCHMARKS.md.

apt 0.2.1 imports torch and ART and calls ``OneHotEncoder(sparse=...)``, removed in
scikit-learn 1.4, so it cannot share anonml's environment (scikit-learn >= 1.6). Run it in its own:

    python3 -m venv /tmp/apt && . /tmp/apt/bin/activate
    pip install --no-deps ai-privacy-toolkit==0.2.1
    pip install torch==2.13.0 adversarial-robustness-toolbox packaging tqdm \\
        "scikit-learn==1.3.2" "numpy<2" "pandas==2.1.4" "scipy<1.14"
    python benchmarks/bench_vs_ibm_apt.py

It reads Adult from anonml's bundled file (no anonml import) and writes
benchmarks/results/ibm_apt.json. The output of apt is checked for k-anonymity here too.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "src" / "anonml" / "datasets" / "data" / "adult.csv.gz"
FEATURES = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
            "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]


def main() -> None:
    from apt.anonymization import Anonymize
    from apt.utils.datasets import ArrayDataset

    df = pd.read_csv(ADULT)
    train = df[df["split"] == "train"]
    X = train[FEATURES].reset_index(drop=True)
    y = train["income"].str.startswith(">").astype(int).to_numpy()
    cat = [c for c in FEATURES if not pd.api.types.is_numeric_dtype(X[c])]
    rows = []
    print("| k | seconds | groups (distinct QI tuples) | smallest class |")
    print("|---:|---:|---:|---:|")
    for k in (10, 100, 1000):
        # train_only_QI=False (apt's default): with all 12 columns as QIs the tree sees them all
        anonymizer = Anonymize(k, FEATURES, categorical_features=cat, train_only_QI=False)
        t = time.perf_counter()
        out = anonymizer.anonymize(ArrayDataset(X, y))
        seconds = time.perf_counter() - t
        sizes = pd.DataFrame(out).groupby(FEATURES, dropna=False).size()
        rows.append({"k": k, "seconds": seconds, "classes": int(sizes.size),
                     "smallest_class": int(sizes.min())})
        print(f"| {k} | {seconds:.2f} | {sizes.size} | {sizes.min()} |")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "ibm_apt.json").write_text(json.dumps(
        {"ai_privacy_toolkit": "0.2.1", "numpy": np.__version__, "pandas": pd.__version__,
         "runs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
