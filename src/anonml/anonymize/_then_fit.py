"""Anonymize-then-fit as one scikit-learn estimator.

The anonymizing training procedure, so that an attack that trains shadow or reference models
(LiRA, Carlini et al. 2022; RMIA, Zarifzadeh et al. 2024) can repeat it on other data: it knows
the algorithm, only the records differ. For the accuracy-guided method the guide is the
predictions of a model fitted on the raw rows, as in Goldsteen et al. (2022), "Anonymizing
Machine Learning Models", DPM 2021.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

__all__ = ["AnonymizeThenFit"]


class AnonymizeThenFit(ClassifierMixin, BaseEstimator):
    """Anonymize the training rows, then fit a classifier on them.

    ``fit(X, y)``: the accuracy-guided method is guided by the predictions of a clone of
    ``estimator`` fitted on the raw ``(X, y)`` (``initial_estimator_``); the other methods group
    on the quasi-identifiers and use ``y`` for the representatives. A clone of ``estimator`` is
    then fitted on the anonymized rows with the true labels (``estimator_``).
    ``predict_proba(X)`` asks that model about raw rows, as the attacks do (map new rows first
    with ``anonymizer_.transform`` to predict as a released pipeline would).

    Parameters
    ----------
    anonymizer : anonml anonymizer, unfitted
        E.g. ``AccuracyGuidedAnonymizer(k=10, quasi_identifiers=[...])``. Its clone is fitted
        with ``copy=True`` whatever it says: ``fit`` never rewrites ``X`` (the attacks refit
        this procedure on the same rows).
    estimator : classifier, unfitted
    random_state : int or None
        Seeds the anonymizer and, with ``seed_estimator``, the estimator (every
        ``random_state`` parameter of theirs, nested ones included).
    seed_estimator : bool, default True
        Also seed the estimator; False keeps the estimator's own ``random_state``.

    Attributes
    ----------
    initial_estimator_ : classifier or None
        The model fitted on the raw rows whose predictions guided the accuracy-guided method
        (None for the other methods).
    anonymizer_ : the fitted anonymizer
    estimator_ : the classifier fitted on the anonymized rows
    classes_ : ndarray
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from anonml import AccuracyGuidedAnonymizer
    >>> from anonml.anonymize import AnonymizeThenFit
    >>> from anonml.datasets import load_adult
    >>> d = load_adult()
    >>> X = d.X[["age", "education-num", "hours-per-week"]].iloc[:2000]
    >>> y = d.y.iloc[:2000]
    >>> qi = ["age", "hours-per-week"]
    >>> m = AnonymizeThenFit(AccuracyGuidedAnonymizer(k=50, quasi_identifiers=qi),
    ...                      DecisionTreeClassifier(max_depth=5), random_state=0).fit(X, y)
    >>> m.anonymizer_.min_class_size_ >= 50
    True
    """

    def __init__(self, anonymizer: Any = None, estimator: Any = None,
                 random_state: Any = None, seed_estimator: bool = True) -> None:
        self.anonymizer = anonymizer
        self.estimator = estimator
        self.random_state = random_state
        self.seed_estimator = seed_estimator

    def _seeded(self, est: Any, seed: bool = True) -> Any:
        est = clone(est)
        if self.random_state is not None and seed:
            names = [n for n in est.get_params(deep=True)
                     if n == "random_state" or n.endswith("__random_state")]
            est.set_params(**{n: int(self.random_state) for n in names})
        return est

    def fit(self, X: Any, y: Any) -> AnonymizeThenFit:
        from anonml._errors import InputError

        if self.anonymizer is None or self.estimator is None:
            raise InputError("AnonymizeThenFit needs anonymizer= (an unfitted anonml "
                             "anonymizer) and estimator= (an unfitted classifier)")
        return self._fit(self.anonymizer, self.seed_estimator, X, y)

    def _fit(self, anonymizer: Any, seed_estimator: bool, X: Any, y: Any) -> AnonymizeThenFit:
        """The procedure, for this class and for subclasses that build the anonymizer from
        parameters of their own."""
        anonymizer = self._seeded(anonymizer)
        if "copy" in anonymizer.get_params(deep=False):  # fit never rewrites X: the attacks
            anonymizer.set_params(copy=True)  # refit this procedure on the same rows
        guide, first = y, None
        if type(anonymizer).__name__ == "AccuracyGuidedAnonymizer":
            first = self._seeded(self.estimator, seed_estimator).fit(X, y)
            guide = first.predict(X)
        sensitive = getattr(anonymizer, "sensitive", None)  # the label may be protected
        columns = set(getattr(X, "columns", ()))
        label = y if sensitive is not None and sensitive not in columns else None
        X_anon = anonymizer.fit_transform(X, guide, **({} if label is None else
                                                       {"sensitive_values": label}))
        self.initial_estimator_ = first
        self.anonymizer_ = anonymizer
        self.estimator_ = self._seeded(self.estimator, seed_estimator).fit(X_anon, y)
        self.classes_ = self.estimator_.classes_
        self.n_features_in_ = anonymizer.n_features_in_
        if hasattr(anonymizer, "feature_names_in_"):
            self.feature_names_in_ = anonymizer.feature_names_in_
        return self

    @property
    def model_(self) -> Any:
        """The fitted classifier (``estimator_``; the frontier's older name)."""
        check_is_fitted(self, "estimator_")
        return self.estimator_

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)
