"""Which family of the rules a model belongs to, and the facts the rules read from it.

Families are found by the classes in the model's MRO, by name, so that no optional library
(xgboost, torch, diffprivlib) is imported to ask; a safe wrapper belongs to the family of the
estimator it subclasses, and the generic :class:`~anonml.safemodel.SafeModel` to the family
of the estimator it holds.
"""

from __future__ import annotations

import functools
import math
from typing import Any

# most specific first (DPSGDClassifier subclasses MLPTorchClassifier); matched by top-level
# package and class name, so private module moves inside a library do not matter
_BY_CLASS = (
    ("anonml", "DPRandomForestClassifier", "dp_random_forest"),
    ("anonml", "DPLogisticRegression", "dp_logistic_regression"),
    ("anonml", "DPSGDClassifier", "dp_sgd"),
    ("anonml", "DPSVC", "dp_svm"),
    ("anonml", "MLPTorchClassifier", "mlp"),
    ("xgboost", "XGBClassifier", "xgboost"),
    ("sklearn", "DecisionTreeClassifier", "decision_tree"),
    ("sklearn", "RandomForestClassifier", "random_forest"),
    ("sklearn", "ExtraTreesClassifier", "extra_trees"),
    ("sklearn", "GradientBoostingClassifier", "gradient_boosting"),
    ("sklearn", "HistGradientBoostingClassifier", "hist_gradient_boosting"),
    ("sklearn", "MLPClassifier", "mlp"),
    ("sklearn", "LogisticRegression", "logistic_regression"),
    ("sklearn", "KNeighborsClassifier", "knn"),
    ("sklearn", "RadiusNeighborsClassifier", "knn"),
    ("sklearn", "SVC", "svm"),
    ("sklearn", "NuSVC", "svm"),
)
# families whose fitted model holds training records verbatim (support vectors, the kNN index);
# not "dp_svm": anonml's DP SVC holds random frequencies and one noisy weight vector, no record
STORES_RECORDS = ("knn", "svm")
# where the estimators of each family live ("module:Class"), for the hyperparameter names a
# rule may check; the classes of _BY_CLASS, each under its family ("generic": any estimator)
ESTIMATORS = {
    "decision_tree": ("sklearn.tree:DecisionTreeClassifier",),
    "random_forest": ("sklearn.ensemble:RandomForestClassifier",),
    "extra_trees": ("sklearn.ensemble:ExtraTreesClassifier",),
    "gradient_boosting": ("sklearn.ensemble:GradientBoostingClassifier",),
    "hist_gradient_boosting": ("sklearn.ensemble:HistGradientBoostingClassifier",),
    "xgboost": ("xgboost:XGBClassifier",),
    "mlp": ("sklearn.neural_network:MLPClassifier", "anonml.dp:MLPTorchClassifier"),
    "logistic_regression": ("sklearn.linear_model:LogisticRegression",),
    "dp_random_forest": ("anonml.dp:DPRandomForestClassifier",),
    "dp_logistic_regression": ("anonml.dp:DPLogisticRegression",),
    "dp_sgd": ("anonml.dp:DPSGDClassifier",),
    "dp_svm": ("anonml.dp:DPSVC",),
    "knn": ("sklearn.neighbors:KNeighborsClassifier",
            "sklearn.neighbors:RadiusNeighborsClassifier"),
    "svm": ("sklearn.svm:SVC", "sklearn.svm:NuSVC"),
    "generic": (),
}

