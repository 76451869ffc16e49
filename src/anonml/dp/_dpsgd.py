"""A multilayer perceptron in PyTorch, trained plainly or with (ε, δ)-DP-SGD through Opacus.

:class:`MLPTorchClassifier` is the non-private network and :class:`DPSGDClassifier` the same
network trained with DP-SGD (Abadi et al. 2016) as Opacus implements it (Yousefpour et al.
2021): Poisson sampling of the rows (each row joins each batch independently with probability
q = 1 / ceil(n / batch_size)), per-example gradients clipped to L2 norm ``max_grad_norm``,
Gaussian noise of standard deviation ``noise_multiplier · max_grad_norm`` added to their sum,
then an Adam step. The per-example clipping uses Opacus's ghost clipping (Li, Tramèr, Liang &
Hashimoto 2022): the per-example gradient norms are computed without materializing per-example
gradients, and a second backward pass applies the clipping factors; the clipped sum is the same
as with materialized per-example gradients (to float rounding), about five times faster for
the default network on a CPU. The default architecture is the fully connected tanh network of the
membership-inference literature on tabular data (hidden layers of 1024, 512 and 256 units;
Shokri et al. 2017; Nasr, Shokri & Houmansadr 2018), trained with Adam at learning rate 1e-4.

Privacy accounting is Opacus's: ``accountant="prv"`` (default) is the privacy random variable
accountant of Gopi, Lee & Wutschitz (2021), which gives a numerically certified upper bound on
ε for the given δ; ``accountant="rdp"`` is Rényi DP (Mironov 2017; Mironov, Talwar & Zhang
2019), looser. With ``epsilon`` given, Opacus picks the smallest noise multiplier whose ε after
``epochs`` epochs is at most the target (to 0.01); with ``noise_multiplier`` given, the
accountant reports the ε it spent. Either way ``epsilon_spent_`` is the accountant's ε for
``delta`` over the steps actually taken. Neighbouring datasets differ by adding or removing one
row; the number of rows n (through q), the feature count and the public ``classes`` are not
protected.

What DP-SGD does not cover: any preprocessing fitted on the private table. A
``StandardScaler`` or one-hot encoder fitted on it reads its means, spreads and category lists
from the data; scale with public ranges (a codebook) and public category lists instead.

torch and opacus are imported inside ``fit`` (``pip install 'anonml[torch]'``). Training runs on
the CPU with torch's current thread setting (``torch.set_num_threads``), which it does not
change. Randomness comes from ``random_state`` through local ``torch.Generator`` objects (weight
initialization, batch sampling, DP noise); the global torch generator is neither read nor
seeded, so a fixed ``random_state`` gives the same model on the same machine and torch build.

References
----------
Abadi, M. et al. (2016). Deep learning with differential privacy. CCS.
Yousefpour, A. et al. (2021). Opacus: user-friendly differential privacy library in PyTorch.
arXiv:2109.12298.
Gopi, S., Lee, Y. T. & Wutschitz, L. (2021). Numerical composition of differential privacy.
NeurIPS.
Li, X., Tramèr, F., Liang, P. & Hashimoto, T. (2022). Large language models can be strong
differentially private learners. ICLR (ghost clipping).
Mironov, I. (2017). Rényi differential privacy. CSF.
Shokri, R., Stronati, M., Song, C. & Shmatikov, V. (2017). Membership inference attacks against
machine learning models. IEEE S&P.
Nasr, M., Shokri, R. & Houmansadr, A. (2018). Machine learning with membership privacy using
adversarial regularization. CCS.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from anonml._errors import InputError
from anonml._utils import check_int, check_real
from anonml.dp._diffprivlib import check_classes, check_labels
from anonml.dp._logistic import check_features
from anonml.dp._noise import check_epsilon

__all__ = ["DPSGDClassifier", "MLPTorchClassifier"]

_ACTIVATIONS = ("tanh", "relu")
_PREDICT_CHUNK = 8192
_GRAD_SAMPLE_MODE = "ghost"  # Opacus's per-example clipping: "ghost" or "hooks" (same result)


def import_torch(need_opacus: bool = False) -> tuple[Any, Any]:
    """(torch, opacus or None), with a one-line install hint when missing."""
    try:
        import torch
    except ImportError:
        from anonml._install import install_hint

        raise InputError(
            f"the torch models need PyTorch; install it with {install_hint('torch')}"
        ) from None
    opacus = None
    if need_opacus:
        try:
            import opacus
        except ImportError:
            from anonml._install import install_hint

            raise InputError(
                f"DP-SGD needs Opacus; install it with {install_hint('torch')}"
            ) from None
    return torch, opacus


def _hidden(sizes: Any) -> tuple[int, ...]:
    try:
        out = tuple(sizes)
    except TypeError:
        out = (sizes,)
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in out):
        raise InputError(
            f"hidden_layer_sizes={sizes!r} must be a tuple of positive integers, "
            "e.g. (1024, 512, 256)"
        )
    return tuple(int(s) for s in out)


def build_mlp(
    torch: Any, n_in: int, hidden: tuple[int, ...], n_out: int, activation: str, generator: Any
) -> Any:
    """Linear/activation stack initialized like ``torch.nn.Linear``, from ``generator`` only."""
    nn = torch.nn
    act = nn.Tanh if activation == "tanh" else nn.ReLU
    layers: list[Any] = []
    sizes = (n_in, *hidden)
    for a, b in itertools.pairwise(sizes):
        layers += [nn.utils.skip_init(nn.Linear, a, b), act()]
    layers.append(nn.utils.skip_init(nn.Linear, sizes[-1], n_out))
    with torch.no_grad():
        for layer in layers:
            if isinstance(layer, nn.Linear):
                # torch.nn.Linear.reset_parameters, with an explicit generator
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
                bound = 1.0 / math.sqrt(layer.in_features)
                nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return nn.Sequential(*layers)


class MLPTorchClassifier(ClassifierMixin, BaseEstimator):
    """A fully connected network trained with Adam on cross-entropy (non-private).

    The non-private twin of :class:`DPSGDClassifier`: same architecture, initialization,
    optimizer and learning rate; batches are a shuffled partition of the rows each epoch.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default (1024, 512, 256)
    activation : {"tanh", "relu"}, default "tanh"
    learning_rate : float, default 1e-4
        Adam's step size.
    batch_size : int, default 256
    epochs : int, default 10
    random_state : int, Generator or None

    Attributes
    ----------
    classes_ : ndarray
        Sorted labels seen in ``y``.
    model_ : torch.nn.Sequential
        The trained network (logits out), on the CPU, in eval mode.
    n_features_in_ : int
    n_steps_ : int
        Optimizer steps taken.
    """

    def __init__(
        self,
        hidden_layer_sizes: Any = (1024, 512, 256),
        activation: str = "tanh",
        learning_rate: float = 1e-4,
        batch_size: int = 256,
        epochs: int = 10,
        random_state: Any = None,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.epochs = epochs
        self.random_state = random_state

    # -- shared checks and set-up -------------------------------------------------------------
    def _check_common(self) -> dict[str, Any]:
        if self.activation not in _ACTIVATIONS:
            raise InputError(
                f"activation={self.activation!r} is not one of {', '.join(_ACTIVATIONS)}"
            )
        return {
            "hidden": _hidden(self.hidden_layer_sizes),
            "lr": check_real("learning_rate", self.learning_rate, example="1e-4"),
            "batch_size": check_int("batch_size", self.batch_size, example="256"),
            "epochs": check_int("epochs", self.epochs, example="10"),
        }

    def _labels(self, y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
        if y.ndim != 1 or y.shape[0] != n_rows:
            raise InputError(
                f"y must be 1-D with one label per row of X ({n_rows}), got shape {y.shape}"
            )
        classes, codes = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise InputError("y has a single class; a classifier needs two or more")
        return classes, codes.ravel()

    def _setup(
        self, torch: Any, X: np.ndarray, codes: np.ndarray, n_classes: int, cfg: dict[str, Any]
    ) -> tuple[Any, ...]:
        seeds = np.random.default_rng(self.random_state).integers(2**62, size=3)
        gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
        model = build_mlp(torch, X.shape[1], cfg["hidden"], n_classes, self.activation, gens[0])
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        X_t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
        y_t = torch.from_numpy(codes.astype(np.int64))
        return model, optimizer, X_t, y_t, gens

    def _finish(self, model: Any, classes: np.ndarray, n_features: int, steps: int) -> None:
        model.eval()
        self.model_ = model
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.n_steps_ = steps

    # -- public API ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> MLPTorchClassifier:
        """Train on numeric ``X`` (rows × features, already encoded and scaled) and ``y``."""
        cfg = self._check_common()
        X = check_features(X)
        classes, codes = self._labels(y, X.shape[0])
        torch, _ = import_torch()
        model, optimizer, X_t, y_t, gens = self._setup(torch, X, codes, classes.size, cfg)
        loss_fn = torch.nn.CrossEntropyLoss()
        n, bs = X.shape[0], cfg["batch_size"]
        steps = 0
        model.train()
        for _ in range(cfg["epochs"]):
            order = torch.randperm(n, generator=gens[1])
            for start in range(0, n, bs):
                idx = order[start : start + bs]
                optimizer.zero_grad(set_to_none=True)
                loss_fn(model(X_t[idx]), y_t[idx]).backward()
                optimizer.step()
                steps += 1
        self._finish(model, classes, X.shape[1], steps)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax of the network's outputs, columns in ``classes_`` order."""
        check_is_fitted(self, "model_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {X.shape[1]} features; the model was fitted on {self.n_features_in_}"
            )
        torch, _ = import_torch()
        X_t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
        with torch.no_grad():
            parts = [
                torch.softmax(self.model_(X_t[i : i + _PREDICT_CHUNK]), dim=1)
                for i in range(0, X_t.shape[0], _PREDICT_CHUNK)
            ]
        return torch.cat(parts).numpy().astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class DPSGDClassifier(MLPTorchClassifier):
    """(ε, δ)-DP network: :class:`MLPTorchClassifier` trained with DP-SGD by Opacus.

    Give exactly one of ``epsilon`` (Opacus calibrates the noise so that ``epochs`` epochs
    spend at most ε) or ``noise_multiplier`` (σ; the accountant reports the ε spent).

    Parameters
    ----------
    epsilon : float, optional
        Target budget ε > 0 for the whole training.
    noise_multiplier : float, optional
        σ > 0: noise standard deviation relative to ``max_grad_norm``.
    delta : float, default 1e-5
        δ of (ε, δ)-DP; keep it well below 1/n.
    classes : array-like
        **Required** public list of every class label (the output layer has one unit per
        class; reading the labels from ``y`` would reveal whether a rare one occurs).
    hidden_layer_sizes, activation, learning_rate, batch_size, epochs, random_state
        As in :class:`MLPTorchClassifier`; ``batch_size`` is the *expected* batch size of
        Poisson sampling.
    max_grad_norm : float, default 1.0
        Per-example gradient clipping norm C.
    accountant : {"prv", "rdp"}, default "prv"
        Opacus accountant for calibration and for ``epsilon_spent_``.

    Attributes
    ----------
    classes_ : ndarray
        The sorted public classes.
    model_ : torch.nn.Sequential
        The trained network (without Opacus's wrapper).
    noise_multiplier_ : float
        σ used.
    sample_rate_ : float
        Poisson sampling rate q.
    n_steps_ : int
        Noisy steps taken (epochs × ceil(n / batch_size)).
    epsilon_spent_ : float
        ε of the trained model at ``delta`` by the chosen accountant.
    """

    def __init__(
        self,
        epsilon: float | None = None,
        noise_multiplier: float | None = None,
        delta: float = 1e-5,
        *,
        classes: Any = None,
        hidden_layer_sizes: Any = (1024, 512, 256),
        activation: str = "tanh",
        learning_rate: float = 1e-4,
        max_grad_norm: float = 1.0,
        batch_size: int = 256,
        epochs: int = 10,
        accountant: str = "prv",
        random_state: Any = None,
    ):
        self.epsilon = epsilon
        self.noise_multiplier = noise_multiplier
        self.delta = delta
        self.classes = classes
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.batch_size = batch_size
        self.epochs = epochs
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPSGDClassifier:
        """Train with DP-SGD on numeric ``X`` (scaled with *public* ranges) and ``y``."""
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise InputError(
                "give exactly one of epsilon (target budget, e.g. epsilon=3.0) or "
                "noise_multiplier (e.g. noise_multiplier=1.0)"
            )
        eps = None if self.epsilon is None else check_epsilon(self.epsilon)
        sigma = (
            None
            if self.noise_multiplier is None
            else check_real("noise_multiplier", self.noise_multiplier, example="1.0")
        )
        delta = check_real("delta", self.delta, high=1, example=1e-5, why="well below 1/n")
        if self.accountant not in ("prv", "rdp"):
            raise InputError(f"accountant={self.accountant!r} is not one of prv, rdp")
        clip = check_real("max_grad_norm", self.max_grad_norm, example="1.0")
        classes = check_classes(self.classes)
        cfg = self._check_common()
        X = check_features(X)
        codes = check_labels(y, X.shape[0], classes)
        torch, opacus = import_torch(need_opacus=True)
        model, optimizer, X_t, y_t, gens = self._setup(torch, X, codes, classes.size, cfg)
        index = torch.utils.data.TensorDataset(torch.arange(X.shape[0]))
        loader = torch.utils.data.DataLoader(index, batch_size=cfg["batch_size"], generator=gens[1])
        with warnings.catch_warnings():
            # Opacus's benign notices: secure_mode is off (the noise comes from a seeded
            # generator, not a cryptographic one); full backward hooks fire on inputs that need
            # no gradient; overflow in the PRV accountant's tails while it searches for the
            # noise multiplier
            warnings.filterwarnings(
                "ignore", message=r"Secure RNG turned off", category=UserWarning
            )
            warnings.filterwarnings(
                "ignore", message=r"Full backward hook is firing", category=UserWarning
            )
            warnings.filterwarnings(
                "ignore", message=r"overflow encountered", category=RuntimeWarning
            )
            # the RDP bound (also used by the PRV accountant to size its domain) notes that its
            # optimal order sits at the edge of Opacus's grid: the ε reported is still an upper
            # bound, only possibly a looser one
            warnings.filterwarnings("ignore", message=r"Optimal order is the", category=UserWarning)
            engine = opacus.PrivacyEngine(accountant=self.accountant)
            common = {
                "module": model,
                "optimizer": optimizer,
                "data_loader": loader,
                "max_grad_norm": clip,
                "poisson_sampling": True,
                "noise_generator": gens[2],
                "criterion": torch.nn.CrossEntropyLoss(),
                "grad_sample_mode": _GRAD_SAMPLE_MODE,
            }
            if eps is not None:
                made = engine.make_private_with_epsilon(
                    target_epsilon=eps, target_delta=float(delta), epochs=cfg["epochs"], **common
                )
            else:
                made = engine.make_private(noise_multiplier=sigma, **common)
            if len(made) == 4:  # ghost clipping: the loss wrapper runs both backward passes
                dp_model, dp_optimizer, loss_fn, dp_loader = made
            else:
                dp_model, dp_optimizer, dp_loader = made
                loss_fn = torch.nn.CrossEntropyLoss()
            steps = 0
            dp_model.train()
            for _ in range(cfg["epochs"]):
                # Opacus's Poisson sampler yields index batches (possibly empty); the rows are
                # gathered with one indexing operation
                for idx in dp_loader.batch_sampler:
                    idx = torch.as_tensor(idx, dtype=torch.int64)
                    dp_optimizer.zero_grad(set_to_none=True)
                    loss_fn(dp_model(X_t[idx]), y_t[idx]).backward()
                    dp_optimizer.step()
                    steps += 1
            self.epsilon_spent_ = float(engine.get_epsilon(float(delta)))
        self.noise_multiplier_ = float(dp_optimizer.noise_multiplier)
        self.sample_rate_ = float(dp_loader.sample_rate)
        # a clean copy of the weights, free of Opacus's hooks and per-sample gradient buffers
        trained = build_mlp(
            torch, X.shape[1], cfg["hidden"], classes.size, self.activation, gens[0]
        )
        trained.load_state_dict(dp_model._module.state_dict())
        self._finish(trained, classes, X.shape[1], steps)
        return self
