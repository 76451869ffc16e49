"""The rules families, as the release policy names them: :mod:`anonml.modelfile._family`.

The family table and the functions that place a model in it live below both halves (the file
readers name a model's family inside the sandbox, the rules check parameter names against it);
this module keeps the policy's own import path for them.
"""

from anonml.modelfile._family import (
    ESTIMATORS,
    SAFE_BASES,
    SAFE_MODEL,
    STORES_RECORDS,
    _is_pipeline,  # noqa: F401 - the policy reads pipelines too (_release)
    describe_model,
    dp_measures,
    family_param_names,
    final_step,
    model_family,
    model_params,
    rule_params,
    unwrap,
)

__all__ = ["ESTIMATORS", "SAFE_BASES", "SAFE_MODEL", "STORES_RECORDS", "describe_model",
           "dp_measures", "family_param_names", "final_step", "model_family", "model_params",
           "rule_params", "unwrap"]
