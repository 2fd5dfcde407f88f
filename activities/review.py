"""Activities of blinded adjudication: queue replies for review, record decisions."""

from __future__ import annotations

import json

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy

from memlife import contracts, recorder
from memlife.contracts import review_workflow_id
from memlife.log import get_logger
from memlife.rules.adjudication import Adjudication, ReviewItem

log = get_logger("memlife.activities.review")


@activity.defn(name=contracts.QUEUE_FOR_REVIEW.name)
async def queue_for_review(queue: str, items: list[ReviewItem]) -> int:
    """Signal-with-start the queue's AdjudicationWorkflow with the items."""
    return await enqueue(queue, items)


async def enqueue(queue: str, items: list[ReviewItem]) -> int:
    """queue_for_review's work, for any activity that queues items."""
    await activity.client().start_workflow(
        "AdjudicationWorkflow",
        None,
        id=review_workflow_id(queue),
        task_queue=activity.info().task_queue,
        start_signal="enqueue",
        start_signal_args=[items],
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"review queue {queue}: replies waiting for a reviewer",
    )
    log.info("queued for review", queue=queue, items=len(items))
    return len(items)


@activity.defn(name=contracts.RECORD_ADJUDICATIONS.name)
def record_adjudications(batch: list[Adjudication]) -> None:
    rows: list = [
        recorder.AdjudicationRow(
            id=a.item.ticket,
            run_id=a.item.run_id,
            pair_index=a.item.pair_index,
            step_index=a.item.step_index,
            stage=a.item.stage,
            case_id=a.item.case_id,
            tenant_alias=a.item.tenant_alias,
            kind=a.item.kind,
            reviewer=a.decision.reviewer,
            decided_at=a.decided_at,
            asserted_json=json.dumps(
                [a.item.candidates[i] for i in a.decision.asserted], ensure_ascii=False
            ),
            abstains=a.decision.abstains,
            note=a.decision.note,
            exact_json=json.dumps(a.item.exact),
            checks_json=json.dumps(a.checks),
        )
        for a in batch
    ]
    recorder.merge_all(rows)
