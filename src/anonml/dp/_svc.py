"""ε-DP support-vector classifier: output perturbation on random Fourier features of the RBF kernel.

The mechanism (Rubinstein, Bartlett, Huang & Taft 2012, ``PrivateSVM`` with a translation-
invariant kernel; Chaudhuri, Monteleoni & Sarwate 2011, Sec. 6 and Algorithm 1):

1. **Public scale.** Each feature is clipped to its public bounds ``(lower, upper)`` and mapped
   to [0, 1]: ``u = (clip(x) − lower) / (upper − lower)``. The bounds give ``gamma`` a fixed
   meaning without any statistic of the private rows (scikit-learn's ``gamma="scale"`` and a
   ``StandardScaler`` fitted on the training table read the data outside the budget).
2. **Random features** (Rahimi & Recht 2007). ``n_components`` frequencies ω_j ~ N(0, 2γ I) are
   drawn from the RBF kernel's spectral density, independently of the data, and
   ``φ(u) = D^{-1/2} [cos(ω_jᵀu), sin(ω_jᵀu)]_{j ≤ D}``, so ``φ(u)ᵀφ(v) → exp(−γ‖u − v‖²)``
   and ``‖φ(u)‖ = 1`` exactly, for any input. With the intercept coordinate,
   ``z = [φ(u), 1] / √2`` has ``‖z‖ = 1`` (the intercept is regularized with ``w``; an
   unregularized one would break the bound below).
3. **Regularized ERM.** ``J(w) = (1/n) Σᵢ ℓ_h(sᵢ wᵀzᵢ) + (λ/2)‖w‖²`` with the Huber hinge loss
   of CMS 2011 (eq. 7, h = 0.5): the hinge loss smoothed in ``[1 − h, 1 + h]``, convex,
   differentiable and 1-Lipschitz in the margin. Replacing one record moves the minimizer by at
   most ``2 L ‖z‖ / (nλ) = 2 / (nλ)`` in L2 (CMS 2011, Corollary 8; Rubinstein et al. 2012,
   Lemma 17 for any convex Lipschitz loss).
4. **Exactness.** The minimizer is computed to a *public* gradient tolerance ``τ = 10⁻³/n``:
   by λ-strong convexity ``‖w̃ − w*‖ ≤ ‖∇J(w̃)‖/λ ≤ τ/λ``, so the released solver output has
   sensitivity ``Δ = 2 (1/n + τ) / λ`` (the 0.1 % is accounted, not assumed away). A fit that
   does not reach ``τ`` is refused.
5. **Noise.** ``w̃ + η`` with density ∝ ``exp(−ε‖η‖/Δ)`` (norm Gamma(2D + 1, Δ/ε), uniform
   direction; :func:`anonml.dp.l2_laplace_noise`): pure ε-DP, replace-one neighbours.

Multiclass: one-vs-rest, K binary problems on all the rows, each with ε/K of the budget (basic
composition): noise scale ``K Δ / ε`` per class. The number of rows, the number of features and
the public ``classes`` are not protected (as usual). The frequencies are released with the
model; they are data-independent draws from ``random_state``.

Probabilities: ``predict_proba`` maps the noisy scores through the logistic function (a fixed
post-processing). They are not calibrated: Platt scaling would read the private data again.

References
----------
Rahimi, A. & Recht, B. (2007). Random features for large-scale kernel machines. NeurIPS 20.
Rubinstein, B. I. P., Bartlett, P. L., Huang, L. & Taft, N. (2012). Learning in a large function
space: privacy-preserving mechanisms for SVM learning. J. Privacy and Confidentiality 4(1).
Chaudhuri, K., Monteleoni, C. & Sarwate, A. D. (2011). Differentially private empirical risk
minimization. JMLR 12, 1069-1109.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError, PrivacyViolationError
from anonml._utils import check_int, check_real
from anonml.dp._diffprivlib import check_bounds, check_classes, check_labels
from anonml.dp._logistic import ScoresClassifierMixin, check_features, check_lam
from anonml.dp._noise import check_epsilon, l2_laplace_noise

__all__ = ["DPSVC", "huber_hinge", "rff_features"]

#: Huber-hinge smoothing width h (CMS 2011 use h = 0.5 in their experiments)
HUBER_H = 0.5
#: the solver's public gradient tolerance, as a fraction of the loss term's sensitivity L/n
TOL_FRACTION = 1e-3
#: most random frequencies (the fit holds an n x (2 * n_components + 1) feature matrix)
MAX_COMPONENTS = 20_000
_SQRT2 = np.sqrt(2.0)


# ---------------------------------------------------------------------------------------------
# the feature map and the loss
# ---------------------------------------------------------------------------------------------
def scale_to_unit(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Clip every feature to its public bounds and map it to [0, 1] (a constant column: 0)."""
    span = upper - lower
    span = np.where(span > 0, span, 1.0)
    return (np.clip(X, lower, upper) - lower) / span


