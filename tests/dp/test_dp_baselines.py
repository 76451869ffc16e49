"""DP baselines over diffprivlib (forest, logistic regression) and Opacus (DP-SGD MLP)."""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from anonml._errors import InputError, PrivacyViolationError
from anonml.dp._logistic import clip_rows


def _diffprivlib():
    """Skip when diffprivlib is missing or cannot be imported with this scikit-learn."""
    import importlib.util

    if importlib.util.find_spec("diffprivlib") is None:
        pytest.skip("diffprivlib is not installed (pip install 'anonml[dp]')")
    from anonml.dp._diffprivlib import import_diffprivlib

    try:
        return import_diffprivlib()
    except InputError as exc:  # pragma: no cover - depends on the installed versions
        pytest.skip(str(exc))


def _threshold_data(n: int, seed: int, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Uniform rows in [0, 1]^d labelled by x0 > 0.5 (separable, one relevant feature)."""
    X = np.random.default_rng(seed).random((n, d))
    return X, (X[:, 0] > 0.5).astype(int)


def _linear_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Standard normal rows in R^2 labelled by the sign of x0 + x1 (separable)."""
    X = np.random.default_rng(seed).standard_normal((n, 2))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


# ---------------------------------------------------------------------------------------------
# import hygiene
# ---------------------------------------------------------------------------------------------
def test_import_anonml_dp_imports_no_optional_library():
    import subprocess

    code = (
        "import sys, anonml.dp as d; d.DPSGDClassifier; d.DPRandomForestClassifier; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'opacus', 'diffprivlib'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# diffprivlib adapters: fail closed
# ---------------------------------------------------------------------------------------------
def test_forest_refuses_without_bounds_or_classes_and_does_not_warn():
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(50, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning (e.g. PrivacyLeakWarning) would fail here
        with pytest.raises(InputError, match=r"^bounds is required: .*codebook"):
            DPRandomForestClassifier(1.0, classes=[0, 1]).fit(X, y)
        with pytest.raises(InputError, match=r"^classes is required"):
            DPRandomForestClassifier(1.0, bounds=(0, 1)).fit(X, y)


def test_logistic_refuses_without_data_norm_or_classes_and_does_not_warn():
    from anonml.dp import DPLogisticRegression

    X, y = _threshold_data(50, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"^data_norm is required"):
            DPLogisticRegression(1.0, classes=[0, 1]).fit(X, y)
        with pytest.raises(InputError, match=r"^classes is required"):
            DPLogisticRegression(1.0, data_norm=1.0).fit(X, y)


@pytest.mark.parametrize(
    "bounds, message",
    [
        ((1.0, 0.0), r"feature #0 have lower 1.0 > upper 0.0"),
        (([0, 0], [1, np.nan]), r"feature #1 are not finite"),
        (([0, 0, 0], [1, 1, 1]), r"one per feature"),
        ((0, 1, 2), r"pair \(lower, upper\)"),
        ((0, np.inf), r"not finite"),
    ],
)
def test_forest_bounds_are_validated(bounds, message):
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(40, 1)
    with pytest.raises(InputError, match=message):
        DPRandomForestClassifier(1.0, bounds=bounds, classes=[0, 1]).fit(X, y)


def test_labels_must_be_in_the_public_classes():
    from anonml.dp import DPLogisticRegression, DPRandomForestClassifier

    X, y = _threshold_data(40, 2)
    y = np.where(y == 1, "yes", "no")
    with pytest.raises(
        InputError, match=r"outside classes=\['no', 'maybe'\]|outside classes=\['maybe', 'no'\]"
    ):
        DPRandomForestClassifier(1.0, bounds=(0, 1), classes=["no", "maybe"]).fit(X, y)
    with pytest.raises(InputError, match=r"repeated labels"):
        DPLogisticRegression(1.0, data_norm=1.0, classes=["no", "yes", "no"]).fit(X, y)
    with pytest.raises(InputError, match=r"at least two labels"):
        DPLogisticRegression(1.0, data_norm=1.0, classes=["yes"]).fit(X, y)


@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), "1", None])
def test_bad_epsilon_is_refused(epsilon):
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(40, 3)
    with pytest.raises(InputError, match=r"^epsilon="):
        DPRandomForestClassifier(epsilon, bounds=(0, 1), classes=[0, 1]).fit(X, y)


