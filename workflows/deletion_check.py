"""DeletionCheckWorkflow: is one tenant gone from every store and every answer, and when
did each store become clean? Produces the erasure receipt (memlife/erasure.py).

Rounds of reads run every `poll` until everything is clean or the deadline passes; very
long checks continue as new with the receipt so far, so the history stays small.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    import memlife.workflows.attributes as attributes
    from memlife.contracts import (
        VERDICT_FAILURE,
        ConverseRequest,
        DeleteRequest,
        DeletionCheckProgress,
        InspectRequest,
    )
    from memlife.rules import erasure
    from memlife.rules.erasure import DeletionCheckInput, ErasureReceipt
    from memlife.rules.evidence import DeletionState, Reply, StoreRead
    from memlife.workflows.calls import execute, failure_text, iso
    from memlife.workflows.options import (
        HEARTBEAT_TIMEOUT,
        INSPECT_RETRY,
        RECORD_RETRY,
        RECORD_TIMEOUT,
        RESUMABLE_RETRY,
        TARGET_RETRY,
        converse_timeouts,
        inspect_timeout,
        target_timeout,
    )


@workflow.defn(name="DeletionCheckWorkflow")
class DeletionCheckWorkflow:
    def __init__(self) -> None:
        self._receipt: ErasureReceipt | None = None
        self._deletion: DeletionState | None = None
        self._skip_requested = False
        self._skipped = timedelta(0)
        self._cancel_reason: str | None = None
        self._wake_at: Any = None

    @workflow.query
    def progress(self) -> DeletionCheckProgress:
        receipt = self._receipt
        if receipt is None:
            return DeletionCheckProgress(wake_at=iso(self._wake_at) if self._wake_at else None)
        return DeletionCheckProgress(
            phase=receipt.verdict,
            rounds=receipt.rounds,
            stores={s.store: s.status for s in receipt.stores},
            wake_at=iso(self._wake_at) if self._wake_at else None,
        )

    @workflow.query
    def receipt(self) -> ErasureReceipt | None:
        return self._receipt

    @workflow.signal
    def skip_wait(self) -> None:
        """Operator fast-forward: run the next round now (the clock sent to a simulated
        target moves on by the skipped time)."""
        if self._wake_at is not None:
            self._skip_requested = True

    @workflow.signal
    def cancel(self, reason: str) -> None:
        """Stop after the current round; the receipt says so and cannot pass."""
        self._cancel_reason = reason or "cancelled by an operator"

    @workflow.run
    async def run(self, check: DeletionCheckInput) -> ErasureReceipt:
        target = check.target
        receipt = check.receipt or erasure.new_receipt(check, workflow.now())
        self._receipt = receipt
        if check.search_attributes and check.receipt is None:
            workflow.upsert_search_attributes(
                [
                    attributes.TARGET.value_set(target.name),
                    attributes.PHASE.value_set("deletion-check"),
                    attributes.VERDICT.value_set(attributes.RUNNING),
                ]
            )
        if check.request and receipt.requested_at is None:
            receipt = await self._request(check, receipt)
        while True:
            receipt = await self._round(check, receipt)
            self._receipt = receipt
            now = self._now()
            if erasure.all_clean(receipt) or now >= receipt.deadline_at or self._cancel_reason:
                break
            if workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(check.model_copy(update={"receipt": receipt}))
            await self._sleep(min(check.poll, receipt.deadline_at - now))
        receipt = erasure.finish(receipt, self._now())
        if self._cancel_reason:
            receipt = receipt.model_copy(
                update={
                    "verdict": "inconclusive" if receipt.verdict == "pass" else receipt.verdict,
                    "reasons": [*receipt.reasons, f"cancelled: {self._cancel_reason}"],
                }
            )
        self._receipt = receipt
        if workflow.patched("record-erasure-receipt"):
            # Released checks ended without this; their histories replay past it.
            await execute(
                contracts.RECORD_RECEIPT,
                receipt,
                start_to_close_timeout=RECORD_TIMEOUT,
                retry_policy=RECORD_RETRY,
                summary="record the erasure receipt",
            )
        if check.search_attributes:
            workflow.upsert_search_attributes(
                [attributes.PHASE.value_set("done"), attributes.VERDICT.value_set(receipt.verdict)]
            )
        headline = f"{receipt.verdict.upper()}: {check.user_id} on {target.name} · " + (
            " · ".join(receipt.reasons) or "gone from every store checked"
        )
        workflow.set_current_details(f"**{headline}**")
        # As a run (workflows/suite.py): a check that did not pass ends FAILED, carrying
        # its receipt; checks started before this ended COMPLETED whatever their verdict.
        if receipt.verdict != "pass" and workflow.patched("verdict-as-status"):
            raise ApplicationError(
                headline, receipt.model_dump(mode="json"), type=VERDICT_FAILURE, non_retryable=True
            )
        return receipt

    async def _request(self, check: DeletionCheckInput, receipt: ErasureReceipt) -> ErasureReceipt:
        target = check.target
        now = self._now()
        try:
            state = await execute(
                contracts.DELETE_TENANT,
                DeleteRequest(
                    target=target,
                    phone=check.phone or "",
                    user_id=check.user_id,
                    scenario_now=iso(now),
                    run_id=workflow.info().workflow_id,
                ),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"request deletion of {check.user_id}",
            )
        except ActivityError as failure:
            return receipt.model_copy(
                update={"requested_at": now, "request_status": f"error: {failure_text(failure)}"}
            )
        self._deletion = state
        return receipt.model_copy(
            update={
                "requested_at": now,
                "deletion_id": state.deletion_id,
                "request_status": f"HTTP {state.http_status}"
                + (f", status {state.status!r}" if state.status else ""),
                "confirmed_at": now if state.done else None,
            }
        )

    async def _round(self, check: DeletionCheckInput, receipt: ErasureReceipt) -> ErasureReceipt:
        now = self._now()
        reads, replies, status = await asyncio.gather(
            self._read_stores(check, now), self._ask(check, now), self._status(check, now)
        )
        outcomes = erasure.store_outcomes(check, receipt, reads)
        if replies is not None:
            outcomes[erasure.RESPONSE_SURFACE] = erasure.answer_outcome(check, replies)
        if status is not None:
            outcomes[erasure.DELETION_STATUS] = status
        return erasure.absorb(receipt, outcomes, now)

    async def _read_stores(self, check: DeletionCheckInput, now: Any) -> list[StoreRead]:
        target = check.target
        probed = [s for s in target.stores if s.probe is not None]
        if not probed:
            return []
        try:
            return await execute(
                contracts.INSPECT_STORES,
                InspectRequest(
                    target=target,
                    identities=[check.user_id],
                    needles=check.values,
                    watch=check.values,
                    scenario_now=iso(now),
                    run_id=workflow.info().workflow_id,
                ),
                start_to_close_timeout=inspect_timeout(target, len(check.values) + 1),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=INSPECT_RETRY,
                summary=f"read {len(probed)} store(s) for {check.user_id}",
            )
        except ActivityError as failure:  # fail closed: unread is not absent
            return [
                StoreRead(
                    store=s.name,
                    mode="scope",
                    key=check.user_id,
                    status="error",
                    error=failure_text(failure),
                )
                for s in probed
            ]

    async def _ask(self, check: DeletionCheckInput, now: Any) -> list[Any] | None:
        if not (check.questions and check.phone):
            return None
        target = check.target
        asks = target.operations.ask is not None
        if workflow.patched("deletion-check-never-writes") and not (asks or check.ask_through_say):
            return None  # asking through `say` would write to the tenant being checked
        start_to_close, heartbeat = converse_timeouts(target, len(check.questions))
        try:
            return await execute(
                contracts.CONVERSE,
                ConverseRequest(
                    target=target,
                    phone=check.phone,
                    user_id=check.user_id,
                    messages=check.questions,
                    scenario_now=iso(now),
                    run_id=workflow.info().workflow_id,
                    # every message a question: through `ask`, which writes nothing
                    questions=list(range(len(check.questions))),
                ),
                start_to_close_timeout=start_to_close,
                heartbeat_timeout=heartbeat,
                retry_policy=RESUMABLE_RETRY,
                summary=f"ask {len(check.questions)} question(s) as {check.user_id}",
            )
        except ActivityError as failure:
            return [
                Reply(
                    index=i,
                    status="target-error",
                    error=failure_text(failure),
                    wall_time=workflow.now(),
                )
                for i in range(len(check.questions))
            ]

    async def _status(
        self, check: DeletionCheckInput, now: Any
    ) -> tuple[erasure.StoreStatus, list[str]] | None:
        target = check.target
        if not check.request or target.operations.deletion_status is None:
            return None
        if self._deletion is not None and (self._deletion.done or self._deletion.failed):
            return erasure.deletion_outcome(self._deletion, None)
        try:
            self._deletion = await execute(
                contracts.DELETION_STATUS,
                DeleteRequest(
                    target=target,
                    phone=check.phone or "",
                    user_id=check.user_id,
                    deletion_id=self._deletion.deletion_id if self._deletion else None,
                    scenario_now=iso(now),
                    run_id=workflow.info().workflow_id,
                ),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"deletion status of {check.user_id}",
            )
        except ActivityError as failure:
            return erasure.deletion_outcome(None, failure_text(failure))
        return erasure.deletion_outcome(self._deletion, None)

    async def _sleep(self, duration: timedelta) -> None:
        wake_at = workflow.now() + duration
        self._wake_at, self._skip_requested = wake_at, False
        try:
            await workflow.wait_condition(
                lambda: self._skip_requested or self._cancel_reason is not None,
                timeout=duration,
                timeout_summary=f"next round in {duration}",
            )
            if self._skip_requested:
                self._skipped += max(timedelta(0), wake_at - workflow.now())
        except TimeoutError:
            pass
        finally:
            self._wake_at, self._skip_requested = None, False

    def _now(self) -> Any:
        # Operator fast-forwards move the check's clock (sent as X-Memlife-Now) on.
        return workflow.now() + self._skipped
