"""How a lifecycle reaches the world: every target call and every recording goes through a
`Calls`, every wait through its `sleep`. A pair workflow makes each call an activity of its
own (DirectCalls, below); a cohort workflow batches its pairs' calls (batching.py). The
lifecycle code (lifecycle.py, steps.py) is the same either way.

Activities are called by name (memlife/contracts.py): workflow code imports no activity
code, and through it no network or database library.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError


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

    async def activity(self, name: str, arg: Any, result_type: Any, **options: Any) -> Any:
        """A target call (an activity, or an item of a batch)."""

    async def local_activity(self, name: str, args: list[Any], result_type: Any,
                             **options: Any) -> Any:
        """A recording (a local activity, or an item of a batch)."""

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        """A durable wait of `real` time: None when it ran its course, else what was left
        of it when an operator ended it (skip_wait)."""


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

    async def activity(self, name: str, arg: Any, result_type: Any, **options: Any) -> Any:
        return await workflow.execute_activity(name, arg, result_type=result_type,
                                               task_queue=self.target_task_queue, **options)

    async def local_activity(self, name: str, args: list[Any], result_type: Any,
                             **options: Any) -> Any:
        return await workflow.execute_local_activity(name, args=args, result_type=result_type,
                                                     **options)

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        wake_at = workflow.now() + real
        self.skip_requested = False
        try:
            await workflow.wait_condition(
                lambda: self.skip_requested or self._cancelled(),
                timeout=real, timeout_summary=summary)
            if self.skip_requested:
                return max(timedelta(0), wake_at - workflow.now())
            return None  # cancelled: the lifecycle stops at this step's end
        except TimeoutError:
            return None  # the wait ran its course
        finally:
            self.skip_requested = False
