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

import difflib
import re
from dataclasses import dataclass, field

DECISIONS = ("release", "release_with_conditions", "do_not_release")
LABELS = {
    "release": "Release",
    "release_with_conditions": "Release with conditions",
    "do_not_release": "Do not release",
}
_CATEGORY_ORDER = ("tamper", "hyperparameter", "privacy_budget", "structure", "membership",
                   "attribute", "anonymization", "performance")


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


def _reason(o, text: str | None = None, measured: str | None = None) -> dict:
    return {"rule_id": o.rule.id, "text": text or o.rule.title,
            "measured": measured or o.measured or "not measured", "threshold": o.threshold,
            "source": o.rule.source, "effect": o.rule.effect}


def _rank(o) -> int:
    cat = o.rule.category
    return _CATEGORY_ORDER.index(cat) if cat in _CATEGORY_ORDER else len(_CATEGORY_ORDER)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+")


def _distinct(texts: list) -> list:
    """``texts`` without repeats: an exact repeat, or a text whose identifiers
    (``min_samples_leaf``, ``structure.min_leaf_size``) all appear in an earlier kept one, or
    that mostly repeats an earlier one's words (two rules on the same setting give the same
    advice in other words)."""
    kept: list = []
    seen_ids: list = []
    for text in texts:
        ids = set(_IDENT.findall(text))
        similar = any(difflib.SequenceMatcher(None, text.lower(), k.lower()).ratio() >= 0.6
                      for k in kept)
        if text in kept or similar or (ids and any(ids <= s for s in seen_ids)):
            continue
        kept.append(text)
        seen_ids.append(ids)
    return kept


def _same_conditions(texts: list) -> list:
    """``texts`` without a condition that another one states in full: two rules asking for
    the same thing in two wordings ("Release only the predicted outcome ..., to named
    recipients." and the same with "; the attack signal lives in the scores.") give one
    condition, the fuller one, where the first of them stood."""
    norm = [t.strip().rstrip(".").strip().lower() for t in texts]
    out: list = []
    for i, text in enumerate(texts):
        covered = any(j != i and norm[i] and norm[i] in norm[j] and
                      (len(norm[j]) > len(norm[i]) or j < i) for j in range(len(texts)))
        if covered:
            fuller = max((texts[j] for j in range(len(texts)) if norm[i] in norm[j]), key=len)
            if fuller not in out:
                out.append(fuller)
        elif text not in out:
            out.append(text)
    return out


def _advisory(warned: list) -> str:
    """The summary's words on failed ``warn`` rules (listed as failed, not deciding)."""
    if not warned:
        return ""
    return (f" {_count(len(warned), 'advisory check')} failed too (listed, but "
            f"{'it does' if len(warned) == 1 else 'they do'} not decide the release).")