#: anonml's safe wrappers as a model file names them (module, class), data only: the file
#: readers vet and rebuild them by these names and never import :mod:`anonml.safemodel`
#: (skops builds a wrapper named in a file like any vetted class)
SAFE_WRAPPERS = "anonml.safemodel._wrappers"
SAFE_OPTIONAL = "anonml.safemodel._optional"
SAFE_MODEL = (SAFE_WRAPPERS, "SafeModel")
#: the estimator each safe wrapper subclasses, by the module scikit-learn's classes record
SAFE_BASES: dict[tuple[str, str], tuple[str, str]] = {
    (SAFE_WRAPPERS, "SafeDecisionTreeClassifier"): ("sklearn.tree._classes",
                                                    "DecisionTreeClassifier"),
    (SAFE_WRAPPERS, "SafeRandomForestClassifier"): ("sklearn.ensemble._forest",
                                                    "RandomForestClassifier"),
    (SAFE_WRAPPERS, "SafeExtraTreesClassifier"): ("sklearn.ensemble._forest",
                                                  "ExtraTreesClassifier"),
    (SAFE_WRAPPERS, "SafeGradientBoostingClassifier"): ("sklearn.ensemble._gb",
                                                        "GradientBoostingClassifier"),
    (SAFE_WRAPPERS, "SafeHistGradientBoostingClassifier"): (
        "sklearn.ensemble._hist_gradient_boosting.gradient_boosting",
        "HistGradientBoostingClassifier"),
    (SAFE_WRAPPERS, "SafeMLPClassifier"): ("sklearn.neural_network._multilayer_perceptron",
                                           "MLPClassifier"),
    (SAFE_WRAPPERS, "SafeLogisticRegression"): ("sklearn.linear_model._logistic",
                                                "LogisticRegression"),
    (SAFE_OPTIONAL, "SafeDPRandomForestClassifier"): ("anonml.dp._diffprivlib",
                                                      "DPRandomForestClassifier"),
    (SAFE_OPTIONAL, "SafeDPLogisticRegression"): ("anonml.dp._diffprivlib",
                                                  "DPLogisticRegression"),
    (SAFE_OPTIONAL, "SafeDPSVC"): ("anonml.dp._svc", "DPSVC"),
    (SAFE_OPTIONAL, "SafeXGBClassifier"): ("xgboost.sklearn", "XGBClassifier"),
}

@functools.lru_cache(maxsize=None)
def family_param_names(family: str) -> frozenset | None:
    """The hyperparameter names (``get_params()`` keys) of the estimators of ``family``;
    ``None`` when they cannot be known: ``"generic"`` (any estimator), or an optional library
    (xgboost) that is not installed."""
    import importlib

    paths = ESTIMATORS.get(family)
    if not paths:
        return None
    names: set = set()
    for path in paths:
        module, _, cls = path.partition(":")
        try:
            names.update(getattr(importlib.import_module(module), cls)().get_params(deep=False))
        except Exception:  # the library is missing or broken: its names as anonml knows them
            known = _KNOWN_PARAMS.get(path)
            if known is None:
                return None
            names.update(known)
    return frozenset(names)


#: ``get_params()`` keys of optional estimators, for checking rules where the library is not
#: installed (XGBClassifier, xgboost 2-3)
_KNOWN_PARAMS: dict[str, frozenset] = {
    "xgboost:XGBClassifier": frozenset({
        "base_score", "booster", "callbacks", "colsample_bylevel", "colsample_bynode",
        "colsample_bytree", "device", "early_stopping_rounds", "enable_categorical",
        "eval_metric", "feature_types", "feature_weights", "gamma", "grow_policy",
        "importance_type", "interaction_constraints", "learning_rate", "max_bin",
        "max_cat_threshold", "max_cat_to_onehot", "max_delta_step", "max_depth", "max_leaves",
        "min_child_weight", "missing", "monotone_constraints", "multi_strategy", "n_estimators",
        "n_jobs", "num_parallel_tree", "objective", "random_state", "reg_alpha", "reg_lambda",
        "sampling_method", "scale_pos_weight", "subsample", "tree_method",
        "validate_parameters", "verbosity"}),
}


def _class_keys(obj: Any) -> set:
    return {(c.__module__.split(".")[0], c.__name__) for c in type(obj).__mro__}


def _is_pipeline(obj: Any) -> bool:
    return ("sklearn", "Pipeline") in _class_keys(obj) and hasattr(obj, "steps")


