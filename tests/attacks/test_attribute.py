"""Attribute inference attacks: black-box (ART / Goldsteen et al.), baseline, worst case (SACRO-ML)."""

from __future__ import annotations

import json
import math
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import make_column_transformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError
from anonml.attacks._attribute import (
    AttributeAttackResult,
    AttributeInferenceBaseline,
    AttributeInferenceBlackBox,
)
from anonml.attacks._attribute_worst_case import WorstCaseAttribute, risk_ratio_test
from anonml.attacks._core import Target


# ---------------------------------------------------------------------------------------------
# hand-made models (fixed functions of the record, not trained)
# ---------------------------------------------------------------------------------------------
class TableModel:
    """P(class 1) looked up from (a, b); classes [0, 1]."""

    classes_ = np.array([0, 1])
    P1: ClassVar[dict] = {("x", 0): 0.9, ("y", 0): 0.8, ("z", 0): 0.3,
                          ("x", 1): 0.6, ("y", 1): 0.6, ("z", 1): 0.2}  # fmt: skip

    def __init__(self):
        self.calls = []

    def predict_proba(self, X):
        self.calls.append(len(X))
        p1 = np.array([self.P1[(a, int(b))] for a, b in zip(X["a"], X["b"])])
        return np.column_stack([1 - p1, p1])


class BumpModel:
    """P(class 1) = 0.9 when |c - 50| <= 2, else 0.3 (continuous feature c)."""

    classes_ = np.array([0, 1])

    def predict_proba(self, X):
        c = np.asarray(X["c"], dtype=float)
        p1 = np.where(np.abs(c - 50) <= 2, 0.9, 0.3)
        return np.column_stack([1 - p1, p1])


def _table_target(y_train=None, y_test=None):
    X_train = pd.DataFrame({"a": ["x", "x", "z", "y", "x"], "b": [0, 0, 0, 0, 1]})
    X_test = pd.DataFrame({"a": ["y", "y", "z", "x"], "b": [0, 1, 1, 1]})
    model = TableModel()
    y_train = np.array([1, 1, 0, 1, 1]) if y_train is None else y_train
    y_test = np.array([1, 1, 0, 1]) if y_test is None else y_test
    return Target(model, X_train, y_train, X_test, y_test), model


# ---------------------------------------------------------------------------------------------
# worst case: hand-computed counts
# ---------------------------------------------------------------------------------------------
def test_worst_case_categorical_hand_computed():
    # Completions of a (x, y, z) with the reference = predicted class on the real record:
    #   b=0: x .9 (cls 1), y .8 (cls 1), z .7 (cls 0); b=1: x .6 (1), y .6 (1), z .8 (0)
    # train (x,0)(x,0) -> unique best x, correct; (z,0) -> only z consistent, correct;
    #       (y,0) -> infers x, wrong; (x,1) -> tie x/y, no inference  => 3 risky, 4 inferred
    # test  (y,0) wrong; (y,1) tie; (z,1) correct; (x,1) tie        => 1 risky, 2 inferred
    target, model = _table_target()
    res = WorstCaseAttribute(features=["a"]).run(target)
    r = res["a"]
    assert (r.kind, r.n_candidates, r.n_train, r.n_test) == ("categorical", 3, 5, 4)
    assert (r.train_risky, r.test_risky, r.train_inferred, r.test_inferred) == (3, 1, 4, 2)
    assert r.train_rate == pytest.approx(3 / 5) and r.test_rate == pytest.approx(1 / 4)
    assert r.arr == pytest.approx((3 / 5) / (1 / 4))
    # Fisher one-sided: X ~ Hypergeom(N=9, K=4 risky, n=5 train), P(X >= 3) = (40 + 5) / 126
    assert r.pvalue == pytest.approx(45 / 126)
    se = math.sqrt(1 / 3 - 1 / 5 + 1 / 1 - 1 / 4)
    z = 1.959963984540054
    assert r.arr_ci_low == pytest.approx(2.4 * math.exp(-z * se))
    assert r.arr_ci_high == pytest.approx(2.4 * math.exp(z * se))
    assert r.baseline_train == pytest.approx(3 / 5) and r.baseline_test == pytest.approx(2 / 4)
    # all 9 records x 3 candidates asked in a single batch (plus the 2 calls for the real records)
    assert model.calls[-1] == 27


