"""CohortLifecycleWorkflow: pairs run in cohorts, their calls batched per step, record
exactly what the same seeded pairs record one workflow each — and with far fewer
activities."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from memlife import contracts, recorder
from memlife.activities.record import record_steps
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import (
    VERDICT_FAILURE,
    StepOutcome,
    StepRecord,
    cohort_workflow_id,
    pair_workflow_id,
    suite_workflow_id,
)
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from memlife.stack import embedded
from memlife.stack.registry import ACTIVITIES, WORKFLOWS
from memlife.stack.worker import workflow_runner
from tests.reliability.helpers import assert_same_rows, row_keys, written_nightly
from tests.workflows.helpers import run_input, run_suite

PAIRS = 3  # two cohorts of two make one full and one partial cohort; two waves
LOCAL, LOCAL_MARKER = "local activities", "core_local_activity"  # the SDK core's marker
FAULT = "graph-unscoped-delete"  # failures too: the verdicts compared are not all passes


async def _activities(env: WorkflowEnvironment, workflow_id: str) -> dict[str, int]:
    """How many activities of each type the workflow scheduled; local activities (a marker
    each in history) count under LOCAL."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    counts: dict[str, int] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            counts[name] = counts.get(name, 0) + 1
        elif (
            event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and event.marker_recorded_event_attributes.marker_name == LOCAL_MARKER
        ):
            counts[LOCAL] = counts.get(LOCAL, 0) + 1
    return counts