def test_privacy_leak_warning_during_fit_becomes_an_error():
    dpl = _diffprivlib()
    from anonml.dp._diffprivlib import _fit_guarded

    def leaky_fit():
        warnings.warn(
            "Bounds have not been specified and will be calculated on the data",
            dpl.utils.PrivacyLeakWarning,
        )
        raise AssertionError("the fit must stop at the warning")

    with pytest.raises(PrivacyViolationError, match=r"privacy leak during fit \(Bounds have not"):
        _fit_guarded(dpl, leaky_fit)


# ---------------------------------------------------------------------------------------------
# diffprivlib adapters: behaviour
# ---------------------------------------------------------------------------------------------
def test_forest_clips_to_the_bounds():
    """diffprivlib clips features to the bounds: data beyond them fits as the clipped data."""
    _diffprivlib()
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(400, 4)
    X_wide = X * 3.0 - 1.0  # in [-1, 2]
    est = DPRandomForestClassifier(
        1.0, bounds=(-0.5, 1.5), classes=[0, 1], max_depth=4, random_state=7
    )
    a = clone(est).fit(X_wide, y).predict_proba(X_wide)
    b = clone(est).fit(np.clip(X_wide, -0.5, 1.5), y).predict_proba(X_wide)
    np.testing.assert_array_equal(a, b)


def test_logistic_clips_rows_to_data_norm():
    _diffprivlib()
    from anonml.dp import DPLogisticRegression

    X, y = _linear_data(300, 5)
    est = DPLogisticRegression(1.0, data_norm=0.5, classes=[0, 1], random_state=3)
    a = clone(est).fit(X, y)
    b = clone(est).fit(clip_rows(X, 0.5), y)
    # equal up to rounding: clipping an already clipped row rescales it by 1 ± 1 ulp
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-9, atol=1e-12)


def test_forest_at_large_epsilon_approaches_the_non_private_forest():
    _diffprivlib()
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(4000, 6, d=1)  # one feature: every random split is on it
    X_test, y_test = _threshold_data(2000, 16, d=1)
    reference = (
        RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y).score(X_test, y_test)
    )
    dp = DPRandomForestClassifier(1e4, bounds=(0, 1), classes=[0, 1], max_depth=8).fit(X, y)
    # random splits of depth 8 resolve the threshold to about 1/100: reference 1.0, DP forest
    # 0.98-1.0 over 100 seeds (at ε = 0.01 it averages 0.65)
    assert dp.score(X_test, y_test) >= reference - 0.05
    assert dp.epsilon_spent_ == 1e4
    assert dp.predict_proba(X_test).shape == (2000, 2)


def test_logistic_at_large_epsilon_approaches_sklearn():
    _diffprivlib()
    from anonml.dp import DPLogisticRegression

    X, y = _linear_data(3000, 8)
    X_test, y_test = _linear_data(2000, 18)
    norm = 5.0  # public: rows of a 2-D standard normal rarely exceed it
    reference = LogisticRegression(C=1.0).fit(X, y).score(X_test, y_test)
    dp = DPLogisticRegression(1e4, data_norm=norm, classes=[0, 1]).fit(X, y)
    assert dp.score(X_test, y_test) >= reference - 0.02
    assert dp.epsilon_spent_ == 1e4
    p = dp.predict_proba(X_test)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(dp.predict(X_test), dp.classes_[(p[:, 1] > 0.5).astype(int)])


