"""What each step of a timeline does, given the lifecycle it belongs to (lifecycle.py):
register, write, update, probe, forget or delete, await a deletion, inspect the stores,
wait. Each returns the step's work for recording and judging."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    from memlife.contracts import (
        DeleteRequest,
        ForgetRequest,
        InspectRequest,
        MaintainRequest,
        PairInput,
        RegisterRequest,
    )
    from memlife.rules import adversarial
    from memlife.rules.durations import format_duration
    from memlife.rules.evidence import (
        DeletionState,
        Observation,
        ObservationKind,
        StoreRead,
    )
    from memlife.rules.operations import template_variables
    from memlife.rules.pairs import TenantIdentity
    from memlife.rules.request_verdicts import deletion_verdict, maintenance_verdict
    from memlife.rules.scenario import (
        AwaitDeletionStep,
        DeleteStep,
        InspectStep,
        MaintainStep,
        ProbeStep,
        Role,
        UpdateStep,
        WaitStep,
        WriteStep,
    )
    from memlife.rules.state import PairState, other, pick
    from memlife.rules.verdicts import CaseVerdict, InspectCase, ProbeCase
    from memlife.workflows.calls import CALL_ERRORS, Calls, failure_text, iso
    from memlife.workflows.options import (
        HEARTBEAT_TIMEOUT,
        INSPECT_RETRY,
        RECORD_RETRY,
        RECORD_TIMEOUT,
        TARGET_RETRY,
        inspect_timeout,
        target_timeout,
    )


@dataclass
class Message:
    text: str
    kind: ObservationKind
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
    staged_reads: dict[str, str] = field(default_factory=dict)  # case id -> stage key


class Lifecycle(Protocol):
    """What a step uses of the lifecycle it runs in (lifecycle.py: LifecycleRunner)."""

    input: PairInput
    calls: Calls
    state: PairState
    tenants: dict[Role, TenantIdentity]
    deletion_states: dict[Role, DeletionState | None]
    cancel_reason: str | None

    def next_seq(self) -> int: ...

    def scenario_now(self) -> datetime: ...

    async def sleep(self, scenario_duration: timedelta, summary: str) -> None: ...

    async def converse(
        self, role: Role, messages: list[Message], space: str | None = None
    ) -> list[Observation]: ...


async def wait(run: Lifecycle, step: WaitStep) -> StepWork:
    await run.sleep(step.duration, f"{step.label or 'wait'} {format_duration(step.duration)}")
    return StepWork()


async def register(run: Lifecycle, roles: tuple[Role, ...]) -> StepWork:
    observations = await asyncio.gather(*(_register_one(run, role) for role in roles))
    await run.calls.local_activity(
        contracts.RECORD_TENANTS,
        (run.input.run_id, run.input.pair_index, list(run.tenants.values())),
        start_to_close_timeout=RECORD_TIMEOUT,
        retry_policy=RECORD_RETRY,
        summary="record tenants",
    )
    return StepWork(observations=list(observations))


async def _register_one(run: Lifecycle, role: Role) -> Observation:
    tenant = run.tenants[role]
    seq = run.next_seq()
    scenario_time = run.scenario_now()
    target = run.input.target
    try:
        result = await run.calls.activity(
            contracts.REGISTER_TENANT,
            RegisterRequest(
                target=target,
                phone=tenant.phone,
                tenant_alias=tenant.alias,
                scenario_now=iso(scenario_time),
                run_id=run.input.run_id,
            ),
            start_to_close_timeout=target_timeout(target.timeout),
            retry_policy=TARGET_RETRY,
            summary=f"register {tenant.alias}",
        )
    except CALL_ERRORS as error:
        run.tenants[role] = tenant.model_copy(update={"user_id": None})
        return Observation(
            seq=seq,
            role=role,
            kind="register",
            request=tenant.phone,
            status="target-error",
            error=failure_text(error),
            scenario_time=scenario_time,
            wall_time=run.calls.now(),
        )
    # The phone the target took, when the one asked for was taken (activities/target.py).
    phone = result.phone or tenant.phone
    run.tenants[role] = tenant.model_copy(update={"user_id": result.user_id, "phone": phone})
    run.state.record_registration(role, result.user_id)
    return Observation(
        seq=seq,
        role=role,
        kind="register",
        request=phone,
        reply=result.user_id,
        http_status=result.status or None,
        latency_ms=result.latency_ms,
        scenario_time=scenario_time,
        wall_time=result.wall_time,
        traceparent=result.traceparent,
    )


async def write(run: Lifecycle, step: WriteStep) -> StepWork:
    scenario = run.input.scenario

    async def write_tenant(role: Role) -> list[Observation]:
        tenant = run.state.pair.tenant(role)
        language = scenario.language_of(tenant)
        domains = [d for d in scenario.step_domains(step) if d in tenant.facts]
        messages = [
            Message(
                pick(
                    scenario.domains[d].templates[language].statement, run.input.pair_index + i
                ).format(value=tenant.facts[d].value),
                "write",
                d,
            )
            for i, d in enumerate(domains)
        ]
        if step.kind == "poison":  # addressed to every user
            turns = adversarial.templates("poison", language, scenario.adversarial)
            messages = [
                Message(adversarial.poison(pick(turns, i), m.text), m.kind, m.domain)
                for i, m in enumerate(messages)
            ]
        observations = await run.converse(role, messages)
        for domain, observation in zip(domains, observations, strict=True):
            run.state.record_write(role, domain, confirmed=observation.status == "ok")
            if step.kind == "poison":
                run.state.record_poison(role, domain)
        return observations

    per_tenant = await asyncio.gather(*(write_tenant(role) for role in step.tenants))
    return StepWork(observations=[o for items in per_tenant for o in items])


async def update(run: Lifecycle, step: UpdateStep) -> StepWork:
    scenario = run.input.scenario

    async def update_tenant(role: Role) -> list[Observation]:
        tenant = run.state.pair.tenant(role)
        language = scenario.language_of(tenant)
        messages = [
            Message(
                pick(
                    scenario.domains[d].templates[language].updates(), run.input.pair_index + i
                ).format(value=run.state.next_update_value(role, d)),
                "update",
                d,
            )
            for i, d in enumerate(step.domains)
        ]
        observations = await run.converse(role, messages)
        for domain, observation in zip(step.domains, observations, strict=True):
            run.state.record_update(
                role, domain, observation.scenario_time, confirmed=observation.status == "ok"
            )
        return observations

    per_tenant = await asyncio.gather(*(update_tenant(role) for role in step.tenants))
    return StepWork(observations=[o for items in per_tenant for o in items])


async def probe(run: Lifecycle, index: int, step: ProbeStep) -> StepWork:
    scenario = run.input.scenario
    now = run.scenario_now()

    async def probe_tenant(role: Role) -> tuple[list[ProbeCase], list[Observation]]:
        tenant = run.state.pair.tenant(role)
        language = scenario.language_of(tenant)
        phrases = scenario.abstain_phrases.get(language, [])
        cases: list[ProbeCase] = []
        turns = (
            adversarial.templates(step.kind, language, scenario.adversarial)
            if (step.kind in ("spoof", "extract"))
            else []
        )
        if step.kind == "extract":  # about other users at large, not one domain
            for t_index, text in enumerate(turns):
                cases.append(
                    run.state.probe_case(
                        f"s{index}-{role}-extract-{t_index}",
                        step.kind,
                        role,
                        "*",
                        text,
                        now,
                        scenario.update_grace,
                        phrases,
                        scenario.space_grace,
                    )
                )
        for domain in (
            []
            if step.kind == "extract"
            else run.state.probe_domains(step.kind, role, scenario.step_domains(step))
        ):
            questions = scenario.domains[domain].templates[language].question
            for q_index, question in enumerate(questions):
                if step.kind == "spoof":  # the partner's identity claimed in the message
                    partner = run.tenants[other(role)]
                    question = adversarial.spoof(
                        pick(turns, q_index),
                        partner.alias,
                        partner.phone,
                        partner.user_id or "",
                        question,
                    )
                cases.append(
                    run.state.probe_case(
                        f"s{index}-{role}-{domain}-q{q_index}",
                        step.kind,
                        role,
                        domain,
                        question,
                        now,
                        scenario.update_grace,
                        phrases,
                        scenario.space_grace,
                    )
                )
        observations = await run.converse(
            role, [Message(c.question, "probe", c.domain, c.case_id) for c in cases]
        )
        return cases, observations

    per_tenant = await asyncio.gather(*(probe_tenant(role) for role in step.tenants))
    return StepWork(
        cases=[c for cases, _ in per_tenant for c in cases],
        observations=[o for _, obs in per_tenant for o in obs],
    )


async def forget(run: Lifecycle, index: int, step: DeleteStep) -> StepWork:
    """Single-fact erasure: each (tenant, domain) through the target's forget operation."""
    target = run.input.target

    async def forget_one(role: Role, domain: str) -> tuple[Observation, CaseVerdict | None]:
        tenant = run.tenants[role]
        facts = run.state.tenants[role]
        value = facts.current[domain][0]
        # Every value the fact had: a service that only adds keeps the superseded ones too.
        values = facts.current[domain] + [text for text, _ in facts.superseded.get(domain, [])]
        seq, scenario_time = run.next_seq(), run.scenario_now()
        error = None
        state: DeletionState | None = None
        try:
            state = await run.calls.activity(
                contracts.FORGET_FACT,
                ForgetRequest(
                    target=target,
                    phone=tenant.phone,
                    user_id=tenant.user_id or "",
                    domain=domain,
                    value=value,
                    values=values,
                    scenario_now=iso(scenario_time),
                    run_id=run.input.run_id,
                ),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"forget {tenant.alias} {domain}",
            )
        except CALL_ERRORS as failure:
            error = failure_text(failure)
        # Fail closed: even an unconfirmed forget is then checked as if it had happened.
        run.state.record_forget(role, domain, scenario_time)
        return _erasure_result(
            run,
            f"s{index}-{role}-forget-{domain}",
            role,
            seq,
            scenario_time,
            f"forget {domain}",
            domain,
            state,
            error,
        )

    assert step.domains is not None
    results = await asyncio.gather(
        *(forget_one(role, domain) for role in step.tenants for domain in step.domains)
    )
    return StepWork(
        observations=[o for o, _ in results], verdicts=[v for _, v in results if v is not None]
    )


