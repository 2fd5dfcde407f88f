"""The lifecycle of one pair of tenants through the scenario's timeline: a plain object that
both PairLifecycleWorkflow (one pair per workflow) and CohortLifecycleWorkflow (many pairs
per workflow) drive. It decides what happens when; its Calls (calls.py) do the calls and
the waits. A target call that fails after its retries becomes an inconclusive observation:
a broken target can never make a check pass, and never crashes the lifecycle either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    import memlife.workflows.spaces as spaces
    import memlife.workflows.steps as steps
    from memlife.contracts import (
        PairInput,
        PairProgress,
        PairResult,
        PairVerdicts,
        StepOutcome,
        StepRecord,
    )
    from memlife.rules.adjudication import review_items
    from memlife.rules.evidence import DeletionState, Observation
    from memlife.rules.pairs import TenantIdentity
    from memlife.rules.scenario import (
        AwaitDeletionStep,
        DeleteStep,
        InspectStep,
        MaintainStep,
        ProbeStep,
        RegisterStep,
        Role,
        SpaceStep,
        UpdateStep,
        WaitStep,
        WriteStep,
    )
    from memlife.rules.state import PairState
    from memlife.rules.timeline import stage_of
    from memlife.rules.verdicts import CaseVerdict
    from memlife.workflows.calls import CALL_ERRORS, Calls, failure_text, iso
    from memlife.workflows.options import (
        RECORD_RETRY,
        RECORD_TIMEOUT,
        RESUMABLE_RETRY,
        converse_timeouts,
    )
    from memlife.workflows.spaces import space_name
    from memlife.workflows.steps import Message, StepWork


class Observer:
    """What the workflow around a lifecycle shows of it as it goes (search attributes,
    details); a cohort's pairs show nothing of their own."""

    def step_started(self, runner: LifecycleRunner) -> None:
        pass

    async def tallied(self, runner: LifecycleRunner) -> None:
        pass


async def tell_run_failing(pair_index: int) -> None:
    """Signal the run (this workflow's parent) a pair's first failure, so that its verdict
    turns "fail" now, not when the pair's workflow ends days later."""
    parent = workflow.info().parent
    if parent is None:
        return
    try:
        await workflow.get_external_workflow_handle(parent.workflow_id).signal(
            "pair_failing", pair_index
        )
    except Exception as error:
        workflow.logger.warning("could not tell the suite about a failure: %s", error)


