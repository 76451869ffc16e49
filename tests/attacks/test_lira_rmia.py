"""LiRA (Carlini et al., 2022) and RMIA (Zarifzadeh et al., 2024): shadow-model membership attacks.

Margins used below
------------------
* A fully grown decision tree on random labels fits every member (p = 1 for the true label)
  and is right on a non-member with probability 1/2, with p = 1 as well. The best any attack
  can do is to rank all members above the wrong half of the non-members: AUC about 0.75. Both
  attacks reach 0.72-0.76 over seeds at n = 200 + 200; the test asks for > 0.65, about five
  standard deviations of the lucky-half share (sd sqrt(.25/200) = 0.035 on it, half on AUC).
* A random forest without bootstrap on random labels gives graded probabilities out of sample
  and 1 in sample: LiRA reaches 0.99-1.0; the test asks for > 0.9.
* A constant classifier (DummyClassifier "uniform") gives every record the same score, so the
  AUC is exactly 0.5. The class-prior dummy depends on the training labels only through the
  class shares; over 15 seeds at n = 1000 + 1000 the AUCs were 0.50 +- 0.01 (LiRA) and
  0.509 +- 0.005 (RMIA, whose ratio picks up the tiny class-share difference between members
  and non-members); the test allows 0.06, six null standard deviations.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.attacks import RMIA, LiRA, Target
from anonml.attacks._lira import lira_scores
from anonml.attacks._rmia import fit_offline_a, reference_probability, rmia_counts
from anonml.attacks._shadow import (
    PROB_EPS,
    _aligned_proba,
    _seed_params,
    balanced_membership,
    true_class_scores,
)


def _random_label_target(model, n=200, d=5, seed=0):
    """Members and non-members with random labels: only memorisation can reveal membership."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, d))
    y = rng.integers(0, 2, 2 * n)
    model.fit(X[:n], y[:n])
    return Target(model, X[:n], y[:n], X[n:], y[n:])


# ---------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(n_records=st.integers(1, 40), n_models=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_balanced_membership_counts(n_records, n_models, seed):
    M = balanced_membership(n_records, n_models, np.random.default_rng(seed))
    assert M.shape == (n_models, n_records) and M.dtype == bool
    per_record = M.sum(axis=0)
    if n_models % 2 == 0:
        assert np.all(per_record == n_models // 2)
    else:
        assert set(np.unique(per_record)) <= {n_models // 2, n_models // 2 + 1}
    per_model = M.sum(axis=1)
    assert set(np.unique(per_model)) <= {n_records // 2, n_records - n_records // 2}
    # complementary pairs
    for j in range(n_models // 2):
        assert np.all(M[2 * j] ^ M[2 * j + 1])


def test_balanced_membership_is_random_per_pair():
    M = balanced_membership(1000, 8, np.random.default_rng(0))
    # different pairs draw different halves (identical halves have probability ~ 0)
    assert not np.array_equal(M[0], M[2])
    # a record is IN model 0 and model 2 about a quarter of the time
    assert abs(np.mean(M[0] & M[2]) - 0.25) < 0.06


def test_true_class_scores_hand_values():
    proba = np.array([
        [0.2, 0.8, 0.0],
        [1.0, 0.0, 0.0],
        [0.1, 0.3, 0.6],
        [0.99999, 0.00001, 0.0],
        [0.0, 1.0, 0.0],
    ])
    codes = np.array([1, 0, 2, 0, 0])
    p, phi = true_class_scores(proba, codes)
    np.testing.assert_allclose(p, [0.8, 1.0, 0.6, 0.99999, 0.0])
    expected = [
        np.log(0.8 / 0.2),
        np.log(1.0) - np.log(PROB_EPS),        # others sum to 0: clipped
        np.log(0.6 / 0.4),
        np.log(0.99999) - np.log(0.00001),     # computed from the others, not 1 - p
        np.log(PROB_EPS) - np.log(1.0),
    ]
    np.testing.assert_allclose(phi, expected, rtol=1e-9)
    _, phi2 = true_class_scores(proba, codes, eps=0.01)
    np.testing.assert_allclose(phi2[[1, 3, 4]], [np.log(100), np.log(0.99999 / 0.01),
                                                 np.log(0.01)])


def test_aligned_proba_maps_missing_classes():
    classes = np.array(["a", "b", "c"])
    X = np.arange(12.0).reshape(6, 2)
    model = DecisionTreeClassifier(random_state=0).fit(X, np.array(["a", "c"] * 3))
    P = _aligned_proba(model, X, classes)
    assert P.shape == (6, 3)
    np.testing.assert_array_equal(P[:, 1], 0.0)                  # "b" never seen
    np.testing.assert_allclose(P[:, [0, 2]], model.predict_proba(X))


def test_seed_params_finds_nested_random_states():
    pipe = Pipeline([("enc", OneHotEncoder()), ("rf", RandomForestClassifier())])
    assert _seed_params(pipe) == ["rf__random_state"]
    assert _seed_params(DummyClassifier()) == ["random_state"]


def test_lira_scores_match_gaussian_formula():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(6, 4)) * 2
    in_mask = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0],
                        [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 1, 0]], dtype=bool)
    t = np.array([0.5, -1.0, 2.0, 0.0])
    scores, info = lira_scores(t, phi, in_mask, online=True)
    offline, _ = lira_scores(t, phi, in_mask, online=False)
    for i in range(4):
        pin, pout = phi[in_mask[:, i], i], phi[~in_mask[:, i], i]
        lr = (norm.logpdf(t[i], pin.mean(), pin.std(ddof=1))
              - norm.logpdf(t[i], pout.mean(), pout.std(ddof=1)))
        assert scores[i] == pytest.approx(lr, rel=1e-9)
        assert offline[i] == pytest.approx((t[i] - pout.mean()) / pout.std(ddof=1), rel=1e-9)
    # fixed variance: the pooled within-record variance of each side
    fixed, info = lira_scores(t, phi, in_mask, online=True, fix_variance=True)
    ss_in = sum(((phi[in_mask[:, i], i] - phi[in_mask[:, i], i].mean()) ** 2).sum()
                for i in range(4))
    assert info["var_in_pooled"] == pytest.approx(ss_in / (4 * 2))
    i = 0
    pin, pout = phi[in_mask[:, i], i], phi[~in_mask[:, i], i]
    expected = (norm.logpdf(t[i], pin.mean(), np.sqrt(info["var_in_pooled"]))
                - norm.logpdf(t[i], pout.mean(), np.sqrt(info["var_out_pooled"])))
    assert fixed[i] == pytest.approx(expected, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), shift=st.floats(-20, 20), fix=st.booleans(),
       online=st.booleans())
