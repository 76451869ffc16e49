"""The noise of output perturbation: a vector with density ∝ exp(−‖η‖₂ / b).

For ε-DP with L2 sensitivity Δ₂ (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1), b = Δ₂ / ε. In
d dimensions the norm of such a vector is Gamma(d, b) distributed and its direction is uniform
on the sphere: the density in polar form is ∝ r^{d-1} exp(−r/b) · (surface measure).

Per-coordinate Laplace noise of scale Δ₂/ε is *not* ε-DP for d > 1: its privacy loss is
(‖w−w'‖₁)/b, up to √d·ε. The empirical privacy test in ``tests/test_dp_noise.py`` catches it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml._utils import check_real

__all__ = ["check_epsilon", "l2_laplace_noise", "uniform_ball"]


def l2_laplace_noise(d: int, scale: float, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Draw η ∈ R^d with density ∝ exp(−‖η‖₂ / scale).

    Parameters
    ----------
    d : int
        Dimension.
    scale : float
        b = sensitivity / ε; must be positive and finite.
    rng : numpy.random.Generator
    size : int, optional
        Number of independent vectors; returns shape (size, d) instead of (d,).
    """
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"noise scale={scale!r} must be a positive finite number")
    m = 1 if size is None else int(size)
    direction = rng.standard_normal((m, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    radius = rng.gamma(shape=d, scale=scale, size=m)
    out = direction * radius[:, None]
    return out[0] if size is None else out


def check_epsilon(epsilon: Any, what: str = "epsilon") -> float:
    """A privacy budget: a finite number > 0 (one-line error naming ``what`` otherwise)."""
    return check_real(what, epsilon, example=1.0,
                      why="the privacy budget (smaller is more private)")


def uniform_ball(n: int, d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """n points drawn uniformly in the d-dimensional ball of the given radius."""
    direction = rng.standard_normal((n, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return direction * (radius * rng.random(n) ** (1.0 / d))[:, None]
