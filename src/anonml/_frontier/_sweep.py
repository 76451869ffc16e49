"""The sweep: methods × k, each point anonymized, retrained, scored and attacked."""

from __future__ import annotations

import numbers
import os
import time
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone

from anonml._errors import AnonmlError, InputError, one_line, names_list
from anonml._frontier._estimators import (ESTIMATORS, dp_baseline, family, fitted_or_fit,
                                         make_estimator, plain_clone)
from anonml._frontier._measure import SharedReference, attack_point
from anonml._methods import DEFAULT_FRONTIER_METHODS, anonymizer_class
from anonml._progress import announce, check_progress
from anonml._utils import check_int
from anonml._methods import METHODS as _REGISTRY
from anonml.anonymize._then_fit import AnonymizeThenFit

__all__ = ["METHODS", "AnonymizeThenFit", "frontier"]

#: short method name -> anonymizer class in anonml.anonymize
METHODS = {name: spec.class_name for name, spec in _REGISTRY.items()}
DEFAULT_METHODS = DEFAULT_FRONTIER_METHODS
#: the counted stage of :func:`frontier`'s progress: points finished of all points
POINTS = "frontier points"
STEPS = ("anonymize", "retrain", "score", "attack", "worst-case attack", "attribute attack")


def _anonymizer(method: str, k: int, qi: list, sensitive: Any, l: Any, t: Any,
                random_state: Any) -> Any:
    return anonymizer_class(method)(k=k, quasi_identifiers=qi, sensitive=sensitive, l=l, t=t,
               random_state=random_state)


def _seed(random_state: Any, stream: int) -> Any:
    """A seed of its own for each bootstrap stream, fixed by ``random_state``."""
    if random_state is None:
        return None
    return np.random.SeedSequence([int(random_state), 22, stream])


# ----------------------------------------------------------------------------- checks ---------
def _frame(X: Any, what: str) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X.reset_index(drop=True)
    if X is None:
        raise InputError(f"{what} is missing; fix: pass the {what} table")
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise InputError(f"{what} must be a table (rows × columns); got shape {arr.shape}")
    return pd.DataFrame(arr)


def _labels(y: Any, n: int, what: str, table: str) -> np.ndarray:
    if y is None:
        raise InputError(f"{what} is missing: the {table} set has no target; fix: pass the "
                         f"labels of the {table} rows as {what}")
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.ndim != 1 or y.shape[0] != n:
        raise InputError(f"{what} has shape {y.shape}; fix: one label per row of the "
                         f"{table} table ({n} rows)")
    if pd.isna(y).any():
        raise InputError(f"{what} has {int(pd.isna(y).sum())} missing labels; fix: drop "
                         "those rows or fill the labels")
    return y


def _check_ks(ks: Any, n: int) -> list[int]:
    if isinstance(ks, (numbers.Integral, str)):
        ks = [ks]
    ks = list(ks)
    for k in ks:
        check_int("k", k, low=2, why="fix: e.g. ks=(5, 10, 50)")
        if k > n:
            raise InputError(f"k={k} is above the {n:,} training rows (no group could hold "
                             f"k rows); fix: choose k <= {n:,}")
    return sorted(set(int(k) for k in ks))


def _check_methods(methods: Any) -> list[str]:
    if isinstance(methods, str):
        methods = [methods]
    methods = list(methods)
    for m in methods:
        if m not in METHODS:
            raise InputError(f"method {m!r} is not known; fix: choose from "
                             f"{', '.join(METHODS)}")
    return list(dict.fromkeys(methods))


def _resolve_model(model: Any, estimator: Any, X_train: pd.DataFrame, trust_model: bool,
                   random_state: Any) -> tuple[Any, str]:
    if (model is None) == (estimator is None):
        raise InputError("give exactly one of model= (a fitted or unfitted estimator, or a "
                         f"model file) and estimator= (one of {', '.join(ESTIMATORS)})")
    if estimator is not None:
        return make_estimator(estimator, X_train, random_state), str(estimator)
    if isinstance(model, (str, os.PathLike)):
        from anonml.safemodel import open_model

        loaded = open_model(model, trust=trust_model)  # held and refitted in the sandbox
        return loaded, os.fspath(model)
    return model, type(model).__name__