class LifecycleRunner:
    def __init__(
        self, pair_input: PairInput, calls: Calls, observer: Observer | None = None
    ) -> None:
        self.input = pair_input
        self.calls = calls
        self.observer = observer or Observer()
        scenario = pair_input.scenario
        self.state = PairState(scenario.pairs[0])
        self.tenants: dict[Role, TenantIdentity] = {t.role: t for t in pair_input.tenants}
        self.deletion_states: dict[Role, DeletionState | None] = {}
        self.seq = 0
        self.step_index = -1
        self.step_kind = "starting"
        self.stage = ""
        self.steps_total = len(scenario.timeline)
        self.cases = self.cases_passed = self.inconclusive = self.failures = 0
        self.problems: list[dict[str, Any]] = []
        self.wake_at: datetime | None = None
        # Operator controls: an ended wait still moves scenario time on by its full length;
        # a cancelled lifecycle stops at the next step boundary.
        self.skipped = timedelta(0)
        self.cancel_reason: str | None = None
        # Recordings going on beside later steps (_judged_in_workflow), oldest first.
        self._recording: list[asyncio.Task[StepOutcome]] = []

    # -- what the workflow shows ---------------------------------------------------------

    def progress(self) -> PairProgress:
        return PairProgress(
            step=self.step_index,
            steps=self.steps_total,
            kind=self.step_kind,
            stage=self.stage,
            cases=self.cases,
            cases_passed=self.cases_passed,
            failures=self.failures,
            inconclusive=self.inconclusive,
            wake_at=iso(self.wake_at) if self.wake_at else None,
            cancelled=self.cancel_reason,
        )

    def verdicts(self) -> PairVerdicts:
        """Tallies so far and every failed or inconclusive check (the first 200)."""
        return PairVerdicts(
            verdict=self.verdict(),
            cases=self.cases,
            cases_passed=self.cases_passed,
            failures=self.failures,
            inconclusive=self.inconclusive,
            problems=self.problems,
        )

    def verdict(self) -> str:
        """running, then fail | inconclusive | cancelled | pass."""
        if self.cancel_reason:
            return "cancelled"
        if self.failures:
            return "fail"
        if self.step_kind not in ("done", "cancelled"):
            return "inconclusive" if self.inconclusive else "running"
        return "inconclusive" if self.inconclusive or self.cases_passed < self.cases else "pass"

    def result(self) -> PairResult:
        return PairResult(
            pair_index=self.input.pair_index,
            cases=self.cases,
            cases_passed=self.cases_passed,
            inconclusive=self.inconclusive,
            failures=self.failures,
            cancelled=self.cancel_reason is not None,
        )

    # -- the timeline --------------------------------------------------------------------

    async def run(self) -> PairResult:
        try:
            await self._timeline()
            await asyncio.gather(*self._recording)  # a lifecycle ends with its recordings
        except Exception:
            # The lifecycle failed, but what its other steps did is still recorded.
            await asyncio.gather(*self._recording, return_exceptions=True)
            raise
        self.step_kind = "cancelled" if self.cancel_reason else "done"
        return self.result()

    async def _timeline(self) -> None:
        await self._run_step(-1, "register", "", steps.register(self, ("a", "b")))
        for index, step in enumerate(self.input.scenario.timeline):
            if self.cancel_reason:
                self.calls.log(
                    logging.INFO,
                    "lifecycle cancelled before step %d: %s",
                    index,
                    self.cancel_reason,
                )
                break
            self._raise_failed_recording()
            await self._run_step(index, step.step, step.label, self._work(index, step))

    def _work(self, index: int, step: Any) -> Awaitable[StepWork]:
        if isinstance(step, WaitStep):
            return steps.wait(self, step)
        if isinstance(step, WriteStep):
            return spaces.write(self, step) if step.space else steps.write(self, step)
        if isinstance(step, UpdateStep):
            return steps.update(self, step)
        if isinstance(step, ProbeStep):
            return spaces.probe(self, index, step) if step.space else steps.probe(self, index, step)
        if isinstance(step, DeleteStep):
            return (
                steps.forget(self, index, step) if step.domains else steps.delete(self, index, step)
            )
        if isinstance(step, AwaitDeletionStep):
            return steps.await_deletion(self, index, step)
        if isinstance(step, InspectStep):
            return steps.inspect(self, index, step)
        if isinstance(step, MaintainStep):
            return steps.maintain(self, index, step)
        if isinstance(step, SpaceStep):
            return spaces.change(self, index, step)
        assert isinstance(step, RegisterStep)
        return steps.register(self, tuple(step.tenants))

    async def _run_step(self, index: int, kind: str, label: str, work: Awaitable[StepWork]) -> None:
        self.step_index, self.step_kind = index, kind
        self.stage = stage_of(index, label)
        self.observer.step_started(self)
        started_scenario, started_wall = self.scenario_now(), self.calls.now()
        produced = await work
        record = self._step_record(index, kind, label, started_scenario, started_wall, produced)
        if self._judged_in_workflow(produced):
            # Nothing for the recorder to judge: the outcome is the step's own verdicts,
            # and its recording goes on beside the next step instead of before it.
            outcome = StepOutcome(verdicts=list(produced.verdicts))
            self._recording.append(asyncio.create_task(self._record(index, kind, record)))
        else:
            outcome = await self._record(index, kind, record)
        if self.input.review_queue and produced.cases:
            await self._queue_for_review(self.input.review_queue, index, produced, outcome)
        for summary in outcome.inspections:
            role = next(c.role for c in produced.inspections if c.case_id == summary.case_id)
            self.state.absorb_inspection(role, summary)
        for role in ("a", "b"):
            self.state.absorb_probe_verdicts(
                role, [v for v in outcome.verdicts if v.role == role and v.store == "response"]
            )
        await self._tally(outcome.verdicts)

    # -- plumbing ------------------------------------------------------------------------

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def scenario_now(self) -> datetime:
        return (
            self.input.clock.scenario_now(self.input.clock_origin, self.calls.now()) + self.skipped
        )

    async def sleep(self, scenario_duration: timedelta, summary: str) -> None:
        """A durable wait that an operator may end early (skip_wait, cancel). An ended
        wait still moves scenario time on by its full length."""
        if self.cancel_reason:
            return
        clock = self.input.clock
        real = clock.real_wait(scenario_duration)
        self.wake_at = self.calls.now() + real
        try:
            remaining = await self.calls.sleep(real, summary)
            if remaining is not None:
                now = self.calls.now()
                self.skipped += clock.scenario_now(now, now + remaining) - now
                self.calls.log(
                    logging.INFO,
                    "wait skipped by an operator: %s (%s of it left)",
                    summary,
                    remaining,
                )
        finally:
            self.wake_at = None

    async def converse(
        self, role: Role, messages: list[Message], space: str | None = None
    ) -> list[Observation]:
        """Send one tenant's messages in order (one activity); one observation each. With
        `space`, they are said inside that shared space."""
        if not messages:
            return []
        tenant = self.tenants[role]
        scenario_time = self.scenario_now()
        seqs = [self.next_seq() for _ in messages]

        def observation(i: int, **fields: Any) -> Observation:
            message = messages[i]
            return Observation(
                seq=seqs[i],
                role=role,
                kind=message.kind,
                domain=message.domain,
                case_id=message.case_id,
                request=message.text,
                scenario_time=scenario_time,
                **fields,
            )

        if tenant.user_id is None:
            return [
                observation(
                    i,
                    status="target-error",
                    wall_time=self.calls.now(),
                    error="tenant could not be registered; nothing was sent",
                )
                for i in range(len(messages))
            ]
        target = self.input.target
        start_to_close, heartbeat = converse_timeouts(target, len(messages))
        try:
            replies = await self.calls.activity(
                contracts.CONVERSE,
                contracts.ConverseRequest(
                    target=target,
                    phone=tenant.phone,
                    user_id=tenant.user_id,
                    messages=[m.text for m in messages],
                    scenario_now=iso(scenario_time),
                    run_id=self.input.run_id,
                    questions=[i for i, m in enumerate(messages) if m.kind == "probe"],
                    **({} if space is None else self._space_fields(space)),
                ),
                start_to_close_timeout=start_to_close,
                heartbeat_timeout=heartbeat,
                retry_policy=RESUMABLE_RETRY,
                summary=f"{messages[0].kind} {tenant.alias}: {len(messages)} message(s)",
            )
        except CALL_ERRORS as error:
            text = failure_text(error)
            return [
                observation(i, status="target-error", error=text, wall_time=self.calls.now())
                for i in range(len(messages))
            ]
        return [
            observation(
                r.index,
                reply=r.reply,
                context=r.context,
                status=r.status,
                http_status=r.http_status,
                error=r.error,
                latency_ms=r.latency_ms,
                wall_time=r.wall_time,
                stages=r.stages,
                cost=r.cost,
                tokens=r.tokens,
                traceparent=r.traceparent,
                refused=r.refused,
                retrieval=r.retrieval,
            )
            for r in replies
        ]

    def _space_fields(self, space: str) -> dict[str, str]:
        """Where a conversation inside `space` goes: its id, else its name."""
        name = space_name(self.input, space)
        return {"space_id": self.state.spaces[space].space_id or name, "space_name": name}

    def _judged_in_workflow(self, produced: StepWork) -> bool:
        """A step without probe cases or inspections judges to its own verdicts (the
        recorder's judge_step has nothing to add), so where the Calls record beside the
        next step (a cohort's Batcher) nothing waits for the recording."""
        return (
            self.calls.records_beside
            and not produced.cases
            and not produced.inspections
            and self.calls.patched("record-beside-next-step")
        )

    def _raise_failed_recording(self) -> None:
        """A recording that failed beside a step fails the lifecycle before the next one,
        as it would have failed it before that step anyway."""
        for task in [t for t in self._recording if t.done()]:
            self._recording.remove(task)
            task.result()

    def _step_record(
        self,
        index: int,
        kind: str,
        label: str,
        started_scenario: datetime,
        started_wall: datetime,
        work: StepWork,
    ) -> StepRecord:
        """What the recorder writes and judges of a step, taken when the step ends."""
        budget = self.input.scenario.latency_budget / timedelta(milliseconds=1)
        record = StepRecord(
            run_id=self.input.run_id,
            pair_index=self.input.pair_index,
            step_index=index,
            kind=kind,
            label=label,
            stage=stage_of(index, label),
            scenario_started=started_scenario,
            scenario_finished=self.scenario_now(),
            wall_started=started_wall,
            wall_finished=self.calls.now(),
            observations=work.observations,
            cases=work.cases,
            inspections=work.inspections,
            reads=work.reads,
            staged_reads=work.staged_reads,
            stores=list(self.input.target.stores) if work.inspections else [],
            verdicts=work.verdicts,
            latency_budget_ms=budget,
            tenants=list(self.tenants.values()),
        )
        if record.cases and self.calls.patched("forbidden-once-per-step"):
            return record.with_forbidden_once()
        return record

    async def _record(self, index: int, kind: str, record: StepRecord) -> StepOutcome:
        # Recording is a short, idempotent database write: a local activity (no server round
        # trip to schedule it) that simply runs again if the workflow task is retried.
        return await self.calls.local_activity(
            contracts.RECORD_STEP,
            record,
            start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY,
            summary=f"record step {index} ({kind})",
        )

    async def _queue_for_review(
        self, queue: str, index: int, produced: StepWork, outcome: StepOutcome
    ) -> None:
        """Failed answers go to the review queue; queueing trouble never stops a lifecycle."""
        items = review_items(
            self.input.run_id,
            self.input.pair_index,
            index,
            self.stage,
            produced.cases,
            produced.observations,
            outcome.verdicts,
        )
        if not items:
            return
        try:
            await self.calls.direct(
                contracts.QUEUE_FOR_REVIEW,
                (queue, items),
                start_to_close_timeout=RECORD_TIMEOUT,
                retry_policy=RECORD_RETRY,
                summary=f"queue {len(items)} reply(ies) for review",
            )
        except CALL_ERRORS as error:
            self.calls.log(logging.WARNING, "could not queue replies for review: %s", error)

    async def _tally(self, verdicts: list[CaseVerdict]) -> None:
        for verdict in verdicts:
            self.cases += 1
            self.cases_passed += verdict.passed
            self.inconclusive += verdict.outcome == "inconclusive"
            self.failures += sum(1 for f in verdict.findings if f.outcome == "fail")
            for finding in verdict.findings:
                if len(self.problems) < 200:
                    self.problems.append(
                        {
                            "case": verdict.case_id,
                            "tenant": verdict.tenant_alias,
                            "stage": self.stage,
                            "invariant": finding.invariant,
                            "outcome": finding.outcome,
                            "reason": finding.reason,
                            "store": finding.store,
                        }
                    )
        if verdicts:
            await self.observer.tallied(self)
