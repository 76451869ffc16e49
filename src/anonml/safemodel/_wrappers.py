"""Safe wrappers: drop-in estimators that check the risk appetite and record their state at fit.

Each wrapper *subclasses* the estimator it wraps and adds no constructor parameter, so it is
that estimator for scikit-learn (``clone``, grid search, pipelines, pickling) and for its
users. What it adds:

- ``fit`` checks the hyperparameters against the rules first and **warns** (one
  :class:`~anonml.AnonmlWarning`) about every violation; it never changes a parameter
  (SACRO-ML overwrites them silently, a known complaint). After fitting it stores a
  fingerprint of the parameters and the learned state (``anonml_fingerprint_``).
- ``preliminary_check(rules)`` lists the violations with their fixes;
  ``apply_constraints(rules)`` changes the parameters on request, before fit.
- ``posthoc_check(X_train, y_train, X_test, y_test, rules)`` detects any change after fit
  and runs the structural checks (leaf k-anonymity, class disclosure, residual degrees of
  freedom, generalisation gap).

The rules come from the argument, else the file named by ``ANONML_RULES``, else the shipped
defaults (:func:`anonml.safemodel.load_rules`).

References
----------
SACRO-ML ``safemodel`` (Smith et al.; Ritchie et al. 2023, "Recommendations for disclosure
control of trained machine learning models from trusted research environments").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from anonml._errors import AnonmlWarning, InputError
from anonml._utils import n_rows as _n_rows
from anonml.modelfile._facts import ante_hoc_facts, posthoc_facts
from anonml.modelfile._family import rule_params
from anonml.safemodel._rules import RuleOutcome, evaluate_rules, resolve_rules

ANTE_HOC = ("hyperparameter", "privacy_budget")
POST_HOC = ("tamper", "structure", "performance")
_MEASURE_PARAM = {"dp.epsilon": "epsilon", "dp.delta": "delta",
                  "dp.noise_multiplier": "noise_multiplier"}


@dataclass
class Finding:
    """A failed rule: which, what was measured, and the fix."""

    rule_id: str
    effect: str
    message: str
    fix: str | None

    def __str__(self) -> str:
        fix = f"; fix: {self.fix}" if self.fix else ""
        return f"{self.rule_id} ({self.effect}): {self.message}{fix}"


def _findings(outcomes: list) -> list:
    return [
        Finding(o.rule.id, o.rule.effect,
                f"{o.measured or 'not measured'}; the rule needs {o.threshold}", o.rule.fix)
        for o in outcomes if o.outcome == "fail"
    ]


def preliminary_outcomes(model: Any, rules: Any = None, n_samples: int | None = None) -> list:
    """Evaluate the ante-hoc rules (hyperparameters, privacy budget) on any estimator."""
    ruleset = resolve_rules(rules)
    return evaluate_rules(ruleset, ante_hoc_facts(model, n_samples), categories=ANTE_HOC)


@dataclass
class PosthocResult:
    """Outcome of :meth:`SafeModelMixin.posthoc_check`.

    Attributes
    ----------
    tamper : str
        ``"unchanged"``, ``"changed"`` or ``"no_fingerprint"``.
    changed : list of str
        Names of the parts changed since fit (``"params"``, ``"tree_"``, ...), never values.
    structure : dict
        :func:`anonml.safemodel.structural_measures` (empty without training data).
    outcomes : list of RuleOutcome
        The tamper, structure and performance rules.
    """

    tamper: str
    changed: list
    structure: dict
    outcomes: list = field(default_factory=list)

    @property
    def findings(self) -> list:
        return _findings(self.outcomes)

    @property
    def ok(self) -> bool:
        """No blocking rule failed."""
        return not any(o.outcome == "fail" and o.rule.effect == "block" for o in self.outcomes)


def _fixes(check: Any, facts: dict, params: dict, out: dict) -> None:
    """The parameter settings that make a failed check pass, where one is obvious."""
    from anonml.safemodel._rules import _evaluate

    if check.op in ("and", "or"):
        children = check.children if check.op == "and" else check.children[:1]
        for child in children:
            _fixes(child, facts, params, out)
        return
    name = check.subject if check.subject_kind == "param" else _MEASURE_PARAM.get(check.subject)
    if name is None or name not in params:
        return
    if _evaluate(check, facts, [], []) is not False:
        return
    if check.op in ("min", "max", "equals"):
        out[name] = check.value
    elif check.op == "one_of":
        out[name] = check.value[0]


class SafeModelMixin:
    """Adds the risk-appetite checks to a scikit-learn classifier (see the module docstring).

    Put it first among the bases: ``class SafeX(SafeModelMixin, X)``. It defines no
    ``__init__`` and no ``get_params``, so the wrapped estimator's parameters are the
    wrapper's.
    """

    _anonml_safe = True

    def _fit_estimator(self, X: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        return super().fit(X, y, *args, **kwargs)  # type: ignore[misc]

    def fit(self, X: Any, y: Any = None, *args: Any, **kwargs: Any) -> Any:
        """Warn about rule violations, fit the wrapped estimator, take the fingerprint."""
        from anonml.modelfile._fingerprint import fingerprint

        n = _n_rows(X)
        self.preliminary_check(n_samples=n, warn=True)
        self._fit_estimator(X, y, *args, **kwargs)
        self.anonml_n_samples_ = n
        self.anonml_fingerprint_ = fingerprint(self)
        return self

    def preliminary_check(self, rules: Any = None, *, n_samples: int | None = None,
                          warn: bool = True) -> list:
        """The hyperparameter and privacy-budget rules this model breaks.

        Parameters
        ----------
        rules : path, dict or RuleSet, optional
            Default: ``ANONML_RULES``, else the shipped defaults.
        n_samples : int, optional
            Training rows, to resolve fractional ``min_samples_leaf``/``min_samples_split``.
        warn : bool
            Issue one :class:`~anonml.AnonmlWarning` listing the violations.

        Returns
        -------
        list of Finding
            Empty when every rule holds. Nothing is changed.
        """
        findings = _findings(preliminary_outcomes(self, rules, n_samples))
        if findings and warn:
            warnings.warn(
                f"{type(self).__name__}: {len(findings)} risk-appetite rule(s) broken: "
                + " | ".join(str(f) for f in findings), AnonmlWarning, stacklevel=3)
        return findings

    def apply_constraints(self, rules: Any = None) -> dict:
        """Change the hyperparameters that break a rule, on explicit request, before fit.

        Returns
        -------
        dict
            ``{parameter: (old, new)}`` for every change made (also set on the model).

        Raises
        ------
        InputError
            When the model is already fitted: the fitted state would no longer match its
            parameters (and the tamper check would flag it).
        """
        if hasattr(self, "anonml_fingerprint_"):
            raise InputError(f"{type(self).__name__}.apply_constraints changes hyperparameters; "
                             "fix: call it before fit, then fit")
        facts = ante_hoc_facts(self)
        params = rule_params(self)
        wanted: dict = {}
        for outcome in evaluate_rules(resolve_rules(rules), facts, categories=ANTE_HOC):
            if outcome.outcome == "fail":
                _fixes(outcome.rule.check, facts, params, wanted)
        changes = {k: (params[k], v) for k, v in wanted.items() if params[k] != v}
        if changes:
            self.set_params(**{k: new for k, (_, new) in changes.items()})  # type: ignore
        return changes

    def posthoc_check(self, X_train: Any = None, y_train: Any = None, X_test: Any = None,
                      y_test: Any = None, rules: Any = None) -> PosthocResult:
        """Detect changes since fit and run the structural checks on the training data.

        Parameters
        ----------
        X_train, y_train : training data, optional
            Needed for the structural checks (leaf sizes, class disclosure, degrees of freedom).
        X_test, y_test : held-out data, optional
            Needed for the generalisation gap.
        rules : optional
            As in :meth:`preliminary_check`.
        """
        facts = posthoc_facts(self, X_train, y_train, X_test, y_test)
        outcomes = evaluate_rules(resolve_rules(rules), facts, categories=POST_HOC)
        status, changed = facts["tamper"]
        return PosthocResult(status, changed, facts["structure"], outcomes)


def _inner_has(name: str):
    def check(self: Any) -> bool:
        inner = getattr(self, "estimator_", self.estimator)
        return hasattr(inner, name)
    return check


class SafeModel(SafeModelMixin, ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Generic safe wrapper for any classifier (no model-specific hyperparameter rules apply
    unless the held estimator is of a known family).

    Parameters
    ----------
    estimator : classifier
        Cloned and fitted by :meth:`fit` as ``estimator_``; ``predict``, ``predict_proba``,
        ``decision_function`` and ``score`` are delegated.
    """

    _anonml_generic = True

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def _fit_estimator(self, X: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        self.estimator_ = clone(self.estimator).fit(X, y, *args, **kwargs)
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        return self

    def __sklearn_tags__(self) -> Any:
        # what the held estimator accepts (missing values, sparse input) is what this accepts
        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        if self.estimator is not None:
            tags.input_tags = get_tags(self.estimator).input_tags
        return tags

    def predict(self, X: Any) -> Any:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, X: Any) -> Any:
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X)

    @available_if(_inner_has("decision_function"))
    def decision_function(self, X: Any) -> Any:
        check_is_fitted(self, "estimator_")
        return self.estimator_.decision_function(X)


