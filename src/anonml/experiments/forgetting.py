"""The right to be forgotten on Adult: deleting records vs anonymizing them (Malle et al., 2016).

    B. Malle, P. Kieseberg, E. Weippl and A. Holzinger, "The right to be forgotten: towards
    machine learning on perturbed knowledge bases", CD-ARES 2016, LNCS 9817, pp. 251-266,
    doi:10.1007/978-3-319-45507-5_17.

Malle et al. ask what happens to a classifier when the people carrying the most informative
attribute values exercise their right to have their data deleted, and compare that with
anonymizing the whole training table instead. This module repeats the experiment on the bundled
Adult data with anonml's accuracy-guided anonymizer in place of their SaNGreeA.

Protocol
--------
1. **Data.** :func:`anonml.datasets.load_adult`, its published train/test split (32,561 /
   16,281 rows), the 12 features ``data.feature_names`` (7 categorical), target
   ``income == ">50K"`` as integer labels. ``n_train`` keeps only the first N training rows
   (for quick runs) and ``n_test`` the first N test rows; the full runs use every row.
2. **Ranking.** A logistic regression (one-hot categorical columns, standardized numeric
   columns, L2 with ``C=1``, ``max_iter=5000``, ``random_state=0``) is fitted on the training
   rows. Every one-hot column of a *categorical* attribute value (e.g.
   ``marital-status=Married-civ-spouse``) is ranked by the **absolute value** of its
   coefficient, so values that push strongly towards either class count as informative.
   Only values carried by at least ``min_support`` of the training rows (default 1%) are
   ranked: without that floor the top of the list is values held by a few dozen people
   (``marital-status=Married-AF-spouse``, 23 rows; ``native-country=Columbia``, 59 rows),
   whose deletion would not perturb the table at all. The top 3 are kept; their rank,
   coefficient and support are recorded in every row of the result.
3. **Deletion datasets** (:func:`deletion_sets`). For each of the 3 values *separately* (not
   their union), delete a random 20, 40, 60, 80 and 100% of the training rows carrying it:
   ``round(fraction * n_value)`` rows, drawn by one permutation per (seed, value), so the
   deletions are nested (the 40% set contains the 20% set). No other row is touched. That is
   Malle et al.'s 15 deletion datasets (3 values x 5 fractions) per seed. The untouched
   training set is the baseline; its rows appear once as ``setting="baseline"`` and, for the
   curves, once per value as ``setting="deletion", fraction=0``.
4. **Classifiers** (:func:`make_classifier`), the four of Malle et al., each a scikit-learn
   pipeline on raw frames (one-hot categorical, unknown test values encoded as all zeros;
   standardized numeric): logistic regression (``max_iter=5000``), random forest (100 trees,
   ``n_jobs=1``), gradient boosting (``HistGradientBoostingClassifier``, default 100
   iterations with its automatic early stopping), linear SVM (``LinearSVC(dual="auto")``),
   all with ``random_state=seed``. Each is retrained on every training set and scored on the
   untouched test set: accuracy and macro F1; for deletion rows also the accuracy on the test
   rows that carry the deleted value (``accuracy_value_rows``) and on the others.
5. **Anonymizing instead.** The same classifiers trained on the output of
   :class:`anonml.AccuracyGuidedAnonymizer` with its defaults, fitted on the true labels
   (the workload-aware variant), all 12 features as quasi-identifiers (``qi_sets["12"]``),
   ``random_state=seed``, for k = 3, 7, 11, 15, 19 (Malle et al.'s anonymization levels) and
   k = 50, 100; scored on raw test rows (``accuracy``) and on test rows mapped through
   ``anonymizer.transform`` (``accuracy_mapped``). Every anonymized table is re-checked with
   :func:`anonml.privacy.k_anonymity` (``k_verified``). Malle et al. anonymized with SaNGreeA
   (greedy clustering with generalization hierarchies and weight vectors); SaNGreeA is not
   implemented in anonml, so that comparison is not made here.
6. **Repetitions.** Seeds 0, 1, 2 by default; a seed sets the deleted rows, the classifiers'
   ``random_state`` and the anonymizer's tie-breaking. :func:`summarize` reports mean and
   standard deviation over seeds and the change against the same seed's baseline. The tasks
   (one per training set and seed, all four classifiers in it) run in parallel with joblib.

The whole grid (3 seeds x (1 + 15 + 7) training sets x 4 classifiers) takes about 7 CPU-minutes,
6 to 10 minutes on 2 cores: ``python -m anonml.experiments forgetting --out docs/results``; results
and discussion in ``docs/forgetting.md``.
"""