# ----------------------------------------------------------------------------- the sweep ------
def frontier(
    X_train: Any,
    y_train: Any,
    X_test: Any,
    y_test: Any,
    *,
    quasi_identifiers: Sequence[Any],
    model: Any = None,
    estimator: str | None = None,
    methods: Sequence[str] = DEFAULT_METHODS,
    ks: Sequence[int] = (5, 10, 25, 50, 100),
    sensitive: Any = None,
    l: float | None = None,
    t: float | None = None,
    attack: str = "rmia",
    n_reference: int = 4,
    reference: str = "shared",
    dp: bool = True,
    dp_epsilon: float = 1.0,
    attribute_features: Sequence[Any] | None = None,
    max_attribute_records: int | None = 1000,
    worst_case_reps: int = 5,
    trust_model: bool = False,
    n_jobs: int | None = 1,
    random_state: int = 0,
    bootstrap: int = 200,
    progress: Any = None,
) -> Any:
    """Sweep methods × k: anonymize, retrain, score and attack each point, in one run.

    The first row of the result is the undefended model (the model as given, or the named
    estimator fitted on the raw training rows); then one row per (method, k); then the DP
    baseline of the model's family with its ε. Each row holds the retrained model's test
    accuracy on raw test rows and on test rows mapped through the anonymizer's ``transform``,
    the information loss (NCP, Xu et al. 2006; GCP, Ghinita et al. 2007), the membership risk
    of the real people (RMIA, Zarifzadeh et al. 2024, or LiRA, Carlini et al. 2022: AUC and
    TPR at 0.1 % FPR; SACRO-ML's worst-case attack), the attribute risk (largest lower 95 %
    bound of an attribute risk ratio) and the seconds.

    Parameters
    ----------
    X_train, y_train : DataFrame and labels
        The model's training rows (the people whose risk is measured: the members).
    X_test, y_test : DataFrame and labels
        Held-out rows, same columns (the non-members; the accuracy is measured on them).
    quasi_identifiers : list of columns
    model : estimator or path, optional
        The model to anonymize for: fitted (its training data must be ``X_train``) or not (it
        is then fitted), or a model file read by :func:`anonml.safemodel.load_model`
        (``trust_model`` as there). A clone is refitted per point.
    estimator : {"random_forest", "logistic_regression", "neural_network"}, optional
        Instead of ``model``: the named estimator (see :mod:`anonml._frontier._estimators`).
    methods : list of {"ag", "mondrian", "hilbert", "rtree", "sangreea"}
    ks : list of int
    sensitive, l, t : optional
        l-diversity / t-closeness of a sensitive column, on every point; ``sensitive`` may
        name the label (``y_train``, a pandas Series of that name), the textbook case.
    attack : {"rmia", "lira"}
    n_reference : int, default 4
        Reference (shadow) models per attack.
    reference : {"shared", "matched"}, default "shared"
        "shared": RMIA's reference models imitate the undefended training procedure and are
        trained once for every point (:class:`~anonml._frontier._measure.SharedReference`).
        "matched": each point trains its own, imitating its procedure (anonymize, then fit;
        :class:`AnonymizeThenFit`), ``n_reference`` more anonymize-and-fit runs per point.
        LiRA always trains its own per point.
    dp : bool, default True
        Add the DP baseline of the model's family (forest, linear, network, svm).
    dp_epsilon : float, default 1.0
    attribute_features : list, optional
        Features of the attribute attack (default: the quasi-identifiers).
    max_attribute_records : int or None, default 1000
        Records per side of the attribute attack (half the audit's 2,000, for speed: on
        Adult with a 100-tree forest, 2,000 per side take about 27 s a point, 500 about 6 s).
    worst_case_reps : int, default 5
        Repetitions of SACRO-ML's worst-case attack (and as many baseline repetitions on
        permuted labels); the audit runs 10 (about 38 s a point on Adult with a forest).
    n_jobs : int or None, default 1
        Reference models trained at once (threads).
    random_state : int, default 0
    bootstrap : int, default 200
        Bootstrap replicates of the 95 % confidence intervals (columns ``*_lo`` / ``*_hi``:
        accuracy raw and mapped, their loss against the undefended model as a paired
        difference on the same resampled test rows, attack AUC, TPR at 0.1 % FPR); the
        percentile bootstrap over the evaluation rows (Efron & Tibshirani 1993), seeded by
        ``random_state``; 0 leaves the intervals out. See
        :mod:`anonml._frontier._uncertainty`.
    progress : callable, optional
        The one progress protocol (:mod:`anonml._progress`): as each step of each point
        starts, ``progress("point i/n: <method> k=<k>: <step>", 0, None)`` and the count of
        finished points ``progress("frontier points", done, n)``, ending with
        ``done == n``; inside the attacks, their counted parts (``"RMIA reference
        models"``, ...).

    Returns
    -------
    FrontierResult
    """
    from anonml.attacks import Target
    from anonml._frontier._result import FrontierResult

    t_start = time.perf_counter()
    cpu_start = time.process_time()
    # --- everything that can be refused, before any work ---------------------------------
    methods = _check_methods(methods)
    X_train = _frame(X_train, "X_train")
    X_test = _frame(X_test, "X_test")
    if not methods or (isinstance(ks, (list, tuple)) and not ks):
        raise InputError("the sweep is empty (no method or no k); fix: give at least one "
                         "method and one k, e.g. methods=('ag',), ks=(10,)")
    ks = _check_ks(ks, len(X_train))
    y_name = getattr(y_train, "name", None)  # the label may be the sensitive attribute
    y_train = _labels(y_train, len(X_train), "y_train", "training")
    y_test = _labels(y_test, len(X_test), "y_test", "test")
    if list(X_train.columns) != list(X_test.columns):
        raise InputError("X_test has other columns than X_train; fix: give the same columns "
                         "in the same order (without the target)")
    qi = list(quasi_identifiers or [])
    if not qi:
        raise InputError("quasi_identifiers is empty; fix: name the columns, e.g. "
                         "quasi_identifiers=['age', 'sex']")
    missing = [c for c in qi if c not in set(X_train.columns)]
    if missing:
        raise InputError(f"quasi-identifier {missing[0]!r} is not a column; columns are: "
                         f"{names_list(X_train.columns)}")
    if (l is not None or t is not None) and sensitive is None:
        raise InputError("l and t need sensitive=COLUMN, the attribute to protect")
    label = None  # the labels, when they are the sensitive attribute
    if sensitive is not None and sensitive not in set(X_train.columns):
        if sensitive != y_name or y_name is None:
            raise InputError(f"sensitive={sensitive!r} is neither a column of X_train "
                             f"(columns are: {names_list(X_train.columns)}) nor the name of "
                             "y_train; fix: name a column, or pass y_train as a pandas Series "
                             "of that name to protect the label")
        label = y_train
    if attack not in ("rmia", "lira"):
        raise InputError(f"attack={attack!r}; fix: choose 'rmia' or 'lira'")
    if reference not in ("shared", "matched"):
        raise InputError(f"reference={reference!r}; fix: choose 'shared' or 'matched'")
    check_int("n_reference", n_reference, low=2, example=4)
    if attack == "lira" and n_reference < 4:
        raise InputError("LiRA needs n_reference >= 4 shadow models; fix: n_reference=4")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, numbers.Integral) or not (
            bootstrap == 0 or bootstrap >= 20):
        raise InputError(f"bootstrap={bootstrap!r} must be 0 (no intervals) or a whole number "
                         ">= 20 of replicates, e.g. 200")
    features = list(attribute_features) if attribute_features is not None else qi
    categorical = [c for c in X_train.columns
                   if not pd.api.types.is_numeric_dtype(X_train[c])]
    given, model_name = _resolve_model(model, estimator, X_train, trust_model, random_state)
    template = plain_clone(given)

    n_points = 1 + len(methods) * len(ks) + (1 if dp else 0)
    done = 0

    progress = check_progress(progress)
    say = announce(progress)

    def tell(what: str, step: str) -> None:
        say(f"point {min(done + 1, n_points)}/{n_points}: {what}: {step}")
        progress(POINTS, done, n_points)

    notes: list[str] = []
    rows: list[dict] = []

    def measure(fitted: Any, what: str, own_estimator: Any, shared: Any) -> dict:
        target = Target(fitted, X_train, y_train, X_test, y_test)
        return attack_point(
            target, attack=attack, shared=shared, n_reference=n_reference,
            shadow_estimator=own_estimator, attribute_features=features,
            categorical=[c for c in categorical if c in set(features)],
            max_attribute_records=max_attribute_records, random_state=random_state,
            worst_case_reps=worst_case_reps, n_jobs=n_jobs, progress=lambda step, *_: tell(what, step),
            bootstrap=int(bootstrap), bootstrap_seed=_seed(random_state, 1))

    # the accuracies' bootstrap: one index matrix of the test rows for every point (paired)
    from anonml._frontier._uncertainty import accuracy_replicates, index_matrix, interval

    boot_idx = (index_matrix(len(X_test), int(bootstrap),
                             np.random.default_rng(_seed(random_state, 0)))
                if bootstrap else None)
    base_reps: list = []

    def scored(model: Any, X: Any, name: str) -> dict:
        correct = np.asarray(model.predict(X)) == np.asarray(y_test)
        out = {name: float(np.mean(correct))}
        if boot_idx is not None:
            reps = accuracy_replicates(correct, boot_idx)
            out[f"{name}_lo"], out[f"{name}_hi"] = interval(reps)
            if not base_reps:
                base_reps.append(reps)  # the undefended model's, scored first
            loss = "accuracy_loss" + name[len("accuracy"):]
            out[f"{loss}_lo"], out[f"{loss}_hi"] = interval(base_reps[0] - reps)
        return out

    # --- the undefended model --------------------------------------------------------------
    t0 = time.perf_counter()
    tell("undefended", "fit")
    try:
        undefended, was_fitted = fitted_or_fit(given, X_train, y_train)
    except AnonmlError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model: one line
        raise InputError(f"the model could not be fitted on the training rows "
                         f"({type(exc).__name__}: {one_line(exc, 200)}); fix: give a model "
                         "that accepts these columns") from None
    acc0 = scored(undefended, X_test, "accuracy")
    shared = None
    if attack == "rmia":
        tell("undefended", f"{n_reference} shared reference models")
        shared = SharedReference(Target(undefended, X_train, y_train, X_test, y_test),
                                 template, n_reference, n_jobs=n_jobs,
                                 random_state=random_state)
    row = {"method": "none", "k": None, "epsilon": None, "status": "ok",
           **acc0, "accuracy_mapped": None, "ncp": 0.0, "gcp": 0.0,
           "groups": len(X_train)}
    row.update(measure(undefended, "undefended", template, shared))
    if shared is not None:
        row["reference_models"] = "shared (trained here)"
    row["seconds"] = time.perf_counter() - t0
    rows.append(row)
    done += 1
    guide = np.asarray(undefended.predict(X_train))

    # --- methods × k -------------------------------------------------------------------------
    from anonml.anonymize import summarize
    from anonml.anonymize._model import map_rows

    for method in methods:
        for k in ks:
            what = f"{method} k={k}"
            t0 = time.perf_counter()
            row = {"method": method, "k": k, "epsilon": None}
            try:
                tell(what, "anonymize")
                anonymizer = _anonymizer(method, k, qi, sensitive, l, t, random_state)
                X_anon = anonymizer.fit_transform(X_train, guide if method == "ag" else y_train,
                                                  **({} if label is None else
                                                     {"sensitive_values": label}))
                summary = summarize(anonymizer, X_train)
                tell(what, "retrain")
                retrained = clone(template).fit(X_anon, y_train)
                tell(what, "score")
                row.update(status="ok", **scored(retrained, X_test, "accuracy"),
                           **scored(retrained, map_rows(anonymizer, X_test), "accuracy_mapped"),
                           ncp=summary["ncp"], gcp=summary["gcp"], groups=summary["groups"])
                own = None
                point_shared = shared
                if reference == "matched" or attack == "lira":
                    point_shared = None
                    own = AnonymizeThenFit(_anonymizer(method, k, qi, sensitive, l, t,
                                                       random_state), template)
                row.update(measure(retrained, what, own, point_shared))
            except AnonmlError as exc:  # this point cannot be made (e.g. l unreachable)
                row.update(status=f"failed: {one_line(exc, 300)}")
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            done += 1

    # --- the DP baseline ---------------------------------------------------------------------
    if dp:
        t0 = time.perf_counter()
        fam = family(template)
        tell("DP baseline", "fit")
        dp_model, dp_name = (None, "")
        row = {"method": "dp", "k": None, "epsilon": float(dp_epsilon)}
        try:
            dp_model, dp_name = dp_baseline(fam, X_train, X_test, np.concatenate(
                [y_train, y_test]), dp_epsilon, random_state)
            if dp_model is None:
                row["status"] = f"unavailable: {dp_name}"
            else:
                fitted = clone(dp_model).fit(X_train, y_train)
                row.update(status="ok", **scored(fitted, X_test, "accuracy"),
                           ncp=None, gcp=None, groups=None)
                row.update(measure(fitted, "DP baseline", dp_model, None))
        except (AnonmlError, ImportError) as exc:
            row["status"] = f"unavailable: {one_line(exc, 300)}"
        row["model"] = dp_name or None
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        done += 1
    progress(POINTS, n_points, n_points)

    if shared is not None:
        notes.append(f"RMIA's {n_reference} reference models imitate the undefended training "
                     "procedure and are shared by every anonymized point (trained once, "
                     f"{shared.seconds:.1f} s)" + ("" if reference == "shared" else "; "
                     "reference='matched' trains each point's own"))
    if any(not r.get("tpr_measurable", True) for r in rows if r["status"] == "ok"):
        notes.append("TPR at 0.1% FPR is not measurable with fewer than 1,000 test rows "
                     "(non-members); it is NaN where tpr_measurable is False")
    settings = {
        "model": model_name, "undefended_was_fitted": bool(was_fitted),
        "methods": methods, "ks": ks, "quasi_identifiers": [str(c) for c in qi],
        "sensitive": sensitive, "l": l, "t": t, "attack": attack,
        "n_reference": int(n_reference), "reference": reference,
        "worst_case_reps": worst_case_reps, "max_attribute_records": max_attribute_records,
        "dp_epsilon": dp_epsilon, "bootstrap": int(bootstrap),
        "interval": ("95% percentile bootstrap over the evaluation rows" if bootstrap
                     else None),
        "n_train": len(X_train), "n_test": len(X_test), "random_state": random_state,
        "seconds_total": time.perf_counter() - t_start,
        "cpu_seconds_total": time.process_time() - cpu_start,
    }
    return FrontierResult(pd.DataFrame(rows), settings, notes)