def test_worst_case_threshold_and_true_label():
    target, _ = _table_target()
    # threshold 0.75 drops the (z, 0) inference (confidence 0.7)
    r = WorstCaseAttribute(features=["a"], confidence_threshold=0.75).run(target)["a"]
    assert (r.train_risky, r.test_risky) == (2, 1)
    assert r.arr == pytest.approx((2 / 5) / (1 / 4))
    # true labels: first training record labelled 0 -> only z consistent -> inferred z, wrong
    target, _ = _table_target(y_train=np.array([0, 1, 0, 1, 1]))
    r = WorstCaseAttribute(features=["a"], label="true").run(target)["a"]
    assert (r.train_risky, r.train_inferred) == (2, 4)


def test_worst_case_batches_do_not_change_counts():
    target, model = _table_target()
    full = WorstCaseAttribute(features=["a"]).run(target)["a"]
    small = WorstCaseAttribute(features=["a"], batch_rows=4).run(target)["a"]
    assert (small.train_risky, small.test_risky) == (full.train_risky, full.test_risky)
    assert max(model.calls[-5:]) <= 4  # one record (3 completions) per call


def test_worst_case_continuous_hand_computed():
    # grid 0..100 step 1; at c in [48, 52] class 1 has 0.9 -> [lo, hi] = [48, 52] for records
    # predicted 1; records predicted 0 see class 0 at 0.7 on most of the grid -> [0, 100].
    c_train = [50.0, 49.5, 48.0, 10.0, 0.0]
    c_test = [100.0, 51.0, 30.0]
    X_train, X_test = pd.DataFrame({"c": c_train}), pd.DataFrame({"c": c_test})
    target = Target(BumpModel(), X_train, np.zeros(5, int), X_test, np.zeros(3, int))
    r = WorstCaseAttribute(n_grid=101).run(target)["c"]
    # 50: band [45, 55] ok; 49.5: [44.55, 54.45] ok; 48: [43.2, 52.8] ok; 10, 0: no
    # test 51: [45.9, 56.1] ok; 100, 30: no
    assert (r.kind, r.n_candidates, r.train_risky, r.test_risky) == ("continuous", 101, 3, 1)
    assert r.train_inferred is None
    assert r.arr == pytest.approx((3 / 5) / (1 / 3))
    # a 3 % band is narrower than [48, 52] for every record: 50 -> [48.5, 51.5],
    # 49.5 -> [48.015, 50.985], 48 -> [46.56, 49.44], 51 -> [49.47, 52.53]
    r = WorstCaseAttribute(n_grid=101, protection_limit=0.03).run(target)["c"]
    assert (r.train_risky, r.test_risky) == (0, 0)
    assert math.isnan(r.arr) and r.pvalue == 1.0


def test_worst_case_to_dict_is_json_and_has_no_records():
    target, _ = _table_target()
    res = WorstCaseAttribute().run(target)
    d = res.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert d["attack"] == "attribute-worst-case"
    assert [a["feature"] for a in d["attributes"]] == ["a", "b"]
    assert res["b"].kind == "continuous"
    assert '"x"' not in text  # no attribute values / records, only counts
    frame = res.to_frame()
    assert list(frame["feature"]) == ["a", "b"] and frame.shape[0] == 2


def test_worst_case_numpy_input():
    rng = np.random.default_rng(0)
    X_train = np.column_stack([rng.integers(0, 3, 60), rng.normal(size=60)])
    X_test = np.column_stack([rng.integers(0, 3, 60), rng.normal(size=60)])
    y_train, y_test = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
    model = DecisionTreeClassifier(random_state=0).fit(X_train, y_train)
    res = WorstCaseAttribute(features=[0], categorical_features=[0], label="true").run(
        Target(model, X_train, y_train, X_test, y_test)
    )
    r = res[0]
    assert r.kind == "categorical" and r.n_candidates == 3
    assert 0 <= r.train_risky <= r.train_inferred <= 60


# ---------------------------------------------------------------------------------------------
# worst case: behaviour on real models
# ---------------------------------------------------------------------------------------------
def _random_label_data(n, rng):
    X = pd.DataFrame({"a": rng.choice(["p", "q"], n), "d": rng.normal(size=n)})
    return X, rng.integers(0, 2, n)


