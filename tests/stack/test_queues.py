"""Whether a task queue is served, as the Temporal server tells (memlife/stack/queues.py):
against the real dev server, and the time-skipping server that cannot say."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memlife.stack.queues import Need, pollers, unserved
from memlife.stack.worker import build_worker


async def test_a_queue_no_worker_polls_has_no_pollers_and_one_that_does_has(
    dev_client: Client, dev_worker: str
) -> None:
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    assert await pollers(dev_client, Need(nobody, "activity")) == []
    # A worker just started polls a moment later.
    served = [Need(dev_worker, "workflow"), Need(dev_worker, "activity")]
    assert await unserved(dev_client, served, within=30, say=print) == []
    for need in served:
        identities = await pollers(dev_client, need)
        assert identities and all(identities)


async def test_waiting_ends_when_a_worker_starts_polling(
    dev_client: Client,
    db_url: str,
) -> None:
    queue = f"late-{uuid.uuid4().hex[:8]}"
    said: list[str] = []

    async def late_worker(started: asyncio.Event) -> None:
        await asyncio.sleep(1)
        with ThreadPoolExecutor(max_workers=4) as executor:
            async with build_worker(dev_client, queue, executor):
                started.set()
                await asyncio.sleep(60)

    started = asyncio.Event()
    worker = asyncio.create_task(late_worker(started))
    try:
        missing = await unserved(dev_client, [Need(queue, "activity")], within=60, say=said.append)
        assert missing == []
        assert started.is_set()
        assert said == [
            f"waiting up to 60 s for a worker to poll for activity tasks on task queue {queue}"
        ]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_queue_still_unserved_when_the_wait_ends_is_named(dev_client: Client) -> None:
    nobody = Need(f"nobody-{uuid.uuid4().hex[:8]}", "workflow")
    said: list[str] = []
    assert await unserved(dev_client, [nobody], within=1, say=said.append) == [nobody]
    assert len(said) == 1


async def test_a_server_that_cannot_say_counts_as_served(
    skip_env: WorkflowEnvironment,
) -> None:
    need = Need(f"nobody-{uuid.uuid4().hex[:8]}", "activity")
    assert await pollers(skip_env.client, need) is None
    assert await unserved(skip_env.client, [need], within=5, say=print) == []


async def test_a_worker_that_stopped_polling_long_enough_ago_no_longer_counts(
    dev_client: Client, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server lists a stopped worker for minutes; memlife counts one seen lately."""
    import memlife.stack.queues as queues

    need = Need(f"stopped-{uuid.uuid4().hex[:8]}", "activity")
    with ThreadPoolExecutor(max_workers=4) as executor:
        async with build_worker(dev_client, need.queue, executor):
            assert await unserved(dev_client, [need], within=30, say=print) == []
    await asyncio.sleep(1.5)
    assert await pollers(dev_client, need) != []  # within POLLED_WITHIN: still counted
    monkeypatch.setattr(queues, "POLLED_WITHIN", timedelta(seconds=1))
    assert await pollers(dev_client, need) == []
