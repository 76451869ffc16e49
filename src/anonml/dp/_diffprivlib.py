"""ε-DP random forest and logistic regression: fail-closed adapters over IBM's diffprivlib.

diffprivlib (Holohan et al. 2019) implements the mechanisms; these adapters make them safe to
call from a pipeline:

* **Public bounds are required.** diffprivlib reads missing feature bounds, class lists and
  norm bounds from the training data, with a ``PrivacyLeakWarning``, and carries on: the
  result is then not differentially private. Here a missing ``bounds``, ``classes`` or
  ``data_norm`` is a one-line :class:`~anonml._errors.InputError` before any data is read,
  and any ``PrivacyLeakWarning`` raised during a fit is turned into a
  :class:`~anonml._errors.PrivacyViolationError` (no model is returned).
* **Bounds must be public knowledge**, never computed from the private table: a codebook,
  a survey's documented ranges and top-codes, a physical limit. A one-hot column has bounds
  (0, 1). Values outside the bounds are clipped by diffprivlib (features to ``bounds`` for
  the forest, rows to L2 norm ``data_norm`` for logistic regression), so loose bounds cost
  accuracy and tight ones clip, but neither costs privacy.
* **Inputs are numeric matrices**: encode categorical columns first, with category lists
  that are themselves public (a one-hot encoder fitted on the private table reveals which
  rare categories occur).
* Each fit uses a fresh diffprivlib ``BudgetAccountant`` (no global budget state) and a
  generator derived from ``random_state``; ``epsilon_spent_`` is what that accountant
  recorded.

Compatibility: diffprivlib 0.6.6 imports the constants ``DOUBLE`` and ``DTYPE`` from
``sklearn.tree._tree``, which scikit-learn 1.9 removed. When they are missing they are set back
to the values scikit-learn exported until 1.8 (``numpy.float64`` and ``numpy.float32``) just
before diffprivlib is first imported; scikit-learn itself no longer reads them. diffprivlib's
``LogisticRegression`` class cannot be constructed with scikit-learn 1.9 (it passes the removed
``multi_class`` argument), so :class:`DPLogisticRegression` calls the function that class fits
with, ``diffprivlib.models.logistic_regression._logistic_regression_path``, once per binary
problem. diffprivlib 0.6.6's forest also mislabels leaves when the classes are not 0..K-1 (it
compares class indices with class values); :class:`DPRandomForestClassifier` hands it indices
and maps them back.

References
----------
Holohan, N., Braghin, S., Mac Aonghusa, P. & Levacher, K. (2019). Diffprivlib: the IBM
differential privacy library. arXiv:1907.02444.
Fletcher, S. & Islam, M. Z. (2017). Differentially private random decision forests using smooth
sensitivity. Expert Systems with Applications 78. (diffprivlib's forest: random splits drawn
within the public bounds, leaf labels chosen by the permute-and-flip mechanism; each tree is
fitted on a disjoint share of the rows, so the forest is ε-DP by parallel composition.)
McKenna, R. & Sheldon, D. (2020). Permute-and-flip: a new mechanism for differentially private
selection. NeurIPS.
Chaudhuri, K., Monteleoni, C. & Sarwate, A. D. (2011). Differentially private empirical risk
minimization. JMLR 12, Algorithm 2 (objective perturbation; diffprivlib's ``Vector``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError, PrivacyViolationError
from anonml._install import install_hint
from anonml._utils import check_int, check_n_jobs, check_real
from anonml.dp._logistic import check_data_norm, check_features, clip_rows
from anonml.dp._noise import check_epsilon

__all__ = ["DPLogisticRegression", "DPRandomForestClassifier"]



# ---------------------------------------------------------------------------------------------
# the library, imported on first use
# ---------------------------------------------------------------------------------------------
def import_diffprivlib() -> Any:
    """Import diffprivlib (restoring the two scikit-learn constants it needs, see above)."""
    try:
        import sklearn.tree._tree as sk_tree

        if not hasattr(sk_tree, "DOUBLE"):
            sk_tree.DOUBLE = np.float64
        if not hasattr(sk_tree, "DTYPE"):
            sk_tree.DTYPE = np.float32
        import diffprivlib
        import diffprivlib.models.logistic_regression
    except ImportError as exc:
        if (exc.name or "").split(".")[0] == "diffprivlib":
            raise InputError(
                "the DP forest and logistic regression need diffprivlib; install it with "
                f"{install_hint('dp')}"
            ) from None
        import sklearn

        raise InputError(
            f"diffprivlib cannot be imported with scikit-learn {sklearn.__version__} ({exc}); "
            f"install a diffprivlib release that supports it, or scikit-learn < 1.9"
        ) from None
    return diffprivlib


def _seed(random_state: Any) -> np.random.RandomState:
    """A legacy RandomState (what diffprivlib takes) drawn from the local generator."""
    rng = np.random.default_rng(random_state)
    return np.random.RandomState(int(rng.integers(2**31 - 1)))


def _fit_guarded(dpl: Any, fit: Any) -> None:
    """Run ``fit()`` with diffprivlib's PrivacyLeakWarning raised as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpl.utils.PrivacyLeakWarning)
        try:
            fit()
        except dpl.utils.PrivacyLeakWarning as leak:
            message = str(leak).splitlines()[0] if str(leak) else "privacy leak"
            raise PrivacyViolationError(
                f"diffprivlib reported a privacy leak during fit ({message}); no model was "
                f"returned: pass every public bound explicitly"
            ) from None


