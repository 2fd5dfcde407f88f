"""PairLifecycleWorkflow: one pair of tenants through the scenario's timeline.

Decides what happens when; every target call and every database write is an activity, and
every wait is a durable timer. A target call that fails after its retries becomes an
inconclusive observation: a broken target can never make a check pass, and never crashes
the lifecycle either.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from memlife.activities.record import record_step, record_tenants
    from memlife.activities.review import queue_for_review
    from memlife.activities.target import (
        converse,
        delete_tenant,
        deletion_status,
        forget_fact,
        inspect_stores,
        register_tenant,
    )
    from memlife.workflows import attributes
    from memlife.workflows.options import (
        HEARTBEAT_TIMEOUT,
        INSPECT_RETRY,
        RECORD_RETRY,
        RECORD_TIMEOUT,
        RESUMABLE_RETRY,
        TARGET_RETRY,
        converse_timeouts,
        inspect_timeout,
        target_timeout,
    )

    from memlife.contracts import (
        ConverseRequest,
        DeleteRequest,
        ForgetRequest,
        InspectRequest,
        PairInput,
        PairResult,
        RegisterRequest,
        StepOutcome,
        StepRecord,
    )
    from memlife.rules.adjudication import review_items
    from memlife.rules.durations import format_duration
    from memlife.rules.evidence import DeletionState, Observation, StoreRead
    from memlife.rules.judging import deletion_verdict
    from memlife.rules.pairs import TenantIdentity
    from memlife.rules.scenario import (
        AwaitDeletionStep,
        DeleteStep,
        InspectStep,
        ProbeStep,
        RegisterStep,
        Role,
        UpdateStep,
        WaitStep,
        WriteStep,
    )
    from memlife.rules.state import PairState, pick
    from memlife.rules.timeline import stage_of
    from memlife.rules.verdicts import CaseVerdict, InspectCase, ProbeCase


class BatchItemError(Exception):
    """One item of a batched call failed (the cohort workflow's counterpart of an
    ActivityError); the message is already "Type: message"."""


# What a failed call raises, alone (PairLifecycleWorkflow) or batched (CohortLifecycleWorkflow).
CALL_ERRORS = (ActivityError, BatchItemError)


def _failure_text(error: ActivityError | BatchItemError) -> str:
    """The innermost application error's type and message (timeouts: the timeout)."""
    if isinstance(error, BatchItemError):
        return str(error)
    cause: Any = error
    while getattr(cause, "cause", None) is not None:
        cause = cause.cause
        if isinstance(cause, ApplicationError):
            return f"{cause.type}: {cause.message}"
    return str(cause) or type(cause).__name__


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@dataclass
class Message:
    text: str
    kind: str
    domain: str | None = None
    case_id: str | None = None


@dataclass
class StepWork:
    """What one step produced, for recording and judging."""

    observations: list[Observation] = field(default_factory=list)
    cases: list[ProbeCase] = field(default_factory=list)
    inspections: list[InspectCase] = field(default_factory=list)
    reads: dict[str, list[StoreRead]] = field(default_factory=dict)
    verdicts: list[CaseVerdict] = field(default_factory=list)


