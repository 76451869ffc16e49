"""The facts the release rules read from a fitted model: its family, hyperparameters and DP
budget (:func:`ante_hoc_facts`), whether it changed since fit (:func:`tamper_status`), and its
structure and content measured on the training and test rows (:func:`posthoc_facts`).

Measurement only, no judgement: :mod:`anonml.safemodel` evaluates the rules on these facts.
They live beside the file readers because the audit measures an untrusted model inside the
sandbox worker (:mod:`anonml.modelfile._sandbox_worker`), which answers with these facts; the
safe wrappers measure their own fitted model with the same functions.

References
----------
Ritchie, F., et al. (2023). Recommendations for disclosure control of trained machine learning
models from trusted research environments (TREs). The facts are those SACRO-ML's
``safemodel`` checks read: hyperparameters, tamper evidence, structure.
"""

from __future__ import annotations

from typing import Any

from anonml.modelfile._family import (
    STORES_RECORDS,
    _is_pipeline,
    dp_measures,
    final_step,
    model_family,
    rule_params,
)

__all__ = ["ante_hoc_facts", "fingerprint_holder", "posthoc_facts", "tamper_status"]


def ante_hoc_facts(model: Any, n_samples: int | None = None) -> dict:
    """What the hyperparameter and privacy-budget rules read from ``model``."""
    family = model_family(model)
    measures = {"model.stores_training_records": family in STORES_RECORDS}
    measures.update(dp_measures(model))
    if n_samples is None:
        n_samples = getattr(model, "anonml_n_samples_", None)
    return {"family": family, "params": rule_params(model), "measures": measures,
            "n_samples": n_samples}


def fingerprint_holder(model: Any) -> Any:
    """The part of ``model`` that carries a fit-time fingerprint: the model itself, else the
    final step of a pipeline (whose preprocessing steps are then not covered: wrap the whole
    pipeline in :class:`~anonml.safemodel.SafeModel` to cover them). ``None`` when there is none."""
    if hasattr(model, "anonml_fingerprint_"):
        return model
    if _is_pipeline(model) and model.steps:
        return fingerprint_holder(model.steps[-1][1])
    return None


def tamper_status(model: Any) -> tuple[str, list]:
    """Compare ``model`` with the fingerprint its safe wrapper took at fit."""
    from anonml.modelfile._fingerprint import diff_fingerprints, fingerprint

    holder = fingerprint_holder(model)
    if holder is None:
        return "no_fingerprint", []
    changed = diff_fingerprints(holder.anonml_fingerprint_, fingerprint(holder))
    return ("changed" if changed else "unchanged"), changed


def posthoc_facts(model: Any, X_train: Any = None, y_train: Any = None, X_test: Any = None,
                  y_test: Any = None, *, threshold: int = 10, dof_threshold: int = 10) -> dict:
    """Tamper status and structural measures of any fitted model, as rule facts."""
    status, changed = tamper_status(model)
    structure: dict = {}
    X_train_raw, X_test_raw = X_train, X_test
    if X_train is not None and y_train is not None:
        from anonml.modelfile._structure import structural_measures

        final, X_train = final_step(model, X_train)
        X_test = final_step(model, X_test)[1] if X_test is not None else None
        structure = structural_measures(final, X_train, y_train, X_test, y_test,
                                        threshold=threshold, dof_threshold=dof_threshold)
    measures = {"tamper.has_fingerprint": status != "no_fingerprint"}
    if status != "no_fingerprint":
        measures["tamper.unchanged"] = status == "unchanged"
    for key, value in structure.items():
        if value is not None and not isinstance(value, str):
            measures[f"structure.{key}"] = value
    facts = ante_hoc_facts(model)
    facts["measures"].update(measures)
    facts["tamper"] = (status, changed)
    facts["structure"] = structure
    if X_train is not None:
        from anonml.modelfile._content import training_records_in_model

        # the family rule (kNN, SVM) stays; the content check adds any model whose arrays
        # hold per-row data or training rows (raw tables, before any pipeline step)
        content = training_records_in_model(model, X_train_raw, X_test_raw)
        facts["content"] = content
        if content["stores_training_records"]:
            facts["measures"]["model.stores_training_records"] = True
            facts["stores_training_records_evidence"] = content["evidence"]
    return facts