def rff_features(U: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``z = [cos(Uω), sin(Uω), √D] / √(2D)``: unit-norm rows, the last coordinate the
    intercept's (Rahimi & Recht 2007, the cos/sin form)."""
    D = omega.shape[1]
    Z = np.empty((U.shape[0], 2 * D + 1))
    np.matmul(U, omega, out=Z[:, :D])
    np.sin(Z[:, :D], out=Z[:, D:2 * D])
    np.cos(Z[:, :D], out=Z[:, :D])
    Z[:, :2 * D] *= 1.0 / np.sqrt(2.0 * D)
    Z[:, 2 * D] = 1.0 / _SQRT2
    return Z


def huber_hinge(margin: np.ndarray, h: float = HUBER_H) -> tuple[np.ndarray, np.ndarray]:
    """The Huber hinge loss of CMS 2011 (eq. 7) and its derivative, at each margin."""
    hi, lo = margin > 1.0 + h, margin < 1.0 - h
    mid = 1.0 + h - margin
    loss = np.where(hi, 0.0, np.where(lo, 1.0 - margin, mid * mid / (4.0 * h)))
    grad = np.where(hi, 0.0, np.where(lo, -1.0, -mid / (2.0 * h)))
    return loss, grad


def _objective(w: np.ndarray, Z: np.ndarray, s: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
    loss, d = huber_hinge(s * (Z @ w))
    value = loss.mean() + 0.5 * lam * w @ w
    grad = Z.T @ (s * d) / Z.shape[0] + lam * w
    return float(value), grad


def fit_huber_svm(Z: np.ndarray, s: np.ndarray, lam: float, tol: float) -> np.ndarray:
    """The minimizer of J for one binary problem, to gradient norm ``tol`` (else refused)."""
    w = np.zeros(Z.shape[1])
    for _ in range(4):  # L-BFGS restarts from where it stopped; one is almost always enough
        res = minimize(_objective, w, args=(Z, s, lam), jac=True, method="L-BFGS-B",
                       options={"maxiter": 5000, "gtol": 1e-14, "ftol": 1e-16, "maxcor": 30})
        w = res.x
        if np.linalg.norm(_objective(w, Z, s, lam)[1]) <= tol:
            return w
    raise PrivacyViolationError(
        "the DP SVC's solver did not reach its gradient tolerance, so the sensitivity bound "
        "would not hold; no model was returned: raise lam (e.g. lam=0.01) or lower n_components"
    )


def _check_input(X: Any, n_features: int | None = None) -> np.ndarray:
    """A dense, real, finite 2-D table with at least one feature (and ``n_features`` of them)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        raise InputError("X is a sparse matrix: sparse input is not supported by DPSVC; pass a "
                         "dense array (X.toarray())")
    arr = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X)
    if arr.dtype.kind == "c":
        raise InputError("X holds complex numbers: Complex data not supported; pass real values")
    if arr.ndim == 1:
        raise InputError(f"X must be 2-D (rows x features), got shape {arr.shape}; Reshape your "
                         "data with X.reshape(-1, 1) (one feature) or X.reshape(1, -1) (one row)")
    X = check_features(X if hasattr(X, "columns") else arr)
    if X.shape[1] == 0:
        raise InputError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         "required; pass at least one column")
    if n_features is not None and X.shape[1] != n_features:
        raise InputError(f"X has {X.shape[1]} features, but DPSVC is expecting {n_features} "
                         "features as input; pass the columns the model was fitted on")
    return X


def _check_gamma(gamma: Any) -> float:
    return check_real("gamma", gamma, example=0.1,
                      why="fixed in advance (the RBF kernel on features scaled to [0, 1] by "
                      "their public bounds); 'scale' would read the private data")


def _check_components(n: Any) -> int:
    return check_int("n_components", n, high=MAX_COMPONENTS, example=100,
                     why="the number of random frequencies")


# ---------------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------------
class DPSVC(ScoresClassifierMixin, ClassifierMixin, BaseEstimator):
    """ε-DP RBF-kernel support-vector classifier (random Fourier features + output perturbation).

    See the module docstring for the mechanism and its proof sketch. The fitted model holds no
    training record: only the random frequencies (drawn without looking at the data) and one
    noisy weight vector of ``2 * n_components + 1`` numbers per binary problem.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy budget ε > 0 (pure ε-DP, replace-one neighbouring datasets).
    bounds : (lower, upper)
        **Required** public bounds, each a number or one number per feature (a codebook's
        ranges; one-hot columns have (0, 1)). Features are clipped to them and scaled to [0, 1].
    classes : array-like
        **Required** public list of every class label.
    gamma : float, default 0.1
        RBF kernel width on the scaled features: ``k(u, v) = exp(−γ‖u − v‖²)``.
    n_components : int, default 100
        Random frequencies D; the feature map has 2D coordinates (cos and sin) plus the
        intercept. More: a closer kernel approximation, and noise spread over more dimensions.
    lam : float, default 0.01
        L2 penalty λ of the averaged loss (scikit-learn's ``C`` is ``1 / (n λ)``). Larger: less
        noise (scale ∝ 1/(nλε)), more bias.
    random_state : int, Generator or None
        Seeds the frequencies and the noise.

    Attributes
    ----------
    classes_ : ndarray
        The sorted public classes.
    bounds_ : tuple of ndarray
        The validated public (lower, upper) bounds.
    random_weights_ : ndarray of shape (n_features, n_components)
        The frequencies ω (data-independent).
    coef_ : ndarray of shape (1 or K, 2 * n_components)
        Noisy weights on the cos/sin features (binary: one row, for ``classes_[1]``).
    intercept_ : ndarray of shape (1 or K,)
        Noisy weight of the intercept coordinate (already divided by √2 as in ``z``).
    sensitivity_ : float
        Δ = 2 (1/n + τ)/λ of one binary problem's solution.
    noise_scale_ : float
        b = K'Δ/ε: the noise density is ∝ exp(−‖η‖/b) (K' = 1 for two classes, K otherwise).
    epsilon_spent_ : float
        The budget spent (equals ``epsilon``).
    n_features_in_ : int
    """

    def __init__(self, epsilon: float = 1.0, *, bounds: Any = None, classes: Any = None,
                 gamma: float = 0.1, n_components: int = 100, lam: float = 0.01,
                 random_state: Any = None):
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.gamma = gamma
        self.n_components = n_components
        self.lam = lam
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPSVC:
        """Fit on numeric ``X`` (rows × features) and labels ``y``; every check before the data."""
        eps = check_epsilon(self.epsilon)
        classes = check_classes(self.classes)
        gamma = _check_gamma(self.gamma)
        D = _check_components(self.n_components)
        lam = check_lam(self.lam)
        if self.bounds is None:
            check_bounds(None, 0)
        if y is None:
            raise InputError("DPSVC requires y to be passed, but the target y is None; pass the "
                             "labels")
        X = _check_input(X)
        lo, hi = check_bounds(self.bounds, X.shape[1])
        codes = check_labels(y, X.shape[0], classes)
        n, d = X.shape
        rng = np.random.default_rng(self.random_state)
        omega = rng.normal(0.0, np.sqrt(2.0 * gamma), size=(d, D))
        Z = rff_features(scale_to_unit(X, lo, hi), omega)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        tol = TOL_FRACTION / n
        sensitivity = 2.0 * (1.0 / n + tol) / lam
        scale = len(problems) * sensitivity / eps
        W = np.array([fit_huber_svm(Z, np.where(codes == k, 1.0, -1.0), lam, tol)
                      for k in problems])
        noise = l2_laplace_noise(Z.shape[1], scale, rng, size=len(problems)) \
            if np.isfinite(scale) else None
        if noise is None or not np.isfinite(W + noise).all():  # the noise overflows a float
            raise InputError(f"epsilon={eps:g} gives noise of scale {scale:.3g}, which does not "
                             "fit in a float; fix: choose a larger epsilon (e.g. 0.1 or more)")
        W = W + noise
        self.classes_ = classes
        self.bounds_ = (lo, hi)
        self.random_weights_ = omega
        self.coef_, self.intercept_ = W[:, :-1], W[:, -1]
        self.sensitivity_ = float(sensitivity)
        self.noise_scale_ = float(scale)
        self.epsilon_spent_ = eps
        self.n_features_in_ = d
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Noisy scores wᵀz: shape (n,) for two classes (positive: ``classes_[1]``), (n, K)."""
        check_is_fitted(self, "coef_")
        X = _check_input(X, self.n_features_in_)
        Z = rff_features(scale_to_unit(X, *self.bounds_), self.random_weights_)
        scores = Z[:, :-1] @ self.coef_.T + Z[:, -1:] * self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores
