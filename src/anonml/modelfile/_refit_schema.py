"""Refits from a schema, not from the file: a new estimator built only from bounded parameters.

The audit refits copies of a submitted model (LiRA/RMIA reference models, ``--retrain``, the
frontier). Cloning the file's estimator would refit it with every hyperparameter the file chose,
and the file's author may be hostile: ``Pipeline(memory=DIR)`` makes joblib write and unpickle a
cache at a path the file names (code execution), ``n_jobs=2000`` starts 2,000 workers, and
``max_iter=10**6`` with early stopping off, or ``hidden_layer_sizes=(100000, 100000)``
(74.5 GiB of weights), costs hours or tens of GiB per refit.

:func:`rebuild_for_refit` therefore builds a **new, unfitted** estimator:

* the class is looked up by the ``(module, qualname)`` of the model's type in
  :data:`REFIT_SCHEMA`, whose keys are all on anonml's vetted list
  (:data:`anonml.modelfile._skops_vet.VETTED_OBJECTS`); a type is never constructed from the
  file, and an unknown type is refused;
* only the parameters :data:`REFIT_SCHEMA` lists are read from the model, each type-checked
  (an ``int`` is never a ``bool``, floats are finite, strings come from a fixed set, tuples and
  lists are bounded) and bounded (:data:`MEMORY_BUDGET_BYTES`; see ``docs/security.md``,
  "Refit bounds", for every bound and its reason);
* every other parameter is the auditor's or the class default: ``memory=None``,
  ``n_jobs=<the auditor's>``, ``verbose=0``, ``warm_start=False``, ``callbacks=None``,
  ``early_stopping_rounds=None``, XGBoost ``device="cpu"``, a fresh diffprivlib accountant;
* nested estimators (pipeline steps, column-transformer transformers, ``SafeModel``'s
  estimator) are rebuilt the same way, recursively.

A value outside its bound is an :class:`~anonml._errors.InputError` of one line naming the
class, parameter, value, bound and fix; with ``clip=True`` a numeric value is set to the bound
instead and the change is returned, so the report can say so.

The bounds are sized on Adult (30,162 training rows, about 100 one-hot features, two classes):
at every bound a refit there stays under :data:`MEMORY_BUDGET_BYTES`; typical models refit in
seconds, the worst case at the bounds in minutes, never hours. Cost grows linearly with rows
(and, for boosting, with the number of classes).
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any, Callable

from anonml._errors import InputError
from anonml.modelfile import _pipeline_types
from anonml.modelfile._family import SAFE_BASES, SAFE_MODEL, SAFE_WRAPPERS
from anonml.modelfile._refit_values import (
    _BIG,
    BOOL,
    MAX_CATEGORIES,
    MAX_FEATURES,
    MAX_NESTING,
    MAX_STEPS,
    MAX_TEXT,
    MAX_TRANSFORMERS,
    NONE,
    Custom,
    Int,
    Lit,
    NaN,
    P,
    Real,
    _Bad,
    _categorical_features,
    _categories,
    _class_weight,
    _Ctx,
    _dp_bounds,
    _drop_list,
    _dtype,
    _fail,
    _feature_types,
    _finite,
    _floats,
    _groups,
    _hidden,
    _json,
    _label,
    _labels,
    _monotonic,
    _plain,
    _random_state,
    _range_pair,
    _seq,
    _short,
    _text,
    check,
    p,
)

__all__ = ["MEMORY_BUDGET_BYTES", "NOT_REFITTED", "REFIT_SCHEMA", "bounds_table",
           "rebuild_for_refit", "refit_params"]

#: memory one refit may use on Adult-sized data (30,162 rows, ~100 features, 2 classes)
MEMORY_BUDGET_BYTES = 2 * 2**30
#: input width assumed when counting an MLP's first-layer weights (Adult one-hot: ~100)
MLP_INPUT_FEATURES = 128
MLP_MAX_WEIGHTS = 2_000_000
MLP_MAX_UNITS = 2_048
#: measured: 1.2 M weights take ~37 s an epoch on 30,162 rows on a shared 2-core machine,
#: so weights × epochs ≤ 2e7 is ~10 minutes a refit at worst
MLP_MAX_WEIGHT_EPOCHS = 20_000_000
XGB_MAX_TREES = 1_000

# ---------------------------------------------------------------------------------------------
# nested estimators and column specs
# ---------------------------------------------------------------------------------------------
def _name(v: Any, seen: set, what: str) -> str:
    if (type(v) is not str or not 0 < len(v) <= 200 or "__" in v or v in seen
            or not v.isprintable()):
        raise _Bad(f"has a {what} name {_short(v, 40)} that is not a unique string of 1 to "
                   "200 characters without '__' or control characters")
    seen.add(v)
    return v


def _nested(est: Any, ctx: _Ctx, where: str, label: str) -> Any:
    if isinstance(est, str) and est in ("drop", "passthrough") or est is None:
        return est
    if ctx.depth >= MAX_NESTING:
        raise _Bad(f"is nested deeper than {MAX_NESTING} levels")
    ctx.depth += 1
    try:
        return _rebuild(est, ctx, f"{where.rsplit('.', 1)[0]}/{label}")
    finally:
        ctx.depth -= 1


def _steps(v: Any, ctx: _Ctx, where: str) -> list:
    steps, seen = _seq(v, "steps", MAX_STEPS), set()
    if not steps or any(not isinstance(s, (tuple, list)) or len(s) != 2 for s in steps):
        raise _Bad("is not a list of (name, estimator) pairs")
    out = []
    for name, est in steps:
        name = _name(name, seen, "step")
        out.append((name, _nested(est, ctx, where, f"{name}:")))
    return out


def _column(x: Any) -> Any:
    x = _plain(x)
    if type(x) is str and len(x) <= MAX_TEXT:
        return x
    if type(x) is int and -MAX_FEATURES <= x < MAX_FEATURES:
        return x
    raise _Bad(f"selects columns with {_short(x, 40)}, not a column name (str), index, "
               "boolean mask or slice", "select columns by name, index, mask or slice")


def _columns(v: Any) -> Any:
    from anonml.modelfile._pipeline_types import column_selector, is_selector

    if is_selector(v):
        return column_selector(v)
    v = _plain(v)
    if isinstance(v, slice):
        ends = [v.start, v.stop]
        if v.step is not None and type(_plain(v.step)) is not int:
            raise _Bad("selects columns with a slice whose step is not an int")
        return slice(*[None if e is None else _column(e) for e in ends],
                     None if v.step is None else _plain(v.step))
    if type(v) in (str, int):
        return _column(v)
    items = _seq(v, "columns", MAX_FEATURES)
    if items and all(type(x) is bool for x in items):
        return items
    out = [_column(x) for x in items]
    if len({type(x) for x in out}) > 1:
        raise _Bad("mixes column names and indices")
    return out


def _transformers(v: Any, ctx: _Ctx, where: str) -> list:
    items, seen, out = _seq(v, "transformers", MAX_TRANSFORMERS), set(), []
    for t in items:
        if not isinstance(t, (tuple, list)) or len(t) != 3:
            raise _Bad("is not a list of (name, transformer, columns) triples")
        name = _name(t[0], seen, "transformer")
        out.append((name, _nested(t[1], ctx, where, f"{name}:"), _columns(t[2])))
    return out


def _remainder(v: Any, ctx: _Ctx, where: str) -> Any:
    return _nested(v, ctx, where, "remainder:")


def _estimator(v: Any, ctx: _Ctx, where: str) -> Any:
    if isinstance(v, str) or v is None:
        raise _Bad("is not an estimator")
    return _nested(v, ctx, where, "estimator:")


def _weights_by_name(v: Any, ctx: _Ctx, where: str) -> dict:
    if not isinstance(v, dict) or len(v) > MAX_TRANSFORMERS:
        raise _Bad("is not a dict of transformer weights")
    out = {}
    for k, w in v.items():
        w = _plain(w)
        if type(k) is not str or not _finite(w):
            raise _Bad("holds a weight that is not a finite number for a named transformer")
        out[k] = float(w)
    return out


# ---------------------------------------------------------------------------------------------
# the schema
# ---------------------------------------------------------------------------------------------
RS = p(NONE, Int(0, 2**32 - 1), Custom(_random_state, "a RandomState/Generator (replaced by "
                                        "None)"))
CW = p(Lit((None, "balanced")), Custom(_class_weight, "a dict label -> weight ≥ 0"))
MONO = p(NONE, Custom(_monotonic, "a list (or name -> value dict) of -1, 0, 1"))
COUNT = Int(1, _BIG)
FRACTION = Real(0, 1, lo_open=True)
TOL = p(Real(0))
_WHY_DEPTH = ("depth beyond 100 adds nothing on 30,162 rows (a path halves the rows at best "
              "every few levels) and bounds recursion")
_TREE = {
    "criterion": p(Lit(("gini", "entropy", "log_loss"))),
    "splitter": p(Lit(("best", "random"))),
    "max_depth": p(NONE, Int(1, 100), why=_WHY_DEPTH),
    "min_samples_split": p(Int(2, _BIG), FRACTION),
    "min_samples_leaf": p(COUNT, Real(0, 1, lo_open=True, hi_open=True)),
    "min_weight_fraction_leaf": p(Real(0, 0.5)),
    "max_features": p(Lit((None, "sqrt", "log2")), Int(1, MAX_FEATURES), FRACTION),
    "max_leaf_nodes": p(NONE, Int(2, _BIG)),
    "min_impurity_decrease": p(Real(0)),
    "class_weight": CW,
    "ccp_alpha": p(Real(0)),
    "monotonic_cst": MONO,
    "random_state": RS,
}
_REGRESSION_TREE = {**{k: v for k, v in _TREE.items() if k != "class_weight"},
                    "criterion": p(Lit(("squared_error", "friedman_mse", "absolute_error",
                                        "poisson")))}
_FOREST = {**{k: v for k, v in _TREE.items() if k != "splitter"},
           "n_estimators": p(Int(1, 400), why=(
               "a fully grown tree on Adult holds up to 2 × 30,162 nodes of ~80 bytes (~4.8 MB, "
               "extra trees without bootstrap); 400 trees are ≤ 1.9 GB, inside the 2 GiB "
               "budget")),
           "bootstrap": BOOL, "oob_score": BOOL,
           "max_samples": p(NONE, COUNT, FRACTION)}
_GB = {"loss": p(Lit(("log_loss", "exponential"))),
       "learning_rate": p(Real(0)),
       "n_estimators": p(Int(1, 1000), why=(
           "one tree per stage (per class above two); 1,000 stages of depth ≤ 8 are ≤ 0.5 M "
           "nodes (~40 MB) and minutes on Adult")),
       "subsample": p(FRACTION),
       "criterion": p(Lit(("deprecated", "friedman_mse", "squared_error"))),
       "min_samples_split": _TREE["min_samples_split"],
       "min_samples_leaf": _TREE["min_samples_leaf"],
       "min_weight_fraction_leaf": _TREE["min_weight_fraction_leaf"],
       "max_depth": p(Int(1, 8, unbounded=(None,)), why=(
           "boosting uses shallow trees (default 3); a tree of depth d costs ~d passes over "
           "the rows; None (unlimited) is clipped to 8")),
       "min_impurity_decrease": _TREE["min_impurity_decrease"],
       "init": p(Lit((None, "zero"))),
       "random_state": RS,
       "max_features": _TREE["max_features"],
       "max_leaf_nodes": p(NONE, Int(2, 256), why="at most a depth-8 tree's leaves"),
       "validation_fraction": p(Real(0, 1, lo_open=True, hi_open=True)),
       "n_iter_no_change": p(NONE, Int(1, 1000)),
       "tol": TOL,
       "ccp_alpha": _TREE["ccp_alpha"]}
_HGB = {"loss": p(Lit(("log_loss",))),
        "learning_rate": p(Real(0, lo_open=True)),
        "max_iter": p(Int(1, 1000), why=(
            "1,000 boosting iterations of ≤ 1,024 leaves are ≤ 2 M predictor nodes (~0.1 GB); "
            "minutes on Adult with early stopping off")),
        "max_leaf_nodes": p(Int(2, 1024, unbounded=(None,)), why=(
            "live histograms cost leaves × features × 256 bins × 20 bytes: 1,024 leaves × 100 "
            "features ≈ 0.5 GB; None (unlimited) is clipped to 1,024")),
        "max_depth": p(NONE, Int(1, 100), why=_WHY_DEPTH),
        "min_samples_leaf": p(COUNT),
        "l2_regularization": p(Real(0)),
        "max_features": p(FRACTION),
        "max_bins": p(Int(2, 255)),
        "categorical_features": p(Lit(("from_dtype", None)), Custom(
            _categorical_features, "a boolean mask, indices or column names")),
        "monotonic_cst": MONO,
        "interaction_cst": p(Lit((None, "pairwise", "no_interactions")),
                             Custom(_groups, "a list of groups of feature indices")),
        "early_stopping": p(Lit(("auto", True, False))),
        "scoring": p(Lit((None, "loss", "accuracy", "balanced_accuracy", "roc_auc",
                          "neg_log_loss", "f1"))),
        "validation_fraction": p(NONE, Int(1, _BIG), Real(0, 1, lo_open=True, hi_open=True)),
        "n_iter_no_change": p(Int(1, 1000)),
        "tol": TOL,
        "random_state": RS,
        "class_weight": CW}
_MLP = {"hidden_layer_sizes": p(Custom(_hidden, "a tuple of 1 to 10 positive ints"), why=(
            "depth; the sizes are bounded across layers (below)")),
        "activation": p(Lit(("identity", "logistic", "tanh", "relu"))),
        "solver": p(Lit(("lbfgs", "sgd", "adam"))),
        "alpha": p(Real(0)),
        "batch_size": p(Lit(("auto",)), Int(1, 1024), why=(
            "activations of a batch: 1,024 rows × 2,048 units is ~32 MB; larger batches add "
            "memory, not accuracy")),
        "learning_rate": p(Lit(("constant", "invscaling", "adaptive"))),
        "learning_rate_init": p(Real(0, lo_open=True)),
        "power_t": p(Real(0)),
        "max_iter": p(Int(1, 1000), why=(
            "epochs (each a pass over the data); weights × epochs is bounded too (below)")),
        "shuffle": BOOL,
        "random_state": RS,
        "tol": TOL,
        "momentum": p(Real(0, 1)),
        "nesterovs_momentum": BOOL,
        "early_stopping": BOOL,
        "validation_fraction": p(Real(0, 1, hi_open=True)),
        "beta_1": p(Real(0, 1, hi_open=True)),
        "beta_2": p(Real(0, 1, hi_open=True)),
        "epsilon": p(Real(0, lo_open=True)),
        "n_iter_no_change": p(Int(1, 1000)),
        "max_fun": p(Int(1, 20_000), why=(
            "lbfgs loss evaluations (each a pass over the data); the default is 15,000"))}
_LR = {"penalty": p(Lit(("deprecated", "l1", "l2", "elasticnet", None))),
       "dual": BOOL,
       "tol": TOL,
       "C": p(Real(0, lo_open=True)),
       "fit_intercept": BOOL,
       "intercept_scaling": p(Real(0, lo_open=True)),
       "class_weight": CW,
       "random_state": RS,
       "solver": p(Lit(("lbfgs", "liblinear", "newton-cg", "newton-cholesky", "sag",
                        "saga"))),
       "max_iter": p(Int(1, 10_000), why=(
           "an iteration is one pass over the data (~3 M multiply-adds on Adult); 10,000 is "
           "seconds and covers the 5,000 anonml's experiments use")),
       "l1_ratio": p(NONE, Real(0, 1))}
_DP_RF = {"epsilon": p(Real(0, lo_open=True)),
          "bounds": p(NONE, Custom(_dp_bounds, "a pair (lower, upper) of finite numbers or "
                                   "per-feature lists")),
          "classes": p(NONE, Custom(_labels, "a list of 2 to 10,000 labels")),
          "n_estimators": p(Int(1, 500), why=(
              "each tree is a full binary tree of depth ≤ 12 (≤ 8,191 nodes); 500 trees are "
              "≤ 4.1 M nodes (~0.3 GB)")),
          "max_depth": p(Int(1, 12), why=(
              "diffprivlib grows every tree to full depth: 2^(depth+1) nodes each")),
          "random_state": RS}
_DP_LR = {"epsilon": _DP_RF["epsilon"],
          "data_norm": p(NONE, Real(0, lo_open=True)),
          "classes": _DP_RF["classes"],
          "C": p(Real(0, lo_open=True)),
          "fit_intercept": BOOL,
          "max_iter": p(Int(1, 10_000), why=_LR["max_iter"].why),
          "tol": TOL,
          "random_state": RS}
_DP_SVC = {"epsilon": _DP_RF["epsilon"],
           "bounds": _DP_RF["bounds"],
           "classes": _DP_RF["classes"],
           "gamma": p(Real(0, lo_open=True)),
           "n_components": p(Int(1, 2000), why=(
               "the fit holds an n × (2 n_components + 1) feature matrix: 30,162 × 4,001 "
               "floats (~1 GB) on Adult, inside the budget; one L-BFGS solve a class")),
           "lam": p(Real(0, lo_open=True)),
           "random_state": RS}
_XGB_OPT_REAL0 = p(NONE, Real(0))
_XGB = {"n_estimators": p(NONE, Int(1, 1000), why=(
            f"boosting rounds; with num_parallel_tree at most {XGB_MAX_TREES:,} trees a class")),
        "max_depth": p(NONE, Int(1, 12, unbounded=(0,)), why=(
            "≤ 8,191 nodes a tree, ~0.3 GB for 1,000 trees; 0 (unlimited) is clipped to 12")),
        "max_leaves": p(NONE, Int(0, 4096), why="at most a depth-12 tree's leaves"),
        "max_bin": p(NONE, Int(2, 1024), why="histogram bins: memory grows with bins × "
                     "features × nodes; 1,024 is four times the default"),
        "num_parallel_tree": p(NONE, Int(1, 100), why=(
            f"trees per round (boosted forests); with n_estimators at most "
            f"{XGB_MAX_TREES:,} trees a class")),
        "grow_policy": p(Lit((None, "depthwise", "lossguide"))),
        "learning_rate": _XGB_OPT_REAL0,
        "objective": p(Lit(("binary:logistic", "binary:logitraw", "binary:hinge",
                            "multi:softprob", "multi:softmax", None))),
        "booster": p(Lit((None, "gbtree", "gblinear", "dart"))),
        "tree_method": p(Lit((None, "auto", "hist", "approx", "exact"))),
        "gamma": _XGB_OPT_REAL0, "min_child_weight": _XGB_OPT_REAL0,
        "max_delta_step": _XGB_OPT_REAL0,
        "subsample": p(NONE, FRACTION),
        "sampling_method": p(Lit((None, "uniform", "gradient_based"))),
        "colsample_bytree": p(NONE, FRACTION), "colsample_bylevel": p(NONE, FRACTION),
        "colsample_bynode": p(NONE, FRACTION),
        "reg_alpha": _XGB_OPT_REAL0, "reg_lambda": _XGB_OPT_REAL0,
        "scale_pos_weight": p(NONE, Real(0, lo_open=True)),
        "base_score": p(NONE, Real()),
        "random_state": RS,
        "missing": p(NaN(), Real()),
        "monotone_constraints": MONO,
        "interaction_constraints": p(NONE, Custom(_groups, "a list of groups of feature "
                                                  "indices")),
        "enable_categorical": BOOL,
        "feature_types": p(NONE, Custom(_feature_types, "a list of 'q', 'c', 'int', 'float', "
                                        "'i'")),
        "feature_weights": p(NONE, Custom(_floats, "a list of finite weights ≥ 0")),
        "max_cat_to_onehot": p(NONE, Int(1, 1024)),
        "max_cat_threshold": p(NONE, Int(1, 1024)),
        "multi_strategy": p(Lit((None, "one_output_per_tree", "multi_output_tree")))}
_OHE = {"categories": p(Lit(("auto",)), Custom(_categories, "'auto' or a list of category "
                                                 "lists (at most 1,000,000 in all)")),
        "drop": p(Lit((None, "first", "if_binary")), Custom(_drop_list, "a category a column")),
        "sparse_output": BOOL,
        "dtype": p(Custom(_dtype, "a numeric dtype")),
        "handle_unknown": p(Lit(("error", "ignore", "infrequent_if_exist", "warn"))),
        "min_frequency": p(NONE, COUNT, Real(0, 1, lo_open=True, hi_open=True)),
        "max_categories": p(NONE, Int(2, MAX_CATEGORIES)),
        "feature_name_combiner": p(Lit(("concat",)))}
_ORD = {"categories": _OHE["categories"], "dtype": _OHE["dtype"],
        "handle_unknown": p(Lit(("error", "use_encoded_value"))),
        "unknown_value": p(NONE, NaN(), Int(-_BIG, _BIG)),
        "encoded_missing_value": p(NaN(), Int(-_BIG, _BIG)),
        "min_frequency": _OHE["min_frequency"], "max_categories": _OHE["max_categories"]}
_MISSING = p(NaN(), NONE, Int(-_BIG, _BIG), Real(), Custom(_text, "a string"))
_PIPELINE = {"steps": p(Custom(_steps, "a list of (name, estimator) pairs"))}
_CT = {"transformers": p(Custom(_transformers, "a list of (name, transformer, columns)")),
       "remainder": p(Custom(_remainder, "'drop', 'passthrough' or a transformer")),
       "sparse_threshold": p(Real(0, 1)),
       "transformer_weights": p(NONE, Custom(_weights_by_name, "a dict name -> weight")),
       "verbose_feature_names_out": BOOL}

_SK = "sklearn."
_DP = "anonml.dp._diffprivlib"
_SVC = ("anonml.dp._svc", "DPSVC")
RF = ("sklearn.ensemble._forest", "RandomForestClassifier")
ET = ("sklearn.ensemble._forest", "ExtraTreesClassifier")
DT = ("sklearn.tree._classes", "DecisionTreeClassifier")
GB = ("sklearn.ensemble._gb", "GradientBoostingClassifier")
HGB = ("sklearn.ensemble._hist_gradient_boosting.gradient_boosting",
       "HistGradientBoostingClassifier")
MLP = ("sklearn.neural_network._multilayer_perceptron", "MLPClassifier")
LR = ("sklearn.linear_model._logistic", "LogisticRegression")
XGB = ("xgboost.sklearn", "XGBClassifier")

#: per vetted class ``(module, qualname)``: parameter -> the values a refit accepts. Every
#: parameter not listed is left at the class default or set by the auditor (:data:`_FIXED`).
REFIT_SCHEMA: dict[tuple[str, str], dict[str, P]] = {
    DT: _TREE,
    ("sklearn.tree._classes", "ExtraTreeClassifier"): _TREE,
    ("sklearn.tree._classes", "DecisionTreeRegressor"): _REGRESSION_TREE,
    ("sklearn.tree._classes", "ExtraTreeRegressor"): _REGRESSION_TREE,
    RF: _FOREST, ET: _FOREST, GB: _GB, HGB: _HGB, MLP: _MLP, LR: _LR,
    ("sklearn.dummy", "DummyClassifier"): {
        "strategy": p(Lit(("most_frequent", "prior", "stratified", "uniform", "constant"))),
        "random_state": RS, "constant": p(NONE, Custom(_label, "a label"))},
    ("sklearn.pipeline", "Pipeline"): _PIPELINE,
    ("sklearn.compose._column_transformer", "ColumnTransformer"): _CT,
    ("sklearn.preprocessing._encoders", "OneHotEncoder"): _OHE,
    ("sklearn.preprocessing._encoders", "OrdinalEncoder"): _ORD,
    ("sklearn.preprocessing._data", "StandardScaler"): {
        "copy": BOOL, "with_mean": BOOL, "with_std": BOOL},
    ("sklearn.preprocessing._data", "MinMaxScaler"): {
        "feature_range": p(Custom(_range_pair(-1e300, 1e300), "a pair (a, b), a < b")),
        "copy": BOOL, "clip": BOOL},
    ("sklearn.preprocessing._data", "MaxAbsScaler"): {"copy": BOOL, "clip": BOOL},
    ("sklearn.preprocessing._data", "RobustScaler"): {
        "with_centering": BOOL, "with_scaling": BOOL, "unit_variance": BOOL, "copy": BOOL,
        "quantile_range": p(Custom(_range_pair(0, 100), "a pair (a, b), 0 ≤ a < b ≤ 100"))},
    ("sklearn.impute._base", "SimpleImputer"): {
        "missing_values": _MISSING,
        "strategy": p(Lit(("mean", "median", "most_frequent", "constant"))),
        "fill_value": p(NONE, Int(-_BIG, _BIG), Real(), Custom(_text, "a string")),
        "copy": BOOL, "add_indicator": BOOL, "keep_empty_features": BOOL},
    # only func=None (a function is refused by the vetting): the identity
    ("sklearn.preprocessing._function_transformer", "FunctionTransformer"): {
        "func": p(NONE), "inverse_func": p(NONE), "validate": BOOL, "accept_sparse": BOOL,
        "check_inverse": BOOL, "feature_names_out": p(Lit((None, "one-to-one"))),
        "kw_args": p(NONE), "inv_kw_args": p(NONE)},
    ("sklearn.preprocessing._label", "LabelEncoder"): {},
    ("sklearn.preprocessing._label", "LabelBinarizer"): {
        "neg_label": p(Int(-_BIG, _BIG)), "pos_label": p(Int(-_BIG, _BIG)),
        "sparse_output": BOOL},
    (_DP, "DPRandomForestClassifier"): _DP_RF,
    (_DP, "DPLogisticRegression"): _DP_LR,
    _SVC: _DP_SVC,
    ("diffprivlib.models.forest", "RandomForestClassifier"): {**_DP_RF, "shuffle": BOOL},
    ("diffprivlib.models.forest", "DecisionTreeClassifier"): {
        **{k: v for k, v in _DP_RF.items() if k != "n_estimators"},
        "criterion": p(Lit((None, "gini", "entropy")))},  # ignored by diffprivlib
    XGB: _XGB,
    SAFE_MODEL: {"estimator": p(Custom(_estimator, "an estimator"))},
}
# anonml's safe wrappers: the same parameters as the class each subclasses (built as that class
# when ``unwrap=True``)
REFIT_SCHEMA.update({k: REFIT_SCHEMA[base] for k, base in SAFE_BASES.items()})
# the data-only types of ordinary pipelines (column selectors are rebuilt by _columns)
REFIT_SCHEMA.update(_pipeline_types._refit(RS, _MISSING, _steps, _weights_by_name))

#: vetted classes that are never refitted, and why
NOT_REFITTED: dict[tuple[str, str], str] = {
    **{k: "a fitted anonymizer or one of its parts: anonml re-runs anonymizers from its own "
          "settings, never from a file" for k in (
        ("anonml.anonymize._accuracy_guided", "AccuracyGuidedAnonymizer"),
        ("anonml.anonymize._mondrian", "MondrianAnonymizer"),
        ("anonml.anonymize._hilbert", "HilbertAnonymizer"),
        ("anonml.anonymize._rtree", "RTreeAnonymizer"),
        ("anonml.anonymize._sangreea", "SaNGreeAAnonymizer"),
        ("anonml.anonymize._hist_tree", "HistTree"), ("anonml.anonymize._mondrian", "_CutTree"),
        ("anonml.anonymize._routing", "RoutingTree"), ("anonml.anonymize._mondrian", "_Dim"), ("anonml.anonymize._grid", "QIGrid"),
        ("anonml.anonymize._grid", "Axis"), ("anonml.anonymize._sangreea_space", "_Space"),
        ("anonml.encoding", "TableEncoder"), ("anonml.encoding", "_CatSpec"),
        ("anonml.privacy._constraints", "PrivacyModel"),
        ("anonml.hierarchies._hierarchy", "Hierarchy"))},
    **{k: "a fitted part of an estimator (rebuilt by its fit)" for k in (
        ("sklearn.ensemble._hist_gradient_boosting.binning", "_BinMapper"),
        ("sklearn.ensemble._hist_gradient_boosting.predictor", "TreePredictor"),
        ("sklearn._loss.loss", "HalfBinomialLoss"), ("sklearn._loss.loss", "HalfMultinomialLoss"),
        ("sklearn._loss.loss", "ExponentialLoss"), ("sklearn._loss.link", "Interval"),
        ("sklearn._loss.link", "LogitLink"), ("sklearn._loss.link", "HalfLogitLink"),
        ("sklearn._loss.link", "MultinomialLogit"), ("sklearn._loss.link", "IdentityLink"),
        ("sklearn.neural_network._stochastic_optimizers", "AdamOptimizer"),
        ("sklearn.neural_network._stochastic_optimizers", "SGDOptimizer"),
        ("diffprivlib.accountant", "BudgetAccountant"), ("xgboost.core", "Booster"))},
    ("sklearn.compose._column_transformer", "make_column_selector"): (
        "a column transformer's column selector: rebuilt from its checked settings as the "
        "transformer's columns"),
    ("diffprivlib.models.logistic_regression", "LogisticRegression"): (
        "diffprivlib's class cannot be constructed with scikit-learn ≥ 1.9; refit "
        "anonml.dp.DPLogisticRegression instead"),
}


def _fresh_accountant() -> Any:
    from anonml.dp._diffprivlib import import_diffprivlib

    return import_diffprivlib().BudgetAccountant()


#: parameters the auditor sets, whatever the file says
_FIXED: dict[str, Callable[[_Ctx], Any]] = {
    "n_jobs": lambda ctx: ctx.n_jobs,
    "verbosity": lambda ctx: 0,
    "device": lambda ctx: "cpu",
    "accountant": lambda ctx: _fresh_accountant(),
}

#: parameters neither read nor set: always the class default (``memory=None``, ``verbose=0``,
#: ``warm_start=False``, no callbacks or early-stopping rounds; ``transform_input`` only routes
#: metadata, ``importance_type`` only changes ``feature_importances_``)
DEFAULTED = frozenset({"memory", "verbose", "warm_start", "callbacks", "early_stopping_rounds",
                       "eval_metric", "importance_type", "validate_parameters",
                       "transform_input"})
#: auditor-set parameters left at the class default: scikit-learn ≥ 1.8 ignores
#: LogisticRegression's n_jobs and warns when it is given
_NOT_FIXED = {(LR, "n_jobs"), ((SAFE_WRAPPERS, "SafeLogisticRegression"), "n_jobs")}


# ---------------------------------------------------------------------------------------------
# checks across parameters
# ---------------------------------------------------------------------------------------------
def _mlp_cost(sizes: tuple) -> tuple[int, int]:
    widths = (MLP_INPUT_FEATURES, *sizes)
    return sum(a * b for a, b in zip(widths, widths[1:])), sum(sizes)


def _mlp_joint(vals: dict, ctx: _Ctx, where: str) -> None:
    sizes = vals.get("hidden_layer_sizes", (100,))
    weights, units = _mlp_cost(sizes)
    if weights > MLP_MAX_WEIGHTS or units > MLP_MAX_UNITS:
        if not ctx.clip:
            bound = (f"at most {MLP_MAX_WEIGHTS:,} weights" if weights > MLP_MAX_WEIGHTS else
                     f"at most {MLP_MAX_UNITS:,} hidden units")
            raise _fail(where, "hidden_layer_sizes", sizes, f"is outside the refit bounds "
                        f"({bound}, counting {MLP_INPUT_FEATURES} inputs)", "save the model "
                        "with smaller hidden layers, or refit with clip=True to scale them "
                        "down in proportion")
        # integer arithmetic first: the file's sizes may be too large for a float
        scaled = [max(1, s * MLP_MAX_UNITS // units) if units > MLP_MAX_UNITS else s
                  for s in sizes]
        while True:
            weights, units = _mlp_cost(tuple(scaled))
            w_ratio, u_ratio = weights / MLP_MAX_WEIGHTS, units / MLP_MAX_UNITS
            if w_ratio <= 1 and u_ratio <= 1:
                break
            factor = min(1 / math.sqrt(w_ratio), 1 / u_ratio, 0.99)
            scaled = [max(1, int(s * factor)) for s in scaled]
        ctx.adjust(where, "hidden_layer_sizes", sizes, tuple(scaled))
        vals["hidden_layer_sizes"] = sizes = tuple(scaled)
        weights, _ = _mlp_cost(sizes)
    # lbfgs evaluates the loss about once an iteration and at most max_fun times in all
    passes = vals.get("max_iter", 200)
    if vals.get("solver", "adam") == "lbfgs":
        passes = min(passes, vals.get("max_fun", 15_000))
    if weights * passes > MLP_MAX_WEIGHT_EPOCHS:
        most = max(1, MLP_MAX_WEIGHT_EPOCHS // weights)
        if not ctx.clip:
            raise _fail(where, "max_iter", vals.get("max_iter", 200), f"is outside the refit "
                        f"bounds (at most {most:,} epochs for {weights:,} weights: weights × "
                        f"epochs ≤ {MLP_MAX_WEIGHT_EPOCHS:,})", f"save the model with max_iter "
                        f"at most {most:,} or smaller layers, or refit with clip=True")
        ctx.adjust(where, "max_iter", vals.get("max_iter", 200), most)
        vals["max_iter"] = most


def _xgb_joint(vals: dict, ctx: _Ctx, where: str) -> None:
    rounds = vals.get("n_estimators") or 100
    per_round = vals.get("num_parallel_tree") or 1
    if rounds * per_round > XGB_MAX_TREES:
        most = max(1, XGB_MAX_TREES // per_round)
        if not ctx.clip:
            raise _fail(where, "n_estimators", rounds, f"is outside the refit bounds "
                        f"(n_estimators × num_parallel_tree ≤ {XGB_MAX_TREES:,})",
                        f"save the model with n_estimators at most {most:,}, or refit with "
                        "clip=True")
        ctx.adjust(where, "n_estimators", rounds, most)
        vals["n_estimators"] = most


_JOINT = {MLP: _mlp_joint, XGB: _xgb_joint}
_JOINT.update({k: _JOINT[b] for k, b in SAFE_BASES.items() if b in _JOINT})
#: the bounds across parameters, for the docs table: (class, parameter, bound, why)
JOINT_BOUNDS = [
    (MLP, "hidden_layer_sizes", f"weights ≤ {MLP_MAX_WEIGHTS:,} (counting "
     f"{MLP_INPUT_FEATURES} inputs), hidden units ≤ {MLP_MAX_UNITS:,}", "weights: ~16 MB a "
     "copy, ~0.1 GB with gradients and Adam's moments; units: lbfgs's full-batch activations "
     "are 30,162 rows × 2,048 units × 16 bytes ≈ 1 GB; clip=True scales the layers down in "
     "proportion"),
    (MLP, "max_iter", f"weights × epochs ≤ {MLP_MAX_WEIGHT_EPOCHS:,}", "time: 1.2 M weights "
     "took ~37 s an epoch over 30,162 rows on a shared 2-core machine, so ≤ ~10 minutes a "
     "refit (lbfgs: epochs = min(max_iter, max_fun))"),
    (XGB, "n_estimators", f"n_estimators × num_parallel_tree ≤ {XGB_MAX_TREES:,}",
     "trees per class, as for the other boosting models"),
]


# ---------------------------------------------------------------------------------------------
# the rebuild
# ---------------------------------------------------------------------------------------------
def _key(model: Any) -> tuple[str, str]:
    """``(module, name)`` as skops records it (``SafeXGBClassifier`` is built in a function,
    so its qualified name is not its name); :func:`_rebuild` then checks that the class so
    named is the model's own."""
    t = type(model)
    return (str(getattr(t, "__module__", "?")), str(getattr(t, "__name__", "?")))


