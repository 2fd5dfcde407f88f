"""CohortLifecycleWorkflow: many pairs through the timeline in one workflow, for scale.

Each pair runs the very same lifecycle code as PairLifecycleWorkflow, but its calls are
collected instead of scheduled one by one: whenever every pair of the cohort is blocked,
the calls gathered so far leave as one activity per kind (all the cohort's conversations of
a step in one activity, all its store inspections in another) and one local activity
records every pair's step in one transaction. The dev server's activity rate stops being
the ceiling: the target and the recorder are. What a pair decides, judges and records is
the same as alone.

The pairs themselves are read from the recorder (materialized there by the suite), so
neither the run's input nor any history carries ten thousand pairs at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from memlife.activities.record import load_pairs, record_step, record_steps, record_tenant_sets
    from memlife.activities.record import record_tenants as record_tenants_activity
    from memlife.activities.target import (
        converse,
        delete_tenant,
        deletion_status,
        forget_fact,
        inspect_stores,
        register_tenant,
        target_batch,
    )
    from memlife.workflows.lifecycle import BatchItemError, PairLifecycleWorkflow, _failure_text
    from memlife.workflows.options import (
        HEARTBEAT_TIMEOUT,
        RECORD_RETRY,
        RECORD_TIMEOUT,
        RESUMABLE_RETRY,
        batch_timeout,
    )
    from pydantic import TypeAdapter

    from memlife.contracts import (
        BatchOutcome,
        CohortInput,
        PairInput,
        PairResult,
        RegisterResult,
        TargetBatch,
    )
    from memlife.rules.evidence import DeletionState, Reply, StoreRead
    from memlife.rules.pairs import pair_tenants

# Which batch kind each single-call activity joins, and how its result is read back.
_TARGET_KINDS: dict[Any, tuple[str, TypeAdapter[Any]]] = {
    register_tenant: ("register", TypeAdapter(RegisterResult)),
    converse: ("converse", TypeAdapter(list[Reply])),
    delete_tenant: ("delete", TypeAdapter(DeletionState)),
    deletion_status: ("deletion-status", TypeAdapter(DeletionState)),
    forget_fact: ("forget", TypeAdapter(DeletionState)),
    inspect_stores: ("inspect", TypeAdapter(list[StoreRead])),
}
_BATCHED = {*_TARGET_KINDS, record_step, record_tenants_activity}


@dataclass
class _Call:
    activity: Any
    payload: Any
    future: asyncio.Future[Any] = field(default_factory=asyncio.Future)


class Batcher:
    """Collects the calls of the cohort's pairs and sends them as batches.

    `serve` wakes when calls are waiting and nothing else in the workflow can run (a
    workflow condition is checked only then): every pair has gone as far as it can, so the
    batch is as large as this moment allows. Deterministic: calls are grouped in the order
    they were made.
    """

    def __init__(self, cohort: CohortInput) -> None:
        self._cohort = cohort
        self._queue: list[_Call] = []
        self._flushes: set[asyncio.Task[None]] = set()
        self.batches = 0

    async def call(self, activity: Any, payload: Any) -> Any:
        if activity not in _BATCHED:
            raise RuntimeError(f"no batch for activity {activity!r}")  # a bug: retry the task
        call = _Call(activity, payload)
        self._queue.append(call)
        return await call.future

    async def serve(self) -> None:
        while True:
            await workflow.wait_condition(lambda: bool(self._queue))
            calls, self._queue = self._queue, []
            groups: dict[Any, list[_Call]] = {}
            for call in calls:
                groups.setdefault(call.activity, []).append(call)
            for activity, group in groups.items():
                task = asyncio.create_task(self._flush(activity, group))
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)

    async def _flush(self, activity: Any, calls: list[_Call]) -> None:
        self.batches += 1
        try:
            if activity in _TARGET_KINDS:
                results = await self._target_batch(activity, calls)
            elif activity is record_step:
                results = await workflow.execute_local_activity(
                    record_steps, [call.payload for call in calls],
                    start_to_close_timeout=RECORD_TIMEOUT * 2, retry_policy=RECORD_RETRY,
                    summary=f"record {len(calls)} pair step(s)")
            else:
                await workflow.execute_local_activity(
                    record_tenant_sets,
                    args=[self._cohort.run_id, [call.payload[1] for call in calls],
                          [call.payload[2] for call in calls]],
                    start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
                    summary=f"record tenants of {len(calls)} pair(s)")
                results = [None] * len(calls)
        # The whole batch failed, or a result does not parse: every item failed (fail closed,
        # and no pair is left waiting).
        except (ActivityError, ValueError) as error:
            failure = BatchItemError(_failure_text(error) if isinstance(error, ActivityError)
                                     else f"{type(error).__name__}: {error}")
            for call in calls:
                call.future.set_exception(failure)
            return
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, BaseException):
                call.future.set_exception(result)
            else:
                call.future.set_result(result)

    async def _target_batch(self, activity: Any, calls: list[_Call]) -> list[Any]:
        kind, result_type = _TARGET_KINDS[activity]
        target = self._cohort.target
        items = [call.payload.model_dump(mode="json", exclude={"target"}) for call in calls]
        outcomes: list[BatchOutcome] = await workflow.execute_activity(
            target_batch, TargetBatch(kind=kind, target=target, items=items),
            start_to_close_timeout=batch_timeout(target, kind,
                                                 [call.payload for call in calls]),
            heartbeat_timeout=HEARTBEAT_TIMEOUT, retry_policy=RESUMABLE_RETRY,
            summary=f"{kind} × {len(calls)}")
        return [_read_outcome(outcome, result_type) for outcome in outcomes]


def _read_outcome(outcome: BatchOutcome, result_type: TypeAdapter[Any]) -> Any:
    if not outcome.ok:
        return BatchItemError(outcome.error or "the batch item failed")
    return result_type.validate_python(outcome.value)


class SharedTimers:
    """Pairs that start the same wait in the same workflow task share one timer, so they
    wake in the same task and their next calls still leave as one batch (separate timers
    may fire in separate tasks, and the cohort would drift apart for good)."""

    def __init__(self) -> None:
        self._timers: dict[tuple[datetime, timedelta], asyncio.Task[timedelta | None]] = {}
        self._skips = 0
        self.cancelled = False

    def skip(self) -> None:
        self._skips += 1

    async def sleep(self, real: timedelta, summary: str) -> timedelta | None:
        """Sleep `real`; None when it ran its course, else what was left of it (skipped)."""
        key = (workflow.now(), real)
        timer = self._timers.get(key)
        if timer is None:
            timer = self._timers[key] = asyncio.create_task(self._timer(real, summary))
            timer.add_done_callback(lambda _: self._timers.pop(key, None))
        return await asyncio.shield(timer)

    async def _timer(self, real: timedelta, summary: str) -> timedelta | None:
        wake_at, skips = workflow.now() + real, self._skips
        try:
            await workflow.wait_condition(lambda: self._skips != skips or self.cancelled,
                                          timeout=real, timeout_summary=summary)
        except TimeoutError:
            return None
        return max(timedelta(0), wake_at - workflow.now())


class _CohortPair(PairLifecycleWorkflow):
    """One pair of a cohort: the pair lifecycle, with its calls going through the batcher
    and its waits on shared timers. Not a workflow of its own; the cohort drives it."""

    def __init__(self, batcher: Batcher, timers: SharedTimers) -> None:
        super().__init__()
        self._batcher = batcher
        self._timers = timers

    async def _sleep(self, scenario_duration: timedelta, summary: str) -> None:
        if self._cancel_reason:
            return
        clock = self._input.clock
        real = clock.real_wait(scenario_duration)
        self._wake_at = workflow.now() + real
        try:
            remaining = await self._timers.sleep(real, summary)
            if remaining is not None:  # an operator ended the wait: scenario time moves on
                now = workflow.now()
                self._skipped += clock.scenario_now(now, now + remaining) - now
        finally:
            self._wake_at = None

    async def _activity(self, activity: Any, arg: Any = None, *,
                        args: list[Any] | None = None, **options: Any) -> Any:
        return await self._batcher.call(activity, arg if args is None else args)

    async def _local_activity(self, activity: Any, arg: Any = None, *,
                              args: list[Any] | None = None, **options: Any) -> Any:
        return await self._batcher.call(activity, arg if args is None else args)

    def _show_details(self) -> None:
        """The cohort's page shows the cohort's tallies, not one pair's."""


