"""`memlife dev` and the target-request worker: started where the machine has more than one
CPU (or as --target-worker/--no-target-worker say), polling the stack's queue with
`-targets`, shown, recorded in dev.json and stopped by PID with the stack; and the runs
that use the stack send their target requests there unless the command says otherwise.
The end-to-end run through it is in tests/e2e/test_operations.py."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memlife.api.engine import stack_target_queue
from memlife.api.plan import RunPlan
from memlife.cli import build_parser
from memlife.cli import dev as dev_cli
from memlife.stack import devstack, embedded, worker_process
from memlife.stack.connection import STACK_FILE
from memlife.stack.devstack import StackInfo, target_requests
from memlife.stack.queues import Need, pollers


@pytest.mark.parametrize(("cpus", "helps"), [(1, False), (2, True), (64, True)])
def test_the_target_worker_helps_where_more_than_one_cpu_is_available(
    monkeypatch: pytest.MonkeyPatch, cpus: int, helps: bool
) -> None:
    assert worker_process.target_worker_helps(cpus) is helps
    # Asked of this process's affinity (taskset, cpusets), not the machine's CPU count.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    assert worker_process.available_cpus() == cpus
    assert worker_process.target_worker_helps() is helps


def test_without_affinity_the_machines_cpus_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert worker_process.available_cpus() == 1
    assert not worker_process.target_worker_helps()


@pytest.mark.parametrize(
    ("flags", "cpus", "started"),
    [
        ([], 1, False),
        ([], 2, True),
        (["--target-worker"], 1, True),
        (["--no-target-worker"], 2, False),
    ],
)
def test_memlife_dev_decides_from_the_machine_unless_told(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], cpus: int, started: bool
) -> None:
    asked: dict[str, Any] = {}

    async def serve(state_dir: Path, **kwargs: Any) -> None:
        asked.update(kwargs)

    monkeypatch.setattr(devstack, "serve", serve)
    monkeypatch.setattr(worker_process, "available_cpus", lambda: cpus)
    args = build_parser().parse_args(["dev", *flags])
    assert dev_cli.cmd_dev(args) == 0
    assert asked["target_worker"] is started


def _info(target_task_queue: str | None, recorder: str) -> StackInfo:
    return StackInfo(
        temporal_address="127.0.0.1:7233",
        web_ui=None,
        namespace="default",
        task_queue="memlife",
        reference_target="http://127.0.0.1:8080",
        reference_faults=[],
        recorder=recorder,
        pids={"temporal": 1, "worker": 2, "target_worker": 3},
        target_task_queue=target_task_queue,
    )


def _plan(**options: Any) -> RunPlan:
    return RunPlan(
        scenario=None,
        scenario_file="(none)",
        scenario_sha256="",
        configurations=[],
        clock=None,
        repeat=1,
        worker_wait=timedelta(0),
        **options,
    )


def test_runs_on_the_stack_use_its_target_worker_unless_the_command_says_otherwise(
    db_url: str,
) -> None:
    stack = _info("memlife-targets", db_url)
    assert stack_target_queue(_plan(), stack) == "memlife-targets"
    # The command names another place, or none: its own worker, its own queue, the run's.
    assert stack_target_queue(_plan(target_worker=True), stack) is None
    assert stack_target_queue(_plan(target_queue="elsewhere"), stack) is None
    assert stack_target_queue(_plan(stack_target_worker=False), stack) is None
    # A stack without one, or one recording elsewhere (the reads its worker stages would
    # not be where the run's recording looks): the run's own queue, as before.
    assert stack_target_queue(_plan(), _info(None, db_url)) is None
    assert stack_target_queue(_plan(), _info("memlife-targets", "sqlite:///other.db")) is None


@pytest.mark.parametrize(
    ("argv", "target_worker", "stack_target_worker"),
    [([], False, True), (["--target-worker"], True, True), (["--no-target-worker"], False, False)],
)
def test_run_flags_for_the_stacks_target_worker(
    tmp_path: Path, argv: list[str], target_worker: bool, stack_target_worker: bool
) -> None:
    from memlife.api.plan import read_plan

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "seed-six-case.yaml"
    args = build_parser().parse_args(["run", str(scenario), "--clock", "compress=60", *argv])
    plan = read_plan(args)
    assert (plan.target_worker, plan.stack_target_worker) == (target_worker, stack_target_worker)


@pytest.mark.parametrize(
    ("argv", "cpus", "started"),
    [
        (["--pairs", "20"], 2, True),
        (["--pairs", "19"], 2, False),  # too small to win back the second start
        (["--pairs", "20"], 1, False),  # no CPU to spare
        (["--pairs", "20", "--no-target-worker"], 2, False),
        (["--pairs", "20", "--target-queue", "q"], 2, False),  # the user's own workers
        (["--pairs", "20", "--target-worker"], 1, False),  # started as asked, not chosen
    ],
)
def test_a_large_run_chooses_a_target_worker_where_a_cpu_is_spare(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], cpus: int, started: bool
) -> None:
    from memlife.api.engine import _target_worker_pays
    from memlife.api.plan import read_plan

    monkeypatch.setattr(worker_process, "available_cpus", lambda: cpus)
    nightly = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly.yaml"
    plan = read_plan(build_parser().parse_args(["run", str(nightly), *argv]))
    assert _target_worker_pays(plan) is started
    assert worker_process.target_worker_pays(worker_process.TARGET_WORKER_PAIRS, 2)
    assert not worker_process.target_worker_pays(worker_process.TARGET_WORKER_PAIRS - 1, 2)


def test_where_target_requests_go_is_said_in_words() -> None:
    assert target_requests(_info("memlife-targets", "")) == (
        "to task queue memlife-targets (its target worker, pid 3)"
    )
    assert target_requests(_info(None, "")) == "with the rest of their work (task queue memlife)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("target_worker", [True, False], ids=["target-worker", "none"])
async def test_the_dev_stack_with_and_without_its_target_worker(
    tmp_path: Path, db_url: str, capsys: pytest.CaptureFixture[str], target_worker: bool
) -> None:
    from temporalio.client import Client

    ready, stop = asyncio.Event(), asyncio.Event()
    serving = asyncio.create_task(
        devstack.serve(
            tmp_path,
            port=embedded.free_port(),
            ui_port=0,  # headless: no Web UI, no codec endpoint
            target_port=embedded.free_port(),
            faults=[],
            task_queue="dev-q",
            target_worker=target_worker,
            ready=ready,
            stop=stop,
        )
    )
    try:
        await asyncio.wait_for(ready.wait(), 120)
        info = json.loads((tmp_path / STACK_FILE).read_text())
        client = await Client.connect(info["temporal_address"])
        served = await pollers(client, Need("dev-q-targets", "activity"))
        shown = capsys.readouterr().out
        if target_worker:
            assert info["target_task_queue"] == "dev-q-targets"
            pid = info["pids"]["target_worker"]
            assert _alive(pid)
            assert served  # it polls before dev.json is written
            assert f"target worker   task queue dev-q-targets (pid {pid})" in shown
        else:
            assert info["target_task_queue"] is None
            assert "target_worker" not in info["pids"]
            assert served == []
            assert "target worker   none: runs that use this stack send their target " in shown
    finally:
        stop.set()
        await asyncio.wait_for(serving, 120)
    # Stopped by PID with the stack; the stack file gone.
    for name, pid in info["pids"].items():
        assert name == "worker" or not _alive(pid), name
    assert not (tmp_path / STACK_FILE).exists()
