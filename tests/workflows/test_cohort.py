"""CohortLifecycleWorkflow: pairs run in cohorts, their calls batched per step, record
exactly what the same seeded pairs record one workflow each — and with far fewer
activities."""

from __future__ import annotations

from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from memlife import contracts
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import cohort_workflow_id, pair_workflow_id, suite_workflow_id
from memlife.stack import embedded
from tests.reliability.helpers import assert_same_rows, row_keys, written_nightly
from tests.workflows.helpers import run_input, run_suite

PAIRS = 3  # two cohorts of two make one full and one partial cohort; two waves
FAULT = "graph-unscoped-delete"  # failures too: the verdicts compared are not all passes


async def _activities(env: WorkflowEnvironment, workflow_id: str) -> dict[str, int]:
    """How many activities of each type the workflow scheduled."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    counts: dict[str, int] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            counts[name] = counts.get(name, 0) + 1
    return counts


async def test_cohorts_record_what_single_pairs_record(
        tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str) -> None:
    from memlife.rules.pairs import materialize

    written = written_nightly(PAIRS)
    seed = "cohort-equivalence"
    with embedded.reference_target(tmp_path / "single", [FAULT]) as single:
        alone = run_input(materialize(written, seed), reference_target(single.base_url))
        alone_summary = await run_suite(skip_env.client, skip_worker, alone)
    with embedded.reference_target(tmp_path / "cohort", [FAULT]) as batched:
        cohort = run_input(written, reference_target(batched.base_url)).model_copy(
            update={"cohort_size": 2, "seed": seed})
        cohort_summary = await run_suite(skip_env.client, skip_worker, cohort)

    assert not alone_summary.passed and alone_summary.failures > 0
    assert cohort_summary.model_dump(exclude={"run_id"}) == alone_summary.model_dump(
        exclude={"run_id"})
    assert_same_rows(row_keys(cohort.run_id, db_url), row_keys(alone.run_id, db_url))

    # Two cohorts (2 + 1 pairs) instead of three pair workflows; each cohort sends a step's
    # target calls together, so it schedules fewer of them than even one pair alone. A
    # pair records each step in a local activity (no history event), a cohort in one
    # activity per step, off its workflow tasks (workflows/batching.py).
    name = written.name
    per_pair = await _activities(skip_env, pair_workflow_id(name, alone.run_id, 0))
    steps = len(written.timeline) + 1  # and the registration
    for first in (0, 2):
        batched = await _activities(skip_env, cohort_workflow_id(name, cohort.run_id, first))
        assert batched.pop(contracts.RECORD_STEPS) == steps
        assert 0 < sum(batched.values()) < sum(per_pair.values()), (first, batched, per_pair)


async def test_a_window_of_active_pairs_runs_cohorts_in_waves(
        tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str) -> None:
    """Three cohorts of one pair with room for two pairs at a time: never more than two
    cohort workflows running, every pair still run and recorded."""
    written = written_nightly(PAIRS)
    with embedded.reference_target(tmp_path / "target") as target:
        run = run_input(written, reference_target(target.base_url)).model_copy(
            update={"cohort_size": 1, "seed": "waves", "max_active_pairs": 2})
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.cases > 0
    history = await skip_env.client.get_workflow_handle(
        suite_workflow_id(written.name, run.run_id)).fetch_history()
    running = most = started = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            running, started = running + 1, started + 1
            most = max(most, running)
        elif event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            running -= 1
    assert (started, most) == (PAIRS, 2)
    assert row_keys(run.run_id, db_url)["tenants"] == {
        (index, role): 1 for index in range(PAIRS) for role in ("a", "b")}