async def test_cohorts_record_what_single_pairs_record(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    from memlife.rules.pairs import materialize

    written = written_nightly(PAIRS)
    seed = "cohort-equivalence"
    with embedded.reference_target(tmp_path / "single", [FAULT]) as single:
        alone = run_input(materialize(written, seed), reference_target(single.base_url))
        alone_summary = await run_suite(skip_env.client, skip_worker, alone)
    with embedded.reference_target(tmp_path / "cohort", [FAULT]) as batched:
        cohort = run_input(written, reference_target(batched.base_url)).model_copy(
            update={"cohort_size": 2, "seed": seed}
        )
        cohort_summary = await run_suite(skip_env.client, skip_worker, cohort)

    assert not alone_summary.passed and alone_summary.failures > 0
    assert cohort_summary.model_dump(exclude={"run_id"}) == alone_summary.model_dump(
        exclude={"run_id"}
    )
    assert_same_rows(row_keys(cohort.run_id, db_url), row_keys(alone.run_id, db_url))

    # Two cohorts (2 + 1 pairs) instead of three pair workflows; each cohort sends a step's
    # target calls together, so it schedules fewer of them than even one pair alone. A
    # pair records each step and its tenants in local activities, a cohort in one
    # activity per step and one for its tenants, off its workflow tasks, which then never
    # wait on the recorder (workflows/batching.py).
    name = written.name
    per_pair = await _activities(skip_env, pair_workflow_id(name, alone.run_id, 0))
    steps = len(written.timeline) + 1  # and the registration
    registrations = 1 + sum(1 for step in written.timeline if step.step == "register")
    assert per_pair.pop(LOCAL) == steps + registrations
    for first in (0, 2):
        batched = await _activities(skip_env, cohort_workflow_id(name, cohort.run_id, first))
        assert LOCAL not in batched, (first, batched)
        assert batched.pop(contracts.RECORD_STEPS.name) == steps
        assert batched.pop(contracts.RECORD_TENANT_SETS.name) == registrations
        assert 0 < sum(batched.values()) < sum(per_pair.values()), (first, batched, per_pair)


async def test_a_cohort_whose_pairs_failed_reads_failed_and_the_run_reads_its_results(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    """As a pair alone does: a cohort whose pairs found failures ends FAILED with its
    verdict as the message (what the Web UI's list shows), and the suite reads the pairs'
    results from the failure's details: the run is complete, its findings counted, no
    pair taken for broken."""
    written = written_nightly(2)
    with embedded.reference_target(tmp_path / "target", [FAULT]) as target:
        run = run_input(written, reference_target(target.base_url)).model_copy(
            update={"cohort_size": 2, "seed": "cohort-verdict"}
        )
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert not summary.passed and summary.failures > 0 and summary.cases > 0
    handle = skip_env.client.get_workflow_handle(cohort_workflow_id(written.name, run.run_id, 0))
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    with pytest.raises(WorkflowFailureError) as ended:
        await handle.result()
    verdict = ended.value.cause
    assert isinstance(verdict, ApplicationError) and verdict.type == VERDICT_FAILURE
    assert re.fullmatch(
        rf"FAIL: [01]/2 pair\(s\) passed · {summary.failures} failure\(s\) · "
        rf"{summary.inconclusive} inconclusive · 0 broken · pairs 0–1 of run {run.run_id}",
        verdict.message,
    ), verdict.message
    assert [r["pair_index"] for r in verdict.details[0]] == [0, 1]
    recorded = recorder.load_run(run.run_id, db_url)
    assert recorded is not None
    assert not recorded["run"][0].status.startswith("incomplete"), recorded["run"][0].status


async def test_a_runs_cohorts_are_found_by_its_id_and_their_verdict(
    dev_client: Client, dev_worker: str, seed_scenario: Scenario, leaky_target: Target, db_url: str
) -> None:
    """On a cluster with memlife's search attributes (the dev server), a cohort keeps its
    run, scenario, target, phase and verdict as a pair does: the query a saved view of a
    run's failures makes finds its cohort too. And its pair's first failure reaches the run
    at once, before the cohort ends, as a pair alone tells it."""
    run = run_input(seed_scenario, leaky_target).model_copy(
        update={"cohort_size": 1, "seed": "cohort-attributes", "search_attributes": True}
    )
    summary = await run_suite(dev_client, dev_worker, run)
    assert not summary.passed
    cohort = cohort_workflow_id(seed_scenario.name, run.run_id, 0)
    query = f'MemlifeRun="{run.run_id}" AND MemlifeVerdict="fail"'
    found: set[str] = set()
    for _ in range(50):  # the dev server's visibility store follows shortly
        found = {w.id async for w in dev_client.list_workflows(query)}
        if cohort in found:
            break
        await asyncio.sleep(0.2)
    assert cohort in found, found
    described = await dev_client.get_workflow_handle(cohort).describe()
    shown = {
        key.name: value
        for key, value in described.typed_search_attributes
        if key.name.startswith("Memlife")
    }
    assert shown == {
        "MemlifeRun": run.run_id,
        "MemlifeScenario": seed_scenario.name,
        "MemlifeTarget": leaky_target.name,
        "MemlifePhase": "done",
        "MemlifeVerdict": "fail",
    }
    assert described.status == WorkflowExecutionStatus.FAILED
    suite = suite_workflow_id(seed_scenario.name, run.run_id)
    events = (await dev_client.get_workflow_handle(suite).fetch_history()).events
    told = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and e.workflow_execution_signaled_event_attributes.signal_name == "pair_failing"
    ]
    ended = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED
    ]
    assert len(told) == 1 and len(ended) == 1 and told[0] < ended[0], (told, ended)