async def delete(run: Lifecycle, index: int, step: DeleteStep) -> StepWork:
    async def delete_one(role: Role) -> tuple[Observation, CaseVerdict | None]:
        tenant = run.tenants[role]
        seq = run.next_seq()
        scenario_time = run.scenario_now()
        target = run.input.target
        state: DeletionState | None = None
        error = None
        if tenant.user_id is None:
            error = "tenant was never registered; nothing to delete"
        else:
            try:
                state = await run.calls.activity(
                    contracts.DELETE_TENANT,
                    DeleteRequest(
                        target=target,
                        phone=tenant.phone,
                        user_id=tenant.user_id,
                        scenario_now=iso(scenario_time),
                        run_id=run.input.run_id,
                    ),
                    start_to_close_timeout=target_timeout(target.timeout),
                    retry_policy=TARGET_RETRY,
                    summary=f"delete {tenant.alias}",
                )
            except CALL_ERRORS as failure:
                error = failure_text(failure)
        run.state.record_deletion(role, scenario_time, state.deletion_id if state else None)
        run.deletion_states[role] = state
        return _erasure_result(
            run,
            f"s{index}-{role}-delete",
            role,
            seq,
            scenario_time,
            f"delete {tenant.user_id}",
            None,
            state,
            error,
        )

    results = await asyncio.gather(*(delete_one(role) for role in step.tenants))
    return StepWork(
        observations=[o for o, _ in results], verdicts=[v for _, v in results if v is not None]
    )