def _class_for(key: tuple[str, str]) -> type:
    module, name = key
    if module.startswith("diffprivlib"):
        from anonml.dp._diffprivlib import import_diffprivlib

        import_diffprivlib()
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, InputError):
        raise InputError(f"{name} cannot be refitted: {module} is not installed; fix: install "
                         "it, or audit without refits") from None


def _rebuild(model: Any, ctx: _Ctx, where: str = "") -> Any:
    key = _key(model)
    where = where + "".join(c if c.isprintable() else "?" for c in key[1][:60])
    if key not in REFIT_SCHEMA:
        why = NOT_REFITTED.get(key, "it is not on anonml's list of vetted estimators")
        raise InputError(f"{where} ({_short(key[0], 80)}) cannot be refitted: {why}; "
                         "fix: submit a model built from the estimators listed in "
                         "docs/security.md (Refit bounds)")
    if _class_for(key) is not type(model):
        raise InputError(f"{where} ({_short(key[0], 80)}) cannot be refitted: it is not "
                         "on anonml's list of vetted estimators (only its name is); fix: submit "
                         "a model built from the estimators listed in docs/security.md (Refit "
                         "bounds)")
    schema = REFIT_SCHEMA[key]
    state = vars(model) if hasattr(model, "__dict__") else {}
    vals = {name: check(spec, state[name], ctx, where, name)
            for name, spec in schema.items() if name in state}
    if key in _JOINT:
        _JOINT[key](vals, ctx, where)
    if key == SAFE_MODEL and ctx.unwrap:
        return vals["estimator"]
    build = SAFE_BASES.get(key, key) if ctx.unwrap else key
    if ctx.record:
        return {"class": key[1], "params": vals}
    cls = _class_for(build)
    accepted = _param_names(cls)
    kwargs = {k: v for k, v in vals.items() if k in accepted}
    kwargs.update({k: f(ctx) for k, f in _FIXED.items()
                   if k in accepted and (build, k) not in _NOT_FIXED})
    return cls(**kwargs)


