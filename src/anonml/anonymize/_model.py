"""End to end: predictions → anonymize → retrain a clone of the model → compare."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as _SkNotFitted
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError
from anonml._progress import ProgressCallback, announce
from anonml.anonymize._accuracy_guided import AccuracyGuidedAnonymizer

__all__ = ["AnonymizationResult", "anonymize_model", "release_copy", "release_pipeline",
           "retrain"]

#: per-row (or per-training-point) attributes a saved mapping never holds
PER_ROW_ATTRIBUTES = ("groups_", "suppressed_", "representative_rows_", "timings_",
                      "_partition_timings")

#: the fitted attributes a release copy holds, per class, beside the constructor's parameters
#: (``get_params``) and :data:`RELEASE_OPTIONAL`: what ``transform`` needs and nothing else.
#: The routing tree ``route_`` replaces every encoder, tree, grid and curve (their value
#: lists, per-node counts and thresholds between adjacent training values); group sizes and
#: row counts are not kept (each group holds at least k rows, which ``measure_mapping``
#: re-derives from the training rows).
_RELEASE_COMMON = ("n_features_in_", "columns_", "qi_", "categorical_", "recoding_",
                   "n_groups_", "suppressed_groups_", "merge_map_", "representatives_",
                   "route_", "t_distance_")
RELEASE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "AccuracyGuidedAnonymizer": _RELEASE_COMMON + ("tree_method_",),
    "MondrianAnonymizer": _RELEASE_COMMON,
    "HilbertAnonymizer": _RELEASE_COMMON,
    "RTreeAnonymizer": _RELEASE_COMMON,
}
#: fitted attributes a release copy holds when the anonymizer has them (column names of a
#: DataFrame fitted with string column names)
RELEASE_OPTIONAL = ("feature_names_in_",)


@dataclass
class AnonymizationResult:
    """What :func:`anonymize_model` returns.

    Attributes
    ----------
    model : estimator
        A clone of the input model, refitted on the anonymized data.
    anonymizer : AccuracyGuidedAnonymizer
        The fitted anonymizer; ``anonymizer.transform(X_new)`` applies the same mapping to new
        rows (see ``map_test``).
    pipeline : sklearn.pipeline.Pipeline
        ``Pipeline([("mapping", anonymizer), ("model", model)])``: the model to release. Its
        mapping is a copy of ``anonymizer`` without per-row state that routes categories unseen
        in fit (``handle_unknown="ignore"``), so ``pipeline.predict(X_new)`` maps any rows like
        the training rows first. Save it with :func:`anonml.safemodel.save_model` (``.skops``);
        ``anonml audit --model`` re-verifies its mapping (docs/release.md).
    X_anonymized : DataFrame or ndarray
        The anonymized training data (verified k-anonymous on the quasi-identifiers).
    summary : dict
        Plain numbers only, no records: ``k``, ``n_rows``, ``n_quasi_identifiers``,
        ``n_groups``, ``min_class_size``, ``tree``, ``accuracy_before``, ``accuracy_after``,
        ``accuracy_after_mapped`` (test rows mapped through the anonymizer first), and the
        seconds spent (``seconds_fit_original``, 0 for a fitted model; ``seconds_predict``,
        the original model's predictions on ``X``; ``seconds_anonymize``, ``seconds_refit``,
        ``seconds_total``). Accuracies are None without test data.
    """

    model: Any
    anonymizer: AccuracyGuidedAnonymizer
    X_anonymized: Any
    summary: dict = field(default_factory=dict)
    pipeline: Any = None


def release_copy(anonymizer: Any, *, in_pipeline: bool = False, _legacy: bool = False) -> Any:
    """A copy of a fitted anonymizer that holds only what routing needs, for a file that
    leaves the holder.

    The copy keeps the constructor's parameters and the attributes
    :data:`RELEASE_ATTRIBUTES` lists for its class: the columns, the representatives (the
    only training values in it) and the routing tree ``route_``
    (:class:`anonml.anonymize._routing.RoutingTree`: splits on raw values whose thresholds are
    the roundest numbers between the training values they separate, categorical splits that
    name one side's categories only). No encoder (value lists), no fitted tree (per-node
    counts), no group sizes, no generalization hierarchies (the ``hierarchies`` parameter is
    set to None: routing does not read them).

    Without category lists the copy cannot tell a category unseen in fit from a training
    category the anonymized table does not show (a list of the training categories would
    reveal the values the table hides): both follow each split's stated default branch. The
    copy says so: its ``handle_unknown`` is recorded as ``"ignore"`` (set to ``"error"`` it
    still routes them, with an :class:`~anonml._errors.AnonmlWarning`; ``anonml transform``
    prints that warning unless given ``--handle-unknown ignore``). See docs/release.md.

    Parameters
    ----------
    anonymizer : fitted anonymizer
    in_pipeline : bool, default False
        Refuse mappings that hold training records (SaNGreeA's distinct training points).

    Returns
    -------
    anonymizer
        Same class, ``handle_unknown="ignore"`` (a copy with a routing tree) and ``copy=True``
        (its ``transform`` returns a new table, never rewrites the caller's); ``transform`` of
        the training rows gives the same output as ``fit_transform``, and new rows are routed
        by the rounded thresholds. The original is
        unchanged. (An anonymizer without a routing tree, SaNGreeA, is copied without its
        per-row state only.)
    """
    if in_pipeline and "_train_points" in anonymizer.__dict__:
        raise InputError(
            f"a {type(anonymizer).__name__} mapping holds every distinct training QI vector "
            "(it routes training rows by them), so it cannot be released in a pipeline; fix: "
            "anonymize with the accuracy-guided, Mondrian, Hilbert or R+-tree method")
    name = type(anonymizer).__name__
    if _legacy or name not in RELEASE_ATTRIBUTES or anonymizer.__dict__.get("route_") is None:
        return _legacy_copy(anonymizer)
    out = object.__new__(type(anonymizer))
    d = anonymizer.__dict__
    keep = set(anonymizer.get_params(deep=False)) | set(RELEASE_ATTRIBUTES[name]) | \
        set(RELEASE_OPTIONAL)
    out.__dict__.update({k: v for k, v in d.items() if k in keep})
    out.merge_map_ = None  # folded into the routing tree's leaves
    # no category lists: an unseen category follows each split's default branch, as "ignore"
    out.handle_unknown = "ignore"
    _returns_new_tables(out)
    if out.__dict__.get("hierarchies") is not None:
        out.hierarchies = None  # their category lists are not needed to route
    return out


def _legacy_copy(anonymizer: Any) -> Any:
    """The release copy before issue 19: every fitted attribute but the per-row ones (value
    lists, per-node counts and all); kept for comparison (benchmarks) and for anonymizers
    without a routing tree."""
    out = object.__new__(type(anonymizer))
    out.__dict__.update({k: v for k, v in anonymizer.__dict__.items()
                         if k not in PER_ROW_ATTRIBUTES and k != "route_"})
    model = out.__dict__.get("model_")
    if dataclasses.is_dataclass(model) and getattr(model, "codes", None) is not None:
        out.model_ = dataclasses.replace(model, codes=np.zeros(0, dtype=np.int64))
    _returns_new_tables(out)
    return out


def _returns_new_tables(mapping: Any) -> None:
    """A released mapping's ``transform`` returns a new table (``copy=True``), whatever the
    anonymizer was fitted with: ``pipeline.predict(X)`` must not rewrite the caller's ``X``."""
    if "copy" in mapping.__dict__:
        mapping.copy = True


def release_pipeline(anonymizer: Any, model: Any, *, _legacy: bool = False) -> Any:
    """``Pipeline([("mapping", release_copy(anonymizer)), ("model", model)])``; the mapping
    routes categories unseen in fit instead of refusing them (any row can be scored)."""
    from sklearn.pipeline import Pipeline

    mapping = release_copy(anonymizer, _legacy=_legacy)
    mapping.handle_unknown = "ignore"
    return Pipeline([("mapping", mapping), ("model", model)])


def _score(model: Any, X: Any, y: Any) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == np.asarray(y)))


