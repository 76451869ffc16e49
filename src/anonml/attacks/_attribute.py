"""Attribute inference by an attack model: does a model's output reveal a feature of its records?

Two attacks, both run on a :class:`~anonml.attacks.Target`:

* :class:`AttributeInferenceBlackBox` (ART's black-box attribute attack, as used by Goldsteen
  et al., 2022, Sec. 4.4): an attack model learns the sensitive feature of a record from its
  other features **plus the target's output** on that record. It is trained on one part of the
  target's training set (``attack_train_ratio``) and evaluated on the rest, and compared with
  the majority-value guess. :class:`AttributeInferenceBaseline` is the same attack model
  *without* the target's output (ART's baseline, the "imputation" adversary of Jayaraman &
  Evans, 2022): the black-box attack reveals something the model leaks only to the extent that
  it beats this baseline.

The worst-case attack of SACRO-ML (every completion of every record, and the attribute risk
ratio) is in :mod:`anonml.attacks._attribute_worst_case`, which uses this module's input checks.

References
----------
----------
Goldsteen, Ezov, Shmelkin, Moffie & Farkash (2022). Anonymizing machine learning models.
DPM/CBT 2021, LNCS 13140, Sec. 4.4.
Nicolae et al. (2018). Adversarial Robustness Toolbox v1.0 (``AttributeInferenceBlackBox``,
``AttributeInferenceBaseline``). arXiv:1807.01069.
Jayaraman & Evans (2022). Are attribute inference attacks just imputation? ACM CCS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._utils import check_real
from anonml.attacks._core import Target, as_generator, json_safe
from anonml.encoding import as_frame, detect_categorical

__all__ = [
    "AttributeAttackResult",
    "AttributeInferenceBaseline",
    "AttributeInferenceBlackBox",
]


#: the black-box attack is a classification of the attribute; more values than this is
#: almost surely a continuous column, which should be binned first
_MAX_ATTACK_VALUES = 100


def _values_str(values: Sequence[Any], limit: int = 10) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    more = len(values) - limit
    return shown + (f" ... and {more} more" if more > 0 else "")


def _check_target(target: Any, who: str) -> Target:
    if not isinstance(target, Target):
        raise InputError(
            f"{who}.run expects an anonml.attacks.Target, got {type(target).__name__}; wrap the "
            "model and data: Target(model, X_train, y_train, X_test, y_test)"
        )
    return target


def _frame_of(target: Target, which: str, who: str) -> tuple[pd.DataFrame, bool]:
    X = target.X(which)
    if X is None:
        raise InputError(
            f"{who} needs the records X_{which}: pass X_{which}= to Target (the attack reads "
            "the features of every record)"
        )
    return as_frame(X, what=f"X_{which}")


def _check_fraction(name: str, value: Any, *, low_open: bool = True) -> float:
    return check_real(name, value, high=1, closed="neither" if low_open else "both",
                      example=0.5)


def _factorize(col: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Integer codes of ``col`` and the distinct values as a Series of the column's dtype.

    Missing values count as one value of their own. The values are sorted when they can be.
    """
    codes, _ = pd.factorize(col, use_na_sentinel=False)
    _, first = np.unique(codes, return_index=True)  # first row of each code, in code order
    values = col.iloc[first].reset_index(drop=True)
    try:
        order = np.argsort(values.to_numpy(), kind="stable")
    except TypeError:  # unorderable mix (e.g. a missing value among strings): keep first-seen
        order = np.arange(values.size)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[codes].astype(np.int64), values.iloc[order].reset_index(drop=True)