from __future__ import annotations

import numbers
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from anonml._errors import InputError, names_list
from anonml._models import preprocessor
from anonml.experiments._data import Split, adult_split

__all__ = [
    "CLASSIFIERS",
    "anonymize",
    "deletion_sets",
    "make_classifier",
    "rank_values",
    "run",
    "summarize",
    "write_outputs",
]

#: The four classifiers of Malle et al. (2016), in the order of the tables.
CLASSIFIERS = ("logistic_regression", "random_forest", "gradient_boosting", "linear_svc")
_SHORT = {"logistic_regression": "LogReg", "random_forest": "RandomForest",
          "gradient_boosting": "GradBoost", "linear_svc": "LinearSVC"}
_COLUMNS = [
    "setting", "value", "rank", "coefficient", "rows_with_value", "fraction", "k", "seed",
    "classifier", "n_train", "n_deleted", "accuracy", "f1_macro", "accuracy_mapped",
    "f1_macro_mapped", "accuracy_value_rows", "accuracy_other_rows", "k_verified", "n_groups",
    "seconds",
]


# -- building blocks ------------------------------------------------------------------------
def make_classifier(name: str, categorical: Sequence[str], numeric: Sequence[str],
                    random_state: int | None = None) -> Pipeline:
    """One of :data:`CLASSIFIERS` as a pipeline on raw frames (one-hot + standardization).

    Parameters
    ----------
    name : {"logistic_regression", "random_forest", "gradient_boosting", "linear_svc"}
        The classifier.
    categorical, numeric : sequence of str
        Columns to one-hot encode and to standardize.
    random_state : int or None
        Seed of the classifier.

    Returns
    -------
    sklearn.pipeline.Pipeline
    """
    if name == "logistic_regression":
        clf = LogisticRegression(max_iter=5000, random_state=random_state)
    elif name == "random_forest":
        clf = RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=random_state)
    elif name == "gradient_boosting":
        clf = HistGradientBoostingClassifier(random_state=random_state)
    elif name == "linear_svc":
        clf = LinearSVC(dual="auto", max_iter=5000, random_state=random_state)
    else:
        raise InputError(f"unknown classifier {name!r}; choose from {', '.join(CLASSIFIERS)}")
    return make_pipeline(preprocessor(categorical, numeric, dense=True), clf)


def _split_columns(X: pd.DataFrame, categorical: Sequence[str] | None) -> tuple[list, list]:
    if not isinstance(X, pd.DataFrame):
        raise InputError(f"X must be a pandas DataFrame, got {type(X).__name__}; pass a table "
                         "with named columns")
    if categorical is None:
        categorical = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    missing = [c for c in categorical if c not in X.columns]
    if missing:
        raise InputError(f"categorical column {missing[0]!r} is not a column of X; columns are: "
                         + names_list(X.columns))
    cat = list(categorical)
    return cat, [c for c in X.columns if c not in set(cat)]