def test_logistic_multiclass_one_vs_rest():
    _diffprivlib()
    from anonml.dp import DPLogisticRegression

    X, _ = _linear_data(1500, 9)
    y = np.digitize(X[:, 0], [-0.5, 0.5])  # three bands
    dp = DPLogisticRegression(1e4, data_norm=5.0, classes=[0, 1, 2], C=100.0).fit(X, y)
    assert dp.coef_.shape == (3, 2) and dp.intercept_.shape == (3,)
    p = dp.predict_proba(X)
    assert p.shape == (1500, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert dp.score(X, y) >= 0.8


def test_diffprivlib_adapters_are_deterministic_and_clone_cleanly():
    _diffprivlib()
    from anonml.dp import DPLogisticRegression, DPRandomForestClassifier

    X, y = _threshold_data(500, 10)
    bounds = (np.zeros(2), np.ones(2))
    for est in (
        DPRandomForestClassifier(0.5, bounds=bounds, classes=[0, 1], random_state=11),
        DPLogisticRegression(0.5, data_norm=1.5, classes=[0, 1], random_state=11),
    ):
        params = est.get_params()
        a = est.fit(X, y).predict_proba(X)
        assert est.get_params() == params and est.get_params()["classes"] == [0, 1]
        assert est.get_params()["random_state"] == 11
        b = clone(est).fit(X, y).predict_proba(X)
        np.testing.assert_array_equal(a, b)
        assert not hasattr(clone(est), "classes_")


@pytest.mark.parametrize("labels", [("no", "yes"), (1, 2), (-1.5, 7.0)])
def test_forest_learns_labels_that_are_not_0_to_k_minus_1(labels):
    """Regression: diffprivlib 0.6.6 alone labels every leaf at random for such labels."""
    _diffprivlib()
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(4000, 13, d=1)
    X_test, y_test = _threshold_data(2000, 14, d=1)
    lab = np.asarray(labels)
    dp = DPRandomForestClassifier(
        1e4, bounds=(0, 1), classes=list(labels), max_depth=8, random_state=0
    ).fit(X, lab[y])
    assert np.mean(dp.predict(X_test) == lab[y_test]) >= 0.95  # random leaf labels: about 0.5


def test_forest_with_string_labels_and_public_class_absent_from_y():
    _diffprivlib()
    from anonml.dp import DPRandomForestClassifier

    X, y = _threshold_data(300, 12)
    labels = np.where(y == 1, ">50K", "<=50K")
    dp = DPRandomForestClassifier(
        5.0, bounds=(0, 1), classes=[">50K", "<=50K", "unknown"], random_state=0
    ).fit(X, labels)
    assert dp.classes_.tolist() == ["<=50K", ">50K", "unknown"]
    assert dp.predict_proba(X).shape == (300, 3)
    assert set(dp.predict(X)) <= {"<=50K", ">50K", "unknown"}


# ---------------------------------------------------------------------------------------------
# DP-SGD (Opacus)
# ---------------------------------------------------------------------------------------------
@pytest.fixture()
def torch_one_thread():
    """One torch thread: on a shared 2-core machine two threads spin against each other."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(before)


_TINY = {"hidden_layer_sizes": (8,), "learning_rate": 1e-2, "batch_size": 32}


def test_dpsgd_parameter_checks():
    from anonml.dp import DPSGDClassifier

    X, y = _linear_data(40, 0)
    with pytest.raises(InputError, match=r"exactly one of epsilon .* or noise_multiplier"):
        DPSGDClassifier(classes=[0, 1]).fit(X, y)
    with pytest.raises(InputError, match=r"exactly one of epsilon"):
        DPSGDClassifier(epsilon=1.0, noise_multiplier=1.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(InputError, match=r"^classes is required"):
        DPSGDClassifier(epsilon=1.0).fit(X, y)
    with pytest.raises(InputError, match=r"^delta="):
        DPSGDClassifier(epsilon=1.0, delta=0.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(InputError, match=r"activation='sigmoid' is not one of tanh, relu"):
        DPSGDClassifier(epsilon=1.0, classes=[0, 1], activation="sigmoid").fit(X, y)
    with pytest.raises(InputError, match=r"hidden_layer_sizes"):
        DPSGDClassifier(epsilon=1.0, classes=[0, 1], hidden_layer_sizes=(8, 0)).fit(X, y)
    with pytest.raises(InputError, match=r"accountant='gdp'"):
        DPSGDClassifier(epsilon=1.0, classes=[0, 1], accountant="gdp").fit(X, y)


def test_dpsgd_at_large_epsilon_approaches_its_non_private_twin(torch_one_thread):
    from anonml.dp import DPSGDClassifier, MLPTorchClassifier

    X, y = _linear_data(800, 20)
    X_test, y_test = _linear_data(1000, 21)
    twin = MLPTorchClassifier(epochs=4, random_state=0, **_TINY).fit(X, y)
    dp = DPSGDClassifier(
        epsilon=1e3, classes=[0, 1], accountant="rdp", epochs=4, random_state=0, **_TINY
    ).fit(X, y)
    assert twin.score(X_test, y_test) >= 0.9
    assert dp.score(X_test, y_test) >= twin.score(X_test, y_test) - 0.05
    assert dp.epsilon_spent_ <= 1e3 * 1.01
    assert dp.noise_multiplier_ < 0.5
    assert dp.n_steps_ == twin.n_steps_ == 4 * math.ceil(800 / 32)
    assert dp.sample_rate_ == pytest.approx(1 / math.ceil(800 / 32))


def test_dpsgd_spends_at_most_the_target_epsilon_prv(torch_one_thread):
    from anonml.dp import DPSGDClassifier

    X, y = _linear_data(500, 22)
    dp = DPSGDClassifier(
        epsilon=2.0, delta=1e-4, classes=[0, 1], epochs=2, random_state=1, **_TINY
    ).fit(X, y)
    assert 1.5 < dp.epsilon_spent_ <= 2.0 + 0.01  # calibrated to the target, not far below it
    p = dp.predict_proba(X)
    assert p.shape == (500, 2) and np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)


def test_dpsgd_noise_multiplier_epsilon_matches_the_rdp_accountant(torch_one_thread):
    from opacus.accountants import RDPAccountant

    from anonml.dp import DPSGDClassifier

    X, y = _linear_data(320, 23)
    dp = DPSGDClassifier(
        noise_multiplier=1.1,
        delta=1e-5,
        classes=[0, 1],
        accountant="rdp",
        epochs=3,
        random_state=2,
        **_TINY,
    ).fit(X, y)
    q, steps = 1 / math.ceil(320 / 32), 3 * math.ceil(320 / 32)
    acc = RDPAccountant()
    acc.history = [(1.1, q, steps)]
    assert dp.noise_multiplier_ == 1.1
    assert dp.epsilon_spent_ == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)


def test_torch_models_are_deterministic_and_leave_global_state_alone(torch_one_thread):
    torch = torch_one_thread
    from anonml.dp import DPSGDClassifier, MLPTorchClassifier

    X, y = _linear_data(200, 24)
    y = np.where(y == 1, "b", "a")
    for est in (
        MLPTorchClassifier(epochs=2, random_state=5, **_TINY),
        DPSGDClassifier(
            noise_multiplier=1.0, classes=["a", "b"], epochs=2, random_state=5, **_TINY
        ),
    ):
        params = est.get_params()
        rng_state = torch.random.get_rng_state().clone()
        a = est.fit(X, y).predict_proba(X)
        assert torch.equal(torch.random.get_rng_state(), rng_state)  # no global seeding/draws
        assert torch.get_num_threads() == 1
        assert est.get_params() == params
        b = clone(est).fit(X, y).predict_proba(X)
        np.testing.assert_array_equal(a, b)
        assert est.classes_.tolist() == ["a", "b"]
        assert set(est.predict(X)) <= {"a", "b"}
        c = clone(est).set_params(random_state=6).fit(X, y).predict_proba(X)
        assert not np.array_equal(a, c)


def test_dpsgd_survives_empty_poisson_batches(torch_one_thread):
    """q = 1/5 on 5 rows: about a third of the 30 steps draw an empty batch."""
    from anonml.dp import DPSGDClassifier

    X, y = _linear_data(5, 25)
    y[:2] = [0, 1]
    dp = DPSGDClassifier(
        noise_multiplier=1.0,
        classes=[0, 1],
        hidden_layer_sizes=(4,),
        batch_size=1,
        epochs=6,
        random_state=0,
    ).fit(X, y)
    assert dp.n_steps_ == 30
    for p in dp.model_.parameters():
        assert torch_one_thread.isfinite(p).all()
    assert np.all(np.isfinite(dp.predict_proba(X)))


def test_ghost_clipping_equals_per_example_gradients(torch_one_thread, monkeypatch):
    """Opacus's ghost clipping and materialized per-example gradients give the same model."""
    import anonml.dp._dpsgd as dpsgd

    X, y = _linear_data(256, 26)
    est = dpsgd.DPSGDClassifier(
        noise_multiplier=0.8, classes=[0, 1], epochs=2, random_state=3, **_TINY
    )
    ghost = clone(est).fit(X, y).predict_proba(X)
    monkeypatch.setattr(dpsgd, "_GRAD_SAMPLE_MODE", "hooks")
    hooks = clone(est).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(ghost, hooks, atol=1e-5)
