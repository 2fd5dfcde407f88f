"""RunInput.target_task_queue: a run's target requests, and only those, go through a task
queue of their own (what `memlife run --target-worker` serves from a worker process of
their own), whether its pairs run one workflow each or in cohorts."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memlife import contracts
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import cohort_workflow_id, pair_workflow_id
from memlife.rules.pairs import materialize
from memlife.stack import embedded, heap
from memlife.stack.worker import build_worker
from tests.reliability.helpers import written_nightly
from tests.workflows.helpers import run_input, run_suite

# The activities that send requests to the target; everything else the workflows schedule
# records, loads or summarizes.
TARGET_ACTIVITIES = {
    activity.name
    for activity in (
        contracts.TARGET_BATCH,
        contracts.REGISTER_TENANT,
        contracts.CONVERSE,
        contracts.DELETE_TENANT,
        contracts.DELETION_STATUS,
        contracts.FORGET_FACT,
        contracts.MAINTAIN_TARGET,
        contracts.SPACE_OPERATION,
        contracts.INSPECT_STORES,
    )
}


async def _queues_by_activity(client: Client, workflow_id: str) -> dict[str, set[str]]:
    """Each activity type the workflow scheduled, and the task queues it went to."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    queues: dict[str, set[str]] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            queues.setdefault(scheduled.activity_type.name, set()).add(scheduled.task_queue.name)
    return queues


@pytest.mark.parametrize("cohort_size", [0, 2])
async def test_target_requests_go_through_their_own_task_queue(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str, cohort_size: int
) -> None:
    client, suffix = skip_env.client, uuid.uuid4().hex[:8]
    run_queue, target_queue = f"run-{suffix}", f"targets-{suffix}"
    written = written_nightly(3)
    with (
        embedded.reference_target(tmp_path / "target") as target,
        ThreadPoolExecutor(max_workers=16) as executor,
        heap.serving(),
    ):
        scenario = materialize(written, "target-queue") if cohort_size == 0 else written
        run = run_input(scenario, reference_target(target.base_url)).model_copy(
            update={
                "cohort_size": cohort_size,
                "seed": "target-queue" if cohort_size else None,
                "target_task_queue": target_queue,
            }
        )
        # Two workers with every activity: each takes only what its own queue is sent.
        async with (
            build_worker(client, run_queue, executor),
            build_worker(client, target_queue, executor, serve="activities"),
        ):
            summary = await run_suite(client, run_queue, run)

    assert summary.passed and summary.cases_passed == summary.cases > 0, summary
    name = written.name
    children = (
        [cohort_workflow_id(name, run.run_id, first) for first in (0, 2)]
        if cohort_size
        else [pair_workflow_id(name, run.run_id, i) for i in range(3)]
    )
    for workflow_id in children:
        queues = await _queues_by_activity(client, workflow_id)
        sent = {activity for activity in queues if activity in TARGET_ACTIVITIES}
        assert sent, f"{workflow_id} sent no target request"
        for activity, used in queues.items():
            expected = target_queue if activity in TARGET_ACTIVITIES else run_queue
            assert used == {expected}, (workflow_id, activity, used)
