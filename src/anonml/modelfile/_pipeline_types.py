"""The data-only scikit-learn types of ordinary pipelines, vetted beside the models (issue 23).

A model built as ``make_column_transformer((OneHotEncoder(), make_column_selector(
dtype_include=object)), ...)`` used to be refused without ``--trust-model``. This module lists
the column selectors, discretizers, feature generators, unions and feature selectors anonml now
reads from an untrusted ``.skops`` file, and for each the checks that make it data:

* the exact ``(module, class)`` pairs (:data:`VETTED`), added to
  :data:`anonml.modelfile._skops_vet.VETTED_OBJECTS`; their exact attribute sets are derived
  from the genuine samples of :func:`samples` (:mod:`anonml.modelfile._attributes`);
* the only functions a file may name (:data:`VETTED_FUNCTIONS`): scikit-learn's univariate
  score functions, and only as a selector's ``score_func`` (a reference, called only when the
  audit refits the selector);
* the only types a column selector may name (:data:`SELECTOR_TYPES`);
* structure checks on the loaded object (:func:`check_part`): a selector's ``pattern`` is a
  literal alternation (``^age$|^hours``) of bounded length, so matching it cannot backtrack
  for ever; its dtypes are plain dtype names or the listed types; bin edges are finite,
  increasing and at most :data:`MAX_BINS` a feature; per-feature arrays have one entry per
  input feature; polynomial output widths are recomputed;
* the refit schema of each (:data:`REFIT`), merged into
  :data:`anonml.modelfile._refit_schema.REFIT_SCHEMA`.

Refused, with the reason given in the refusal (:data:`REFUSED`): ``KNNImputer`` (it stores its
training rows), ``IterativeImputer`` (it holds a fitted regressor per feature, of any class),
and ``FunctionTransformer`` with a function (code named in the file; refused as a function
node), ``QuantileTransformer`` (it stores up to ``n_quantiles`` training values of every
column) and ``TargetEncoder`` (the mean label of every category: a row's label when a category
holds one row).

References
----------
scikit-learn user guide, "Pipelines and composite estimators" and "Preprocessing data",
https://scikit-learn.org/stable/modules/compose.html
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from anonml.modelfile._limits import bad, n_features, per_feature

__all__ = ["PREPROCESSORS", "REFIT", "REFUSED", "SELECTOR_TYPES", "VETTED", "VETTED_FUNCTIONS",
           "check_part", "column_selector", "samples"]

_SEL = ("sklearn.compose._column_transformer", "make_column_selector")
_KBD = ("sklearn.preprocessing._discretization", "KBinsDiscretizer")
_POLY = ("sklearn.preprocessing._polynomial", "PolynomialFeatures")
_UNION = ("sklearn.pipeline", "FeatureUnion")
_VAR = ("sklearn.feature_selection._variance_threshold", "VarianceThreshold")
_KBEST = ("sklearn.feature_selection._univariate_selection", "SelectKBest")
_PCT = ("sklearn.feature_selection._univariate_selection", "SelectPercentile")
_MISS = ("sklearn.impute._base", "MissingIndicator")
_NORM = ("sklearn.preprocessing._data", "Normalizer")
_BIN = ("sklearn.preprocessing._data", "Binarizer")
_POW = ("sklearn.preprocessing._data", "PowerTransformer")

#: the encoders, scalers and imputer of ordinary pipelines (vetted before the types below; in
#: :data:`anonml.modelfile._skops_vet.VETTED_OBJECTS` with the pipelines that hold them)
PREPROCESSORS: tuple[tuple[str, str], ...] = (
    ("sklearn.preprocessing._encoders", "OneHotEncoder"),
    ("sklearn.preprocessing._encoders", "OrdinalEncoder"),
    ("sklearn.preprocessing._data", "StandardScaler"),
    ("sklearn.preprocessing._data", "MinMaxScaler"),
    ("sklearn.preprocessing._data", "MaxAbsScaler"),
    ("sklearn.preprocessing._data", "RobustScaler"),
    ("sklearn.impute._base", "SimpleImputer"),
)

#: classes an ObjectNode may build, beside the models
VETTED: frozenset[tuple[str, str]] = frozenset({_SEL, _KBD, _POLY, _UNION, _VAR, _KBEST, _PCT,
                                                _MISS, _NORM, _BIN, _POW})

#: functions a file may name, and only as a selector's ``score_func``: scikit-learn's univariate
#: scores, pure functions of ``(X, y)`` that return arrays
VETTED_FUNCTIONS: frozenset[tuple[str, str]] = frozenset({
    ("sklearn.feature_selection._univariate_selection", "f_classif"),
    ("sklearn.feature_selection._univariate_selection", "chi2"),
    ("sklearn.feature_selection._mutual_info", "mutual_info_classif")})

#: types a column selector's ``dtype_include``/``dtype_exclude`` may name (a TypeNode builds a
#: reference to the class, nothing else)
SELECTOR_TYPES: frozenset[tuple[str, str]] = frozenset({
    ("builtins", "object"), ("numpy", "number"), ("numpy", "integer"), ("numpy", "floating"),
    ("numpy", "object_"), ("numpy", "datetime64"), ("numpy", "timedelta64")})

#: classes users put in pipelines that anonml refuses without --trust-model, and why
REFUSED: dict[tuple[str, str], str] = {
    ("sklearn.impute._knn", "KNNImputer"): "it stores its training rows (_fit_X)",
    ("sklearn.impute._iterative", "IterativeImputer"): (
        "it holds a fitted regressor for each feature, of any class, which anonml does not vet"),
    ("sklearn.preprocessing._function_transformer", "FunctionTransformer"): (
        "with a function it runs code named in the file"),
    ("sklearn.preprocessing._data", "QuantileTransformer"): (
        "it stores up to n_quantiles training values of every column (by default 1,000)"),
    ("sklearn.preprocessing._target_encoder", "TargetEncoder"): (
        "it stores the mean label of every category, which is a row's label when a category "
        "holds one row"),
}

#: most bins a discretizer read from an untrusted file may have per feature (a finer grid is a
#: copy of the training values)
MAX_BINS = 1_000
#: longest selector pattern and most dtypes per selector
MAX_PATTERN = 1_000
MAX_DTYPES = 16
#: most output columns of polynomial features read from an untrusted file
MAX_POLY_OUT = 100_000
#: highest degree of a PolynomialFeatures read from a file (the refit bound is the same)
MAX_POLY_DEGREE = 5

#: a literal alternation: names with ``.`` as the only wildcard, anchored or not, joined by ``|``
_PATTERN_RE = re.compile(r"\^?[\w .\-]*\$?(\|\^?[\w .\-]*\$?)*\Z")
_DTYPE_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}(\[[a-z]{1,2}(, [A-Za-z_/]{1,32})?\])?\Z")


def _bad(where: str, text: str) -> Exception:
    return bad(where, text)


# ----------------------------------------------------------------------------- column selectors


def _selector_dtypes(value: Any) -> str | None:
    """Why a selector's dtype value is not plain, or None when it is."""
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) > MAX_DTYPES:
        return f"it names {len(items)} dtypes (at most {MAX_DTYPES})"
    for v in items:
        if isinstance(v, str):
            if not _DTYPE_NAME_RE.match(v):
                return f"{v[:40]!r} is not a dtype name"
        elif isinstance(v, type):
            if (v.__module__, v.__name__) not in SELECTOR_TYPES and not (
                    issubclass(v, np.generic) and v.__module__ == "numpy") and v not in (
                    str, int, float, bool):
                return f"{v.__module__}.{v.__name__} is not a plain dtype"
        elif not isinstance(v, np.dtype):
            return f"a {type(v).__name__} is not a dtype"
    return None


