"""Risk-appetite rules: the thresholds a trusted research environment applies before release.

A TRE states its risk appetite in a TOML or JSON file (``anonml rules init`` writes the
shipped defaults to edit). Each rule names the model families it covers, a *check* on a
hyperparameter (``param``) or on a measurement of the release run (``measure``), and its
*effect* when it fails: ``block`` (do not release), ``condition`` (release with conditions) or
``warn`` (reported only). The file format is documented at the top of
``default_rules.toml``; :func:`load_rules` validates it and says, per bad rule, what is wrong
and how to fix it.

Checks are three-valued: a subject that is missing (an attack that was not run, a
hyperparameter the model does not have) makes the check *unknown*; ``and``/``or`` follow
Kleene's logic, so ``or`` is true as soon as one branch is true.

References
----------
SACRO-ML (Smith et al., "SACRO-ML: disclosure control of trained machine learning models",
2023–2025): ``safemodel/rules.json`` (the hyperparameter defaults) and the report formatter's
final recommendation (AUC 0.65, p 0.05, 10 % of repetitions). ACRO (Green et al. 2023): the
cell-count threshold 10 and residual degrees of freedom 10.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from anonml._errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SCHEMA = "anonml-rules/1"
RULES_ENV = "ANONML_RULES"

FAMILIES = (
    "decision_tree", "random_forest", "extra_trees", "gradient_boosting",
    "hist_gradient_boosting", "xgboost", "mlp", "logistic_regression", "dp_random_forest",
    "dp_logistic_regression", "dp_sgd", "dp_svm", "knn", "svm", "generic",
)
CATEGORIES = (
    "hyperparameter", "structure", "tamper", "membership", "attribute", "anonymization",
    "privacy_budget", "performance",
)
# every measurement a release run can produce, the names a rule's `measure` may use; the test
# suite checks that the release code produces exactly these (tests/safemodel/test_safemodel_rules.py)
_STRUCTURE = {
    "n_samples": "training records",
    "n_groups": "groups of training records the model cannot tell apart",
    "min_group_size": "records in the smallest such group",
    "n_small_groups": "groups under the cell-count threshold",
    "share_records_small_groups": "share of records in groups under the threshold",
    "min_leaf_size": "training records in the smallest leaf (tree models)",
    "zero_probability_groups": "groups given probability 0 for some class",
    "class_disclosure_groups": "small groups given probability 0 for some class",
    "small_group_risk_groups": "groups with a class cell under the threshold",
    "n_params": "learned numbers in the model",
    "residual_dof": "training records minus learned numbers",
    "train_accuracy": "accuracy on the training records",
    "test_accuracy": "accuracy on the test records",
    "generalisation_gap": "training minus test accuracy",
    "loss_ks_pvalue": "KS test p-value, training against test losses",
    "k_anonymity_risk": "some group is under the threshold",
    "class_disclosure_risk": "some small group is told it cannot have a class",
    "small_group_risk": "some class cell is under the threshold",
    "dof_risk": "residual degrees of freedom under their threshold",
    "gen_error_risk": "training and test losses differ significantly",
    "threshold": "the cell-count threshold used (a setting)",
    "dof_threshold": "the degrees-of-freedom threshold used (a setting)",
}
MEASURES = {
    "model.stores_training_records": "the model keeps training records: its family (kNN, "
    "SVM), or an array holding one row per record or copies of training rows",
    "dp.epsilon": "differential-privacy budget spent (or set)",
    "dp.delta": "differential-privacy failure probability",
    "dp.noise_multiplier": "DP-SGD noise multiplier",
    "tamper.has_fingerprint": "the model carries a fingerprint taken at fit",
    "tamper.unchanged": "nothing changed since that fingerprint",
    **{f"structure.{k}": v for k, v in _STRUCTURE.items()},
    "anonymization.k_achieved": "smallest group of the anonymized training data",
    "anonymization.verified": "the claimed k (l, t) verified from the table",
    "mapping.claims_match": "a released mapping's k, l, t, group counts and tree counts equal "
                            "what the training rows mapped through it give",
    "membership.worst_case.auc": "mean AUC of the worst-case membership attack",
    "membership.worst_case.share_significant": "share of worst-case repetitions with p < 0.05",
    "membership.rmia.auc": "AUC of RMIA",
    "membership.lira.auc": "AUC of LiRA",
    "membership.max_auc": "largest AUC of the membership attacks run",
    "membership.max_tpr_at_fpr_0.001": "largest true-positive rate at 0.1 % false positives",
    "attribute.n_significant": "attributes significantly easier to infer for training records",
    "attribute.max_arr_ci_low": "largest lower 95 % bound of an attribute risk ratio",
}
# the short human label of every measure, shown in the reports next to (or instead of) its key;
# a test checks that every key of MEASURES has one (tests/report/test_report.py)
MEASURE_LABELS = {
    "model.stores_training_records": "Model keeps training records",
    "dp.epsilon": "Privacy budget epsilon",
    "dp.delta": "Privacy failure probability delta",
    "dp.noise_multiplier": "DP-SGD noise multiplier",
    "tamper.has_fingerprint": "Fingerprint taken at fit",
    "tamper.unchanged": "Unchanged since fit",
    "structure.n_samples": "Training records",
    "structure.n_groups": "Groups the model cannot tell apart",
    "structure.min_group_size": "Smallest group (records)",
    "structure.n_small_groups": "Groups under the cell threshold",
    "structure.share_records_small_groups": "Share of records in small groups",
    "structure.min_leaf_size": "Smallest leaf (records)",
    "structure.zero_probability_groups": "Groups given probability 0 for a class",
    "structure.class_disclosure_groups": "Small groups told a class is impossible",
    "structure.small_group_risk_groups": "Groups with a class cell under the threshold",
    "structure.n_params": "Learned numbers in the model",
    "structure.residual_dof": "Residual degrees of freedom",
    "structure.train_accuracy": "Accuracy on training records",
    "structure.test_accuracy": "Accuracy on test records",
    "structure.generalisation_gap": "Generalisation gap (train - test accuracy)",
    "structure.loss_ks_pvalue": "p-value, training vs test losses (KS test)",
    "structure.k_anonymity_risk": "A group is under the cell threshold",
    "structure.class_disclosure_risk": "A small group is told a class is impossible",
    "structure.small_group_risk": "A class cell is under the threshold",
    "structure.dof_risk": "Residual degrees of freedom under their threshold",
    "structure.gen_error_risk": "Training and test losses differ significantly",
    "structure.threshold": "Cell-count threshold (setting)",
    "structure.dof_threshold": "Degrees-of-freedom threshold (setting)",
    "anonymization.k_achieved": "Smallest group of the anonymized data (k)",
    "anonymization.verified": "Anonymization verified from the table",
    "mapping.claims_match": "Mapping's claims match the training rows",
    "membership.worst_case.auc": "Worst-case attack AUC (mean)",
    "membership.worst_case.share_significant": "Share of worst-case repetitions with p < 0.05",
    "membership.rmia.auc": "RMIA attack AUC",
    "membership.lira.auc": "LiRA attack AUC",
    "membership.max_auc": "Highest membership-attack AUC",
    "membership.max_tpr_at_fpr_0.001": "Highest TPR at 0.1 % FPR",
    "attribute.n_significant": "Attributes significantly easier to infer",
    "attribute.max_arr_ci_low": "Highest lower 95 % bound of an attribute risk ratio",
}
EFFECTS = ("block", "condition", "warn")
OPERATORS = ("min", "max", "equals", "one_of", "type")
TYPES = ("number", "int", "float", "bool", "str", "none")
# sklearn reads a float in (0, 1) as a fraction of the training rows for these parameters
_FRACTION_PARAMS = ("min_samples_leaf", "min_samples_split")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_RULE_KEYS = {
    "id", "title", "category", "applies_to", "check", "effect", "required", "condition",
    "explanation", "fix", "source",
}
_TOP_KEYS = {"schema", "name", "version", "description", "rule"}


# ----------------------------------------------------------------------------- the data --------
@dataclass(frozen=True)
class Check:
    """One node of a rule's check: a comparison (``op`` on ``param``/``measure``) or a
    combination (``op`` ``"and"``/``"or"`` over ``children``)."""

    op: str
    subject_kind: str | None = None  # "param" | "measure"
    subject: str | None = None
    value: Any = None
    children: tuple = ()


@dataclass(frozen=True)
class Rule:
    """One risk-appetite rule (see the module docstring and ``default_rules.toml``)."""

    id: str
    title: str
    category: str
    check: Check
    effect: str
    explanation: str
    source: str
    applies_to: tuple = ("any",)
    required: bool = True
    condition: str | None = None
    fix: str | None = None

    def applies(self, family: str) -> bool:
        return "any" in self.applies_to or family in self.applies_to


@dataclass(frozen=True)
class RuleSet:
    """A validated rules file: its rules in file order and where it came from."""

    name: str
    version: str
    origin: str
    sha256: str
    rules: tuple
    description: str = ""

    def __len__(self) -> int:
        return len(self.rules)

    def __getitem__(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def ids(self) -> list:
        return [r.id for r in self.rules]


@dataclass
class RuleOutcome:
    """The evaluation of one rule: ``outcome`` is ``pass``, ``fail``, ``not_evaluated``
    (a required subject was missing) or ``not_applicable`` (another model family, or an
    optional subject missing). ``measured`` and ``threshold`` are display strings."""

    rule: Rule
    outcome: str
    measured: str | None
    threshold: str
    missing: list = field(default_factory=list)


# ----------------------------------------------------------------------------- loading ---------
def _bad(where: str, problem: str, fix: str) -> InputError:
    return InputError(f"{where}: {problem}; fix: {fix}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _did_you_mean(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_subject(kind: str, subject: str, families: tuple, where: str) -> None:
    """Refuse a measure anonml never produces, or a hyperparameter that none of the rule's
    model families has: such a check could never be evaluated, so the rule would silently
    never block."""
    if kind == "measure":
        if subject in MEASURES:
            return
        close = _did_you_mean(subject, MEASURES)
        prefix = subject.split(".")[0] + "."
        related = [m for m in MEASURES if m.startswith(prefix)]
        if related:
            fix = f"the {prefix[:-1]} measures are {', '.join(related)}"
        else:
            groups = ", ".join(dict.fromkeys(m.split(".")[0] for m in MEASURES))
            fix = f"name a measure of {groups} (anonml.safemodel.MEASURES lists them)"
        raise _bad(where, f"measure {subject!r} is not one anonml produces{close}", fix)
    from anonml.modelfile._family import family_param_names

    targets = [f for f in FAMILIES if f != "generic"] if "any" in families else list(families)
    known: set = set()
    for fam in targets:
        names = family_param_names(fam)
        if names is None:  # any estimator, or its library is not installed: cannot tell
            return
        known.update(names)
    if subject not in known:
        scope = "any model family" if "any" in families else ", ".join(targets)
        raise _bad(where, f"param {subject!r} is not a hyperparameter of {scope}"
                   f"{_did_you_mean(subject, known)}", "name a key of the model's get_params(), "
                   "or set applies_to to the families that have it")


def _parse_check(node: Any, where: str, families: tuple = ("any",)) -> Check:
    if not isinstance(node, dict) or not node:
        raise _bad(where, "check must be a table", 'write check = { param = "name", min = 5 }')
    keys = set(node)
    combos = keys & {"and", "or"}
    if combos:
        if len(keys) != 1:
            raise _bad(where, f"check mixes {sorted(keys)}", "an and/or table holds only that key")
        op = combos.pop()
        children = node[op]
        if not isinstance(children, list) or not children:
            raise _bad(where, f"{op} must be a non-empty list of checks",
                       f"write {op} = [ {{ ... }}, {{ ... }} ]")
        return Check(op=op, children=tuple(
            _parse_check(c, f"{where}.{op}[{i}]", families) for i, c in enumerate(children)))
    subjects = keys & {"param", "measure"}
    if len(subjects) != 1:
        raise _bad(where, "check needs exactly one of param or measure",
                   'name what is checked, e.g. param = "min_samples_leaf"')
    kind = subjects.pop()
    subject = node[kind]
    if not isinstance(subject, str) or not subject:
        raise _bad(where, f"{kind} must be a name", f'write {kind} = "name"')
    ops = keys - {kind}
    unknown = ops - set(OPERATORS)
    if unknown:
        raise _bad(where, f"unknown operator {sorted(unknown)[0]!r}",
                   f"use one of {', '.join(OPERATORS)}, or and/or")
    if len(ops) != 1:
        raise _bad(where, f"check on {subject!r} needs exactly one operator, got {len(ops)}",
                   "split it into checks combined with and = [...]")
    op = ops.pop()
    value = node[op]
    if op in ("min", "max") and not _is_number(value):
        raise _bad(where, f"{op} must be a number, got {value!r}", f"write {op} = 5")
    if op == "one_of" and (not isinstance(value, list) or not value):
        raise _bad(where, "one_of must be a non-empty list", 'write one_of = ["gini", "entropy"]')
    if op == "type" and value not in TYPES:
        raise _bad(where, f"type must be one of {', '.join(TYPES)}, got {value!r}",
                   'write type = "number"')
    if op == "equals" and isinstance(value, (dict, list)):
        raise _bad(where, "equals takes one value", "use one_of for a list")
    _check_subject(kind, subject, families, where)
    return Check(op=op, subject_kind=kind, subject=subject, value=value)


def _parse_rule(raw: Any, index: int, origin: str) -> Rule:
    where = f"rules {origin}, rule #{index + 1}"
    if not isinstance(raw, dict):
        raise _bad(where, "a rule must be a table", "write it as [[rule]] with key = value lines")
    rid = raw.get("id")
    if not isinstance(rid, str) or not _ID.match(rid):
        raise _bad(where, f"id {rid!r} is missing or not lower-case letters, digits and dashes",
                   'write id = "dt-min-samples-leaf"')
    where = f"rules {origin}, rule {rid!r}"
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise _bad(where, f"unknown key {sorted(unknown)[0]!r}",
                   f"use only {', '.join(sorted(_RULE_KEYS))}")
    for key in ("title", "explanation", "source"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _bad(where, f"{key} is missing", f'write {key} = "..." (plain words)')
    category = raw.get("category")
    if category not in CATEGORIES:
        raise _bad(where, f"category {category!r} is not known",
                   f"use one of {', '.join(CATEGORIES)}")
    effect = raw.get("effect")
    if effect not in EFFECTS:
        raise _bad(where, f"effect {effect!r} is not known", f"use one of {', '.join(EFFECTS)}")
    applies = raw.get("applies_to", ["any"])
    if isinstance(applies, str):
        applies = [applies]
    if not isinstance(applies, list) or not applies:
        raise _bad(where, "applies_to must be a list of model families", 'write ["any"]')
    for fam in applies:
        if fam != "any" and fam not in FAMILIES:
            raise _bad(where, f"applies_to names unknown model family {fam!r}",
                       f"use any or one of {', '.join(FAMILIES)}")
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise _bad(where, f"required must be true or false, got {required!r}",
                   "write required = true")
    condition = raw.get("condition")
    if effect == "condition" and (not isinstance(condition, str) or not condition.strip()):
        raise _bad(where, "effect = condition needs the condition of release",
                   'write condition = "Release only to ..."')
    if condition is not None and not isinstance(condition, str):
        raise _bad(where, "condition must be text", 'write condition = "..."')
    fix = raw.get("fix")
    if fix is not None and not isinstance(fix, str):
        raise _bad(where, "fix must be text", 'write fix = "..."')
    if "check" not in raw:
        raise _bad(where, "check is missing", 'write check = { param = "name", min = 5 }')
    check = _parse_check(raw["check"], f"{where}, check", tuple(applies))
    return Rule(
        id=rid, title=raw["title"].strip(), category=category, check=check, effect=effect,
        explanation=raw["explanation"].strip(), source=raw["source"].strip(),
        applies_to=tuple(applies), required=required,
        condition=condition.strip() if condition else None, fix=fix,
    )


def rules_from_dict(data: Any, origin: str = "<dict>", sha256: str | None = None) -> RuleSet:
    """Validate a parsed rules document and build the :class:`RuleSet`.

    Raises
    ------
    InputError
        One line naming the rule and key at fault and the fix.
    """
    if not isinstance(data, dict):
        raise _bad(f"rules {origin}", "the document must be a table", "see default_rules.toml")
    if data.get("schema") != SCHEMA:
        raise _bad(f"rules {origin}", f"schema is {data.get('schema')!r}, not {SCHEMA!r}",
                   f'start the file with schema = "{SCHEMA}"')
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _bad(f"rules {origin}", f"unknown top-level key {sorted(unknown)[0]!r}",
                   f"use only {', '.join(sorted(_TOP_KEYS))}")
    for key in ("name", "version"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _bad(f"rules {origin}", f"{key} is missing", f'write {key} = "..."')
    raw_rules = data.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise _bad(f"rules {origin}", "no rules", "add [[rule]] tables")
    rules = tuple(_parse_rule(r, i, origin) for i, r in enumerate(raw_rules))
    seen: set = set()
    for rule in rules:
        if rule.id in seen:
            raise _bad(f"rules {origin}", f"rule id {rule.id!r} appears twice", "rename one")
        seen.add(rule.id)
    if sha256 is None:
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
        sha256 = hashlib.sha256(canonical.encode()).hexdigest()
    return RuleSet(name=data["name"].strip(), version=data["version"].strip(), origin=origin,
                   sha256=sha256, rules=rules, description=str(data.get("description", "")))


def default_rules_text() -> str:
    """The shipped default rules file (TOML), as text."""
    return resources.files("anonml.safemodel").joinpath("default_rules.toml").read_text("utf-8")


def default_rules() -> RuleSet:
    """The shipped defaults (SACRO-ML / ACRO values where they exist)."""
    text = default_rules_text()
    return rules_from_dict(tomllib.loads(text), origin="anonml defaults",
                           sha256=hashlib.sha256(text.encode()).hexdigest())


def load_rules(path: str | os.PathLike | None = None) -> RuleSet:
    """Read and validate a risk-appetite file (``.toml`` or ``.json``).

    Parameters
    ----------
    path : path, optional
        The TRE's rules file. ``None``: the file named by the environment variable
        ``ANONML_RULES`` when set, else the shipped defaults.

    Raises
    ------
    InputError
        Unreadable file, bad syntax, or a bad rule (one line naming it and the fix).
    """
    if path is None:
        path = os.environ.get(RULES_ENV) or None
        if path is None:
            return default_rules()
    path = Path(path)
    if not path.exists():
        raise InputError(f"rules file {str(path)!r} not found; fix: give an existing file, "
                         "or write the defaults with `anonml rules init FILE`")
    from anonml import _io

    raw = _io.read_bytes(path, "rules file", max_bytes=_io.MAX_RULES_BYTES)
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
        elif suffix == ".json":
            data = json.loads(raw.decode("utf-8"))
        else:
            raise InputError(f"rules file {str(path)!r}: unknown format {suffix!r}; fix: use a "
                             ".toml or .json file")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg = str(exc).splitlines()[0]
        raise InputError(f"rules file {str(path)!r} is not valid {suffix[1:].upper()}: {msg}; "
                         "fix: correct the syntax") from None
    return rules_from_dict(data, origin=str(path), sha256=hashlib.sha256(raw).hexdigest())


def resolve_rules(rules: Any) -> RuleSet:
    """A :class:`RuleSet` from ``None`` (environment or defaults), a path, a dict or a RuleSet."""
    if isinstance(rules, RuleSet):
        return rules
    if rules is None or isinstance(rules, (str, os.PathLike)):
        return load_rules(rules)
    if isinstance(rules, dict):
        return rules_from_dict(rules)
    raise InputError(f"rules={type(rules).__name__} is not understood; fix: pass a path to a "
                     ".toml/.json rules file, a dict of its contents, or None for the defaults")


# ----------------------------------------------------------------------------- evaluation ------
def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def threshold_text(check: Check) -> str:
    """The check in words: ``"min_samples_leaf at least 5"``."""
    if check.op in ("and", "or"):
        return f" {check.op} ".join(
            f"({threshold_text(c)})" if c.op in ("and", "or") else threshold_text(c)
            for c in check.children)
    v = check.value
    if check.op == "one_of":
        words = "one of " + ", ".join(_fmt(x) for x in v)
    elif check.op == "type":
        words = f"of type {v}"
    else:
        words = {"min": "at least", "max": "at most", "equals": "equal to"}[check.op]
        words = f"{words} {_fmt(v)}"
    return f"{check.subject} {words}"


def _lookup(check: Check, facts: dict) -> tuple[bool, Any]:
    pool = facts.get("params" if check.subject_kind == "param" else "measures") or {}
    if check.subject not in pool:
        return False, None
    value = pool[check.subject]
    if (check.subject_kind == "param" and check.subject in _FRACTION_PARAMS
            and isinstance(value, float) and 0 < value < 1):
        n = facts.get("n_samples")
        if n is None:
            return False, None
        value = math.ceil(value * n)
    return True, value


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "number":
        return _is_number(value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, float) and math.isfinite(value)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    return value is None


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps true apart from 1."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _compare(check: Check, value: Any) -> bool:
    if check.op == "type":
        return _type_ok(value, check.value)
    if check.op == "equals":
        return _same(value, check.value)
    if check.op == "one_of":
        return any(_same(value, v) for v in check.value)
    # min / max: None (unbounded, e.g. max_depth=None) and non-numbers fail
    if not _is_number(value) and not (isinstance(value, float) and math.isinf(value)):
        return False
    return value >= check.value if check.op == "min" else value <= check.value


def _evaluate(check: Check, facts: dict, seen: list, missing: list) -> bool | None:
    if check.op in ("and", "or"):
        results = [_evaluate(c, facts, seen, missing) for c in check.children]
        if check.op == "and":
            return False if False in results else (None if None in results else True)
        return True if True in results else (None if None in results else False)
    found, value = _lookup(check, facts)
    if not found:
        missing.append(check.subject)
        return None
    shown = f"{check.subject} = {_fmt(value)}"
    raw = (facts.get("params") or {}).get(check.subject)
    if check.subject_kind == "param" and raw is not value and isinstance(raw, float):
        shown = f"{check.subject} = {_fmt(raw)} (= {value} records)"
    detail = (facts.get("details") or {}).get(check.subject) if check.subject_kind == \
        "measure" else None
    if detail:  # what the number is, in words (a mapping's claim next to the measurement)
        shown = f"{shown} ({detail})"
    if shown not in seen:
        seen.append(shown)
    return _compare(check, value)


def evaluate_rule(rule: Rule, facts: dict) -> RuleOutcome:
    """Evaluate one rule against ``facts`` = ``{"family", "params", "measures", "n_samples"}``
    and optionally ``"details"``: words shown after a measure's value (measure -> text)."""
    threshold = threshold_text(rule.check)
    if not rule.applies(facts.get("family", "generic")):
        return RuleOutcome(rule, "not_applicable", None, threshold)
    seen: list = []
    missing: list = []
    result = _evaluate(rule.check, facts, seen, missing)
    measured = "; ".join(seen) if seen else None
    if result is None:
        outcome = "not_evaluated" if rule.required else "not_applicable"
    else:
        outcome = "pass" if result else "fail"
    return RuleOutcome(rule, outcome, measured, threshold, missing)


def evaluate_rules(rules: RuleSet, facts: dict, categories: Any = None) -> list:
    """Evaluate every rule (optionally only some categories), in file order."""
    return [evaluate_rule(r, facts) for r in rules.rules
            if categories is None or r.category in categories]