def test_lira_scores_translation_invariant(seed, shift, fix, online):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(4, 7))
    in_mask = balanced_membership(7, 4, rng)
    t = rng.normal(size=7)
    a, _ = lira_scores(t, phi, in_mask, online=online, fix_variance=fix)
    b, _ = lira_scores(t + shift, phi + shift, in_mask, online=online, fix_variance=fix)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite(a))


def test_lira_scores_constant_shadows_are_finite():
    phi = np.zeros((4, 3))
    in_mask = balanced_membership(3, 4, np.random.default_rng(0))
    scores, _ = lira_scores(np.zeros(3), phi, in_mask, online=True)
    np.testing.assert_array_equal(scores, 0.0)


@settings(max_examples=80, deadline=None)
@given(
    x=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), min_size=1, max_size=15),
    z=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), min_size=1, max_size=15),
    gamma=st.sampled_from([0.5, 1.0, 1.5, 2.0]),
)
def test_rmia_counts_equal_pairwise_definition(x, z, gamma):
    x, z = np.array(x), np.array(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = x[:, None] / z[None, :]                      # inf for z = 0, nan for 0/0
    brute = np.mean(np.nan_to_num(lr, nan=0.0) > gamma, axis=1)
    np.testing.assert_allclose(rmia_counts(x, z, gamma), brute)


def test_offline_a_recovers_linear_relation():
    rng = np.random.default_rng(0)
    p_out = rng.uniform(0, 1, size=200)
    a = 0.3
    p_in = a * p_out + (1 - a)
    M = balanced_membership(200, 4, rng)
    p_ref = np.where(M, p_in, p_out)
    assert fit_offline_a(p_ref, M) == pytest.approx(a)
    px = reference_probability(p_ref, M, online=False, offline_a=a)
    np.testing.assert_allclose(px, (p_in + p_out) / 2)    # the paper's motivation
    np.testing.assert_allclose(reference_probability(p_ref, M, online=True, offline_a=a),
                               (p_in + p_out) / 2)


# ---------------------------------------------------------------------------------------------
# attacks end to end
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_attacks_detect_a_memorising_tree(seed):
    target = _random_label_target(DecisionTreeClassifier(random_state=seed), seed=seed)
    attacks = [LiRA(8, random_state=seed, n_jobs=1),
               LiRA(8, online=False, random_state=seed, n_jobs=1),
               LiRA(8, fix_variance=True, random_state=seed, n_jobs=1),
               RMIA(4, random_state=seed, n_jobs=1),
               RMIA(2, online=False, random_state=seed, n_jobs=1)]
    for attack in attacks:
        result = attack.run(target)
        assert result.auc > 0.65, (attack, result)
        assert result.auc_pvalue < 1e-4
        assert result.labels.sum() == 200 and result.labels.size == 400
        assert result.extra["tpr_at_1%_fpr"] == result.tpr_at_fpr(0.01)
        assert "tpr_at_0.1%_fpr" in result.extra
        json.dumps(result.to_dict())                            # JSON-safe, no records


def test_lira_detects_a_memorising_forest():
    model = RandomForestClassifier(n_estimators=20, bootstrap=False, max_features=2,
                                   min_samples_leaf=1, random_state=0)
    target = _random_label_target(model, seed=3)
    result = LiRA(8, random_state=0, n_jobs=1).run(target)
    assert result.auc > 0.9
    assert result.tpr_at_fpr(0.01) > 0.3
    assert RMIA(4, random_state=0, n_jobs=1).run(target).auc > 0.85


def test_constant_classifier_gives_exactly_chance():
    target = _random_label_target(DummyClassifier(strategy="uniform"), n=150)
    for attack in (LiRA(4, random_state=0, n_jobs=1), LiRA(4, online=False, n_jobs=1),
                   RMIA(2, random_state=0, n_jobs=1), RMIA(2, online=False, n_jobs=1)):
        result = attack.run(target)
        assert result.auc == 0.5
        assert np.ptp(result.scores) == 0


def test_prior_classifier_stays_near_chance():
    target = _random_label_target(DummyClassifier(strategy="prior"), n=1000, d=2, seed=7)
    for attack in (LiRA(8, random_state=7, n_jobs=1), LiRA(8, online=False, random_state=7,
                                                           n_jobs=1),
                   RMIA(4, random_state=7, n_jobs=1)):
        assert abs(attack.run(target).auc - 0.5) < 0.06


def test_each_record_in_half_of_the_shadow_models():
    target = _random_label_target(DecisionTreeClassifier(random_state=0), n=101)
    lira = LiRA(8, random_state=0, n_jobs=1)
    lira.run(target)
    assert lira.membership_.shape == (8, 202)
    np.testing.assert_array_equal(lira.membership_.sum(axis=0), 4)
    np.testing.assert_array_equal(lira.membership_.sum(axis=1), 101)
    assert lira.shadow_phi_.shape == (8, 202)
    lira7 = LiRA(7, random_state=0, n_jobs=1)
    lira7.run(target)
    assert set(np.unique(lira7.membership_.sum(axis=0))) <= {3, 4}


def test_shadow_models_really_train_on_their_half():
    """A memorising tree fits its IN records: their true-class logit is at the upper clip."""
    target = _random_label_target(DecisionTreeClassifier(random_state=0), n=100)
    lira = LiRA(4, prob_clip=1e-3, random_state=0, n_jobs=1)
    lira.run(target)
    in_mask = lira.membership_[:, lira.evaluated_]
    top = np.log(1.0) - np.log(1e-3)
    assert lira.target_phi_.max() == pytest.approx(top)
    np.testing.assert_allclose(lira.shadow_phi_[in_mask], top)
    assert np.mean(lira.shadow_phi_[~in_mask] == top) < 0.8


def test_balanced_evaluation_when_sides_differ():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(500, 3)), rng.integers(0, 2, 500)
    model = DecisionTreeClassifier(random_state=0).fit(X[:350], y[:350])
    target = Target(model, X[:350], y[:350], X[350:], y[350:])
    for attack, n_models in ((LiRA(4, random_state=0, n_jobs=1), 4),
                             (RMIA(2, random_state=0, n_jobs=1), 2)):
        result = attack.run(target)
        assert result.labels.sum() == 150 and result.labels.size == 300
        assert attack.membership_.shape == (n_models, 500)      # shadows train on the whole pool
        assert np.all(attack.evaluated_[:150] < 350) and np.all(attack.evaluated_[150:] >= 350)
    assert np.array_equal(attack.population_, np.arange(350, 500))


