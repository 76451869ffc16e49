"""The attack-table experiment (Goldsteen et al. 2022, Tables 1 and 2) on small slices.

The full runs are in docs/results/attack_table1.md and attack_table2.md, not in tests.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier

from anonml._errors import InputError
from anonml.experiments import attack_tables as at

#: small attack models keep the test runs short (the attacks' defaults grow 100 trees)
_SMALL = {
    "mia_model": RandomForestClassifier(n_estimators=10),
    "worstcase_model": RandomForestClassifier(n_estimators=10, max_depth=5, min_samples_leaf=10),
}

_PROB_COLS = (
    "train_acc",
    "test_acc",
    "mia_accuracy",
    "mia_precision",
    "mia_recall",
    "mia_auc",
    "mia_tpr_fpr0_1pct",
    "lira_auc",
    "lira_tpr_fpr0_1pct",
    "lira_tpr_fpr1pct",
    "worstcase_auc",
)


@pytest.fixture(scope="module")
def adult_small():
    return at.load_data("adult", n_train=500, n_test=300)


# -- data ----------------------------------------------------------------------------------------
def test_loan_split_is_fixed_stratified_and_imputed():
    d = at.load_data("loan")
    assert (len(d.X_train), len(d.X_test)) == (31_828, 7_958)  # 80/20 of 39,786
    assert d.X_train["revol_util"].notna().all() and d.X_test["revol_util"].notna().all()
    # stratified: the charged-off share is the same on both sides to within one row
    n_pos = int(d.y_train.sum() + d.y_test.sum())
    assert abs(d.y_train.mean() - n_pos / 39_786) < 1 / len(d.X_test)
    assert abs(d.y_test.mean() - n_pos / 39_786) < 1 / len(d.X_test)
    assert d.qi == list(at.load_data("loan", n_train=50).qi) and len(d.qi) == 11
    again = at.load_data("loan", n_train=100)
    pd.testing.assert_frame_equal(again.X_train, d.X_train.iloc[:100])


def test_adult_split_and_labels():
    d = at.load_data("adult", n_train=1000)
    from anonml.datasets import load_adult

    X_tr, X_te, _y_tr, y_te = load_adult().train_test_split()
    assert len(d.X_test) == len(X_te) == 16_281 and len(d.X_train) == 1000
    np.testing.assert_array_equal(d.y_test, (y_te == ">50K").to_numpy().astype(int))
    assert d.qi == list(X_tr.columns)  # every feature is a QI on Adult
    # public category lists cover both parts
    for c in d.categorical:
        assert set(X_te[c]) <= set(d.categories[c]) and set(X_tr[c]) <= set(d.categories[c])


def test_unknown_dataset_and_bad_sizes():
    with pytest.raises(InputError, match="unknown dataset 'mnist'"):
        at.load_data("mnist")
    with pytest.raises(InputError, match="n_train"):
        at.load_data("nursery", n_train=5)


# -- public encoders -------------------------------------------------------------------------------
def test_public_range_scaler_by_hand():
    s = at.PublicRangeScaler([0.0, 0.0], [10.0, math.e**2 - 1], [False, True]).fit(np.zeros((1, 2)))
    X = np.array([[5.0, math.e - 1], [-3.0, 0.0], [20.0, 1e9]])
    np.testing.assert_allclose(s.transform(X), [[0.5, 0.5], [0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(InputError, match="2 columns"):
        at.PublicRangeScaler([0.0, 0.0], [1.0, 1.0]).fit(np.zeros((3, 3)))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-1e7, 1e7, allow_nan=False), min_size=1, max_size=30),
    st.floats(-100, 100),
    st.floats(0.5, 1e4),
    st.booleans(),
)
def test_public_range_scaler_is_monotone_into_unit_interval(values, lo, width, log):
    lo = max(lo, 0.0) if log else lo
    s = at.PublicRangeScaler([lo], [lo + width], [log])
    x = np.sort(np.asarray(values))[:, None]
    out = s.fit(x).transform(x)[:, 0]
    assert np.all((out >= 0) & (out <= 1))
    assert np.all(np.diff(out) >= -1e-12)
    # learns nothing: fitted on other rows, the same transform
    np.testing.assert_array_equal(clone(s).fit(x[:1] * 3 + 7).transform(x)[:, 0], out)


def test_dp_encoders_do_not_read_the_training_rows(adult_small):
    d = adult_small
    X = d.X_test.iloc[:50]
    for kind in ("dp-rf", "dp-sgd"):
        a = at.make_model(kind, d, 0, epsilon=1.0).named_steps["encode"].fit(d.X_train.iloc[:100])
        b = at.make_model(kind, d, 0, epsilon=1.0).named_steps["encode"].fit(d.X_train.iloc[300:])
        np.testing.assert_array_equal(a.transform(X), b.transform(X))
        out = a.transform(X)
        lo, hi = at._dp_rf_bounds(d) if kind == "dp-rf" else (0.0, 1.0)
        assert np.all(out >= np.asarray(lo)) and np.all(out <= np.asarray(hi))


def test_network_encoder_maps_loan_zip_codes_to_regions():
    d = at.load_data("loan", n_train=200, n_test=50)
    enc = at._encoder(d, "onehot_std").fit(d.X_train)
    narrow = sum(len(d.categories[c]) for c in d.categorical if c != "zip_code")
    regions = {z[0] for z in d.categories["zip_code"]}
    assert len(regions) == 10 and len(d.categories["zip_code"]) > 800
    assert enc.transform(d.X_test).shape == (50, narrow + len(regions) + len(d.numeric))
    # the forests keep every zip code (one ordinal column per categorical feature)
    assert at._encoder(d, "ordinal").fit(d.X_train).transform(d.X_test).shape == (50, 15)


def test_make_model_errors(adult_small):
    with pytest.raises(InputError, match="unknown model 'svm'"):
        at.make_model("svm", adult_small, 0)
    with pytest.raises(InputError, match="needs epsilon"):
        at.make_model("dp-rf", adult_small, 0)


# -- the anonymize-then-train estimator ------------------------------------------------------------
def test_anonymize_then_train_is_the_manual_procedure(adult_small):
    from anonml.anonymize import AccuracyGuidedAnonymizer

    d = adult_small
    base = at.make_model("rf", d, 3, rf_trees=10)
    est = at.AnonymizeThenTrain(base, k=40, quasi_identifiers=d.qi, random_state=3)
    assert "estimator__model__random_state" in est.get_params(deep=True)  # shadows can reseed it
    est.fit(d.X_train, d.y_train)
    assert est.anonymizer_.min_class_size_ >= 40
    # by hand: train, anonymize along the predictions, retrain
    first = clone(base).fit(d.X_train, d.y_train)
    ag = AccuracyGuidedAnonymizer(k=40, quasi_identifiers=d.qi, random_state=3, **at.AG_PAPER)
    X_anon = ag.fit_transform(d.X_train, first.predict(d.X_train))
    final = clone(base).fit(X_anon, d.y_train)
    np.testing.assert_array_equal(est.predict_proba(d.X_test), final.predict_proba(d.X_test))
    with pytest.raises(InputError, match="estimator="):
        at.AnonymizeThenTrain(k=5).fit(d.X_train, d.y_train)
    unfitted = clone(est)
    assert not hasattr(unfitted, "estimator_") and unfitted.get_params()["k"] == 40


# -- Table 1 -----------------------------------------------------------------------------------------
def test_table1_small_run_and_outputs(tmp_path):
    res = at.run_table1(
        datasets=("adult",),
        models=("rf",),
        ks=(100,),
        seeds=(0,),
        n_jobs=1,
        n_train=500,
        n_test=300,
        lira_shadows=2,
        worstcase_reps=2,
        rf_trees=10,
        dp_rf_epsilons=(1.0,),
        dp_rf_trees=5,
        **_SMALL,
    )
    assert list(zip(res.defense, res.k)) == [("none", 0), ("ag", 100), ("dp", 0)]
    ag = res[res.defense == "ag"].iloc[0]
    assert ag.min_class_size >= 100 and 1 <= ag.n_groups <= 5
    dp = res[res.defense == "dp"].iloc[0]
    assert dp.epsilon == 1.0 and dp.epsilon_spent == pytest.approx(1.0)
    for col in _PROB_COLS:
        assert res[col].between(0, 1).all(), col
    assert (res.lira_n_shadow == 2).all()
    y_test = at.load_data("adult", n_train=500, n_test=300).y_test
    assert res.test_majority_acc.iloc[0] == pytest.approx(max(y_test.mean(), 1 - y_test.mean()))
    # the undefended forest memorizes its training rows: train accuracy above test accuracy
    base = res[res.defense == "none"].iloc[0]
    assert base.train_acc > base.test_acc
    summary = at.summarize_table1(res)
    assert list(summary.setting) == ["undefended", "AG k=100", "DP forest ε=1"]
    np.testing.assert_allclose(summary.mia_auc_mean, res.mia_auc)
    assert (summary.n_seeds == 1).all() and summary.test_acc_std.isna().all()
    paths = at.write_outputs(res, None, tmp_path, header="hdr")
    assert pd.read_csv(paths["table1_raw"]).shape[0] == len(res)
    text = paths["table1_markdown"].read_text()
    assert text.count("| AG k=100 |") == 1  # the paper has no k=100 row to compare with
    assert "hdr" in text and "Comparison with the paper" in text
    assert "| adult | rf | undefended | 0.98 | " in text


def _network_rows(**kw):
    return at.run_table1(
        datasets=("loan",),
        models=("nn",),
        ks=(50,),
        seeds=(1,),
        n_jobs=1,
        n_train=300,
        n_test=200,
        attacks=("blackbox", "lira"),
        nn_epochs=1,
        **_SMALL,
        **kw,
    )


def test_table1_networks_small():
    pytest.importorskip("torch")
    res = _network_rows(dpsgd_epsilon=None)
    assert list(res.defense) == ["none", "ag"]
    assert res.note.str.contains("LiRA skipped for nn").all()
    assert "lira_auc" not in res.columns
    assert res.test_acc.between(0, 1).all() and (res.n_groups.dropna() <= 300 // 50).all()


@pytest.mark.slow  # Opacus start-up and its noise calibration
def test_table1_dpsgd_row():
    pytest.importorskip("torch")
    pytest.importorskip("opacus")
    res = _network_rows(dpsgd_epochs=1, dpsgd_seeds=(1,))
    assert list(res.defense) == ["none", "ag", "dp"]
    dp = res[res.defense == "dp"].iloc[0]
    assert dp.epsilon_spent <= 3.0 + 0.05 and dp.delta == 1e-5 and dp.noise_multiplier > 0
    assert _network_rows(dpsgd_epochs=1, dpsgd_seeds=(0,)).defense.tolist() == ["none", "ag"]


def test_table1_input_errors():
    with pytest.raises(InputError, match="models"):
        at.run_table1(models=("svm",))
    with pytest.raises(InputError, match="attacks"):
        at.run_table1(attacks=("oracle",))
    with pytest.raises(InputError, match="ks"):
        at.run_table1(ks=(1,))


def _fake_results():
    """Two seeds of a hand-made Table 1 (no computation)."""
    rows = []
    for seed, (b, a50, a200) in enumerate([(0.60, 0.51, 0.49), (0.62, 0.49, 0.47)]):
        rows += [
            {
                "dataset": "adult",
                "model": "rf",
                "defense": "none",
                "k": 0,
                "epsilon": math.nan,
                "seed": seed,
                "train_acc": 0.98,
                "test_acc": 0.84 + 0.02 * seed,
                "mia_accuracy": b,
            },
            {
                "dataset": "adult",
                "model": "rf",
                "defense": "ag",
                "k": 50,
                "epsilon": math.nan,
                "seed": seed,
                "train_acc": 0.85,
                "test_acc": 0.83,
                "mia_accuracy": a50,
            },
            {
                "dataset": "adult",
                "model": "rf",
                "defense": "ag",
                "k": 200,
                "epsilon": math.nan,
                "seed": seed,
                "train_acc": 0.83,
                "test_acc": 0.81,
                "mia_accuracy": a200,
            },
            {
                "dataset": "adult",
                "model": "rf",
                "defense": "dp",
                "k": 0,
                "epsilon": 10.0,
                "seed": seed,
                "train_acc": 0.78,
                "test_acc": 0.78,
                "mia_accuracy": 0.5,
            },
        ]
    return pd.DataFrame(rows).sample(frac=1, random_state=1)  # order must not matter


def test_summary_and_claims_by_hand():
    summary = at.summarize_table1(_fake_results())
    assert list(summary.setting) == ["undefended", "AG k=50", "AG k=200", "DP forest ε=10"]
    base = summary.iloc[0]
    assert base.mia_accuracy_mean == pytest.approx(0.61)
    assert base.mia_accuracy_std == pytest.approx(np.std([0.60, 0.62], ddof=1))
    assert base.test_acc_mean == pytest.approx(0.85)
    text = at.markdown_table1(summary)
    assert "| undefended | 0.980 ± 0.000 | 0.850 ± 0.014 | 0.610 ± 0.014 |" in text
    # AG k=50: attack 0.50 <= 0.52, test accuracy 0.83 vs 0.85: -2.0 points
    assert (
        "The smallest k with attack accuracy at most 0.52 (chance: 0.5) is 50, at a test accuracy change "
        "of -2.0 points."
    ) in text
    assert (
        "AG (k = 50, 200): attack accuracy 0.480-0.500; test accuracy change -4.0 to -2.0 points."
        in text
    )
    assert "DP forest ε=10: test accuracy 0.780 (-7.0 points), attack accuracy 0.500." in text
    assert (
        "| adult | rf | AG k=50 | 0.85 | 0.850 ± 0.000 | 0.83 | 0.830 ± 0.000 | 0.51 | 0.500 ± 0.014 |"
        in text
    )


# -- Table 2 -----------------------------------------------------------------------------------------
def test_table2_small_run(tmp_path):
    res = at.run_table2(seeds=(0,), k=50, n_jobs=1, n_train=600, n_test=300)
    assert list(res.defense) == ["none", "ag"]
    ag = res.iloc[1]
    assert ag.min_class_size >= 50 and ag.n_groups <= 600 // 50
    for col in (
        "test_acc",
        "attr_accuracy",
        "attr_precision",
        "attr_recall",
        "attr_baseline_accuracy",
        "attr_majority_accuracy",
        "arr_train_rate",
        "arr_test_rate",
    ):
        assert res[col].between(0, 1).all(), col
    # ARR is the ratio of the two rates when the test rate is positive
    ok = res.arr_test_rate > 0
    np.testing.assert_allclose(res.arr[ok], (res.arr_train_rate / res.arr_test_rate)[ok])
    paths = at.write_outputs(None, res, tmp_path)
    text = paths["table2_markdown"].read_text()
    assert "| AG k=50 |" in text and "attribute `social`" in text
    with pytest.raises(InputError, match="attack_feature 'salary'"):
        at.run_table2(seeds=(0,), attack_feature="salary", n_train=100, n_test=50)
