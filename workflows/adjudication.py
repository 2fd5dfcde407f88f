"""AdjudicationWorkflow: a queue of replies waiting for a reviewer (`memlife review`).

Runs' pair lifecycles enqueue the answers exact matching failed (signal-with-start, from an
activity); reviewers take them one at a time through the `pending` query and decide through
the `decide` update, which validates before anything is written to history. Every decision
is recorded to the database by an activity. Long-lived: continues as new with what is still
pending.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    from memlife.rules.adjudication import (
        Adjudication,
        BlindItem,
        Decision,
        ReviewItem,
        adjudicate,
        blind,
        decision_problems,
    )
    from memlife.workflows.calls import execute
    from memlife.workflows.options import RECORD_RETRY, RECORD_TIMEOUT


class QueueState(BaseModel):
    pending: list[ReviewItem] = Field(default_factory=list)
    decided: list[str] = Field(default_factory=list)  # tickets
    reviewers: dict[str, int] = Field(default_factory=dict)


@workflow.defn(name="AdjudicationWorkflow")
class AdjudicationWorkflow:
    def __init__(self) -> None:
        self._pending: dict[str, ReviewItem] = {}
        self._decided: set[str] = set()
        self._reviewers: dict[str, int] = {}
        self._to_record: list[Adjudication] = []

    @workflow.signal
    def enqueue(self, items: list[ReviewItem]) -> None:
        for item in items:  # a retried enqueue adds nothing twice
            if item.ticket not in self._pending and item.ticket not in self._decided:
                self._pending[item.ticket] = item

    @workflow.query
    def pending(self, limit: int = 20) -> list[BlindItem]:
        """What a reviewer may see: question, reply, candidates — nothing else."""
        return [blind(item) for item in list(self._pending.values())[:limit]]

    @workflow.query
    def is_decided(self, ticket: str) -> bool:
        """Whether a decision on this ticket is recorded (for a client whose update's
        outcome was lost)."""
        return ticket in self._decided

    @workflow.query
    def status(self) -> dict[str, Any]:
        return {
            "pending": len(self._pending),
            "decided": len(self._decided),
            "reviewers": dict(self._reviewers),
        }

    @workflow.update
    def decide(self, decision: Decision) -> dict[str, Any]:
        item = self._pending.pop(decision.ticket)
        self._decided.add(decision.ticket)
        self._reviewers[decision.reviewer] = self._reviewers.get(decision.reviewer, 0) + 1
        self._to_record.append(
            Adjudication(
                item=item,
                decision=decision,
                decided_at=workflow.now(),
                checks=adjudicate(item, decision),
            )
        )
        # Nothing about the expected value comes back: the reviewer stays blind.
        return {"recorded": True, "pending": len(self._pending)}

    @decide.validator
    def _check_decision(self, decision: Decision) -> None:
        item = self._pending.get(decision.ticket)
        if item is None:
            raise ValueError(
                f"ticket {decision.ticket} is not pending (decided already, or unknown)"
            )
        problems = decision_problems(item, decision)
        if problems:
            raise ValueError("; ".join(problems))

    @workflow.run
    async def run(self, state: QueueState | None = None) -> None:
        if state is not None:
            self._pending = {item.ticket: item for item in state.pending}
            self._decided = set(state.decided)
            self._reviewers = dict(state.reviewers)
        while True:
            await workflow.wait_condition(
                lambda: bool(self._to_record) or workflow.info().is_continue_as_new_suggested()
            )
            if self._to_record:
                batch, self._to_record = self._to_record, []
                await execute(
                    contracts.RECORD_ADJUDICATIONS,
                    batch,
                    start_to_close_timeout=RECORD_TIMEOUT,
                    retry_policy=RECORD_RETRY,
                    summary=f"record {len(batch)} decision(s)",
                )
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                if not self._to_record:
                    workflow.continue_as_new(
                        QueueState(
                            pending=list(self._pending.values()),
                            decided=sorted(self._decided),
                            reviewers=self._reviewers,
                        )
                    )