def test_deterministic_with_random_state_and_across_n_jobs():
    target = _random_label_target(RandomForestClassifier(n_estimators=5), n=80, seed=2)
    a = LiRA(4, random_state=5, n_jobs=1).run(target)
    b = LiRA(4, random_state=5, n_jobs=1).run(target)
    np.testing.assert_array_equal(a.scores, b.scores)
    # two joblib workers (threads, the default; the models, seeds and chunks are the same with
    # processes, which the benchmark runs: starting them here would cost ~10 s)
    c = LiRA(4, random_state=5, n_jobs=2).run(target)
    np.testing.assert_array_equal(a.scores, c.scores)
    d = LiRA(4, random_state=6, n_jobs=1).run(target)
    assert not np.array_equal(a.scores, d.scores)
    r1 = RMIA(2, random_state=5, n_jobs=1).run(target)
    r2 = RMIA(2, random_state=5, n_jobs=1).run(target)
    np.testing.assert_array_equal(r1.scores, r2.scores)


def test_pipeline_on_dataframe_with_text_column():
    rng = np.random.default_rng(0)
    n = 240
    df = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "job": pd.Series(rng.choice(["a", "b", "c", "d"], n), dtype="str"),
        "hours": rng.normal(40, 10, n),
    })
    y = pd.Series(rng.choice(["<=50K", ">50K"], n))
    model = Pipeline([
        ("enc", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["job"])],
                                  remainder="passthrough")),
        ("tree", DecisionTreeClassifier(random_state=0)),
    ]).fit(df.iloc[:120], y.iloc[:120])
    target = Target(model, df.iloc[:120], y.iloc[:120], df.iloc[120:], y.iloc[120:])
    with warnings.catch_warnings():       # scikit-learn's config reaches the worker threads
        warnings.simplefilter("error")
        assert LiRA(4, random_state=0, n_jobs=2).run(target).auc > 0.6
    assert RMIA(2, random_state=0, n_jobs=1).run(target).auc > 0.6