def rank_values(X: pd.DataFrame, y: Any, categorical: Sequence[str] | None = None,
                top: int | None = 3, min_support: float = 0.01,
                random_state: int = 0) -> pd.DataFrame:
    """Rank categorical attribute values by the |coefficient| of a logistic regression.

    Parameters
    ----------
    X : DataFrame
        Training rows.
    y : array-like of shape (n_rows,)
        Binary labels.
    categorical : sequence of str, optional
        Categorical columns; None detects the non-numeric ones. Numeric columns are
        standardized and enter the model, but are not ranked.
    top : int or None, default 3
        How many values to return; None returns the whole ranking.
    min_support : float, default 0.01
        Rank only values carried by at least this fraction of the rows (0 ranks all).
    random_state : int, default 0
        Seed of the logistic regression.

    Returns
    -------
    DataFrame
        One row per value, most informative first: ``rank`` (1, 2, ...), ``attribute``,
        ``value``, ``label`` (``"attribute=value"``), ``coefficient`` (signed; positive means
        towards the positive class), ``abs_coefficient``, ``rows`` carrying the value,
        ``support`` (their fraction) and ``positive_rate`` (share of positive labels among them).
    """
    cat, num = _split_columns(X, categorical)
    if not cat:
        raise InputError("X has no categorical column to rank; pass categorical=[...]")
    if top is not None and (isinstance(top, bool) or not isinstance(top, numbers.Integral)
                            or top < 1):
        raise InputError(f"top={top!r} must be a positive integer or None")
    if (isinstance(min_support, bool) or not isinstance(min_support, numbers.Real)
            or not 0 <= min_support < 1):
        raise InputError(f"min_support={min_support!r} must be a fraction in [0, 1)")
    y = np.asarray(y)
    if y.shape != (len(X),):
        raise InputError(f"y has shape {y.shape}, X has {len(X)} rows; pass one label per row")
    model = make_pipeline(
        preprocessor(cat, num),
        LogisticRegression(max_iter=5000, random_state=random_state),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    coef = model[-1].coef_.ravel()
    if len(model[-1].classes_) != 2:
        raise InputError(f"y has {len(model[-1].classes_)} classes; ranking needs binary labels")
    categories = model[0].named_transformers_["onehotencoder"].categories_
    rows, pos = [], 0
    for attr, values in zip(cat, categories):
        column = X[attr].to_numpy()
        for v in values:
            carrying = column == v
            rows.append({"attribute": attr, "value": v, "label": f"{attr}={v}",
                         "coefficient": float(coef[pos]), "abs_coefficient": abs(float(coef[pos])),
                         "rows": int(carrying.sum()), "support": float(carrying.mean()),
                         "positive_rate": float((y[carrying] == model[-1].classes_[1]).mean())})
            pos += 1
    ranking = pd.DataFrame(rows)
    ranking = ranking[ranking.support >= min_support]
    ranking = ranking.sort_values("abs_coefficient", ascending=False, kind="stable")
    ranking = ranking.reset_index(drop=True)
    ranking.insert(0, "rank", np.arange(1, len(ranking) + 1))
    return ranking if top is None else ranking.head(top)


def _pairs(values: Any) -> list[tuple[str, Any]]:
    if isinstance(values, pd.DataFrame):
        if not {"attribute", "value"} <= set(values.columns):
            raise InputError("values must have columns 'attribute' and 'value' (the output of "
                             "rank_values) or be a list of (attribute, value) pairs")
        return list(zip(values["attribute"], values["value"]))
    pairs = []
    for item in values:
        if isinstance(item, str) or len(item) != 2:
            raise InputError(f"value {item!r} is not an (attribute, value) pair; pass e.g. "
                             "[('sex', 'Female')] or the output of rank_values")
        pairs.append((item[0], item[1]))
    return pairs


def _check_fractions(fractions: Iterable[float]) -> list[float]:
    out = []
    for f in fractions:
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not 0 < f <= 1:
            raise InputError(f"deletion fraction {f!r} must be in (0, 1]; e.g. 0.2 deletes 20%")
        out.append(float(f))
    if not out:
        raise InputError("no deletion fraction given; pass e.g. fractions=(0.2, 0.4, 0.6, 0.8, 1.0)")
    return out


def deletion_sets(X: pd.DataFrame, values: Any,
                  fractions: Iterable[float] = (0.2, 0.4, 0.6, 0.8, 1.0),
                  seed: int = 0) -> dict[tuple[str, float], np.ndarray]:
    """The rows to delete for each (value, fraction): a random share of the rows carrying it.

    Parameters
    ----------
    X : DataFrame
        Training rows.
    values : DataFrame or sequence of (attribute, value) pairs
        The attribute values, e.g. the output of :func:`rank_values`. Each is treated
        separately (the union of the values is not formed).
    fractions : iterable of float in (0, 1]
        Shares of the rows carrying a value to delete.
    seed : int, default 0
        Seed of the random choice. Value number ``i`` (in the given order) is drawn with
        ``np.random.default_rng([seed, i])``, one permutation per value, so the sets of one
        value are nested: a larger fraction deletes a superset of the rows of a smaller one.

    Returns
    -------
    dict
        ``{("attribute=value", fraction): positions}``: sorted integer positions (for
        ``X.iloc``) of the ``round(fraction * n)`` deleted rows, where n rows of X carry
        the value. No row without the value is ever deleted.
    """
    if not isinstance(X, pd.DataFrame):
        raise InputError(f"X must be a pandas DataFrame, got {type(X).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(f"seed={seed!r} must be a non-negative integer")
    fracs = _check_fractions(fractions)
    out: dict[tuple[str, float], np.ndarray] = {}
    for i, (attr, value) in enumerate(_pairs(values)):
        if attr not in X.columns:
            raise InputError(f"attribute {attr!r} is not a column; columns are: "
                             + names_list(X.columns))
        carrying = np.flatnonzero((X[attr] == value).to_numpy())
        if carrying.size == 0:
            raise InputError(f"no row has {attr}={value!r}; pick a value that occurs in the data")
        order = np.random.default_rng([int(seed), i]).permutation(carrying)
        for f in fracs:
            out[(f"{attr}={value}", f)] = np.sort(order[: int(round(f * carrying.size))])
    return out


def anonymize(X: pd.DataFrame, y: Any, k: int, quasi_identifiers: Sequence[str], seed: int = 0):
    """Accuracy-guided anonymization of ``X`` guided by the labels ``y`` (library defaults).

    Returns
    -------
    X_anon : DataFrame
        The k-anonymous training table (verified by the anonymizer).
    anonymizer : AccuracyGuidedAnonymizer
        Fitted, with ``handle_unknown="ignore"`` so that it can map any test rows.
    """
    from anonml.anonymize import AccuracyGuidedAnonymizer

    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=list(quasi_identifiers), random_state=seed)
    X_anon = ag.fit_transform(X, np.asarray(y))
    return X_anon, ag.set_params(handle_unknown="ignore")


# -- the grid ---------------------------------------------------------------------------------
@dataclass
class _Data(Split):
    """Adult's split (labels as arrays), the 12 quasi-identifiers and the value ranking."""

    qi: list
    ranking: pd.DataFrame


def _load(n_train: int | None, n_test: int | None, top: int, min_support: float) -> _Data:
    d, s = adult_split(n_train, n_test)
    y_train, y_test = s.y_train.to_numpy(), s.y_test.to_numpy()
    ranking = rank_values(s.X_train, y_train, s.categorical, top=top, min_support=min_support)
    return _Data(s.X_train, s.X_test, y_train, y_test, s.categorical, s.numeric,
                 list(d.qi_sets["12"]), ranking)


def _fit_predict(name, data: _Data, X, y, seed, tests):
    from threadpoolctl import threadpool_limits

    model = make_classifier(name, data.categorical, data.numeric, random_state=seed)
    # one thread per task: the parallelism is joblib's, and OpenMP threads competing for the
    # same cores slow gradient boosting down by an order of magnitude
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Found unknown categories")
        model.fit(X, y)
        return [model.predict(t) for t in tests]


def _scores(y_true, y_pred) -> tuple[float, float]:
    return float(accuracy_score(y_true, y_pred)), float(f1_score(y_true, y_pred, average="macro"))


def _task(data: _Data, seed: int, setting: str, classifiers: Sequence[str], k: int | None = None,
          deleted: dict[tuple[str, float], np.ndarray] | None = None) -> list[dict]:
    """Train and score every classifier on one training set (one joblib task)."""
    ranking = data.ranking
    blank = {c: np.nan for c in _COLUMNS}
    rows: list[dict] = []
    value_masks = {r.label: (data.X_test[r.attribute] == r.value).to_numpy()
                   for r in ranking.itertuples()}
    if setting == "anonymized":
        X_anon, ag = anonymize(data.X_train, data.y_train, k, data.qi, seed)
        from anonml.privacy import k_anonymity

        k_verified = int(k_anonymity(X_anon, data.qi))
        mapped = ag.transform(data.X_test)
        for name in classifiers:
            t0 = time.perf_counter()
            pred, pred_m = _fit_predict(name, data, X_anon, data.y_train, seed,
                                        [data.X_test, mapped])
            acc, f1 = _scores(data.y_test, pred)
            acc_m, f1_m = _scores(data.y_test, pred_m)
            rows.append({**blank, "setting": "anonymized", "k": k, "seed": seed, "classifier": name,
                         "n_train": len(X_anon), "n_deleted": 0, "accuracy": acc, "f1_macro": f1,
                         "accuracy_mapped": acc_m, "f1_macro_mapped": f1_m, "k_verified": k_verified,
                         "n_groups": int(ag.n_groups_), "seconds": time.perf_counter() - t0})
        return rows
    # baseline (deleted is None) or one value's nested deletions
    todo = {None: np.zeros(0, dtype=np.int64)} if deleted is None else deleted
    for key, drop in todo.items():
        keep = np.ones(len(data.X_train), dtype=bool)
        keep[drop] = False
        X, y = data.X_train[keep], data.y_train[keep]
        for name in classifiers:
            t0 = time.perf_counter()
            (pred,) = _fit_predict(name, data, X, y, seed, [data.X_test])
            acc, f1 = _scores(data.y_test, pred)
            base = {**blank, "seed": seed, "classifier": name, "n_train": int(keep.sum()),
                    "n_deleted": int(drop.size), "accuracy": acc, "f1_macro": f1,
                    "seconds": time.perf_counter() - t0}
            labels = list(value_masks) if key is None else [key[0]]
            if key is None:
                rows.append({**base, "setting": "baseline", "fraction": 0.0})
            for label in labels:  # the baseline doubles as the fraction-0 point of every value
                r = ranking[ranking.label == label].iloc[0]
                m = value_masks[label]
                rows.append({**base, "setting": "deletion", "value": label, "rank": int(r["rank"]),
                             "coefficient": float(r.coefficient), "rows_with_value": int(r.rows),
                             "fraction": 0.0 if key is None else key[1],
                             "accuracy_value_rows": float((pred[m] == data.y_test[m]).mean()),
                             "accuracy_other_rows": float((pred[~m] == data.y_test[~m]).mean())})
    return rows


def _check_int_list(name: str, items: Iterable[Any], low: int) -> list[int]:
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
            raise InputError(f"{name} {v!r} must be an integer >= {low}")
        out.append(int(v))
    return out


def run(seeds: Sequence[int] = (0, 1, 2), fractions: Sequence[float] = (0.2, 0.4, 0.6, 0.8, 1.0),
        ks: Sequence[int] = (3, 7, 11, 15, 19, 50, 100), n_jobs: int = 2,
        n_train: int | None = None, n_test: int | None = None,
        classifiers: Sequence[str] = CLASSIFIERS, top: int = 3,
        min_support: float = 0.01) -> pd.DataFrame:
    """Run the grid of the module docstring: one row per training set, classifier and seed.

    Parameters
    ----------
    seeds : sequence of int
        Repetitions; each sets the deleted rows, the classifiers' and the anonymizer's seeds.
    fractions : sequence of float in (0, 1]
        Shares of the rows carrying a value that are deleted.
    ks : sequence of int >= 2
        Anonymization levels; empty skips the anonymized training sets.
    n_jobs : int, default 2
        joblib workers (-1: all cores).
    n_train : int or None
        Use only the first N training rows (at least 200); None uses all 32,561.
    n_test : int or None
        Score on the first N test rows only (at least 200, for quick runs); None uses all 16,281.
    classifiers : sequence of str
        A subset of :data:`CLASSIFIERS`.
    top : int, default 3
        Number of most informative values whose rows are deleted.
    min_support : float, default 0.01
        Smallest share of training rows a ranked value must be carried by.

    Returns
    -------
    DataFrame
        Columns ``setting`` ("baseline", "deletion" or "anonymized"), ``value``, ``rank``,
        ``coefficient``, ``rows_with_value``, ``fraction``, ``k``, ``seed``, ``classifier``,
        ``n_train``, ``n_deleted``, ``accuracy``, ``f1_macro`` (raw test rows),
        ``accuracy_mapped``, ``f1_macro_mapped`` (test rows mapped by the anonymizer),
        ``accuracy_value_rows``, ``accuracy_other_rows`` (test rows with / without the
        deleted value), ``k_verified``, ``n_groups`` and ``seconds`` (fit and predict);
        NaN where a column does not apply.
    """
    from joblib import Parallel, delayed

    seeds = _check_int_list("seed", seeds, 0)
    if not seeds:
        raise InputError("no seed given; pass e.g. seeds=(0, 1, 2)")
    fracs = _check_fractions(fractions)
    ks = _check_int_list("k", ks, 2)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise InputError(f"n_jobs={n_jobs!r} must be a non-zero integer (-1: all cores)")
    if n_train is not None and (isinstance(n_train, bool) or not isinstance(n_train, numbers.Integral)
                                or n_train < 200):
        raise InputError(f"n_train={n_train!r} must be an integer >= 200, or None for all rows")
    if n_test is not None and (isinstance(n_test, bool) or not isinstance(n_test, numbers.Integral)
                               or n_test < 200):
        raise InputError(f"n_test={n_test!r} must be an integer >= 200, or None for all rows")
    unknown = [c for c in classifiers if c not in CLASSIFIERS]
    if unknown or not classifiers:
        raise InputError(f"unknown classifier {unknown[0] if unknown else None!r}; choose from "
                         + ", ".join(CLASSIFIERS))
    classifiers = list(classifiers)
    data = _load(n_train, n_test, top, min_support)
    too_big = [k for k in ks if k > len(data.X_train)]
    if too_big:
        raise InputError(f"k={too_big[0]} is larger than the {len(data.X_train)} training rows; "
                         "lower k or raise n_train")
    tasks = []
    for s in seeds:
        tasks.append(delayed(_task)(data, s, "baseline", classifiers))
        sets = deletion_sets(data.X_train, data.ranking, fracs, seed=s)
        for label in data.ranking.label:
            mine = {key: v for key, v in sets.items() if key[0] == label}
            tasks.append(delayed(_task)(data, s, "deletion", classifiers, deleted=mine))
        tasks += [delayed(_task)(data, s, "anonymized", classifiers, k=k) for k in ks]
    # the slowest tasks (five deletion sets each) first, so the workers finish together
    tasks.sort(key=lambda t: t[1][2] != "deletion")
    parts = Parallel(n_jobs=n_jobs)(tasks)
    frame = pd.DataFrame([r for part in parts for r in part], columns=_COLUMNS)
    for c in ("rank", "rows_with_value", "k", "k_verified", "n_groups"):
        frame[c] = frame[c].astype("Int64")
    order = {"baseline": 0, "deletion": 1, "anonymized": 2}
    frame = frame.sort_values(
        ["setting", "rank", "fraction", "k", "classifier", "seed"],
        key=lambda col: col.map(order) if col.name == "setting"
        else col.map({c: i for i, c in enumerate(CLASSIFIERS)}) if col.name == "classifier" else col,
    )
    return frame.reset_index(drop=True)


# -- summaries and outputs ----------------------------------------------------------------
_KEYS = ["setting", "value", "rank", "fraction", "k", "classifier"]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per training set and classifier, and the change vs baseline.

    ``delta_accuracy`` and ``delta_f1`` are in percentage points, against the baseline of the
    same seed and classifier (negative: worse than training on every row).
    """
    missing = [c for c in (*_KEYS, "seed", "accuracy", "f1_macro") if c not in df.columns]
    if missing:
        raise InputError(f"result frame lacks column {missing[0]!r}; pass the output of run()")
    base = df[df.setting == "baseline"].set_index(["classifier", "seed"])
    if base.empty:
        raise InputError("result frame has no baseline rows; pass the output of run()")
    r = df.copy()
    key = pd.MultiIndex.from_frame(r[["classifier", "seed"]])
    r["delta_accuracy"] = 100 * (r["accuracy"].to_numpy() - base["accuracy"].reindex(key).to_numpy())
    r["delta_f1"] = 100 * (r["f1_macro"].to_numpy() - base["f1_macro"].reindex(key).to_numpy())
    r["delta_accuracy_mapped"] = 100 * (r["accuracy_mapped"].to_numpy()
                                        - base["accuracy"].reindex(key).to_numpy())
    out = r.groupby(_KEYS, dropna=False, sort=False).agg(
        n_train=("n_train", "mean"), n_deleted=("n_deleted", "mean"),
        accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        f1_mean=("f1_macro", "mean"), f1_std=("f1_macro", "std"),
        mapped_mean=("accuracy_mapped", "mean"), mapped_std=("accuracy_mapped", "std"),
        f1_mapped_mean=("f1_macro_mapped", "mean"), f1_mapped_std=("f1_macro_mapped", "std"),
        value_rows_mean=("accuracy_value_rows", "mean"),
        other_rows_mean=("accuracy_other_rows", "mean"),
        delta_accuracy=("delta_accuracy", "mean"), delta_f1=("delta_f1", "mean"),
        delta_accuracy_mapped=("delta_accuracy_mapped", "mean"),
        k_verified_min=("k_verified", "min"), seeds=("seed", "nunique"),
    ).reset_index()
    return out


def _cell(mean: float, std: float, delta: float | None = None) -> str:
    s = f"{mean:.4f}" if pd.isna(std) else f"{mean:.4f} ± {std:.4f}"  # no std from one seed
    return s if delta is None or pd.isna(delta) else f"{s} ({delta:+.2f})"


def _row_label(r) -> str:
    if r.setting == "baseline":
        return "all training rows (baseline)"
    if r.setting == "deletion" and r.fraction == 0:
        return f"baseline, `{r.value}`"
    if r.setting == "deletion":
        return f"− {100 * r.fraction:.0f}% of `{r.value}`"
    return f"AG k={int(r.k)}"


def _markdown(df: pd.DataFrame, summary: pd.DataFrame) -> str:
    seeds = sorted(df.seed.unique())
    classifiers = [c for c in CLASSIFIERS if c in set(df.classifier)]
    head = "| training data | rows | " + " | ".join(_SHORT[c] for c in classifiers) + " |"
    rule = "|---|---:|" + "---:|" * len(classifiers)
    values = (df[df.setting == "deletion"].drop_duplicates("value").sort_values("rank")
              [["rank", "value", "coefficient", "rows_with_value"]])
    lines = [
        "# Right to be forgotten on Adult (Malle et al., 2016)\n",
        f"Seeds {', '.join(map(str, seeds))}: mean ± std over seeds, and in parentheses the change "
        "against the same seed's baseline, in percentage points. Test set: the published Adult "
        "test rows, untouched. Protocol: `anonml.experiments.forgetting`, docs/forgetting.md.\n",
        "## The most informative attribute values (|logistic-regression coefficient|)\n",
        "| rank | value | coefficient | training rows carrying it |",
        "|---:|---|---:|---:|",
    ]
    n_all = int(df.loc[df.setting == "baseline", "n_train"].iloc[0])
    for r in values.itertuples():
        lines.append(f"| {int(r.rank)} | `{r.value}` | {r.coefficient:+.3f} | "
                     f"{int(r.rows_with_value):,} ({100 * r.rows_with_value / n_all:.1f}%) |")
    shown = summary[~((summary.setting == "deletion") & (summary.fraction == 0))]
    blocks = [
        ("Test accuracy", "accuracy_mean", "accuracy_std", "delta_accuracy"),
        ("Macro F1", "f1_mean", "f1_std", "delta_f1"),
    ]
    for title, mean, std, delta in blocks:
        lines += [f"\n## {title} (anonymized: raw test rows)\n", head, rule]
        lines += _table_lines(shown, classifiers, lambda row, mean=mean, std=std, delta=delta:
                              _cell(row[mean].iloc[0], row[std].iloc[0], row[delta].iloc[0]))
    anon = summary[summary.setting == "anonymized"]
    if len(anon):
        lines += ["\n## Test accuracy of the anonymized models on test rows mapped by the anonymizer\n",
                  head, rule]
        lines += _table_lines(anon, classifiers, lambda row: _cell(
            row.mapped_mean.iloc[0], row.mapped_std.iloc[0], row.delta_accuracy_mapped.iloc[0]))
        kv = anon.groupby("k").k_verified_min.min()
        lines.append("\nSmallest equivalence class, re-checked with `anonml.privacy.k_anonymity`: "
                     + ", ".join(f"k={int(k)}: {int(v)}" for k, v in kv.items()) + ".")
    dele = summary[(summary.setting == "deletion")]
    if len(dele):
        lines += ["\n## Accuracy on the test rows that carry the deleted value / on the others\n",
                  head, rule]
        lines += _table_lines(dele, classifiers, lambda row: (
            f"{row.value_rows_mean.iloc[0]:.4f} / {row.other_rows_mean.iloc[0]:.4f}"))
    lines.append("\nSaNGreeA, the anonymizer of Malle et al., is not implemented in anonml; the "
                 "anonymized rows above use accuracy-guided anonymization (AG) on the true labels.")
    return "\n".join(lines) + "\n"


def _table_lines(summary: pd.DataFrame, classifiers: list, cell) -> list[str]:
    """The Markdown rows of one table: a row label, the training rows and one cell per
    classifier (``cell(rows of that classifier)``, empty when it has none)."""
    lines = []
    for key, part in _table_rows(summary):
        cells = []
        for c in classifiers:
            row = part[part.classifier == c]
            cells.append(cell(row) if len(row) else "")
        lines.append(f"| {key} | {part.n_train.iloc[0]:,.0f} | " + " | ".join(cells) + " |")
    return lines


def _table_rows(summary: pd.DataFrame):
    """(row label, the rows of all classifiers) in table order."""
    s = summary.assign(_o=summary.setting.map({"baseline": 0, "deletion": 1, "anonymized": 2}))
    s = s.sort_values(["_o", "rank", "fraction", "k"], kind="stable")
    labels = pd.Series([_row_label(r) for r in s.itertuples()], index=s.index)
    for label in dict.fromkeys(labels):
        yield label, s[labels == label]


def write_outputs(df: pd.DataFrame, out_dir: str | Path, name: str = "forgetting") -> dict[str, Path]:
    """Write the raw rows (CSV), the summary (CSV and Markdown) and a plot (PNG, if matplotlib).

    Returns
    -------
    dict
        Paths by kind: ``raw``, ``summary``, ``markdown`` and ``plot``.
    """
    from anonml.experiments._output import write_summarized

    return write_summarized(out_dir, name, df, summarize(df),
                            lambda summary: _markdown(df, summary), _plot)


def _plot(summary: pd.DataFrame, plt):
    from anonml.experiments._output import finish_k_panel, plot_raw_and_mapped

    classifiers = [c for c in CLASSIFIERS if c in set(summary.classifier)]
    anon = summary[summary.setting == "anonymized"]
    n_rows = 2 if len(anon) else 1
    fig, axes = plt.subplots(n_rows, len(classifiers), figsize=(4.2 * len(classifiers), 3.6 * n_rows),
                             sharey=True, squeeze=False)
    colors = ["tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange"]
    for j, c in enumerate(classifiers):
        base = summary[(summary.setting == "baseline") & (summary.classifier == c)].iloc[0]
        ax = axes[0][j]
        dele = summary[(summary.setting == "deletion") & (summary.classifier == c)]
        for i, (value, part) in enumerate(dele.sort_values("rank").groupby("value", sort=False)):
            part = part.sort_values("fraction")
            ax.errorbar(100 * part.fraction, part.accuracy_mean, yerr=part.accuracy_std, marker="o",
                        ms=4, capsize=2, color=colors[i % len(colors)], label=f"delete {value}")
        ax.axhline(base.accuracy_mean, color="black", ls=":", label="baseline (all rows)")
        if len(anon):
            best = anon[(anon.classifier == c) & (anon.k == anon.k.min())]
            ax.axhline(best.accuracy_mean.iloc[0], color="tab:gray", ls="--",
                       label=f"AG k={int(best.k.iloc[0])}, raw test rows")
        ax.set_title(f"{_SHORT[c]}: deletion")
        ax.set_xlabel("rows carrying the value deleted, %")
        ax.grid(alpha=0.3)
        if len(anon):
            ax2 = axes[1][j]
            part = anon[anon.classifier == c].sort_values("k")
            plot_raw_and_mapped(ax2, part, "AG", "tab:gray", ms=4, capsize=2)
            finish_k_panel(ax2, base.accuracy_mean, "baseline (all rows)",
                           "k (12 quasi-identifiers)", f"{_SHORT[c]}: anonymized instead")
    axes[0][0].set_ylabel("test accuracy")
    axes[0][0].legend(loc="lower left", fontsize=7)
    if len(anon):
        axes[1][0].set_ylabel("test accuracy")
        axes[1][0].legend(loc="lower left", fontsize=7)
    fig.suptitle("Adult: deleting the rows of the most informative values vs anonymizing "
                 "(Malle et al., 2016)", fontsize=11)
    fig.tight_layout()
    return fig
