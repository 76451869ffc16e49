"""anonml.attacks core: Target, AttackResult and the metrics, against hand-computed values."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import anonml.attacks as attacks
from anonml._errors import InputError
from anonml.attacks import _core
from anonml.attacks._core import (
    Target,
    as_generator,
    attack_result,
    auc_pvalue,
    auc_score,
    balanced_indices,
    best_accuracy_threshold,
    classification_metrics,
    json_safe,
    membership_advantage,
    roc,
    tpr_at_fpr,
)

# ---------------------------------------------------------------------------------------------
# the 6-record example
#   sorted by score: 0.9 (m), 0.8 (m), 0.7 (n), 0.4 (m), 0.2 (n), 0.1 (n)
#   ROC (FPR, TPR) from threshold +inf down: (0,0) (0,1/3) (0,2/3) (1/3,2/3) (1/3,1) (2/3,1) (1,1)
#   AUC: member-beats-non-member pairs 3 + 3 + 2 = 8 of 9
#   exact one-sided Mann-Whitney p: U = 8 of max 9; P(U >= 8) = 2 / C(6,3) = 2/20 = 0.1
#   advantage: max TPR - FPR = 2/3; at threshold 0.5: predictions 1 1 0 1 0 0
# ---------------------------------------------------------------------------------------------
LAB = np.array([1, 1, 1, 0, 0, 0])
SC = np.array([0.9, 0.8, 0.4, 0.7, 0.2, 0.1])


def test_six_record_roc_auc_pvalue_advantage():
    fpr, tpr, thr = roc(LAB, SC)
    np.testing.assert_allclose(fpr, [0, 0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(tpr, [0, 1 / 3, 2 / 3, 2 / 3, 1, 1, 1])
    assert np.isinf(thr[0]) and list(thr[1:]) == [0.9, 0.8, 0.7, 0.4, 0.2, 0.1]
    assert auc_score(LAB, SC) == pytest.approx(8 / 9)
    assert auc_pvalue(LAB, SC) == pytest.approx(0.1)
    assert membership_advantage(LAB, SC) == pytest.approx(2 / 3)


def test_six_record_tpr_at_fpr():
    r = attack_result("toy", LAB, SC)
    assert r.tpr_at_fpr(0.0) == pytest.approx(2 / 3)
    assert r.tpr_at_fpr(0.2) == pytest.approx(2 / 3)
    assert r.tpr_at_fpr(1 / 3) == pytest.approx(1.0)
    assert r.tpr_at_fpr(1.0) == pytest.approx(1.0)
    with pytest.raises(InputError, match="fpr"):
        r.tpr_at_fpr(1.5)


def test_six_record_accuracy_precision_recall_at_half():
    r = attack_result("toy", LAB, SC)
    assert r.threshold == 0.5  # scores in [0, 1]: taken as probabilities
    assert r.predictions.tolist() == [1, 1, 0, 1, 0, 0]
    assert (r.accuracy, r.precision, r.recall) == pytest.approx((4 / 6, 2 / 3, 2 / 3))
    assert r.auc == pytest.approx(8 / 9) and r.advantage == pytest.approx(2 / 3)
    assert r.auc_pvalue == pytest.approx(0.1)


def test_unbounded_scores_use_best_accuracy_threshold():
    # accuracies from +inf down: 3/6 4/6 5/6 4/6 5/6 4/6 3/6 -> first best at score 8 (FPR 0)
    assert best_accuracy_threshold(LAB, SC * 10) == pytest.approx(8.0)
    r = attack_result("toy", LAB, SC * 10)
    assert r.threshold == pytest.approx(8.0)
    assert r.predictions.tolist() == [1, 1, 0, 0, 0, 0]
    assert (r.accuracy, r.precision, r.recall) == pytest.approx((5 / 6, 1.0, 2 / 3))


def test_explicit_predictions_and_threshold():
    r = attack_result("toy", LAB, SC, predictions=[0, 0, 0, 0, 0, 0])
    assert r.threshold is None
    assert (r.accuracy, r.precision, r.recall) == (0.5, 0.0, 0.0)  # no positive: precision 0
    r = attack_result("toy", LAB, SC, threshold=0.35)
    assert r.predictions.tolist() == [1, 1, 1, 1, 0, 0]
    assert (r.accuracy, r.precision, r.recall) == pytest.approx((5 / 6, 3 / 4, 1.0))


def test_classification_metrics_by_hand():
    # TP=2 FP=1 FN=1 TN=2
    assert classification_metrics([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0]) == pytest.approx(
        (4 / 6, 2 / 3, 2 / 3)
    )


def test_constant_scores_are_chance():
    r = attack_result("const", LAB, np.full(6, 0.3))
    assert r.auc == 0.5 and r.auc_pvalue == 1.0 and r.advantage == 0.0


def test_to_dict_json_without_records_unless_asked():
    r = attack_result("toy", LAB, SC, extra={"k": np.int64(3), "x": np.array([np.nan, 1.0])})
    d = r.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert "scores" not in d and "labels" not in d and "roc" not in d
    assert d["auc"] == pytest.approx(8 / 9) and d["extra"] == {"k": 3, "x": [None, 1.0]}
    assert d["n_members"] == 3 and d["n_nonmembers"] == 3
    assert d["tpr_at_fpr"]["0.1"] == pytest.approx(2 / 3)
    assert "0.9" not in text.split('"tpr_at_fpr"')[0]  # no score leaks into the summary
    full = r.to_dict(include_scores=True)
    json.dumps(full, allow_nan=False)
    assert full["scores"] == SC.tolist() and full["roc"]["thresholds"][0] is None


@pytest.mark.parametrize(
    "labels, scores, match",
    [
        ([1, 1, 1], [0.1, 0.2, 0.3], "both members"),
        ([1, 0, 2], [0.1, 0.2, 0.3], "1 \\(member\\) or 0"),
        ([1, 0], [0.1, 0.2, 0.3], "same length"),
        ([1, 0, 0], [0.1, np.nan, 0.3], "NaN"),
    ],
)
def test_attack_result_bad_input(labels, scores, match):
    with pytest.raises(InputError, match=match):
        attack_result("x", labels, scores)


def test_attack_result_bad_name_and_predictions():
    with pytest.raises(InputError, match="attack"):
        attack_result("", LAB, SC)
    with pytest.raises(InputError, match="predictions"):
        attack_result("x", LAB, SC, predictions=[1, 0])


# ---------------------------------------------------------------------------------------------
# metric functions against their definitions (property-based, with ties)
# ---------------------------------------------------------------------------------------------
@st.composite
def labelled_scores(draw, max_n=12, levels=5):
    n = draw(st.integers(2, max_n))
    labels = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    labels[0], labels[1] = 1, 0
    scores = draw(st.lists(st.integers(0, levels), min_size=n, max_size=n))  # ties likely
    return np.array(labels), np.array(scores, dtype=float) / levels


@settings(max_examples=80, deadline=None)
@given(labelled_scores())
def test_metrics_match_definitions(ls):
    lab, sc = ls
    pos, neg = sc[lab == 1], sc[lab == 0]
    diff = pos[:, None] - neg[None, :]
    auc_def = (np.sum(diff > 0) + 0.5 * np.sum(diff == 0)) / diff.size
    assert auc_score(lab, sc) == pytest.approx(auc_def)
    thresholds = np.r_[np.inf, np.unique(sc)]
    tprs = np.array([np.mean(pos >= t) for t in thresholds])
    fprs = np.array([np.mean(neg >= t) for t in thresholds])
    assert membership_advantage(lab, sc) == pytest.approx(np.max(tprs - fprs))
    fpr, tpr, _ = roc(lab, sc)
    for a in (0.0, 0.1, 0.25, 0.5, 1.0):
        assert tpr_at_fpr(fpr, tpr, a) == pytest.approx(np.max(tprs[fprs <= a]))
    p = auc_pvalue(lab, sc)
    assert 0.0 <= p <= 1.0
    r = attack_result("h", lab, sc)
    acc = np.mean(r.predictions == lab)
    assert r.accuracy == pytest.approx(acc)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4), st.integers(2, 4), st.randoms(use_true_random=False))
def test_pvalue_is_exact_permutation_probability_without_ties(n1, n0, rnd):
    # distinct scores: p = share of the C(n, n1) member sets whose U is at least the observed U
    n = n1 + n0
    sc = np.array(rnd.sample(range(100), n), dtype=float)
    lab = np.r_[np.ones(n1, int), np.zeros(n0, int)]

    def u(members):
        m = np.zeros(n, bool)
        m[list(members)] = True
        return np.sum(sc[m][:, None] > sc[~m][None, :])

    u_obs = u(range(n1))
    us = [u(c) for c in itertools.combinations(range(n), n1)]
    assert auc_pvalue(lab, sc) == pytest.approx(np.mean(np.array(us) >= u_obs))


# ---------------------------------------------------------------------------------------------
# balanced_indices and helpers
# ---------------------------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.integers(0, 2**31 - 1))
def test_balanced_indices_properties(n1, n0, seed):
    a, b = balanced_indices(n1, n0, seed)
    m = min(n1, n0)
    assert a.size == b.size == m
    assert np.unique(a).size == m and np.unique(b).size == m
    assert a.min() >= 0 and a.max() < n1 and b.max() < n0
    assert np.all(np.diff(a) > 0) and np.all(np.diff(b) > 0)
    a2, b2 = balanced_indices(n1, n0, seed)
    assert np.array_equal(a, a2) and np.array_equal(b, b2)


def test_balanced_indices_unbalanced_and_errors():
    a, b = balanced_indices(5, 3, 0, balance=False)
    assert a.tolist() == [0, 1, 2, 3, 4] and b.tolist() == [0, 1, 2]
    with pytest.raises(InputError, match="n_nonmembers"):
        balanced_indices(5, 0, 0)


def test_as_generator_and_json_safe():
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert as_generator(3).integers(10**9) == np.random.default_rng(3).integers(10**9)
    with pytest.raises(InputError, match="random_state"):
        as_generator("seed")
    with pytest.raises(InputError, match="random_state"):
        as_generator(-1)
    assert json_safe({"a": np.float32(np.inf), "b": (np.int8(1), np.bool_(True))}) == {
        "a": None, "b": [1, True]
    }


# ---------------------------------------------------------------------------------------------
# Target
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def split():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + rng.normal(scale=0.5, size=60) > 0, "yes", "no")
    return X[:40], y[:40], X[40:], y[40:]


def test_target_from_model(split):
    Xtr, ytr, Xte, yte = split
    model = LogisticRegression().fit(Xtr, ytr)
    t = Target(model, Xtr, ytr, Xte, yte, name="lr")
    assert t.has_model and t.n_classes == 2 and list(t.classes_) == ["no", "yes"]
    np.testing.assert_allclose(t.proba("train"), model.predict_proba(Xtr))
    assert t.proba("test") is t.proba("test")  # cached
    assert t.label_codes("test").tolist() == (yte == "yes").astype(int).tolist()
    assert t.n("train") == 40 and t.n("test") == 20
    assert "40 members" in repr(t)


def test_target_batches_predict_proba(split, monkeypatch):
    Xtr, ytr, Xte, yte = split
    model = LogisticRegression().fit(Xtr, ytr)
    calls = []
    real = model.predict_proba

    class Spy:
        classes_ = model.classes_

        def predict_proba(self, X):
            calls.append(len(X))
            return real(X)

    monkeypatch.setattr(_core, "_BATCH_ROWS", 16)
    t = Target(Spy(), Xtr, ytr, Xte, yte)
    np.testing.assert_allclose(t.proba("train"), real(Xtr))
    assert calls == [16, 16, 8]


def test_target_with_dataframes(split):
    Xtr, ytr, Xte, yte = split
    ftr, fte = pd.DataFrame(Xtr, columns=list("abc")), pd.DataFrame(Xte, columns=list("abc"))
    model = DecisionTreeClassifier(random_state=0).fit(ftr, pd.Series(ytr))
    t = Target(model, ftr, pd.Series(ytr), fte, pd.Series(yte))
    np.testing.assert_allclose(t.proba("test"), model.predict_proba(fte))


def test_target_probabilities_only():
    p = np.array([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])
    t = Target(proba_train=p, y_train=[1, 0], proba_test=p[::-1], y_test=[0, 0])
    assert not t.has_model
    # labels 0/1 only but three columns: integer labels are taken as class codes 0..2
    assert t.classes_.tolist() == [0, 1, 2] and t.label_codes("train").tolist() == [1, 0]
    np.testing.assert_allclose(t.proba("train"), p)
    assert t.X("train") is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(model=object()), "no predict_proba"),
        (dict(proba_train=[[0.5, 0.5]], y_train=[0], y_test=[1]), "proba_test missing"),
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[0.5, 0.5]], y_test=[1]), "y_train missing"),
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[0.5, 0.5]], y_train=[0, 1], y_test=[1]),
         "proba_train has 1 rows but y_train has 2"),
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[0.5, 0.6]], y_train=[0], y_test=[1]),
         "sum to 1"),
        (dict(proba_train=[[1.5, -0.5]], proba_test=[[0.5, 0.5]], y_train=[0], y_test=[1]),
         "outside \\[0, 1\\]"),
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[1.0]], y_train=[0], y_test=[1]),
         "proba_test has 1 columns but there are 2 classes"),
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[0.5, 0.5]], y_train=["a"], y_test=["c"]),
         None),  # two labels, two columns: fine
        (dict(proba_train=[[0.5, 0.5]], proba_test=[[0.5, 0.5]], y_train=[0], y_test=[np.nan]),
         "missing labels"),
        (dict(proba_train=[[1.0]], proba_test=[[1.0]], y_train=[0], y_test=[0]), "only one class"),
    ],
)
def test_target_validation(kwargs, match):
    if match is None:
        Target(**kwargs)
        return
    with pytest.raises(InputError, match=match):
        Target(**kwargs)


def test_target_validation_with_model(split):
    Xtr, ytr, Xte, yte = split
    model = LogisticRegression().fit(Xtr, ytr)
    with pytest.raises(InputError, match="X_test missing"):
        Target(model, Xtr, ytr, None, yte)
    with pytest.raises(InputError, match="X_train has 40 rows but y_train has 39"):
        Target(model, Xtr, ytr[:-1], Xte, yte)
    with pytest.raises(InputError, match="X_train has 3 columns but X_test has 2"):
        Target(model, Xtr, ytr, Xte[:, :2], yte)
    with pytest.raises(InputError, match="label 'maybe'"):
        Target(model, Xtr, ytr, Xte, np.r_[yte[:-1], ["maybe"]])
    t = Target(model, Xtr, ytr, Xte, yte)
    with pytest.raises(InputError, match="which='val'"):
        t.proba("val")


def test_target_rejects_logits_from_model(split):
    Xtr, ytr, Xte, yte = split

    class Logits:
        classes_ = np.array(["no", "yes"])

        def predict_proba(self, X):
            return np.c_[X[:, 0] * 5, -X[:, 0] * 5]

    t = Target(Logits(), Xtr, ytr, Xte, yte)
    with pytest.raises(InputError, match="softmax"):
        t.proba("train")


# ---------------------------------------------------------------------------------------------
# the package namespace
# ---------------------------------------------------------------------------------------------
def test_lazy_namespace():
    assert attacks.Target is Target and attacks.attack_result is attack_result
    assert attacks.MembershipInferenceBlackBox.__name__ == "MembershipInferenceBlackBox"
    assert attacks.WorstCaseMembership.__name__ == "WorstCaseMembership"
    assert "LiRA" in attacks.__all__ and "Target" in dir(attacks)
    assert set(attacks.__all__) == set(attacks._LAZY)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        attacks.nope  # noqa: B018
    assert math.isclose(attacks.auc_score(LAB, SC), 8 / 9)