# =============================================================================================
# black-box attack and its baseline
# =============================================================================================
@dataclass
class AttributeAttackResult:
    """Outcome of an attribute-inference attack model (black-box or baseline).

    Membership metrics (:class:`~anonml.attacks.AttackResult`) do not fit a multi-valued
    prediction, so attribute attacks return this plain record. ``to_dict()`` is
    JSON-serialisable and holds aggregate figures only, never a record.

    Attributes
    ----------
    attack : str
        ``"attribute-blackbox"`` or ``"attribute-baseline"``.
    attack_feature : column name
    positive_value : value or None
        The value whose precision and recall are reported; ``None``: macro averages over the
        values that occur (as truth or prediction) in the evaluated records.
    values : list
        The attribute's values (training and test set), the order of ``confusion``.
    n_attack_train, n_evaluated : int
        Training records used to fit the attack model / training records it was evaluated on
        (disjoint; together the whole training set).
    accuracy, precision, recall : float
        Of the attack on the evaluated training records; precision is 0 when the value is
        never predicted, recall 0 when it never occurs.
    baseline_value : value
        The majority value of the attribute in the attack-training part.
    baseline_accuracy, baseline_precision, baseline_recall : float
        The same metrics for guessing ``baseline_value`` for every evaluated record; the
        attack learns something only if it does better.
    confusion : ndarray of shape (n_values, n_values)
        Counts of (true value, predicted value) over the evaluated records, rows true.
    nonmember_accuracy, nonmember_precision, nonmember_recall, nonmember_baseline_accuracy :
        float or None
        The same attack model on the target's test records (non-members), when the target has
        them: an attack as accurate on non-members infers the attribute from the population,
        not from what the model memorized. ``None`` without test records.
    extra : dict
        Parameters of the run (target output used, attack model).
    """

    attack: str
    attack_feature: Any
    positive_value: Any
    values: list
    n_attack_train: int
    n_evaluated: int
    accuracy: float
    precision: float
    recall: float
    baseline_value: Any
    baseline_accuracy: float
    baseline_precision: float
    baseline_recall: float
    confusion: np.ndarray
    nonmember_accuracy: float | None = None
    nonmember_precision: float | None = None
    nonmember_recall: float | None = None
    nonmember_baseline_accuracy: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def accuracy_gain(self) -> float:
        """``accuracy - baseline_accuracy``: what the attack adds to the majority guess."""
        return self.accuracy - self.baseline_accuracy

    def to_dict(self) -> dict:
        """JSON-serialisable summary (NaN/inf become ``None``); aggregate figures only."""
        out = asdict(self)
        out["accuracy_gain"] = self.accuracy_gain
        return json_safe(out)

    def __repr__(self) -> str:
        return (
            f"AttributeAttackResult({self.attack!r}, feature={self.attack_feature!r}, "
            f"accuracy={self.accuracy:.3f} (baseline {self.baseline_accuracy:.3f}), "
            f"precision={self.precision:.3f}, recall={self.recall:.3f}, "
            f"n={self.n_evaluated})"
        )


def _metrics(true: np.ndarray, pred: np.ndarray, positive: int | None) -> tuple[float, float, float]:
    """Accuracy and precision/recall of code ``positive`` (macro over present codes if None)."""
    accuracy = float(np.mean(true == pred)) if true.size else float("nan")
    if positive is not None:
        tp = np.sum((pred == positive) & (true == positive))
        n_pred, n_true = np.sum(pred == positive), np.sum(true == positive)
        return accuracy, float(tp / n_pred) if n_pred else 0.0, float(tp / n_true) if n_true else 0.0
    present = np.union1d(true, pred)
    precisions, recalls = [], []
    for c in present:  # loop over the attribute's values, not over records
        tp = np.sum((pred == c) & (true == c))
        n_pred, n_true = np.sum(pred == c), np.sum(true == c)
        precisions.append(tp / n_pred if n_pred else 0.0)
        recalls.append(tp / n_true if n_true else 0.0)
    return accuracy, float(np.mean(precisions)), float(np.mean(recalls))


