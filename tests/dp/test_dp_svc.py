"""The ε-DP support-vector classifier (random Fourier features + output perturbation)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.svm import SVC

from anonml._errors import InputError
from anonml.dp import DPSVC
from anonml.dp._svc import (
    TOL_FRACTION,
    _objective,
    fit_huber_svm,
    huber_hinge,
    rff_features,
    scale_to_unit,
)


def _circle(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform rows in [0, 1]^2 labelled by a disc (separable, not linearly)."""
    X = np.random.default_rng(seed).random((n, 2))
    return X, (((X - 0.5) ** 2).sum(axis=1) < 0.1).astype(int)


def _model(eps=1.0, **kw):
    params = dict(bounds=(0.0, 1.0), classes=[0, 1], gamma=10.0, n_components=100, lam=1e-3,
                  random_state=0)
    params.update(kw)
    return DPSVC(eps, **params)


# ---------------------------------------------------------------------------------------------
# fail closed, one line each
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,needle", [
    (dict(bounds=None), "bounds is required"),
    (dict(classes=None), "classes is required"),
    (dict(epsilon=0.0), "epsilon=0.0"),
    (dict(epsilon=float("inf")), "epsilon=inf"),
    (dict(epsilon="1"), "epsilon='1' must be a positive finite number"),
    (dict(gamma="scale"), "gamma='scale'"),
    (dict(gamma=-1.0), "gamma=-1.0"),
    (dict(n_components=0), "n_components=0"),
    (dict(n_components=2.5), "n_components=2.5"),
    (dict(lam=0.0), "lam=0.0"),
    (dict(bounds=(0.0, 1.0, 2.0)), "bounds must be a pair"),
    (dict(bounds=([0.0, 0.0], [1.0, -1.0])), "feature #1 have lower"),
    (dict(classes=[0, 2]), "label outside classes"),
])
def test_bad_privacy_parameters_are_one_line_errors_before_any_fit(kwargs, needle):
    X, y = _circle(50, 0)
    params = dict(bounds=(0.0, 1.0), classes=[0, 1])
    params.update(kwargs)
    eps = params.pop("epsilon", 1.0)
    with pytest.raises(InputError) as err:
        DPSVC(eps, **params).fit(X, y)
    assert needle in str(err.value) and "\n" not in str(err.value)
    assert not hasattr(DPSVC(eps, **params), "coef_")


def test_missing_bounds_fail_closed_before_the_data_is_read():
    with pytest.raises(InputError, match="bounds is required"):
        DPSVC(1.0, classes=[0, 1]).fit("not even a table", None)


def test_non_finite_rows_are_refused_naming_the_column():
    X, y = _circle(40, 0)
    X[3, 1] = np.nan
    with pytest.raises(InputError, match="column #1 has missing"):
        _model().fit(X, y)


# ---------------------------------------------------------------------------------------------
# the mechanism
# ---------------------------------------------------------------------------------------------
def test_feature_rows_have_unit_norm_whatever_the_input():
    rng = np.random.default_rng(1)
    U = scale_to_unit(rng.normal(scale=100, size=(200, 3)), np.zeros(3), np.ones(3))
    assert U.min() >= 0 and U.max() <= 1
    Z = rff_features(U, rng.normal(size=(3, 40)))
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-12)


def test_huber_hinge_is_one_lipschitz_and_its_derivative_is_exact():
    m = np.linspace(-3, 3, 601)
    loss, grad = huber_hinge(m)
    assert np.abs(grad).max() <= 1.0
    np.testing.assert_allclose(np.gradient(loss, m)[1:-1], grad[1:-1], atol=1e-2)
    assert loss[m > 1.5].max() == 0.0 and np.allclose(loss[m < 0.5], 1 - m[m < 0.5])


def test_solver_reaches_the_public_gradient_tolerance():
    X, y = _circle(300, 2)
    Z = rff_features(X, np.random.default_rng(0).normal(0, np.sqrt(20), (2, 50)))
    s = np.where(y == 1, 1.0, -1.0)
    tol = TOL_FRACTION / 300
    w = fit_huber_svm(Z, s, 1e-3, tol)
    assert np.linalg.norm(_objective(w, Z, s, 1e-3)[1]) <= tol


def test_noise_scale_is_the_sensitivity_over_epsilon_and_shrinks_with_epsilon():
    X, y = _circle(400, 0)
    m1, m10 = _model(1.0).fit(X, y), _model(10.0).fit(X, y)
    assert m1.sensitivity_ == pytest.approx(2 * (1 / 400 + TOL_FRACTION / 400) / 1e-3)
    assert m1.noise_scale_ == pytest.approx(m1.sensitivity_ / 1.0)
    assert m10.noise_scale_ == pytest.approx(m1.noise_scale_ / 10)
    # the realised noise: the same seed draws the same frequencies and noise direction, so the
    # difference from an almost noiseless fit is the noise; its norm is Gamma(2D + 1, b)
    # distributed, mean (2D + 1) b
    small = dict(n_components=20, lam=1e-2)
    for eps in (1.0, 10.0):
        norms = []
        for seed in range(25):
            fit = _model(eps, random_state=seed, **small).fit(X, y)
            exact = _model(1e12, random_state=seed, **small).fit(X, y)
            norms.append(np.linalg.norm(np.hstack([fit.coef_ - exact.coef_,
                                                   (fit.intercept_ - exact.intercept_)[:, None]])))
        assert np.mean(norms) == pytest.approx(41 * fit.noise_scale_, rel=0.1)