def _selector_pattern(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return f"the pattern is a {type(value).__name__}, not text"
    if len(value) > MAX_PATTERN:
        return f"the pattern is {len(value):,} characters long (at most {MAX_PATTERN:,})"
    if not _PATTERN_RE.match(value):
        return ("the pattern is not a literal alternation (names joined by '|', optionally "
                "anchored with ^ and $; no quantifiers, groups or escapes)")
    return None


def check_selector(obj: Any, where: str) -> None:
    """A ``make_column_selector``: exactly its three settings, each plain."""
    state = vars(obj)
    if set(state) != {"pattern", "dtype_include", "dtype_exclude"}:
        raise _bad(where, "a column selector holds other attributes than pattern, "
                   "dtype_include and dtype_exclude")
    why = (_selector_pattern(state["pattern"]) or _selector_dtypes(state["dtype_include"])
           or _selector_dtypes(state["dtype_exclude"]))
    if why:
        raise _bad(where, f"its column selector is refused: {why}; fix: select columns by name, "
                   "by a plain dtype (dtype_include=object, 'number', 'category') or by a "
                   "pattern of names joined by '|'")


def column_selector(v: Any) -> Any:
    """A new ``make_column_selector`` with the checked settings of ``v`` (for refits)."""
    from sklearn.compose import make_column_selector

    from anonml.modelfile._refit_values import _Bad

    state = vars(v) if hasattr(v, "__dict__") else {}
    why = (_selector_pattern(state.get("pattern")) or _selector_dtypes(state.get(
        "dtype_include")) or _selector_dtypes(state.get("dtype_exclude")))
    if why or set(state) != {"pattern", "dtype_include", "dtype_exclude"}:
        raise _Bad(f"selects columns with a column selector that is not plain ({why})",
                   "select columns by name, by a plain dtype or by names joined by '|'")
    return make_column_selector(pattern=state["pattern"], dtype_include=state["dtype_include"],
                                dtype_exclude=state["dtype_exclude"])


def is_selector(v: Any) -> bool:
    return (type(v).__module__, type(v).__name__) == _SEL


# ----------------------------------------------------------------------------- fitted parts


def _check_bins(obj: Any, where: str) -> None:
    edges = obj.__dict__.get("bin_edges_")
    if edges is None:
        return
    nf = _n_features(obj, where)
    n_bins = np.asarray(obj.__dict__.get("n_bins_"))
    if not isinstance(edges, np.ndarray) or edges.shape != (nf,) or n_bins.shape != (nf,) or \
            n_bins.dtype.kind not in "iu":
        raise _bad(where, f"bin_edges_ and n_bins_ are not one entry for each of its {nf} "
                   "features")
    for i, (e, k) in enumerate(zip(edges, n_bins)):
        e = np.asarray(e)
        if e.ndim != 1 or e.dtype.kind != "f" or not 2 <= e.size <= MAX_BINS + 1 or \
                e.size != int(k) + 1 or not np.isfinite(e).all() or (np.diff(e) <= 0).any():
            raise _bad(f"{where}.bin_edges_[{i}]", f"is not {int(k) + 1} finite increasing "
                       f"edges (at most {MAX_BINS:,} bins a feature)")
    enc = obj.__dict__.get("_encoder")
    if enc is not None:
        cats = getattr(enc, "categories_", None)
        if not isinstance(cats, list) or [c.size for c in cats] != [int(k) for k in n_bins]:
            raise _bad(f"{where}._encoder", "its categories do not match the bins")


def _n_features(obj: Any, where: str) -> int:
    return n_features(obj, where)


def _check_poly(obj: Any, where: str) -> None:
    if "n_output_features_" not in obj.__dict__:
        return
    nf = _n_features(obj, where)
    d = obj.__dict__
    lo, hi = d.get("_min_degree"), d.get("_max_degree")
    # bounded first: the count below is exact big-integer arithmetic, which a file's huge
    # degrees or width would keep busy for ever
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer))
            and not isinstance(lo, bool) and not isinstance(hi, bool)
            and 0 <= lo <= hi <= MAX_POLY_DEGREE and nf <= MAX_POLY_OUT):
        raise _bad(where, f"its degrees {str(lo)[:12]}..{str(hi)[:12]} are not whole numbers "
                   f"0 <= min <= max <= {MAX_POLY_DEGREE} on at most {MAX_POLY_OUT:,} columns")
    try:
        n_out = type(obj)._num_combinations(
            n_features=nf, min_degree=int(d["_min_degree"]), max_degree=int(d["_max_degree"]),
            interaction_only=bool(d["interaction_only"]), include_bias=bool(d["include_bias"]))
    except (KeyError, TypeError, ValueError, OverflowError):
        raise _bad(where, "its degrees cannot be read") from None
    if n_out != d["n_output_features_"] or n_out > MAX_POLY_OUT:
        raise _bad(where, f"n_output_features_ {str(d['n_output_features_'])[:20]} is not the "
                   f"{n_out:,} its degrees give, or above {MAX_POLY_OUT:,}")