class SafeDecisionTreeClassifier(SafeModelMixin, DecisionTreeClassifier):
    """:class:`sklearn.tree.DecisionTreeClassifier` with the risk-appetite checks."""


class SafeRandomForestClassifier(SafeModelMixin, RandomForestClassifier):
    """:class:`sklearn.ensemble.RandomForestClassifier` with the risk-appetite checks."""


class SafeExtraTreesClassifier(SafeModelMixin, ExtraTreesClassifier):
    """:class:`sklearn.ensemble.ExtraTreesClassifier` with the risk-appetite checks."""


class SafeGradientBoostingClassifier(SafeModelMixin, GradientBoostingClassifier):
    """:class:`sklearn.ensemble.GradientBoostingClassifier` with the risk-appetite checks."""


class SafeHistGradientBoostingClassifier(SafeModelMixin, HistGradientBoostingClassifier):
    """:class:`sklearn.ensemble.HistGradientBoostingClassifier` with the risk-appetite checks."""


class SafeMLPClassifier(SafeModelMixin, MLPClassifier):
    """:class:`sklearn.neural_network.MLPClassifier` with the risk-appetite checks."""


class SafeLogisticRegression(SafeModelMixin, LogisticRegression):
    """:class:`sklearn.linear_model.LogisticRegression` with the risk-appetite checks."""


__all__ = [
    "Finding",
    "PosthocResult",
    "RuleOutcome",
    "SafeDecisionTreeClassifier",
    "SafeExtraTreesClassifier",
    "SafeGradientBoostingClassifier",
    "SafeHistGradientBoostingClassifier",
    "SafeLogisticRegression",
    "SafeMLPClassifier",
    "SafeModel",
    "SafeModelMixin",
    "SafeRandomForestClassifier",
]
