"""Input perturbation: a locally differentially private copy of a labelled dataset.

This is the classic local-DP baseline that Pham, Ghosh and Yegneswaran (2019) compare their
data-masking method against (their Algorithm 2): every record is perturbed on its own, before it
leaves its owner, so the released table can be used for anything (training any model, many
times) without further privacy cost.

* Features are clipped to a **public** box ``[lo, hi]`` and receive i.i.d. Laplace noise of scale
  ``Δ / ε_x`` per coordinate, where ``Δ = Σ_j (hi_j - lo_j)`` is the L1 sensitivity of one record
  (the largest L1 distance between two records of the box).
* Labels go through K-ary randomized response over the **public** set of classes with budget
  ``ε_y`` (Warner, 1965; Kairouz, Oh and Viswanath, 2014).

References
----------
.. [1] Pham, A.-T., Ghosh, S., Yegneswaran, V. (2019). "Data masking with privacy guarantees".
   arXiv:1901.02185.
.. [2] Duchi, J. C., Jordan, M. I., Wainwright, M. J. (2013). "Local privacy and statistical
   minimax rates". FOCS 2013, 429-438.
.. [3] Dwork, C., McSherry, F., Nissim, K., Smith, A. (2006). "Calibrating noise to sensitivity
   in private data analysis". TCC 2006, 265-284.
.. [4] Warner, S. L. (1965). "Randomized response: a survey technique for eliminating evasive
   answer bias". Journal of the American Statistical Association 60(309), 63-69.
.. [5] Kairouz, P., Oh, S., Viswanath, P. (2014). "Extremal mechanisms for local differential
   privacy". NeurIPS 2014.
.. [6] Mironov, I. (2012). "On significance of the least significant bits for differential
   privacy". CCS 2012, 650-661.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from anonml._errors import AnonmlWarning, InputError
from anonml._utils import check_real
from anonml.dp._noise import check_epsilon
from anonml.encoding import as_frame

__all__ = ["InputPerturbation", "randomized_response"]


# -- checks ------------------------------------------------------------------------------------


def _check_classes(classes: Any) -> pd.Index:
    if classes is None:
        raise InputError(
            "classes=None but the labels are protected; pass the public list of all possible "
            "labels, e.g. classes=[0, 1] (it must not be read from y), or protect_labels=False"
        )
    if isinstance(classes, (str, bytes)):
        raise InputError(
            f"classes={classes!r} is a string; pass a list of the possible labels, e.g. "
            "classes=['no', 'yes']"
        )
    try:
        index = pd.Index(list(classes))
    except TypeError:
        raise InputError(
            f"classes={classes!r} is not a list; pass the public list of all possible labels, "
            "e.g. classes=[0, 1]"
        ) from None
    if index.has_duplicates:
        dup = index[index.duplicated()].unique().tolist()
        raise InputError(f"classes has duplicate values {dup!r}; list each class once")
    if len(index) < 2:
        raise InputError(
            f"classes={list(index)!r} has {len(index)} value(s); randomized response needs "
            "at least 2 public classes, e.g. classes=[0, 1]"
        )
    return index


def _label_codes(y: np.ndarray, classes: pd.Index) -> np.ndarray:
    """Index of each label in ``classes``; a label outside the public classes is an error."""
    codes = classes.get_indexer(pd.Index(y))
    if (codes < 0).any():
        unknown = pd.unique(y[codes < 0])[:5].tolist()
        raise InputError(
            f"y has label(s) {unknown!r} that are not in classes={classes.tolist()!r}; add them "
            "to the public classes or drop those rows"
        )
    return codes.astype(np.int64, copy=False)


def _check_bounds(bounds: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    if bounds is None:
        raise InputError(
            "bounds is required: pass the public domain of the features as bounds=(lo, hi), "
            "scalars or one value per column (it must not be read from the data)"
        )
    fix = "pass bounds=(lo, hi) with scalars or arrays of one value per column"
    if isinstance(bounds, (str, bytes, dict)):
        raise InputError(f"bounds={bounds!r} is not a pair (lo, hi); {fix}")
    try:
        pair = list(bounds)
    except TypeError:
        raise InputError(f"bounds={bounds!r} is not a pair (lo, hi); {fix}") from None
    if len(pair) != 2:
        raise InputError(f"bounds has {len(pair)} items, not 2 (lo, hi); {fix}")
    ends = []
    for name, value in zip(("lo", "hi"), pair):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"bounds {name}={value!r} is not numeric; {fix}") from None
        if arr.ndim == 0:
            arr = np.full(n_features, float(arr))
        elif arr.ndim != 1 or arr.shape[0] != n_features:
            raise InputError(
                f"bounds {name} has shape {arr.shape} but X has {n_features} column(s); {fix}"
            )
        if not np.isfinite(arr).all():
            raise InputError(
                f"bounds {name} contains NaN or infinite values ({arr.tolist()!r}); give finite "
                "public limits for every column"
            )
        ends.append(arr)
    lo, hi = ends
    bad = np.flatnonzero(lo >= hi)
    if bad.size:
        j = int(bad[0])
        raise InputError(
            f"bounds lo >= hi for column {j} ({lo[j]!r} >= {hi[j]!r}); give lo < hi for every "
            "column"
        )
    return lo, hi


def _features(X: Any) -> tuple[np.ndarray, pd.DataFrame]:
    frame, _ = as_frame(X)
    if frame.shape[1] == 0:
        raise InputError("X has no columns; pass at least one numeric feature")
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col].dtype):
            raise InputError(
                f"column {col!r} of X is not numeric (dtype {frame[col].dtype}); encode it as "
                "numbers first (e.g. one-hot with bounds (0, 1)) or drop it"
            )
    values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.isfinite(values).all():
        j = int(np.flatnonzero(~np.isfinite(values).all(axis=0))[0])
        raise InputError(
            f"column {frame.columns[j]!r} of X has missing or infinite values; impute or drop "
            "them first"
        )
    return values, frame


def _labels(y: Any, n_rows: int) -> np.ndarray:
    if y is None:
        raise InputError("y is missing; pass one label per row of X")
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        y = y.iloc[:, 0]
    arr = y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y)
    if arr.ndim != 1:
        raise InputError(
            f"y must be 1-D with one label per row, got shape {arr.shape}; pass e.g. y.ravel()"
        )
    if arr.shape[0] != n_rows:
        raise InputError(
            f"y has {arr.shape[0]} values but X has {n_rows} rows; pass one label per row"
        )
    return arr


# -- the mechanisms ------------------------------------------------------------------------------


def randomized_response(y: Any, classes: Any, epsilon: float, rng: Any = None) -> np.ndarray:
    """K-ary randomized response: an ε-locally-DP release of each label.

    Each label is kept with probability ``e^ε / (e^ε + K - 1)`` and otherwise replaced by one of
    the other ``K - 1`` public classes chosen uniformly at random, independently per row. For
    any two labels ``a, b`` and any output ``o`` the probabilities ``P(o | a) / P(o | b)`` are at
    most ``e^ε``, so every released label is ε-DP with respect to the true one [1]_ [2]_.

    Parameters
    ----------
    y : array-like, shape (n_rows,)
        True labels; each must be one of ``classes``.
    classes : sequence
        The public set of all possible labels (K >= 2 distinct values). It must be known in
        advance, not read from ``y``: the set of labels present in the data is itself private.
    epsilon : float
        Privacy budget ε > 0 of each label.
    rng : numpy.random.Generator, int or None
        Source of randomness, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    ndarray, shape (n_rows,)
        The released labels, values from ``classes``.

    Raises
    ------
    InputError
        If ``epsilon`` is not a finite number > 0, ``classes`` is missing or has fewer than two
        distinct values, or ``y`` holds a label outside ``classes``.

    References
    ----------
    .. [1] Warner, S. L. (1965). "Randomized response: a survey technique for eliminating
       evasive answer bias". JASA 60(309), 63-69.
    .. [2] Kairouz, P., Oh, S., Viswanath, P. (2014). "Extremal mechanisms for local
       differential privacy". NeurIPS 2014.

    Examples
    --------
    >>> import numpy as np
    >>> out = randomized_response([0, 1, 1, 0], classes=[0, 1], epsilon=50.0, rng=0)
    >>> out.tolist()
    [0, 1, 1, 0]
    """
    eps = check_epsilon(epsilon)
    index = _check_classes(classes)
    arr = y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y)
    if arr.ndim != 1:
        raise InputError(
            f"y must be 1-D with one label per row, got shape {arr.shape}; pass e.g. y.ravel()"
        )
    codes = _label_codes(arr, index)
    gen = np.random.default_rng(rng)
    k = len(index)
    # P(keep) = e^ε / (e^ε + K - 1), written so that a large ε does not overflow
    p_keep = 1.0 / (1.0 + (k - 1) * math.exp(-eps))
    keep = gen.random(codes.shape[0]) < p_keep
    # a uniform draw among the K - 1 other classes: skip over the true one
    other = gen.integers(0, k - 1, size=codes.shape[0])
    other += other >= codes
    out_codes = np.where(keep, codes, other)
    return index.to_numpy()[out_codes]


class InputPerturbation(BaseEstimator):
    """Input perturbation: Laplace noise on clipped features, randomized response on labels.

    The local-DP baseline of Pham, Ghosh and Yegneswaran (2019, Algorithm 2) [1]_ in the sense of
    Duchi, Jordan and Wainwright (2013) [2]_. :meth:`fit_resample` returns a perturbed copy of
    ``(X, y)``, one released record per input record, in the same order:

    1. every feature is clipped to the public domain ``[lo_j, hi_j]``;
    2. every coordinate receives independent Laplace noise of scale ``Δ / ε_x``, where
       ``Δ = Σ_j (hi_j - lo_j)`` is the L1 sensitivity of one record (the largest L1 distance
       between two clipped records, i.e. one record's features replaced entirely) [3]_;
    3. every label goes through K-ary randomized response over the public ``classes`` with
       budget ``ε_y`` (see :func:`randomized_response`).

    **Guarantee.** Each released feature vector is ``ε_x``-DP with respect to that record's
    features, each released label ``ε_y``-DP with respect to its label, so by basic composition
    each released record is ``ε = ε_x + ε_y``-DP with respect to the record (local DP). Records
    are perturbed independently, so the whole release is ε-DP under *replace-one* neighbouring
    datasets (same number of rows, one record changed). The number of rows is released exactly,
    so it is not DP under add/remove-one neighbours. The budget is split as
    ``ε_y = label_share · ε`` and ``ε_x = (1 - label_share) · ε``.

    With ``protect_labels=False`` (features-only mode) all of ε goes to the features and the
    labels are returned **unchanged: they are NOT protected**; the attribute
    ``labels_protected_`` is then ``False``, ``epsilon_labels_`` is ``inf`` and an
    :class:`~anonml._errors.AnonmlWarning` is issued.

    Noisy values are not clipped again, so they may fall outside ``[lo, hi]`` (their means stay
    unbiased for the clipped values). With ``clip_output=True`` they are clipped to ``[lo, hi]``
    after the noise; this is post-processing and keeps the guarantee.

    The noise is drawn with floating-point arithmetic (:meth:`numpy.random.Generator.laplace`);
    the guarantee above holds for the idealized real-valued mechanism. Naive floating-point
    Laplace sampling leaks through its least significant bits (Mironov, 2012) [4]_, so use a
    hardened sampler where that attack matters.

    Parameters
    ----------
    epsilon : float
        Total privacy budget ε > 0 of each record (features and label together).
    bounds : tuple (lo, hi)
        **Required.** The public domain of the features: ``lo`` and ``hi`` are scalars (same for
        every column) or arrays with one value per column, finite, with ``lo < hi``. They must be
        known in advance and are never read from the data; ``None`` is an error.
    classes : sequence or None, default=None
        The public set of all possible labels; required when ``protect_labels=True`` (the set of
        labels present in ``y`` is itself private, so it is never read from ``y``).
    label_share : float, default=0.1
        Fraction of ε spent on the label, in (0, 1). Ignored when ``protect_labels=False``.
    protect_labels : bool, default=True
        Whether to apply randomized response to the labels. ``False`` returns the labels
        unchanged: they are then not protected at all.
    clip_output : bool, default=False
        Clip the noisy features to ``[lo, hi]`` (post-processing; keeps the guarantee).
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the local generator (:func:`numpy.random.default_rng`); no global seeding.

    Attributes
    ----------
    epsilon_features_ : float
        Budget ε_x spent on each record's features.
    epsilon_labels_ : float
        Budget ε_y spent on each label; ``inf`` when the labels are not protected.
    labels_protected_ : bool
        Whether the labels went through randomized response.
    lower_, upper_ : ndarray of shape (n_features,)
        The public bounds, one value per column.
    sensitivity_ : float
        Δ = Σ_j (hi_j − lo_j), the L1 sensitivity of one record's features.
    noise_scale_ : float
        Δ / ε_x, the scale of the Laplace noise on each coordinate.
    classes_ : ndarray or None
        The public classes used by randomized response (``None`` if labels are not protected).
    n_features_in_ : int
        Number of feature columns.
    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame with string column names.

    See Also
    --------
    randomized_response : the label mechanism on its own.

    References
    ----------
    .. [1] Pham, A.-T., Ghosh, S., Yegneswaran, V. (2019). "Data masking with privacy
       guarantees". arXiv:1901.02185.
    .. [2] Duchi, J. C., Jordan, M. I., Wainwright, M. J. (2013). "Local privacy and statistical
       minimax rates". FOCS 2013, 429-438.
    .. [3] Dwork, C., McSherry, F., Nissim, K., Smith, A. (2006). "Calibrating noise to
       sensitivity in private data analysis". TCC 2006, 265-284.
    .. [4] Mironov, I. (2012). "On significance of the least significant bits for differential
       privacy". CCS 2012, 650-661.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.2, 5.0], [0.9, 1.0], [0.5, 7.0]])
    >>> y = np.array([0, 1, 1])
    >>> ip = InputPerturbation(2.0, bounds=([0, 0], [1, 10]), classes=[0, 1], random_state=0)
    >>> X_out, y_out = ip.fit_resample(X, y)
    >>> X_out.shape, y_out.shape
    ((3, 2), (3,))
    >>> float(ip.noise_scale_)  # (1 + 10) / (0.9 * 2.0)
    6.111111111111111
    """

    def __init__(
        self,
        epsilon: float,
        *,
        bounds: Any = None,
        classes: Any = None,
        label_share: float = 0.1,
        protect_labels: bool = True,
        clip_output: bool = False,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.label_share = label_share
        self.protect_labels = protect_labels
        self.clip_output = clip_output
        self.random_state = random_state

    def fit_resample(self, X: Any, y: Any) -> tuple[Any, Any]:
        """Release a perturbed copy of ``(X, y)``.

        Parameters
        ----------
        X : DataFrame or 2-D array, shape (n_rows, n_features)
            Numeric features (bool counts as 0/1); no missing values.
        y : array-like, shape (n_rows,)
            Labels, each one of the public ``classes`` when ``protect_labels=True``.

        Returns
        -------
        X_out : ndarray or DataFrame, shape (n_rows, n_features)
            Clipped and noised features, float64. A DataFrame (same columns and index) if ``X``
            was one, else an ndarray.
        y_out : ndarray or Series, shape (n_rows,)
            Labels after randomized response, or ``y`` unchanged if ``protect_labels=False``.
            A Series (same index and name) if ``y`` was one, else an ndarray.

        Raises
        ------
        InputError
            If a parameter or the data is not acceptable (the message names it and the fix).

        Warns
        -----
        AnonmlWarning
            If ``protect_labels=False``: the labels are released unprotected.
        """
        eps = check_epsilon(self.epsilon)
        if not isinstance(self.protect_labels, (bool, np.bool_)):
            raise InputError(
                f"protect_labels={self.protect_labels!r} is not a bool; pass True or False"
            )
        if not isinstance(self.clip_output, (bool, np.bool_)):
            raise InputError(f"clip_output={self.clip_output!r} is not a bool; pass True or False")
        share = check_real("label_share", self.label_share, high=1, example=0.1,
                           why="the fraction of epsilon spent on labels")
        protect = bool(self.protect_labels)
        index = _check_classes(self.classes) if protect else None

        values, frame = _features(X)
        n_rows, n_features = values.shape
        lo, hi = _check_bounds(self.bounds, n_features)
        y_arr = _labels(y, n_rows)
        if protect:
            _label_codes(y_arr, index)  # fail before drawing any noise

        if protect:
            eps_y = float(share) * eps
            eps_x = eps - eps_y
        else:
            eps_y, eps_x = math.inf, eps
            warnings.warn(
                "protect_labels=False: the labels are released unchanged and are NOT protected; "
                "only the features are differentially private",
                AnonmlWarning,
                stacklevel=2,
            )

        sensitivity = float(np.sum(hi - lo))
        scale = sensitivity / eps_x
        rng = np.random.default_rng(self.random_state)
        released = np.clip(values, lo, hi)
        released += rng.laplace(0.0, scale, size=released.shape)
        if self.clip_output:
            np.clip(released, lo, hi, out=released)
        y_out = randomized_response(y_arr, index, eps_y, rng) if protect else y_arr.copy()

        self.epsilon_features_ = eps_x
        self.epsilon_labels_ = eps_y
        self.labels_protected_ = protect
        self.lower_ = lo
        self.upper_ = hi
        self.sensitivity_ = sensitivity
        self.noise_scale_ = scale
        self.classes_ = None if index is None else index.to_numpy()
        self.n_features_in_ = n_features
        if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in frame.columns):
            self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

        X_out: Any = released
        if isinstance(X, pd.DataFrame):
            X_out = pd.DataFrame(released, columns=X.columns, index=X.index)
        if isinstance(y, pd.Series):
            y_out = pd.Series(y_out, index=y.index, name=y.name)
        return X_out, y_out
