"""Blinded adjudication of replies. Pure.

Substring scoring is a proxy. A reply it failed can be queued for a person (or a model
judge) to read: the reviewer sees the question, the reply and the candidate values — every
value the case is about, in an order fixed by the item's ticket — and says which of them the
reply states, or that it abstains. The reviewer never sees the tenant, the pair, the run or
which value is expected. The decision is turned back into per-check outcomes here, so
reports can give exact-match and adjudicated rates side by side.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import Field

from memlife.rules.evidence import Observation
from memlife.rules.judging import LEAK_CHECKS
from memlife.rules.models import Frozen
from memlife.rules.verdicts import CaseVerdict, ProbeCase

Outcome = Literal["pass", "fail"]


class ReviewItem(Frozen):
    ticket: str  # opaque: says nothing about run, pair or tenant
    question: str
    reply: str
    candidates: list[str]
    # Hidden from the reviewer:
    run_id: str
    pair_index: int
    step_index: int
    stage: str
    case_id: str
    tenant_alias: str
    kind: Literal["recall", "stale", "abstain"]
    required: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    forbidden: dict[str, list[str]] = Field(default_factory=dict)  # by invariant
    exact: dict[str, str] = Field(default_factory=dict)  # invariant → exact-match outcome


class BlindItem(Frozen):
    """All a reviewer is shown."""

    ticket: str
    question: str
    reply: str
    candidates: list[str]


class Decision(Frozen):
    ticket: str
    asserted: list[int] = Field(default_factory=list)  # indices into candidates
    abstains: bool = False
    reviewer: str = Field(min_length=1, max_length=80)
    note: str = Field(default="", max_length=500)


class Adjudication(Frozen):
    """A decision and what it means for the item's checks (recorded for reports)."""

    item: ReviewItem
    decision: Decision
    decided_at: datetime
    checks: dict[str, Outcome]


def ticket_for(item_key: str) -> str:
    return hashlib.sha256(item_key.encode()).hexdigest()[:12]


def blind(item: ReviewItem) -> BlindItem:
    return BlindItem(
        ticket=item.ticket, question=item.question, reply=item.reply, candidates=item.candidates
    )


def review_items(
    run_id: str,
    pair_index: int,
    step_index: int,
    stage: str,
    cases: list[ProbeCase],
    observations: list[Observation],
    verdicts: list[CaseVerdict],
) -> list[ReviewItem]:
    """The failed answer checks of one probe step, as items for review."""
    by_case = {o.case_id: o for o in observations if o.case_id}
    cases_by_id = {c.case_id: c for c in cases}
    items = []
    for verdict in verdicts:
        case = cases_by_id.get(verdict.case_id)
        observation = by_case.get(verdict.case_id)
        if (
            case is None
            or observation is None
            or observation.reply is None
            or verdict.outcome != "fail"
            or verdict.store != "response"
        ):
            continue
        forbidden: dict[str, list[str]] = {}
        for value in case.forbidden:
            forbidden.setdefault(LEAK_CHECKS[value.origin][0], []).append(value.text)
        for finding in verdict.findings:  # leaks of tenants outside the pair
            if finding.reason == "leaked" and finding.value and finding.store == "response":
                texts = forbidden.setdefault(finding.invariant, [])
                if finding.value not in texts:
                    texts.append(finding.value)
        values = list(
            dict.fromkeys(
                [*case.required, *case.any_of, *(t for ts in forbidden.values() for t in ts)]
            )
        )
        key = f"{run_id}/{pair_index}/{step_index}/{case.case_id}"
        ticket = ticket_for(key)
        # A fixed order that does not give the expected value away (it is not always first).
        candidates = sorted(
            values, key=lambda v: hashlib.sha256(f"{ticket}/{v}".encode()).hexdigest()
        )
        items.append(
            ReviewItem(
                ticket=ticket,
                question=case.question,
                reply=observation.reply,
                candidates=candidates,
                run_id=run_id,
                pair_index=pair_index,
                step_index=step_index,
                stage=stage,
                case_id=case.case_id,
                tenant_alias=case.tenant_alias,
                kind=case.kind,
                required=case.required,
                any_of=case.any_of,
                forbidden=forbidden,
                exact={
                    c.invariant: c.outcome
                    for c in verdict.checks
                    if c.store == "response" and c.invariant != "L"
                },
            )
        )
    return items


def decision_problems(item: ReviewItem, decision: Decision) -> list[str]:
    problems = []
    for index in decision.asserted:
        if not 0 <= index < len(item.candidates):
            problems.append(f"candidate {index + 1} does not exist (1–{len(item.candidates)})")
    if decision.abstains and decision.asserted:
        problems.append("a reply that abstains states no value")
    return problems


def adjudicate(item: ReviewItem, decision: Decision) -> dict[str, Outcome]:
    """The checks the exact match made, decided by what the reviewer read."""
    asserted = {item.candidates[i] for i in decision.asserted}
    checks: dict[str, Outcome] = {}
    for invariant, values in item.forbidden.items():
        if invariant in item.exact:
            checks[invariant] = "fail" if asserted & set(values) else "pass"
    if item.kind == "abstain":
        leaked = any(asserted & set(v) for v in item.forbidden.values())
        checks["abstain"] = "pass" if decision.abstains and not leaked else "fail"
    elif "recall" in item.exact:
        has_required = set(item.required) <= asserted
        has_any = not item.any_of or bool(asserted & set(item.any_of))
        checks["recall"] = (
            "pass" if has_required and has_any and not decision.abstains else ("fail")
        )
    if "D2" in item.exact:
        checks["D2"] = checks.get("recall", "fail")
    return checks
