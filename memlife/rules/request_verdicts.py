"""Verdicts on requests whose answer decides what is checked next: a deletion's status
against its SLA, and a maintenance or space request that got no usable answer (what
depends on it is unproven, so inconclusive). Pure."""

from __future__ import annotations

from datetime import timedelta

from memlife.rules.evidence import DeletionState
from memlife.rules.judging import traced
from memlife.rules.scenario import Role
from memlife.rules.verdicts import CaseVerdict, Check, Finding, Outcome


def deletion_verdict(
    case_id: str,
    role: Role,
    alias: str,
    state: DeletionState | None,
    error: str | None,
    deadline: timedelta,
    elapsed: timedelta,
    store: str = "deletion-status",
) -> CaseVerdict:
    """I4 at confirmation: deletion confirmed within the SLA. Not confirmed by the deadline
    fails (slow); a reported failure fails; no usable answer at all is inconclusive."""
    detail = f"time-to-forget {elapsed}" if state and state.done else ""
    if state is not None and state.done:
        finding: Finding | None = None
        outcome: Outcome = "pass"
    elif state is not None and state.failed:
        outcome = "fail"
        finding = Finding(
            invariant="I4",
            reason="target-error",
            outcome="fail",
            store=store,
            value=state.status,
            detail="the target reported the deletion failed",
        )
    elif state is not None:
        outcome = "fail"
        finding = Finding(
            invariant="I4",
            reason="slow",
            outcome="fail",
            store=store,
            value=state.status,
            detail=f"not confirmed within the deletion SLA ({deadline})",
        )
    else:
        outcome = "inconclusive"
        finding = Finding(
            invariant="I4",
            reason="target-error",
            outcome="inconclusive",
            store=store,
            detail=error or "no status",
        )
    return traced(
        CaseVerdict(
            case_id=case_id,
            role=role,
            tenant_alias=alias,
            store=store,
            passed=outcome == "pass",
            outcome=outcome,
            checks=[Check(invariant="I4", outcome=outcome, store=store)],
            findings=[finding] if finding else [],
            latency_ms=None if not detail else elapsed.total_seconds() * 1000,
        ),
        state.traceparent if state else None,
    )


def unanswered_verdict(
    case_id: str, role: Role, alias: str, store: str, invariant: str, value: str, error: str
) -> CaseVerdict:
    """A request that changes what is checked next (maintenance, a space's membership) got
    no usable answer: the check that depends on it is unproven (inconclusive)."""
    return CaseVerdict(
        case_id=case_id,
        role=role,
        tenant_alias=alias,
        store=store,
        passed=False,
        outcome="inconclusive",
        checks=[Check(invariant=invariant, outcome="inconclusive", store=store)],
        findings=[
            Finding(
                invariant=invariant,
                reason="target-error",
                outcome="inconclusive",
                store=store,
                value=value,
                detail=error,
            )
        ],
    )


def maintenance_verdict(
    case_id: str, role: Role, alias: str, operation: str, error: str
) -> CaseVerdict:
    """A maintenance request that got no usable answer: what the scenario checks after it
    was not checked after maintenance, so I4 there is unproven (inconclusive)."""
    return unanswered_verdict(case_id, role, alias, "maintenance", "I4", operation, error)
