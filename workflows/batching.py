"""A cohort's calls, batched: whenever every pair of the cohort is blocked, the calls they
made leave as one activity per kind (all the cohort's conversations of a step in one
activity, all its store inspections in another) and one activity records every pair's
step in one transaction; pairs that wait together share one timer. This is the cohort
workflow's Calls (calls.py).

What the Batcher and the shared timers need of Temporal (run an activity, wait for a
condition, the clock, patches, the log) goes through a `WorkflowOps`; the default is the
workflow module itself, so a cohort issues exactly the commands it always did. Tests give
a fake of it and run the batching in plain asyncio (tests/workflows/test_cohort_decisions.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from pydantic import TypeAdapter

    import memlife.contracts as contracts
    from memlife.contracts import (
        Activity,
        BatchKind,
        BatchOutcome,
        CohortInput,
        StepOutcome,
        StepRecord,
        TargetBatch,
    )
    from memlife.rules.target import Target
    from memlife.workflows.calls import (
        BatchItemError,
        In,
        Out,
        execute,
        execute_local,
        failure_text,
    )
    from memlife.workflows.options import (
        HEARTBEAT_TIMEOUT,
        RECORD_RETRY,
        RECORD_TIMEOUT,
        RESUMABLE_RETRY,
        batch_timeout,
    )

_KINDS: tuple[tuple[Activity[Any, Any], BatchKind], ...] = (
    (contracts.REGISTER_TENANT, "register"),
    (contracts.CONVERSE, "converse"),
    (contracts.DELETE_TENANT, "delete"),
    (contracts.DELETION_STATUS, "deletion-status"),
    (contracts.FORGET_FACT, "forget"),
    (contracts.MAINTAIN_TARGET, "maintain"),
    (contracts.SPACE_OPERATION, "space"),
    (contracts.INSPECT_STORES, "inspect"),
)
# Which batch kind each single-call activity joins, and how its result is read back (as
# its binding says, memlife/contracts.py).
_TARGET_KINDS: dict[str, tuple[BatchKind, TypeAdapter[Any]]] = {
    activity.name: (kind, TypeAdapter(activity.result_type)) for activity, kind in _KINDS
}
_BATCHED = {*_TARGET_KINDS, contracts.RECORD_STEP.name, contracts.RECORD_TENANTS.name}


class WorkflowOps(Protocol):
    """What batching uses of the workflow it runs in."""

    async def execute(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        """An activity (calls.py: execute)."""

    async def execute_local(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        """A local activity (calls.py: execute_local)."""

    async def wait_condition(
        self,
        fn: Callable[[], bool],
        *,
        timeout: timedelta | None = None,
        timeout_summary: str | None = None,
    ) -> None:
        """workflow.wait_condition: `fn` is checked only when every other task of the
        workflow is blocked; TimeoutError when `timeout` passes first."""

    def now(self) -> datetime: ...

    def patched(self, patch_id: str) -> bool: ...

    def log(self, level: int, message: str, *args: object) -> None: ...


class TemporalOps:
    """The workflow module's own functions: what a cohort workflow runs with."""

    async def execute(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await execute(activity, arg, **options)

    async def execute_local(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await execute_local(activity, arg, **options)

    async def wait_condition(
        self,
        fn: Callable[[], bool],
        *,
        timeout: timedelta | None = None,
        timeout_summary: str | None = None,
    ) -> None:
        await workflow.wait_condition(fn, timeout=timeout, timeout_summary=timeout_summary)

    def now(self) -> datetime:
        return workflow.now()

    def patched(self, patch_id: str) -> bool:
        return workflow.patched(patch_id)

    def log(self, level: int, message: str, *args: object) -> None:
        workflow.logger.log(level, message, *args)


TEMPORAL = TemporalOps()


@dataclass
class _Call:
    activity: str
    payload: Any
    future: asyncio.Future[Any] = field(default_factory=asyncio.Future)


class SharedTimers:
    """Pairs that start the same wait in the same workflow task share one timer, so they
    wake in the same task and their next calls still leave as one batch (separate timers
    may fire in separate tasks, and the cohort would drift apart for good)."""

    def __init__(self, ops: WorkflowOps = TEMPORAL) -> None:
        self._ops = ops
        self._timers: dict[tuple[datetime, timedelta], asyncio.Task[timedelta | None]] = {}
        self._skips = 0
        self.cancelled = False

    def skip(self) -> None:
        self._skips += 1

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        """Sleep `real`; None when it ran its course, else what was left of it (skipped)."""
        key = (self._ops.now(), real)
        timer = self._timers.get(key)
        if timer is None:
            timer = self._timers[key] = asyncio.create_task(self._timer(real, summary))
            timer.add_done_callback(lambda _: self._timers.pop(key, None))
        return await asyncio.shield(timer)

    async def _timer(self, real: timedelta, summary: str) -> timedelta | None:
        wake_at, skips = self._ops.now() + real, self._skips
        try:
            await self._ops.wait_condition(
                lambda: self._skips != skips or self.cancelled,
                timeout=real,
                timeout_summary=summary,
            )
        except TimeoutError:
            return None
        return max(timedelta(0), wake_at - self._ops.now())


class Batcher:
    """Collects the calls of the cohort's pairs and sends them as batches.

    `serve` wakes when calls are waiting and nothing else in the workflow can run (a
    workflow condition is checked only then): every pair has gone as far as it can, so the
    batch is as large as this moment allows. Deterministic: calls are grouped in the order
    they were made.
    """

    # A step's recording is an activity of its own here (_record_steps), so it can go on
    # while the next step's target calls do.
    records_beside = True

    def __init__(
        self, cohort: CohortInput, target: Target, timers: SharedTimers, ops: WorkflowOps = TEMPORAL
    ) -> None:
        self._ops = ops
        self._cohort = cohort
        self._target = target
        self.timers = timers
        self._queue: list[_Call] = []
        self._flushes: set[asyncio.Task[None]] = set()
        self.batches = 0

    async def call(self, activity: str, payload: Any) -> Any:
        if activity not in _BATCHED:
            raise RuntimeError(f"no batch for activity {activity!r}")  # a bug: retry the task
        call = _Call(activity, payload)
        self._queue.append(call)
        return await call.future

    # The lifecycle's Calls (calls.py), with the cohort's shared timers for its waits. The
    # future holds what the binding's result type reads (_read_outcome, _record_steps).
    async def activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        result: Out = await self.call(activity.name, arg)
        return result

    async def local_activity(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        result: Out = await self.call(activity.name, arg)
        return result

    async def direct(self, activity: Activity[In, Out], arg: In, **options: Any) -> Out:
        return await self._ops.execute(activity, arg, **options)

    def now(self) -> datetime:
        return self._ops.now()

    def patched(self, patch_id: str) -> bool:
        return self._ops.patched(patch_id)

    def log(self, level: int, message: str, *args: object) -> None:
        self._ops.log(level, message, *args)

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        return await self.timers.sleep(real, summary)

    async def serve(self) -> None:
        while True:
            await self._ops.wait_condition(lambda: bool(self._queue))
            calls, self._queue = self._queue, []
            groups: dict[str, list[_Call]] = {}
            for call in calls:
                groups.setdefault(call.activity, []).append(call)
            for activity, group in groups.items():
                task = asyncio.create_task(self._flush(activity, group))
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)

    async def _flush(self, activity: str, calls: list[_Call]) -> None:
        self.batches += 1
        try:
            if activity in _TARGET_KINDS:
                results = await self._target_batch(activity, calls)
            elif activity == contracts.RECORD_STEP.name:
                results = await self._record_steps([call.payload for call in calls])
            else:
                await self._record_tenants(calls)
                results = [None] * len(calls)
        # The whole batch failed, or a result does not parse: every item failed (fail closed,
        # and no pair is left waiting).
        except (ActivityError, ValueError) as error:
            failure = BatchItemError(
                failure_text(error)
                if isinstance(error, ActivityError)
                else f"{type(error).__name__}: {error}"
            )
            for call in calls:
                call.future.set_exception(failure)
            return
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, BaseException):
                call.future.set_exception(result)
            else:
                call.future.set_result(result)

    async def _record_tenants(self, calls: list[_Call]) -> None:
        """Write the tenants every pair registered. An activity, as a step's recording is
        (_record_steps): run as a local activity it held the cohort's workflow task open
        while the recorder was busy with other cohorts' steps: the one task of 1,000 pairs
        the SDK logged over 5 s (TMPRL1104, 5.5 s) was this one. Runs recorded before keep
        their local activity."""
        ops = self._ops
        run = ops.execute if ops.patched("record-tenants-activity") else ops.execute_local
        await run(
            contracts.RECORD_TENANT_SETS,
            (
                self._cohort.run_id,
                [call.payload[1] for call in calls],
                [call.payload[2] for call in calls],
            ),
            start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY,
            summary=f"record tenants of {len(calls)} pair(s)",
        )

    async def _record_steps(self, steps: list[StepRecord]) -> list[StepOutcome]:
        """Judge and write every pair's step. An activity of its own: a local activity
        holds the workflow task open while it runs, and with many cohorts writing at once
        those tasks took seconds (measured: bench/task_latency.py; the server retries a
        task at 10 s). Runs recorded before keep their local activity."""
        ops = self._ops
        run = ops.execute if ops.patched("record-steps-activity") else ops.execute_local
        return await run(
            contracts.RECORD_STEPS,
            steps,
            start_to_close_timeout=RECORD_TIMEOUT * 2,
            retry_policy=RECORD_RETRY,
            summary=f"record {len(steps)} pair step(s)",
        )

    async def _target_batch(self, activity: str, calls: list[_Call]) -> list[Any]:
        kind, result_type = _TARGET_KINDS[activity]
        target = self._target
        items = [call.payload.model_dump(mode="json", exclude={"target"}) for call in calls]
        outcomes = await self._ops.execute(
            contracts.TARGET_BATCH,
            TargetBatch(kind=kind, target=target, items=items),
            start_to_close_timeout=batch_timeout(target, kind, [call.payload for call in calls]),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RESUMABLE_RETRY,
            task_queue=self._cohort.target_task_queue,
            summary=f"{kind} × {len(calls)}",
        )
        return [_read_outcome(outcome, result_type) for outcome in outcomes]


def _read_outcome(outcome: BatchOutcome, result_type: TypeAdapter[Any]) -> Any:
    if not outcome.ok:
        return BatchItemError(outcome.error or "the batch item failed")
    return result_type.validate_python(outcome.value)