@pytest.mark.parametrize("seed", [0, 1])
def test_worst_case_memorizing_tree_has_arr_above_one(seed):
    # Random labels, unique records (continuous d): a deep tree memorizes its training set.
    # With the true label as reference, a member's true completion is consistent and the
    # other one lands in a leaf of random label: at risk ~1/2. A non-member's real record is
    # predicted its own label only half the time: at risk ~1/4. ARR ~ 2.
    rng = np.random.default_rng(seed)
    (X_tr, y_tr), (X_te, y_te) = _random_label_data(1500, rng), _random_label_data(1500, rng)
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["a"]), remainder="passthrough"),
        DecisionTreeClassifier(random_state=seed),
    ).fit(X_tr, y_tr)
    r = WorstCaseAttribute(features=["a"], label="true").run(Target(pipe, X_tr, y_tr, X_te, y_te))["a"]
    # (over 80 seeds: ARR >= 1.69, p <= 2e-11, lower 95 % bound >= 1.44)
    assert r.arr > 1.3 and r.pvalue < 1e-6
    assert r.arr_ci_low > 1.1


def test_worst_case_constant_classifier_has_no_risk():
    rng = np.random.default_rng(3)
    (X_tr, y_tr), (X_te, y_te) = _random_label_data(200, rng), _random_label_data(200, rng)
    dummy = DummyClassifier(strategy="prior").fit(X_tr, y_tr)
    res = WorstCaseAttribute().run(Target(dummy, X_tr, y_tr, X_te, y_te))
    for r in res.attributes:  # every completion ties: no inference, no risk, on both sides
        assert (r.train_risky, r.test_risky) == (0, 0)
        assert math.isnan(r.arr) and r.pvalue == 1.0
    assert (res["a"].train_inferred, res["a"].test_inferred) == (0, 0)
    assert res.significant() == []


def test_worst_case_model_not_trained_on_the_data_has_arr_one():
    # a fixed function of the record: risk depends on the record only, so a test set that is a
    # shuffled copy of the training set has exactly the same rate
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 300), "b": rng.integers(0, 2, 300)})
    perm = rng.permutation(300)
    target = Target(TableModel(), X, np.ones(300, int), X.iloc[perm], np.ones(300, int))
    r = WorstCaseAttribute(features=["a"]).run(target)["a"]
    assert r.train_risky == r.test_risky > 0
    assert r.arr == pytest.approx(1.0) and r.pvalue > 0.5


def test_worst_case_subsample_and_determinism():
    rng = np.random.default_rng(7)
    (X_tr, y_tr), (X_te, y_te) = _random_label_data(300, rng), _random_label_data(200, rng)
    tree = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["a"]), remainder="passthrough"),
        DecisionTreeClassifier(random_state=0),
    ).fit(X_tr, y_tr)
    target = Target(tree, X_tr, y_tr, X_te, y_te)
    atk = WorstCaseAttribute(features=["a"], max_records=50, random_state=11)
    r1, r2 = atk.run(target)["a"], atk.run(target)["a"]
    assert (r1.n_train, r1.n_test) == (50, 50)
    assert (r1.train_risky, r1.test_risky) == (r2.train_risky, r2.test_risky)
    assert atk.max_records == 50 and atk.random_state == 11  # parameters untouched


# ---------------------------------------------------------------------------------------------
# risk ratio statistics
# ---------------------------------------------------------------------------------------------
def test_risk_ratio_edge_cases():
    out = risk_ratio_test(5, 10, 0, 10)
    assert out["arr"] == math.inf and math.isnan(out["ci_low"])
    # P(X >= 5), X ~ Hypergeom(N=20, K=5, n=10) = C(10,5)/C(20,5)
    assert out["pvalue"] == pytest.approx(252 / 15504)
    out = risk_ratio_test(0, 10, 0, 10)
    assert math.isnan(out["arr"]) and out["pvalue"] == 1.0
    with pytest.raises(InputError, match="must satisfy"):
        risk_ratio_test(11, 10, 0, 10)


