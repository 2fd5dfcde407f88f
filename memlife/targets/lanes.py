"""A fixed number of requests in flight, handed on without a gap: `senders` tasks, each
taking the next queued job the moment it has finished its last one.

A semaphore bounds concurrency as well, but its slot, once released, waits for the next
holder to be scheduled on the event loop, behind everything else ready to run there: on a
busy worker that was 5 to 7% of a target's slot time (docs/scale.md, "Where a target slot's
time goes"). Here the sender that finished starts the next job in the same step.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")

# When the work a job belongs to began, on the event loop's clock: queued jobs are sent
# oldest work first, and in the order they came within one piece of work. A cohort's
# batch of a step sets it once for all its requests (activities/batch.py), so the batch
# that began first ends first, and its cohort goes through Temporal to its next step
# while the other cohorts' requests keep the target busy. First come first served, the
# requests of every cohort's batch were interleaved and the batches ended together
# (docs/scale.md, "Oldest batch first"). A job submitted outside any such work counts
# from when it was submitted.
WORK_BEGAN: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "memlife_work_began", default=None
)


class LaneClosed(Exception):
    """The lane closed before the job was done."""


class Lane(Generic[J, R]):
    """`senders` jobs at a time through `send`, oldest work first (WORK_BEGAN). A job
    whose caller stopped waiting before it started is dropped; one already started runs
    to its end and its result is dropped."""

    def __init__(self, senders: int, send: Callable[[J], Awaitable[R]]) -> None:
        self._send = send
        self._queue: asyncio.PriorityQueue[tuple[float, int, J, asyncio.Future[R]]] = (
            asyncio.PriorityQueue()
        )
        self._order = itertools.count()
        self._loop = asyncio.get_running_loop()
        self._stopped = False  # a sender has ended (closed, or failed past its catch)
        # A context of their own: the senders outlive the caller that started them.
        self._senders = [
            self._loop.create_task(self._send_each(), context=contextvars.Context())
            for _ in range(senders)
        ]
        for sender in self._senders:
            sender.add_done_callback(self._sender_ended)

    def _sender_ended(self, _sender: asyncio.Task[None]) -> None:
        self._stopped = True

    @property
    def open(self) -> bool:
        """Whether jobs submitted on the running loop will be sent: its senders run on it
        (a loop's id can be another's after it is gone) and none has stopped."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return running is self._loop and not self._stopped

    async def submit(self, job: J) -> R:
        """The job's result, or the exception its `send` raised."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[R] = loop.create_future()
        began = WORK_BEGAN.get()
        self._queue.put_nowait(
            (loop.time() if began is None else began, next(self._order), job, answer)
        )
        return await answer

    async def _send_each(self) -> None:
        while True:
            _, _, job, answer = await self._queue.get()
            if answer.done():  # its caller stopped waiting
                continue
            try:
                result = await self._send(job)
            except asyncio.CancelledError:
                _fail(answer, LaneClosed("closed while the job was in flight"))
                raise
            except Exception as error:  # the caller's to raise
                _fail(answer, error)
            else:
                if not answer.done():
                    answer.set_result(result)

    async def close(self) -> None:
        """Stop the senders; jobs in flight or queued fail with LaneClosed."""
        self._stopped = True
        for sender in self._senders:
            sender.cancel()
        await asyncio.gather(*self._senders, return_exceptions=True)
        while not self._queue.empty():
            _fail(self._queue.get_nowait()[3], LaneClosed("closed before the job started"))


def _fail(answer: asyncio.Future[R], error: BaseException) -> None:
    if not answer.done():
        answer.set_exception(error)
