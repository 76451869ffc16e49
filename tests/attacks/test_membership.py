"""Membership attacks: black box (Shokri; ART, Goldsteen et al. 2022) and worst case (SACRO-ML).

Signal: a fully grown decision tree on *random* labels (4 classes, 200 members) memorizes its
training set: its output on a member is the one-hot vector of the true label, on a non-member
the one-hot vector of a random class (right with probability 1/4). An attack that reads
"the output puts all mass on the true label" therefore reaches, in expectation,
AUC = 3/4 · 1 + 1/4 · 1/2 = 0.875 and advantage 3/4. The tests ask AUC > 0.75 and advantage
> 0.5; with 100 (black box) or 40 (worst case, last split) non-members evaluated, the share of
lucky non-members has SD ≤ 0.07, so 0.75 lies ≥ 3.5 SD below the expectation (over 20 seeds the
observed minimum was 0.83).

No signal: a DummyClassifier outputs the class prior for every record, so nothing separates
members from non-members (the attack can only react to the label, distributed alike on both
sides). With 500 members and 500 non-members evaluated, the AUC of a no-signal score has SD
sqrt((n1 + n0 + 1) / (12 n1 n0)) ≈ 0.018 (Hanley & McNeil, 1982); the tolerance |AUC − 0.5| <
0.1 is more than 5 SD (over 60 seeds the largest deviation seen was 0.065).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.attacks import MembershipInferenceBlackBox, Target, WorstCaseMembership
from anonml.attacks._worst_case import n_significant

SMALL_RF = RandomForestClassifier(
    n_estimators=30, max_depth=5, min_samples_split=20, min_samples_leaf=10
)


def _random_label_data(n, n_classes, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = rng.integers(0, n_classes, size=n)
    h = n // 2
    return X[:h], y[:h], X[h:], y[h:]


@pytest.fixture(scope="module")
def memorizing():
    Xtr, ytr, Xte, yte = _random_label_data(400, 4, seed=1)
    tree = DecisionTreeClassifier(random_state=0).fit(Xtr, ytr)
    assert tree.score(Xtr, ytr) == 1.0
    return Target(tree, Xtr, ytr, Xte, yte, name="tree")


@pytest.fixture(scope="module")
def confident_forest():
    # a random forest on random binary labels: more confident in the true label on members
    Xtr, ytr, Xte, yte = _random_label_data(400, 2, seed=2)
    rf = RandomForestClassifier(n_estimators=30, random_state=0).fit(Xtr, ytr)
    return Target(rf, Xtr, ytr, Xte, yte, name="forest")


@pytest.fixture(scope="module")
def constant():
    Xtr, ytr, Xte, yte = _random_label_data(2000, 4, seed=3)
    model = DummyClassifier(strategy="prior").fit(Xtr, ytr)
    return Target(model, Xtr, ytr, Xte, yte, name="dummy")


def _proba_only(t):
    return Target(proba_train=t.proba("train"), y_train=t.y_train, proba_test=t.proba("test"),
                  y_test=t.y_test)


# ---------------------------------------------------------------------------------------------
# black box
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attack_model", ["rf", "gb"])
def test_blackbox_detects_memorization(memorizing, attack_model):
    r = MembershipInferenceBlackBox(attack_model, random_state=0).run(memorizing)
    assert r.attack == f"blackbox-{attack_model}"
    assert r.auc > 0.75 and r.advantage > 0.5 and r.auc_pvalue < 1e-6
    # 200 members and 200 non-members, half known: 100 + 100 to train, 100 + 100 evaluated
    assert (r.n_members, r.n_nonmembers) == (100, 100)
    assert r.extra["n_attack_train_members"] == r.extra["n_attack_train_nonmembers"] == 100
    json.dumps(r.to_dict(), allow_nan=False)


def test_blackbox_nn_detects_overconfidence(confident_forest):
    pytest.importorskip("torch")
    r = MembershipInferenceBlackBox("nn", epochs=30, learning_rate=1e-3,
                                    random_state=0).run(confident_forest)
    assert r.attack == "blackbox-nn" and r.auc > 0.7 and r.auc_pvalue < 1e-4
    assert r.extra["epochs"] == 30


def test_blackbox_nn_is_deterministic(confident_forest):
    pytest.importorskip("torch")
    a = MembershipInferenceBlackBox("nn", epochs=3, random_state=5).run(confident_forest)
    b = MembershipInferenceBlackBox("nn", epochs=3, random_state=5).run(confident_forest)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert np.all((a.scores > 0) & (a.scores < 1))


def test_blackbox_nn_without_torch_says_how_to_install(confident_forest, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    import re

    from anonml._install import install_hint

    with pytest.raises(InputError, match=re.escape(install_hint("torch"))):
        MembershipInferenceBlackBox("nn").run(confident_forest)
    # the core path needs no torch
    assert MembershipInferenceBlackBox(SMALL_RF, random_state=0).run(confident_forest).auc > 0.5


@pytest.mark.parametrize("attack_model", ["rf", "nn"])
def test_blackbox_constant_model_is_chance(constant, attack_model):
    if attack_model == "nn":
        pytest.importorskip("torch")
    r = MembershipInferenceBlackBox(attack_model, epochs=3, random_state=0).run(constant)
    assert (r.n_members, r.n_nonmembers) == (500, 500)
    assert abs(r.auc - 0.5) < 0.1 and r.advantage < 0.15


def test_blackbox_probabilities_only_equals_model(memorizing):
    a = MembershipInferenceBlackBox("rf", input_type="log_proba", random_state=3).run(memorizing)
    b = MembershipInferenceBlackBox("rf", input_type="log_proba",
                                    random_state=3).run(_proba_only(memorizing))
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_blackbox_deterministic_and_seed_dependent(memorizing):
    a = MembershipInferenceBlackBox(SMALL_RF, random_state=7).run(memorizing)
    b = MembershipInferenceBlackBox(SMALL_RF, random_state=7).run(memorizing)
    c = MembershipInferenceBlackBox(SMALL_RF, random_state=8).run(memorizing)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert not np.array_equal(a.scores, c.scores)


def test_blackbox_custom_estimator_and_unbalanced_sides():
    # 150 members, 60 non-members: 30 + 30 train the attack, 30 + 30 evaluated
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(210, 3)), rng.integers(0, 2, 210)
    model = LogisticRegression().fit(X[:150], y[:150])
    t = Target(model, X[:150], y[:150], X[150:], y[150:])
    attack = MembershipInferenceBlackBox(LogisticRegression(), attack_train_ratio=0.5,
                                         random_state=0)
    r = attack.run(t)
    assert r.attack == "blackbox-LogisticRegression"
    assert (r.n_members, r.n_nonmembers) == (30, 30)
    assert r.extra["n_attack_train_members"] == 30
    assert isinstance(attack.attack_model_, LogisticRegression)


def test_blackbox_sklearn_contract():
    attack = MembershipInferenceBlackBox("gb", attack_train_ratio=0.3, random_state=1)
    params = attack.get_params()
    assert params["attack_model"] == "gb" and params["attack_train_ratio"] == 0.3
    assert clone(attack).get_params() == params


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(attack_model="svm"), "attack_model='svm'"),
        (dict(attack_model=object()), "fit and predict_proba"),
        (dict(attack_train_ratio=1.0), "attack_train_ratio"),
        (dict(input_type="logits"), "input_type"),
        (dict(attack_model="nn", epochs=0), "epochs"),
        (dict(attack_model="nn", learning_rate=-1.0), "learning_rate"),
        (dict(n_jobs=0), "n_jobs"),
        (dict(random_state="x"), "random_state"),
    ],
)
def test_blackbox_bad_parameters(memorizing, kwargs, match):
    if kwargs.get("attack_model") == "nn":
        pytest.importorskip("torch")
    with pytest.raises(InputError, match=match):
        MembershipInferenceBlackBox(**kwargs).run(memorizing)


def test_blackbox_too_few_records_and_bad_target():
    p = np.array([[0.9, 0.1], [0.2, 0.8]])
    t = Target(proba_train=p, y_train=[0, 1], proba_test=p[:1], y_test=[0])
    with pytest.raises(InputError, match="too few records"):
        MembershipInferenceBlackBox().run(t)
    with pytest.raises(InputError, match="Target"):
        MembershipInferenceBlackBox().run("model")


# ---------------------------------------------------------------------------------------------
# worst case
# ---------------------------------------------------------------------------------------------
def test_worst_case_detects_memorization_sacro_defaults(memorizing):
    r = WorstCaseMembership(n_reps=3, random_state=0).run(memorizing)
    e = r.extra
    assert r.attack == "worst-case" and e["attack_model"] == "rf"
    assert r.auc > 0.75 and r.advantage > 0.5
    assert e["mean_auc"] > 0.75 and len(e["auc"]) == len(e["auc_pvalue"]) == 3
    assert r.auc == pytest.approx(e["auc"][-1])  # the result is the last repetition
    assert e["n_significant_bonferroni"] == e["n_significant_bh"] == 3
    # baseline: same features, permuted membership -> no signal
    assert e["baseline"]["n_reps"] == 3 and e["baseline"]["mean_auc"] < 0.7
    # 200 + 200 records, 20 % held out per repetition: 40 + 40 evaluated
    assert (r.n_members, r.n_nonmembers) == (40, 40)
    lo, hi = e["null_auc_3sd_range"]
    assert lo < 0.5 < hi and hi == pytest.approx(0.5 + 3 * np.sqrt(81 / (12 * 1600)))
    json.dumps(r.to_dict(), allow_nan=False)


@pytest.mark.parametrize("features", ["sorted_correct", "proba_label"])
def test_worst_case_label_aware_features(memorizing, features):
    r = WorstCaseMembership(n_reps=2, features=features, attack_model=SMALL_RF, n_dummy_reps=0,
                            random_state=1).run(memorizing)
    assert r.auc > 0.75 and r.extra["mean_auc"] > 0.75 and "baseline" not in r.extra


def test_worst_case_sorted_probabilities_see_nothing_of_a_one_hot_model(memorizing):
    # members and non-members both get one-hot outputs: identical sorted vectors, constant score
    r = WorstCaseMembership(n_reps=2, features="sorted", attack_model=SMALL_RF, n_dummy_reps=0,
                            random_state=0).run(memorizing)
    assert r.auc == 0.5 and r.auc_pvalue == 1.0 and r.advantage == 0.0
    assert r.extra["n_significant"] == 0


def test_worst_case_constant_model_is_chance(constant):
    r = WorstCaseMembership(n_reps=2, test_prop=0.5, attack_model=SMALL_RF,
                            random_state=0).run(constant)
    assert (r.n_members, r.n_nonmembers) == (500, 500)
    assert abs(r.auc - 0.5) < 0.1 and abs(r.extra["mean_auc"] - 0.5) < 0.1
    assert abs(r.extra["baseline"]["mean_auc"] - 0.5) < 0.1


def test_worst_case_probabilities_only_deterministic_and_parallel(memorizing):
    kw = dict(n_reps=2, attack_model=SMALL_RF, random_state=4)
    a = WorstCaseMembership(**kw).run(memorizing)
    b = WorstCaseMembership(**kw, n_jobs=2).run(_proba_only(memorizing))
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.extra == b.extra


def test_worst_case_unbalanced_keeps_all_records():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 2, 300)
    model = LogisticRegression().fit(X[:200], y[:200])
    t = Target(model, X[:200], y[:200], X[200:], y[200:])
    r = WorstCaseMembership(n_reps=1, balance=False, attack_model=SMALL_RF, n_dummy_reps=0,
                            random_state=0).run(t)
    assert (r.extra["n_members"], r.extra["n_nonmembers"]) == (200, 100)
    assert (r.n_members, r.n_nonmembers) == (40, 20)  # stratified 20 % of each


def test_n_significant_by_hand():
    # m = 10, alpha = 0.05: raw p <= 0.05 -> 5; Bonferroni p <= 0.005 -> 1;
    # BH: p_(k) <= k * 0.005 holds for k = 1 (0.001), 2 (0.008 <= 0.01), fails from k = 3 on
    p = [0.042, 0.001, 0.008, 0.039, 0.041, 0.06, 0.074, 0.205, 0.212, 0.216]
    assert n_significant(p, 0.05) == 5
    assert n_significant(p, 0.05, "bonferroni") == 1
    assert n_significant(p, 0.05, "bh") == 2
    # BH step-up: a later p below its line rescues the earlier ones
    assert n_significant([0.02, 0.02, 0.02], 0.05, "bh") == 3
    assert n_significant([], 0.05, "bh") == 0
    with pytest.raises(InputError, match="method"):
        n_significant(p, 0.05, "holm")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_reps=0), "n_reps"),
        (dict(test_prop=0.0), "test_prop"),
        (dict(features="raw"), "features"),
        (dict(attack_model="nn"), "attack_model"),
        (dict(n_dummy_reps=-1), "n_dummy_reps"),
        (dict(p_thresh=5), "p_thresh"),
        (dict(balance="yes"), "balance"),
    ],
)
def test_worst_case_bad_parameters(memorizing, kwargs, match):
    with pytest.raises(InputError, match=match):
        WorstCaseMembership(**kwargs).run(memorizing)


def test_worst_case_too_few_records():
    p = np.array([[0.9, 0.1], [0.2, 0.8]])
    t = Target(proba_train=p, y_train=[0, 1], proba_test=p[:1], y_test=[0])
    with pytest.raises(InputError, match="too few records"):
        WorstCaseMembership().run(t)