@workflow.defn(name="CohortLifecycleWorkflow")
class CohortLifecycleWorkflow:
    def __init__(self) -> None:
        self._pairs: list[_CohortPair] = []
        self._first_pair = 0
        self._batcher: Batcher | None = None
        self._timers = SharedTimers()

    @workflow.query
    def progress(self) -> dict[str, Any]:
        """Every pair's progress, by pair index."""
        return {str(self._first_pair + i): pair.progress()
                for i, pair in enumerate(self._pairs)}

    @workflow.query
    def verdicts(self) -> dict[str, Any]:
        return {str(self._first_pair + i): pair.verdicts()
                for i, pair in enumerate(self._pairs)}

    @workflow.signal
    def skip_wait(self) -> None:
        """Operator fast-forward: every pair's current wait ends now."""
        self._timers.skip()

    @workflow.signal
    def cancel(self, reason: str) -> None:
        for pair in self._pairs:
            pair.cancel(reason)
        self._timers.cancelled = True

    @workflow.run
    async def run(self, cohort: CohortInput) -> list[PairResult | None]:
        self._first_pair = cohort.first_pair
        pairs = await workflow.execute_activity(
            load_pairs, args=[cohort.run_id, cohort.first_pair, cohort.pair_count],
            start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
            summary=f"load pairs {cohort.first_pair}–{cohort.first_pair + cohort.pair_count - 1}")
        batcher = self._batcher = Batcher(cohort)
        scenario = cohort.scenario
        inputs = []
        for offset, pair in enumerate(pairs):
            index = cohort.first_pair + offset
            tenants = pair_tenants(cohort.run_id, index, pair, scenario)
            inputs.append(PairInput(
                run_id=cohort.run_id, pair_index=index,
                scenario=scenario.model_copy(update={"pairs": [pair]}), target=cohort.target,
                clock=cohort.clock, clock_origin=cohort.clock_origin, tenants=tenants,
                review_queue=cohort.review_queue))
            self._pairs.append(_CohortPair(batcher, self._timers))
        serving = asyncio.create_task(batcher.serve())
        results = await asyncio.gather(*(self._one(pair, pair_input)
                                         for pair, pair_input in zip(self._pairs, inputs,
                                                                     strict=True)))
        serving.cancel()
        done = [r for r in results if r is not None]
        failing = sum(1 for r in done if r.failures)
        workflow.set_current_details(
            f"**{'FAIL' if failing or len(done) < len(results) else 'done'}**: "
            f"{len(done)}/{len(results)} pair(s) finished · {failing} with failures · "
            f"{sum(r.failures for r in done)} failure(s)")
        workflow.logger.info("cohort done: %d pair(s) in %d batch(es)", len(results),
                             batcher.batches)
        return list(results)

    async def _one(self, pair: _CohortPair, pair_input: PairInput) -> PairResult | None:
        try:
            return await pair.run(pair_input)
        except BatchItemError as error:  # a call outside the lifecycle's own handling
            workflow.logger.error("pair %d of the cohort failed: %s", pair_input.pair_index,
                                  error)
            return None

