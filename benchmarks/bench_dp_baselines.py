"""Test accuracy and fit time of the DP baselines on UCI Adult (published train/test split).

Models: diffprivlib's ε-DP random forest (ε = 1, 10) against scikit-learn's random forest on
the same features; DP-SGD (Opacus) on the (1024, 512, 256) tanh MLP at ε ≈ 2-3, δ = 1e-5,
against the same network trained without noise.

Features are built from **public knowledge only**, so that the DP guarantee covers the whole
pipeline:

* categorical columns are one-hot encoded with the category lists of the UCI codebook
  (``adult.names``; "?" marks a missing value), not lists read from the data; for the forest
  also an "ordinal" variant: each category's position in the codebook list / (K - 1);
* numeric columns get public ranges: age 17-90 (the extraction kept ages > 16; the Current
  Population Survey public file top-codes age at 90), education-num 1-16 (the 16 education
  levels of the codebook), hours-per-week 1-99 (the extraction kept hours > 0; a two-digit
  field). For capital-gain and capital-loss the range 0-99999 is *assumed* from the CPS
  top-code 99,999 (the largest capital-gain in the file) and the five-digit field; both are
  mapped by log1p before scaling;
* each numeric column is then scaled to [0, 1] with its public range (values outside are
  clipped), so the forest's bounds are (0, 1) for every column and a row's L2 norm is at most
  sqrt(#numeric + #categorical) = sqrt(12).

The class labels "<=50K" and ">50K" are public. Hyperparameters are fixed in advance (no
tuning on the test set). Timing is wall-clock on the machine at hand (a shared 2-core VM when
these figures were taken): treat the seconds as indicative.

    python benchmarks/bench_dp_baselines.py [--threads 1] [--epochs 10] [--learning-rate 1e-4]
        [--epsilons-sgd 3 2] [--quick] [--out dp_baselines.json]

Writes benchmarks/results/<out> (default dp_baselines.json) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.datasets import load_adult

CODEBOOK = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
        "?",
    ],
    "marital-status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
        "?",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": [
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
        "?",
    ],
}
RANGES = {  # public (lower, upper), see the module docstring
    "age": (17, 90),
    "education-num": (1, 16),
    "hours-per-week": (1, 99),
    "capital-gain": (0, 99999),
    "capital-loss": (0, 99999),
}
LOG = ("capital-gain", "capital-loss")
CLASSES = ["<=50K", ">50K"]


def encode(frame: pd.DataFrame) -> np.ndarray:
    """Public-knowledge encoding: scaled numerics, then codebook one-hot columns."""
    cols = []
    for c, (lo, hi) in RANGES.items():
        x = frame[c].to_numpy(dtype=np.float64)
        if c in LOG:
            x, lo, hi = np.log1p(x), np.log1p(lo), np.log1p(hi)
        cols.append(np.clip((x - lo) / (hi - lo), 0.0, 1.0)[:, None])
    for c, cats in CODEBOOK.items():
        values = frame[c].to_numpy()
        cols.append((values[:, None] == np.asarray(cats, dtype=object)[None, :]).astype(np.float64))
    return np.hstack(cols)


def encode_ordinal(frame: pd.DataFrame) -> np.ndarray:
    """Scaled numerics, then each categorical as its codebook position / (K - 1), in [0, 1]."""
    codes = [
        (
            frame[c].map({v: i for i, v in enumerate(cats)}).to_numpy(dtype=np.float64)
            / (len(cats) - 1)
        )[:, None]
        for c, cats in CODEBOOK.items()
    ]
    return np.hstack([encode(frame)[:, : len(RANGES)], *codes])


def fit_timed(est, X, y):
    """(fitted estimator, wall-clock seconds of its fit)."""
    t = time.perf_counter()
    est.fit(X, y)
    return est, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--out", default="dp_baselines.json", help="file name in results/")
    parser.add_argument("--epsilons-sgd", type=float, nargs="+", default=[2.0, 3.0])
    parser.add_argument("--quick", action="store_true", help="forest only, no torch models")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    adult = load_adult()
    frame = adult.frame
    for c, cats in CODEBOOK.items():  # the codebook covers every value in the file
        unknown = set(frame[c].unique()) - set(cats)
        assert not unknown, (c, unknown)
    train = (adult.split == "train").to_numpy()
    X, y = encode(frame), frame[adult.target].to_numpy().astype(str)
    X_tr, X_te, y_tr, y_te = X[train], X[~train], y[train], y[~train]
    rows = []

    def record(model: str, setting: str, est, seconds: float, X_test=None, **extra) -> None:
        acc = float(np.mean(est.predict(X_te if X_test is None else X_test) == y_te))
        rows.append(
            {
                "model": model,
                "setting": setting,
                "test_accuracy": acc,
                "fit_seconds": seconds,
                **extra,
            }
        )
        print(f"| {model} | {setting} | {acc:.4f} | {seconds:.1f} | {extra or ''} |", flush=True)

    print(f"majority-class test accuracy {np.mean(y_te == '<=50K'):.4f}")
    print(f"Adult: {X_tr.shape[0]} train rows, {X_te.shape[0]} test rows, {X.shape[1]} features")
    print("| model | setting | test accuracy | fit seconds | extra |")
    print("|---|---|---:|---:|---|")

    from sklearn.ensemble import RandomForestClassifier

    from anonml.dp import DPRandomForestClassifier

    for depth in (5, 10):
        rf, sec = fit_timed(
            RandomForestClassifier(n_estimators=10, max_depth=depth, random_state=args.seed),
            X_tr,
            y_tr,
        )
        record("sklearn RF (non-private)", f"10 trees, depth {depth}", rf, sec)
    X_ord = encode_ordinal(frame)
    for enc, (A_tr, A_te) in (
        ("one-hot", (X_tr, X_te)),
        ("ordinal", (X_ord[train], X_ord[~train])),
    ):
        for eps in (1.0, 10.0):
            for trees, depth in ((10, 5), (50, 8)):
                dp, sec = fit_timed(
                    DPRandomForestClassifier(
                        eps,
                        bounds=(0.0, 1.0),
                        classes=CLASSES,
                        n_estimators=trees,
                        max_depth=depth,
                        random_state=args.seed,
                    ),
                    A_tr,
                    y_tr,
                )
                record(
                    "DP RF (diffprivlib)",
                    f"{enc}, eps={eps:g}, {trees} trees, depth {depth}",
                    dp,
                    sec,
                    epsilon_spent=dp.epsilon_spent_,
                    X_test=A_te,
                )

    if not args.quick:
        import torch

        torch.set_num_threads(args.threads)
        from anonml.dp import DPSGDClassifier, MLPTorchClassifier

        net = {
            "hidden_layer_sizes": (1024, 512, 256),
            "activation": "tanh",
            "learning_rate": args.learning_rate,
            "batch_size": args.batch_size,
            "epochs": args.epochs,
            "random_state": args.seed,
        }
        mlp, sec = fit_timed(MLPTorchClassifier(**net), X_tr, y_tr)
        record(
            f"MLP (1024,512,256) tanh, Adam {args.learning_rate:g}",
            f"non-private, {args.epochs} epochs, batch {args.batch_size}",
            mlp,
            sec,
        )
        for eps in args.epsilons_sgd:
            dp, sec = fit_timed(
                DPSGDClassifier(epsilon=eps, delta=1e-5, classes=CLASSES, max_grad_norm=1.0, **net),
                X_tr,
                y_tr,
            )
            record(
                "DP-SGD MLP (Opacus, PRV)",
                f"eps={eps:g}, delta=1e-5, {args.epochs} epochs, batch {args.batch_size}, C=1",
                dp,
                sec,
                epsilon_spent=dp.epsilon_spent_,
                noise_multiplier=dp.noise_multiplier_,
                steps=dp.n_steps_,
            )

    out = Path(__file__).parent / "results" / args.out
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
