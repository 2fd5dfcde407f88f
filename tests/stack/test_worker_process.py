"""memlife/stack/worker_process.py: a `memlife worker` child is waited for until it polls,
started again when it dies, stopped by its PID when the block ends, and a child that
cannot start, or keeps dying, ends the block with one clear error."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.stack.processes import LOOPBACK, free_port
from memlife.stack.worker_process import WorkerProcessError, worker_process


def _ready_pid(path: Path) -> int:
    return int(path.read_text(encoding="utf-8").splitlines()[0].split()[1])


async def _until(condition: object, within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.1)


async def test_a_worker_that_dies_is_started_again_and_stopped_with_the_block(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    said: list[str] = []
    address = skip_env.client.service_client.config.target_host
    async with worker_process(
        "wp-restart", tmp_path, db_url=db_url, address=address, say=said.append
    ) as child:
        first = child.process
        assert first is not None and first.poll() is None
        # Polling: it wrote the ready file, which names it.
        assert _ready_pid(child.ready_path) == first.pid
        assert "task_queue wp-restart" in child.ready_path.read_text(encoding="utf-8")
        os.kill(first.pid, signal.SIGKILL)
        await _until(lambda: child.process is not first and child.ready_path.exists(), 60)
        second = child.process
        assert second is not None and second.poll() is None
        assert _ready_pid(child.ready_path) == second.pid != first.pid
    assert said == [
        f"worker for task queue wp-restart (pid {first.pid}) exited with code -9; "
        f"starting it again (its log: {child.log_path})"
    ]
    assert second.poll() is not None  # stopped with the block, by its PID
    assert not child.ready_path.exists()
    assert "worker stopping" in child.log_path.read_text(encoding="utf-8")


async def test_a_worker_that_keeps_dying_ends_the_block_with_an_error(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    address = skip_env.client.service_client.config.target_host
    reached_the_end = False
    with pytest.raises(WorkerProcessError) as failed:
        async with worker_process(
            "wp-dying",
            tmp_path,
            db_url=db_url,
            address=address,
            say=lambda _: None,
            starts_at_most=1,
        ) as child:
            assert child.pid is not None
            os.kill(child.pid, signal.SIGKILL)
            await asyncio.sleep(60)  # what the run would be waiting for
            reached_the_end = True
    assert not reached_the_end
    assert str(failed.value) == (
        f"worker for task queue wp-dying: exited (code -9) after 1 start(s); see {child.log_path}"
    )
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_worker_that_cannot_start_is_one_clear_error(tmp_path: Path, db_url: str) -> None:
    nobody = f"{LOOPBACK}:{free_port()}"  # no Temporal server listens there
    with pytest.raises(WorkerProcessError) as failed:
        async with worker_process(
            "wp-unreachable", tmp_path, db_url=db_url, address=nobody, say=lambda _: None
        ):
            raise AssertionError("the block ran without a worker")
    log = next((tmp_path / "logs").glob("worker-wp-unreachable-*.log"))
    assert str(failed.value) == (
        f"worker for task queue wp-unreachable: exited at start (code 2); see {log}"
    )
    assert "cannot reach it" in log.read_text(encoding="utf-8")
