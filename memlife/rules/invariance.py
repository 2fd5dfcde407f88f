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

A target that answers one question differently when asked it again (a sampling model) is
judged by rates, not case by case: how often twins differed against how often the
target differed from itself on the same question asked again in the run, each with its
95% interval (statistics.bootstrap_rate, twin links and tenants as the units). Influence
is shown only when the twins' rate lies above the target's own variation, intervals apart.
docs/design.md, "Neighbour invariance", says what this can and cannot show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from memlife.rules.statistics import RateEstimate, bootstrap_rate
from memlife.rules.verdicts import COPY_CHECKS, CaseVerdict, Check, Finding, Outcome

# The checks of a tenant's own facts, whose outcomes twins must share.
COMPARED = ("recall", "abstain", "U1", "I4", "D2", "S2")
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
    question: str = ""

    def compared(self) -> tuple[tuple[str, Outcome], ...]:
        """The outcomes twins must share, for comparing answers whatever their side."""
        return tuple((name, self.checks[name]) for name in COMPARED if name in self.checks)

    def copied(self) -> bool:
        return any(self.checks.get(name) == "fail" for name in COPY_CHECKS)


def twin_verdict(original: TwinAnswer, twin: TwinAnswer) -> CaseVerdict | None:
    """N1 for one question both were asked (None: not comparable, a leak on either side)."""
    if original.copied() or twin.copied():
        return None
    compared = [name for name in COMPARED if name in original.checks or name in twin.checks]
    if not compared:
        return None
    outcome: Outcome
    findings = []
    if any(
        "inconclusive" in (original.checks.get(name), twin.checks.get(name)) for name in compared
    ):
        outcome = "inconclusive"
        findings.append(
            Finding(
                invariant="N1",
                reason="target-error",
                outcome=outcome,
                detail="one side's answer could not be judged",
            )
        )
    else:
        differ = [name for name in compared if original.checks.get(name) != twin.checks.get(name)]
        outcome = "fail" if differ else "pass"
        if differ:
            findings.append(
                Finding(
                    invariant="N1",
                    reason="influenced",
                    outcome="fail",
                    detail=f"{original.alias} and its control twin {twin.alias} state the same "
                    f"facts and were asked the same; only their neighbours differ, yet "
                    + "; ".join(
                        f"{name} is {original.checks.get(name, 'unchecked')} here and "
                        f"{twin.checks.get(name, 'unchecked')} for the twin"
                        for name in differ
                    )
                    + f". Answers: {_excerpt(original.reply)} / {_excerpt(twin.reply)}",
                )
            )
    return CaseVerdict(
        case_id=f"{original.case_id}-twin",
        role="a",
        tenant_alias=original.alias,
        domain=original.domain,
        passed=outcome == "pass",
        outcome=outcome,
        checks=[Check(invariant="N1", outcome=outcome)],
        findings=findings,
    )


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


def own_variation(
    answers: Iterable[TwinAnswer], changes: Iterable[tuple[int, str | None]] = ()
) -> tuple[int, int]:
    """(differing, compared): one tenant's answers to a question it was asked again, each
    later asking set against the one before, where neither copied a value, the same checks
    were made, and nothing of the tenant's changed in between (`changes`: the steps at
    which it wrote, updated, forgot or was deleted, and the domain, None for all)."""
    changed = list(changes)
    by_question: dict[str, list[TwinAnswer]] = {}
    for answer in sorted(answers, key=lambda a: a.step):
        if answer.question and answer.compared() and not answer.copied():
            by_question.setdefault(answer.question, []).append(answer)
    differing = compared = 0
    for askings in by_question.values():
        for before, after in zip(askings, askings[1:], strict=False):
            if [name for name, _ in before.compared()] != [
                name for name, _ in after.compared()
            ] or any(
                before.step < step <= after.step and domain in (None, after.domain)
                for step, domain in changed
            ):
                continue
            compared += 1
            differing += before.compared() != after.compared()
    return differing, compared


def influence_verdict(
    twins: Sequence[tuple[int, int]],
    variation: Sequence[tuple[int, int]],
    examples: Sequence[tuple[TwinAnswer, TwinAnswer]],
    case_id: str,
    alias: str,
) -> CaseVerdict:
    """N1 by rates, for a target that varies run to run: `twins` (differing, compared) per
    twin link, `variation` per tenant (own_variation). Fails when the twins' interval lies
    wholly above the target's own."""
    differ, itself = bootstrap_rate(list(twins)), bootstrap_rate(list(variation))
    outcome: Outcome
    if differ.rate is None or itself.rate is None:
        outcome = "inconclusive"
    else:
        assert differ.low is not None and itself.high is not None
        outcome = "fail" if differ.low > itself.high else "pass"
    detail = (
        f"control twins differed in {_rate(differ)}; the target differed from itself "
        f"on a question asked again in {_rate(itself)}"
    )
    findings = []
    if outcome != "pass":
        shown = "; ".join(
            f"{a.alias} {a.case_id}: {_excerpt(a.reply)} / {_excerpt(b.reply)}"
            for a, b in examples[:3]
        )
        findings.append(
            Finding(
                invariant="N1",
                reason="influenced" if outcome == "fail" else "target-error",
                outcome=outcome,
                detail=detail + (f". For example {shown}" if shown else "")
                if outcome == "fail"
                else "nothing was compared twice: " + detail,
            )
        )
    return CaseVerdict(
        case_id=case_id,
        role="a",
        tenant_alias=alias,
        passed=outcome == "pass",
        outcome=outcome,
        checks=[Check(invariant="N1", outcome=outcome)],
        findings=findings,
    )


def _rate(estimate: RateEstimate) -> str:
    if estimate.rate is None:
        return "no comparison"
    return (
        f"{estimate.successes} of {estimate.trials} answers ({estimate.rate:.0%}, 95% "
        f"interval {estimate.low:.0%}–{estimate.high:.0%})"
    )