# ---------------------------------------------------------------------------------------------
# checks of the public knowledge
# ---------------------------------------------------------------------------------------------
def check_classes(classes: Any) -> np.ndarray:
    """The public, sorted list of class labels; fails closed when it is missing."""
    if classes is None:
        raise InputError(
            "classes is required: the public list of labels, e.g. classes=['<=50K', '>50K'] "
            "from the codebook; reading them from y would reveal whether a rare label occurs"
        )
    arr = np.asarray(classes)
    if arr.ndim != 1 or arr.size < 2:
        raise InputError(f"classes={classes!r} must be a list of at least two labels")
    uniq = np.unique(arr)
    if uniq.size != arr.size:
        raise InputError(f"classes={classes!r} has repeated labels; list each label once")
    return uniq


def check_labels(y: Any, n_rows: int, classes: np.ndarray) -> np.ndarray:
    """Class index of every label of ``y`` in the sorted public ``classes``."""
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise InputError(
            f"y must be 1-D with one label per row of X ({n_rows}), got shape {y.shape}"
        )
    try:
        known = np.isin(y, classes)
    except TypeError:
        known = np.zeros(y.shape[0], dtype=bool)
    if not known.all():
        raise InputError(
            f"y has a label outside classes={classes.tolist()!r}; add it to the public classes "
            f"or drop those rows"
        )
    return np.searchsorted(classes, y)