def _clone(model: Any) -> Any:
    try:
        return clone(model)
    except (TypeError, RuntimeError, AttributeError, ValueError):
        raise InputError(
            f"model of type {type(model).__name__} cannot be cloned for retraining; pass a "
            "scikit-learn compatible estimator (get_params/fit), or anonymize with an "
            "anonymizer and retrain it yourself"
        ) from None


def map_rows(anonymizer: Any, X: Any) -> Any:
    """``anonymizer.transform(X)``, with categories unseen in fit routed instead of refused
    (test rows may hold values the training rows lack), into a new table (``copy=True``)."""
    chosen = anonymizer.handle_unknown
    # the rows are the caller's (test rows scored again later): never recoded in place
    copy = {"copy": anonymizer.copy} if "copy" in anonymizer.get_params(deep=False) else {}
    try:
        return anonymizer.set_params(handle_unknown="ignore",
                                     **({"copy": True} if copy else {})).transform(X)
    finally:
        anonymizer.set_params(handle_unknown=chosen, **copy)


def retrain(
    model: Any,
    X_anonymized: Any,
    y: Any,
    *,
    anonymizer: Any = None,
    X_test: Any = None,
    y_test: Any = None,
    progress: ProgressCallback | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Refit a clone of ``model`` on anonymized data and compare accuracies.

    Parameters
    ----------
    model : estimator
        The original model, fitted (its accuracy on ``X_test`` is the baseline; an unfitted
        model gives no baseline). A clone (:func:`sklearn.base.clone`) is refitted.
    X_anonymized : DataFrame or 2-D array
        The anonymized training data (an anonymizer's ``fit_transform`` output).
    y : array-like
        The labels to refit on (the true labels of the training rows).
    anonymizer : fitted anonymizer, optional
        Maps the test rows like the training rows, for ``accuracy_after_mapped``.
    X_test, y_test : optional
        Held-out data, raw (not anonymized).
    progress : callable, optional
        ``progress(step, 0, None)`` as each step starts (the one progress protocol,
        :mod:`anonml._progress`).

    Returns
    -------
    (retrained model, dict)
        ``accuracy_before`` (the original model on the raw test rows), ``accuracy_after``
        (the retrained clone on the raw test rows), ``accuracy_after_mapped`` (the clone on
        the test rows mapped through ``anonymizer.transform``), each None when it cannot be
        measured, and ``seconds_refit``.
    """
    say = announce(progress)
    if (X_test is None) != (y_test is None):
        raise InputError("pass X_test and y_test together (or neither)")
    template = _clone(model)
    say("retraining a clone of the model on the anonymized data")
    t0 = time.perf_counter()
    retrained = template.fit(X_anonymized, y)
    out: dict[str, Any] = {"accuracy_before": None, "accuracy_after": None,
                           "accuracy_after_mapped": None,
                           "seconds_refit": round(time.perf_counter() - t0, 3)}
    if X_test is None:
        return retrained, out
    say("scoring on the test data")
    try:
        check_is_fitted(model)
        fitted = True
    except (_SkNotFitted, TypeError):
        fitted = False
    if fitted:
        out["accuracy_before"] = _score(model, X_test, y_test)
    out["accuracy_after"] = _score(retrained, X_test, y_test)
    if anonymizer is not None:
        out["accuracy_after_mapped"] = _score(retrained, map_rows(anonymizer, X_test), y_test)
    return retrained, out


def anonymize_model(
    model: Any,
    X: Any,
    k: int,
    quasi_identifiers: Sequence[Any] | None,
    *,
    y: Any = None,
    predictions: Any = None,
    guide: str = "predictions",
    X_test: Any = None,
    y_test: Any = None,
    progress: ProgressCallback | None = None,
    **anonymizer_params: Any,
) -> AnonymizationResult:
    """Anonymize a model's training data along its own predictions, and retrain it.

    Parameters
    ----------
    model : estimator
        A scikit-learn compatible estimator or pipeline. Used fitted to get predictions on
        ``X`` unless ``predictions`` is given; a clone of it is refitted on the anonymized data.
        An unfitted model is first fitted on ``(X, y)`` to serve as the original model.
    X : DataFrame or 2-D array
        The model's training data.
    k : int
        Smallest equivalence-class size.
    quasi_identifiers : list
        QI columns; None means every column.
    y : array-like, optional
        True labels of ``X``; the clone is refitted on them. Without them the clone is refitted
        on the original model's predictions (a distillation) and no baseline is fitted.
    predictions : array-like, optional
        The original model's predictions on ``X``, for a black-box model whose ``predict``
        cannot be called here; ``model`` then only serves as the template to clone. With
        ``guide="proba"``, its probabilities of the positive class instead.
    guide : {"predictions", "proba"}, default "predictions"
        What the tree is fitted on. ``"predictions"``: the model's class predictions (the
        paper). ``"proba"``: a binary classifier's probability of its second class, with a
        regression tree, so that groups gather records of similar predicted risk; on Adult
        (12 QI, NN, ``tree="hist"``) this gave the smallest loss on mapped test rows at
        k = 100 ... 1000 (docs/results.md). The representative is then the group's medoid.
    X_test, y_test : optional
        Held-out data for the accuracy before and after.
    progress : callable, optional
        ``progress(step, 0, None)`` as each step starts (the one progress protocol,
        :mod:`anonml._progress`; the CLI shows it).
    **anonymizer_params
        Passed to :class:`AccuracyGuidedAnonymizer` (``representative``, ``tree``, ...).

    Returns
    -------
    AnonymizationResult
    """
    say = announce(progress)
    if guide not in ("predictions", "proba"):
        raise InputError(f"guide={guide!r}; use 'predictions' or 'proba'")
    if guide == "proba":
        anonymizer_params.setdefault("task", "regression")
    if guide == "proba" and y is None:
        raise InputError("guide='proba' needs the true labels y to retrain the model")
    if (X_test is None) != (y_test is None):
        raise InputError("pass X_test and y_test together (or neither)")
    template = _clone(model)  # before any work: the retrained model is a clone of this one
    t0 = time.perf_counter()
    t_fit = t0
    original = model
    if predictions is None:
        try:
            check_is_fitted(model)
        except _SkNotFitted:
            if y is None:
                raise InputError(
                    "the model is not fitted and y is missing; fit the model, or pass y"
                ) from None
            say("fitting the original model")
            original = clone(template).fit(X, y)
        t_fit = time.perf_counter()
        say("predicting on the training data")
        if guide == "proba":
            if not hasattr(original, "predict_proba"):
                raise InputError(
                    f"guide='proba' needs a model with predict_proba; {type(original).__name__} "
                    "has none; use guide='predictions'"
                )
            proba = np.asarray(original.predict_proba(X))
            if proba.ndim != 2 or proba.shape[1] != 2:
                raise InputError(
                    f"guide='proba' supports binary classifiers; this model gives {proba.shape[-1]} "
                    "class probabilities; use guide='predictions'"
                )
            pred = proba[:, 1]
        else:
            pred = np.asarray(original.predict(X))
    else:
        pred = np.asarray(predictions)
        if y is None:
            raise InputError("with predictions=..., pass the true labels y to retrain the model")
    t1 = time.perf_counter()

    say(f"anonymizing (k={k})")
    anonymizer = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=quasi_identifiers, **anonymizer_params)
    X_anon = anonymizer.fit_transform(X, pred)
    t2 = time.perf_counter()

    say("retraining the model on the anonymized data")
    retrained = clone(template).fit(X_anon, pred if y is None else y)
    t3 = time.perf_counter()

    summary: dict[str, Any] = {
        "k": int(k),
        "n_rows": int(len(X_anon)),
        "n_quasi_identifiers": len(anonymizer.qi_),
        "n_groups": int(anonymizer.n_groups_),
        "min_class_size": int(anonymizer.min_class_size_),
        "tree": anonymizer.tree_method_,
        "accuracy_before": None,
        "accuracy_after": None,
        "accuracy_after_mapped": None,
    }
    if X_test is not None:
        say("scoring on the test data")
        if predictions is None:
            summary["accuracy_before"] = _score(original, X_test, y_test)
        summary["accuracy_after"] = _score(retrained, X_test, y_test)
        summary["accuracy_after_mapped"] = _score(retrained, map_rows(anonymizer, X_test), y_test)
    t4 = time.perf_counter()
    summary.update(
        seconds_fit_original=round(t_fit - t0, 3),
        seconds_predict=round(t1 - t_fit, 3),
        seconds_anonymize=round(t2 - t1, 3),
        seconds_refit=round(t3 - t2, 3),
        seconds_total=round(t4 - t0, 3),
    )
    return AnonymizationResult(retrained, anonymizer, X_anon, summary,
                               pipeline=release_pipeline(anonymizer, retrained))
