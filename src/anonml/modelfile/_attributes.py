"""The exact attributes a vetted class may carry in a ``.skops`` file.

A model file should hold the model and nothing else. skops restores an object's state with
``__setstate__`` or ``__dict__.update``, so any key in the file becomes an attribute: a
well-behaved tree that carries the training table as ``tree.notes_ = <3,000 rows>`` predicts
exactly like the genuine one. :func:`allowed_attributes` therefore gives, per vetted class, the
exact set of state keys the installed library itself writes:

* its constructor parameters (``inspect.signature(cls.__init__)``);
* the keys of the state skops writes for genuine fitted instances, *derived* here by fitting
  tiny instances under a few parameter settings (numpy and DataFrame input, binary and
  multiclass targets, early stopping, out-of-bag scores, ...), saving them with skops and
  reading the schema back. Nested parts (``Tree`` state, loss and link objects, optimizers,
  bin mappers, predictors, anonml's anonymizers as :func:`~anonml.modelfile._mapping.release_copy`
  leaves them) are collected from the same files. Each group of samples is built once per
  process (``lru_cache``, only for the groups a file needs; all groups together take well under
  a second);
* for dataclasses, their fields;
* a small explicit list per class (:data:`CONDITIONAL`) for the attributes that appear only
  under settings the samples do not cover, each with its reason.

Deriving from the installed version (not a committed table) keeps the list exact for whatever
scikit-learn, XGBoost and diffprivlib the checker runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import io
import json
import re
import warnings
import zipfile
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from anonml.modelfile._family import SAFE_BASES, SAFE_MODEL
from anonml.modelfile._pipeline_types import PREPROCESSORS
from anonml.modelfile._pipeline_types import VETTED as PIPELINE_TYPES

__all__ = ["allowed_attributes", "derived_state_keys"]

_ANON = "anonml.anonymize."

#: attributes every anonml safe wrapper adds at fit
SAFE_EXTRAS = frozenset({"anonml_n_samples_", "anonml_fingerprint_"})

#: attributes that appear only under settings the derived samples do not cover
CONDITIONAL: dict[tuple[str, str], frozenset[str]] = {
    # set_output(transform="pandas") on any transformer, and ColumnTransformer's fitted
    # "passthrough" FunctionTransformer (sklearn calls set_output on it)
    **{(m, c): frozenset({"_sklearn_output_config"}) for m, c in (
        *PREPROCESSORS,
        ("sklearn.preprocessing._function_transformer", "FunctionTransformer"),
        ("sklearn.compose._column_transformer", "ColumnTransformer"),
        ("sklearn.pipeline", "Pipeline"),
        *(t for t in PIPELINE_TYPES if t[1] != "make_column_selector"))},
    # fitted with a DataFrame whose columns are all strings
    **{(m, c): frozenset({"feature_names_in_"}) for m, c in (
        ("sklearn.linear_model._logistic", "LogisticRegression"),
        ("sklearn.neural_network._multilayer_perceptron", "MLPClassifier"),
        ("sklearn.ensemble._gb", "GradientBoostingClassifier"),
        ("sklearn.dummy", "DummyClassifier"),
        ("sklearn.preprocessing._encoders", "OrdinalEncoder"),
        ("sklearn.preprocessing._data", "MinMaxScaler"),
        ("sklearn.preprocessing._data", "MaxAbsScaler"),
        ("sklearn.preprocessing._data", "RobustScaler"),
        ("sklearn.impute._base", "SimpleImputer"))},
    # HistGradientBoosting fitted with a scoring other than the loss, or with categorical
    # features (its preprocessor, refused later anyway without trust)
    ("sklearn.ensemble._hist_gradient_boosting.gradient_boosting",
     "HistGradientBoostingClassifier"): frozenset({"_scorer", "_preprocessor",
                                                   "_is_categorical_remapped", "feature_names_in_",
                                                   "n_iter_", "validation_score_"}),
}


# ----------------------------------------------------------------------------- samples


def _data(n: int = 40, k: int = 2) -> tuple[np.ndarray, np.ndarray, Any]:
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = np.arange(n) % k
    return X, y, pd.DataFrame(X, columns=["a", "b", "c"])


def _trees() -> list:
    from sklearn.tree import (DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier,
                              ExtraTreeRegressor)

    X, y, F = _data()
    return [DecisionTreeClassifier(max_depth=2).fit(X, y),
            DecisionTreeClassifier(max_features=2, class_weight="balanced").fit(F, y),
            DecisionTreeRegressor(max_depth=2).fit(X, y), DecisionTreeRegressor().fit(F, y),
            ExtraTreeClassifier().fit(X, y), ExtraTreeClassifier().fit(F, y),
            ExtraTreeRegressor().fit(X, y), ExtraTreeRegressor().fit(F, y)]


def _forests() -> list:
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

    X, y, F = _data()
    out = []
    for cls in (RandomForestClassifier, ExtraTreesClassifier):
        out += [cls(n_estimators=2, random_state=0).fit(X, y),
                cls(n_estimators=3, oob_score=True, bootstrap=True, max_samples=0.9,
                    random_state=0).fit(F, y)]
    return out


def _boosting() -> list:
    from sklearn.ensemble import GradientBoostingClassifier as GB

    X, y, F = _data()
    _, y3, _ = _data(k=3)
    return [GB(n_estimators=2).fit(X, y), GB(n_estimators=2).fit(F, y3),
            GB(n_estimators=2, loss="exponential", init="zero").fit(X, y),
            GB(n_estimators=3, subsample=0.5, n_iter_no_change=1, validation_fraction=0.3,
               random_state=0).fit(F, y)]


def _hist_boosting() -> list:
    from sklearn.ensemble import HistGradientBoostingClassifier as HGB

    X, y, F = _data(60)
    _, y3, _ = _data(60, k=3)
    return [HGB(max_iter=2).fit(X, y), HGB(max_iter=2).fit(F, y3),
            HGB(max_iter=3, early_stopping=True, validation_fraction=0.3, n_iter_no_change=1,
                random_state=0).fit(F, y),
            HGB(max_iter=3, early_stopping=True, scoring="loss", random_state=0).fit(X, y)]


def _mlp() -> list:
    from sklearn.neural_network import MLPClassifier as MLP

    X, y, F = _data()
    _, y3, _ = _data(k=3)
    return [MLP(hidden_layer_sizes=(3,), max_iter=2).fit(X, y),
            MLP(hidden_layer_sizes=(3,), max_iter=2, solver="sgd").fit(F, y3),
            MLP(hidden_layer_sizes=(3,), max_iter=2, solver="lbfgs").fit(X, y),
            MLP(hidden_layer_sizes=(3,), max_iter=3, early_stopping=True,
                validation_fraction=0.3).fit(F, y)]


def _linear() -> list:
    from sklearn.linear_model import LogisticRegression

    X, y, F = _data()
    _, y3, _ = _data(k=3)
    return [LogisticRegression().fit(X, y), LogisticRegression().fit(F, y3)]


def _dummy() -> list:
    from sklearn.dummy import DummyClassifier

    X, y, F = _data()
    return [DummyClassifier().fit(X, y), DummyClassifier(strategy="uniform").fit(F, y),
            DummyClassifier(strategy="most_frequent").fit(X, y)]


def _preprocessing() -> list:
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import (FunctionTransformer, MaxAbsScaler, MinMaxScaler,
                                       OneHotEncoder, OrdinalEncoder, RobustScaler,
                                       StandardScaler)
    from sklearn.tree import DecisionTreeClassifier

    X, y, F = _data()
    F = F.assign(s=np.where(y == 0, "u", "v"), t=np.array(list("pqrs") * 10))
    Fn = F.assign(s=F["s"].where(F["a"] > -1.5, np.nan))
    enc = [OneHotEncoder(), OneHotEncoder(drop="first", sparse_output=False),
           OneHotEncoder(handle_unknown="ignore", min_frequency=2),
           OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=3),
           OrdinalEncoder(), OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                                            encoded_missing_value=-2)]
    out: list = []
    for e in enc:
        out.append(Pipeline([("pre", ColumnTransformer([("c", e, ["s", "t"])],
                                                       remainder="passthrough")),
                             ("m", DecisionTreeClassifier(max_depth=2))]).fit(Fn, y))
        out.append(type(e)(**e.get_params()).fit(Fn[["s", "t"]].to_numpy(dtype=object)))
    for s in (StandardScaler(), MinMaxScaler(), MaxAbsScaler(), RobustScaler(),
              SimpleImputer(), SimpleImputer(strategy="most_frequent"),
              FunctionTransformer()):
        out += [type(s)(**s.get_params()).fit(X), type(s)(**s.get_params()).fit(F[["a", "b"]])]
    out.append(ColumnTransformer([("n", StandardScaler(), [0, 1])], remainder="drop").fit(X))
    out.append(ColumnTransformer([("n", StandardScaler(), ["a"]), ("d", "drop", ["b"])],
                                 remainder=MinMaxScaler()).fit(F[["a", "b", "c"]]))
    out.append(Pipeline([("s", StandardScaler()), ("m", DecisionTreeClassifier())]).fit(
        pd.DataFrame(X), y))
    Xn = X.copy()
    Xn[::7, 0] = np.nan
    out.append(SimpleImputer(add_indicator=True).fit(Xn))  # its indicator_
    return out


def _pipeline_types() -> list:
    from anonml.modelfile._pipeline_types import samples

    return samples()


def _labels() -> list:
    from sklearn.preprocessing import LabelBinarizer, LabelEncoder

    _, y, _ = _data()
    _, y3, _ = _data(k=3)
    return [LabelEncoder().fit(y), LabelBinarizer().fit(y), LabelBinarizer().fit(y3)]


def _xgboost() -> list:
    from xgboost import XGBClassifier

    X, y, F = _data()
    _, y3, _ = _data(k=3)
    return [XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1).fit(X, y),
            XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1).fit(F, y3)]


def _dp() -> list:
    from anonml.dp._diffprivlib import DPLogisticRegression, DPRandomForestClassifier

    X, y, _ = _data()
    X = np.clip(X, -3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [DPRandomForestClassifier(5.0, bounds=(-3, 3), classes=[0, 1], n_estimators=2,
                                         random_state=0).fit(X, y),
                DPLogisticRegression(5.0, data_norm=6.0, classes=[0, 1],
                                     random_state=0).fit(X, y)]


def _dp_svc() -> list:
    from anonml.dp._svc import DPSVC

    X, y, F = _data()
    _, y3, _ = _data(k=3)
    return [DPSVC(5.0, bounds=(-3, 3), classes=[0, 1], n_components=4, random_state=0).fit(X, y),
            DPSVC(5.0, bounds=(-3, 3), classes=[0, 1, 2], n_components=4,
                  random_state=0).fit(F, y3)]


def _anonymizers() -> list:
    import pandas as pd

    from anonml.anonymize import (AccuracyGuidedAnonymizer, HilbertAnonymizer,
                                  MondrianAnonymizer, RTreeAnonymizer, SaNGreeAAnonymizer)
    from anonml.hierarchies import Hierarchy
    from anonml.modelfile._mapping import release_copy

    rng = np.random.default_rng(0)
    n = 80
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 5, n).astype(float),
                      "c": rng.choice(["x", "y", "z"], n), "s": rng.choice(["p", "q"], n)})
    y = np.where(X["a"] > 0, "yes", "no")
    qi = ["a", "b", "c"]
    made = [AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, tree="hist"),
            AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, tree="exact"),
            AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, sensitive="s", l=2),
            MondrianAnonymizer(k=10, quasi_identifiers=qi, recoding="generalize"),
            MondrianAnonymizer(k=10, quasi_identifiers=qi, sensitive="s", l=2),
            HilbertAnonymizer(k=10, quasi_identifiers=qi),
            RTreeAnonymizer(k=10, quasi_identifiers=qi),
            SaNGreeAAnonymizer(k=10, quasi_identifiers=qi),
            MondrianAnonymizer(k=10, quasi_identifiers=qi, recoding="generalize",
                               hierarchies={"c": Hierarchy([["x", "xy", "*"], ["y", "xy", "*"],
                                                            ["z", "z", "*"]])})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [release_copy(est.fit(X, y)) for est in made]


_SAMPLES: dict[str, Callable[[], list]] = {
    "trees": _trees, "forests": _forests, "boosting": _boosting,
    "hist_boosting": _hist_boosting, "mlp": _mlp, "linear": _linear, "dummy": _dummy,
    "preprocessing": _preprocessing, "labels": _labels, "xgboost": _xgboost, "dp": _dp,
    "dp_svc": _dp_svc, "anonymizers": _anonymizers, "pipeline_types": _pipeline_types,
}

#: which sample group writes a class (and its parts)
_GROUP: dict[str, str] = {
    "sklearn.tree.": "trees", "sklearn.ensemble._forest.": "forests",
    "sklearn.ensemble._gb.": "boosting", "sklearn.ensemble._hist_gradient_boosting.":
    "hist_boosting", "sklearn.neural_network.": "mlp", "sklearn.linear_model.": "linear",
    "sklearn.dummy.": "dummy", "sklearn.pipeline.": "preprocessing", "sklearn.compose.":
    "preprocessing", "sklearn.preprocessing._label.": "labels", "sklearn.preprocessing.":
    "preprocessing", "sklearn.impute.": "preprocessing", "xgboost.": "xgboost",
    "diffprivlib.": "dp", "anonml.dp._svc.": "dp_svc", "anonml.dp.": "dp",
    "anonml.": "anonymizers",
}
#: parts that several groups write
_PART_GROUPS: dict[str, tuple[str, ...]] = {
    "sklearn._loss.": ("boosting", "hist_boosting"),
}


def _groups_for(module: str, cls: str) -> tuple[str, ...]:
    if (module, cls) in PIPELINE_TYPES:  # their own samples: only files that hold one pay
        return ("pipeline_types",)
    name = f"{module}.{cls}"
    for prefix, groups in _PART_GROUPS.items():
        if name.startswith(prefix):
            return groups
    for prefix, group in _GROUP.items():
        if name.startswith(prefix):
            return (group,)
    return ()


def _collect(state: Any, out: dict) -> None:
    if isinstance(state, list):
        for item in state:
            _collect(item, out)
        return
    if not isinstance(state, dict):
        return
    if "__loader__" in state:
        key = (state["__loader__"], state.get("__module__"), state.get("__class__"))
        keys = _state_keys(state)
        if keys is not None:
            out.setdefault(key, set()).update(keys)
    for value in state.values():
        if isinstance(value, (dict, list)):
            _collect(value, out)


def _state_keys(state: dict) -> set | None:
    """The attribute names an object, tree or loss node restores, from its schema node
    (``None`` for other nodes). A JSON ``content`` is a state that skops wrote as one JSON
    value (an object whose state is ``{}``)."""
    if state.get("__loader__") not in ("ObjectNode", "TreeNode", "LossNode"):
        return None
    content = state.get("content")
    if isinstance(content, dict) and content.get("__loader__") == "DictNode":
        inner = content.get("content")
        return set(inner) if isinstance(inner, dict) else {"\0not-a-dict"}
    if isinstance(content, dict) and content.get("__loader__") == "JsonNode":
        try:
            value = json.loads(content.get("content", ""))
        except (TypeError, ValueError):
            return {"\0not-json"}
        if value is None:  # an object without state (``__getstate__`` gave None)
            return set()
        return set(value) if isinstance(value, dict) else {"\0not-a-dict"}
    if content is None and state.get("__loader__") in ("TreeNode", "LossNode"):
        return set()
    return {"\0not-a-dict"}


@lru_cache(maxsize=None)
def _group_keys(group: str) -> dict:
    """``{(loader, module, class): keys}`` from genuine samples of one group, saved with skops."""
    import skops.io as sio

    import contextlib

    from threadpoolctl import threadpool_limits

    try:  # tiny fits: threads only cost (the sandbox worker is limited to one already, and
        limit = threadpool_limits(1)  # refuses the native look-ups this needs)
    except Exception:  # noqa: BLE001
        limit = contextlib.nullcontext()
    out: dict = {}
    with warnings.catch_warnings(), limit:
        warnings.simplefilter("ignore")
        for model in _SAMPLES[group]():
            raw = sio.dumps(model)
            with zipfile.ZipFile(io.BytesIO(raw)) as zf:
                _collect(json.loads(zf.read("schema.json")), out)
    return {k: frozenset(v) for k, v in out.items()}


def derived_state_keys(loader: str, module: str, cls: str) -> frozenset[str]:
    """The state keys skops writes for genuine instances of a class (union over the samples);
    empty when no sample holds the class."""
    keys: set = set()
    for group in _groups_for(module, cls):
        keys |= _group_keys(group).get((loader, module, cls), frozenset())
    return frozenset(keys)


@lru_cache(maxsize=None)
def allowed_attributes(loader: str, module: str, cls: str) -> frozenset[str]:
    """The exact state keys a vetted class may carry in a ``.skops`` file (see the module
    docstring). Raises ``ImportError`` (or whatever building the samples raises) when the
    class's package cannot be imported or fitted: such a file cannot be built anyway."""
    base = SAFE_BASES.get((module, cls))
    if base is not None:
        return allowed_attributes(loader, *base) | SAFE_EXTRAS
    if (module, cls) == SAFE_MODEL:  # built by name, as skops builds it from a file
        safe_model = getattr(importlib.import_module(module), cls)
        return frozenset(_init_params(safe_model)) | SAFE_EXTRAS | {
            "estimator_", "classes_", "n_features_in_", "_sklearn_version"}
    keys = set(derived_state_keys(loader, module, cls))
    keys |= CONDITIONAL.get((module, cls), frozenset())
    if loader == "ObjectNode":
        klass = getattr(importlib.import_module(module), cls)
        if module.startswith("anonml."):
            keys |= _assigned_in_source(klass)
        if dataclasses.is_dataclass(klass):
            keys |= {f.name for f in dataclasses.fields(klass)}
        from sklearn.base import BaseEstimator

        if isinstance(klass, type) and issubclass(klass, BaseEstimator):
            keys |= set(_init_params(klass)) | {"_sklearn_version"}
    return frozenset(k for k in keys if not k.startswith("\0"))