def final_step(model: Any, X: Any = None) -> tuple[Any, Any]:
    """``(estimator, X as that estimator sees it)``: the estimator inside a generic
    :class:`SafeModel` (the fitted one when fitted), and the final step of a scikit-learn
    ``Pipeline``, with ``X`` transformed through the steps before it."""
    if getattr(model, "_anonml_generic", False):
        inner = getattr(model, "estimator_", None)
        return final_step(inner if inner is not None else model.estimator, X)
    if _is_pipeline(model) and model.steps:
        if X is not None and len(model.steps) > 1:
            X = model[:-1].transform(X)
        return final_step(model.steps[-1][1], X)
    return model, X


def unwrap(model: Any) -> Any:
    """The estimator the rules are about (see :func:`final_step`)."""
    return final_step(model)[0]


def describe_model(model: Any) -> str:
    """``"RandomForestClassifier"``, ``"Pipeline(encode → SafeRandomForestClassifier)"``,
    ``"SafeModel(KNeighborsClassifier)"``: the class names a checker recognises."""
    if getattr(model, "_anonml_generic", False):
        inner = getattr(model, "estimator_", None)
        return f"{type(model).__name__}({describe_model(inner or model.estimator)})"
    if _is_pipeline(model) and model.steps:
        names = [name for name, _ in model.steps[:-1]]
        return f"Pipeline({' → '.join([*names, describe_model(model.steps[-1][1])])})"
    return type(model).__name__


def model_family(model: Any) -> str:
    """The rules family of ``model`` (see :data:`anonml.safemodel.FAMILIES`)."""
    keys = _class_keys(unwrap(model))
    for package, name, family in _BY_CLASS:
        if (package, name) in keys:
            return family
    return "generic"


def _json_scalar(value: Any) -> Any:
    """Hyperparameter value as a JSON scalar: numbers, bools, strings and None as they are,
    anything else (arrays, estimators, callables) by a short description."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # a file's text, shown in the report: bounded
        return value if len(value) <= 200 else value[:197] + "..."
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _json_scalar(value.item())
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float, str, bool)) for v in value) and len(value) <= 16:
        return str(list(value))
    if hasattr(value, "get_params"):
        return type(value).__name__
    if callable(value):
        return getattr(value, "__name__", type(value).__name__)
    return f"<{type(value).__name__}>"


def rule_params(model: Any) -> dict:
    """The raw hyperparameters the rules compare (numbers and flags kept as they are)."""
    inner = unwrap(model)
    try:
        return dict(inner.get_params(deep=False))
    except Exception:  # not a scikit-learn estimator
        return {}


def model_params(model: Any) -> dict:
    """:func:`rule_params` as JSON scalars, for the report; array-valued parameters (e.g. DP
    bounds) are described, never copied; a deprecated parameter left at scikit-learn's
    placeholder ``"deprecated"`` is not a hyperparameter and is left out."""
    return {str(k): _json_scalar(v) for k, v in sorted(rule_params(model).items())
            if not (isinstance(v, str) and v == "deprecated")}  # scikit-learn's placeholder


def dp_measures(model: Any) -> dict:
    """``dp.epsilon``, ``dp.delta``, ``dp.noise_multiplier`` of a DP model, where known."""
    inner = unwrap(model)
    family = model_family(inner)
    if not family.startswith("dp_"):
        return {}
    out = {}
    eps = getattr(inner, "epsilon_spent_", None)
    if eps is None:
        eps = getattr(inner, "epsilon", None)
    if eps is not None:
        out["dp.epsilon"] = float(eps)
    if getattr(inner, "delta", None) is not None:
        out["dp.delta"] = float(inner.delta)
    elif family != "dp_sgd":
        out["dp.delta"] = 0.0  # pure epsilon-DP (diffprivlib's forest and regression)
    noise = getattr(inner, "noise_multiplier_", None)
    if noise is None:
        noise = getattr(inner, "noise_multiplier", None)
    if noise is not None:
        out["dp.noise_multiplier"] = float(noise)
    return out
