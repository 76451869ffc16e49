"""Worst-case attribute inference (SACRO-ML): does a model single out its members' values?

:class:`WorstCaseAttribute` (the attribute attack of SACRO-ML / AI-SDC, Smith et al.): for
every record and every attribute, ask the target model about every completion of the record
(every value of a categorical attribute, a grid of values of a continuous one) and count the
records whose true value the model singles out. The **attribute risk ratio** ARR = (rate of
such records in the training set) / (rate in the test set) with a one-sided Fisher exact
test tells whether the model singles out the values of its *members* more often than those of
people it never saw.

The attack-model attacks (ART's black-box attack and its baseline) and the input checks
both share are in :mod:`anonml.attacks._attribute`.

Definitions of the worst-case attack (following SACRO-ML's ``attribute_attack.py``)
-----------------------------------------------------------------------------------------
Let ``ŷ`` be the reference label of a record: the target's predicted class on the real record
(``label="predicted"``, SACRO-ML's choice) or its true label (``label="true"``).

*Categorical attribute* with candidate values ``v_1 .. v_m`` (every value seen in the training
or test set). For each completion ``x[a := v_j]`` the model gives probabilities ``p_j``. The
completions whose predicted class ``argmax p_j`` equals ``ŷ`` are *consistent*; their confidence
is ``max p_j``. The attack makes an **inference** when the largest confidence among consistent
completions is ``>= confidence_threshold`` and is reached by exactly one completion; the inferred
value is that completion's. SACRO-ML decides ties by exact floating-point equality
(``np.unique``); here two probabilities within ``TIE_TOL`` (1e-9) of each other are equal, in
the class vote (the first of the top classes, as ``argmax``), the best completion and the
continuous peak. A forest predicting on several threads (``n_jobs=-1``) sums its trees in a
varying order and returns last-digit differences; with exact equality a tie then broke one way
or the other from run to run, and the risk ratio was not reproducible with the same seed.
A record is **at risk** when an inference is made and it is the record's true value.

*Continuous attribute*: a grid of ``n_grid`` evenly spaced values between the attribute's
minimum and maximum over training and test set. For each grid completion take the probability
of the class ``ŷ``; ``peak`` is the largest of them and ``[lo, hi]`` the smallest and largest
grid values that reach it. A record with true value ``t`` is **at risk** when
``peak >= confidence_threshold``, the real record's probability of ``ŷ`` is at least ``peak``
(the true value is as good as the best guess) and ``[lo, hi]`` lies within
``t ± protection_limit·|t|`` (SACRO-ML: 10 %). SACRO-ML compares the real record's probability
with ``==`` and takes the grid range of each set separately; here ``>=`` (the true value may
be better than every grid point) and one grid for both sets, so the two rates are comparable.

*Attribute risk ratio*: with ``a`` of ``n1`` training records and ``b`` of ``n2`` test records
at risk, ``ARR = (a/n1) / (b/n2)`` (``inf`` when ``b = 0 < a``, undefined when ``a = b = 0``),
its 95 % confidence interval on the log scale (Katz et al., 1978; undefined when ``a`` or ``b``
is 0), and the one-sided p-value of Fisher's exact test of the 2x2 table against
"training records are at risk no more often than test records". SACRO-ML reports the counts
but not the ratio.

The completions of one attribute are built as one table (``n_records x n_candidates`` rows,
cut into chunks of about ``batch_rows`` rows) and the model is asked once per chunk; there is
no loop over records.

References
----------
Smith, Preen, et al. SACRO-ML (formerly AI-SDC): tools for statistical disclosure control of
trained machine-learning models, ``sacroml/attacks/attribute_attack.py``.
Katz, Baptista, Azen & Pike (1978). Obtaining confidence intervals for the risk ratio in
cohort studies. Biometrics 34(3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._utils import check_int, check_real
from anonml.attacks._attribute import _check_fraction, _check_target, _factorize, _frame_of
from anonml.attacks._core import Target, as_generator, counter, json_safe
from anonml.encoding import from_frame

__all__ = [
    "AttributeRisk",
    "WorstCaseAttribute",
    "WorstCaseAttributeResult",
    "risk_ratio_test",
]

#: probabilities closer than this are equal (ties of the worst-case attribute attack)
TIE_TOL = 1e-9


def _top_class(P: np.ndarray) -> np.ndarray:
    """``argmax`` over the last axis with probabilities within :data:`TIE_TOL` taken as equal
    (the first of the tied top classes), so last-digit noise cannot move it."""
    return np.argmax(P >= P.max(axis=-1, keepdims=True) - TIE_TOL, axis=-1)


#: the ``label`` :meth:`WorstCaseAttribute.run` passes to ``progress(label, done, total)``
PROGRESS_LABEL = "attribute attack features"


# =============================================================================================
# worst-case attack (SACRO-ML) and the attribute risk ratio
# =============================================================================================
def risk_ratio_test(
    train_risky: int, n_train: int, test_risky: int, n_test: int, confidence: float = 0.95
) -> dict:
    """Risk ratio of two proportions with its confidence interval and one-sided Fisher test.

    Parameters
    ----------
    train_risky, n_train : int
        Records at risk among the training records, and their number (``0 <= a <= n1``).
    test_risky, n_test : int
        The same for the test records.
    confidence : float, default 0.95
        Level of the interval.

    Returns
    -------
    dict
        ``train_rate``, ``test_rate``; ``arr`` = ``train_rate / test_rate`` (``inf`` when only
        the test rate is 0, NaN when both are); ``ci_low``, ``ci_high``: the Katz log interval
        ``exp(log arr ± z·sqrt(1/a − 1/n1 + 1/b − 1/n2))`` (NaN when ``a`` or ``b`` is 0);
        ``pvalue``: one-sided Fisher exact test of the table ``[[a, n1−a], [b, n2−b]]``
        against "training records are at risk no more often" (``alternative="greater"``).
    """
    from scipy.stats import fisher_exact, norm

    a, n1, b, n2 = (
        check_int(name, v, low=0)
        for name, v in (("train_risky", train_risky), ("n_train", n_train),
                        ("test_risky", test_risky), ("n_test", n_test))
    )
    if n1 < 1 or n2 < 1 or a > n1 or b > n2:
        raise InputError(
            f"counts ({a} of {n1} training, {b} of {n2} test records) must satisfy "
            "0 <= risky <= n and n >= 1 on both sides"
        )
    _check_fraction("confidence", confidence)
    p1, p2 = a / n1, b / n2
    if b > 0:
        arr = p1 / p2
    else:
        arr = math.inf if a > 0 else math.nan
    lo = hi = math.nan
    if a > 0 and b > 0:
        se = math.sqrt(max(1 / a - 1 / n1 + 1 / b - 1 / n2, 0.0))
        z = float(norm.ppf(0.5 + confidence / 2))
        lo, hi = arr * math.exp(-z * se), arr * math.exp(z * se)
    pvalue = float(fisher_exact([[a, n1 - a], [b, n2 - b]], alternative="greater").pvalue)
    return {"train_rate": p1, "test_rate": p2, "arr": arr, "ci_low": lo, "ci_high": hi,
            "pvalue": min(max(pvalue, 0.0), 1.0)}


@dataclass
class AttributeRisk:
    """Worst-case attribute risk of one feature (see :mod:`anonml.attacks._attribute`).

    Attributes
    ----------
    feature : column name
    kind : {"categorical", "continuous"}
    n_candidates : int
        Values tried per record (distinct values, or grid points).
    n_train, n_test : int
        Training / test records attacked.
    train_risky, test_risky : int
        Records whose true value the model singles out (see the module docstring).
    train_inferred, test_inferred : int or None
        Categorical only: records for which an inference was made at all (right or wrong),
        SACRO-ML's ``total``; ``None`` for a continuous feature.
    train_rate, test_rate : float
        ``risky / n`` on each side.
    arr, arr_ci_low, arr_ci_high, pvalue : float
        Attribute risk ratio, its 95 % interval and the one-sided Fisher p-value
        (:func:`risk_ratio_test`).
    baseline_train, baseline_test : float or None
        Categorical only: share of the most common value on each side (SACRO-ML's baseline
        for the accuracy of the inferences, ``risky / inferred``).
    """

    feature: Any
    kind: str
    n_candidates: int
    n_train: int
    n_test: int
    train_risky: int
    test_risky: int
    train_inferred: int | None
    test_inferred: int | None
    train_rate: float
    test_rate: float
    arr: float
    arr_ci_low: float
    arr_ci_high: float
    pvalue: float
    baseline_train: float | None = None
    baseline_test: float | None = None

    def to_dict(self) -> dict:
        return json_safe(asdict(self))


@dataclass
class WorstCaseAttributeResult:
    """Outcome of :class:`WorstCaseAttribute`: one :class:`AttributeRisk` per attacked feature.

    Attributes
    ----------
    attack : str
        ``"attribute-worst-case"``.
    attributes : list of AttributeRisk
        In the order the features were attacked.
    params : dict
        The attack's parameters (threshold, label, grid, protection limit, records attacked).
    skipped : dict
        Feature -> why it was not attacked (e.g. infinite values of a continuous feature).
    """

    attack: str
    attributes: list
    params: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)

    def __getitem__(self, feature: Any) -> AttributeRisk:
        for risk in self.attributes:
            if risk.feature == feature:
                return risk
        raise KeyError(feature)

    @property
    def max_arr(self) -> float:
        """The largest attribute risk ratio over the features (NaN ratios ignored)."""
        arrs = [r.arr for r in self.attributes if not math.isnan(r.arr)]
        return max(arrs) if arrs else math.nan

    def significant(self, alpha: float = 0.05) -> list:
        """Features whose ARR is significantly above 1 (one-sided p-value below ``alpha``).

        No multiple-testing correction: divide ``alpha`` by ``len(attributes)`` for Bonferroni.
        """
        _check_fraction("alpha", alpha)
        return [r.feature for r in self.attributes if r.pvalue < alpha]

    def to_frame(self) -> pd.DataFrame:
        """One row per feature, the columns of :class:`AttributeRisk`."""
        return pd.DataFrame([asdict(r) for r in self.attributes])

    def to_dict(self) -> dict:
        """JSON-serialisable summary (NaN/inf become ``None``); counts only, never a record."""
        return json_safe(
            {"attack": self.attack, "params": self.params,
             "attributes": [asdict(r) for r in self.attributes], "skipped": self.skipped}
        )

    def __repr__(self) -> str:
        return (
            f"WorstCaseAttributeResult({len(self.attributes)} features, "
            f"max ARR {self.max_arr:.3g}, significant at 0.05: {self.significant(0.05)})"
        )


class WorstCaseAttribute:
    """Worst-case attribute inference (SACRO-ML): does the model single out members' values?

    For every attacked feature and every record of the training and test sets, the target is
    asked about every completion of the record (all values of a categorical feature, an
    ``n_grid``-point grid of a continuous one) and the record is *at risk* when the model's
    answer singles out its true value; the exact rules are in the module docstring. Reports per
    feature the counts on both sides, the attribute risk ratio ARR = train rate / test rate and
    a one-sided Fisher exact test (:func:`risk_ratio_test`). ARR well above 1 means the model
    reveals the attribute of the people it was trained on more than of others.

    Parameters
    ----------
    features : list of column names, optional
        The features to attack; default every column of ``X_train``.
    categorical_features : list of column names, optional
        Which of them are categorical; default: detected from dtype (non-numeric or bool).
        Others are continuous and attacked with a grid.
    confidence_threshold : float in [0, 1], default 0.0
        Smallest confidence of an inference (SACRO-ML's ``attack_threshold``, default 0).
    label : {"predicted", "true"}, default "predicted"
        The reference class ``ŷ``: the target's prediction on the real record (SACRO-ML) or the
        record's true label.
    n_grid : int, default 100
        Grid points of a continuous feature (SACRO-ML's ``feat_n``).
    protection_limit : float, default 0.1
        Half-width of the band around the true value, relative to ``|value|`` (SACRO-ML: 10 %).
    max_records : int, optional
        Attack at most this many records per side (a random subset); default all.
    batch_rows : int, default 262144
        Rows of completions per ``predict_proba`` call (bounds memory).
    random_state : int, Generator or None
        Randomness of the subset (only with ``max_records``).

    Notes
    -----
    Needs a model (a probabilities-only target cannot be asked about completions) that takes
    tables like ``X_train``, e.g. a scikit-learn ``Pipeline`` with a ``ColumnTransformer`` for
    DataFrames. The cost is ``n_records x n_candidates`` model evaluations per feature: the 7
    categorical features of Adult (86 values, 48,842 records, 4.2 million completions) take
    about 8 CPU seconds on a one-hot decision-tree pipeline, most of it inside the pipeline
    (``benchmarks/bench_attribute.py``).

    **Which reference label.** With SACRO-ML's ``label="predicted"``, a fully grown decision
    tree (pure leaves) gives confidence 1.0 to every consistent completion, so unique best
    completions are rare on members and non-members alike: on Adult such a tree (training
    accuracy 1.00, test 0.81) gets ARR 0.82–1.24 over the 7 categorical features, while
    ``label="true"`` (the attacker knows the record's label, as an attacker holding the record
    usually does) gets ARR 1.5–2.9 with p < 1e-15, and a 30-tree forest gets 1.2–2.1 with
    either. Use ``label="true"`` when the labels are known to the attacker.
    """

    def __init__(
        self,
        features: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        confidence_threshold: float = 0.0,
        label: str = "predicted",
        n_grid: int = 100,
        protection_limit: float = 0.1,
        max_records: int | None = None,
        batch_rows: int = 262_144,
        random_state: Any = None,
    ) -> None:
        self.features = features
        self.categorical_features = categorical_features
        self.confidence_threshold = confidence_threshold
        self.label = label
        self.n_grid = n_grid
        self.protection_limit = protection_limit
        self.max_records = max_records
        self.batch_rows = batch_rows
        self.random_state = random_state

    # -- validation ------------------------------------------------------------------------------
    def _validate(self) -> None:
        _check_fraction("confidence_threshold", self.confidence_threshold, low_open=False)
        if self.label not in ("predicted", "true"):
            raise InputError(
                f"label={self.label!r} must be 'predicted' (the target's class on the real "
                "record, as SACRO-ML) or 'true' (the record's true label)"
            )
        check_int("n_grid", self.n_grid, low=2)
        check_real("protection_limit", self.protection_limit, closed="left", example=0.1,
                   why="0.1 is ±10 %")
        if self.max_records is not None:
            check_int("max_records", self.max_records)
        check_int("batch_rows", self.batch_rows)

    # -- model queries ---------------------------------------------------------------------------
    def _completion_proba(
        self, model: Any, frame: pd.DataFrame, like: Any, column: Any, candidates: pd.Series,
        n_classes: int,
    ) -> Any:
        """Yield ``(start, stop, P)`` with ``P`` of shape (records, candidates, classes).

        The completions of records ``start:stop`` (each record repeated once per candidate,
        ``column`` set to the candidates in turn) go to the model in one call.
        """
        n, m = frame.shape[0], candidates.size
        per = max(1, self.batch_rows // m)
        for start in range(0, n, per):
            stop = min(n, start + per)
            r = stop - start
            rows = frame.iloc[np.repeat(np.arange(start, stop), m)].reset_index(drop=True)
            rows[column] = candidates.iloc[np.tile(np.arange(m), r)].reset_index(drop=True)
            query = rows if isinstance(like, pd.DataFrame) else from_frame(rows, like)
            proba = np.asarray(model.predict_proba(query), dtype=np.float64)
            if proba.shape != (r * m, n_classes):
                raise InputError(
                    f"model.predict_proba returned shape {proba.shape} for {r * m} completions; "
                    f"expected ({r * m}, {n_classes}), one column per class"
                )
            yield start, stop, proba.reshape(r, m, n_classes)

    def _categorical(self, model, frame, like, column, n_classes, ref, true_codes, candidates):
        n = frame.shape[0]
        inferred = np.zeros(n, dtype=bool)
        risky = np.zeros(n, dtype=bool)
        thr = float(self.confidence_threshold)
        for start, stop, P in self._completion_proba(model, frame, like, column, candidates,
                                                     n_classes):
            conf = P.max(axis=2)
            consistent = _top_class(P) == ref[start:stop, None]
            conf = np.where(consistent, conf, -np.inf)
            best = conf.max(axis=1)
            at_best = conf >= best[:, None] - TIE_TOL
            n_best = np.sum(at_best, axis=1)
            made = np.isfinite(best) & (best >= thr - TIE_TOL) & (n_best == 1)
            guess = np.argmax(at_best, axis=1)
            inferred[start:stop] = made
            risky[start:stop] = made & (guess == true_codes[start:stop])
        return inferred, risky

    def _continuous(self, model, frame, like, column, n_classes, ref, true_values, grid,
                    true_scores, missing=False):
        """Records at risk on a continuous feature; with ``missing``, "missing" (NaN) is one
        more completion after the grid (rules in :mod:`anonml.attacks._attribute_plan`)."""
        n = frame.shape[0]
        risky = np.zeros(n, dtype=bool)
        thr = float(self.confidence_threshold)
        g = grid.size
        candidates = pd.Series(np.r_[grid, np.nan] if missing else grid)
        for start, stop, P in self._completion_proba(model, frame, like, column,
                                                     candidates, n_classes):
            r = stop - start
            scores = P[np.arange(r), :, ref[start:stop]]  # (r, g[+1]): probability of ŷ
            peak = scores.max(axis=1)
            at_peak = scores[:, :g] >= peak[:, None] - TIE_TOL
            on_grid = at_peak.any(axis=1)
            nan_peak = scores[:, g] >= peak - TIE_TOL if missing else np.zeros(r, dtype=bool)
            lo = grid[np.argmax(at_peak, axis=1)]
            hi = grid[g - 1 - np.argmax(at_peak[:, ::-1], axis=1)]
            t = true_values[start:stop]
            known = ~np.isnan(t)
            band = self.protection_limit * np.abs(np.where(known, t, 0.0))
            sure = (peak >= thr - TIE_TOL) & (true_scores[start:stop] >= peak - TIE_TOL)
            risky[start:stop] = sure & np.where(
                known, on_grid & ~nan_peak & (lo >= t - band) & (hi <= t + band),
                nan_peak & ~on_grid)
        return risky

    def check(self, target: Target) -> dict:
        """Every check :meth:`run` makes before asking the model, without asking it: the
        parameters, the records, the features and which are categorical.

        Returns
        -------
        dict
            Feature -> why it will not be attacked (empty when every feature will be).

        Raises
        ------
        InputError
            One line, as :meth:`run` would raise it.
        """
        return self._plan(_check_target(target, type(self).__name__))[4]

    def _plan(self, target: Target) -> tuple:
        from anonml.attacks._attribute_plan import attribute_plan

        who = type(self).__name__
        self._validate()
        if not target.has_model:
            raise InputError(
                "WorstCaseAttribute asks the model about every completion of a record; a "
                "probabilities-only target cannot answer: pass the fitted model to Target"
            )
        X_train, _ = _frame_of(target, "train", who)
        X_test, _ = _frame_of(target, "test", who)
        if list(X_test.columns) != list(X_train.columns):
            raise InputError(
                "X_test has other columns than X_train; pass members and non-members with the "
                "same columns in the same order"
            )
        return (X_train, X_test, *attribute_plan(X_train, X_test, self.features,
                                                 self.categorical_features))

    # -- the attack ------------------------------------------------------------------------------
    def run(self, target: Target, *, progress: Any = None) -> WorstCaseAttributeResult:
        """Attack every feature of ``features`` on the target's training and test records.

        Parameters
        ----------
        target : Target
            With a model (``predict_proba`` on tables like ``X_train``), ``X_train`` and
            ``X_test`` with the same columns.
        progress : callable, optional
            Called as ``progress("attribute attack features", done, total)`` with ``done = 0``
            before the first feature and again as each feature is finished (``total`` = the
            number of attacked features).

        Returns
        -------
        WorstCaseAttributeResult
        """
        target = _check_target(target, type(self).__name__)
        X_train, X_test, features, categorical, skipped, with_missing = self._plan(target)
        like = target.X("train")
        rng = as_generator(self.random_state)

        n_tr, n_te = X_train.shape[0], X_test.shape[0]
        idx_tr, idx_te = np.arange(n_tr), np.arange(n_te)
        if self.max_records is not None:
            if n_tr > self.max_records:
                idx_tr = np.sort(rng.choice(n_tr, self.max_records, replace=False))
            if n_te > self.max_records:
                idx_te = np.sort(rng.choice(n_te, self.max_records, replace=False))
        # one table of the attacked records of both sides: one model call per chunk for both
        frame = pd.concat([X_train.iloc[idx_tr], X_test.iloc[idx_te]], ignore_index=True)
        if not isinstance(like, pd.DataFrame):
            like = np.asarray(like)
        side = np.r_[np.ones(idx_tr.size, dtype=bool), np.zeros(idx_te.size, dtype=bool)]
        proba_real = np.vstack([target.proba("train")[idx_tr], target.proba("test")[idx_te]])
        if self.label == "predicted":
            ref = _top_class(proba_real)
        else:
            ref = np.r_[target.label_codes("train")[idx_tr], target.label_codes("test")[idx_te]]
        model, n_classes = target.model, target.n_classes

        risks = []
        tick = counter(progress, PROGRESS_LABEL, len(features))
        for column in features:  # loop over attributes; records are vectorized inside
            full = pd.concat([X_train[column], X_test[column]], ignore_index=True)
            sub = frame[column]
            if column in categorical:
                codes_full, candidates = _factorize(full)
                codes = np.r_[codes_full[:n_tr][idx_tr], codes_full[n_tr:][idx_te]]
                inferred, risky = self._categorical(
                    model, frame, like, column, n_classes, ref, codes, candidates
                )
                counts_tr = np.bincount(codes_full[:n_tr], minlength=candidates.size)
                counts_te = np.bincount(codes_full[n_tr:], minlength=candidates.size)
                extra = {
                    "kind": "categorical",
                    "n_candidates": int(candidates.size),
                    "train_inferred": int(inferred[side].sum()),
                    "test_inferred": int(inferred[~side].sum()),
                    "baseline_train": float(counts_tr.max() / n_tr),
                    "baseline_test": float(counts_te.max() / n_te),
                }
            else:
                # finite values only (the plan skipped infinite ones); a missing one is a
                # completion of its own (anonml.attacks._attribute_plan)
                values = pd.to_numeric(full, errors="coerce").to_numpy(dtype=np.float64)
                grid = np.linspace(np.nanmin(values), np.nanmax(values), int(self.n_grid))
                true_values = pd.to_numeric(sub, errors="coerce").to_numpy(dtype=np.float64)
                true_scores = proba_real[np.arange(ref.size), ref]
                risky = self._continuous(
                    model, frame, like, column, n_classes, ref, true_values, grid, true_scores,
                    missing=column in with_missing,
                )
                extra = {"kind": "continuous",
                         "n_candidates": int(grid.size) + int(column in with_missing),
                         "train_inferred": None, "test_inferred": None}
            a, b = int(risky[side].sum()), int(risky[~side].sum())
            stats = risk_ratio_test(a, int(idx_tr.size), b, int(idx_te.size))
            risks.append(
                AttributeRisk(
                    feature=column,
                    n_train=int(idx_tr.size),
                    n_test=int(idx_te.size),
                    train_risky=a,
                    test_risky=b,
                    train_rate=stats["train_rate"],
                    test_rate=stats["test_rate"],
                    arr=stats["arr"],
                    arr_ci_low=stats["ci_low"],
                    arr_ci_high=stats["ci_high"],
                    pvalue=stats["pvalue"],
                    **extra,
                )
            )
            tick()
        params = {
            "confidence_threshold": float(self.confidence_threshold),
            "label": self.label,
            "n_grid": int(self.n_grid),
            "protection_limit": float(self.protection_limit),
            "max_records": self.max_records,
            "n_train": int(idx_tr.size),
            "n_test": int(idx_te.size),
        }
        return WorstCaseAttributeResult("attribute-worst-case", risks, params,
                                        {str(c): why for c, why in skipped.items()})
