"""Black-box membership inference: an attack model on the target's outputs and the true label.

The attack of Shokri et al. (2017) in the form used by Goldsteen et al. (2022, Sec. 4.3) to
measure the privacy of anonymized models (the ``MembershipInferenceBlackBox`` of the
Adversarial Robustness Toolbox, ART): instead of shadow models, the attacker is assumed to know
part of the real training set. With ``attack_train_ratio = r``:

1. ``m = floor(r · min(n_members, n_nonmembers))`` members and ``m`` non-members are drawn at
   random; the attack model learns to tell them apart from the target's output vector
   ``f(x)`` (probabilities, or log-probabilities) and the one-hot true label ``y``.
2. The attack is evaluated on the remaining members and non-members, subsampled to 50/50
   (:func:`~anonml.attacks._core.balanced_indices`); the score of a record is the attack
   model's probability that it is a member, and its decision is ``score >= 0.5``.

Attack models
-------------
``"nn"``
    The network of ART (and of the source paper): a branch ``n_classes → 512 → 100 → 64`` on
    ``f(x)``, a branch ``n_classes → 256 → 64`` on the one-hot label, ReLU after every hidden
    layer, the two 64-vectors concatenated and mapped ``128 → 1`` by a sigmoid; binary
    cross-entropy, Adam, learning rate 1e-4, mini-batches of 100, 100 epochs (ART's defaults).
    Needs PyTorch (``pip install 'anonml[torch]'``).
``"rf"`` (default), ``"gb"``
    scikit-learn ``RandomForestClassifier()`` / ``GradientBoostingClassifier()`` (default
    hyper-parameters, as in ART) on the concatenation ``[f(x), onehot(y)]``. Core install only.
an estimator
    Any scikit-learn classifier with ``predict_proba``, cloned and fitted on ``[f(x), onehot(y)]``.

Why not ART itself
------------------
ART's class needs an ART estimator object wrapping the model (``SklearnClassifier``), which a
probabilities-only :class:`~anonml.attacks._core.Target` (a black-box or non-Python model)
does not have; its one-hot encoding of ``y`` uses the number of labels *present in the given
split*, so a class missing from one split changes the input width; and its PyTorch training
shuffles with the global torch RNG. The network is about sixty lines, so it is rewritten here
with local, seeded randomness, and ART (a large dependency) is not needed.

A limitation of the paper's network (kept, not fixed)
-----------------------------------------------------
The two branches meet in one *linear* layer before the sigmoid, so the attack's logit is a sum
``a(f(x)) + b(y)``: it cannot express an interaction such as "the model is confident in the
*true* class". Against a model whose outputs are one-hot (a fully grown decision tree: members
and non-members look alike except for *whether* the predicted class is right), the ``"nn"``
attack therefore stays near chance while ``"rf"`` and ``"gb"`` (which split on both inputs)
detect the memorization. Use ``"rf"`` for a worst-case estimate.

References
----------
Shokri, Stronati, Song & Shmatikov (2017). Membership inference attacks against machine
learning models. IEEE S&P.
Goldsteen, Ezov, Shmelkin, Moffie & Farkash (2022). Anonymizing machine learning models.
DPM/CBT workshops, LNCS 13140, Sec. 4.3.
Nicolae et al. (2018). Adversarial Robustness Toolbox v1.0.0. arXiv:1807.01069.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from anonml._errors import InputError
from anonml._utils import check_int, check_real
from anonml.attacks._core import (
    AttackResult,
    Target,
    as_generator,
    attack_result,
    balanced_indices,
)

__all__ = ["MembershipInferenceBlackBox", "attack_model_from_spec", "check_target"]

_EPS = 1e-12
_MODELS = ("nn", "rf", "gb")


# ---------------------------------------------------------------------------------------------
# shared checks (also used by the worst-case attack)
# ---------------------------------------------------------------------------------------------
def check_target(target: Any) -> Target:
    if not isinstance(target, Target):
        raise InputError(
            f"target must be an anonml.attacks.Target, got {type(target).__name__}; wrap the "
            "model and data: Target(model, X_train, y_train, X_test, y_test)"
        )
    return target


def check_open_fraction(name: str, value: Any, example: str) -> float:
    return check_real(name, value, high=1, example=example)


def check_n_jobs(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value == 0:
        raise InputError(f"n_jobs={value!r} must be None, a positive integer or -1 (all cores)")
    return int(value)


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def attack_model_from_spec(
    spec: Any, seed: int, n_jobs: int | None, *, rf_params: dict | None = None
) -> Any:
    """A fresh, seeded scikit-learn attack model from ``"rf"``, ``"gb"`` or an estimator."""
    if isinstance(spec, str):
        if spec == "rf":
            from sklearn.ensemble import RandomForestClassifier

            return RandomForestClassifier(random_state=seed, n_jobs=n_jobs, **(rf_params or {}))
        if spec == "gb":
            from sklearn.ensemble import GradientBoostingClassifier

            return GradientBoostingClassifier(random_state=seed)
        raise InputError(f"attack_model={spec!r} is not known; use 'rf', 'gb' or a classifier")
    if not (hasattr(spec, "fit") and hasattr(spec, "predict_proba")):
        raise InputError(
            f"attack_model {type(spec).__name__} needs fit and predict_proba; pass 'rf', 'gb' "
            "or a scikit-learn classifier"
        )
    model = clone(spec)
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        model.set_params(random_state=seed)
    return model


def member_column(model: Any) -> int:
    """Column of ``predict_proba`` that holds the member class (label 1)."""
    classes = list(getattr(model, "classes_", [0, 1]))
    return classes.index(1)


# ---------------------------------------------------------------------------------------------
# the paper's network (PyTorch, imported lazily)
# ---------------------------------------------------------------------------------------------
def _import_torch():
    try:
        import torch
    except ImportError:
        from anonml._install import install_hint

        raise InputError(
            f"attack_model='nn' needs PyTorch, which is not installed; {install_hint('torch')}"
            ", or use attack_model='rf'"
        ) from None
    return torch


def _build_network(torch: Any, n_features: int, n_classes: int, generator: Any) -> Any:
    nn = torch.nn

    class _AttackNet(nn.Module):
        """Shokri-style attack network as in ART / Goldsteen et al. (2022)."""

        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Linear(n_features, 512), nn.ReLU(),
                nn.Linear(512, 100), nn.ReLU(),
                nn.Linear(100, 64), nn.ReLU(),
            )
            self.labels = nn.Sequential(
                nn.Linear(n_classes, 256), nn.ReLU(),
                nn.Linear(256, 64), nn.ReLU(),
            )
            self.combine = nn.Linear(128, 1)

        def forward(self, f: Any, label: Any) -> Any:  # returns the logit
            return self.combine(torch.cat((self.features(f), self.labels(label)), dim=1))

    net = _AttackNet()
    # PyTorch's default initialisation (uniform ±1/sqrt(fan_in) for weights and biases), drawn
    # from the local generator instead of the global torch RNG
    with torch.no_grad():
        for layer in net.modules():
            if isinstance(layer, nn.Linear):
                bound = 1.0 / np.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.uniform_(-bound, bound, generator=generator)
    return net


def _train_network(
    F: np.ndarray, L: np.ndarray, target: np.ndarray, *, epochs: int, batch_size: int,
    learning_rate: float, seed: int,
) -> Any:
    torch = _import_torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(seed)
        net = _build_network(torch, F.shape[1], L.shape[1], gen)
        f = torch.as_tensor(F, dtype=torch.float32)
        lab = torch.as_tensor(L, dtype=torch.float32)
        t = torch.as_tensor(target, dtype=torch.float32).unsqueeze(1)
        opt = torch.optim.Adam(net.parameters(), lr=learning_rate)
        loss_fn = torch.nn.BCEWithLogitsLoss()  # sigmoid + BCE, numerically stable
        n = f.shape[0]
        net.train()
        for _ in range(epochs):
            order = torch.randperm(n, generator=gen)
            f_e, lab_e, t_e = f[order], lab[order], t[order]  # one gather per epoch
            for start in range(0, n, batch_size):
                stop = start + batch_size
                opt.zero_grad()
                loss = loss_fn(net(f_e[start:stop], lab_e[start:stop]), t_e[start:stop])
                loss.backward()
                opt.step()
        net.eval()
    finally:
        torch.set_num_threads(threads)
    return net


def _network_scores(net: Any, F: np.ndarray, L: np.ndarray) -> np.ndarray:
    torch = _import_torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            f = torch.as_tensor(F, dtype=torch.float32)
            lab = torch.as_tensor(L, dtype=torch.float32)
            out = torch.sigmoid(net(f, lab))
    finally:
        torch.set_num_threads(threads)
    return out.numpy()[:, 0].astype(np.float64)


# ---------------------------------------------------------------------------------------------
# the attack
# ---------------------------------------------------------------------------------------------
class MembershipInferenceBlackBox(BaseEstimator):
    """Black-box membership inference with partial knowledge of the training set.

    See the module docstring for the protocol and the attack models.

    Parameters
    ----------
    attack_model : {"rf", "gb", "nn"} or classifier, default "rf"
        The attack model. ``"nn"`` is the network of the source paper (needs PyTorch);
        ``"rf"`` works with the core install and is the stronger choice (see the module notes).
    attack_train_ratio : float in (0, 1), default 0.5
        Fraction of the members (and as many non-members) the attacker knows and trains on.
    input_type : {"proba", "log_proba"}, default "proba"
        The target's output fed to the attack: probabilities, or their logarithms
        (log-probabilities, the logits up to a per-record constant; clipped at 1e-12).
    epochs, batch_size, learning_rate : int, int, float
        Training of the ``"nn"`` model (ART's defaults 100, 100, 1e-4); ignored otherwise.
    n_jobs : int, optional
        Parallel jobs of the random forest.
    random_state : int, Generator or None
        Seeds the split, the evaluation subsample and the attack model.

    Attributes
    ----------
    attack_model_ : object
        The fitted attack model of the last :meth:`run` (a torch module for ``"nn"``).

    Examples
    --------
    >>> result = MembershipInferenceBlackBox(random_state=0).run(
    ...     Target(model, X_train, y_train, X_test, y_test))       # doctest: +SKIP
    >>> result.auc, result.advantage                               # doctest: +SKIP
    """

    def __init__(
        self,
        attack_model: Any = "rf",
        attack_train_ratio: float = 0.5,
        input_type: str = "proba",
        *,
        epochs: int = 100,
        batch_size: int = 100,
        learning_rate: float = 1e-4,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.attack_model = attack_model
        self.attack_train_ratio = attack_train_ratio
        self.input_type = input_type
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _check_params(self) -> None:
        if isinstance(self.attack_model, str) and self.attack_model not in _MODELS:
            raise InputError(
                f"attack_model={self.attack_model!r} is not known; use one of "
                f"{', '.join(map(repr, _MODELS))} or a scikit-learn classifier"
            )
        check_open_fraction("attack_train_ratio", self.attack_train_ratio, "0.5")
        if self.input_type not in ("proba", "log_proba"):
            raise InputError(
                f"input_type={self.input_type!r} is not known; use 'proba' or 'log_proba'"
            )
        if self.attack_model == "nn":
            check_int("epochs", self.epochs)
            check_int("batch_size", self.batch_size)
            check_real("learning_rate", self.learning_rate, example=1e-4)
        check_n_jobs(self.n_jobs)

    def _features(self, target: Target, which: str) -> tuple[np.ndarray, np.ndarray]:
        P = target.proba(which)
        F = np.log(np.maximum(P, _EPS)) if self.input_type == "log_proba" else P
        L = np.eye(target.n_classes)[target.label_codes(which)]
        return F, L

    def run(self, target: Target) -> AttackResult:
        """Train the attack on the known part and evaluate it on the rest (50/50).

        Parameters
        ----------
        target : Target
            A model (or its probabilities) with members and non-members.

        Returns
        -------
        AttackResult
            Named ``"blackbox-<model>"``; ``extra`` holds the sizes of the attack's training
            and evaluation sets, the attack model and the input type.
        """
        self._check_params()
        target = check_target(target)
        if self.attack_model == "nn":
            _import_torch()  # fail before any work when PyTorch is missing
        rng = as_generator(self.random_state)
        n_in, n_out = target.n("train"), target.n("test")
        m = int(np.floor(self.attack_train_ratio * min(n_in, n_out)))
        if m < 1 or n_in - m < 1 or n_out - m < 1:
            raise InputError(
                f"too few records for attack_train_ratio={self.attack_train_ratio}: "
                f"{n_in} members and {n_out} non-members leave {m} to train the attack on and "
                f"{min(n_in, n_out) - m} to evaluate it; pass more records or change the ratio"
            )
        perm_in, perm_out = rng.permutation(n_in), rng.permutation(n_out)
        train_in, rest_in = perm_in[:m], perm_in[m:]
        train_out, rest_out = perm_out[:m], perm_out[m:]
        ev_in, ev_out = balanced_indices(rest_in.size, rest_out.size, rng)
        ev_in, ev_out = rest_in[ev_in], rest_out[ev_out]

        F_in, L_in = self._features(target, "train")
        F_out, L_out = self._features(target, "test")
        F_fit = np.vstack([F_in[train_in], F_out[train_out]])
        L_fit = np.vstack([L_in[train_in], L_out[train_out]])
        t_fit = np.r_[np.ones(m), np.zeros(m)]
        F_ev = np.vstack([F_in[ev_in], F_out[ev_out]])
        L_ev = np.vstack([L_in[ev_in], L_out[ev_out]])
        labels = np.r_[np.ones(ev_in.size, dtype=np.int64), np.zeros(ev_out.size, dtype=np.int64)]

        seed = _seed(rng)
        if self.attack_model == "nn":
            net = _train_network(
                F_fit, L_fit, t_fit, epochs=int(self.epochs), batch_size=int(self.batch_size),
                learning_rate=float(self.learning_rate), seed=seed,
            )
            scores = _network_scores(net, F_ev, L_ev)
            self.attack_model_ = net
            name = "nn"
        else:
            model = attack_model_from_spec(self.attack_model, seed, check_n_jobs(self.n_jobs))
            model.fit(np.hstack([F_fit, L_fit]), t_fit.astype(np.int64))
            scores = model.predict_proba(np.hstack([F_ev, L_ev]))[:, member_column(model)]
            self.attack_model_ = model
            name = self.attack_model if isinstance(self.attack_model, str) else type(model).__name__
        extra = {
            "attack_model": name,
            "input_type": self.input_type,
            "attack_train_ratio": float(self.attack_train_ratio),
            "n_attack_train_members": m,
            "n_attack_train_nonmembers": m,
            "n_eval_members": int(ev_in.size),
            "n_eval_nonmembers": int(ev_out.size),
        }
        if self.attack_model == "nn":
            extra.update(epochs=int(self.epochs), batch_size=int(self.batch_size),
                         learning_rate=float(self.learning_rate))
        return attack_result(f"blackbox-{name}", labels, scores, extra=extra, threshold=0.5)
