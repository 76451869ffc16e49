"""Differentially private baselines: data masking, input and output perturbation.

* :class:`MaskedDataGenerator`: a synthetic dataset on which L2-regularized logistic regression
  recovers an ε-DP (output-perturbed) model (Pham, Ghosh & Yegneswaran, 2019).
* :class:`OutputPerturbationLogisticRegression`: that ε-DP model itself (Chaudhuri, Monteleoni &
  Sarwate, 2011).
* :class:`InputPerturbation`: Laplace noise on each record and randomized response on labels.

Every mechanism needs public bounds on the data and fails closed without them.
"""

from anonml.dp._input_perturbation import InputPerturbation, randomized_response
from anonml.dp._logistic import OutputPerturbationLogisticRegression
from anonml.dp._masking import MaskedDataGenerator
from anonml.dp._noise import l2_laplace_noise

__all__ = [
    "InputPerturbation",
    "MaskedDataGenerator",
    "OutputPerturbationLogisticRegression",
    "l2_laplace_noise",
    "randomized_response",
]