_ASSIGN_RE = re.compile(r"\b(?:self|out|obj)\.([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]+)?=[^=]")


def _assigned_in_source(klass: type) -> set[str]:
    """anonml's own classes: every attribute their code assigns (``self.x = ...``), minus the
    per-row state :func:`~anonml.modelfile._mapping.release_copy` drops. This covers the
    attributes only some settings set (suppression, refinement, recodings) without a sample
    of each."""
    from anonml.anonymize._model import PER_ROW_ATTRIBUTES

    names: set[str] = set()
    for base in klass.__mro__:
        if not base.__module__.startswith("anonml."):
            continue
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        names |= set(_ASSIGN_RE.findall(source)) | _assigned_targets(source)
    return names - set(PER_ROW_ATTRIBUTES)


def _assigned_targets(source: str) -> set[str]:
    """The attributes of ``self``/``out``/``obj`` that ``source`` assigns, read from its syntax
    tree: also the targets the line pattern misses, such as the names of a tuple assignment
    (``self.a_, self.b_ = ...``)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    names: set[str] = set()

    def collect(target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                collect(t)
        elif isinstance(target, ast.Starred):
            collect(target.value)
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
              and target.value.id in ("self", "out", "obj")):
            names.add(target.attr)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                collect(t)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            collect(node.target)
    return names


def _init_params(klass: type) -> list[str]:
    sig = inspect.signature(klass.__init__)
    return [p.name for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