async def test_a_window_of_active_pairs_runs_cohorts_in_waves(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    """Three cohorts of one pair with room for two pairs at a time: never more than two
    cohort workflows running, every pair still run and recorded."""
    written = written_nightly(PAIRS)
    with embedded.reference_target(tmp_path / "target") as target:
        run = run_input(written, reference_target(target.base_url)).model_copy(
            update={"cohort_size": 1, "seed": "waves", "max_active_pairs": 2}
        )
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.cases > 0
    history = await skip_env.client.get_workflow_handle(
        suite_workflow_id(written.name, run.run_id)
    ).fetch_history()
    running = most = started = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            running, started = running + 1, started + 1
            most = max(most, running)
        elif event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            running -= 1
    assert (started, most) == (PAIRS, 2)
    assert row_keys(run.run_id, db_url)["tenants"] == {
        (index, role): 1 for index in range(PAIRS) for role in ("a", "b")
    }


async def _scheduled_together(env: WorkflowEnvironment, workflow_id: str) -> int:
    """How many of the workflow's tasks scheduled a step's recording and target calls at
    once."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    by_task: dict[int, set[str]] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            by_task.setdefault(attributes.workflow_task_completed_event_id, set()).add(
                attributes.activity_type.name
            )
    return sum(
        1
        for names in by_task.values()
        if {contracts.RECORD_STEPS.name, contracts.TARGET_BATCH.name} <= names
    )


async def test_a_step_with_nothing_to_judge_is_recorded_beside_the_next_one(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    """Registering, writing, updating, deleting and waiting leave the recorder nothing to
    judge: their recording goes out with the next step's target calls instead of before
    them (workflows/lifecycle.py), and the run still records every step."""
    written = written_nightly(2)
    with embedded.reference_target(tmp_path / "target") as target:
        run = run_input(written, reference_target(target.base_url)).model_copy(
            update={"cohort_size": 2, "seed": "beside"}
        )
        summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.passed, summary
    steps = row_keys(run.run_id, db_url)["steps"]
    assert sorted((pair, step) for pair, step, _ in steps) == [
        (pair, step) for pair in range(2) for step in range(-1, len(written.timeline))
    ]
    together = await _scheduled_together(skip_env, cohort_workflow_id(written.name, run.run_id, 0))
    # About one task per such step followed by target calls (none when every recording
    # goes before the next step).
    assert together >= 8, together


@activity.defn(name=contracts.RECORD_STEPS.name)
def failing_record_steps(steps: list[StepRecord]) -> list[StepOutcome]:
    """The recorder's record_steps, refusing pair 0's first write."""
    if any((step.pair_index, step.step_index) == (0, 0) for step in steps):
        raise ApplicationError("the recorder refused the step", non_retryable=True)
    return record_steps(steps)


async def test_a_recording_that_fails_beside_a_step_fails_its_pair_and_loses_nothing(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    """Pair 0's first write cannot be recorded: its lifecycle stops at the next step
    boundary once the refusal is back, and the steps that went on meanwhile are still
    recorded; pair 1 runs through."""
    activities = [a for a in ACTIVITIES if a is not record_steps] + [failing_record_steps]
    written = written_nightly(2)
    with (
        embedded.reference_target(tmp_path / "target") as target,
        ThreadPoolExecutor(max_workers=8) as executor,
    ):
        run = run_input(written, reference_target(target.base_url)).model_copy(
            update={"cohort_size": 1, "seed": "beside-fails"}
        )
        async with Worker(
            skip_env.client,
            task_queue=run.run_id,
            workflows=WORKFLOWS,
            activities=activities,
            activity_executor=executor,
            workflow_runner=workflow_runner(),
        ):
            summary = await run_suite(skip_env.client, run.run_id, run)
    assert not summary.passed
    recorded = recorder.load_run(run.run_id, db_url)
    assert recorded is not None
    assert recorded["run"][0].status == "incomplete: pair lifecycle(s) 0 failed"
    steps = row_keys(run.run_id, db_url)["steps"]
    # The pair stops at the first step boundary after the failure is known: on a quiet
    # machine before step 2; on a busy one the refusal may come back a step or two later.
    # Either way every step but the refused one is recorded, and the pair ends early.
    pair_0 = sorted(step for pair, step, _ in steps if pair == 0)
    assert pair_0[:2] == [-1, 1] and pair_0[1:] == list(range(1, pair_0[-1] + 1))
    assert pair_0[-1] < len(written.timeline) - 1
    assert sorted(step for pair, step, _ in steps if pair == 1) == list(
        range(-1, len(written.timeline))
    )
