"""L2-regularized logistic regression, exact and ε-DP by output perturbation.

The objective (Chaudhuri & Monteleoni 2008; Chaudhuri, Monteleoni & Sarwate 2011, JMLR 12):

    J(w; D) = (1/n) Σᵢ log(1 + exp(−sᵢ wᵀx̃ᵢ)) + (λ/2) ‖w‖²,    sᵢ ∈ {−1, +1},   ‖x̃ᵢ‖ ≤ 1.

Its minimizer has L2 sensitivity 2/(nλ) when one record is replaced (the loss is 1-Lipschitz
in wᵀx̃ and J is λ-strongly convex; Corollary 8 of CMS 2011), so adding a vector η with
density ∝ exp(−nλε‖η‖/2) (see :mod:`anonml.dp._noise`) makes it ε-DP.

The bound ‖x̃‖ ≤ 1 is obtained from a **public** norm bound B on the raw features: rows are
clipped to norm B, and x̃ = [x / (B√2), 1/√2] appends a constant coordinate so that the
intercept is part of w and regularized with it (an unregularized intercept would break the
sensitivity bound). Multiclass problems are solved one-vs-rest, K binary problems, each with
ε/K of the budget (basic composition): noise scale 2K/(nλε) per class.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError
from anonml._utils import check_real
from anonml.dp._noise import check_epsilon, l2_laplace_noise

__all__ = [
    "RegularizedLogisticRegression",
    "OutputPerturbationLogisticRegression",
    "augment",
    "unaugment",
    "fit_logistic",
    "logistic_gradient",
]

_SQRT2 = np.sqrt(2.0)


# ---------------------------------------------------------------------------------------------
# checks and the feature map
# ---------------------------------------------------------------------------------------------
def check_data_norm(data_norm: Any) -> float:
    """The public L2 bound on a feature row; fails closed when it is missing."""
    if data_norm is None:
        raise InputError(
            "data_norm is required: a public bound on the L2 norm of a feature row (rows are "
            "clipped to it); it must not be read from the private data, e.g. data_norm=1.0 "
            "after scaling features to the unit ball"
        )
    return check_real("data_norm", data_norm, example=1.0)


def check_lam(lam: Any) -> float:
    return check_real("lam", lam, example=0.01, why="the L2 penalty")


def check_features(X: Any, what: str = "X") -> np.ndarray:
    """A 2-D float array without NaN or inf (column named in the error)."""
    arr = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X)
    if arr.ndim != 2:
        raise InputError(f"{what} must be 2-D (rows x features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InputError(f"{what} has no rows")
    try:
        arr = arr.astype(np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"{what} must be numeric; encode categorical features first (e.g. one-hot)"
        ) from None
    bad = ~np.isfinite(arr)
    if bad.any():
        col = int(np.flatnonzero(bad.any(axis=0))[0])
        names = getattr(X, "columns", None)
        name = repr(names[col]) if names is not None else f"#{col}"
        raise InputError(f"{what} column {name} has missing or infinite values; impute them first")
    return arr


def clip_rows(X: np.ndarray, data_norm: float) -> np.ndarray:
    """Scale every row whose L2 norm exceeds ``data_norm`` down to that norm."""
    norms = np.linalg.norm(X, axis=1)
    factor = np.minimum(1.0, data_norm / np.maximum(norms, 1e-300))
    return X * factor[:, None]


def augment(X: np.ndarray, data_norm: float) -> np.ndarray:
    """x̃ = [clip(x) / (B√2), 1/√2]: rows of norm at most 1, with the intercept coordinate."""
    Xc = clip_rows(np.asarray(X, dtype=np.float64), data_norm)
    return np.hstack([Xc / (data_norm * _SQRT2), np.full((Xc.shape[0], 1), 1.0 / _SQRT2)])


def unaugment(Xt: np.ndarray, data_norm: float) -> np.ndarray:
    """Inverse of :func:`augment` on rows already inside the ball."""
    return Xt[:, :-1] * (data_norm * _SQRT2)


def signs(y_codes: np.ndarray, n_classes: int) -> np.ndarray:
    """±1 targets of the binary problems: one column for 2 classes, K (one-vs-rest) otherwise."""
    if n_classes == 2:
        return np.where(y_codes == 1, 1.0, -1.0)[:, None]
    return np.where(y_codes[:, None] == np.arange(n_classes)[None, :], 1.0, -1.0)


# ---------------------------------------------------------------------------------------------
# the objective
# ---------------------------------------------------------------------------------------------
def logistic_objective(w: np.ndarray, Xt: np.ndarray, s: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
    """J(w) and its gradient for one binary problem (s = ±1 per row)."""
    margin = s * (Xt @ w)
    value = -log_expit(margin).mean() + 0.5 * lam * w @ w
    grad = Xt.T @ (-s * expit(-margin)) / Xt.shape[0] + lam * w
    return float(value), grad


def logistic_gradient(W: np.ndarray, Xt: np.ndarray, S: np.ndarray, lam: float) -> np.ndarray:
    """∇J at each row of W (one per binary problem), as an array shaped like W."""
    margin = S * (Xt @ W.T)  # (n, K')
    return (-(S * expit(-margin))).T @ Xt / Xt.shape[0] + lam * W


def fit_logistic(Xt: np.ndarray, S: np.ndarray, lam: float) -> np.ndarray:
    """Exact minimizers of J, one row per binary problem (columns of S), by L-BFGS."""
    W = np.zeros((S.shape[1], Xt.shape[1]))
    for k in range(S.shape[1]):
        res = minimize(
            logistic_objective, W[k], args=(Xt, S[:, k], lam), jac=True, method="L-BFGS-B",
            options={"maxiter": 2000, "gtol": 1e-10, "ftol": 1e-15},
        )
        W[k] = res.x
    return W


# ---------------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------------
class ScoresClassifierMixin:
    """``predict`` and ``predict_proba`` of a linear classifier from its ``decision_function``
    (one score for two classes, one per class one-vs-rest): the class of the highest score, and
    the logistic function of the scores (normalized over the classes; not calibrated)."""

    def predict(self, X: Any) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        p = expit(self.decision_function(X))
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p / p.sum(axis=1, keepdims=True)


class RegularizedLogisticRegression(ScoresClassifierMixin, ClassifierMixin, BaseEstimator):
    """Logistic regression minimizing exactly J(w) above (non-private).

    This is the model a recipient trains on a masked dataset to recover the private weights:
    the same λ, the same public ``data_norm`` and the same feature map.

    Parameters
    ----------
    lam : float
        L2 penalty λ (the objective averages the loss over rows).
    data_norm : float
        Public bound on a row's L2 norm; rows are clipped to it.

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (1 or K, n_features + 1)
        Weights on the augmented features (last column: the intercept coordinate).
    """

    def __init__(self, lam: float = 0.01, data_norm: float | None = None):
        self.lam = lam
        self.data_norm = data_norm

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        lam = check_lam(self.lam)
        B = check_data_norm(self.data_norm)
        X = check_features(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise InputError(f"y must be 1-D with one label per row of X ({X.shape[0]})")
        self.classes_, codes = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise InputError("y has a single class; logistic regression needs two or more")
        self.n_features_in_ = X.shape[1]
        return augment(X, B), signs(codes.ravel(), self.classes_.size), lam

    def fit(self, X: Any, y: Any) -> "RegularizedLogisticRegression":
        Xt, S, lam = self._prepare(X, y)
        self.coef_ = fit_logistic(Xt, S, lam)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise InputError(f"X has {X.shape[1]} features; the model was fitted on {self.n_features_in_}")
        scores = augment(X, float(self.data_norm)) @ self.coef_.T
        return scores[:, 0] if scores.shape[1] == 1 else scores



class OutputPerturbationLogisticRegression(RegularizedLogisticRegression):
    """ε-DP logistic regression by output perturbation (Chaudhuri, Monteleoni & Sarwate 2011).

    The exact minimizer of J plus a vector with density ∝ exp(−nλε‖η‖/(2K')), where K' = 1
    for two classes and K (one-vs-rest, budget split evenly) for K > 2 classes.

    Parameters
    ----------
    epsilon : float
        Privacy budget ε > 0 (pure ε-DP, replace-one neighbouring datasets).
    lam : float
        L2 penalty λ. Larger λ: less noise, more bias.
    data_norm : float
        **Required** public bound on a feature row's L2 norm; the fit refuses to run without
        it (it must not be read from the data). The class labels present in ``y`` are treated
        as public.
    random_state : int, Generator or None

    Attributes
    ----------
    coef_ : ndarray
        The private weights (exact minimizer + noise): the only thing learned from the data.
    noise_scale_ : float
        b = 2K'/(nλε).
    """

    def __init__(self, epsilon: float = 1.0, lam: float = 0.01, data_norm: float | None = None,
                 random_state: Any = None):
        self.epsilon = epsilon
        self.lam = lam
        self.data_norm = data_norm
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> "OutputPerturbationLogisticRegression":
        eps = check_epsilon(self.epsilon)
        Xt, S, lam = self._prepare(X, y)
        W = fit_logistic(Xt, S, lam)
        n, k_problems = Xt.shape[0], S.shape[1]
        self.noise_scale_ = 2.0 * k_problems / (n * lam * eps)
        rng = np.random.default_rng(self.random_state)
        self.coef_ = W + l2_laplace_noise(Xt.shape[1], self.noise_scale_, rng, size=k_problems)
        return self