class _AttributeModelAttack:
    """Shared machinery of the black-box attack and its baseline (parameters documented there)."""

    _name = "attribute"
    _uses_output = True

    def _output_features(self, target: Target, which: str) -> np.ndarray:
        proba = target.proba(which)
        if self.target_output == "proba":
            return proba
        onehot = np.zeros_like(proba)
        onehot[np.arange(proba.shape[0]), np.argmax(proba, axis=1)] = 1.0
        return onehot

    def _label_features(self, target: Target, which: str) -> np.ndarray:
        codes = target.label_codes(which)
        onehot = np.zeros((codes.size, target.n_classes))
        onehot[np.arange(codes.size), codes] = 1.0
        return onehot

    def _validate(self) -> None:
        _check_fraction("attack_train_ratio", self.attack_train_ratio)
        if self._uses_output and self.target_output not in ("proba", "label"):
            raise InputError(
                f"target_output={self.target_output!r} must be 'proba' (the target's "
                "probabilities) or 'label' (its predicted class only)"
            )
        if not isinstance(self.use_true_label, (bool, np.bool_)):
            raise InputError(f"use_true_label={self.use_true_label!r} must be True or False")
        if self.attack_model is not None and not (
            callable(getattr(self.attack_model, "fit", None))
            and callable(getattr(self.attack_model, "predict", None))
        ):
            raise InputError(
                f"attack_model {type(self.attack_model).__name__} has no fit/predict; pass a "
                "scikit-learn classifier, e.g. RandomForestClassifier(), or None for the default"
            )

    def run(self, target: Target) -> AttributeAttackResult:
        """Fit the attack model on part of the target's training records and evaluate it.

        Parameters
        ----------
        target : Target
            Needs ``X_train`` (a DataFrame, or an array with ``attack_feature`` a column
            index) and, for the black-box attack, the target's probabilities on it (a model or
            ``proba_train``). ``X_test`` (with its probabilities) is optional and gives the
            non-member figures.

        Returns
        -------
        AttributeAttackResult
        """
        from sklearn.base import clone
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        who = type(self).__name__
        target = _check_target(target, who)
        self._validate()
        rng = as_generator(self.random_state)
        X_train, _ = _frame_of(target, "train", who)
        X_test = None
        if target.X("test") is not None:
            X_test, _ = as_frame(target.X("test"), what="X_test")
        feature = self.attack_feature
        try:
            known = feature in X_train.columns
        except TypeError:  # unhashable, e.g. a list
            known = False
        if not known:
            raise InputError(
                f"attack_feature {feature!r} is not a column of X_train; pass one of: "
                f"{_values_str(list(X_train.columns), 15)}"
            )
        if X_test is not None and list(X_test.columns) != list(X_train.columns):
            raise InputError(
                "X_test has other columns than X_train; pass members and non-members with the "
                "same columns in the same order"
            )
        sides = [X_train[feature]] + ([X_test[feature]] if X_test is not None else [])
        for name, col in zip(("X_train", "X_test"), sides):
            n_missing = int(col.isna().sum())
            if n_missing:
                raise InputError(
                    f"attack_feature {feature!r} has {n_missing} missing values in {name}; "
                    "drop or fill those rows first"
                )
        all_codes, values = _factorize(pd.concat(sides, ignore_index=True))
        n_train = X_train.shape[0]
        codes_train, codes_test = all_codes[:n_train], all_codes[n_train:]
        if values.size > _MAX_ATTACK_VALUES:
            raise InputError(
                f"attack_feature {feature!r} has {values.size} distinct values (more than "
                f"{_MAX_ATTACK_VALUES}); bin it first, e.g. pd.cut(X[col], 10)"
            )
        positive = None
        if self.positive_value is not None:
            hit = np.flatnonzero((values == self.positive_value).to_numpy())
            if hit.size == 0:
                raise InputError(
                    f"positive_value {self.positive_value!r} is not a value of attack_feature "
                    f"{feature!r}; pass one of: {_values_str(values.tolist())} (or None)"
                )
            positive = int(hit[0])

        n_fit = round(self.attack_train_ratio * n_train)
        if n_fit < 1 or n_fit >= n_train:
            raise InputError(
                f"attack_train_ratio={self.attack_train_ratio} leaves {n_fit} of {n_train} "
                "training records to fit the attack and the rest to evaluate it; both need "
                "at least one record: pass a ratio nearer 0.5 or more records"
            )
        perm = rng.permutation(n_train)
        fit_idx, eval_idx = np.sort(perm[:n_fit]), np.sort(perm[n_fit:])
        if np.unique(codes_train[fit_idx]).size < 2:
            raise InputError(
                f"attack_feature {feature!r} has a single value in the attack-training part "
                f"({values[codes_train[fit_idx][0]]!r}); nothing to infer: attack a feature "
                "with at least two values, or raise attack_train_ratio"
            )

        others = [c for c in X_train.columns if c != feature]
        categorical = detect_categorical(X_train, others, self.categorical_features)
        numeric = [c for c in others if c not in set(categorical)]
        encoder = None
        if others:
            encoder = ColumnTransformer(
                [
                    ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
                    ("num", StandardScaler(), numeric),
                ],
                sparse_threshold=0.0,
            )
            encoder.fit(X_train.iloc[fit_idx][others])

        def design(X: pd.DataFrame, which: str, rows: np.ndarray | None) -> np.ndarray:
            parts = []
            if encoder is not None:
                part = X[others] if rows is None else X.iloc[rows][others]
                parts.append(np.asarray(encoder.transform(part), dtype=np.float64))
            if self._uses_output:
                out = self._output_features(target, which)
                parts.append(out if rows is None else out[rows])
            if self.use_true_label:
                lab = self._label_features(target, which)
                parts.append(lab if rows is None else lab[rows])
            if not parts:
                raise InputError(
                    f"X_train has no column besides attack_feature {feature!r} and no target "
                    "output is used; give the attack other features or use_true_label=True"
                )
            return np.hstack(parts)

        if self.attack_model is None:
            model = RandomForestClassifier(
                n_estimators=100, n_jobs=self.n_jobs, random_state=int(rng.integers(2**31 - 1))
            )
        else:
            model = clone(self.attack_model)
        model.fit(design(X_train, "train", fit_idx), codes_train[fit_idx])
        pred = np.asarray(model.predict(design(X_train, "train", eval_idx))).astype(np.int64)
        true = codes_train[eval_idx]
        accuracy, precision, recall = _metrics(true, pred, positive)

        majority = int(np.argmax(np.bincount(codes_train[fit_idx], minlength=values.size)))
        const = np.full_like(true, majority)
        b_acc, b_prec, b_rec = _metrics(true, const, positive)
        m = values.size
        confusion = np.bincount(true * m + pred, minlength=m * m).reshape(m, m)

        nm = dict.fromkeys(
            ("nonmember_accuracy", "nonmember_precision", "nonmember_recall",
             "nonmember_baseline_accuracy")
        )
        if X_test is not None:
            pred_test = np.asarray(model.predict(design(X_test, "test", None))).astype(np.int64)
            acc_t, prec_t, rec_t = _metrics(codes_test, pred_test, positive)
            nm = {
                "nonmember_accuracy": acc_t,
                "nonmember_precision": prec_t,
                "nonmember_recall": rec_t,
                "nonmember_baseline_accuracy": float(np.mean(codes_test == majority)),
            }
        extra = {
            "attack_model": type(model).__name__,
            "attack_train_ratio": self.attack_train_ratio,
            "use_true_label": bool(self.use_true_label),
            "categorical_features": [str(c) for c in categorical],
        }
        if self._uses_output:
            extra["target_output"] = self.target_output
        return AttributeAttackResult(
            attack=f"attribute-{self._name}",
            attack_feature=feature,
            positive_value=self.positive_value,
            values=values.tolist(),
            n_attack_train=int(fit_idx.size),
            n_evaluated=int(eval_idx.size),
            accuracy=accuracy,
            precision=precision,
            recall=recall,
            baseline_value=values.iloc[majority],
            baseline_accuracy=b_acc,
            baseline_precision=b_prec,
            baseline_recall=b_rec,
            confusion=confusion,
            extra=extra,
            **nm,
        )


