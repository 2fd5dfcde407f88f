"""Neighbour invariance (N1): a tenant's answers must not depend on what other tenants
said. A control twin (rules/pairs.py) states exactly the facts of a pair's tenant a, beside
a partner of its own with other values, and is asked the same questions at the same
scenario times; what the two were answered must judge the same. A difference follows the
only thing that differs, their neighbours' data, and is a failure with both answers as
evidence. Pure.

Compared are the outcomes of the checks on the tenant's own facts (recall, abstain, U1, I4,
D2, S2), not the answers' words: a search's records carry ids and times of their own, and
a model's wording varies. A case in which either side leaked (I2, I3, S1) is not compared:
a copied value is its own finding, and already explains the difference.
docs/design.md, "Neighbour invariance", says what this can and cannot show.
"""

from __future__ import annotations

from typing import NamedTuple

from memlife.rules.verdicts import CaseVerdict, Check, Finding, Outcome

# The checks of a tenant's own facts, whose outcomes twins must share.
COMPARED = ("recall", "abstain", "U1", "I4", "D2", "S2")
LEAKS = ("I2", "I3", "S1")
EXCERPT = 200


class TwinAnswer(NamedTuple):
    """One side's answer to one question: the checks recorded on it, and the reply."""

    step: int
    stage: str
    case_id: str
    domain: str
    alias: str
    checks: dict[str, Outcome]
    reply: str | None


def twin_verdict(original: TwinAnswer, twin: TwinAnswer) -> CaseVerdict | None:
    """N1 for one question both were asked (None: not comparable, a leak on either side)."""
    if any(original.checks.get(name) == "fail" or twin.checks.get(name) == "fail"
           for name in LEAKS):
        return None
    compared = [name for name in COMPARED if name in original.checks or name in twin.checks]
    if not compared:
        return None
    outcome: Outcome
    findings = []
    if any("inconclusive" in (original.checks.get(name), twin.checks.get(name))
           for name in compared):
        outcome = "inconclusive"
        findings.append(Finding(invariant="N1", reason="target-error", outcome=outcome,
                                detail="one side's answer could not be judged"))
    else:
        differ = [name for name in compared if original.checks.get(name) != twin.checks.get(name)]
        outcome = "fail" if differ else "pass"
        if differ:
            findings.append(Finding(
                invariant="N1", reason="influenced", outcome="fail",
                detail=f"{original.alias} and its control twin {twin.alias} state the same "
                f"facts and were asked the same; only their neighbours differ, yet "
                + "; ".join(f"{name} is {original.checks.get(name, 'unchecked')} here and "
                            f"{twin.checks.get(name, 'unchecked')} for the twin"
                            for name in differ)
                + f". Answers: {_excerpt(original.reply)} / {_excerpt(twin.reply)}"))
    return CaseVerdict(case_id=f"{original.case_id}-twin", role="a",
                       tenant_alias=original.alias, domain=original.domain,
                       passed=outcome == "pass", outcome=outcome,
                       checks=[Check(invariant="N1", outcome=outcome)], findings=findings)


def _excerpt(reply: str | None) -> str:
    if reply is None:
        return "(no answer)"
    text = " ".join(reply.split())
    return repr(text if len(text) <= EXCERPT else text[:EXCERPT] + "…")


def twin_links(values_of_a: dict[int, frozenset[str]]) -> list[tuple[int, int]]:
    """(original, twin) pairs of pair indexes: pairs whose tenants a state the same values,
    the lowest index the original."""
    by_values: dict[frozenset[str], list[int]] = {}
    for pair, values in sorted(values_of_a.items()):
        if values:
            by_values.setdefault(values, []).append(pair)
    return [(pairs[0], twin) for pairs in by_values.values() for twin in pairs[1:]]