def _check_indicator(obj: Any, where: str) -> None:
    feats = obj.__dict__.get("features_")
    if feats is None:
        return
    nf = _n_features(obj, where)
    arr = np.asarray(feats)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr.size and (
            arr.min() < 0 or arr.max() >= nf)) or np.unique(arr).size != arr.size:
        raise _bad(f"{where}.features_", f"is not a list of distinct features in 0..{nf - 1}")


def _check_selector_fn(obj: Any, where: str) -> None:
    import importlib

    fn = obj.__dict__.get("score_func")
    if not any(fn is getattr(importlib.import_module(m), f, None) for m, f in VETTED_FUNCTIONS):
        raise _bad(where, "its score_func is not one of scikit-learn's f_classif, chi2 or "
                   "mutual_info_classif")
    per_feature(obj, where, ("scores_", "pvalues_"), numeric=True)


def check_part(obj: Any, where: str) -> bool:
    """Validate one of :data:`VETTED` (a loaded object); True when ``obj`` is one."""
    key = (type(obj).__module__, type(obj).__name__)
    if key not in VETTED:
        return False
    if key == _SEL:
        check_selector(obj, where)
    elif key == _KBD:
        _check_bins(obj, where)
    elif key == _POLY:
        _check_poly(obj, where)
    elif key == _VAR:
        if "variances_" in obj.__dict__:
            per_feature(obj, where, ("variances_",), numeric=True)
    elif key in (_KBEST, _PCT):
        _check_selector_fn(obj, where)
    elif key == _MISS:
        _check_indicator(obj, where)
    elif key == _POW and "lambdas_" in obj.__dict__:
        per_feature(obj, where, ("lambdas_",), numeric=True)
        if not np.isfinite(np.asarray(obj.__dict__["lambdas_"], dtype=float)).all():
            raise _bad(f"{where}.lambdas_", "holds a value that is not finite")
        scaler = obj.__dict__.get("_scaler")
        if scaler is not None and (type(scaler).__name__ != "StandardScaler" or
                                   scaler.__dict__.get("n_features_in_") != obj.n_features_in_):
            raise _bad(f"{where}._scaler", "is not a StandardScaler of its features")
    return True