@functools.lru_cache(maxsize=None)
def _param_names(cls: type) -> frozenset:
    """The constructor parameters of ``cls`` (XGBoost's include its base class's)."""
    try:
        return frozenset(cls().get_params(deep=False))
    except TypeError:  # a required argument (Pipeline, ColumnTransformer, SafeModel)
        return frozenset(cls._get_param_names())


def _check_n_jobs(n_jobs: Any) -> int:
    n_jobs = 1 if n_jobs is None else _plain(n_jobs)
    if type(n_jobs) is not int or not (1 <= n_jobs <= 256 or n_jobs == -1):
        raise InputError(f"n_jobs={_short(n_jobs)} is not None, -1 or an int in 1..256; fix: "
                         "pass the number of workers a refit may use, e.g. n_jobs=1")
    return n_jobs


def rebuild_for_refit(model: Any, *, n_jobs: int = 1, clip: bool = False,
                      unwrap: bool = False) -> tuple[Any, list]:
    """A new, unfitted estimator for refits, built from :data:`REFIT_SCHEMA` only.

    Parameters
    ----------
    model : estimator
        The submitted model (fitted or not), of a class in :data:`REFIT_SCHEMA`. Nested
        estimators (pipeline steps, column-transformer transformers, ``SafeModel``'s
        ``estimator``) are rebuilt too.
    n_jobs : int or None, default 1
        The auditor's worker count (1..256, or -1 for all cores; None means 1), set on every
        part that has ``n_jobs``.
    clip : bool, default False
        Set an out-of-bound numeric value to its bound (and scale an MLP's layers down in
        proportion) instead of refusing it; every change is listed in ``adjustments``.
    unwrap : bool, default False
        Build anonml's safe wrappers as the estimator they wrap (``SafeModel(estimator)`` as
        the rebuilt ``estimator``), for reference models that must not warn or fingerprint.

    Returns
    -------
    estimator : estimator
        Unfitted; only the listed parameters come from ``model``, the others are the class
        defaults or the auditor's (``memory=None``, ``n_jobs``, ``verbose=0``, ...).
    adjustments : list of dict
        One per changed value: ``class``, ``path`` (e.g. ``Pipeline/mlp:MLPClassifier``),
        ``parameter``, ``file_value`` and ``value_used`` (JSON-safe). A random-state object is
        always replaced by ``None`` and listed.

    Raises
    ------
    InputError
        One line naming the class, parameter, value, bound and fix, for an unknown class or a
        value of the wrong type, not finite or (without ``clip``) outside its bound.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> est, adj = rebuild_for_refit(MLPClassifier(hidden_layer_sizes=(10,), max_iter=5000),
    ...                              clip=True)
    >>> est.max_iter, adj[0]["parameter"], adj[0]["value_used"]
    (1000, 'max_iter', 1000)
    """
    ctx = _Ctx(_check_n_jobs(n_jobs), bool(clip), bool(unwrap))
    estimator = _rebuild(model, ctx)
    return estimator, ctx.adjustments


