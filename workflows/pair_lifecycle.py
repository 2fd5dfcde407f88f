"""PairLifecycleWorkflow: one pair of tenants through the scenario's timeline.

Decides what happens when; every target call and every database write is an activity.
A target call that fails after its retries becomes an inconclusive observation, so a
broken target can never make a check pass, and never crashes the lifecycle either.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.record import record_step, record_tenants
    from activities.target import register_tenant, say
    from memlife.durations import format_duration
    from memlife.lifecycle import (
        CaseVerdict,
        Observation,
        PairInput,
        PairResult,
        PairState,
        ProbeCase,
        RegisterRequest,
        SayRequest,
        StepRecord,
        TenantIdentity,
        pick,
    )
    from memlife.scenario import ProbeStep, Role, WaitStep, WriteStep
    from workflows.options import RECORD_RETRY, RECORD_TIMEOUT, TARGET_RETRY, target_timeout


def _failure_text(error: ActivityError) -> str:
    cause = error.cause
    while cause is not None and not isinstance(cause, ApplicationError) and cause.cause:
        cause = cause.cause
    if isinstance(cause, ApplicationError):
        return f"{cause.type}: {cause.message}"
    return str(cause or error)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@workflow.defn(name="PairLifecycleWorkflow")
class PairLifecycleWorkflow:
    def __init__(self) -> None:
        self._seq = 0
        self._step_index = -1
        self._step_kind = "starting"
        self._steps_total = 0
        self._cases = 0
        self._cases_passed = 0
        self._inconclusive = 0
        self._failures = 0

    @workflow.query
    def progress(self) -> dict[str, Any]:
        return {
            "step": self._step_index,
            "steps": self._steps_total,
            "kind": self._step_kind,
            "cases": self._cases,
            "cases_passed": self._cases_passed,
            "failures": self._failures,
            "inconclusive": self._inconclusive,
        }

    @workflow.run
    async def run(self, pair_input: PairInput) -> PairResult:
        self._input = pair_input
        scenario = pair_input.scenario
        self._steps_total = len(scenario.timeline)
        self._state = PairState(scenario.pairs[0])
        self._tenants: dict[Role, TenantIdentity] = {t.role: t for t in pair_input.tenants}

        await self._register()
        for index, step in enumerate(scenario.timeline):
            self._step_index, self._step_kind = index, step.step
            started_scenario, started_wall = self._scenario_now(), workflow.now()
            observations: list[Observation] = []
            cases: list[ProbeCase] = []
            if isinstance(step, WaitStep):
                await workflow.sleep(
                    pair_input.clock.real_wait(step.duration),
                    summary=f"{step.label or 'wait'} {format_duration(step.duration)}",
                )
            elif isinstance(step, WriteStep):
                observations = await self._write(step)
            elif isinstance(step, ProbeStep):
                cases, observations = await self._probe(index, step)
            verdicts = await self._record(index, step.step, step.label, started_scenario,
                                          started_wall, observations, cases)
            self._tally(verdicts)
        self._step_kind = "done"
        return PairResult(pair_index=pair_input.pair_index, cases=self._cases,
                          cases_passed=self._cases_passed, inconclusive=self._inconclusive,
                          failures=self._failures)

    # -- steps ---------------------------------------------------------------------------

    async def _register(self) -> None:
        started_scenario, started_wall = self._scenario_now(), workflow.now()
        observations = await asyncio.gather(
            *(self._register_one(role) for role in ("a", "b"))
        )
        await workflow.execute_activity(
            record_tenants,
            args=[self._input.run_id, self._input.pair_index, list(self._tenants.values())],
            start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
            summary="record tenants",
        )
        await self._record(-1, "register", "", started_scenario, started_wall,
                           list(observations), [])

    async def _register_one(self, role: Role) -> Observation:
        tenant = self._tenants[role]
        seq = self._next_seq()
        scenario_time = self._scenario_now()
        target = self._input.target
        try:
            result = await workflow.execute_activity(
                register_tenant,
                RegisterRequest(target=target, phone=tenant.phone, tenant_alias=tenant.alias,
                                scenario_now=_iso(scenario_time)),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"register {tenant.alias}",
            )
        except ActivityError as error:
            return Observation(seq=seq, role=role, kind="register", request=tenant.phone,
                               status="target-error", error=_failure_text(error),
                               scenario_time=scenario_time, wall_time=workflow.now())
        self._tenants[role] = tenant.model_copy(update={"user_id": result.user_id})
        return Observation(seq=seq, role=role, kind="register", request=tenant.phone,
                           reply=result.user_id, http_status=result.status or None,
                           latency_ms=result.latency_ms, scenario_time=scenario_time,
                           wall_time=result.wall_time)

    async def _write(self, step: WriteStep) -> list[Observation]:
        scenario = self._input.scenario

        async def write_tenant(role: Role) -> list[Observation]:
            tenant = self._state.pair.tenant(role)
            templates = scenario.domains
            language = scenario.language_of(tenant)
            found: list[Observation] = []
            for domain_index, domain in enumerate(scenario.step_domains(step)):
                fact = tenant.facts.get(domain)
                if fact is None:
                    continue
                template = pick(templates[domain].templates[language].statement,
                                self._input.pair_index + domain_index)
                observation = await self._say(role, template.format(value=fact.value),
                                              "write", domain, None)
                self._state.record_write(role, domain, confirmed=observation.status == "ok")
                found.append(observation)
            return found

        per_tenant = await asyncio.gather(*(write_tenant(role) for role in step.tenants))
        return [o for observations in per_tenant for o in observations]

    async def _probe(self, index: int,
                     step: ProbeStep) -> tuple[list[ProbeCase], list[Observation]]:
        scenario = self._input.scenario

        async def probe_tenant(role: Role) -> list[tuple[ProbeCase, Observation]]:
            tenant = self._state.pair.tenant(role)
            language = scenario.language_of(tenant)
            found: list[tuple[ProbeCase, Observation]] = []
            for domain in scenario.step_domains(step):
                if domain not in tenant.facts:
                    continue
                questions = scenario.domains[domain].templates[language].question
                for question_index, question in enumerate(questions):
                    case_id = f"s{index}-{role}-{domain}-q{question_index}"
                    case = self._state.recall_case(case_id, role, domain, question)
                    observation = await self._say(role, question, "probe", domain, case_id)
                    found.append((case, observation))
            return found

        per_tenant = await asyncio.gather(*(probe_tenant(role) for role in step.tenants))
        pairs = [item for items in per_tenant for item in items]
        return [case for case, _ in pairs], [observation for _, observation in pairs]

    # -- plumbing ------------------------------------------------------------------------

    async def _say(self, role: Role, message: str, kind: str, domain: str | None,
                   case_id: str | None) -> Observation:
        tenant = self._tenants[role]
        seq = self._next_seq()
        scenario_time = self._scenario_now()
        base = {"seq": seq, "role": role, "kind": kind, "domain": domain, "case_id": case_id,
                "request": message, "scenario_time": scenario_time}
        if tenant.user_id is None:
            return Observation(**base, status="target-error", wall_time=workflow.now(),
                               error="tenant could not be registered; nothing was sent")
        target = self._input.target
        try:
            result = await workflow.execute_activity(
                say,
                SayRequest(target=target, phone=tenant.phone, user_id=tenant.user_id,
                           message=message, scenario_now=_iso(scenario_time)),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"{kind} {tenant.alias} {domain or ''}".strip(),
            )
        except ActivityError as error:
            return Observation(**base, status="target-error", error=_failure_text(error),
                               wall_time=workflow.now())
        return Observation(**base, reply=result.reply, http_status=result.status,
                           latency_ms=result.latency_ms, wall_time=result.wall_time)

    async def _record(self, index: int, kind: str, label: str, started_scenario: datetime,
                      started_wall: datetime, observations: list[Observation],
                      cases: list[ProbeCase]) -> list[CaseVerdict]:
        return await workflow.execute_activity(
            record_step,
            StepRecord(
                run_id=self._input.run_id, pair_index=self._input.pair_index,
                step_index=index, kind=kind, label=label,
                scenario_started=started_scenario, scenario_finished=self._scenario_now(),
                wall_started=started_wall, wall_finished=workflow.now(),
                observations=observations, cases=cases,
                latency_budget_ms=self._input.scenario.latency_budget / timedelta(milliseconds=1),
                tenants=list(self._tenants.values()),
            ),
            start_to_close_timeout=RECORD_TIMEOUT, retry_policy=RECORD_RETRY,
            summary=f"record step {index} ({kind})",
        )

    def _tally(self, verdicts: list[CaseVerdict]) -> None:
        for verdict in verdicts:
            self._cases += 1
            self._cases_passed += verdict.passed
            self._inconclusive += verdict.outcome == "inconclusive"
            self._failures += sum(1 for f in verdict.findings if f.outcome == "fail")

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _scenario_now(self) -> datetime:
        return self._input.clock.scenario_now(self._input.clock_origin, workflow.now())