def check_bounds(bounds: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Public per-feature (lower, upper) bounds; fails closed when they are missing."""
    if bounds is None:
        raise InputError(
            "bounds is required: public (lower, upper) per feature, e.g. from the codebook "
            "(age 17-90, one-hot columns 0-1), never from the private data"
        )
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise InputError(
            f"bounds must be a pair (lower, upper) of scalars or per-feature arrays, got {bounds!r}"
        )
    try:
        lo, hi = (
            np.broadcast_to(np.asarray(b, dtype=np.float64), (n_features,)).copy() for b in bounds
        )
    except (TypeError, ValueError):
        raise InputError(
            f"bounds must be (lower, upper), each a number or {n_features} numbers (one per "
            f"feature of X)"
        ) from None
    bad = ~(np.isfinite(lo) & np.isfinite(hi))
    if bad.any():
        raise InputError(
            f"bounds of feature #{int(np.flatnonzero(bad)[0])} are not finite; give finite "
            "public bounds"
        )
    inverted = lo > hi
    if inverted.any():
        j = int(np.flatnonzero(inverted)[0])
        raise InputError(f"bounds of feature #{j} have lower {lo[j]} > upper {hi[j]}; swap them")
    return lo, hi


class _Base(ClassifierMixin, BaseEstimator):
    def _check_X(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "classes_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {X.shape[1]} features; the model was fitted on {self.n_features_in_}"
            )
        return X

    def predict(self, X: Any) -> np.ndarray:
        proba = self.predict_proba(X)  # checks it is fitted first
        return self.classes_[np.argmax(proba, axis=1)]


# ---------------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------------
class DPRandomForestClassifier(_Base):
    """ε-DP random forest (diffprivlib's, after Fletcher & Islam 2017) that fails closed.

    Every tree draws its split features and thresholds at random within the public
    ``bounds`` (no data is looked at), is fitted on its own disjoint random share of the rows,
    and labels each leaf by the permute-and-flip mechanism on the leaf's class counts with the
    whole budget ε; the shares are disjoint, so the forest is ε-DP (parallel composition,
    add/remove-one neighbouring datasets).

    Parameters
    ----------
    epsilon : float
        Privacy budget ε > 0.
    bounds : (lower, upper)
        **Required** public bounds: each a number or one number per feature. Features are
        clipped to them. One-hot columns have bounds (0, 1).
    classes : array-like
        **Required** public list of every class label (``y`` must not contain others).
    n_estimators : int, default 10
        Number of trees; each sees about n / n_estimators rows.
    max_depth : int, default 5
        Depth of each random tree (memory grows as 2**max_depth per tree).
    n_jobs : int, default 1
        Threads used to build the trees.
    random_state : int, Generator or None

    Attributes
    ----------
    classes_ : ndarray
        The sorted public classes.
    bounds_ : tuple of ndarray
        The validated public (lower, upper) bounds.
    estimator_ : diffprivlib.models.RandomForestClassifier
        The fitted diffprivlib forest, trained on class indices 0..K-1 (see ``fit``).
    epsilon_spent_ : float
        Budget recorded by the fit's own diffprivlib accountant (equals ``epsilon``).
    n_features_in_ : int
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        bounds: Any = None,
        classes: Any = None,
        n_estimators: int = 10,
        max_depth: int = 5,
        n_jobs: int = 1,
        random_state: Any = None,
    ):
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPRandomForestClassifier:
        """Fit the forest on numeric ``X`` (rows × features) and labels ``y``."""
        eps = check_epsilon(self.epsilon)
        classes = check_classes(self.classes)
        n_estimators = check_int("n_estimators", self.n_estimators, example="10")
        max_depth = check_int("max_depth", self.max_depth, example="5")
        n_jobs = check_n_jobs(self.n_jobs)
        X = check_features(X)
        lo, hi = check_bounds(self.bounds, X.shape[1])
        codes = check_labels(y, X.shape[0], classes)
        dpl = import_diffprivlib()
        accountant = dpl.BudgetAccountant()
        # diffprivlib 0.6.6 hands its trees the class *indices* of y but counts leaf labels by
        # comparing them with the class *values*: with labels other than 0..K-1 (strings, or
        # 1..K) every count is 0 and each leaf gets a uniformly random label. Classes 0..K-1
        # and y as indices make the comparison right; predict_proba columns stay in the order
        # of the sorted public classes.
        forest = dpl.models.RandomForestClassifier(
            n_estimators=n_estimators,
            epsilon=eps,
            bounds=(lo, hi),
            classes=np.arange(classes.size),
            n_jobs=n_jobs,
            accountant=accountant,
            random_state=_seed(self.random_state),
            max_depth=max_depth,
            shuffle=True,
        )
        _fit_guarded(dpl, lambda: forest.fit(X, codes))
        self.estimator_ = forest
        self.classes_ = classes
        self.bounds_ = (lo, hi)
        self.n_features_in_ = X.shape[1]
        self.epsilon_spent_ = float(accountant.total()[0])
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (mean of the trees' leaf votes), columns in ``classes_`` order."""
        X = self._check_X(X)
        return self.estimator_.predict_proba(X.astype(np.float32))


class DPLogisticRegression(_Base):
    """ε-DP logistic regression by objective perturbation (diffprivlib), failing closed.

    Rows are clipped to the public L2 norm ``data_norm``; the L2-regularized logistic loss
    plus a random linear term (diffprivlib's ``Vector`` mechanism, Chaudhuri et al. 2011,
    Alg. 2) is minimized by L-BFGS. Two classes: one problem with the whole ε; K > 2 classes:
    one-vs-rest, ε/K per class (basic composition), as diffprivlib does.

    Parameters
    ----------
    epsilon : float
        Privacy budget ε > 0 (pure ε-DP).
    data_norm : float
        **Required** public bound on a feature row's L2 norm, e.g. √d for d features scaled
        to [−1, 1] by public ranges, or √(#numeric + #categorical) for scaled numerics plus
        one-hot columns. Never read it from the data.
    classes : array-like
        **Required** public list of every class label.
    C : float, default 1.0
        Inverse regularization strength, as in scikit-learn (larger: less regularization,
        more noise).
    fit_intercept : bool, default True
    max_iter : int, default 100
    tol : float, default 1e-4
    random_state : int, Generator or None

    Attributes
    ----------
    classes_, coef_, intercept_, n_features_in_ : as in scikit-learn
    epsilon_spent_ : float
        Budget recorded by the fit's own diffprivlib accountant.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        data_norm: float | None = None,
        classes: Any = None,
        C: float = 1.0,
        fit_intercept: bool = True,
        max_iter: int = 100,
        tol: float = 1e-4,
        random_state: Any = None,
    ):
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.classes = classes
        self.C = C
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPLogisticRegression:
        """Fit on numeric ``X`` (rows × features) and labels ``y``."""
        eps = check_epsilon(self.epsilon)
        data_norm = check_data_norm(self.data_norm)
        classes = check_classes(self.classes)
        C = check_real("C", self.C, example="1.0")
        tol = check_real("tol", self.tol, example="1e-4")
        max_iter = check_int("max_iter", self.max_iter, example="100")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise InputError(f"fit_intercept={self.fit_intercept!r} must be True or False")
        X = check_features(X)
        codes = check_labels(y, X.shape[0], classes)
        dpl = import_diffprivlib()
        path = dpl.models.logistic_regression._logistic_regression_path
        accountant = dpl.BudgetAccountant()
        accountant.check(eps, 0)
        Xc = clip_rows(X, data_norm)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        rng = _seed(self.random_state)
        coefs = []

        def run() -> None:
            with warnings.catch_warnings():
                # diffprivlib 0.6.6 passes the L-BFGS-B `iprint` option SciPy 1.15+ deprecates
                warnings.filterwarnings(
                    "ignore", message=r".*iprint.*", category=DeprecationWarning
                )
                for k in problems:
                    coef, _, _ = path(
                        Xc,
                        codes,
                        epsilon=eps / len(problems),
                        data_norm=data_norm,
                        pos_class=k,
                        Cs=[C],
                        fit_intercept=bool(self.fit_intercept),
                        max_iter=max_iter,
                        tol=tol,
                        random_state=rng,
                        check_input=False,
                    )
                    coefs.append(coef[0])

        _fit_guarded(dpl, run)
        accountant.spend(eps, 0)
        W = np.asarray(coefs)
        if self.fit_intercept:
            self.coef_, self.intercept_ = W[:, :-1], W[:, -1]
        else:
            self.coef_, self.intercept_ = W, np.zeros(W.shape[0])
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        self.epsilon_spent_ = float(accountant.total()[0])
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores wᵀx + b: shape (n,) for two classes, (n, K) otherwise."""
        X = self._check_X(X)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """Logistic probabilities (one-vs-rest scores normalized to sum to 1 for K > 2)."""
        from scipy.special import expit

        p = expit(self.decision_function(X))
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p / p.sum(axis=1, keepdims=True)
