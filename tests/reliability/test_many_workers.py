"""Three worker processes on one task queue, recording to one real PostgreSQL, share a
multi-day run: every recorded row is exactly those of the same seeded run done by a single
worker on SQLite — none lost, none duplicated — and the work really was shared."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.rules.clock import Clock
from memlife.stack import embedded
from tests.reliability.helpers import assert_same_rows, row_keys, small_nightly, start_worker
from tests.workflows.helpers import run_input, run_suite

WORKERS = 3


async def test_three_workers_on_postgresql_share_a_run_without_losing_a_row(
    tmp_path: Path,
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    db_url: str,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(mode="compress", factor=20_000)  # three scenario days in about 13 s
    scenario = small_nightly("many-workers", pairs=4)
    with embedded.reference_target(tmp_path / "target-single") as single:
        expected_run = run_input(scenario, reference_target(single.base_url), clock)
        monkeypatch.setenv("MEMLIFE_DB_URL", db_url)  # the single worker records to SQLite
        assert (await run_suite(skip_env.client, skip_worker, expected_run)).passed
        expected = row_keys(expected_run.run_id, db_url)
        monkeypatch.setenv("MEMLIFE_DB_URL", postgres_url)

    server = embedded.start_dev_server(tmp_path / "temporal", ui_port=None)
    target = embedded.start_reference_target(tmp_path / "target")
    workers = []
    try:
        client = await embedded.wait_for_client(server)
        run = run_input(scenario, reference_target(target.base_url), clock)
        logs = [tmp_path / f"worker-{n}.log" for n in range(WORKERS)]
        workers = [start_worker(server.address, postgres_url, log) for log in logs]
        # Every worker polling before the run starts: a workflow stays with the worker that
        # takes it first, so one worker up early would take the whole run alone.
        for log in logs:
            await _running(log)
        summary = await asyncio.wait_for(run_suite(client, "memlife", run), timeout=240)
    finally:
        # Each is stopped even when stopping another raised (a child not reaped in time).
        with contextlib.ExitStack() as stops:
            stops.callback(server.stop)
            stops.callback(target.stop)
            for worker in workers:
                stops.callback(embedded.stop_process, worker, grace=10)

    assert summary.passed, summary
    assert_same_rows(row_keys(run.run_id, postgres_url), expected)
    # Shared for real: steps were recorded by more than one of the processes.
    recorded_by = [
        sum(
            1
            for line in log.read_text().splitlines()
            if '"step recorded"' in line and json.loads(line).get("run") == run.run_id
        )
        for log in logs
    ]
    assert sum(1 for count in recorded_by if count) >= 2, recorded_by


async def _running(log: Path, timeout: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while '"worker running"' not in (log.read_text() if log.exists() else ""):
        assert loop.time() < deadline, f"no worker running after {timeout:g}s: {log}"
        await asyncio.sleep(0.1)