def test_multiclass_with_a_rare_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = rng.integers(0, 3, 300)
    y[0] = 3                                         # one record of class 3: most shadows miss it
    model = DecisionTreeClassifier(random_state=0).fit(X[:150], y[:150])
    target = Target(model, X[:150], y[:150], X[150:], y[150:])
    result = LiRA(4, random_state=0, n_jobs=1).run(target)
    assert np.all(np.isfinite(result.scores)) and result.auc > 0.6
    assert np.all(np.isfinite(RMIA(2, random_state=0, n_jobs=1).run(target).scores))


# ---------------------------------------------------------------------------------------------
# errors and parameters
# ---------------------------------------------------------------------------------------------
def test_probabilities_only_target_is_refused():
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1, 1], size=50)
    y = rng.integers(0, 2, 50)
    X = rng.normal(size=(50, 3))
    target = Target(X_train=X, y_train=y, X_test=X, y_test=y, proba_train=p, proba_test=p)
    for attack in (LiRA(4), RMIA(2)):
        with pytest.raises(InputError, match="probabilities only.*shadow_estimator="):
            attack.run(target)
    # with an estimator to train the shadows it runs
    result = LiRA(4, shadow_estimator=DecisionTreeClassifier(), n_jobs=1,
                  random_state=0).run(target)
    assert result.labels.size == 100
    # without records nothing can be trained
    bare = Target(y_train=y, y_test=y, proba_train=p, proba_test=p)
    with pytest.raises(InputError, match="no X_train and X_test"):
        LiRA(4, shadow_estimator=DecisionTreeClassifier()).run(bare)


def test_parameters_stored_unchanged_and_validated():
    est = DecisionTreeClassifier()
    lira = LiRA(6, online=False, fix_variance=True, prob_clip=1e-3, shadow_estimator=est,
                n_jobs=2, random_state=3)
    assert lira.get_params(deep=False) == {"n_shadow": 6, "online": False, "fix_variance": True,
                                 "prob_clip": 1e-3, "shadow_estimator": est, "n_jobs": 2,
                                 "random_state": 3}
    rmia = RMIA(3, online=False, offline_a=0.3, gamma=2.0)
    assert rmia.get_params()["offline_a"] == 0.3 and rmia.get_params()["gamma"] == 2.0
    cloned = clone(lira)                                       # scikit-learn contract
    assert cloned.get_params(deep=False)["n_shadow"] == 6 and cloned is not lira
    target = _random_label_target(DecisionTreeClassifier(), n=30)
    for bad, match in ((LiRA(1), "n_shadow=1"), (LiRA(4, online="yes"), "online="),
                       (LiRA(4, n_jobs=0), "n_jobs=0"), (LiRA(4, prob_clip=0), "prob_clip=0"),
                       (LiRA(4, prob_clip=0.5), "prob_clip=0.5"), (RMIA(1), "n_reference=1"),
                       (RMIA(2, offline_a=1.5), "offline_a=1.5"), (RMIA(2, gamma=0), "gamma=0"),
                       (LiRA(4, random_state=-1), "random_state=-1")):
        with pytest.raises(InputError, match=match):
            bad.run(target)
    # run() records results without touching the parameters
    lira = LiRA(4, random_state=0, n_jobs=1)
    lira.run(target)
    assert lira.get_params()["random_state"] == 0 and lira.result_.attack == "lira-online"
    assert RMIA(2, online=False, random_state=0, n_jobs=1).run(target).attack == "rmia-offline"
