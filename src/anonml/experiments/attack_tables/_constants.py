"""The settings and the paper's figures the tables compare with. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

import math

import pandas as pd

DATASETS = ("adult", "loan")
MODELS = ("rf", "nn")
ATTACKS = ("blackbox", "lira", "worstcase")
_ALL_ATTACKS = ("blackbox", "lira", "worstcase", "rmia")

#: The paper's AG method (as ``paper_accuracy``'s ``paper`` variant).
AG_PAPER = {"representative": "majority_medoid", "tree": "exact", "refine": "none"}

#: Public (lower, upper, log-scale) ranges of the numeric columns for the DP models; see the
#: module docstring for where they come from.
PUBLIC_RANGES: dict[str, dict[str, tuple[float, float, bool]]] = {
    "adult": {
        "age": (17, 90, False),
        "education-num": (1, 16, False),
        "capital-gain": (0, 99_999, True),
        "capital-loss": (0, 5_000, True),
        "hours-per-week": (1, 99, False),
    },
    "loan": {
        "loan_amnt": (0, 40_000, True),
        "annual_inc": (1_000, 10_000_000, True),
        "delinq_2yrs": (0, 20, False),
        "inq_last_6mths": (0, 10, False),
        "open_acc": (0, 50, False),
        "pub_rec": (0, 10, False),
        "revol_bal": (0, 1_000_000, True),
        "revol_util": (0, 100, False),
        "total_acc": (0, 100, False),
    },
}

#: The paper's figures the issue compares with (Goldsteen et al., 2022, Tables 1 and 2).
PAPER_TABLE1 = pd.DataFrame(
    [
        {
            "dataset": "adult",
            "model": "rf",
            "defense": "none",
            "k": 0,
            "train_acc": 0.98,
            "test_acc": 0.83,
            "mia_accuracy": 0.58,
        },
        {
            "dataset": "adult",
            "model": "rf",
            "defense": "ag",
            "k": 50,
            "train_acc": 0.85,
            "test_acc": 0.83,
            "mia_accuracy": 0.51,
        },
        {
            "dataset": "adult",
            "model": "nn",
            "defense": "none",
            "k": 0,
            "train_acc": math.nan,
            "test_acc": 0.89,
            "mia_accuracy": 0.53,
        },
        {
            "dataset": "adult",
            "model": "nn",
            "defense": "ag",
            "k": 25,
            "train_acc": math.nan,
            "test_acc": 0.82,
            "mia_accuracy": 0.50,
        },
    ]
)
PAPER_TABLE2 = pd.DataFrame(
    [
        {
            "dataset": "nursery",
            "model": "dt",
            "defense": "none",
            "k": 0,
            "test_acc": 0.68,
            "attr_accuracy": 0.61,
        },
        {
            "dataset": "nursery",
            "model": "dt",
            "defense": "ag",
            "k": 100,
            "test_acc": 0.74,
            "attr_accuracy": 0.56,
        },
    ]
)

_TARGETS = {"adult": ("income", ">50K"), "loan": ("loan_status", "Charged Off")}
_LOAN_WIDE = "zip_code"  # enters the networks as its first digit
