"""What the target activities share: requests retried in place or sent once, heartbeats in
the background, target errors as Temporal application errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife.log import get_logger
from memlife.rules.target import Operation, Target
from memlife.targets import http
from memlife.targets.http import TargetError

log = get_logger("memlife.activities.target")
T = TypeVar("T")


HEARTBEAT_EVERY = 2.0  # seconds; the workflows' heartbeat timeout is a few times this


@contextlib.asynccontextmanager
async def heartbeating(details: Callable[[], Any]) -> AsyncIterator[None]:
    """Heartbeat in the background while the block runs, so that a worker that dies is
    noticed within the heartbeat timeout even while one request is slow."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY)
            activity.heartbeat(details())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def application_error(error: TargetError) -> ApplicationError:
    return ApplicationError(
        str(error), type=type(error).__name__, non_retryable=not error.retryable
    )


async def call_with_retries(
    target: Target, operation: Operation, variables: dict[str, Any], scenario_now: str, run: str
) -> tuple[http.Response, int]:
    """One request, retried in place with exponential backoff while the error is
    retryable, up to the target's max_attempts. Returns (response, attempts)."""
    delay = 0.2
    for attempt in range(1, target.max_attempts + 1):
        try:
            return await http.call(
                target, operation, variables, scenario_now=scenario_now, run=run
            ), attempt
        except TargetError as error:
            if not error.retryable or attempt == target.max_attempts:
                raise
            log.info("target call retried", error=str(error), attempt=attempt)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


# How one request is sent: once (Temporal retries the activity) or retried in place (a
# batch, whose other items must not be sent again). The last two arguments are the scenario
# clock's moment and the run (http.call's X-Memlife-Now and X-Memlife-Run).
Send = Callable[[Target, Operation, dict[str, Any], str, str], Awaitable[http.Response]]


async def send_once(
    target: Target, operation: Operation, variables: dict[str, Any], scenario_now: str, run: str
) -> http.Response:
    return await http.call(target, operation, variables, scenario_now=scenario_now, run=run)


async def send_retrying(
    target: Target, operation: Operation, variables: dict[str, Any], scenario_now: str, run: str
) -> http.Response:
    return (await call_with_retries(target, operation, variables, scenario_now, run))[0]


def text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return json.dumps(value, ensure_ascii=False)


async def as_activity(work: Awaitable[T]) -> T:
    """A single-call activity: a target error becomes an ApplicationError, retryable or
    not, for Temporal's RetryPolicy (a batch keeps it as the item's error instead)."""
    try:
        return await work
    except TargetError as error:
        raise application_error(error) from None