# ----------------------------------------------------------------------------- samples


def samples() -> list:
    """Genuine fitted instances of every class of :data:`VETTED`, under the settings users
    pick (numpy and DataFrame input, each encoding), for the derived attribute lists of
    :mod:`anonml.modelfile._attributes` (their own sample group, fitted only for a file that
    holds one of them)."""
    import pandas as pd
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.feature_selection import (SelectKBest, SelectPercentile, VarianceThreshold,
                                           chi2, f_classif)
    from sklearn.impute import MissingIndicator
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import (Binarizer, KBinsDiscretizer, MinMaxScaler, Normalizer,
                                       OneHotEncoder, PolynomialFeatures, PowerTransformer,
                                       StandardScaler)
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X = rng.random((40, 3))
    y = np.arange(40) % 2
    F = pd.DataFrame(X, columns=["a", "b", "c"]).assign(s=np.where(y == 0, "u", "v"))
    Xn = X.copy()
    Xn[::7, 0] = np.nan
    out: list = []
    for kw in ({"dtype_include": object}, {"dtype_include": "number"},
               {"dtype_exclude": ["number"]}, {"pattern": "^a$|^b"},
               {"dtype_include": np.number, "dtype_exclude": "category"}):
        ct = make_column_transformer((OneHotEncoder(handle_unknown="ignore"),
                                      make_column_selector(**kw)), remainder="drop")
        out.append(make_pipeline(ct, DecisionTreeClassifier(max_depth=2)).fit(F, y))
    # the strategy and score function change no attribute: one cheap fit of each kind (these
    # samples are fitted whenever a file holds a preprocessing step)
    for enc in ("onehot", "onehot-dense", "ordinal"):
        out.append(KBinsDiscretizer(n_bins=3, encode=enc, strategy="uniform").fit(X))
    out.append(KBinsDiscretizer(n_bins=3, encode="ordinal").fit(F[["a", "b"]]))
    out += [PolynomialFeatures(2).fit(X), PolynomialFeatures((1, 2), interaction_only=True,
                                                             include_bias=False).fit(F[["a"]]),
            FeatureUnion([("s", StandardScaler()), ("m", MinMaxScaler())]).fit(X),
            FeatureUnion([("s", StandardScaler()), ("d", "drop")],
                         transformer_weights={"s": 2.0}).fit(F[["a", "b"]]),
            VarianceThreshold().fit(X), VarianceThreshold(0.01).fit(F[["a", "b"]]),
            SelectKBest(f_classif, k=2).fit(X, y), SelectKBest(chi2, k="all").fit(F[["a"]], y),
            SelectPercentile(f_classif, percentile=50).fit(X, y),
            MissingIndicator().fit(Xn), MissingIndicator(features="all").fit(
                pd.DataFrame(Xn, columns=["a", "b", "c"])),
            Normalizer().fit(X), Normalizer("max").fit(F[["a", "b"]]), Binarizer().fit(X),
            Binarizer(threshold=0.5).fit(F[["a", "b"]]), PowerTransformer().fit(X),
            PowerTransformer(method="box-cox", standardize=False).fit(F[["a", "b"]] + 0.1)]
    return out


