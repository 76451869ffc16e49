"""The release report as data (schema v1 of :mod:`anonml.report`): assembled here, rendered
there. Everything a renderer shows is computed and worded here; nothing here is a record."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from anonml._utils import json_safe
from anonml.modelfile._facts import fingerprint_holder
from anonml.modelfile._family import describe_model, model_params, unwrap
from anonml.safemodel._rules import MEASURE_LABELS

SCHEMA_VERSION = "1.0"

GLOSSARY = (
    ("Membership inference", "An attack that guesses whether a given person's record was used "
     "to train the model. If it works, releasing the model tells the world who was in the "
     "data."),
    ("Attribute inference", "An attack that fills in one unknown value of a person (say, their "
     "income band) from their other values and the model's answers."),
    ("AUC", "Area under the ROC curve: how well an attack separates members from non-members. "
     "0.5 is a coin toss, 1.0 is perfect."),
    ("ROC curve", "The share of members an attack finds (true-positive rate) against the share "
     "of non-members it wrongly accuses (false-positive rate), over all its thresholds. The "
     "diagonal is guessing."),
    ("FPR / TPR", "False-positive rate: non-members wrongly flagged. True-positive rate: members "
     "correctly flagged. A high TPR at a very low FPR means some people are exposed with "
     "confidence."),
    ("p-value", "How likely a result at least this strong is if the attack were really "
     "guessing. Below 0.05 is called significant."),
    ("Worst-case attack", "SACRO-ML's membership attack in which the attacker is given the "
     "model's outputs on members and non-members and trains a classifier on them: a stronger "
     "attacker than any real one, so a safe result here is reassuring."),
    ("RMIA", "Robust membership inference (Zarifzadeh et al. 2024): compares the model's "
     "confidence on a record with reference models trained without it."),
    ("LiRA", "Likelihood-ratio attack (Carlini et al. 2022): the same idea as RMIA with many "
     "shadow models trained with and without each record."),
    ("Attribute risk ratio (ARR)", "How much more often the attribute attack singles out the "
     "true value of a training record than of a new record. 1 means no difference. Its 95 % "
     "interval is Katz's; when a count is zero, 0.5 is added to every count first."),
    ("k-anonymity", "Every combination of identifying values is shared by at least k people, "
     "so no one can be picked out from fewer than k."),
    ("Equivalence class", "A group of training records the model cannot tell apart (same leaf, "
     "or the same output)."),
    ("Class disclosure", "A small group for which the model says some outcome is impossible: "
     "that tells you something true about every person in the group."),
    ("Residual degrees of freedom", "Training records minus numbers the model learned. Near "
     "zero or below, the model can store its training data."),
    ("Generalisation gap", "Accuracy on training records minus accuracy on new records; a large "
     "gap means the model memorised its training records."),
    ("Differential privacy (epsilon, delta)", "A guarantee that any one person changes the "
     "model's behaviour by at most a factor e^epsilon, except with probability delta."),
    ("Fingerprint", "A SHA-256 digest of the model's parameters and learned values taken when "
     "it was trained; any later change shows up as a different digest."),
    ("Risk appetite", "The thresholds a trusted research environment sets for release, in a "
     "rules file it controls; each threshold in this report names its source."),
)


def _sha256_file(path: Any) -> str:
    from anonml import _io

    digest = hashlib.sha256()
    with _io.open_regular(path, "model file", max_bytes=_io.MAX_MODEL_BYTES) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _family_words(families: Any) -> str:
    return ", ".join(str(f).replace("_", " ") for f in families)


def _note(o: Any, family: str, unmeasurable: dict) -> str | None:
    """Why a rule shows no measurement (``None`` when it has one)."""
    if o.measured is not None and o.outcome in ("pass", "fail"):
        return None
    stated = [unmeasurable[m] for m in o.missing if m in unmeasurable]
    if stated:
        text = "; ".join(dict.fromkeys(stated))
        return text[:1].upper() + text[1:] + "."
    if o.outcome == "not_applicable" and not o.rule.applies(family):
        return (f"Applies to {_family_words(o.rule.applies_to)} only; this model is "
                f"{_family_words([family])}.")
    if o.missing:
        what = ", ".join(o.missing)
        if o.outcome == "not_applicable":
            return f"Optional rule: this audit did not produce {what}."
        return (f"This audit did not produce {what} (the attack was not run, the model was "
                "given as probabilities only, or the input was not given).")
    return None


def _evidence(outcomes: list, family: str = "generic", unmeasurable: dict | None = None) -> list:
    unmeasurable = unmeasurable or {}
    return [{
        "rule_id": o.rule.id, "title": o.rule.title, "category": o.rule.category,
        "outcome": o.outcome, "effect": o.rule.effect, "measured": o.measured,
        "threshold": o.threshold, "explanation": o.rule.explanation, "fix": o.rule.fix,
        "source": o.rule.source, "condition": o.rule.condition,
        "note": _note(o, family, unmeasurable),
    } for o in outcomes]


def _model_section(model: Any, family: str, target: Any, model_file: Any,
                   computed: dict | None = None) -> dict:
    """The report's model section; ``computed``: the same facts from the sandbox worker that
    holds a sandboxed model (which the auditor's process cannot inspect)."""
    X = target.X("train") if target.has_model else None
    names = [str(c) for c in X.columns] if isinstance(X, pd.DataFrame) else []
    if computed is not None:
        desc, params = computed["class"], computed["params"]
        digest, n_features = computed["fingerprint"], computed["n_features"]
    else:
        holder = fingerprint_holder(model) if model is not None else None
        fp = getattr(holder, "anonml_fingerprint_", None)
        digest = fp["digest"] if isinstance(fp, dict) and "digest" in fp else None
        n_features = getattr(unwrap(model), "n_features_in_", None) if model is not None \
            else None
        desc = describe_model(model) if model is not None else "probabilities only"
        params = model_params(model) if model is not None else {}
    if n_features is None and X is not None:
        n_features = X.shape[1]
    # the hash of the bytes audited: the sandbox hashed its private copy as it made it
    sha = getattr(model, "sha256", None) if model is not None else None
    if sha is None and model_file is not None:
        sha = _sha256_file(model_file)
    return {
        "class": desc,
        "family": family,
        "params": params,
        "fingerprint": digest,
        "file": ({"name": Path(model_file).name, "sha256": sha}
                 if model_file is not None else None),
        "n_features": int(n_features) if n_features is not None else None,
        "n_classes": int(target.n_classes),
        "feature_names": names,
    }


#: what the report keeps of :func:`anonml.safemodel.verify_mapping`'s facts
MAPPING_KEYS = ("method", "k", "n_groups", "smallest_group", "n_training_rows",
                "quasi_identifiers", "recoding", "checks", "reveals")
#: kept when present: the routes' bounds, and what the training rows gave (measured vs claimed)
MAPPING_OPTIONAL_KEYS = ("routes", "measured", "inventory", "privacy_claim")


def _mapping_section(mapping: dict) -> dict:
    out = {k: mapping[k] for k in MAPPING_KEYS}
    out.update({k: mapping[k] for k in MAPPING_OPTIONAL_KEYS if mapping.get(k) is not None})
    return out


def build_report(*, verdict: Any, outcomes: list, ruleset: Any, target: Any, model: Any,
                 family: str, tamper: tuple, structure: dict, anonymization: dict | None,
                 mapping: dict | None = None,
                 membership: list, attribute: list, model_file: Any, target_name: str | None,
                 dataset_name: str | None, timings: dict,
                 unmeasurable: dict | None = None, model_section: dict | None = None,
                 refit_adjustments: list | None = None) -> dict:
    """The report dict (see ``anonml/report/schema``); JSON-safe, no records."""
    from anonml import __version__

    model_desc = (model_section["inner_class"] if model_section is not None
                  else describe_model(unwrap(model)) if model is not None
                  else "a model (probabilities only)")
    title = f"Release check: {model_desc}"
    if dataset_name and anonymization is not None:
        # the model was fitted on the anonymized table; dataset_name names the original rows
        # the attacks were run on
        title += (f" trained on an anonymized version of {dataset_name} "
                  f"(k = {anonymization['k']}), attacked on the original rows")
    elif dataset_name:
        title += f" trained on {dataset_name}"
    preliminary = [{"rule_id": o.rule.id,
                    "message": f"{o.measured or 'not measured'}; needs {o.threshold}",
                    "fix": o.rule.fix or ""}
                   for o in outcomes
                   if o.outcome == "fail" and o.rule.category in ("hyperparameter",
                                                                   "privacy_budget")]
    status, changed = tamper
    report = {
        "schema_version": SCHEMA_VERSION,
        "report_type": "anonml.release-report",
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "anonml_version": __version__,
        "title": title,
        "verdict": verdict.to_dict(),
        "model": {**_model_section(model, family, target, model_file, model_section),
                  **({"refit_adjustments": [
                      {k: str(a.get(src, "")) for k, src in (
                          ("path", "path"), ("parameter", "parameter"),
                          ("file_value", "file_value"), ("value_used", "value_used"))}
                      for a in refit_adjustments]} if refit_adjustments else {})},
        "data": {"n_train": int(target.n("train")), "n_test": int(target.n("test")),
                 "target": target_name, "anonymization": anonymization,
                 **({"mapping": _mapping_section(mapping)} if mapping else {})},
        "rules": {"name": ruleset.name, "version": ruleset.version, "origin": ruleset.origin,
                  "sha256": ruleset.sha256, "n_rules": len(ruleset)},
        "evidence": _evidence(outcomes, family, unmeasurable),
        "attacks": membership,
        "attribute_risk": attribute,
        "checks": {"preliminary": preliminary,
                   "tamper": {"status": status, "changed": list(changed)},
                   "structure": {k: v for k, v in structure.items()
                                 if v is None or isinstance(v, (bool, int, float))}},
        "glossary": [{"term": t, "definition": d} for t, d in GLOSSARY],
        "labels": dict(MEASURE_LABELS),
        "timings": timings,
    }
    return json_safe(report)
