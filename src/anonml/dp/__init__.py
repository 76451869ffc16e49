"""Differentially private baselines: data masking, input and output perturbation.

* :class:`MaskedDataGenerator`: a synthetic dataset on which L2-regularized logistic regression
  recovers an ε-DP (output-perturbed) model (Pham, Ghosh & Yegneswaran, 2019).
* :class:`OutputPerturbationLogisticRegression`: that ε-DP model itself (Chaudhuri, Monteleoni &
  Sarwate, 2011).
* :class:`InputPerturbation`: Laplace noise on each record and randomized response on labels.
* :class:`DPRandomForestClassifier` and :class:`DPLogisticRegression`: diffprivlib's ε-DP random
  forest and objective-perturbation logistic regression behind fail-closed adapters
  (``pip install 'anonml[dp]'``).
* :class:`DPSVC`: an ε-DP RBF-kernel support-vector classifier, output perturbation on random
  Fourier features (Rubinstein et al. 2012; Chaudhuri, Monteleoni & Sarwate 2011).
* :class:`DPSGDClassifier`: an (ε, δ)-DP multilayer perceptron trained with DP-SGD by Opacus, and
  :class:`MLPTorchClassifier`, the same network trained without noise
  (``pip install 'anonml[torch]'``).

Every mechanism needs public bounds on the data and fails closed without them. The optional
libraries (diffprivlib, torch, opacus) are imported only when one of their estimators is fitted.
"""

from anonml._lazy import lazy_attributes
from anonml.dp._input_perturbation import InputPerturbation, randomized_response
from anonml.dp._logistic import OutputPerturbationLogisticRegression
from anonml.dp._masking import MaskedDataGenerator
from anonml.dp._noise import l2_laplace_noise

_LAZY = {
    "DPLogisticRegression": "anonml.dp._diffprivlib",
    "DPRandomForestClassifier": "anonml.dp._diffprivlib",
    "DPSGDClassifier": "anonml.dp._dpsgd",
    "DPSVC": "anonml.dp._svc",
    "MLPTorchClassifier": "anonml.dp._dpsgd",
}

__all__ = [
    "DPLogisticRegression",
    "DPRandomForestClassifier",
    "DPSGDClassifier",
    "DPSVC",
    "InputPerturbation",
    "MLPTorchClassifier",
    "MaskedDataGenerator",
    "OutputPerturbationLogisticRegression",
    "l2_laplace_noise",
    "randomized_response",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