# ----------------------------------------------------------------------------- refit schema


def _refit(RS: Any, _MISSING: Any, _steps: Any, _weights_by_name: Any) -> dict:
    """The refit schema of these types; the schema's shared parts (random state, missing
    value, pipeline steps, transformer weights) come from :mod:`._refit_schema`, which calls
    this (so this module never imports it)."""
    from anonml.modelfile._refit_values import (BOOL, MAX_FEATURES, NONE, Custom, Int, Lit,
                                                Real, _Bad, _dtype, p)

    def score(v: Any, ctx: Any, where: str) -> Any:
        import importlib

        for m, f in sorted(VETTED_FUNCTIONS):
            fn = getattr(importlib.import_module(m), f, None)
            if v is fn:
                return fn
        raise _Bad("is not f_classif, chi2 or mutual_info_classif")

    def degrees(v: Any, ctx: Any, where: str) -> tuple:
        if isinstance(v, (tuple, list)) and len(v) == 2 and all(
                type(d) is int and 0 <= d <= 5 for d in v) and v[0] <= v[1]:
            return tuple(v)
        raise _Bad("is not a pair of degrees (min, max), 0 ≤ min ≤ max ≤ 5")

    def union(v: Any, ctx: Any, where: str) -> list:
        return _steps(v, ctx, where)

    score_p = p(Custom(score, "f_classif, chi2 or mutual_info_classif"))
    return {
        _KBD: {"n_bins": p(Int(2, MAX_BINS), why=f"at most {MAX_BINS:,} bins a feature (a "
                           "finer grid copies the training values)"),
               "encode": p(Lit(("onehot", "onehot-dense", "ordinal"))),
               "strategy": p(Lit(("uniform", "quantile", "kmeans"))),
               "quantile_method": p(Lit(("inverted_cdf", "averaged_inverted_cdf",
                                         "closest_observation", "interpolated_inverted_cdf",
                                         "hazen", "weibull", "linear", "median_unbiased",
                                         "normal_unbiased", "warn"))),
               "dtype": p(NONE, Custom(_dtype, "a float dtype")),
               "subsample": p(NONE, Int(1, 10_000_000)), "random_state": RS},
        _POLY: {"degree": p(Int(0, 5), Custom(degrees, "a pair (min, max), 0 ≤ min ≤ max ≤ 5"),
                        why="at most degree 5 (the output width grows as the degree-th power "
                        "of the features)"),
                "interaction_only": BOOL, "include_bias": BOOL, "order": p(Lit(("C", "F")))},
        _UNION: {"transformer_list": p(Custom(union, "a list of (name, transformer) pairs")),
                 "transformer_weights": p(NONE, Custom(_weights_by_name,
                                                       "a dict name -> weight")),
                 "verbose_feature_names_out": BOOL},
        _VAR: {"threshold": p(Real(0))},
        _KBEST: {"score_func": score_p, "k": p(Lit(("all",)), Int(0, MAX_FEATURES))},
        _PCT: {"score_func": score_p, "percentile": p(Real(0, 100))},
        _MISS: {"missing_values": _MISSING, "features": p(Lit(("missing-only", "all"))),
                "sparse": p(Lit(("auto", True, False))), "error_on_new": BOOL},
        _NORM: {"norm": p(Lit(("l1", "l2", "max"))), "copy": BOOL},
        _BIN: {"threshold": p(Real()), "copy": BOOL},
        _POW: {"method": p(Lit(("yeo-johnson", "box-cox"))), "standardize": BOOL, "copy": BOOL},
    }


REFIT: dict = {}  # filled by anonml.modelfile._refit_schema (it imports this module)
