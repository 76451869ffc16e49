"""The rules families, as the release policy names them: :mod:`anonml.modelfile._family`.

The family table and the functions that place a model in it live with the file readers (the
sandbox worker names an untrusted model's family; the rules check parameter names against the
table); this module keeps their old import path, ``anonml.safemodel._family``, working.
"""

from anonml.modelfile._family import (
    ESTIMATORS,
    SAFE_BASES,
    SAFE_MODEL,
    STORES_RECORDS,
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
