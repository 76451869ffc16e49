"""The models a frontier retrains: named estimators, the model family, and its DP baseline.

A frontier refits one model per point. The model is either given (a fitted or unfitted
scikit-learn estimator, or a file read by :func:`anonml.safemodel.load_model`) or named:

* ``"random_forest"``: 100 trees, ``min_samples_leaf=2``, on one-hot categoricals and the raw
  numeric columns (trees need no scaling);
* ``"logistic_regression"``: L2 logistic regression (``max_iter=1000``) on one-hot categoricals
  and standardized numerics;
* ``"neural_network"``: the paper's network (one hidden layer of 100 ReLU units, early
  stopping; Goldsteen et al. 2022, Sec. 4), see :func:`anonml._models.paper_nn`.

The DP baseline of each family (forest: diffprivlib's ε-DP random forest, Fletcher & Islam
2017; linear: objective-perturbation logistic regression, Chaudhuri et al. 2011; network:
DP-SGD, Abadi et al. 2016, by Opacus; support-vector machine: :class:`anonml.dp.DPSVC`, output
perturbation on random Fourier features, Rubinstein et al. 2012) reads the same table through a *fixed* encoder: one-hot
with the categories seen in the training and test tables, numeric columns scaled to [0, 1] by
their range over those tables. Those ranges stand in for the public bounds a data owner
declares from the schema (docs/frontier.md says so); nothing else of the data reaches the
mechanism outside its ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone

from anonml._errors import InputError

__all__ = ["ESTIMATORS", "dp_baseline", "family", "make_estimator", "plain_clone"]

ESTIMATORS = ("random_forest", "logistic_regression", "neural_network")


def _split_columns(X: pd.DataFrame) -> tuple[list, list]:
    categorical = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])
                   or pd.api.types.is_bool_dtype(X[c])]
    numeric = [c for c in X.columns if c not in set(categorical)]
    return categorical, numeric


def make_estimator(name: str, X: pd.DataFrame, random_state: Any = 0) -> Any:
    """An unfitted pipeline for the named estimator over the columns of ``X``."""
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from anonml._models import paper_nn, preprocessor

    categorical, numeric = _split_columns(X)
    if name == "random_forest":
        encode = make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
            ("passthrough", numeric))
        return make_pipeline(encode, RandomForestClassifier(
            n_estimators=100, min_samples_leaf=2, n_jobs=-1, random_state=random_state))
    if name == "logistic_regression":
        return make_pipeline(preprocessor(categorical, numeric),
                             LogisticRegression(max_iter=1000))
    if name == "neural_network":
        return paper_nn(categorical, numeric, random_state=random_state)
    raise InputError(f"estimator={name!r} is not known; fix: choose one of "
                     f"{', '.join(ESTIMATORS)}, or pass model=<estimator or file>")


def _last_step(model: Any) -> Any:
    steps = getattr(model, "steps", None)
    if steps:
        return _last_step(steps[-1][1])
    inner = getattr(model, "estimator", None)  # anonml's safe wrappers
    if getattr(model, "_anonml_generic", False) and inner is not None:
        return _last_step(inner)
    return model


def family(model: Any) -> str | None:
    """``"forest"``, ``"linear"``, ``"network"`` or None: which DP baseline matches ``model``."""
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.neural_network import MLPClassifier

    from anonml.modelfile._sandbox import is_sandboxed

    if is_sandboxed(model):  # held in the sandbox: the family its worker reported
        return {"random_forest": "forest", "extra_trees": "forest", "logistic_regression":
                "linear", "mlp": "network", "svm": "svm", "dp_svm": "svm"}.get(model.family)
    last = _last_step(model)
    if isinstance(last, (RandomForestClassifier, ExtraTreesClassifier)):
        return "forest"
    if isinstance(last, (LogisticRegression, SGDClassifier)):
        return "linear"
    if isinstance(last, MLPClassifier) or type(last).__name__ == "MLPTorchClassifier":
        return "network"
    if type(last).__name__ in ("SVC", "NuSVC", "DPSVC", "SafeDPSVC"):
        return "svm"
    return None


def plain_clone(model: Any) -> Any:
    """An unfitted copy of ``model`` (anonml's safe wrappers removed); one line if impossible."""
    from anonml.safemodel._release import plain_estimator

    try:
        return plain_estimator(model)
    except (TypeError, RuntimeError, AttributeError, StopIteration) as exc:
        raise InputError(
            f"the model ({type(model).__name__}) cannot be cloned for retraining ({exc}); "
            "fix: pass a scikit-learn compatible estimator (get_params/fit), or "
            "estimator='random_forest'"
        ) from None


class FixedEncoder(TransformerMixin, BaseEstimator):
    """One-hot categoricals with fixed categories and numerics scaled by fixed ranges to [0, 1].

    Stateless beyond its parameters (``fit`` learns nothing from the rows), so a DP model
    behind it sees the data only through its own mechanism.

    Parameters
    ----------
    categories : dict
        Column -> list of its categories (others encode as all zeros).
    ranges : dict
        Numeric column -> (low, high); values are clipped to it.
    """

    def __init__(self, categories: dict | None = None, ranges: dict | None = None):
        self.categories = categories
        self.ranges = ranges

    def fit(self, X: Any, y: Any = None) -> FixedEncoder:
        self.n_features_out_ = (sum(len(v) for v in self.categories.values())
                                + len(self.ranges))
        return self

    def transform(self, X: Any) -> np.ndarray:
        X = pd.DataFrame(X)
        parts = []
        for col, cats in self.categories.items():
            codes = pd.Categorical(X[col].astype(object), categories=list(cats)).codes
            onehot = np.zeros((len(X), len(cats)))
            ok = codes >= 0
            onehot[np.flatnonzero(ok), codes[ok]] = 1.0
            parts.append(onehot)
        for col, (lo, hi) in self.ranges.items():
            v = pd.to_numeric(X[col], errors="coerce").to_numpy(dtype=float)
            span = (hi - lo) or 1.0
            parts.append(np.clip((np.nan_to_num(v, nan=lo) - lo) / span, 0.0, 1.0)[:, None])
        return np.hstack(parts) if parts else np.zeros((len(X), 0))


def _fixed_encoder(X_train: pd.DataFrame, X_test: pd.DataFrame) -> FixedEncoder:
    both = pd.concat([X_train, X_test], axis=0, ignore_index=True)
    categorical, numeric = _split_columns(both)
    categories = {c: sorted(map(str, both[c].astype(object).dropna().unique()))
                  for c in categorical}
    ranges = {c: (float(both[c].min()), float(both[c].max())) for c in numeric}
    return FixedEncoder(categories, ranges)


def dp_baseline(fam: str | None, X_train: pd.DataFrame, X_test: pd.DataFrame, classes: Any,
                epsilon: float, random_state: Any = 0) -> tuple[Any, str]:
    """The unfitted DP pipeline for ``fam`` and its name; (None, reason) when there is none."""
    from sklearn.pipeline import make_pipeline

    if fam is None:
        return None, "no DP baseline matches this model family (forest, linear, network or svm)"
    encoder = _fixed_encoder(X_train, X_test)
    classes = np.asarray(sorted(pd.unique(np.asarray(classes))))
    if fam == "forest":
        from anonml.dp import DPRandomForestClassifier

        model = DPRandomForestClassifier(epsilon, bounds=(0.0, 1.0), classes=classes,
                                         n_estimators=10, max_depth=8,
                                         random_state=random_state)
        return make_pipeline(encoder, model), "DP random forest (diffprivlib)"
    if fam == "linear":
        from anonml.dp import DPLogisticRegression

        model = DPLogisticRegression(epsilon, data_norm=float(np.sqrt(max(
            len(encoder.categories) + len(encoder.ranges), 1))), classes=classes,
            random_state=random_state)
        return make_pipeline(encoder, model), "DP logistic regression (diffprivlib)"
    if fam == "svm":  # the RBF kernel on the [0, 1] encoding, gamma = 1 / (number of columns)
        from anonml.dp import DPSVC

        width = sum(len(v) for v in encoder.categories.values()) + len(encoder.ranges)
        model = DPSVC(epsilon, bounds=(0.0, 1.0), classes=classes, gamma=1.0 / max(width, 1),
                      n_components=200, lam=0.01, random_state=random_state)
        return make_pipeline(encoder, model), "DP SVC (random Fourier features)"
    from anonml.dp import DPSGDClassifier

    model = DPSGDClassifier(epsilon, classes=classes, hidden_layer_sizes=(100,),
                            activation="relu", learning_rate=1e-3, epochs=5,
                            random_state=random_state)
    return make_pipeline(encoder, model), "DP-SGD network (opacus)"


def fitted_or_fit(model: Any, X: Any, y: Any) -> tuple[Any, bool]:
    """The model as given when fitted, else a fitted clone; (model, was_fitted)."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
        return model, True
    except (NotFittedError, TypeError):
        return clone(model).fit(X, y), False
