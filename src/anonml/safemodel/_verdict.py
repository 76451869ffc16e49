"""From rule outcomes to a verdict in plain words (no measurement happens here).

The verdict is a pure function of the rule outcomes, so it can be tested on fixed
measurements:

- any failed rule whose effect is ``block`` → **do not release**;
- otherwise any failed ``condition`` rule, or any required ``block``/``condition`` rule that
  could not be evaluated → **release with conditions** (a check that did not run cannot clear
  the model: fail closed);
- otherwise → **release**.

``warn`` rules are shown in the evidence and never change the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DECISIONS = ("release", "release_with_conditions", "do_not_release")
LABELS = {
    "release": "Release",
    "release_with_conditions": "Release with conditions",
    "do_not_release": "Do not release",
}
_CATEGORY_ORDER = ("tamper", "hyperparameter", "privacy_budget", "structure", "membership",
                   "attribute", "anonymization", "performance")
_UNMEASURED = ("Confirm by other means that {title}: this check could not be run (missing: "
               "{missing}); or rerun the audit with that input.")


@dataclass
class Verdict:
    """The decision and its plain-language justification."""

    decision: str
    label: str
    summary: str
    reasons: list = field(default_factory=list)
    conditions: list = field(default_factory=list)
    next_steps: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"decision": self.decision, "label": self.label, "summary": self.summary,
                "reasons": self.reasons, "conditions": self.conditions,
                "next_steps": self.next_steps}


def _reason(o, text: str | None = None) -> dict:
    return {"rule_id": o.rule.id, "text": text or o.rule.title,
            "measured": o.measured or "not measured", "threshold": o.threshold,
            "source": o.rule.source, "effect": o.rule.effect}


def _rank(o) -> int:
    cat = o.rule.category
    return _CATEGORY_ORDER.index(cat) if cat in _CATEGORY_ORDER else len(_CATEGORY_ORDER)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def decide(outcomes: list, strongest_attack: tuple | None = None) -> Verdict:
    """The verdict of a list of :class:`~anonml.safemodel.RuleOutcome`.

    Parameters
    ----------
    outcomes : list of RuleOutcome
    strongest_attack : (name, auc), optional
        Quoted in the summary of a *release*.
    """
    blocked = sorted((o for o in outcomes if o.outcome == "fail" and o.rule.effect == "block"),
                     key=_rank)
    conditional = sorted((o for o in outcomes
                          if o.outcome == "fail" and o.rule.effect == "condition"), key=_rank)
    unmeasured = sorted((o for o in outcomes if o.outcome == "not_evaluated"
                         and o.rule.effect in ("block", "condition")), key=_rank)
    passed = [o for o in outcomes if o.outcome == "pass"]

    if blocked:
        failed = "; ".join(f"{o.rule.title} (measured: {o.measured or 'not measured'})"
                           for o in blocked[:3])
        more = f"; and {len(blocked) - 3} more" if len(blocked) > 3 else ""
        summary = (f"Do not let this model leave the environment. {len(blocked)} check(s) "
                   f"found a risk the risk appetite does not accept. Failed: {failed}{more}.")
        fixes = list(dict.fromkeys(o.rule.fix for o in blocked if o.rule.fix))
        steps = [f"Researcher: {fix}" for fix in fixes[:4]]
        steps.append("Checker: audit the retrained model again before any release.")
        reasons = [_reason(o) for o in blocked] + [_reason(o) for o in conditional]
        return Verdict("do_not_release", LABELS["do_not_release"], summary, reasons, [],
                       steps)

    if conditional or unmeasured:
        conditions = list(dict.fromkeys(o.rule.condition for o in conditional
                                        if o.rule.condition))
        for o in unmeasured:
            conditions.append(_UNMEASURED.format(
                title=_lower_first(o.rule.title),
                missing=", ".join(o.missing) or "a measurement"))
        parts = []
        if conditional:
            parts.append(f"{len(conditional)} check(s) found a small risk")
        if unmeasured:
            parts.append(f"{len(unmeasured)} check(s) could not be run")
        summary = ("The model may leave only under the conditions below. No check found a "
                   "risk that rules release out, but " + " and ".join(parts) + ".")
        steps = ["Checker: make sure each condition below is met and recorded before release."]
        fixes = list(dict.fromkeys(o.rule.fix for o in conditional if o.rule.fix))
        steps += [f"Researcher (to release without conditions): {fix}" for fix in fixes[:3]]
        reasons = [_reason(o) for o in conditional]
        reasons += [_reason(o, f"Not checked: {_lower_first(o.rule.title)}") for o in unmeasured]
        return Verdict("release_with_conditions", LABELS["release_with_conditions"], summary,
                       reasons, conditions, steps)

    key = sorted((o for o in passed if o.rule.effect == "block"), key=_rank)[:4]
    attack = ""
    if strongest_attack is not None:
        name, auc = strongest_attack
        attack = (f" The strongest attack ({name}) reached an AUC of {auc:.2f}, where 0.50 is a "
                  "coin toss.")
    summary = (f"The model may leave the environment. All {len(passed)} checks that apply "
               f"passed.{attack}")
    steps = ["Checker: release the file whose SHA-256 is given in this report, and keep this "
             "report with the release record."]
    return Verdict("release", LABELS["release"], summary, [_reason(o) for o in key], [], steps)
