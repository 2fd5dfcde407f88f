"""memlife/stack/worker.py: a `workflows` worker and an `activities` worker on one task queue
serve a run between them, and neither takes the other's tasks."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import suite_workflow_id
from memlife.stack import embedded, heap
from memlife.stack.connection import suite_result
from memlife.stack.worker import build_worker, main
from memlife.workflows.suite import SuiteWorkflow
from tests.reliability.helpers import start_worker, written_nightly
from tests.workflows.helpers import run_input

PAIRS = 3  # in cohorts of two: the cohorts' calls are remote activities


async def _events(handle: WorkflowHandle) -> list[EventType.ValueType]:
    return [event.event_type async for event in handle.fetch_history_events()]


async def _scheduled_activities(handle: WorkflowHandle, within: float) -> list[str]:
    """The states of the workflow's pending activities, once it has any (or none by then)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pending = (await handle.describe()).raw_description.pending_activities
        if pending:
            return [PendingActivityState.Name(activity.state) for activity in pending]
        await asyncio.sleep(0.2)
    return []


async def test_a_workflows_worker_and_an_activities_worker_serve_a_run_between_them(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    client, task_queue = skip_env.client, f"split-{uuid.uuid4().hex[:8]}"
    with (
        embedded.reference_target(tmp_path / "target") as target,
        ThreadPoolExecutor(max_workers=16) as executor,
        heap.serving(),
    ):
        run = run_input(written_nightly(PAIRS), reference_target(target.base_url)).model_copy(
            update={"cohort_size": 2, "seed": "split-workers"}
        )

        # An activities worker alone takes no workflow task: the suite does not start.
        async with build_worker(client, task_queue, executor, serve="activities"):
            handle = await client.start_workflow(
                SuiteWorkflow.run,
                run,
                id=suite_workflow_id(run.scenario.name, run.run_id),
                task_queue=task_queue,
            )
            await asyncio.sleep(1.5)
            assert EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED not in await _events(handle)

        # A workflows worker alone runs the suite up to its first remote activity, which
        # it leaves for an activities worker.
        async with build_worker(client, task_queue, executor, serve="workflows"):
            states = await _scheduled_activities(handle, within=30)
            assert states, "the suite scheduled no activity"
            await asyncio.sleep(1.5)
            states = await _scheduled_activities(handle, within=1)
            assert states and set(states) == {"PENDING_ACTIVITY_STATE_SCHEDULED"}

            # Both together run it to its end, every cohort's target calls and recordings
            # included.
            async with build_worker(client, task_queue, executor, serve="activities"):
                summary = await suite_result(handle)

    assert summary.passed, summary
    assert summary.cases_passed == summary.cases > 0


def test_a_worker_that_serves_something_else_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--serve", "queries"])
    assert refused.value.code == 2
    assert "--serve: invalid choice: 'queries'" in capsys.readouterr().err


async def test_a_stopped_worker_drains_and_exits_0(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    """`python worker.py` as deploy/ runs it, stopped by SIGTERM as a platform stops it: it
    says it drains, removes its ready file and exits 0. (Its interpreter's teardown used to
    abort about one stop in ten on a dev server, SIGABRT with "Fatal Python error:
    PyGILState_Release", which a platform reads as a crash; it now ends as `memlife` does,
    cli/__init__.py: end_process. That race is too rare to catch in one stop here.)"""
    ready, log = tmp_path / "ready", tmp_path / "worker.log"
    address = skip_env.client.service_client.config.target_host
    worker = start_worker(address, db_url, log, ["--ready-file", str(ready)], forked=False)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(worker.wait, 60)
    finally:
        embedded.stop_process(worker, grace=5)
    output = log.read_text()
    assert code == 0, output
    assert "worker stopping: draining in-flight activities" in output
    assert "Fatal Python error" not in output and not ready.exists()
