"""What every privacy attack shares: the attacked target, the result and its metrics.

* :class:`Target` holds a fitted model (anything with ``predict_proba``) or only its output
  probabilities, with the member records (the training set) and non-member records (held out).
* :func:`attack_result` turns the membership labels and the attack's scores into an
  :class:`AttackResult`: ROC curve, AUC with its one-sided p-value against 0.5, membership
  advantage, TPR at a fixed FPR, accuracy / precision / recall of the member class.
* :func:`balanced_indices` draws the 50/50 evaluation set used by every membership attack.

Metrics
-------
Let ``labels`` be 1 for members and 0 for non-members and ``scores`` be higher for records the
attack believes are members.

* **AUC** is the area under the ROC curve (``sklearn.metrics.roc_auc_score``): the probability
  that a random member scores higher than a random non-member, ties counting one half.
* **p-value** of the AUC against 0.5: the one-sided Mann–Whitney U test
  (``scipy.stats.mannwhitneyu(member_scores, nonmember_scores, alternative="greater")``),
  whose statistic is ``U = AUC · n_members · n_nonmembers`` (Mann & Whitney, 1947; Hanley &
  McNeil, 1982). scipy chooses the exact distribution for small samples without ties and the
  normal approximation with tie correction otherwise.
* **Advantage** is ``max_t (TPR(t) − FPR(t))`` over all thresholds, the membership advantage
  of Yeom et al. (2018), also the Kolmogorov–Smirnov distance of the two score distributions.
* **TPR at FPR α** is the TPR of the ROC point with the largest FPR that is ``<= α`` (no
  interpolation), as reported by Carlini et al. (2022) at α = 0.1 % and 1 %.
* **Accuracy, precision, recall** are those of the member class, from the attack's 0/1
  ``predictions``. When the attack gives none, see :func:`attack_result` for the rule.

References
----------
Yeom, Giacomelli, Fredrikson & Jha (2018). Privacy risk in machine learning: analyzing the
connection to overfitting. IEEE CSF.
Carlini, Chien, Nasr, Song, Terzis & Tramèr (2022). Membership inference attacks from first
principles. IEEE S&P.
Goldsteen, Ezov, Shmelkin, Moffie & Farkash (2022). Anonymizing machine learning models.
DPM/CBT workshops, LNCS 13140.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._progress import counter  # the one progress protocol (re-exported here)
from anonml._utils import check_int, check_real
from anonml._utils import json_safe  # the one JSON conversion (re-exported here)
from anonml._utils import n_rows as _n_rows

__all__ = [
    "Target",
    "AttackResult",
    "attack_result",
    "balanced_indices",
    "auc_score",
    "auc_pvalue",
    "roc",
    "membership_advantage",
    "tpr_at_fpr",
    "classification_metrics",
    "best_accuracy_threshold",
    "as_generator",
    "counter",
    "json_safe",
]

_WHICH = ("train", "test")
#: rows per ``predict_proba`` call; bounds the memory of one call on large tables
_BATCH_ROWS = 65_536
#: tolerance on "each row of probabilities sums to one"
_SUM_TOL = 1e-3


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def as_generator(random_state: Any) -> np.random.Generator:
    """A local ``np.random.Generator`` from ``None``, an int, a SeedSequence or a Generator.

    A ``np.random.RandomState`` is accepted too (one integer is drawn from it as the seed).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if random_state is None or isinstance(random_state, np.random.SeedSequence) or (
        isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)
        and random_state >= 0
    ):
        return np.random.default_rng(random_state)
    raise InputError(
        f"random_state={random_state!r} must be None, a non-negative int or a "
        "numpy.random.Generator, e.g. random_state=0"
    )


def _take_rows(data: Any, start: int, stop: int) -> Any:
    if isinstance(data, (pd.DataFrame, pd.Series)):
        return data.iloc[start:stop]
    return data[start:stop]