@settings(max_examples=60, deadline=None)
@given(
    n1=st.integers(1, 60), n2=st.integers(1, 60), f1=st.floats(0, 1), f2=st.floats(0, 1)
)
def test_risk_ratio_properties(n1, n2, f1, f2):
    a, b = round(f1 * n1), round(f2 * n2)
    out = risk_ratio_test(a, n1, b, n2)
    assert 0.0 <= out["pvalue"] <= 1.0
    if b > 0:
        assert out["arr"] == pytest.approx((a / n1) / (b / n2))
    if a > 0 and b > 0:
        assert out["ci_low"] <= out["arr"] <= out["ci_high"]
        swapped = risk_ratio_test(b, n2, a, n1)
        assert out["arr"] * swapped["arr"] == pytest.approx(1.0)
    if a < n1:  # one more training record at risk is more evidence, never less
        assert risk_ratio_test(a + 1, n1, b, n2)["pvalue"] <= out["pvalue"] + 1e-12


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["x", "y", "z"]), st.integers(0, 1)), min_size=2, max_size=12
    ),
    split=st.integers(1, 11),
    threshold=st.sampled_from([0.0, 0.65, 0.85]),
)
def test_worst_case_counts_match_per_record_definition(rows, split, threshold):
    split = min(split, len(rows) - 1)
    X = pd.DataFrame(rows, columns=["a", "b"])
    X_tr, X_te = X.iloc[:split], X.iloc[split:]
    target = Target(TableModel(), X_tr, np.ones(len(X_tr), int), X_te, np.ones(len(X_te), int))
    r = WorstCaseAttribute(features=["a"], confidence_threshold=threshold).run(target)["a"]
    values = sorted(set(X["a"]))

    def at_risk(a, b):  # SACRO-ML's rule, one record at a time
        p1 = {v: TableModel.P1[(v, b)] for v in values}
        label = int(TableModel.P1[(a, b)] >= 0.5)
        conf = {v: max(p, 1 - p) for v, p in p1.items() if int(p >= 0.5) == label}
        best = max(conf.values())
        winners = [v for v, c in conf.items() if c == best]
        made = len(winners) == 1 and best >= threshold
        return made, made and winners[0] == a

    for part, risky, inferred in ((X_tr, r.train_risky, r.train_inferred),
                                  (X_te, r.test_risky, r.test_inferred)):
        expected = [at_risk(a, b) for a, b in zip(part["a"], part["b"])]
        assert inferred == sum(m for m, _ in expected)
        assert risky == sum(k for _, k in expected)


# ---------------------------------------------------------------------------------------------
# black-box attack and baseline
# ---------------------------------------------------------------------------------------------
def _nursery_like(n, rng):
    """Nursery-like table: `social` drives the class unless `health` overrides it."""
    social = rng.choice(["nonprob", "slightly_prob", "problematic"], n)
    health = rng.choice(["recommended", "priority", "not_recom"], n, p=[0.4, 0.4, 0.2])
    parents = rng.choice(["usual", "pretentious", "great_pret"], n)
    children = rng.choice(["1", "2", "3", "more"], n)
    cls = np.where(
        health == "not_recom", "not_recom",
        np.where(social == "problematic", "spec_prior",
                 np.where(social == "slightly_prob", "priority", "very_recom")),
    )
    noise = rng.random(n) < 0.05
    cls = np.where(noise, rng.choice(["priority", "spec_prior"], n), cls)
    X = pd.DataFrame({"parents": parents, "children": children, "social": social, "health": health})
    return X, pd.Series(cls, name="class")


def _small_rf():
    return RandomForestClassifier(n_estimators=25, random_state=0)


def _nursery_target(seed, n=1200):
    rng = np.random.default_rng(seed)
    (X_tr, y_tr), (X_te, y_te) = _nursery_like(n, rng), _nursery_like(n // 2, rng)
    cat = list(X_tr.columns)
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat)),
        DecisionTreeClassifier(random_state=seed),
    ).fit(X_tr, y_tr)
    return Target(pipe, X_tr, y_tr, X_te, y_te)