def refit_params(model: Any, *, clip: bool = False) -> dict:
    """The bounded parameters a refit of ``model`` would use, as JSON-safe values.

    Parameters
    ----------
    model : estimator
        As for :func:`rebuild_for_refit`.
    clip : bool, default False
        As for :func:`rebuild_for_refit`.

    Returns
    -------
    dict
        ``{parameter: value}`` for the parameters :data:`REFIT_SCHEMA` lists for the model's
        class (tuples as lists, NaN as ``"nan"``, dtypes by name, slices as
        ``{"slice": [start, stop, step]}``). A nested estimator is
        ``{"class": name, "params": {...}}``.

    Raises
    ------
    InputError
        As :func:`rebuild_for_refit`.
    """
    ctx = _Ctx(1, bool(clip), False, record=True)
    return _json(_rebuild(model, ctx))["params"]


def _display(key: tuple[str, str]) -> str:
    """``sklearn.DecisionTreeClassifier``; anonml's classes by their public path
    (``anonml.dp.DPRandomForestClassifier``)."""
    parts = key[0].split(".")
    if parts[0] != "anonml":
        return f"{parts[0]}.{key[1]}"
    public = [p for p in parts[: next((i for i, p in enumerate(parts) if p.startswith("_")),
                                      len(parts))]]
    return f"{'.'.join(public)}.{key[1]}"


def bounds_table() -> list[tuple[str, str, str, str]]:
    """The resource bounds, as ``(class, parameter, bound, why)`` rows for the docs table
    (``docs/security.md``, "Refit bounds"); the safe wrappers share their base class's rows."""
    rows = []
    for key, schema in REFIT_SCHEMA.items():
        if key in SAFE_BASES:
            continue
        rows += [(_display(key), name, spec.describe(), spec.why)
                 for name, spec in schema.items() if spec.why]
    rows += [(_display(key), name, bound, why) for key, name, bound, why in JOINT_BOUNDS]
    return rows
