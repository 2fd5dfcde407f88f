"""memlife/targets/lanes.py: a fixed number of jobs in flight, handed on without a gap."""

from __future__ import annotations

import asyncio

import pytest

from memlife.targets.lanes import WORK_BEGAN, Lane, LaneClosed


async def test_at_most_senders_jobs_run_at_once_first_come_first_served() -> None:
    started: list[int] = []
    running, most = 0, 0

    async def send(job: int) -> int:
        nonlocal running, most
        started.append(job)
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.001)
        running -= 1
        return job * 10

    lane: Lane[int, int] = Lane(3, send)
    try:
        results = await asyncio.gather(*(lane.submit(job) for job in range(20)))
    finally:
        await lane.close()
    assert results == [job * 10 for job in range(20)]
    assert most == 3
    assert started == list(range(20))


async def test_queued_jobs_go_oldest_work_first_and_in_order_within_one_piece() -> None:
    """Two batches' requests queued together: the batch that began first is sent whole
    first, so it ends first (its cohort moves on while the other's requests go out)."""
    started: list[str] = []
    gate = asyncio.Event()

    async def send(job: str) -> str:
        started.append(job)
        if job == "blocker":
            await gate.wait()
        return job

    async def batch(name: str, began: float, requests: int) -> list[str]:
        WORK_BEGAN.set(began)  # in this task's context, as a batch activity sets it
        return await asyncio.gather(*(lane.submit(f"{name}{i}") for i in range(requests)))

    lane: Lane[str, str] = Lane(1, send)
    try:
        blocker = asyncio.create_task(lane.submit("blocker"))  # holds the one sender
        await asyncio.sleep(0)
        now = asyncio.get_running_loop().time()
        # The younger batch's requests are queued first, and interleaved with the older
        # one's; a request outside any batch counts from when it was submitted.
        young = asyncio.create_task(batch("young", now - 1, 3))
        await asyncio.sleep(0)
        loose = asyncio.create_task(lane.submit("loose"))
        old = asyncio.create_task(batch("old", now - 2, 3))
        await asyncio.sleep(0)
        gate.set()
        assert await old == ["old0", "old1", "old2"]
        await asyncio.gather(blocker, young, loose)
    finally:
        await lane.close()
    assert started == ["blocker", "old0", "old1", "old2", "young0", "young1", "young2", "loose"]


async def test_the_next_job_starts_before_the_finished_jobs_caller_resumes() -> None:
    """What a semaphore could not do: its freed slot waited for the next holder's turn on
    the event loop, behind the finished job's caller."""
    events: list[str] = []
    gate = asyncio.Event()

    async def send(job: str) -> str:
        events.append(f"{job} started")
        if job == "a":
            await gate.wait()
        return job

    lane: Lane[str, str] = Lane(1, send)

    async def caller_a() -> None:
        await lane.submit("a")
        events.append("a's caller resumed")

    try:
        first = asyncio.create_task(caller_a())
        second = asyncio.create_task(lane.submit("b"))
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, second)
    finally:
        await lane.close()
    assert events == ["a started", "b started", "a's caller resumed"]


async def test_a_job_whose_caller_stopped_waiting_is_not_sent() -> None:
    sent: list[str] = []
    gate = asyncio.Event()

    async def send(job: str) -> str:
        sent.append(job)
        await gate.wait()
        return job

    lane: Lane[str, str] = Lane(1, send)
    try:
        busy = asyncio.create_task(lane.submit("busy"))
        abandoned = asyncio.create_task(lane.submit("abandoned"))
        await asyncio.sleep(0)
        abandoned.cancel()
        gate.set()
        assert await busy == "busy"
        assert await lane.submit("next") == "next"
    finally:
        await lane.close()
    assert sent == ["busy", "next"]


async def test_an_error_reaches_its_caller_and_the_lane_goes_on() -> None:
    async def send(job: int) -> int:
        if job == 1:
            raise ValueError("job 1 is bad")
        return job

    lane: Lane[int, int] = Lane(1, send)
    try:
        with pytest.raises(ValueError, match="job 1 is bad"):
            await lane.submit(1)
        assert await lane.submit(2) == 2
    finally:
        await lane.close()


async def test_closing_fails_the_job_in_flight_and_those_queued() -> None:
    sending = asyncio.Event()

    async def send(job: str) -> str:
        sending.set()
        await asyncio.Event().wait()  # never answers
        return job

    lane: Lane[str, str] = Lane(1, send)
    in_flight = asyncio.create_task(lane.submit("in flight"))
    queued = asyncio.create_task(lane.submit("queued"))
    await sending.wait()
    await lane.close()
    with pytest.raises(LaneClosed, match="in flight"):
        await in_flight
    with pytest.raises(LaneClosed, match="before the job started"):
        await queued
    assert not lane.open