@pytest.mark.parametrize("seed", [0, 1])
def test_blackbox_on_nursery_like_beats_baseline_and_metrics_are_consistent(seed):
    target = _nursery_target(seed)
    kw = {"positive_value": "problematic", "attack_model": _small_rf(), "random_state": seed}
    res = AttributeInferenceBlackBox("social", **kw).run(target)
    base = AttributeInferenceBaseline("social", **kw).run(target)
    assert isinstance(res, AttributeAttackResult)
    assert res.values == ["nonprob", "problematic", "slightly_prob"]
    assert res.n_attack_train == 600 and res.n_evaluated == 600
    # the class reveals `social` except where health overrides it (~20 %): ~0.8 + 0.2/3
    assert res.accuracy > res.baseline_accuracy + 0.3
    assert res.accuracy > base.accuracy + 0.3  # the other features alone say nothing
    assert base.accuracy < base.baseline_accuracy + 0.15
    assert res.nonmember_accuracy > res.nonmember_baseline_accuracy + 0.3
    # metrics are those of the confusion matrix (rows true, columns predicted)
    cm = res.confusion
    assert cm.sum() == res.n_evaluated
    assert res.accuracy == pytest.approx(np.trace(cm) / cm.sum())
    pos = res.values.index("problematic")
    assert res.precision == pytest.approx(cm[pos, pos] / cm[:, pos].sum())
    assert res.recall == pytest.approx(cm[pos, pos] / cm[pos, :].sum())
    # the majority guess
    maj = res.values.index(res.baseline_value)
    assert res.baseline_accuracy == pytest.approx(cm[maj, :].sum() / cm.sum())
    assert res.baseline_recall == (1.0 if maj == pos else 0.0)
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["accuracy_gain"] == pytest.approx(res.accuracy - res.baseline_accuracy)


def test_blackbox_label_output_and_macro_average():
    target = _nursery_target(2, n=600)
    res = AttributeInferenceBlackBox(
        "social", target_output="label", attack_model=_small_rf(), random_state=0
    ).run(target)
    assert res.extra["target_output"] == "label"
    cm = res.confusion
    present = [i for i in range(3) if cm[i, :].sum() or cm[:, i].sum()]
    prec = np.mean([cm[i, i] / cm[:, i].sum() if cm[:, i].sum() else 0.0 for i in present])
    rec = np.mean([cm[i, i] / cm[i, :].sum() if cm[i, :].sum() else 0.0 for i in present])
    assert res.precision == pytest.approx(prec) and res.recall == pytest.approx(rec)


def test_blackbox_constant_classifier_no_better_than_baseline():
    # the attribute is independent of everything and the target answers the same everywhere:
    # the attack can do no better than the majority guess (tolerance 0.1, about 5 standard
    # errors of the difference with 1000 evaluated records)
    rng = np.random.default_rng(0)
    (X_tr, y_tr), (X_te, y_te) = _random_label_data(2000, rng), _random_label_data(1000, rng)
    dummy = DummyClassifier(strategy="prior").fit(X_tr, y_tr)
    res = AttributeInferenceBlackBox(
        "a", positive_value="p", attack_model=_small_rf(), random_state=1
    ).run(
        Target(dummy, X_tr, y_tr, X_te, y_te)
    )
    assert res.accuracy <= res.baseline_accuracy + 0.1
    assert res.nonmember_accuracy <= res.nonmember_baseline_accuracy + 0.1


def test_blackbox_probabilities_only_target_and_determinism():
    target = _nursery_target(3, n=400)
    p_tr, p_te = target.proba("train"), target.proba("test")
    bare = Target(None, target.X_train, target.y_train, target.X_test, target.y_test,
                  proba_train=p_tr, proba_test=p_te)
    rf = RandomForestClassifier(n_estimators=20, random_state=0)
    a = AttributeInferenceBlackBox("social", attack_model=rf, random_state=4).run(target)
    b = AttributeInferenceBlackBox("social", attack_model=rf, random_state=4).run(bare)
    assert a.accuracy == b.accuracy and (a.confusion == b.confusion).all()
    assert not hasattr(rf, "estimators_")  # the given model is cloned, never fitted


def test_blackbox_true_label_feature():
    target = _nursery_target(4, n=400)
    res = AttributeInferenceBaseline(
        "social", use_true_label=True, attack_model=_small_rf(), random_state=0
    ).run(target)
    assert res.extra["use_true_label"] is True
    assert res.accuracy > res.baseline_accuracy + 0.3  # the class reveals social


# ---------------------------------------------------------------------------------------------
# errors: one line, naming the value and the fix
# ---------------------------------------------------------------------------------------------
def _one_line(exc_info):
    msg = str(exc_info.value)
    assert "\n" not in msg
    return msg