def _erasure_result(
    run: Lifecycle,
    case_id: str,
    role: Role,
    seq: int,
    scenario_time: datetime,
    request: str,
    domain: str | None,
    state: DeletionState | None,
    error: str | None,
) -> tuple[Observation, CaseVerdict | None]:
    """The observation of an erasure request and, when it failed, its verdict (the
    later inspections decide whether anything was erased)."""
    observation = Observation(
        seq=seq,
        role=role,
        kind="delete",
        domain=domain,
        request=request,
        reply=state.status if state else None,
        status="ok" if state else "target-error",
        error=error,
        http_status=state.http_status if state else None,
        latency_ms=state.latency_ms if state else None,
        scenario_time=scenario_time,
        wall_time=state.wall_time if state else run.calls.now(),
        traceparent=state.traceparent if state else None,
    )
    verdict = (
        None
        if state
        else deletion_verdict(
            case_id,
            role,
            run.tenants[role].alias,
            None,
            error,
            timedelta(0),
            timedelta(0),
            store="deletion-request",
        )
    )
    return observation, verdict


async def maintain(run: Lifecycle, index: int, step: MaintainStep) -> StepWork:
    """The target's maintenance, in order: an operation that names a tenant ({user_id},
    {phone}) runs for each of the step's tenants, one that names none runs once."""
    target = run.input.target
    observations: list[Observation] = []
    verdicts: list[CaseVerdict] = []
    for name in step.operations or list(target.operations.maintain):
        per_tenant = any(
            template_variables(operation) & {"user_id", "phone"}
            for operation in target.operations.sequence(f"maintain.{name}")
        )
        roles = step.tenants if per_tenant else step.tenants[:1]

        async def maintain_one(
            role: Role,
            name: str = name,
        ) -> tuple[Observation, CaseVerdict | None]:
            tenant = run.tenants[role]
            user_id = tenant.user_id or (run.state.tenants[role].deleted_identities or [""])[-1]
            seq, scenario_time = run.next_seq(), run.scenario_now()
            try:
                result = await run.calls.activity(
                    contracts.MAINTAIN_TARGET,
                    MaintainRequest(
                        target=target,
                        operation=name,
                        phone=tenant.phone,
                        user_id=user_id,
                        scenario_now=iso(scenario_time),
                        run_id=run.input.run_id,
                    ),
                    start_to_close_timeout=target_timeout(target.timeout),
                    retry_policy=TARGET_RETRY,
                    summary=f"maintain {name}",
                )
            except CALL_ERRORS as failure:
                error = failure_text(failure)
                return (
                    Observation(
                        seq=seq,
                        role=role,
                        kind="maintain",
                        request=name,
                        status="target-error",
                        error=error,
                        scenario_time=scenario_time,
                        wall_time=run.calls.now(),
                    ),
                    maintenance_verdict(
                        f"s{index}-{role}-maintain-{name}", role, tenant.alias, name, error
                    ),
                )
            return Observation(
                seq=seq,
                role=role,
                kind="maintain",
                request=name,
                reply=result.status,
                http_status=result.http_status,
                latency_ms=result.latency_ms,
                scenario_time=scenario_time,
                wall_time=result.wall_time,
                traceparent=result.traceparent,
            ), None

        # One operation after another, in the order named: a compaction after a reindex
        # is not the same as before it.
        results = await asyncio.gather(*(maintain_one(role) for role in roles))
        observations.extend(o for o, _ in results)
        verdicts.extend(v for _, v in results if v is not None)
    return StepWork(observations=observations, verdicts=verdicts)


