"""Tests of anonml.dp._input_perturbation: fail-closed checks, calibration and empirical privacy.

The statistical tests use fixed seeds but tolerances of several standard errors, so they hold
for any seed except with negligible probability.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from anonml._errors import AnonmlWarning, InputError
from anonml.dp._input_perturbation import InputPerturbation, randomized_response

Z = 5.0  # standard errors of sampling tolerance in the statistical checks


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    return msg


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(50, 3))
    y = (X.sum(axis=1) > 1.5).astype(int)
    return X, y


# -- fail closed ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bounds",
    [
        None,
        (0.0,),
        (0.0, 1.0, 2.0),
        (1.0, 0.0),
        (1.0, 1.0),
        (np.nan, 1.0),
        (0.0, np.inf),
        ([0.0, 0.0], [1.0, 1.0]),  # 2 values for 3 columns
        ([0.0, 0.0, 0.0], [1.0, np.nan, 1.0]),
        ([0.0, 2.0, 0.0], [1.0, 1.0, 1.0]),
        ("a", "b"),
        "01",
        5.0,
        {"lo": 0, "hi": 1},
    ],
)
def test_bad_bounds_fail_closed(data, bounds) -> None:
    X, y = data
    with pytest.raises(InputError) as exc:
        InputPerturbation(1.0, bounds=bounds, classes=[0, 1]).fit_resample(X, y)
    assert "bounds" in _one_line(exc)


def test_missing_bounds_fail_closed_and_never_read_from_data(data) -> None:
    X, y = data
    with pytest.raises(InputError, match="bounds is required") as exc:
        InputPerturbation(1.0, classes=[0, 1]).fit_resample(X, y)
    assert "(lo, hi)" in _one_line(exc)


def test_missing_classes_fail_closed(data) -> None:
    X, y = data
    with pytest.raises(InputError, match="classes") as exc:
        InputPerturbation(1.0, bounds=(0, 1)).fit_resample(X, y)
    assert "protect_labels=False" in _one_line(exc)


@pytest.mark.parametrize("classes", [[0], [0, 0, 1], "01", 3])
def test_bad_classes(data, classes) -> None:
    X, y = data
    with pytest.raises(InputError, match="classes") as exc:
        InputPerturbation(1.0, bounds=(0, 1), classes=classes).fit_resample(X, y)
    _one_line(exc)


def test_label_outside_public_classes(data) -> None:
    X, y = data
    with pytest.raises(InputError, match=r"not in classes") as exc:
        InputPerturbation(1.0, bounds=(0, 1), classes=[0, 2]).fit_resample(X, y)
    _one_line(exc)


@pytest.mark.parametrize("epsilon", [0, -1.0, np.nan, np.inf, "1", None, True])
def test_bad_epsilon(data, epsilon) -> None:
    X, y = data
    with pytest.raises(InputError, match="epsilon") as exc:
        InputPerturbation(epsilon, bounds=(0, 1), classes=[0, 1]).fit_resample(X, y)
    _one_line(exc)
    with pytest.raises(InputError, match="epsilon"):
        randomized_response(y, [0, 1], epsilon, 0)


@pytest.mark.parametrize("share", [0, 1, 1.5, -0.1, np.nan, "0.1", True])
def test_bad_label_share(data, share) -> None:
    X, y = data
    with pytest.raises(InputError, match="label_share") as exc:
        InputPerturbation(1.0, bounds=(0, 1), classes=[0, 1], label_share=share).fit_resample(
            X, y
        )
    _one_line(exc)


def test_bad_tables(data) -> None:
    X, y = data
    ip = InputPerturbation(1.0, bounds=(0, 1), classes=[0, 1])
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(city="x")
    with pytest.raises(InputError, match="column 'city'") as exc:
        ip.fit_resample(frame, y)
    _one_line(exc)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(InputError, match="missing"):
        ip.fit_resample(X_nan, y)
    with pytest.raises(InputError, match="rows"):
        ip.fit_resample(X, y[:-1])
    with pytest.raises(InputError, match="1-D"):
        ip.fit_resample(X, np.c_[y, y])
    with pytest.raises(InputError, match="2-D"):
        ip.fit_resample(X[:, 0], y)


def test_parameters_are_stored_unchanged_and_checked_only_when_used() -> None:
    ip = InputPerturbation(-3, bounds=None, classes=None, label_share=7, random_state=1)
    assert ip.get_params() == {
        "epsilon": -3,
        "bounds": None,
        "classes": None,
        "label_share": 7,
        "protect_labels": True,
        "clip_output": False,
        "random_state": 1,
    }
    assert clone(ip).get_params() == ip.get_params()


# -- what is released ----------------------------------------------------------------------------


def test_values_are_clipped_before_noise() -> None:
    X = np.array([[-5.0, 0.5, 100.0], [0.25, 7.0, -0.5], [2.0, -1.0, 0.75]])
    y = np.array([0, 1, 0])
    ip = InputPerturbation(1e9, bounds=(0.0, 1.0), classes=[0, 1], random_state=0)
    X_out, y_out = ip.fit_resample(X, y)
    np.testing.assert_allclose(X_out, np.clip(X, 0.0, 1.0), atol=1e-6)
    np.testing.assert_array_equal(y_out, y)
    assert ip.sensitivity_ == 3.0 and ip.noise_scale_ == pytest.approx(3.0 / (0.9e9))


def test_per_column_bounds_and_clip_output() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2)) * [1.0, 50.0]
    y = rng.integers(0, 2, 400)
    lo, hi = np.array([-1.0, 0.0]), np.array([1.0, 10.0])
    out, _ = InputPerturbation(
        0.5, bounds=(lo, hi), classes=[0, 1], random_state=0
    ).fit_resample(X, y)
    assert ((out < lo) | (out > hi)).any()  # noisy values may leave the box
    ip = InputPerturbation(0.5, bounds=(lo, hi), classes=[0, 1], clip_output=True, random_state=0)
    clipped, _ = ip.fit_resample(X, y)
    assert ((clipped >= lo) & (clipped <= hi)).all()
    np.testing.assert_array_equal(clipped, np.clip(out, lo, hi))  # post-processing of the same
    np.testing.assert_array_equal(ip.lower_, lo)
    np.testing.assert_array_equal(ip.upper_, hi)
    assert ip.sensitivity_ == 12.0


def test_budget_split_and_attributes(data) -> None:
    X, y = data
    ip = InputPerturbation(2.0, bounds=(0, 1), classes=[0, 1], label_share=0.25)
    ip.fit_resample(X, y)
    assert ip.epsilon_labels_ == pytest.approx(0.5)
    assert ip.epsilon_features_ == pytest.approx(1.5)
    assert ip.epsilon_labels_ + ip.epsilon_features_ == pytest.approx(2.0)
    assert ip.labels_protected_ is True
    assert ip.noise_scale_ == pytest.approx(3.0 / 1.5)
    assert ip.n_features_in_ == 3
    np.testing.assert_array_equal(ip.classes_, [0, 1])


def test_features_only_mode_warns_and_leaves_labels_unprotected(data) -> None:
    X, y = data
    ip = InputPerturbation(2.0, bounds=(0, 1), protect_labels=False, random_state=0)
    with pytest.warns(AnonmlWarning, match="NOT protected"):
        X_out, y_out = ip.fit_resample(X, y)
    np.testing.assert_array_equal(y_out, y)
    assert ip.labels_protected_ is False
    assert ip.epsilon_features_ == 2.0 and ip.epsilon_labels_ == math.inf
    assert ip.noise_scale_ == pytest.approx(3.0 / 2.0)
    assert ip.classes_ is None


def test_pandas_in_pandas_out_and_reproducible() -> None:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {"age": rng.integers(18, 90, 30), "income": rng.normal(5e4, 1e4, 30), "flag": True},
        index=pd.RangeIndex(100, 130),
    )
    y = pd.Series(rng.choice(["no", "yes"], 30), index=frame.index, name="target")
    ip = InputPerturbation(
        1.0, bounds=([18, 0, 0], [90, 2e5, 1]), classes=["no", "yes"], random_state=7
    )
    state = np.random.get_state()[1].copy()
    X_out, y_out = ip.fit_resample(frame, y)
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # no global seeding
    assert isinstance(X_out, pd.DataFrame) and list(X_out.columns) == ["age", "income", "flag"]
    assert X_out.index.equals(frame.index) and (X_out.dtypes == np.float64).all()
    assert isinstance(y_out, pd.Series) and y_out.index.equals(y.index) and y_out.name == "target"
    assert set(y_out) <= {"no", "yes"}
    assert list(ip.feature_names_in_) == ["age", "income", "flag"]
    X_again, y_again = clone(ip).fit_resample(frame, y)
    pd.testing.assert_frame_equal(X_out, X_again)
    pd.testing.assert_series_equal(y_out, y_again)
    X_other, _ = clone(ip).set_params(random_state=8).fit_resample(frame, y)
    assert not np.allclose(X_out.to_numpy(), X_other.to_numpy())


# -- calibration ---------------------------------------------------------------------------------


def test_noise_scale_matches_sensitivity_over_epsilon() -> None:
    n = 50_000
    lo, hi = np.array([0.0, -5.0, 10.0]), np.array([1.0, 5.0, 30.0])
    X = np.tile((lo + hi) / 2, (n, 1))
    ip = InputPerturbation(2.0, bounds=(lo, hi), classes=[0, 1], random_state=3)
    out, _ = ip.fit_resample(X, np.zeros(n, dtype=int))
    b = 31.0 / ip.epsilon_features_  # Δ = 1 + 10 + 20, ε_x = 0.9 · 2
    assert ip.noise_scale_ == pytest.approx(b)
    noise = out - X
    # each column: E|noise| = b and sd(|noise|) = b, so the mean is within Z / sqrt(n) relative
    mad = np.abs(noise).mean(axis=0)
    np.testing.assert_allclose(mad, b, rtol=Z / math.sqrt(n))
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=Z * math.sqrt(2) * b / math.sqrt(n))
    # and it is Laplace, independent across columns
    assert stats.kstest(noise.ravel() / b, "laplace").pvalue > 1e-4
    assert np.abs(np.corrcoef(noise.T)[np.triu_indices(3, 1)]).max() < Z / math.sqrt(n)


def test_randomized_response_keep_probability_and_uniform_others() -> None:
    n, eps = 100_000, 1.0
    classes = ["a", "b", "c", "d"]
    y = np.full(n, "c")
    out = randomized_response(y, classes, eps, np.random.default_rng(4))
    p_keep = math.exp(eps) / (math.exp(eps) + 3)
    kept = int((out == "c").sum())
    assert abs(kept - n * p_keep) <= Z * math.sqrt(n * p_keep * (1 - p_keep))
    others = np.array([(out == c).sum() for c in ("a", "b", "d")])
    assert others.sum() == n - kept
    assert stats.chisquare(others).pvalue > 1e-4
    # ratio P(o | c) / P(o | a) = e^ε, the worst case of ε-DP, and never above it
    p_other = others.mean() / n
    assert abs(math.log((kept / n) / p_other) - eps) <= Z * math.sqrt(1 / kept + 3 / others.sum())


def test_randomized_response_inside_the_estimator() -> None:
    n = 60_000
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, n)
    ip = InputPerturbation(5.0, bounds=(0, 1), classes=[0, 1, 2], label_share=0.2, random_state=6)
    _, y_out = ip.fit_resample(np.zeros((n, 1)), y)
    p_keep = math.exp(1.0) / (math.exp(1.0) + 2)  # ε_y = 0.2 · 5
    for c in range(3):
        rows = y == c
        m = int(rows.sum())
        kept = int((y_out[rows] == c).sum())
        assert abs(kept - m * p_keep) <= Z * math.sqrt(m * p_keep * (1 - p_keep))


def test_randomized_response_extreme_epsilon_does_not_overflow() -> None:
    y = np.arange(5) % 2
    np.testing.assert_array_equal(randomized_response(y, [0, 1], 1e6, 0), y)


# -- empirical privacy ---------------------------------------------------------------------------

N_DRAWS = 200_000
D = 3
LO, HI = 0.0, 1.0


def _max_privacy_loss(
    a: np.ndarray, b: np.ndarray, edges: np.ndarray, min_count: int = 200
) -> tuple[float, float]:
    """Largest |log P(bin | a) / P(bin | b)| over bins that hold >= min_count draws of each.

    Returns (raw maximum, maximum of |log ratio| − Z · standard error): the second is the
    estimate minus its sampling tolerance (delta method, se = sqrt(1/n_a + 1/n_b)), so an
    ε-DP mechanism has it <= ε except with negligible probability.
    """
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    ok = (ca >= min_count) & (cb >= min_count)
    assert ok.sum() >= 3
    ratio = np.abs(np.log(ca[ok] / cb[ok]))
    se = np.sqrt(1.0 / ca[ok] + 1.0 / cb[ok])
    return float(ratio.max()), float((ratio - Z * se).max())


def _release(corner: float, seed: int) -> tuple[np.ndarray, float]:
    """N_DRAWS independent releases of one record at a corner of [0, 1]^D (one call, vectorized)."""
    ip = InputPerturbation(1.0, bounds=(LO, HI), classes=[0, 1], random_state=seed)
    out, _ = ip.fit_resample(np.full((N_DRAWS, D), corner), np.zeros(N_DRAWS, dtype=int))
    return out, ip.epsilon_features_


def _miscalibrated_release(corner: float, eps_x: float, seed: int) -> np.ndarray:
    """The classic mistake: per-coordinate scale (hi − lo)/ε instead of Σ_j (hi_j − lo_j)/ε."""
    rng = np.random.default_rng(seed)
    x = np.clip(np.full((N_DRAWS, D), corner), LO, HI)
    return x + rng.laplace(0.0, (HI - LO) / eps_x, size=x.shape)


# The two statistics: the sum of the released coordinates (histogram, bins of width 1) and the
# number of coordinates above hi, whose top value (all D above hi) is the worst-case event of the
# two neighbours: its log ratio is exactly D·(hi − lo)/scale, i.e. ε_x when calibrated correctly.
SUM_EDGES = np.arange(-40.0, 44.0, 1.0)
COUNT_EDGES = np.arange(-0.5, D + 1.0, 1.0)


def _statistics(out: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {"sum": (out.sum(axis=1), SUM_EDGES), "above_hi": ((out > HI).sum(axis=1), COUNT_EDGES)}


def test_empirical_privacy_loss_within_epsilon() -> None:
    low, eps_x = _release(LO, seed=10)
    high, _ = _release(HI, seed=11)
    assert eps_x == pytest.approx(0.9)
    s_low, s_high = _statistics(low), _statistics(high)
    for name, (a, edges) in s_low.items():
        raw, corrected = _max_privacy_loss(a, s_high[name][0], edges)
        assert corrected <= eps_x, (name, raw, corrected, eps_x)
    # the worst-case event reaches ε_x: the test is tight and the noise is not over-calibrated
    raw, _ = _max_privacy_loss(s_low["above_hi"][0], s_high["above_hi"][0], COUNT_EDGES)
    assert abs(raw - eps_x) < 0.1


def test_empirical_privacy_test_catches_miscalibrated_noise() -> None:
    eps_x = 0.9
    low = _miscalibrated_release(LO, eps_x, seed=12)
    high = _miscalibrated_release(HI, eps_x, seed=13)
    s_low, s_high = _statistics(low), _statistics(high)
    for name, (a, edges) in s_low.items():
        raw, corrected = _max_privacy_loss(a, s_high[name][0], edges)
        # even after subtracting the sampling tolerance the loss is far above ε_x (the true
        # worst case is D·ε_x; measured about 2.1 on the sum, 2.7 on the count above hi)
        assert corrected > 1.5 * eps_x, (name, raw, corrected, eps_x)


# -- utility as ε grows --------------------------------------------------------------------------


def test_release_approaches_clipped_data_as_epsilon_grows() -> None:
    rng = np.random.default_rng(20)
    n = 2_000
    X = rng.normal(0.5, 0.3, size=(n, 3))  # some rows outside the public box [0, 1]^3
    w = np.array([3.0, -2.0, 1.0])
    y = (X @ w + rng.normal(0, 0.3, n) > 1.0).astype(int)
    X_clip = np.clip(X, 0.0, 1.0)
    assert (X != X_clip).any()
    X_test = np.clip(rng.normal(0.5, 0.3, size=(2_000, 3)), 0.0, 1.0)
    ref = LogisticRegression().fit(X_clip, y)
    ref_pred = ref.predict(X_test)

    errors, distances, agreements = [], [], []
    for eps in (0.5, 5.0, 50.0, 500.0, 1e5):
        ip = InputPerturbation(eps, bounds=(0.0, 1.0), classes=[0, 1], random_state=21)
        X_out, y_out = ip.fit_resample(X, y)
        errors.append(np.abs(X_out - X_clip).mean())
        model = LogisticRegression().fit(X_out, y_out)
        delta = np.r_[model.coef_.ravel() - ref.coef_.ravel(), model.intercept_ - ref.intercept_]
        distances.append(np.linalg.norm(delta))
        agreements.append((model.predict(X_test) == ref_pred).mean())

    assert all(e2 < e1 for e1, e2 in zip(errors, errors[1:]))
    assert errors[-1] < 1e-3
    assert distances[-1] < 0.01 * np.linalg.norm(ref.coef_) < distances[0]
    assert agreements[-1] >= 0.99 and agreements[-1] > agreements[0]
