"""SuiteWorkflow continues as new when its history grows long: the run goes on in a fresh
Temporal run of the same workflow id, and records, counts and ends exactly as one Temporal
run would have."""

from __future__ import annotations

from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from bench.histories import run_histories, temporal_runs
from memlife import contracts
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import cohort_workflow_id, suite_workflow_id
from memlife.stack import embedded
from tests.reliability.helpers import assert_same_rows, row_keys, written_nightly
from tests.workflows.helpers import run_input, run_suite
from tests.workflows.test_cohort import FAULT, PAIRS


def _children_started(history: WorkflowHistory) -> int:
    return sum(
        event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
        for event in history.events
    )


async def test_a_suite_past_its_history_budget_continues_as_new_and_loses_nothing(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    """Three cohorts of one pair, room for two at a time, and a history budget so small
    that each Temporal run of the suite starts one cohort: three runs, and the same rows,
    counts and verdict as the same seeded run in one."""
    written = written_nightly(PAIRS)
    seed = "continue-as-new"
    runs = {}
    for name, budget in (("whole", 0), ("continued", 1)):
        with embedded.reference_target(tmp_path / name, [FAULT]) as target:
            run = run_input(written, reference_target(target.base_url)).model_copy(
                update={
                    "cohort_size": 1,
                    "seed": seed,
                    "max_active_pairs": 2,
                    "continue_at_events": budget,
                }
            )
            runs[name] = (run, await run_suite(skip_env.client, skip_worker, run))

    (whole, whole_summary), (continued, summary) = runs["whole"], runs["continued"]
    assert not summary.passed and summary.failures > 0  # findings are carried, not lost
    assert summary.model_dump(exclude={"run_id"}) == whole_summary.model_dump(exclude={"run_id"})
    assert_same_rows(row_keys(continued.run_id, db_url), row_keys(whole.run_id, db_url))

    workflow_id = suite_workflow_id(written.name, continued.run_id)
    histories = await temporal_runs(skip_env.client, workflow_id)
    assert [_children_started(history) for history in histories] == [1] * PAIRS
    assert all(
        history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        for history in histories[:-1]
    )
    # The run is prepared once (recorded, its pairs drawn), by the first Temporal run.
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for history in histories
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled.count(contracts.PREPARE_RUN.name) == 1
    assert scheduled[0] == contracts.PREPARE_RUN.name
    (whole_history,) = await temporal_runs(
        skip_env.client, suite_workflow_id(written.name, whole.run_id)
    )
    assert _children_started(whole_history) == PAIRS

    # The last Temporal run answers for the whole run, not only the cohort it ran.
    handle = skip_env.client.get_workflow_handle(workflow_id)
    progress, verdicts = await handle.query("progress"), await handle.query("verdicts")
    assert (progress["pairs"], progress["pairs_done"]) == (PAIRS, PAIRS)
    assert (verdicts["cases"], verdicts["failures"], verdicts["inconclusive"]) == (
        summary.cases,
        summary.failures,
        summary.inconclusive,
    )
    assert verdicts["verdict"] == "fail"

    # What the bench reports of it: three suite runs, the largest of them, and the cohorts.
    costs = await run_histories(
        skip_env.client,
        workflow_id,
        [cohort_workflow_id(written.name, continued.run_id, first) for first in range(PAIRS)],
    )
    assert (costs.suite_runs, costs.workflows) == (PAIRS, 1 + PAIRS)
    assert costs.suite_events == max(len(history.events) for history in histories)