async def await_deletion(run: Lifecycle, index: int, step: AwaitDeletionStep) -> StepWork:
    scenario = run.input.scenario
    deadline = step.deadline or scenario.deletion_sla
    target = run.input.target

    async def await_one(role: Role) -> tuple[list[Observation], CaseVerdict]:
        tenant_state = run.state.tenants[role]
        identity = run.tenants[role]
        requested = tenant_state.deletion_requested_at or run.scenario_now()
        user_id = (tenant_state.deleted_identities or [identity.user_id or ""])[-1]
        state = run.deletion_states.get(role)
        observations: list[Observation] = []
        error = None if state else "the deletion request itself failed"
        while state is not None and not state.done and not state.failed:
            if target.operations.deletion_status is None or run.cancel_reason:
                break
            if run.scenario_now() - requested >= deadline:
                break
            remaining = deadline - (run.scenario_now() - requested)
            await run.sleep(min(step.poll, remaining), f"poll deletion of {tenant_state.alias}")
            seq, scenario_time = run.next_seq(), run.scenario_now()
            try:
                state = await run.calls.activity(
                    contracts.DELETION_STATUS,
                    DeleteRequest(
                        target=target,
                        phone=identity.phone,
                        user_id=user_id,
                        deletion_id=tenant_state.deletion_id,
                        scenario_now=iso(scenario_time),
                        run_id=run.input.run_id,
                    ),
                    start_to_close_timeout=target_timeout(target.timeout),
                    retry_policy=TARGET_RETRY,
                    summary=f"deletion status {tenant_state.alias}",
                )
                observations.append(
                    Observation(
                        seq=seq,
                        role=role,
                        kind="deletion-status",
                        request=user_id,
                        reply=state.status,
                        http_status=state.http_status,
                        latency_ms=state.latency_ms,
                        scenario_time=scenario_time,
                        wall_time=state.wall_time,
                        traceparent=state.traceparent,
                    )
                )
            except CALL_ERRORS as failure:
                observations.append(
                    Observation(
                        seq=seq,
                        role=role,
                        kind="deletion-status",
                        request=user_id,
                        status="target-error",
                        error=failure_text(failure),
                        scenario_time=scenario_time,
                        wall_time=run.calls.now(),
                    )
                )
        elapsed = run.scenario_now() - requested
        verdict = deletion_verdict(
            f"s{index}-{role}-deletion", role, tenant_state.alias, state, error, deadline, elapsed
        )
        return observations, verdict

    results = await asyncio.gather(*(await_one(role) for role in step.tenants))
    return StepWork(
        observations=[o for obs, _ in results for o in obs], verdicts=[v for _, v in results]
    )