def _unmeasured_why(o, unmeasurable: dict) -> str:
    """Why ``o`` could not be evaluated: a stated reason for a measure this audit could not
    resolve, else the missing inputs."""
    stated = [unmeasurable[m] for m in o.missing if m in unmeasurable]
    if stated:
        return "; ".join(dict.fromkeys(stated))
    return f"check could not be run (missing: {', '.join(o.missing) or 'a measurement'})"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def decide(outcomes: list, strongest_attack: tuple | None = None,
           unmeasurable: dict | None = None) -> Verdict:
    """The verdict of a list of :class:`~anonml.safemodel.RuleOutcome`.

    Parameters
    ----------
    outcomes : list of RuleOutcome
    strongest_attack : (name, auc), optional
        Quoted in the summary of a *release*.
    unmeasurable : dict of str to str, optional
        Measures this audit could not resolve, each with the reason in words (say, a true
        positive rate at a false positive rate below 1 / the non-members of the test set). A
        required rule that reads one is not evaluated, and becomes a condition that states
        the reason.
    """
    unmeasurable = unmeasurable or {}
    blocked = sorted((o for o in outcomes if o.outcome == "fail" and o.rule.effect == "block"),
                     key=_rank)
    conditional = sorted((o for o in outcomes
                          if o.outcome == "fail" and o.rule.effect == "condition"), key=_rank)
    unmeasured = sorted((o for o in outcomes if o.outcome == "not_evaluated"
                         and o.rule.effect in ("block", "condition")), key=_rank)
    passed = [o for o in outcomes if o.outcome == "pass"]
    warned = [o for o in outcomes if o.outcome == "fail" and o.rule.effect == "warn"]
    not_checked = [_reason(o, f"Not checked: {_lower_first(o.rule.title)}. The "
                           f"{_unmeasured_why(o, unmeasurable)}.")
                   for o in unmeasured]

    if blocked:
        failed = "; ".join(f"{o.rule.title} (measured: {o.measured or 'not measured'})"
                           for o in blocked[:3])
        more = f"; and {len(blocked) - 3} more" if len(blocked) > 3 else ""
        reasons = ([_reason(o) for o in blocked] + [_reason(o) for o in conditional]
                   + not_checked)
        parts = [f"{len(blocked)} block release"]
        if conditional:
            parts.append(f"{len(conditional)} would be conditions of release")
        if unmeasured:
            parts.append(f"{len(unmeasured)} could not be run")
        summary = (f"Do not let this model leave the environment. "
                   f"{_count(len(reasons), 'check')} did not pass ({', '.join(parts)}). "
                   f"Blocking: {failed}{more}.{_advisory(warned)}")
        fixes = _distinct([o.rule.fix for o in blocked + conditional if o.rule.fix])
        steps = [f"Researcher: {fix}" for fix in fixes[:4]]
        steps.append("Checker: audit the retrained model again before any release.")
        return Verdict("do_not_release", LABELS["do_not_release"], summary, reasons, [],
                       steps)

    if conditional or unmeasured:
        conditions = _same_conditions([o.rule.condition for o in conditional
                                       if o.rule.condition])
        for o in unmeasured:
            why = _unmeasured_why(o, unmeasurable)
            if not any(m in unmeasurable for m in o.missing):
                why += "; or rerun the audit with that input"
            conditions.append(f"Confirm by other means that {_lower_first(o.rule.title)}: "
                              f"the {why}.")
        reasons = [_reason(o) for o in conditional] + not_checked
        parts = []
        if conditional:
            parts.append(f"{len(conditional)} found a small risk")
        if unmeasured:
            parts.append(f"{len(unmeasured)} could not be run")
        summary = ("The model may leave only under the conditions of release. No check found "
                   f"a risk that rules release out, but {_count(len(reasons), 'check')} did "
                   f"not pass ({', '.join(parts)}).{_advisory(warned)}")
        steps = ["Checker: make sure every condition of release is met and recorded before "
                 "the model leaves."]
        fixes = _distinct([o.rule.fix for o in conditional if o.rule.fix])
        steps += [f"Researcher (to release without conditions): {fix}" for fix in fixes[:3]]
        return Verdict("release_with_conditions", LABELS["release_with_conditions"], summary,
                       reasons, conditions, steps)

    key = sorted((o for o in passed if o.rule.effect == "block"), key=_rank)[:4]
    attack = ""
    if strongest_attack is not None:
        name, auc = strongest_attack
        attack = (f" The strongest attack ({name}) reached an AUC of {auc:.2f}, where 0.50 is a "
                  "coin toss.")
    lead = (f"All {len(passed)} checks that apply passed." if not warned else
            f"Every check that decides the release passed ({_count(len(passed), 'check')}).")
    summary = f"The model may leave the environment. {lead}{attack}{_advisory(warned)}"
    steps = ["Checker: release the file whose SHA-256 is given in this report, and keep this "
             "report with the release record."]
    return Verdict("release", LABELS["release"], summary, [_reason(o) for o in key], [], steps)