class AttributeInferenceBlackBox(_AttributeModelAttack):
    """Black-box attribute inference: learn a feature from the others and the target's output.

    The attacker knows, for some of the target's training records, every feature including
    the sensitive ``attack_feature``, and can query the target. An attack model (a random
    forest by default) learns ``attack_feature`` from the other features (categorical ones
    one-hot encoded, numeric ones standardized) plus the target's output on the record. It is
    fitted on a random ``attack_train_ratio`` share of the training records and evaluated on
    the others (Goldsteen et al., 2022, Sec. 4.4, with ART's ``AttributeInferenceBlackBox``).

    Parameters
    ----------
    attack_feature : column name
        The sensitive feature to infer (a column of ``X_train``; for numpy input, its index).
        Its distinct values are the classes of the attack model (at most 100: bin a
        continuous feature first).
    positive_value : value, optional
        The value whose precision and recall are reported, e.g. ``"problematic"`` for
        Nursery's ``social``. ``None``: precision and recall are macro averages.
    attack_train_ratio : float, default 0.5
        Share of the training records used to fit the attack model; the rest evaluate it.
    attack_model : scikit-learn classifier, optional
        Cloned and fitted; default ``RandomForestClassifier(n_estimators=100)``.
    target_output : {"proba", "label"}, default "proba"
        Give the attack the target's probabilities, or only its predicted class (one-hot).
    use_true_label : bool, default False
        Also give the attack the record's true label (one-hot), which an attacker who knows
        the training record may know.
    categorical_features : list of column names, optional
        The categorical columns among the other features; default: detected from dtype.
    n_jobs : int, optional
        Passed to the default random forest.
    random_state : int, Generator or None
        Randomness of the split and of the default attack model.

    Notes
    -----
    The attack model is evaluated on members only; the ``nonmember_*`` figures show whether it
    does as well on people the target never saw (then the attack is inference from the
    population, not a leak of the training records; Jayaraman & Evans, 2022). Compare with
    :class:`AttributeInferenceBaseline` and with the majority guess.

    *Nursery* is a full factorial design: every combination of the 7 other features occurs
    once with each value of ``social``. A split into attack-training and evaluation records
    puts the siblings of an evaluated record (same other features, the other ``social``
    values) in the training part, so a memorizing attack model predicts a *wrong* value and
    ends below the majority guess (undefended tree, binary ``social``: random forest 0.53,
    majority 0.665, MLP 0.60, the paper 0.61; ``benchmarks/bench_attribute.py``).

    Examples
    --------
    >>> from anonml.attacks import Target, AttributeInferenceBlackBox  # doctest: +SKIP
    >>> res = AttributeInferenceBlackBox("social", positive_value="problematic",
    ...                                  random_state=0).run(target)  # doctest: +SKIP
    >>> res.accuracy, res.baseline_accuracy  # doctest: +SKIP
    """

    _name = "blackbox"
    _uses_output = True

    def __init__(
        self,
        attack_feature: Any,
        *,
        positive_value: Any = None,
        attack_train_ratio: float = 0.5,
        attack_model: Any = None,
        target_output: str = "proba",
        use_true_label: bool = False,
        categorical_features: Sequence[Any] | None = None,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.attack_feature = attack_feature
        self.positive_value = positive_value
        self.attack_train_ratio = attack_train_ratio
        self.attack_model = attack_model
        self.target_output = target_output
        self.use_true_label = use_true_label
        self.categorical_features = categorical_features
        self.n_jobs = n_jobs
        self.random_state = random_state


class AttributeInferenceBaseline(_AttributeModelAttack):
    """The attack model of :class:`AttributeInferenceBlackBox` without the target's output.

    What an attacker infers about ``attack_feature`` from the other features alone (ART's
    ``AttributeInferenceBaseline``; the imputation adversary of Jayaraman & Evans, 2022). Run
    both with the same ``random_state`` (same split, same evaluated records): the target leaks
    the attribute only by as much as the black-box attack beats this baseline. The target's
    model and probabilities are not used (except the true labels with ``use_true_label``).

    Parameters
    ----------
    attack_feature, positive_value, attack_train_ratio, attack_model, use_true_label, \
categorical_features, n_jobs, random_state
        As in :class:`AttributeInferenceBlackBox`.
    """

    _name = "baseline"
    _uses_output = False

    def __init__(
        self,
        attack_feature: Any,
        *,
        positive_value: Any = None,
        attack_train_ratio: float = 0.5,
        attack_model: Any = None,
        use_true_label: bool = False,
        categorical_features: Sequence[Any] | None = None,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.attack_feature = attack_feature
        self.positive_value = positive_value
        self.attack_train_ratio = attack_train_ratio
        self.attack_model = attack_model
        self.use_true_label = use_true_label
        self.categorical_features = categorical_features
        self.n_jobs = n_jobs
        self.random_state = random_state
