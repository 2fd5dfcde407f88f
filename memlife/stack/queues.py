"""Whether any worker serves a task queue, asked of the Temporal server before memlife
starts work that workers it did not start must do (`memlife run --no-worker`,
`--target-queue`, `memlife schedule create`). A task that no worker polls for is not an
error to Temporal: the run would sit at its first step, unseen, until someone starts one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

TaskKind = Literal["workflow", "activity"]
_TASK_TYPES: dict[TaskKind, TaskQueueType.ValueType] = {
    "workflow": TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    "activity": TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
}
# How often the server is asked again while waiting for a worker to poll.
_ASK_EVERY = 0.5
# The server lists a worker for five minutes after its last poll, and a live worker polls
# again at least every minute (a long poll's longest wait): one not seen for longer than
# this has stopped. A worker stopped less than this ago still counts.
POLLED_WITHIN = timedelta(minutes=2)


@dataclass(frozen=True)
class Need:
    """Tasks of `kind` on `queue` that some worker must poll for."""

    queue: str
    kind: TaskKind


async def pollers(client: Client, need: Need) -> list[str] | None:
    """The identities of the workers the server has seen poll for the tasks `need` names
    within POLLED_WITHIN; None where the server cannot say: the time-skipping test server
    does not implement the request, and a namespace may not allow it."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=need.queue),
        task_queue_type=_TASK_TYPES[need.kind],
    )
    try:
        answer = await client.workflow_service.describe_task_queue(request)
    except RPCError:
        return None
    since = datetime.now(UTC) - POLLED_WITHIN
    return [
        poller.identity
        for poller in answer.pollers
        if not poller.HasField("last_access_time")
        or poller.last_access_time.ToDatetime(tzinfo=UTC) >= since
    ]


async def unserved(
    client: Client, needs: Sequence[Need], *, within: float, say: Callable[[str], None]
) -> list[Need]:
    """Those of `needs` that no worker has polled for within `within` seconds, asked again
    every half second: a worker started just before this command may still be importing.
    Says once that it waits, and what for. A need the server cannot answer for counts as
    served: memlife cannot tell, and refusing would stop every run on such a server."""
    deadline = time.monotonic() + within
    said = False
    while True:
        waiting = [need for need in needs if await pollers(client, need) == []]
        if not waiting or time.monotonic() >= deadline:
            return waiting
        if not said:
            said = True
            queues = ", ".join(f"{need.kind} tasks on task queue {need.queue}" for need in waiting)
            say(f"waiting up to {within:g} s for a worker to poll for {queues}")
        await asyncio.sleep(min(_ASK_EVERY, max(0.0, deadline - time.monotonic())))
