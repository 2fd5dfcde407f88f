"""`memlife run` whose work standalone workers do (`--target-queue`, `--no-worker`), on a
Temporal server of the test's own, as a cluster's users run it: served, it runs; not
served, it is refused before any run starts (memlife/stack/queues.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

import pytest
from temporalio.client import Client

from memlife.stack.worker_process import worker_process
from tests.e2e.test_memlife_run import MEMLIFE, SEED, memlife


async def _workflows(address: str) -> list[str]:
    client = await Client.connect(address)
    return [execution.id async for execution in client.list_workflows()]


def test_target_requests_through_a_queue_a_standalone_worker_serves(
    tmp_path: Path, cluster: str
) -> None:
    db_url = f"sqlite:///{tmp_path / 'recorder.db'}"

    async def run() -> tuple[int, str, str, str]:
        async with worker_process(
            "mine", tmp_path / "state", db_url=db_url, address=cluster
        ) as child:
            result = await asyncio.to_thread(
                memlife,
                "run",
                str(SEED),
                "--target-queue",
                "mine",
                "--out",
                "r.json",
                "--enforce",
                cwd=tmp_path,
                env={"TEMPORAL_ADDRESS": cluster, "MEMLIFE_DB_URL": db_url},
            )
            return (result.returncode, result.stdout, result.stderr, child.log_path.read_text())

    code, stdout, stderr, log = asyncio.run(run())
    assert code == 0, stdout + stderr
    assert "PASS: 6/6 cases passed" in stdout
    assert "waiting up to" not in stderr  # it polled before the run began
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["passed"] is True
    # The standalone worker served the queue (the log says what it polls).
    first = json.loads(log.splitlines()[0])
    assert (first["event"], first["task_queue"]) == ("worker running", "mine")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--target-queue", "nobody"],
            "task queue nobody: no worker polls it for activity tasks (waited 2 s); start "
            "`{memlife} worker --serve activities --task-queue nobody` with this command's "
            "MEMLIFE_DB_URL, or use --target-worker instead of --target-queue; no run was started",
        ),
        (
            ["--no-worker", "--task-queue", "unserved"],
            "task queue unserved: no worker polls it for workflow tasks (waited 2 s); start "
            "`{memlife} worker --task-queue unserved` with this command's MEMLIFE_DB_URL, or run "
            "without --no-worker; no run was started",
        ),
    ],
)
def test_work_no_worker_serves_is_refused_before_a_run_starts(
    tmp_path: Path, cluster: str, args: list[str], expected: str
) -> None:
    result = memlife(
        "run",
        str(SEED),
        *args,
        "--worker-wait",
        "2s",
        cwd=tmp_path,
        env={"TEMPORAL_ADDRESS": cluster},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("waiting up to 2 s for a worker to poll for ")
    # Said the way this command was started: here `python -m memlife`.
    remedy = expected.format(memlife=" ".join(MEMLIFE))
    assert lines[-1] == f"Temporal at {cluster}: {remedy}"
    assert "Traceback" not in result.stderr and len(lines) == 2
    assert asyncio.run(_workflows(cluster)) == []  # nothing started
    # and nothing left running: the reference target, started while the command looked
    # for a worker (memlife/api/engine.py, FreshTarget), stopped with it.
    assert _processes_working_in(tmp_path) == []


def _processes_working_in(directory: Path) -> list[int]:
    """The PIDs of the processes whose working directory is `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # ended meanwhile, or not ours to read
                if Path(os.readlink(entry / "cwd")) == directory.resolve():
                    found.append(int(entry.name))
    return found