def test_multiclass_splits_epsilon_over_the_one_vs_rest_problems():
    X, _ = _circle(300, 0)
    y = np.digitize(X[:, 0], [0.33, 0.66])
    m = _model(3.0, classes=[0, 1, 2]).fit(X, y)
    assert m.coef_.shape == (3, 200) and m.intercept_.shape == (3,)
    assert m.noise_scale_ == pytest.approx(3 * m.sensitivity_ / 3.0)
    assert m.decision_function(X).shape == (300, 3)
    np.testing.assert_allclose(m.predict_proba(X).sum(axis=1), 1.0)
    big = _model(1e9, classes=[0, 1, 2]).fit(X, y)
    assert np.mean(big.predict(X) == y) > 0.9


def test_same_random_state_same_model_other_state_other_model():
    X, y = _circle(200, 0)
    a, b, c = _model(random_state=7).fit(X, y), _model(random_state=7).fit(X, y), \
        _model(random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.random_weights_, b.random_weights_)
    assert not np.array_equal(a.coef_, c.coef_)
    np.testing.assert_array_equal(clone(a).fit(X, y).coef_, a.coef_)


def test_large_epsilon_is_close_to_the_non_private_rbf_svc():
    X, y = _circle(2000, 0)
    Xt, yt = _circle(2000, 1)
    svc = np.mean(SVC(gamma=10.0).fit(X, y).predict(Xt) == yt)
    dp = np.mean(_model(1e4).fit(X, y).predict(Xt) == yt)
    low = np.mean(_model(0.05).fit(X, y).predict(Xt) == yt)
    assert svc > 0.97 and dp >= svc - 0.02
    assert low < dp - 0.1  # at a small budget the noise shows


def test_outputs_and_string_labels():
    X, y = _circle(300, 0)
    labels = np.where(y == 1, "in", "out")
    m = _model(1e6, classes=["out", "in"]).fit(X, labels)
    assert list(m.classes_) == ["in", "out"]
    p = m.predict_proba(X)
    assert p.shape == (300, 2) and np.allclose(p.sum(axis=1), 1)
    np.testing.assert_array_equal(m.predict(X), m.classes_[p.argmax(axis=1)])
    assert np.mean(m.predict(X) == labels) > 0.95
    with pytest.raises(InputError, match="X has 3 features, but DPSVC is expecting 2"):
        m.predict(np.zeros((2, 3)))


def test_the_fitted_model_holds_no_training_record():
    X, y = _circle(300, 0)
    m = _model().fit(X, y)
    for name, value in vars(m).items():
        arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
        assert 300 not in arr.shape, name


def test_scikit_learn_estimator_checks_that_apply():
    """The contract checks that apply. Not these: the checks that fit labels outside the public
    ``classes`` (refused by design), the accuracy checks (the noise), and a column-vector y (one
    line, not a warning and a ravel)."""
    from sklearn.utils import estimator_checks as ec

    est = DPSVC(1.0, bounds=(-10.0, 10.0), classes=[0, 1, 2], random_state=0)
    for check in (ec.check_no_attributes_set_in_init, ec.check_get_params_invariance,
                  ec.check_set_params, ec.check_estimators_unfitted,
                  ec.check_parameters_default_constructible, ec.check_dont_overwrite_parameters,
                  ec.check_fit_idempotent, ec.check_n_features_in,
                  ec.check_estimators_overwrite_params, ec.check_complex_data,
                  ec.check_estimators_empty_data_messages, ec.check_estimator_sparse_array,
                  ec.check_estimator_sparse_matrix, ec.check_n_features_in_after_fitting,
                  ec.check_fit2d_predict1d, ec.check_requires_y_none,
                  ec.check_classifier_data_not_an_array):
        check("DPSVC", clone(est))


def test_the_frontier_offers_it_as_the_dp_baseline_of_support_vector_machines():
    import pandas as pd
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from anonml._frontier._estimators import dp_baseline, family

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.random(300), "c": rng.choice(["u", "v"], 300)})
    y = np.where((X["a"] > 0.5) == (X["c"] == "u"), "yes", "no")
    assert family(make_pipeline(StandardScaler(), SVC())) == "svm"
    assert family(_model()) == "svm"
    model, name = dp_baseline("svm", X[:200], X[200:], y, 1e6, random_state=0)
    assert name.startswith("DP SVC")
    fitted = clone(model).fit(X[:200], y[:200])
    assert fitted[-1].bounds_[0].shape == (3,) and np.mean(fitted.predict(X[200:]) == y[200:]) > 0.8


def test_replacing_one_record_moves_the_solution_by_at_most_the_sensitivity():
    """The bound the noise is calibrated to, on neighbouring datasets (one row replaced by an
    extreme one with the other label), for the exact solutions (ε so large the noise is ~0)."""
    X, y = _circle(200, 3)
    ratios = []
    for i, x_new in enumerate(([0.0, 0.0], [1.0, 1.0], [0.5, 0.5], [0.5, 0.0])):
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = x_new, 1 - y[i]
        a = _model(1e15, lam=1e-2).fit(X, y)
        b = _model(1e15, lam=1e-2).fit(X2, y2)
        diff = np.hstack([a.coef_ - b.coef_, (a.intercept_ - b.intercept_)[:, None]])
        ratios.append(np.linalg.norm(diff) / a.sensitivity_)
    assert max(ratios) <= 1.0
    assert max(ratios) > 0.1  # the bound is not vacuous here (0.06 to 0.22 measured)
