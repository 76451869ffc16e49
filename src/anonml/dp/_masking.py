"""Data masking with privacy guarantees (Pham, Ghosh & Yegneswaran, 2019).

Release a *dataset* whose L2-regularized logistic-regression optimum is an ε-DP model.

Derivation (the published text lost its formulas; this follows its description and Chaudhuri,
Monteleoni & Sarwate 2011). With the notation of :mod:`anonml.dp._logistic`:

1. **Private weights.** w* = argmin J(w; D) on the private data, then w̃ = w* + η with
   η ∝ exp(−nλε‖η‖/(2K')) — ε-DP output perturbation. Nothing else touches D.
2. **Optimality condition.** J(·; D') is λ-strongly convex, so w̃ is its unique minimizer on a
   dataset D' = {(x̃ⱼ, sⱼ)}, j = 1..m, iff ∇J(w̃; D') = 0, i.e. for every binary problem k

       Σⱼ aₖ(x̃ⱼ, sⱼ) = −m λ w̃ₖ,    aₖ(x̃, s) = −s σ(−s w̃ₖᵀx̃) x̃,

   where σ is the logistic function. Any D' satisfying it "hides" the private data behind w̃:
   whoever trains the same model on D' recovers w̃, and by post-processing D' is ε-DP.
3. **Greedy generation.** Start from a public initial set D₀ (never the private records) and
   add samples in blocks of p = 2. With current sums Sₖ over m samples, the block should supply
   the residual rₖ = −(m+p) λ w̃ₖ − Sₖ; it minimizes

       F(x₁..x_p, c₁..c_p) = Σₖ ‖Σᵢ aₖ(x̃ᵢ, sₖ(cᵢ)) − rₖ‖²

   over the public domain ‖xᵢ‖ ≤ B, for every tuple of labels, by projected gradient descent
   with Armijo backtracking (Bertsekas 1999, Sec. 2.3); the best block is kept. With
   qᵢₖ = σ(−sᵢₖ w̃ₖᵀx̃ᵢ) and eₖ = Σᵢ aᵢₖ − rₖ,

       ∇_x̃ᵢ F = 2 Σₖ [ −sᵢₖ qᵢₖ eₖ + qᵢₖ(1 − qᵢₖ) (x̃ᵢᵀeₖ) w̃ₖ ],

   and x̃ = [x/(B√2), 1/√2] gives ∇ₓF = ∇_x̃F[:d] / (B√2). Why pairs: one sample supplies
   aₖ = −s q x̃, whose intercept coordinate has the sign of its label and bounds the others
   (‖a[:d]‖ ≤ |a_D|), a cone that the steady-state need −λw̃ usually lies outside; two samples
   of opposite labels reach it, so the residual can be cancelled instead of only bounded.
4. **Stop** when ‖∇J(w̃; D')‖ (all problems together) falls below ``tol``, or after
   ``n_samples`` generated samples; both are recorded.

**When the tolerance cannot be reached.** In steady state every block must supply exactly
−pλw̃. On data it was fitted to, −λw* is an average of per-sample contributions, so it lies in
their convex hull; but the *noisy* −λw̃ need not be reachable by samples inside the public
domain. Then the residual stays bounded, the gradient norm only falls like 1/m, and
``stopped_by_ == "n_samples"``. Retraining still lands within ‖∇J(w̃)‖/λ of w̃ (strong
convexity), which the recorded ``gradient_norm_`` bounds. On a 6-dimensional toy problem
(n = 800, ε = 1, λ = 0.01, B = 4) about 3 draws in 4 reached 1e-8 within 300 samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from anonml._errors import InputError
from anonml._utils import check_int, check_real
from anonml.dp._logistic import (
    augment,
    check_data_norm,
    check_features,
    check_lam,
    clip_rows,
    fit_logistic,
    logistic_gradient,
    signs,
)
from anonml.dp._noise import check_epsilon, l2_laplace_noise, uniform_ball

__all__ = ["MaskedDataGenerator"]

_SQRT2 = np.sqrt(2.0)


class MaskedDataGenerator:
    """Generate a masked dataset that trains an ε-DP logistic regression (Pham et al. 2019).

    Parameters
    ----------
    epsilon : float
        Privacy budget ε > 0 of the released dataset (pure ε-DP, replace-one neighbours).
    lam : float, default 0.01
        L2 penalty λ of the logistic regression the masked data is made for; the recipient
        must train :class:`~anonml.dp._logistic.RegularizedLogisticRegression` with the same
        ``lam`` and ``data_norm``.
    n_samples : int, default 1000
        Largest number of generated samples (besides the initial set).
    data_norm : float
        **Required** public bound B on a feature row's L2 norm. Private rows are clipped to it,
        and generated rows stay inside it. Without it the generator refuses to run.
    init : "uniform" or (X0, y0), default "uniform"
        The initial set: ``"uniform"`` draws ``n_init`` points uniformly in the ball of radius B
        with uniformly random labels (independent of the data); a pair gives public records.
        It must not be the private records: the generator refuses ``init`` arrays that share
        memory with ``X`` or whose rows all occur in ``X``.
    n_init : int, optional
        Size of the uniform initial set (default: 5 per class).
    classes : array-like, optional
        The public set of labels; default: the labels present in ``y`` (then treated as public).
    tol : float, default 1e-6
        Stop when the norm of ∇J(w̃) over the masked set is below ``tol``.
    max_iter : int, default 100
        Projected-gradient iterations per generated sample.
    random_state : int, Generator or None

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (K', n_features + 1)
        The ε-DP weights w̃ the masked data encodes (one row per binary problem).
    X_masked_, y_masked_ : ndarray
        The masked dataset (initial set first, then the generated samples), in the original
        feature space.
    n_generated_ : int
    gradient_norm_ : float
        ‖∇J(w̃)‖ over the masked set at the end.
    gradient_norms_ : ndarray
        The same after each generated sample.
    stopped_by_ : {"tolerance", "n_samples"}
    noise_scale_ : float

    Notes
    -----
    Multiclass: one-vs-rest, each of the K weight vectors with ε/K (basic composition).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        lam: float = 0.01,
        n_samples: int = 1000,
        data_norm: float | None = None,
        init: Any = "uniform",
        n_init: int | None = None,
        classes: Any = None,
        tol: float = 1e-6,
        max_iter: int = 100,
        random_state: Any = None,
    ):
        self.epsilon = epsilon
        self.lam = lam
        self.n_samples = n_samples
        self.data_norm = data_norm
        self.init = init
        self.n_init = n_init
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> "MaskedDataGenerator":
        """Compute the ε-DP weights from (X, y), then generate the masked dataset."""
        eps = check_epsilon(self.epsilon)
        lam = check_lam(self.lam)
        B = check_data_norm(self.data_norm)
        n_samples = check_int("n_samples", self.n_samples, low=0)
        max_iter = check_int("max_iter", self.max_iter, low=1)
        check_real("tol", self.tol, example=1e-6)
        X_raw = X
        X = check_features(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise InputError(f"y must be 1-D with one label per row of X ({X.shape[0]} rows)")
        classes = np.unique(y) if self.classes is None else np.unique(np.asarray(self.classes))
        if classes.size < 2:
            raise InputError("need at least two classes")
        codes = np.searchsorted(classes, y)
        if np.any(codes >= classes.size) or np.any(classes[np.minimum(codes, classes.size - 1)] != y):
            raise InputError("y has labels outside `classes`; list every label in classes")
        rng = np.random.default_rng(self.random_state)
        self.classes_ = classes
        K = classes.size

        # 1. private weights (the only use of the private data)
        Xt = augment(X, B)
        S = signs(codes, K)
        W = fit_logistic(Xt, S, lam)
        self.noise_scale_ = 2.0 * S.shape[1] / (X.shape[0] * lam * eps)
        W_priv = W + l2_laplace_noise(Xt.shape[1], self.noise_scale_, rng, size=S.shape[1])
        del W, Xt, S
        self.coef_ = W_priv

        # 2. public initial set
        X0, c0 = self._initial_set(X_raw, X, classes, B, rng)

        # 3. greedy generation
        X_gen, c_gen, norms = self._generate(W_priv, X0, c0, K, B, lam, n_samples, max_iter, rng)
        self.X_masked_ = np.vstack([X0, X_gen]) if len(X_gen) else X0
        codes_all = np.concatenate([c0, c_gen]).astype(np.int64)
        self.y_masked_ = classes[codes_all]
        self.n_generated_ = len(X_gen)
        self.gradient_norms_ = norms
        self.gradient_norm_ = self._gradient_norm(W_priv, augment(self.X_masked_, B), codes_all, K, lam)
        self.stopped_by_ = "tolerance" if self.gradient_norm_ <= self.tol else "n_samples"
        return self

    def fit_resample(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Fit and return the masked dataset ``(X_masked_, y_masked_)``."""
        self.fit(X, y)
        return self.X_masked_, self.y_masked_

    # ------------------------------------------------------------------------------------------
    def _initial_set(self, X_raw, X, classes, B, rng) -> tuple[np.ndarray, np.ndarray]:
        K, d = classes.size, X.shape[1]
        if isinstance(self.init, str):
            if self.init != "uniform":
                raise InputError(f"init={self.init!r}; use 'uniform' or a pair (X0, y0) of public records")
            n0 = self.n_init if self.n_init is not None else 5 * K
            n0 = check_int("n_init", n0, low=1)
            return uniform_ball(n0, d, B, rng), rng.integers(0, K, n0)
        try:
            X0_raw, y0 = self.init
        except (TypeError, ValueError):
            raise InputError("init must be 'uniform' or a pair (X0, y0) of public records") from None
        X0 = check_features(X0_raw, what="init X0")
        y0 = np.asarray(y0)
        if X0.shape[1] != d or y0.shape != (X0.shape[0],):
            raise InputError(f"init X0 must have {d} columns and y0 one label per row of X0")
        arr_raw = np.asarray(getattr(X0_raw, "to_numpy", lambda: X0_raw)())
        arr_priv = np.asarray(getattr(X_raw, "to_numpy", lambda: X_raw)())
        if X0_raw is X_raw or np.shares_memory(arr_raw, arr_priv):
            raise InputError(
                "init is (a view of) the private X: the initial set must be public records, not "
                "the private ones, or the guarantee is void; use init='uniform'"
            )
        private_rows = {row.tobytes() for row in X}
        if all(row.tobytes() in private_rows for row in X0):
            raise InputError(
                "every row of the initial set X0 is a private record: the initial set must be "
                "public, not drawn from the private data; use init='uniform' or public records"
            )
        c0 = np.searchsorted(classes, y0)
        if np.any(c0 >= K) or np.any(classes[np.minimum(c0, K - 1)] != y0):
            raise InputError("init y0 has labels outside the classes of y")
        return clip_rows(X0, B), c0.astype(np.int64)

    @staticmethod
    def _block_size(K: int) -> int:
        return 2 if K == 2 else 3

    @staticmethod
    def _gradient_norm(W, Xt, codes, K, lam) -> float:
        return float(np.linalg.norm(logistic_gradient(W, Xt, signs(codes, K), lam)))

    def _generate(self, W, X0, c0, K, B, lam, n_samples, max_iter, rng):
        """Add samples a pair at a time (module docstring, step 3)."""
        scale = 1.0 / (B * _SQRT2)
        X0t = augment(X0, B)
        S0 = signs(c0, K)
        sums = (-(S0 * expit(-S0 * (X0t @ W.T)))).T @ X0t  # Σ aₖ over the current set, (K', D)
        m = X0t.shape[0]
        out_x, out_c, norms = [], [], []
        grad_norm = np.linalg.norm(sums / m + lam * W)
        while len(out_x) < n_samples and grad_norm > self.tol:
            p = min(self._block_size(K), n_samples - len(out_x))
            r = -(m + p) * lam * W - sums  # what the new block should supply
            xs, cs, a = self._best_block(W, r, K, p, B, scale, max_iter, rng, 4 if K == 2 else 1)
            sums += a
            m += p
            out_x.extend(xs)
            out_c.extend(cs)
            grad_norm = np.linalg.norm(sums / m + lam * W)
            norms.extend([grad_norm] * p)
        d = X0.shape[1]
        X_gen = np.asarray(out_x).reshape(-1, d)
        return X_gen, np.asarray(out_c, dtype=np.int64), np.asarray(norms)

    @staticmethod
    def _best_block(W, r, K, p, B, scale, max_iter, rng, restarts=4):
        """Minimize F over a block of ``p`` new samples, for every tuple of labels at once.

        F = Σₖ ‖Σᵢ aₖ(x̃ᵢ, sₖ(cᵢ)) − rₖ‖². One sample can only supply vectors in a cone (its
        intercept coordinate has the sign of its label and bounds the rest), so a single-sample
        greedy step leaves a residual it cannot cancel; a pair of samples of opposite labels can.
        F is not convex in x; ``restarts`` random starts per label tuple make a bad local
        minimum (a residual left for later) rare. Returns the block's rows, labels and summed
        contribution.
        """
        combos = np.array(np.meshgrid(*[np.arange(K)] * p, indexing="ij")).reshape(p, -1).T
        combos = np.tile(combos, (restarts, 1))  # several random starts per label tuple: (C, p)
        C, d = combos.shape[0], W.shape[1] - 1
        cand_s = signs(combos.ravel(), K).reshape(C, p, -1)  # (C, p, K')

        def evaluate(x):  # x: (C, p, d)
            xt = np.concatenate([x * scale, np.full(x.shape[:2] + (1,), 1.0 / _SQRT2)], axis=2)
            q = expit(-cand_s * np.einsum("cpd,kd->cpk", xt, W))  # (C, p, K')
            a = -(cand_s * q)[..., None] * xt[:, :, None, :]  # (C, p, K', D)
            e = a.sum(axis=1) - r[None]  # (C, K', D)
            F = (e * e).sum(axis=(1, 2))
            proj = np.einsum("cpd,ckd->cpk", xt, e)  # x̃ᵢᵀeₖ
            g = 2.0 * ((-(cand_s * q))[..., None] * e[:, None] + (q * (1 - q) * proj)[..., None] * W[None, None]).sum(2)
            return F, g[..., :d] * scale, a.sum(axis=1)

        def project(x):
            norms = np.linalg.norm(x, axis=2, keepdims=True)
            return x * np.minimum(1.0, B / np.maximum(norms, 1e-300))

        x = project(rng.normal(scale=0.5 * B / np.sqrt(d), size=(C, p, d)))
        F, g, a = evaluate(x)
        step = np.full(C, B * B)  # first trial step; halved until Armijo holds
        for _ in range(max_iter):
            active = np.ones(C, dtype=bool)
            x_new, F_new, g_new, a_new = x.copy(), F.copy(), g.copy(), a.copy()
            for _halving in range(40):
                trial = project(x - step[:, None, None] * g)
                Ft, gt, at = evaluate(trial)
                # projected Armijo condition: sufficient decrease along the projection arc
                ok = Ft <= F - 1e-4 * (g * (x - trial)).sum(axis=(1, 2))
                take = active & ok
                x_new[take], F_new[take], g_new[take], a_new[take] = trial[take], Ft[take], gt[take], at[take]
                active &= ~ok
                if not active.any():
                    break
                step[active] *= 0.5
            moved = np.abs(F - F_new) > 1e-14 * np.maximum(F, 1e-300)
            x, F, g, a = x_new, F_new, g_new, a_new
            step = np.minimum(step * 2.0, B * B)  # let the step grow back
            if not moved.any():
                break
        best = int(np.argmin(F))
        return x[best], combos[best], a[best]
