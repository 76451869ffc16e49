"""Table 2: attribute inference on Nursery. See :mod:`anonml.experiments.attack_tables`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from sklearn.base import clone

from anonml._errors import InputError
from anonml.experiments.attack_tables._constants import AG_PAPER
from anonml.experiments.attack_tables._data import TableData, load_data
from anonml.experiments.attack_tables._models import make_model
from anonml.experiments.attack_tables.table1 import (
    _accuracies,
    _check_ints,
    _classification_figures,
    _order,
    _run_tasks,
)


# =============================================================================================
# Table 2
# =============================================================================================
def _attribute_row(data: TableData, seed: int, k: int, cfg_feature: str, positive: Any) -> dict:
    from anonml.anonymize import AccuracyGuidedAnonymizer
    from anonml.attacks import (
        AttributeInferenceBaseline,
        AttributeInferenceBlackBox,
        Target,
        WorstCaseAttribute,
    )

    t0 = time.perf_counter()
    model = clone(make_model("dt", data, seed)).fit(data.X_train, data.y_train)
    row: dict[str, Any] = {
        "dataset": data.name,
        "model": "dt",
        "defense": "none",
        "k": 0,
        "epsilon": math.nan,
        "seed": seed,
    }
    if k:
        guide = model.predict(data.X_train)
        ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=data.qi, random_state=seed, **AG_PAPER)
        X_anon = ag.fit_transform(data.X_train, guide)
        model = clone(make_model("dt", data, seed)).fit(X_anon, data.y_train)
        row.update(
            defense="ag", k=k, n_groups=int(ag.n_groups_), min_class_size=int(ag.min_class_size_)
        )
    row.update(_accuracies(model, data), seconds_train=round(time.perf_counter() - t0, 2))
    target = Target(model, data.X_train, data.y_train, data.X_test, data.y_test)
    bb, base = (
        attack(cfg_feature, positive_value=positive, random_state=seed, n_jobs=1).run(target)
        for attack in (AttributeInferenceBlackBox, AttributeInferenceBaseline)
    )
    wc = WorstCaseAttribute(features=[cfg_feature]).run(target)[cfg_feature]
    row.update(
        **_classification_figures("attr", bb),
        attr_nonmember_accuracy=bb.nonmember_accuracy,
        **_classification_figures("attr_baseline", base),
        attr_majority_accuracy=bb.baseline_accuracy,
        arr=wc.arr,
        arr_pvalue=wc.pvalue,
        arr_train_rate=wc.train_rate,
        arr_test_rate=wc.test_rate,
        seconds_total=round(time.perf_counter() - t0, 2),
    )
    return row


def run_table2(
    seeds: Sequence[int] = (0, 1, 2),
    k: int = 100,
    n_jobs: int = 2,
    *,
    attack_feature: str = "social",
    positive_value: Any = "problematic",
    n_train: int | None = None,
    n_test: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Table 2: a decision tree on Nursery, undefended vs AG at ``k``, and attribute attacks.

    Returns one row per (defense, seed) with test accuracy, the black-box attribute attack on
    ``attack_feature`` (accuracy; precision and recall of ``positive_value``), the same attack
    model without the target's output, the majority guess, and the worst-case ARR of
    ``attack_feature`` with its p-value (see the module docstring).
    """
    from joblib import delayed

    seeds = _check_ints("seeds", seeds, 0)
    (k,) = _check_ints("k", (k,), 2)
    data = load_data("nursery", n_train, n_test)
    if attack_feature not in data.X_train.columns:
        raise InputError(
            f"attack_feature {attack_feature!r} is not a Nursery column; use one of "
            f"{', '.join(data.X_train.columns)}"
        )
    tasks = [
        delayed(_attribute_row)(data, s, kk, attack_feature, positive_value)
        for s in seeds
        for kk in (0, k)
    ]
    return _order(pd.DataFrame(_run_tasks(tasks, n_jobs, progress, "Table 2 runs")))
