"""``request_release``: every check and attack on one model, a verdict, and the report data.

The steps, each timed and announced to ``progress``:

1. *preliminary* — hyperparameter and privacy-budget rules (ante-hoc);
2. *posthoc* — tamper check against the fingerprint taken at fit, structural measures on the
   training data (leaf k-anonymity, class disclosure, residual degrees of freedom,
   generalisation gap);
3. *anonymization* — when the training data was anonymized by anonml: k (and l, t) verified
   again from the training table alone;
4. the attacks of :mod:`anonml.attacks`: SACRO-ML's worst-case membership attack, RMIA (or
   LiRA) with reference models, and the worst-case attribute attack with risk ratios;
5. every rule evaluated on all the facts; the verdict (:mod:`anonml.safemodel._verdict`);
6. the report data (:mod:`anonml.safemodel._report_data`), rendered by :mod:`anonml.report`.

No record of the data enters the report: only counts, rates, hyperparameters, column names
and ROC points.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml._progress import check_progress
from anonml._utils import json_safe
from anonml.attacks._core import Target
from anonml.modelfile._facts import posthoc_facts
from anonml.modelfile._sandbox import is_sandboxed
from anonml.modelfile._family import _is_pipeline, model_family
from anonml.safemodel._rules import evaluate_rules, resolve_rules
from anonml.safemodel._verdict import Verdict, decide
from anonml.safemodel._wrappers import SafeModelMixin

ATTACKS = ("worst_case", "rmia", "lira", "attribute")
DEFAULT_ATTACKS = ("worst_case", "rmia", "attribute")
ATTACK_NAMES = {
    "worst_case": "Worst-case membership attack (SACRO-ML)",
    "rmia": "Membership attack with reference models (RMIA)",
    "lira": "Likelihood-ratio membership attack (LiRA)",
}


@dataclass
class ReleaseDecision:
    """The outcome of :func:`request_release`.

    Attributes
    ----------
    decision : {"release", "release_with_conditions", "do_not_release"}
    verdict : Verdict
        Decision, plain-language summary, reasons, conditions, next steps.
    outcomes : list of RuleOutcome
        Every rule of the rules file, evaluated.
    measures : dict
        The flat measurements the rules read (``"membership.max_auc"``, ...).
    unmeasurable : dict
        Measures this audit could not resolve, with the reason in words (a rule reading one
        is not evaluated and becomes a condition).
    report : dict
        The report data (schema ``anonml.report`` v1); no records.
    attack_results : dict
        The attack result objects by id (they hold per-record scores: keep them inside).
    """

    decision: str
    verdict: Verdict
    outcomes: list
    measures: dict
    report: dict
    attack_results: dict = field(default_factory=dict)
    unmeasurable: dict = field(default_factory=dict)

    def write(self, out_dir: Any, formats: tuple = ("json", "html", "pdf"), *,
              create: bool = False) -> dict:
        """Write report.json / report.html / report.pdf as one set: all or none (see
        :func:`anonml.report.write_report`; ``create`` makes a missing folder)."""
        from anonml.report import write_report

        return write_report(self.report, out_dir, formats=formats, create=create)

    def __str__(self) -> str:
        return f"{self.verdict.label}: {self.verdict.summary}"


def plain_estimator(model: Any) -> Any:
    """An unfitted copy of ``model`` without the safe wrapper (for shadow/reference models,
    which must not warn or fingerprint at every fit)."""
    from sklearn.base import clone

    from anonml.modelfile._sandbox import is_sandboxed

    if is_sandboxed(model):  # rebuilt from the bounded refit schema, fitted in a worker
        return clone(model)
    if getattr(model, "_anonml_generic", False):
        return plain_estimator(model.estimator)
    if _is_pipeline(model):
        pipe = clone(model)
        name, last = pipe.steps[-1]
        pipe.steps[-1] = (name, plain_estimator(last))
        return pipe
    if isinstance(model, SafeModelMixin):
        base = next(c for c in type(model).__mro__[1:]
                    if not issubclass(c, SafeModelMixin) and hasattr(c, "fit"))
        return base(**model.get_params(deep=False))
    return clone(model)


def _check_anonymization(spec: Any, target: Target, target_name: str | None,
                         table: Any = None) -> dict:
    """Independent k (l, t) verification of the anonymized training table (``table``, else the
    target's training data)."""
    from anonml.privacy import k_anonymity, l_diversity, t_closeness

    if hasattr(spec, "get_params") and hasattr(spec, "quasi_identifiers"):
        params = spec.get_params(deep=False)
        spec = {"method": type(spec).__name__, "quasi_identifiers": params["quasi_identifiers"],
                "k": params.get("k"), "sensitive": params.get("sensitive"),
                "l": params.get("l"), "t": params.get("t")}
    if not isinstance(spec, dict) or "quasi_identifiers" not in spec or "k" not in spec:
        raise InputError("anonymization= needs the fitted anonymizer or a dict with "
                         "'quasi_identifiers' and 'k'; fix: pass e.g. {'quasi_identifiers': "
                         "['age', 'sex'], 'k': 10}")
    X = target.X("train") if table is None else table
    if not isinstance(X, pd.DataFrame):
        raise InputError("the anonymization check needs the anonymized training table as a "
                         "DataFrame with the quasi-identifier columns; fix: pass it as "
                         "anonymized_train=")
    if len(X) != target.n("train"):
        raise InputError(f"anonymized_train has {len(X)} rows, the training data "
                         f"{target.n('train')}; fix: pass the anonymized version of the same "
                         "training rows")
    qi = list(spec["quasi_identifiers"]) if spec["quasi_identifiers"] is not None else None
    if qi is None:
        qi = list(X.columns)
    missing = [c for c in qi if c not in X.columns]
    if missing:
        raise InputError(f"quasi-identifier {missing[0]!r} is not a column of X_train; fix: "
                         "name the columns the anonymizer generalized")
    k_stated = int(spec["k"])
    k_got = int(k_anonymity(X, qi))
    out = {"method": str(spec.get("method") or "anonml"), "k": k_stated, "k_achieved": k_got,
           "l": None, "t": None, "quasi_identifiers": [str(c) for c in qi]}
    ok = k_got >= k_stated
    sensitive = spec.get("sensitive")
    table = X
    if sensitive is not None and sensitive not in X.columns:
        if sensitive != target_name:
            raise InputError(f"sensitive attribute {sensitive!r} is neither a column of X_train "
                             "nor the target; fix: name a column or the target")
        table = X.assign(**{str(sensitive): target.y("train")})
    if spec.get("l") is not None:
        got = float(l_diversity(table, qi, sensitive, kind=spec.get("l_kind", "distinct")))
        out["l"] = got
        ok = ok and got >= float(spec["l"]) * (1 - 1e-9)
    if spec.get("t") is not None:
        got = float(t_closeness(table, qi, sensitive))
        out["t"] = got
        ok = ok and got <= float(spec["t"]) + 1e-9
    out["verified"] = bool(ok)
    detail = f"{len(qi)} quasi-identifiers; smallest group {k_got} (stated k = {k_stated})"
    if out["l"] is not None:
        detail += f"; l-diversity {out['l']:.3g} (stated {spec['l']})"
    if out["t"] is not None:
        detail += f"; t-closeness {out['t']:.3g} (stated {spec['t']})"
    out["detail"] = detail + ("; verified from the training table" if ok else "; NOT verified")
    return out


def roc_points(fpr: np.ndarray, tpr: np.ndarray, n_points: int = 300) -> dict:
    """At most ``n_points`` + a few points of a ROC curve, dense at low FPR (for a log axis):
    for each FPR on a log grid the last ROC point at or below it, plus the ends."""
    fpr = np.asarray(fpr, dtype=float)
    tpr = np.asarray(tpr, dtype=float)
    grid = np.concatenate([np.logspace(-5, 0, n_points - 100), np.linspace(0, 1, 100)])
    idx = np.searchsorted(fpr, grid, side="right") - 1
    idx = np.unique(np.clip(np.concatenate([idx, [0, fpr.size - 1]]), 0, fpr.size - 1))
    return {"fpr": [float(v) for v in fpr[idx]], "tpr": [float(v) for v in tpr[idx]]}


def _arr_interval(risk: Any) -> tuple[float, float | None]:
    """95 % interval of an attribute risk ratio: Katz's, or with 0.5 added to every cell
    (Haldane–Anscombe) when a count is zero; (0, None) when no training record is at risk."""
    if math.isfinite(risk.arr_ci_low) and math.isfinite(risk.arr_ci_high):
        return risk.arr_ci_low, risk.arr_ci_high
    if risk.train_risky == 0:
        return 0.0, None
    a, b = risk.train_risky + 0.5, risk.test_risky + 0.5
    n1, n2 = risk.n_train + 1.0, risk.n_test + 1.0
    arr = (a / n1) / (b / n2)
    se = math.sqrt(max(1 / a - 1 / n1 + 1 / b - 1 / n2, 0.0))
    return arr * math.exp(-1.959964 * se), arr * math.exp(1.959964 * se)


def _membership_summary(attack_id: str, result: Any, seconds: float, settings: dict) -> dict:
    metrics = {
        "auc": result.auc, "auc_pvalue": result.auc_pvalue, "accuracy": result.accuracy,
        "advantage": result.advantage,
        "tpr_at_fpr_0.001": result.tpr_at_fpr(0.001),
        "tpr_at_fpr_0.01": result.tpr_at_fpr(0.01),
        "tpr_at_fpr_0.1": result.tpr_at_fpr(0.1),
    }
    if attack_id == "worst_case":
        metrics["auc"] = result.extra.get("mean_auc", result.auc)
        settings = {**settings, "repetitions": result.extra.get("n_reps"),
                    "significant_repetitions": result.extra.get("n_significant")}
    n_neg = int(result.n_nonmembers)
    return json_safe({"id": attack_id, "name": ATTACK_NAMES[attack_id], "kind": "membership",
                      "metrics": metrics, "roc": roc_points(result.fpr, result.tpr),
                      "settings": settings, "seconds": round(seconds, 3),
                      "n_nonmembers": n_neg, "fpr_min": 1.0 / n_neg if n_neg else None})


def _attribute_note(r: Any) -> str | None:
    """Why an attribute row has no risk ratio (``None`` when it has one)."""
    arr = r.arr
    if arr is not None and math.isfinite(arr):
        return None
    if r.test_risky == 0 and r.train_risky == 0:
        return ("no record of either set had its value inferred, so there is no ratio to "
                "measure (no extra risk was seen)")
    if r.test_risky == 0:
        records = "record" if r.train_risky == 1 else "records"
        return (f"no test record had its value inferred, against {r.train_risky:,} training "
                f"{records}: the ratio has no finite value (treat it as large)")
    return "the ratio could not be computed from the attack's counts"


#: the false positive rates at which the rules read a membership attack's true positive rate
_LOW_FPR = {"membership.max_tpr_at_fpr_0.001": 0.001}


def low_fpr_measures(membership: list) -> tuple[dict, dict]:
    """The largest TPR at each low FPR of ``_LOW_FPR``, over the attacks whose test set can
    resolve that FPR (at least ``1 / fpr`` non-members), and for each FPR no attack can
    resolve, the reason in words (for the verdict: such a rule becomes a condition).

    Returns
    -------
    measures, unmeasurable : dict, dict
    """
    measures: dict = {}
    unmeasurable: dict = {}
    for key, rate in _LOW_FPR.items():
        metric = f"tpr_at_fpr_{rate:g}"
        needed = math.ceil(round(1 / rate, 9))
        ok = [m["metrics"][metric] for m in membership
              if m.get("n_nonmembers") is not None and m["n_nonmembers"] >= needed
              and m["metrics"].get(metric) is not None]
        if ok:
            measures[key] = max(ok)
        elif membership:
            have = max((m.get("n_nonmembers") or 0) for m in membership)
            unmeasurable[key] = (
                f"true positive rate at {rate * 100:g} % false positives cannot be measured on a "
                f"test set of {have:,} rows; needs at least {needed:,} non-member rows "
                f"(the smallest false positive rate it can resolve is 1/{have:,})"
                if have else f"true positive rate at {rate * 100:g} % false positives cannot be "
                f"measured without non-member rows; needs at least {needed:,}")
    return measures, unmeasurable


def _run_attacks(target: Target, model: Any, attacks: tuple, *, n_reference: int,
                 attribute_features: Any, attribute_label: str,
                 max_attribute_records: int | None,
                 categorical_features: Any, n_jobs: Any, random_state: Any,
                 stage: Callable, progress: Callable | None = None,
                 ) -> tuple[dict, dict, list, list]:
    """Run ``attacks`` on ``target``; ``progress(label, done, total)`` hears each attack's
    counted parts (repetitions, reference models, features) as they finish."""
    from anonml.attacks import RMIA, LiRA, WorstCaseAttribute, WorstCaseMembership

    results: dict = {}
    measures: dict = {}
    membership: list = []
    attribute: list = []
    shadow = plain_estimator(model) if model is not None and {"rmia", "lira"} & set(attacks) \
        else None
    for attack_id in attacks:
        if attack_id in ("rmia", "lira", "attribute") and model is None:
            continue  # needs the model itself; the rules see these measures as missing
        t0 = time.perf_counter()
        if attack_id == "worst_case":
            with stage("worst-case membership attack"):
                res = WorstCaseMembership(n_jobs=n_jobs, random_state=random_state).run(
                    target, progress=progress)
            settings = {"attack_model": "random forest", "features": "sorted probabilities"}
            share = res.extra["n_significant"] / max(res.extra["n_reps"], 1)
            measures["membership.worst_case.share_significant"] = share
        elif attack_id in ("rmia", "lira"):
            cls = RMIA if attack_id == "rmia" else LiRA
            label = "RMIA" if attack_id == "rmia" else "LiRA"
            with stage(f"{label} membership attack ({n_reference} reference models)"):
                res = cls(n_reference, shadow_estimator=shadow, n_jobs=n_jobs,
                          random_state=random_state).run(target, progress=progress)
            settings = {"reference_models": n_reference}
        else:
            with stage("worst-case attribute attack"):
                res = WorstCaseAttribute(
                    attribute_features, categorical_features=categorical_features,
                    label=attribute_label, max_records=max_attribute_records,
                    random_state=random_state,
                ).run(target, progress=progress)
            results[attack_id] = res
            n = max(len(res.attributes), 1)
            alpha = 0.05 / n  # Bonferroni over the attacked features
            for r in res.attributes:
                low, high = _arr_interval(r)
                attribute.append(json_safe({
                    "feature": str(r.feature), "kind": r.kind, "arr": r.arr,
                    "ci_low": low, "ci_high": high, "p_value": r.pvalue,
                    "train_rate": r.train_rate, "test_rate": r.test_rate,
                    "significant": bool(r.pvalue < alpha), "note": _attribute_note(r)}))
            for feature, why in res.skipped.items():  # not attacked: the reason in the report
                attribute.append({"feature": feature, "kind": "continuous", "arr": None,
                                  "ci_low": None, "ci_high": None, "p_value": None,
                                  "train_rate": None, "test_rate": None,
                                  "significant": False, "note": why})
            measures["attribute.n_significant"] = sum(a["significant"] for a in attribute)
            measures["attribute.max_arr_ci_low"] = max(
                (a["ci_low"] for a in attribute if a["ci_low"] is not None), default=0.0)
            continue
        results[attack_id] = res
        summary = _membership_summary(attack_id, res, time.perf_counter() - t0, settings)
        membership.append(summary)
        measures[f"membership.{attack_id}.auc"] = summary["metrics"]["auc"]
    if membership:
        aucs = [m["metrics"]["auc"] for m in membership if m["metrics"]["auc"] is not None]
        if aucs:
            measures["membership.max_auc"] = max(aucs)
        measures.update(low_fpr_measures(membership)[0])
    return results, measures, membership, attribute


# ----------------------------------------------------------------------------- mapping facts
def mapping_measures(mapping: dict) -> dict:
    """The rules' measures of a released mapping's facts (:func:`verify_mapping`).

    With ``measured`` (the training rows mapped through it): ``anonymization.k_achieved`` is
    the measured smallest group, ``mapping.claims_match`` whether the file's claims equal the
    measurements, and ``anonymization.verified`` the same (the claim was checked against the
    data). Without it, the file's own smallest group and True (its structure was verified;
    :func:`verify_mapping` raises otherwise); ``mapping.claims_match`` is then not measured.
    """
    measured = mapping.get("measured")
    if not measured:
        return {"anonymization.k_achieved": int(mapping["smallest_group"]),
                "anonymization.verified": True}
    match = bool(measured["claims_match"])
    return {"anonymization.k_achieved": int(measured["k_measured"]),
            "anonymization.verified": match, "mapping.claims_match": match}


def mapping_details(mapping: dict) -> dict:
    """Words shown with the measures of :func:`mapping_measures` (in the verdict's reasons):
    both numbers, what the file claims and what the training rows give."""
    measured = mapping.get("measured")
    if not measured:
        return {"anonymization.k_achieved": "the file's own smallest group; not measured on "
                "the training rows"}
    lines = list(measured["mismatches"])
    claims = measured["claims"]
    shown = "; ".join(lines[:3]) + (f"; and {len(lines) - 3} more" if len(lines) > 3 else "")
    k_words = (f"measured on the {measured['n_rows']:,} training rows; the file claims "
               f"k = {claims['k']:,}")
    return {"anonymization.k_achieved": k_words,
            "anonymization.verified": (
                f"the mapping's claims differ from its training rows: {lines[0]}" if lines
                else "the mapping's claims equal what its training rows give"),
            "mapping.claims_match": shown or (
                f"the file claims k = {claims['k']:,} and {claims['n_groups']:,} groups; the "
                f"training rows give k = {measured['k_measured']:,} and "
                f"{measured['n_groups_measured']:,} groups")}


class _Stages:
    """Times the steps and announces each to ``progress`` as it starts and ends
    (``progress("<step> ...", 0, None)``, then ``progress("<step>: 1.2 s", 0, None)``)."""

    def __init__(self, progress: Callable | None):
        self.progress = check_progress(progress)
        self.times: dict = {}

    def __call__(self, name: str) -> _Stages:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()
        self.progress(f"{self._name} ...", 0, None)

    def __exit__(self, *exc: object) -> None:
        dt = time.perf_counter() - self._t0
        self.times[self._name] = round(dt, 3)
        if exc[0] is None:
            self.progress(f"{self._name}: {dt:.1f} s", 0, None)


def request_release(
    target: Target,
    rules: Any = None,
    *,
    attacks: Any = DEFAULT_ATTACKS,
    anonymization: Any = None,
    anonymized_train: Any = None,
    mapping: dict | None = None,
    n_reference: int = 4,
    attribute_features: Any = None,
    categorical_features: Any = None,
    attribute_label: str = "true",
    max_attribute_records: int | None = 2000,
    model_file: Any = None,
    target_name: str | None = None,
    dataset_name: str | None = None,
    n_jobs: int | None = None,
    random_state: Any = 0,
    progress: Callable | None = None,
    progress_count: Callable | None = None,
    started: float | None = None,
) -> ReleaseDecision:
    """Run the release checks and attacks on a trained model and decide.

    Parameters
    ----------
    target : anonml.attacks.Target
        The model (or only its probabilities) with its training and test data.
    rules : path, dict or RuleSet, optional
        The TRE's risk appetite; default ``ANONML_RULES``, else the shipped defaults.
    attacks : sequence of {"worst_case", "rmia", "lira", "attribute"}
        Attacks to run. RMIA/LiRA and the attribute attack need the model; with probabilities
        only they are skipped and the rules that read them report "not evaluated".
    anonymization : fitted anonymizer or dict, optional
        When the training data was anonymized by anonml: the anonymizer, or
        ``{"quasi_identifiers": [...], "k": k, "sensitive": ..., "l": ..., "t": ...}``;
        k (l, t) is verified again on ``anonymized_train``.
    anonymized_train : DataFrame, optional
        The anonymized training table the model was fitted on, row for row with ``target``'s
        training data. Give ``target`` the *original* training rows: the people whose
        membership the attacks test are the real ones, not their group representatives
        (auditing the anonymized rows as members measures how well the model fits the
        representatives, which is not a risk to anyone). Default: ``target``'s training
        data is itself the anonymized table.
    mapping : dict, optional
        For a released pipeline (mapping, then model): the facts
        :func:`anonml.safemodel.verify_mapping` re-verified from the mapping alone, with
        ``measured`` when the training rows were mapped through it (``X_train=``); shown in
        the report's mapping section. Without ``anonymization`` they feed the anonymization
        rules: ``anonymization.k_achieved`` is the smallest group *measured* on the training
        rows (the file's own claim only when nothing was measured), and
        ``mapping.claims_match`` says whether the file's k, group counts and tree counts are
        what the training rows give (see :func:`mapping_measures`).
    n_reference : int, default 4
        Reference (shadow) models of RMIA or LiRA.
    attribute_features, categorical_features : optional
        Features for the attribute attack (default all) and which are categorical.
    attribute_label : {"true", "predicted"}, default "true"
        The reference class of the worst-case attribute attack: the record's true label (the
        attacker knows it: the worst case) or the model's prediction (SACRO-ML's choice, under
        which an overfit tree looks safe on most Adult features; see
        :class:`~anonml.attacks.WorstCaseAttribute`).
    max_attribute_records : int or None, default 2000
        Records per side attacked by the attribute attack (a random subset; ``None`` all).
    model_file : path, optional
        The released file; its SHA-256 goes into the report.
    target_name, dataset_name : str, optional
        Shown in the report; ``target_name`` defaults to the name of ``y_train`` when it is a
        named pandas Series.
    n_jobs, random_state :
        Passed to the attacks.
    progress : callable, optional
        The one progress protocol (:mod:`anonml._progress`): ``progress(step, 0, None)`` as
        each step starts and ends (``"worst-case membership attack ..."``, ``"...: 1.2 s"``),
        and ``progress(label, done, total)`` inside the long steps: ``done = 0`` when the
        step's counted parts begin, then as each finishes, up to ``total``: the worst-case
        attack's repetitions (``"worst-case attack repetitions"``), RMIA's or LiRA's reference
        models (``"RMIA reference models"``, ``"LiRA shadow models"``) and the attribute
        attack's features (``"attribute attack features"``). Called from the calling thread,
        never from a worker. The command line shows a progress bar with it.
    progress_count : callable, optional
        Receives the counted calls instead of ``progress`` (same protocol); kept for callers
        that want the counts apart.
    started : float, optional
        ``time.perf_counter()`` when the run began, if before this call (the command line
        reads the tables and the model first): the report's time taken counts from it.

    Returns
    -------
    ReleaseDecision
    """
    from anonml.safemodel._report_data import build_report

    if not isinstance(target, Target):
        raise InputError(f"request_release needs an anonml.attacks.Target, got "
                         f"{type(target).__name__}; fix: Target(model, X_train, y_train, X_test, "
                         "y_test)")
    attacks = tuple(attacks or ())
    bad = [a for a in attacks if a not in ATTACKS]
    if bad:
        raise InputError(f"attack {bad[0]!r} is not known; fix: choose from {', '.join(ATTACKS)}")
    if "rmia" in attacks and "lira" in attacks:
        raise InputError("attacks= names both rmia and lira; fix: keep one (rmia is faster)")
    t_start = time.perf_counter() if started is None else float(started)
    if target_name is None:
        target_name = getattr(target, "y_name", None)
    stage = _Stages(progress)
    ruleset = resolve_rules(rules)
    model = target.model if target.has_model else None
    sandboxed = is_sandboxed(model)
    family = (model.info["family"] if sandboxed else model_family(model)
              ) if model is not None else "generic"

    if sandboxed and {"rmia", "lira"} & set(attacks):
        model.__sklearn_clone__()  # a file outside the refit bounds fails here, before any work
    if "attribute" in attacks and model is not None:  # its features, before any attack
        from anonml.attacks import WorstCaseAttribute

        WorstCaseAttribute(attribute_features, categorical_features=categorical_features,
                           label=attribute_label, max_records=max_attribute_records,
                           random_state=random_state).check(target)
    facts: dict = {"family": family, "params": {}, "measures": {}, "n_samples": target.n("train")}
    tamper = ("no_fingerprint", [])
    structure: dict = {}
    if model is not None:
        with stage("hyperparameter, tamper and structure checks"):
            # leaf sizes count the rows the model was fitted on (the anonymized table)
            fitted_on = target.X("train") if anonymized_train is None else anonymized_train
            if sandboxed:  # computed in the worker that holds the model: numbers come back
                facts = model.facts(fitted_on, target.y("train"), target.X("test"),
                                    target.y("test"))
                facts["tamper"] = tuple(facts["tamper"])
            else:
                facts = posthoc_facts(model, fitted_on, target.y("train"),
                                      target.X("test"), target.y("test"))
        facts["n_samples"] = target.n("train")
        tamper = facts["tamper"]
        structure = facts["structure"]

    anon = None
    if anonymization is not None:
        with stage("anonymization verification"):
            anon = _check_anonymization(anonymization, target, target_name, anonymized_train)
        facts["measures"]["anonymization.k_achieved"] = anon["k_achieved"]
        facts["measures"]["anonymization.verified"] = anon["verified"]

    elif mapping is not None:
        facts["measures"].update(mapping_measures(mapping))
    if mapping is not None:  # the mapping's claims against its training rows, in either case
        details = mapping_details(mapping)
        facts["details"] = details if anon is None else {
            k: v for k, v in details.items() if k.startswith("mapping.")}
        claims = mapping_measures(mapping).get("mapping.claims_match")
        if claims is not None:
            facts["measures"]["mapping.claims_match"] = claims

    results, attack_measures, membership, attribute = _run_attacks(
        target, model, attacks, n_reference=n_reference, attribute_features=attribute_features,
        attribute_label=attribute_label,
        max_attribute_records=max_attribute_records, categorical_features=categorical_features,
        n_jobs=n_jobs, random_state=random_state, stage=stage,
        progress=progress if progress_count is None else progress_count)
    facts["measures"].update(attack_measures)
    facts["measures"] = json_safe(facts["measures"])
    facts["measures"] = {k: v for k, v in facts["measures"].items() if v is not None}

    with stage("verdict"):
        outcomes = evaluate_rules(ruleset, facts)
        strongest = None
        if membership:
            best = max(membership, key=lambda m: m["metrics"]["auc"] or 0.0)
            if best["metrics"]["auc"] is not None:
                strongest = (best["name"], float(best["metrics"]["auc"]))
        unmeasurable = low_fpr_measures(membership)[1]
        verdict = decide(outcomes, strongest, unmeasurable)
    report = build_report(
        verdict=verdict, outcomes=outcomes, ruleset=ruleset, target=target, model=model,
        model_section=facts.get("model_section"),
        refit_adjustments=model.refit_adjustments if sandboxed else None,
        family=family, tamper=tamper, structure=structure, anonymization=anon, mapping=mapping,
        unmeasurable=unmeasurable,
        membership=membership, attribute=attribute, model_file=model_file,
        target_name=target_name, dataset_name=dataset_name,
        timings={"total_seconds": round(time.perf_counter() - t_start, 3),
                 "stages": dict(stage.times)},
    )
    evidence = facts.get("stores_training_records_evidence")
    if evidence:  # say which array holds the records (a path and a count, never values)
        for item in report["evidence"]:
            if item["rule_id"] in {o.rule.id for o in outcomes if o.outcome == "fail" and
                                   o.rule.check.subject == "model.stores_training_records"}:
                item["note"] = f"Found in the model's content: {evidence}."
    return ReleaseDecision(verdict.decision, verdict, outcomes, facts["measures"], report,
                           results, unmeasurable)

