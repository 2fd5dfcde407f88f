"""Ad hoc deletion-completeness checks and their erasure receipts. Pure.

A check follows one tenant (a real one, not only synthetic) after a deletion request: every
round reads every store by the tenant's scope and by each value given, asks the tenant's
channel, and polls the deletion status, until everything is clean or the deadline passes.
The receipt is what an operator attaches to a right-to-erasure request: per store, what
was asked, what was found, when it became clean and the time-to-forget.

Values are the tenant's real personal data: the receipt names them by position and a
short digest (`value #2 (sha256 3f9a…)`), never in clear.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from memlife.rules.evidence import DeletionState, Reply, StoreRead
from memlife.rules.judging import judge_inspection
from memlife.rules.models import Frozen
from memlife.rules.scoring import contains, normalize
from memlife.rules.target import SqlProbe, Store, Target
from memlife.rules.verdicts import CaseVerdict, InspectCase, Needle

StoreStatus = Literal["clean", "residue", "unreadable", "pending"]
Verdict = Literal["pass", "fail", "inconclusive", "running"]
RESPONSE_SURFACE = "response"
DELETION_STATUS = "deletion-status"
# A channel that no longer knows the tenant answers like this: nothing is served.
GONE_STATUSES = (404, 410)


class DeletionCheckInput(Frozen):
    """What `memlife check-deletion` (or `temporal workflow start`) passes in."""

    check_id: str
    target: Target
    user_id: str = Field(min_length=1)
    phone: str | None = None
    values: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    # Questions go through the target's `ask` (a search: it writes nothing). A service that
    # answers only through `say` stores what it is told, so asking it writes to the very
    # tenant whose erasure is being proven: only when this says so.
    ask_through_say: bool = False
    request: bool = False
    deadline: timedelta = timedelta(hours=24)
    poll: timedelta = timedelta(minutes=15)
    search_attributes: bool = False
    # Carried over by continue-as-new on a very long check.
    receipt: ErasureReceipt | None = None


class StoreEvidence(Frozen):
    store: str
    role: str = ""
    retention: str = ""
    queries: list[str] = Field(default_factory=list)
    status: StoreStatus = "pending"
    found: list[str] = Field(default_factory=list)  # the latest non-clean round's findings
    residue_seen_at: datetime | None = None
    clean_since: datetime | None = None
    time_to_forget_s: float | None = None
    rounds: int = 0


class ErasureReceipt(Frozen):
    check_id: str
    tenant: str
    target_name: str
    target_base_url: str
    values: list[str] = Field(default_factory=list)  # labels: "value #1 (sha256 …)"
    started_at: datetime
    deadline_at: datetime
    poll_s: float
    requested_at: datetime | None = None
    request_status: str | None = None  # what the delete call answered (or its error)
    deletion_id: str | None = None
    confirmed_at: datetime | None = None
    rounds: int = 0
    finished_at: datetime | None = None
    verdict: Verdict = "running"
    reasons: list[str] = Field(default_factory=list)
    stores: list[StoreEvidence] = Field(default_factory=list)


DeletionCheckInput.model_rebuild()


def value_label(index: int, value: str) -> str:
    digest = hashlib.sha256(normalize(value).encode()).hexdigest()[:8]
    return f"value #{index + 1} (sha256 {digest})"


def new_receipt(check: DeletionCheckInput, started_at: datetime) -> ErasureReceipt:
    stores = [
        StoreEvidence(
            store=s.name, role=s.role or "", retention=s.retention, queries=_queries(s, check)
        )
        for s in check.target.stores
        if s.probe is not None
    ]
    if check.questions and check.phone:
        stores.append(
            StoreEvidence(
                store=RESPONSE_SURFACE,
                role="answers to the tenant",
                queries=[f"ask: {q}" for q in check.questions],
            )
        )
    if check.request and check.target.operations.deletion_status is not None:
        stores.append(
            StoreEvidence(
                store=DELETION_STATUS,
                role="the target's own account",
                queries=[
                    f"{check.target.operations.deletion_status.method} "
                    f"{check.target.operations.deletion_status.path}"
                ],
            )
        )
    return ErasureReceipt(
        check_id=check.check_id,
        tenant=check.user_id,
        target_name=check.target.name,
        target_base_url=check.target.base_url,
        values=[value_label(i, v) for i, v in enumerate(check.values)],
        started_at=started_at,
        deadline_at=started_at + check.deadline,
        poll_s=check.poll.total_seconds(),
        stores=stores,
    )


def _queries(store: Store, check: DeletionCheckInput) -> list[str]:
    assert store.probe is not None
    if isinstance(store.probe, SqlProbe):
        return [f"scope: SQL {store.probe.scope} (tenant {check.user_id})"] + [
            f"needle: SQL {store.probe.needle} ({value_label(i, v)})"
            for i, v in enumerate(check.values)
        ]
    scope = store.probe.scope
    queries = [f"scope: {scope.method} {scope.path} (tenant {check.user_id})"]
    needles, needle = store.probe.needles, store.probe.needle
    if needles is not None and check.values:  # what inspect_stores sends: one read for all
        labels = ", ".join(value_label(i, v) for i, v in enumerate(check.values))
        queries.append(f"needles: {needles.method} {needles.path} ({labels})")
    elif needle is not None:
        queries += [
            f"needle: {needle.method} {needle.path} ({value_label(i, v)})"
            for i, v in enumerate(check.values)
        ]
    return queries


def deleted_tenant_case(check: DeletionCheckInput, clean_before: list[str]) -> InspectCase:
    """The check as a lifecycle inspection of a deleted tenant: the same I4 rules (retention
    policies, tombstones, resurrection) decide what counts as residue."""
    return InspectCase(
        case_id=f"{check.check_id}-inspect",
        role="a",
        tenant_alias=check.user_id,
        deleted=True,
        identities=[check.user_id],
        needles=[Needle(text=v, domain="erasure", origin="deleted") for v in check.values],
        partner_values=[],
        clean_before=clean_before,
    )


def _redact(text: str, values: list[str]) -> str:
    for index, value in enumerate(values):
        if value:
            text = text.replace(value, f"[{value_label(index, value)}]")
    return text


def store_outcomes(
    check: DeletionCheckInput, receipt: ErasureReceipt, reads: list[StoreRead]
) -> dict[str, tuple[StoreStatus, list[str]]]:
    """Judge one round of store reads: per store, its status and what was found."""
    clean_before = [s.store for s in receipt.stores if s.clean_since is not None]
    probed = [s for s in check.target.stores if s.probe is not None]
    verdicts, _ = judge_inspection(deleted_tenant_case(check, clean_before), reads, probed)
    outcomes: dict[str, tuple[StoreStatus, list[str]]] = {}
    for verdict in verdicts:
        outcomes[verdict.store] = (
            _status(verdict),
            [
                _redact(
                    ("resurrected: " if f.reason == "resurrected" else "")
                    + (
                        f"{value_label(check.values.index(f.value), f.value)}: "
                        if f.value in check.values
                        else ""
                    )
                    + f.detail,
                    check.values,
                )
                for f in verdict.findings
            ],
        )
    return outcomes


def _status(verdict: CaseVerdict) -> StoreStatus:
    return {"pass": "clean", "fail": "residue"}.get(verdict.outcome, "unreadable")  # type: ignore[return-value]


def answer_outcome(
    check: DeletionCheckInput, replies: list[Reply]
) -> tuple[StoreStatus, list[str]]:
    """The tenant's channel: an answer carrying a value is residue; a channel that no
    longer knows the tenant (404/410) serves nothing; any other error is unreadable."""
    found, unreadable = [], []
    for reply in replies:
        question = check.questions[reply.index] if reply.index < len(check.questions) else "?"
        if reply.status != "ok":
            if reply.http_status in GONE_STATUSES:
                continue
            unreadable.append(f"asking {question!r} failed: {reply.error}")
            continue
        text = normalize(f"{reply.reply or ''} {reply.context or ''}")
        for index, value in enumerate(check.values):
            if contains(text, value):
                found.append(f"the answer to {question!r} carries {value_label(index, value)}")
    if found:
        return "residue", found
    if unreadable:
        return "unreadable", unreadable
    return "clean", []


def deletion_outcome(
    state: DeletionState | None, error: str | None
) -> tuple[StoreStatus, list[str]]:
    if state is None:
        return "unreadable", [f"status request failed: {error}"]
    if state.failed:
        return "residue", [f"the target reports the deletion failed (status {state.status!r})"]
    if state.done:
        return "clean", []
    return "residue", [f"not confirmed yet (status {state.status!r})"]


def absorb(
    receipt: ErasureReceipt, outcomes: dict[str, tuple[StoreStatus, list[str]]], when: datetime
) -> ErasureReceipt:
    """Fold one round into the receipt: clean_since is the start of the current clean
    streak; a store that turns dirty again loses it (and shows as resurrected)."""
    origin = receipt.requested_at or receipt.started_at
    stores = []
    for evidence in receipt.stores:
        if evidence.store not in outcomes:
            stores.append(evidence)
            continue
        status, found = outcomes[evidence.store]
        update: dict[str, object] = {"status": status, "rounds": evidence.rounds + 1}
        if status == "clean":
            if evidence.clean_since is None:
                update["clean_since"] = when
                update["time_to_forget_s"] = round((when - origin).total_seconds(), 3)
                update["found"] = evidence.found
        else:
            update["found"] = found
            if status == "residue":
                update["residue_seen_at"] = when
                update["clean_since"] = None
                update["time_to_forget_s"] = None
        stores.append(evidence.model_copy(update=update))
    confirmed = receipt.confirmed_at
    if confirmed is None and outcomes.get(DELETION_STATUS, ("",))[0] == "clean":
        confirmed = when
    return receipt.model_copy(
        update={"stores": stores, "rounds": receipt.rounds + 1, "confirmed_at": confirmed}
    )


def all_clean(receipt: ErasureReceipt) -> bool:
    return bool(receipt.stores) and all(s.status == "clean" for s in receipt.stores)


def finish(receipt: ErasureReceipt, when: datetime) -> ErasureReceipt:
    """Fails closed: residue anywhere fails; otherwise anything unread is inconclusive."""
    reasons = []
    residue = [s for s in receipt.stores if s.status == "residue"]
    unreadable = [s for s in receipt.stores if s.status in ("unreadable", "pending")]
    for evidence in residue:
        reasons.append(f"{evidence.store}: " + ("; ".join(evidence.found) or "residue"))
    for evidence in unreadable:
        reasons.append(
            f"{evidence.store}: could not be read ("
            + ("; ".join(evidence.found) or "never read")
            + ")"
        )
    if receipt.request_status and receipt.request_status.startswith("error"):
        reasons.insert(0, f"deletion request: {receipt.request_status}")
    verdict: Verdict = (
        "fail"
        if residue
        else "inconclusive"
        if unreadable or (receipt.request_status or "").startswith("error")
        else "pass"
    )
    if not receipt.stores:
        verdict, reasons = "inconclusive", ["the target file probes no store"]
    return receipt.model_copy(update={"verdict": verdict, "reasons": reasons, "finished_at": when})