def test_blackbox_errors():
    target = _nursery_target(0, n=200)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("socail").run(target)
    assert "'socail'" in _one_line(e) and "pass one of" in str(e.value) and "social" in str(e.value)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social", positive_value="bad").run(target)
    assert "'bad'" in _one_line(e) and "'problematic'" in str(e.value)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social", attack_train_ratio=1.5).run(target)
    assert "attack_train_ratio=1.5" in _one_line(e)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social", target_output="logits").run(target)
    assert "'logits'" in _one_line(e)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social", attack_model=object()).run(target)
    assert "fit/predict" in _one_line(e)
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social").run("not a target")
    assert "Target(" in _one_line(e)
    X = target.X_train.copy()
    X.loc[X.index[0], "social"] = None
    with pytest.raises(InputError) as e:
        AttributeInferenceBlackBox("social").run(Target(target.model, X, target.y_train,
                                                        target.X_test, target.y_test))
    assert "missing" in _one_line(e)


def test_worst_case_errors():
    target, _ = _table_target()
    with pytest.raises(InputError) as e:
        WorstCaseAttribute(features=["nope"]).run(target)
    assert "'nope'" in _one_line(e)
    with pytest.raises(InputError) as e:
        WorstCaseAttribute(label="guess").run(target)
    assert "'guess'" in _one_line(e)
    with pytest.raises(InputError) as e:
        WorstCaseAttribute(n_grid=1).run(target)
    assert "n_grid=1" in _one_line(e)
    with pytest.raises(InputError) as e:
        WorstCaseAttribute(confidence_threshold=2).run(target)
    assert "confidence_threshold=2" in _one_line(e)
    bare = Target(None, target.X_train, target.y_train, target.X_test, target.y_test,
                  proba_train=np.full((5, 2), 0.5), proba_test=np.full((4, 2), 0.5))
    with pytest.raises(InputError) as e:
        WorstCaseAttribute().run(bare)
    assert "pass the fitted model" in _one_line(e)
    # every check that can fail is made by check(), before any model call
    for bad in ({"features": ["nope"]}, {"label": "guess"},
                {"categorical_features": ["nope"]}):
        with pytest.raises(InputError):
            WorstCaseAttribute(**bad).check(target)


class MissingModel:
    """P(class 1) = 0.9 when c is missing (an imputing model that learnt "missing"), 0.9 when
    |c - 50| <= 2, else 0.3."""

    classes_ = np.array([0, 1])

    def predict_proba(self, X):
        c = np.asarray(X["c"], dtype=float)
        p1 = np.where(np.isnan(c) | (np.abs(c - 50) <= 2), 0.9, 0.3)
        return np.column_stack([1 - p1, p1])


class OnlyMissingModel(MissingModel):
    """P(class 1) = 0.9 only when c is missing."""

    def predict_proba(self, X):
        c = np.asarray(X["c"], dtype=float)
        p1 = np.where(np.isnan(c), 0.9, 0.3)
        return np.column_stack([1 - p1, p1])


def test_worst_case_continuous_missing_is_a_completion_of_its_own():
    # a model that handles missing values: the attack handles them too, not refuses them
    X_tr = pd.DataFrame({"c": [np.nan, np.nan, 50.0, 10.0]})
    X_te = pd.DataFrame({"c": [np.nan, 10.0, 90.0, 50.0]})
    y = np.ones(4, int)
    res = WorstCaseAttribute(n_grid=101, label="true").run(
        Target(OnlyMissingModel(), X_tr, y, X_te, y))
    r = res["c"]
    assert r.n_candidates == 102  # the grid and "missing"
    # only "missing" reaches the peak: the records whose value is missing are singled out
    assert (r.train_risky, r.test_risky) == (2, 1)
    # "missing" and the grid's 50 tie at the peak: nobody is singled out
    r = WorstCaseAttribute(n_grid=101, label="true").run(
        Target(MissingModel(), X_tr, y, X_te, y))["c"]
    assert (r.train_risky, r.test_risky) == (0, 0)


def test_worst_case_infinite_continuous_is_skipped_with_the_reason():
    X = pd.DataFrame({"c": [1.0, np.inf, 3.0], "d": ["a", "b", "a"]})
    t = Target(BumpModel(), X, np.zeros(3, int), X, np.zeros(3, int))
    attack = WorstCaseAttribute(n_grid=5)
    assert "infinite" in attack.check(t)["c"]
    res = attack.run(t)
    assert [r.feature for r in res.attributes] == ["d"]
    assert "2 infinite values," in res.skipped["c"]  # one in each set and res.to_dict()["skipped"] == res.skipped