def _labels_array(y: Any, what: str) -> np.ndarray:
    if isinstance(y, (pd.DataFrame,)):
        if y.shape[1] != 1:
            raise InputError(f"{what} must be one column of labels, got {y.shape[1]} columns")
        y = y.iloc[:, 0]
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InputError(f"{what} must be 1-D (one label per row), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InputError(f"{what} is empty; pass at least one record")
    if pd.isna(arr).any():
        raise InputError(f"{what} contains missing labels; drop or fill those rows first")
    return arr


def _check_proba(p: Any, what: str, n_classes: int | None = None) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 2:
        raise InputError(
            f"{what} must be 2-D (rows x classes, columns in sorted class order), "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise InputError(f"{what} has no rows; pass at least one record")
    if n_classes is not None and arr.shape[1] != n_classes:
        raise InputError(
            f"{what} has {arr.shape[1]} columns but there are {n_classes} classes; give one "
            "column per class, in sorted class order"
        )
    if not np.isfinite(arr).all():
        raise InputError(f"{what} contains NaN or infinite values; pass finite probabilities")
    if arr.min() < -_SUM_TOL or arr.max() > 1 + _SUM_TOL:
        raise InputError(
            f"{what} has values outside [0, 1] (min {arr.min():.3g}, max {arr.max():.3g}); "
            "pass probabilities, e.g. scipy.special.softmax(logits, axis=1)"
        )
    sums = arr.sum(axis=1)
    if np.abs(sums - 1.0).max() > _SUM_TOL:
        raise InputError(
            f"{what} rows must sum to 1 (one row sums to {sums[np.argmax(np.abs(sums - 1))]:.4g}); "
            "pass probabilities, e.g. scipy.special.softmax(logits, axis=1)"
        )
    return np.clip(arr, 0.0, 1.0)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for readable messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _sorted_unique(values: np.ndarray, what: str) -> np.ndarray:
    try:
        return np.unique(values)
    except TypeError:
        raise InputError(
            f"{what} mixes label types (e.g. strings and numbers); cast the labels to one type"
        ) from None


# ---------------------------------------------------------------------------------------------
# Target
# ---------------------------------------------------------------------------------------------
class Target:
    """A model plus member data (its training set) and non-member data (held out).

    Parameters
    ----------
    model : object with ``predict_proba``, optional
        The fitted model under attack (scikit-learn-like). Its ``classes_`` (when present) give
        the class order. Attacks that train shadow models clone it, so a scikit-learn estimator
        is best; any object with ``predict_proba`` serves the black-box attacks.
    X_train, y_train : array-like
        The member records (the model's training set) and their true labels.
    X_test, y_test : array-like
        Non-member records from the same distribution, held out of training, and their labels.
    proba_train, proba_test : array-like of shape (n, n_classes), optional
        The model's probabilities on the members / non-members, columns in the order of the
        sorted classes. Give them instead of ``model`` to attack a black-box or non-Python
        model; ``X_*`` are then optional (attacks that need features say so). Given together
        with ``model`` they are taken as its precomputed outputs and not recomputed.
    name : str, optional
        A label for reports.

    Attributes
    ----------
    classes_ : ndarray
        Sorted class labels: ``model.classes_`` when present; otherwise the labels seen in
        ``y_train`` ∪ ``y_test``, or ``0 .. n_classes-1`` when the labels are such integer codes
        and some class never occurs.

    Notes
    -----
    Probabilities are computed once per side, in batches of 65 536 rows, and cached.
    """

    def __init__(
        self,
        model: Any = None,
        X_train: Any = None,
        y_train: Any = None,
        X_test: Any = None,
        y_test: Any = None,
        *,
        proba_train: Any = None,
        proba_test: Any = None,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.X_train = X_train
        self.X_test = X_test
        self.name = name
        # the label column's name, when y_train is a named Series (the report shows it)
        y_name = getattr(y_train, "name", None)
        self.y_name = y_name if isinstance(y_name, str) else None
        self._cache: dict[str, np.ndarray] = {}

        if model is not None and not callable(getattr(model, "predict_proba", None)):
            raise InputError(
                f"model {type(model).__name__} has no predict_proba; pass a fitted classifier "
                "with predict_proba, or its outputs as proba_train= and proba_test="
            )
        if model is None and (proba_train is None or proba_test is None):
            pairs = (("proba_train", proba_train), ("proba_test", proba_test))
            missing = " and ".join(n for n, v in pairs if v is None)
            raise InputError(
                f"{missing} missing: pass a fitted model with predict_proba, or both "
                "proba_train= and proba_test= (the model's probabilities on members and "
                "non-members)"
            )
        if y_train is None or y_test is None:
            pairs = (("y_train", y_train), ("y_test", y_test))
            missing = " and ".join(n for n, v in pairs if v is None)
            raise InputError(
                f"{missing} missing: pass the true labels of the members (y_train) and of the "
                "non-members (y_test)"
            )
        self.y_train = _labels_array(y_train, "y_train")
        self.y_test = _labels_array(y_test, "y_test")

        for which, X, y, p in (
            ("train", X_train, self.y_train, proba_train),
            ("test", X_test, self.y_test, proba_test),
        ):
            if X is None and model is not None and p is None:
                raise InputError(
                    f"X_{which} missing: the model needs the records to compute its "
                    f"probabilities; pass X_{which}= (or proba_{which}=)"
                )
            if X is not None and _n_rows(X) != y.shape[0]:
                raise InputError(
                    f"X_{which} has {_n_rows(X)} rows but y_{which} has {y.shape[0]}; pass one "
                    "label per record"
                )
        if X_train is not None and X_test is not None:
            ncol = [np.shape(X)[1] if np.ndim(X) == 2 else None for X in (X_train, X_test)]
            if None not in ncol and ncol[0] != ncol[1]:
                raise InputError(
                    f"X_train has {ncol[0]} columns but X_test has {ncol[1]}; pass members and "
                    "non-members with the same features"
                )

        labels = _sorted_unique(np.concatenate([self.y_train, self.y_test]), "y_train/y_test")
        model_classes = getattr(model, "classes_", None) if model is not None else None
        if model_classes is not None:
            classes = np.asarray(model_classes)
        else:
            classes = labels
            width = None
            for p in (proba_train, proba_test):
                if p is not None and np.ndim(p) == 2:
                    width = np.shape(p)[1]
                    break
            if (
                width is not None
                and width > classes.size
                and np.issubdtype(classes.dtype, np.integer)
                and classes.min() >= 0
                and classes.max() < width
            ):
                classes = np.arange(width)
        unseen = labels[~np.isin(labels, classes)]
        if unseen.size:
            raise InputError(
                f"label {_plain(unseen[0])!r} in y_train/y_test is not a class of the model "
                f"(classes: {', '.join(map(str, classes[:10]))}); pass labels the model knows"
            )
        if classes.size < 2:
            raise InputError(
                f"only one class ({_plain(classes[0])!r}); membership and attribute attacks need a "
                "classifier with at least two classes"
            )
        self.classes_ = classes

        sides = (("train", proba_train, self.y_train), ("test", proba_test, self.y_test))
        for which, p, y in sides:
            if p is None:
                continue
            arr = _check_proba(p, f"proba_{which}", classes.size)
            if arr.shape[0] != y.shape[0]:
                raise InputError(
                    f"proba_{which} has {arr.shape[0]} rows but y_{which} has {y.shape[0]}; "
                    "pass one probability row per record"
                )
            self._cache[which] = arr

    # -- accessors ------------------------------------------------------------------------------
    @property
    def has_model(self) -> bool:
        """False for a probabilities-only target."""
        return self.model is not None

    @property
    def n_classes(self) -> int:
        return int(self.classes_.size)

    def _check_which(self, which: str) -> str:
        if which not in _WHICH:
            raise InputError(f"which={which!r} must be 'train' (members) or 'test' (non-members)")
        return which

    def n(self, which: str) -> int:
        """Number of records on one side (``"train"`` members, ``"test"`` non-members)."""
        return int(self.y(which).shape[0])

    def X(self, which: str) -> Any:
        """The records on one side, as given (``None`` if a probabilities-only target has none)."""
        return self.X_train if self._check_which(which) == "train" else self.X_test

    def y(self, which: str) -> np.ndarray:
        """The true labels on one side, as a 1-D array."""
        return self.y_train if self._check_which(which) == "train" else self.y_test

    def proba(self, which: str) -> np.ndarray:
        """The model's probabilities on one side, shape (n, n_classes); cached, batched."""
        which = self._check_which(which)
        cached = self._cache.get(which)
        if cached is not None:
            return cached
        X = self.X(which)
        n = _n_rows(X)
        parts = [
            np.asarray(self.model.predict_proba(_take_rows(X, s, min(s + _BATCH_ROWS, n))))
            for s in range(0, n, _BATCH_ROWS)
        ]
        arr = _check_proba(np.concatenate(parts, axis=0), f"model.predict_proba(X_{which})",
                           self.n_classes)
        self._cache[which] = arr
        return arr

    def label_codes(self, which: str) -> np.ndarray:
        """The true labels on one side as indices into ``classes_`` (int64)."""
        y = self.y(which)
        codes = np.searchsorted(self.classes_, y)
        return np.clip(codes, 0, self.n_classes - 1).astype(np.int64)

    def __repr__(self) -> str:
        kind = type(self.model).__name__ if self.has_model else "probabilities only"
        label = f"{self.name!r}, " if self.name else ""
        return (
            f"Target({label}{kind}, {self.n('train')} members, {self.n('test')} non-members, "
            f"{self.n_classes} classes)"
        )


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------
def _check_labels_scores(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    lab = np.asarray(labels)
    sc = np.asarray(scores, dtype=np.float64)
    if lab.ndim != 1 or sc.ndim != 1 or lab.shape != sc.shape:
        raise InputError(
            f"labels and scores must be 1-D of the same length, got shapes {lab.shape} and "
            f"{sc.shape}"
        )
    if not np.isin(lab, (0, 1)).all():
        raise InputError("labels must be 1 (member) or 0 (non-member)")
    lab = lab.astype(np.int64)
    if lab.min(initial=1) == 1 or lab.max(initial=0) == 0:
        raise InputError(
            "labels must contain both members (1) and non-members (0) to measure an attack"
        )
    if not np.isfinite(sc).all():
        raise InputError(
            "scores contain NaN or infinite values; the attack must give finite scores"
        )
    return lab, sc


def roc(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve ``(fpr, tpr, thresholds)``, one point per distinct score (no point dropped).

    Point ``i`` predicts "member" for ``scores >= thresholds[i]``; the first point has threshold
    ``+inf`` (nobody is a member), so the curve starts at (0, 0) and ends at (1, 1).
    """
    from sklearn.metrics import roc_curve

    lab, sc = _check_labels_scores(labels, scores)
    fpr, tpr, thr = roc_curve(lab, sc, drop_intermediate=False)
    return fpr, tpr, thr


def auc_score(labels: Any, scores: Any) -> float:
    """Area under the ROC curve (``sklearn.metrics.roc_auc_score``)."""
    from sklearn.metrics import roc_auc_score

    lab, sc = _check_labels_scores(labels, scores)
    return float(roc_auc_score(lab, sc))


def auc_pvalue(labels: Any, scores: Any) -> float:
    """One-sided p-value of "AUC > 0.5" by the Mann–Whitney U test (members vs non-members)."""
    from scipy.stats import mannwhitneyu

    lab, sc = _check_labels_scores(labels, scores)
    member, nonmember = sc[lab == 1], sc[lab == 0]
    if np.ptp(sc) == 0:  # every score equal: no evidence at all
        return 1.0
    return float(mannwhitneyu(member, nonmember, alternative="greater").pvalue)


def membership_advantage(labels: Any, scores: Any) -> float:
    """``max_t (TPR(t) − FPR(t))`` over all thresholds (Yeom et al., 2018); 0 for no signal."""
    fpr, tpr, _ = roc(labels, scores)
    return float(np.max(tpr - fpr))


def tpr_at_fpr(fpr_curve: np.ndarray, tpr_curve: np.ndarray, fpr: float) -> float:
    """TPR of the ROC point with the largest FPR ``<= fpr`` (no interpolation)."""
    check_real("fpr", fpr, high=1, closed="both", example=0.01)
    ok = np.asarray(fpr_curve) <= fpr
    return float(np.max(np.asarray(tpr_curve)[ok])) if ok.any() else 0.0


def classification_metrics(labels: Any, predictions: Any) -> tuple[float, float, float]:
    """``(accuracy, precision, recall)`` of the member class; precision is 0 with no positive."""
    lab = np.asarray(labels).astype(np.int64)
    pred = np.asarray(predictions)
    if pred.shape != lab.shape or not np.isin(pred, (0, 1)).all():
        raise InputError(
            f"predictions must be 0/1, one per evaluated record ({lab.shape[0]}), got shape "
            f"{pred.shape}"
        )
    pred = pred.astype(np.int64)
    tp = int(np.sum((pred == 1) & (lab == 1)))
    n_pos_pred = int(pred.sum())
    n_pos = int(lab.sum())
    accuracy = float(np.mean(pred == lab))
    precision = tp / n_pos_pred if n_pos_pred else 0.0
    recall = tp / n_pos if n_pos else 0.0
    return accuracy, float(precision), float(recall)


def best_accuracy_threshold(labels: Any, scores: Any) -> float:
    """The threshold ``t`` (predict member when ``score >= t``) of highest accuracy.

    Searched over every distinct score and ``+inf`` (all non-members); the smallest-FPR point
    wins ties. It is chosen on the evaluated records themselves, so the resulting accuracy is
    an optimistic (oracle-threshold) figure.
    """
    fpr, tpr, thr = roc(labels, scores)
    lab = np.asarray(labels)
    n1 = float(np.sum(lab == 1))
    n0 = float(lab.size - n1)
    acc = (tpr * n1 + (1.0 - fpr) * n0) / (n1 + n0)
    return float(thr[int(np.argmax(acc))])


# ---------------------------------------------------------------------------------------------
# AttackResult
# ---------------------------------------------------------------------------------------------
class AttackResult:
    """The outcome of one membership attack: per-record scores and every metric.

    Built by :func:`attack_result`; plain data. ``to_dict()`` is JSON-serialisable and never
    holds records (scores and labels only on request).

    Attributes
    ----------
    attack : str
        Name of the attack, e.g. ``"blackbox-rf"``.
    labels, scores, predictions : ndarray
        Membership (1 member, 0 non-member) of the evaluated records, the attack's scores
        (higher = more likely member) and its 0/1 decisions at ``threshold``.
    threshold : float or None
        The decision threshold behind ``predictions`` (``None`` when the attack gave them).
    accuracy, precision, recall : float
        Of the member class, from ``predictions``.
    auc, auc_pvalue : float
        AUC and its one-sided Mann–Whitney p-value against 0.5.
    advantage : float
        ``max_t (TPR − FPR)``.
    fpr, tpr, thresholds : ndarray
        ROC curve (see :func:`roc`).
    extra : dict
        Attack-specific figures (JSON-safe).
    """

    _TPR_AT = (0.001, 0.01, 0.1)

    def __init__(
        self,
        attack: str,
        labels: np.ndarray,
        scores: np.ndarray,
        predictions: np.ndarray,
        *,
        threshold: float | None,
        accuracy: float,
        precision: float,
        recall: float,
        auc: float,
        auc_pvalue: float,
        advantage: float,
        fpr: np.ndarray,
        tpr: np.ndarray,
        thresholds: np.ndarray,
        extra: dict | None = None,
    ) -> None:
        self.attack = attack
        self.labels = labels
        self.scores = scores
        self.predictions = predictions
        self.threshold = threshold
        self.accuracy = accuracy
        self.precision = precision
        self.recall = recall
        self.auc = auc
        self.auc_pvalue = auc_pvalue
        self.advantage = advantage
        self.fpr = fpr
        self.tpr = tpr
        self.thresholds = thresholds
        self.extra = {} if extra is None else extra

    @property
    def n_members(self) -> int:
        return int(np.sum(self.labels == 1))

    @property
    def n_nonmembers(self) -> int:
        return int(np.sum(self.labels == 0))

    def tpr_at_fpr(self, fpr: float) -> float:
        """TPR at the ROC point with the largest FPR ``<= fpr``."""
        return tpr_at_fpr(self.fpr, self.tpr, fpr)

    def to_dict(self, include_scores: bool = False) -> dict:
        """A JSON-serialisable summary; with ``include_scores`` also labels, scores, predictions
        and the ROC curve. Never any record."""
        out = {
            "attack": self.attack,
            "n_members": self.n_members,
            "n_nonmembers": self.n_nonmembers,
            "auc": self.auc,
            "auc_pvalue": self.auc_pvalue,
            "advantage": self.advantage,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "threshold": self.threshold,
            "tpr_at_fpr": {str(a): self.tpr_at_fpr(a) for a in self._TPR_AT},
            "extra": self.extra,
        }
        if include_scores:
            out.update(
                labels=self.labels,
                scores=self.scores,
                predictions=self.predictions,
                roc={"fpr": self.fpr, "tpr": self.tpr, "thresholds": self.thresholds},
            )
        return json_safe(out)

    def __repr__(self) -> str:
        return (
            f"AttackResult({self.attack!r}, auc={self.auc:.3f}, p={self.auc_pvalue:.2g}, "
            f"advantage={self.advantage:.3f}, accuracy={self.accuracy:.3f}, "
            f"n={self.labels.size})"
        )


def attack_result(
    attack: str,
    labels: Any,
    scores: Any,
    predictions: Any = None,
    extra: dict | None = None,
    *,
    threshold: float | None = None,
) -> AttackResult:
    """Compute every metric of an attack from membership labels and scores.

    Parameters
    ----------
    attack : str
        Name of the attack.
    labels : array-like of 0/1
        1 for members, 0 for non-members; both must occur.
    scores : array-like of float
        Higher = more likely member; finite.
    predictions : array-like of 0/1, optional
        The attack's own decisions. When omitted they are ``scores >= threshold`` where
        ``threshold`` is, in order: the ``threshold`` argument; 0.5 when every score lies in
        [0, 1] (the scores are taken as membership probabilities); otherwise the threshold of
        highest accuracy on these records (:func:`best_accuracy_threshold`, an optimistic
        oracle choice).
    extra : dict, optional
        Attack-specific figures; made JSON-safe (numpy to Python, NaN/inf to ``None``).
    threshold : float, optional
        Decision threshold on ``scores`` (ignored when ``predictions`` is given).

    Returns
    -------
    AttackResult
    """
    if not isinstance(attack, str) or not attack:
        raise InputError(f"attack={attack!r} must be a non-empty name, e.g. 'blackbox-rf'")
    lab, sc = _check_labels_scores(labels, scores)
    fpr, tpr, thr = roc(lab, sc)
    if predictions is None:
        if threshold is None:
            if sc.min() >= 0.0 and sc.max() <= 1.0:
                threshold = 0.5
            else:
                threshold = best_accuracy_threshold(lab, sc)
        elif (isinstance(threshold, bool) or not isinstance(threshold, numbers.Real)
              or math.isnan(threshold)):
            raise InputError(f"threshold={threshold!r} must be a number on the scale of the scores")
        threshold = float(threshold)
        pred = (sc >= threshold).astype(np.int64)
    else:
        pred = np.asarray(predictions)
        threshold = None
    accuracy, precision, recall = classification_metrics(lab, pred)
    return AttackResult(
        attack,
        lab,
        sc,
        pred.astype(np.int64),
        threshold=threshold,
        accuracy=accuracy,
        precision=precision,
        recall=recall,
        auc=auc_score(lab, sc),
        auc_pvalue=auc_pvalue(lab, sc),
        advantage=float(np.max(tpr - fpr)),
        fpr=fpr,
        tpr=tpr,
        thresholds=thr,
        extra=json_safe(dict(extra or {})),
    )


def balanced_indices(
    n_members: int, n_nonmembers: int, rng: Any = None, *, balance: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a 50/50 evaluation set: the larger side subsampled without replacement.

    Parameters
    ----------
    n_members, n_nonmembers : int
        Sizes of the two sides (each at least 1).
    rng : np.random.Generator, int or None
        Randomness of the subsample.
    balance : bool, default True
        When False, all indices of both sides are returned.

    Returns
    -------
    member_idx, nonmember_idx : ndarray of int64, sorted
        ``min(n_members, n_nonmembers)`` indices each (when balancing).
    """
    for name, v in (("n_members", n_members), ("n_nonmembers", n_nonmembers)):
        check_int(name, v, why="a membership attack needs members and non-members")
    n_members, n_nonmembers = int(n_members), int(n_nonmembers)
    if not balance:
        return np.arange(n_members, dtype=np.int64), np.arange(n_nonmembers, dtype=np.int64)
    gen = as_generator(rng)
    m = min(n_members, n_nonmembers)

    def pick(n: int) -> np.ndarray:
        if n == m:
            return np.arange(n, dtype=np.int64)
        return np.sort(gen.choice(n, size=m, replace=False)).astype(np.int64)

    return pick(n_members), pick(n_nonmembers)