async def inspect(run: Lifecycle, index: int, step: InspectStep) -> StepWork:
    target = run.input.target
    if step.stores:  # inspect only the named stores
        target = target.model_copy(
            update={"stores": [s for s in target.stores if s.name in step.stores]}
        )
    now = run.scenario_now()
    probed = [store for store in target.stores if store.probe is not None]
    # The reads' records go to the recorder, and history keeps their counts (the records
    # were most of a cohort's history: bench/histories.py). Runs started before: whole.
    staged = run.calls.patched("reads-by-reference")
    stage_keys: dict[str, str] = {}

    async def inspect_one(role: Role) -> tuple[InspectCase, list[StoreRead]]:
        case = run.state.inspect_case(
            f"s{index}-{role}",
            role,
            now,
            run.input.scenario.update_grace,
            run.input.scenario.space_grace,
        )
        stage_key = (
            f"{run.input.run_id}/{run.input.pair_index}/{index}/{case.case_id}" if staged else None
        )
        if not case.identities:
            reads = [
                StoreRead(
                    store=s.name,
                    mode="scope",
                    key="?",
                    status="error",
                    error="the tenant has no identity to read by",
                )
                for s in probed
            ]
            return case, reads
        try:
            reads = await run.calls.activity(
                contracts.INSPECT_STORES,
                InspectRequest(
                    target=target,
                    identities=case.identities,
                    needles=[n.text for n in case.needles],
                    watch=case.watch(),
                    scenario_now=iso(now),
                    run_id=run.input.run_id,
                    keep_unmatched=case.deleted,
                    erased=[n.text for n in case.needles if n.origin == "deleted"],
                    stage_key=stage_key,
                ),
                start_to_close_timeout=inspect_timeout(target, len(case.needles) + 1),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=INSPECT_RETRY,
                summary=f"inspect {len(probed)} store(s) for {case.tenant_alias}",
            )
        except CALL_ERRORS as failure:  # fail closed: unread is not absent
            reads = [
                StoreRead(
                    store=s.name,
                    mode="scope",
                    key=",".join(case.identities),
                    status="error",
                    error=failure_text(failure),
                )
                for s in probed
            ]
            return case, reads
        if stage_key is not None:
            stage_keys[case.case_id] = stage_key
        return case, reads

    results = await asyncio.gather(*(inspect_one(role) for role in step.tenants))
    observations = [
        Observation(
            seq=run.next_seq(),
            role=case.role,
            kind="inspect",
            domain=None,
            request=f"{read.store} {read.mode} {read.key}",
            reply=f"{read.total} record(s)" if read.status == "ok" else None,
            status="ok" if read.status == "ok" else "target-error",
            error=read.error,
            latency_ms=read.latency_ms,
            scenario_time=now,
            # The workflow clock is the skipped clock in skip mode, not when the read was made.
            wall_time=read.wall_time or run.calls.now(),
            traceparent=read.traceparent,
        )
        for case, reads in results
        for read in reads
    ]
    return StepWork(
        observations=observations,
        inspections=[case for case, _ in results],
        reads={case.case_id: reads for case, reads in results},
        staged_reads=stage_keys,
    )
