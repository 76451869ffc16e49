"""``anonml demo``: the main job on the bundled Adult data.

Trains the paper's neural network, anonymizes its training data with the 12 quasi-identifiers
at k=100 along the network's own predictions, retrains, and reports.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from sklearn.exceptions import ConvergenceWarning

from anonml._models import paper_nn
from anonml._output import atomic_write, write_table
from anonml._progress import ProgressCallback, announce
from anonml._utils import json_safe
from anonml.anonymize import anonymize_model
from anonml.datasets import load_adult

__all__ = ["run_demo"]


def run_demo(
    output_dir: str | os.PathLike,
    *,
    k: int = 100,
    qi_set: str = "12",
    random_state: int = 0,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Run the demo and write ``adult_anonymized.csv`` and ``summary.json`` to ``output_dir``.

    ``progress(step, 0, None)`` hears each step as it starts (:mod:`anonml._progress`).
    Returns the summary (numbers only, no records).
    """
    say = announce(progress)
    out = Path(output_dir)
    say("loading the bundled Adult data")
    data = load_adult()
    X_train, X_test, y_train, y_test = data.train_test_split()
    labels = y_train
    # integer labels (1 = income >50K): the network's early stopping needs them before sklearn 1.9
    y_train, y_test = (y_train == ">50K").astype(int), (y_test == ">50K").astype(int)
    qi = list(data.qi_sets[qi_set])
    numeric = [c for c in data.feature_names if c not in set(data.categorical_features)]
    model = paper_nn(data.categorical_features, numeric, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = anonymize_model(
            model, X_train, k, qi, y=y_train, X_test=X_test, y_test=y_test,
            random_state=random_state, progress=progress,
        )
    summary = {
        "dataset": "adult",
        "model": "MLP (100,), relu, adam, lr 0.001, batch 200 (Goldsteen et al. 2022)",
        "quasi_identifiers": qi,
        **result.summary,
    }
    say(f"writing {out}")
    out.mkdir(parents=True, exist_ok=True)  # only now: a failed run leaves no empty folder
    table = result.X_anonymized.assign(**{data.target: labels})
    write_table(table, out / "adult_anonymized.csv")
    atomic_write(
        out / "summary.json", lambda p: p.write_text(json.dumps(json_safe(summary), indent=2) + "\n")
    )
    return summary
