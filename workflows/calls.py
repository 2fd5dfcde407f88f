"""How a lifecycle reaches the world: every target call and every recording goes through a
`Calls`, every wait through its `sleep`. A pair workflow makes each call an activity of its
own (DirectCalls, below); a cohort workflow batches its pairs' calls (batching.py). The
lifecycle code (lifecycle.py, steps.py) is the same either way.

Activities are called through their bindings in memlife/contracts.py (`Activity[In, Out]`):
workflow code imports no activity code, and through it no network or database library,
and a call's input and result are typed by the binding (`execute`, below).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from memlife.contracts import Activity

In = TypeVar("In")
Out = TypeVar("Out")


async def execute(activity: Activity[In, Out], arg: In, **options: Any) -> Out:
    """Run a bound activity: its name, its argument list and its result type from the
    binding (memlife/contracts.py). `options` are execute_activity's (timeouts, retry
    policy, summary, task queue)."""
    result: Out = await workflow.execute_activity(
        activity.name, args=activity.arguments(arg), result_type=activity.result_type, **options
    )
    return result


async def execute_local(activity: Activity[In, Out], arg: In, **options: Any) -> Out:
    """`execute`, as a local activity."""
    result: Out = await workflow.execute_local_activity(
        activity.name, args=activity.arguments(arg), result_type=activity.result_type, **options
    )
    return result


class BatchItemError(Exception):
    """One item of a batched call failed (the cohort workflow's counterpart of an
    ActivityError); the message is already "Type: message"."""


# What a failed call raises, alone (ActivityError) or batched (BatchItemError).
CALL_ERRORS = (ActivityError, BatchItemError)


def failure_text(error: ActivityError | BatchItemError) -> str:
    """The innermost application error's type and message (timeouts: the timeout)."""
    if isinstance(error, BatchItemError):
        return str(error)
    cause: Any = error
    while getattr(cause, "cause", None) is not None:
        cause = cause.cause
        if isinstance(cause, ApplicationError):
            return f"{cause.type}: {cause.message}"
    return str(cause) or type(cause).__name__


def iso(moment: datetime) -> str:
    """A scenario time as targets receive it (X-Memlife-Now): ISO-8601, UTC, `Z`."""
    return moment.isoformat().replace("+00:00", "Z")


class Calls(Protocol):
    """What a lifecycle needs from its workflow."""

    # Whether a recording whose outcome the lifecycle already knows may go on beside the
    # next step (lifecycle.py: _judged_in_workflow) rather than before it.
    records_beside: bool

    async def activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        """A target call (an activity, or an item of a batch)."""

    async def local_activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        """A recording (a local activity, or an item of a batch)."""

    async def direct(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        """An activity of its own, never batched, on the workflow's task queue (queueing
        replies for review)."""

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        """A durable wait of `real` time: None when it ran its course, else what was left
        of it when an operator ended it (skip_wait)."""

    def now(self) -> datetime:
        """The workflow's clock (workflow.now())."""

    def patched(self, patch_id: str) -> bool:
        """Whether this run takes the behaviour behind `patch_id` (workflow.patched)."""

    def log(self, level: int, message: str, *args: object) -> None:
        """A line in the worker's log (workflow.logger: once, not again on replay)."""


class DirectCalls:
    """One activity per call and a timer per wait that an operator may end early: the
    pair workflow's way (workflows/pair.py)."""

    # A pair records in local activities, which hold the workflow task open: the next
    # step's activity could not be scheduled before the recording ended anyway.
    records_beside = False

    def __init__(self, cancelled: Any) -> None:
        self._cancelled = cancelled  # () -> bool: the lifecycle was cancelled
        self.skip_requested = False
        self.target_task_queue: str | None = None  # PairInput.target_task_queue

    async def activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await execute(activity, arg, task_queue=self.target_task_queue, **options)

    async def local_activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await execute_local(activity, arg, **options)

    async def direct(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await execute(activity, arg, **options)

    def now(self) -> datetime:
        return workflow.now()

    def patched(self, patch_id: str) -> bool:
        return workflow.patched(patch_id)

    def log(self, level: int, message: str, *args: object) -> None:
        workflow.logger.log(level, message, *args)

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        wake_at = workflow.now() + real
        self.skip_requested = False
        try:
            await workflow.wait_condition(
                lambda: self.skip_requested or self._cancelled(),
                timeout=real,
                timeout_summary=summary,
            )
            if self.skip_requested:
                return max(timedelta(0), wake_at - workflow.now())
            return None  # cancelled: the lifecycle stops at this step's end
        except TimeoutError:
            return None  # the wait ran its course
        finally:
            self.skip_requested = False
