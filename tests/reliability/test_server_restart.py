"""The Temporal dev server stopped and started again (same persistence file, same port) in
the middle of a multi-day lifecycle: the worker reconnects, the run resumes, and the rows
are exactly those of the same run without restarts."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import RunSummary, pair_workflow_id, suite_workflow_id
from memlife.rules.clock import Clock
from memlife.stack import embedded
from memlife.stack.codec import DATA_CONVERTER
from memlife.workflows.suite import SuiteWorkflow
from tests.reliability.helpers import (
    PROGRESS_POLL,
    assert_same_rows,
    progress_of,
    row_keys,
    small_nightly,
    start_worker,
)
from tests.workflows.helpers import run_input, run_suite

RESTART_AT_STEPS = (3, 11, 19)  # after the first writes, around the update, after deletion


async def test_server_restarts_lose_nothing(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    clock = Clock(mode="compress", factor=20_000)
    with embedded.reference_target(tmp_path / "target-calm") as calm:
        expected_run = run_input(
            small_nightly("restart-seed"), reference_target(calm.base_url), clock
        )
        assert (await run_suite(skip_env.client, skip_worker, expected_run)).passed
        expected = row_keys(expected_run.run_id, db_url)

    state = tmp_path / "temporal"
    server = embedded.start_dev_server(state, ui_port=None)
    port = int(server.address.rsplit(":", 1)[1])
    target_process = embedded.start_reference_target(tmp_path / "target")
    run_db = f"sqlite:///{tmp_path / 'run.db'}"
    worker = None
    restarts: list[object] = []
    try:
        client = await embedded.wait_for_client(server)
        run = run_input(
            small_nightly("restart-seed"), reference_target(target_process.base_url), clock
        )
        worker = start_worker(server.address, run_db, tmp_path / "worker.log")
        handle = await client.start_workflow(
            SuiteWorkflow.run,
            run,
            id=suite_workflow_id(run.scenario.name, run.run_id),
            task_queue="memlife",
        )
        pair0 = pair_workflow_id(run.scenario.name, run.run_id, 0)
        pending = list(RESTART_AT_STEPS)
        while pending:
            progress = await progress_of(client, pair0)
            step = progress.get("step") if progress else None
            if isinstance(step, int) and step >= pending[0]:
                server.stop()
                restarts.append(step)
                await asyncio.sleep(1.0)  # the worker sees the server gone
                server = embedded.start_dev_server(state, port=port, ui_port=None)
                assert server.address.endswith(f":{port}")
                client = await embedded.wait_for_client(server)
                pending.pop(0)
            await asyncio.sleep(PROGRESS_POLL)
        client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
        summary = await client.get_workflow_handle(handle.id, result_type=RunSummary).result(
            rpc_timeout=timedelta(minutes=5)
        )
        assert worker.poll() is None, "the worker gave up while the server was away"
    finally:
        # Each is stopped even when stopping another raised (a child not reaped in time).
        with contextlib.ExitStack() as stops:
            stops.callback(server.stop)
            stops.callback(target_process.stop)
            if worker is not None:
                stops.callback(embedded.stop_process, worker, grace=10)

    assert len(restarts) == len(RESTART_AT_STEPS)
    assert summary.passed, summary
    assert_same_rows(row_keys(run.run_id, run_db), expected)
