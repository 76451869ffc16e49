"""Safe wrappers of the DP baselines (``anonml[dp]``, ``anonml[torch]``; the DP SVC needs no
extra) and of XGBoost (``anonml[xgboost]``).

The DP adapters import diffprivlib / torch only when fitted, so these classes can be defined
without them; XGBoost is imported when :class:`SafeXGBClassifier` is first asked for.
"""

from __future__ import annotations

from typing import Any

from anonml.dp._diffprivlib import DPLogisticRegression, DPRandomForestClassifier
from anonml.dp._dpsgd import DPSGDClassifier
from anonml.dp._svc import DPSVC
from anonml.safemodel._wrappers import SafeModelMixin


class SafeDPRandomForestClassifier(SafeModelMixin, DPRandomForestClassifier):
    """:class:`anonml.dp.DPRandomForestClassifier` (diffprivlib) with the risk-appetite checks
    (privacy budget, leaf sizes)."""


class SafeDPLogisticRegression(SafeModelMixin, DPLogisticRegression):
    """:class:`anonml.dp.DPLogisticRegression` (diffprivlib) with the risk-appetite checks."""


class SafeDPSGDClassifier(SafeModelMixin, DPSGDClassifier):
    """:class:`anonml.dp.DPSGDClassifier` (Opacus DP-SGD) with the risk-appetite checks
    (epsilon, delta, clipping, noise multiplier)."""


class SafeDPSVC(SafeModelMixin, DPSVC):
    """:class:`anonml.dp.DPSVC` (ε-DP RBF support-vector classifier on random Fourier features)
    with the risk-appetite checks: epsilon, the kernel fixed in advance (``gamma`` a number, a
    bounded number of random features), residual degrees of freedom."""


def _xgb_class() -> Any:
    try:
        from xgboost import XGBClassifier
    except ImportError:  # pragma: no cover - depends on the extra
        from anonml._errors import InputError
        from anonml._install import install_hint

        raise InputError(f"SafeXGBClassifier needs xgboost; fix: {install_hint('xgboost')}"
                         ) from None

    class SafeXGBClassifier(SafeModelMixin, XGBClassifier):
        """:class:`xgboost.XGBClassifier` with the risk-appetite checks."""

    SafeXGBClassifier.__module__ = __name__
    return SafeXGBClassifier


_CACHE: dict = {}


def __getattr__(name: str) -> Any:
    if name == "SafeXGBClassifier":
        if name not in _CACHE:
            _CACHE[name] = _xgb_class()
        return _CACHE[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