@workflow.defn(name="PairLifecycleWorkflow")
class PairLifecycleWorkflow:
    def __init__(self) -> None:
        self._seq = 0
        self._step_index = -1
        self._step_kind = "starting"
        self._stage = ""
        self._steps_total = 0
        self._cases = 0
        self._cases_passed = 0
        self._inconclusive = 0
        self._failures = 0
        self._wake_at: datetime | None = None
        self._deletion_states: dict[Role, DeletionState | None] = {}
        # Operator controls: end the current wait now (scenario time moves on as if it had
        # elapsed), or stop at the next step boundary.
        self._skip_requested = False
        self._skipped = timedelta(0)
        self._cancel_reason: str | None = None
        self._problems: list[dict[str, Any]] = []
        self._verdict_attribute = attributes.RUNNING

    @workflow.query
    def progress(self) -> dict[str, Any]:
        return {
            "step": self._step_index, "steps": self._steps_total, "kind": self._step_kind,
            "stage": self._stage, "cases": self._cases, "cases_passed": self._cases_passed,
            "failures": self._failures, "inconclusive": self._inconclusive,
            "wake_at": _iso(self._wake_at) if self._wake_at else None,
            "cancelled": self._cancel_reason,
        }

    @workflow.query
    def verdicts(self) -> dict[str, Any]:
        """Tallies so far and every failed or inconclusive check (the first 200)."""
        return {"verdict": self._verdict_attribute, "cases": self._cases,
                "cases_passed": self._cases_passed, "failures": self._failures,
                "inconclusive": self._inconclusive, "problems": self._problems}

    @workflow.signal
    def skip_wait(self) -> None:
        """Operator fast-forward: end the current wait now. Outside a wait it does nothing."""
        if self._wake_at is None:
            workflow.logger.info("skip_wait ignored: the lifecycle is not waiting")
            return
        self._skip_requested = True

    @workflow.signal
    def cancel(self, reason: str) -> None:
        """Stop at the next step boundary (a wait ends at once); the run never passes."""
        self._cancel_reason = reason or "cancelled by an operator"

    @workflow.run
    async def run(self, pair_input: PairInput) -> PairResult:
        self._input = pair_input
        scenario = pair_input.scenario
        self._steps_total = len(scenario.timeline)
        self._state = PairState(scenario.pairs[0])
        self._tenants: dict[Role, TenantIdentity] = {t.role: t for t in pair_input.tenants}

        if pair_input.search_attributes:
            workflow.upsert_search_attributes([
                attributes.RUN.value_set(pair_input.run_id),
                attributes.SCENARIO.value_set(scenario.name),
                attributes.TARGET.value_set(pair_input.target.name),
                attributes.PAIR.value_set(pair_input.pair_index),
                attributes.TENANT.value_set([t.alias for t in pair_input.tenants]),
                attributes.VERDICT.value_set(attributes.RUNNING),
            ])
        await self._run_step(-1, "register", "", self._register(("a", "b")))
        for index, step in enumerate(scenario.timeline):
            if self._cancel_reason:
                workflow.logger.info("lifecycle cancelled before step %d: %s", index,
                                     self._cancel_reason)
                break
            if isinstance(step, WaitStep):
                work = self._wait(step)
            elif isinstance(step, WriteStep):
                work = self._write(step)
            elif isinstance(step, UpdateStep):
                work = self._update(step)
            elif isinstance(step, ProbeStep):
                work = self._probe(index, step)
            elif isinstance(step, DeleteStep):
                work = (self._forget(index, step) if step.domains
                        else self._delete(index, step))
            elif isinstance(step, AwaitDeletionStep):
                work = self._await_deletion(index, step)
            elif isinstance(step, InspectStep):
                work = self._inspect(index, step)
            else:
                assert isinstance(step, RegisterStep)
                work = self._register(tuple(step.tenants))
            await self._run_step(index, step.step, step.label, work)
        self._step_kind = "cancelled" if self._cancel_reason else "done"
        self._show_details()
        if pair_input.search_attributes:
            final = (attributes.CANCELLED if self._cancel_reason else
                     attributes.FAIL if self._failures else
                     attributes.INCONCLUSIVE if self._inconclusive or
                     self._cases_passed < self._cases else attributes.PASS)
            workflow.upsert_search_attributes([attributes.PHASE.value_set(self._step_kind),
                                               attributes.VERDICT.value_set(final)])
        return PairResult(pair_index=pair_input.pair_index, cases=self._cases,
                          cases_passed=self._cases_passed, inconclusive=self._inconclusive,
                          failures=self._failures, cancelled=self._cancel_reason is not None)

    async def _run_step(self, index: int, kind: str, label: str, work: Any) -> None:
        self._step_index, self._step_kind = index, kind
        self._stage = stage_of(index, label)
        if self._input.search_attributes:
            workflow.upsert_search_attributes([attributes.PHASE.value_set(
                f"{self._stage} ({kind})" if self._stage != kind else kind)])
        started_scenario, started_wall = self._scenario_now(), workflow.now()
        produced: StepWork = await work
        outcome = await self._record(index, kind, label, started_scenario, started_wall,
                                     produced)
        if self._input.review_queue and produced.cases:
            await self._queue_for_review(index, produced, outcome)
        for summary in outcome.inspections:
            role = next(c.role for c in produced.inspections if c.case_id == summary.case_id)
            self._state.absorb_inspection(role, summary)
        for role in ("a", "b"):
            self._state.absorb_probe_verdicts(
                role, [v for v in outcome.verdicts if v.role == role and v.store == "response"])
        await self._tally(outcome.verdicts)

    # -- steps ---------------------------------------------------------------------------

    async def _wait(self, step: WaitStep) -> StepWork:
        await self._sleep(step.duration,
                          f"{step.label or 'wait'} {format_duration(step.duration)}")
        return StepWork()

    async def _register(self, roles: tuple[Role, ...]) -> StepWork:
        observations = await asyncio.gather(*(self._register_one(role) for role in roles))
        await self._local_activity(
            record_tenants,
            args=[self._input.run_id, self._input.pair_index, list(self._tenants.values())],
            start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
            summary="record tenants",
        )
        return StepWork(observations=list(observations))

    async def _register_one(self, role: Role) -> Observation:
        tenant = self._tenants[role]
        seq = self._next_seq()
        scenario_time = self._scenario_now()
        target = self._input.target
        try:
            result = await self._activity(
                register_tenant,
                RegisterRequest(target=target, phone=tenant.phone, tenant_alias=tenant.alias,
                                scenario_now=_iso(scenario_time)),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"register {tenant.alias}",
            )
        except CALL_ERRORS as error:
            self._tenants[role] = tenant.model_copy(update={"user_id": None})
            return Observation(seq=seq, role=role, kind="register", request=tenant.phone,
                               status="target-error", error=_failure_text(error),
                               scenario_time=scenario_time, wall_time=workflow.now())
        self._tenants[role] = tenant.model_copy(update={"user_id": result.user_id})
        self._state.record_registration(role, result.user_id)
        return Observation(seq=seq, role=role, kind="register", request=tenant.phone,
                           reply=result.user_id, http_status=result.status or None,
                           latency_ms=result.latency_ms, scenario_time=scenario_time,
                           wall_time=result.wall_time)

    async def _write(self, step: WriteStep) -> StepWork:
        scenario = self._input.scenario

        async def write_tenant(role: Role) -> list[Observation]:
            tenant = self._state.pair.tenant(role)
            language = scenario.language_of(tenant)
            domains = [d for d in scenario.step_domains(step) if d in tenant.facts]
            messages = [
                Message(pick(scenario.domains[d].templates[language].statement,
                             self._input.pair_index + i).format(value=tenant.facts[d].value),
                        "write", d)
                for i, d in enumerate(domains)
            ]
            observations = await self._converse(role, messages)
            for domain, observation in zip(domains, observations, strict=True):
                self._state.record_write(role, domain, confirmed=observation.status == "ok")
            return observations

        per_tenant = await asyncio.gather(*(write_tenant(role) for role in step.tenants))
        return StepWork(observations=[o for items in per_tenant for o in items])

    async def _update(self, step: UpdateStep) -> StepWork:
        scenario = self._input.scenario

        async def update_tenant(role: Role) -> list[Observation]:
            tenant = self._state.pair.tenant(role)
            language = scenario.language_of(tenant)
            messages = [
                Message(pick(scenario.domains[d].templates[language].updates(),
                             self._input.pair_index + i).format(
                    value=self._state.next_update_value(role, d)), "update", d)
                for i, d in enumerate(step.domains)
            ]
            observations = await self._converse(role, messages)
            for domain, observation in zip(step.domains, observations, strict=True):
                self._state.record_update(role, domain, observation.scenario_time,
                                          confirmed=observation.status == "ok")
            return observations

        per_tenant = await asyncio.gather(*(update_tenant(role) for role in step.tenants))
        return StepWork(observations=[o for items in per_tenant for o in items])

    async def _probe(self, index: int, step: ProbeStep) -> StepWork:
        scenario = self._input.scenario
        now = self._scenario_now()

        async def probe_tenant(role: Role) -> tuple[list[ProbeCase], list[Observation]]:
            tenant = self._state.pair.tenant(role)
            language = scenario.language_of(tenant)
            phrases = scenario.abstain_phrases.get(language, [])
            cases: list[ProbeCase] = []
            for domain in self._state.probe_domains(step.kind, role,
                                                    scenario.step_domains(step)):
                questions = scenario.domains[domain].templates[language].question
                for q_index, question in enumerate(questions):
                    cases.append(self._state.probe_case(
                        f"s{index}-{role}-{domain}-q{q_index}", step.kind, role, domain,
                        question, now, scenario.update_grace, phrases))
            observations = await self._converse(
                role, [Message(c.question, "probe", c.domain, c.case_id) for c in cases])
            return cases, observations

        per_tenant = await asyncio.gather(*(probe_tenant(role) for role in step.tenants))
        return StepWork(cases=[c for cases, _ in per_tenant for c in cases],
                        observations=[o for _, obs in per_tenant for o in obs])

    async def _forget(self, index: int, step: DeleteStep) -> StepWork:
        """Single-fact erasure: each (tenant, domain) through the target's forget operation."""
        target = self._input.target

        async def forget_one(role: Role, domain: str) -> tuple[Observation, CaseVerdict | None]:
            tenant = self._tenants[role]
            value = self._state.tenants[role].current[domain][0]
            seq, scenario_time = self._next_seq(), self._scenario_now()
            error = None
            state: DeletionState | None = None
            try:
                state = await self._activity(
                    forget_fact,
                    ForgetRequest(target=target, phone=tenant.phone,
                                  user_id=tenant.user_id or "", domain=domain, value=value,
                                  scenario_now=_iso(scenario_time)),
                    start_to_close_timeout=target_timeout(target.timeout),
                    retry_policy=TARGET_RETRY, summary=f"forget {tenant.alias} {domain}",
                )
            except CALL_ERRORS as failure:
                error = _failure_text(failure)
            # Fail closed: even an unconfirmed forget is then checked as if it had happened.
            self._state.record_forget(role, domain, scenario_time)
            return self._erasure_result(
                f"s{index}-{role}-forget-{domain}", role, seq, scenario_time,
                f"forget {domain}", domain, state, error)

        assert step.domains is not None
        results = await asyncio.gather(*(forget_one(role, domain) for role in step.tenants
                                         for domain in step.domains))
        return StepWork(observations=[o for o, _ in results],
                        verdicts=[v for _, v in results if v is not None])

    async def _delete(self, index: int, step: DeleteStep) -> StepWork:
        async def delete_one(role: Role) -> tuple[Observation, CaseVerdict | None]:
            tenant = self._tenants[role]
            seq = self._next_seq()
            scenario_time = self._scenario_now()
            target = self._input.target
            state: DeletionState | None = None
            error = None
            if tenant.user_id is None:
                error = "tenant was never registered; nothing to delete"
            else:
                try:
                    state = await self._activity(
                        delete_tenant,
                        DeleteRequest(target=target, phone=tenant.phone,
                                      user_id=tenant.user_id, scenario_now=_iso(scenario_time)),
                        start_to_close_timeout=target_timeout(target.timeout),
                        retry_policy=TARGET_RETRY, summary=f"delete {tenant.alias}",
                    )
                except CALL_ERRORS as failure:
                    error = _failure_text(failure)
            self._state.record_deletion(role, scenario_time,
                                        state.deletion_id if state else None)
            self._deletion_states[role] = state
            return self._erasure_result(f"s{index}-{role}-delete", role, seq, scenario_time,
                                        f"delete {tenant.user_id}", None, state, error)

        results = await asyncio.gather(*(delete_one(role) for role in step.tenants))
        return StepWork(observations=[o for o, _ in results],
                        verdicts=[v for _, v in results if v is not None])

    def _erasure_result(self, case_id: str, role: Role, seq: int, scenario_time: datetime,
                        request: str, domain: str | None, state: DeletionState | None,
                        error: str | None) -> tuple[Observation, CaseVerdict | None]:
        """The observation of an erasure request and, when it failed, its verdict (the
        later inspections decide whether anything was erased)."""
        observation = Observation(
            seq=seq, role=role, kind="delete", domain=domain, request=request,
            reply=state.status if state else None,
            status="ok" if state else "target-error", error=error,
            http_status=state.http_status if state else None,
            latency_ms=state.latency_ms if state else None, scenario_time=scenario_time,
            wall_time=state.wall_time if state else workflow.now())
        verdict = None if state else deletion_verdict(
            case_id, role, self._tenants[role].alias, None, error, timedelta(0), timedelta(0),
            store="deletion-request")
        return observation, verdict

    async def _await_deletion(self, index: int, step: AwaitDeletionStep) -> StepWork:
        scenario = self._input.scenario
        deadline = step.deadline or scenario.deletion_sla
        target = self._input.target

        async def await_one(role: Role) -> tuple[list[Observation], CaseVerdict]:
            tenant_state = self._state.tenants[role]
            identity = self._tenants[role]
            requested = tenant_state.deletion_requested_at or self._scenario_now()
            user_id = (tenant_state.deleted_identities or [identity.user_id or ""])[-1]
            state = self._deletion_states.get(role)
            observations: list[Observation] = []
            error = None if state else "the deletion request itself failed"
            while state is not None and not state.done and not state.failed:
                if target.operations.deletion_status is None or self._cancel_reason:
                    break
                if self._scenario_now() - requested >= deadline:
                    break
                remaining = deadline - (self._scenario_now() - requested)
                await self._sleep(min(step.poll, remaining), f"poll deletion of "
                                  f"{tenant_state.alias}")
                seq, scenario_time = self._next_seq(), self._scenario_now()
                try:
                    state = await self._activity(
                        deletion_status,
                        DeleteRequest(target=target, phone=identity.phone, user_id=user_id,
                                      deletion_id=tenant_state.deletion_id,
                                      scenario_now=_iso(scenario_time)),
                        start_to_close_timeout=target_timeout(target.timeout),
                        retry_policy=TARGET_RETRY,
                        summary=f"deletion status {tenant_state.alias}",
                    )
                    observations.append(Observation(
                        seq=seq, role=role, kind="deletion-status", request=user_id,
                        reply=state.status, http_status=state.http_status,
                        latency_ms=state.latency_ms, scenario_time=scenario_time,
                        wall_time=state.wall_time))
                except CALL_ERRORS as failure:
                    observations.append(Observation(
                        seq=seq, role=role, kind="deletion-status", request=user_id,
                        status="target-error", error=_failure_text(failure),
                        scenario_time=scenario_time, wall_time=workflow.now()))
            elapsed = self._scenario_now() - requested
            verdict = deletion_verdict(f"s{index}-{role}-deletion", role, tenant_state.alias,
                                       state, error, deadline, elapsed)
            return observations, verdict

        results = await asyncio.gather(*(await_one(role) for role in step.tenants))
        return StepWork(observations=[o for obs, _ in results for o in obs],
                        verdicts=[v for _, v in results])

    async def _inspect(self, index: int, step: InspectStep) -> StepWork:
        target = self._input.target
        if step.stores:  # inspect only the named stores
            target = target.model_copy(update={
                "stores": [s for s in target.stores if s.name in step.stores]})
        now = self._scenario_now()
        probed = [store for store in target.stores if store.probe is not None]

        async def inspect_one(role: Role) -> tuple[InspectCase, list[StoreRead]]:
            case = self._state.inspect_case(f"s{index}-{role}", role, now,
                                            self._input.scenario.update_grace)
            if not case.identities:
                reads = [StoreRead(store=s.name, mode="scope", key="?", status="error",
                                   error="the tenant has no identity to read by")
                         for s in probed]
                return case, reads
            try:
                reads = await self._activity(
                    inspect_stores,
                    InspectRequest(target=target, identities=case.identities,
                                   needles=[n.text for n in case.needles], watch=case.watch(),
                                   scenario_now=_iso(now), keep_unmatched=case.deleted,
                                   erased=[n.text for n in case.needles
                                           if n.origin == "deleted"]),
                    start_to_close_timeout=inspect_timeout(target, len(case.needles) + 1),
                    heartbeat_timeout=HEARTBEAT_TIMEOUT,
                    retry_policy=INSPECT_RETRY,
                    summary=f"inspect {len(probed)} store(s) for {case.tenant_alias}",
                )
            except CALL_ERRORS as failure:  # fail closed: unread is not absent
                reads = [StoreRead(store=s.name, mode="scope", key=",".join(case.identities),
                                   status="error", error=_failure_text(failure))
                         for s in probed]
            return case, reads

        results = await asyncio.gather(*(inspect_one(role) for role in step.tenants))
        observations = [
            Observation(
                seq=self._next_seq(), role=case.role, kind="inspect", domain=None,
                request=f"{read.store} {read.mode} {read.key}",
                reply=f"{read.total} record(s)" if read.status == "ok" else None,
                status="ok" if read.status == "ok" else "target-error", error=read.error,
                latency_ms=read.latency_ms, scenario_time=now, wall_time=workflow.now())
            for case, reads in results for read in reads
        ]
        return StepWork(observations=observations,
                        inspections=[case for case, _ in results],
                        reads={case.case_id: reads for case, reads in results})

    # -- plumbing ------------------------------------------------------------------------

    async def _activity(self, activity: Any, arg: Any = None, *,
                        args: list[Any] | None = None, **options: Any) -> Any:
        """Every target call goes through here; the cohort workflow batches them instead."""
        if args is not None:
            return await workflow.execute_activity(activity, args=args, **options)
        return await workflow.execute_activity(activity, arg, **options)

    async def _local_activity(self, activity: Any, arg: Any = None, *,
                              args: list[Any] | None = None, **options: Any) -> Any:
        """Every recording goes through here; the cohort workflow batches them instead."""
        if args is not None:
            return await workflow.execute_local_activity(activity, args=args, **options)
        return await workflow.execute_local_activity(activity, arg, **options)

    async def _converse(self, role: Role, messages: list[Message]) -> list[Observation]:
        """Send one tenant's messages in order (one activity); one observation each."""
        if not messages:
            return []
        tenant = self._tenants[role]
        scenario_time = self._scenario_now()
        seqs = [self._next_seq() for _ in messages]

        def observation(i: int, **fields: Any) -> Observation:
            message = messages[i]
            return Observation(seq=seqs[i], role=role, kind=message.kind, domain=message.domain,
                               case_id=message.case_id, request=message.text,
                               scenario_time=scenario_time, **fields)

        if tenant.user_id is None:
            return [observation(i, status="target-error", wall_time=workflow.now(),
                                error="tenant could not be registered; nothing was sent")
                    for i in range(len(messages))]
        target = self._input.target
        start_to_close, heartbeat = converse_timeouts(target, len(messages))
        try:
            replies = await self._activity(
                converse,
                ConverseRequest(target=target, phone=tenant.phone, user_id=tenant.user_id,
                                messages=[m.text for m in messages],
                                scenario_now=_iso(scenario_time),
                                questions=[i for i, m in enumerate(messages)
                                           if m.kind == "probe"]),
                start_to_close_timeout=start_to_close, heartbeat_timeout=heartbeat,
                retry_policy=RESUMABLE_RETRY,
                summary=f"{messages[0].kind} {tenant.alias}: {len(messages)} message(s)",
            )
        except CALL_ERRORS as error:
            text = _failure_text(error)
            return [observation(i, status="target-error", error=text, wall_time=workflow.now())
                    for i in range(len(messages))]
        return [observation(r.index, reply=r.reply, context=r.context, status=r.status,
                            http_status=r.http_status, error=r.error, latency_ms=r.latency_ms,
                            wall_time=r.wall_time, stages=r.stages, cost=r.cost,
                            tokens=r.tokens)
                for r in replies]

    async def _sleep(self, scenario_duration: timedelta, summary: str) -> None:
        """A durable timer that an operator may end early (skip_wait, cancel). A skipped
        wait still moves scenario time on by its full length."""
        if self._cancel_reason:
            return
        clock = self._input.clock
        real = clock.real_wait(scenario_duration)
        wake_at = workflow.now() + real
        self._wake_at, self._skip_requested = wake_at, False
        try:
            await workflow.wait_condition(
                lambda: self._skip_requested or self._cancel_reason is not None,
                timeout=real, timeout_summary=summary)
            remaining = max(timedelta(0), wake_at - workflow.now())
            if self._skip_requested:
                now = workflow.now()
                self._skipped += clock.scenario_now(now, now + remaining) - now
                workflow.logger.info("wait skipped by an operator: %s (%s of it left)",
                                     summary, remaining)
        except TimeoutError:
            pass  # the wait ran its course
        finally:
            self._wake_at, self._skip_requested = None, False

    async def _record(self, index: int, kind: str, label: str, started_scenario: datetime,
                      started_wall: datetime, work: StepWork) -> StepOutcome:
        # Recording is a short, idempotent database write: a local activity (no server round
        # trip to schedule it) that simply runs again if the workflow task is retried.
        return await self._local_activity(
            record_step,
            StepRecord(
                run_id=self._input.run_id, pair_index=self._input.pair_index,
                step_index=index, kind=kind, label=label, stage=stage_of(index, label),
                scenario_started=started_scenario, scenario_finished=self._scenario_now(),
                wall_started=started_wall, wall_finished=workflow.now(),
                observations=work.observations, cases=work.cases,
                inspections=work.inspections, reads=work.reads,
                stores=list(self._input.target.stores) if work.inspections else [],
                verdicts=work.verdicts,
                latency_budget_ms=self._input.scenario.latency_budget / timedelta(milliseconds=1),
                tenants=list(self._tenants.values()),
            ),
            start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
            summary=f"record step {index} ({kind})",
        )

    async def _queue_for_review(self, index: int, produced: StepWork,
                                outcome: StepOutcome) -> None:
        """Failed answers go to the review queue; queueing trouble never stops a lifecycle."""
        items = review_items(self._input.run_id, self._input.pair_index, index, self._stage,
                             produced.cases, produced.observations, outcome.verdicts)
        if not items:
            return
        try:
            await workflow.execute_activity(
                queue_for_review, args=[self._input.review_queue, items],
                start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
                summary=f"queue {len(items)} reply(ies) for review")
        except CALL_ERRORS as error:
            workflow.logger.warning("could not queue replies for review: %s", error)

    def _show_details(self) -> None:
        """The pair's verdict so far on its Web UI page (no history: a query answers it)."""
        verdict = ("cancelled" if self._cancel_reason else "fail" if self._failures else
                   "inconclusive" if self._inconclusive else
                   "running" if self._step_kind not in ("done", "cancelled") else
                   "pass" if self._cases_passed == self._cases else "inconclusive")
        workflow.set_current_details(
            f"**{verdict.upper()}**: {self._cases_passed}/{self._cases} cases passed · "
            f"{self._failures} failure(s) · {self._inconclusive} inconclusive · stage "
            f"{self._stage or '-'}")

    async def _tally(self, verdicts: list[CaseVerdict]) -> None:
        for verdict in verdicts:
            self._cases += 1
            self._cases_passed += verdict.passed
            self._inconclusive += verdict.outcome == "inconclusive"
            self._failures += sum(1 for f in verdict.findings if f.outcome == "fail")
            for finding in verdict.findings:
                if len(self._problems) < 200:
                    self._problems.append({
                        "case": verdict.case_id, "tenant": verdict.tenant_alias,
                        "stage": self._stage, "invariant": finding.invariant,
                        "outcome": finding.outcome, "reason": finding.reason,
                        "store": finding.store})
        if verdicts:
            self._show_details()
        if not self._input.search_attributes:
            return
        current = (attributes.FAIL if self._failures else
                   attributes.INCONCLUSIVE if self._inconclusive else attributes.RUNNING)
        if current == self._verdict_attribute:
            return
        self._verdict_attribute = current
        workflow.upsert_search_attributes([attributes.VERDICT.value_set(current)])
        parent = workflow.info().parent
        if current == attributes.FAIL and parent is not None:
            try:  # the run's verdict turns "fail" now, not when this pair ends days later
                await workflow.get_external_workflow_handle(parent.workflow_id).signal(
                    "pair_failing", self._input.pair_index)
            except Exception as error:
                workflow.logger.warning("could not tell the suite about a failure: %s", error)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _scenario_now(self) -> datetime:
        return self._input.clock.scenario_now(self._input.clock_origin,
                                              workflow.now()) + self._skipped
