"""What the shared-space steps do, given the lifecycle they belong to (lifecycle.py):
create, join, leave or delete a space; state its facts inside it; ask about them inside
it. What each question must and must not get is the pair state's (rules/state.py)."""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    from memlife.contracts import PairInput, SpaceRequest
    from memlife.rules.evidence import Observation
    from memlife.rules.request_verdicts import unanswered_verdict
    from memlife.rules.scenario import ProbeStep, Role, SpaceAction, SpaceStep, WriteStep
    from memlife.rules.state import pick
    from memlife.rules.verdicts import CaseVerdict, ProbeCase
    from memlife.workflows.calls import CALL_ERRORS, failure_text, iso
    from memlife.workflows.options import TARGET_RETRY, target_timeout
    from memlife.workflows.steps import Lifecycle, Message, StepWork


def space_name(run_input: PairInput, space: str) -> str:
    """The name a space is created under: unique to the run and the pair."""
    return f"{space}-{run_input.run_id}-p{run_input.pair_index}"


async def change(run: Lifecycle, index: int, step: SpaceStep) -> StepWork:
    """Create (the first tenant creates; every tenant listed, creator included, joins where
    the target file can join), join, leave or delete. A request
    that got no answer is recorded as if it had happened (fail closed: what is checked
    afterwards assumes it) and leaves S1 unproven."""
    target = run.input.target
    state = run.state.spaces[step.space]
    name = space_name(run.input, step.space)
    observations: list[Observation] = []
    verdicts: list[CaseVerdict] = []

    async def one(role: Role, action: SpaceAction) -> str | None:
        tenant = run.tenants[role]
        seq, scenario_time = run.next_seq(), run.scenario_now()
        try:
            result = await run.calls.activity(
                contracts.SPACE_OPERATION,
                SpaceRequest(
                    target=target,
                    action=action,
                    phone=tenant.phone,
                    user_id=tenant.user_id or "",
                    space_name=name,
                    space_id=state.space_id or "",
                    scenario_now=iso(scenario_time),
                    run_id=run.input.run_id,
                ),
                start_to_close_timeout=target_timeout(target.timeout),
                retry_policy=TARGET_RETRY,
                summary=f"{action} space {step.space}",
            )
        except CALL_ERRORS as failure:
            error = failure_text(failure)
            observations.append(
                Observation(
                    seq=seq,
                    role=role,
                    kind="space",
                    request=f"{action} {step.space}",
                    status="target-error",
                    error=error,
                    scenario_time=scenario_time,
                    wall_time=run.calls.now(),
                )
            )
            verdicts.append(
                unanswered_verdict(
                    f"s{index}-{role}-{action}-{step.space}",
                    role,
                    tenant.alias,
                    "space",
                    "S1",
                    f"{action} {step.space}",
                    error,
                )
            )
            return None
        observations.append(
            Observation(
                seq=seq,
                role=role,
                kind="space",
                request=f"{action} {step.space}",
                reply=result.status,
                http_status=result.http_status,
                latency_ms=result.latency_ms,
                scenario_time=scenario_time,
                wall_time=result.wall_time,
                traceparent=result.traceparent,
            )
        )
        return result.space_id

    now = run.scenario_now()
    if step.action == "create":
        # Without create_space, a space comes to exist when something is said in it (a
        # Mem0 agent scope): it is known by its name.
        state.space_id = (
            await one(step.tenants[0], "create")
            if target.operations.create_space is not None
            else name
        ) or state.space_id
        # The creator joins too where joining is its own request (attaching a Letta
        # block to its agent): creating a space need not make one a member of it.
        joining = step.tenants if target.operations.join_space is not None else []
        for role in joining:
            await one(role, "join")
        run.state.record_space(step.space, "create", list(step.tenants), now, state.space_id)
    elif step.action == "delete":
        await one(step.tenants[0], "delete")
        run.state.record_space(step.space, "delete", list(step.tenants), now)
    else:
        await asyncio.gather(*(one(role, step.action) for role in step.tenants))
        run.state.record_space(step.space, step.action, list(step.tenants), now)
    return StepWork(observations=observations, verdicts=verdicts)


async def write(run: Lifecycle, step: WriteStep) -> StepWork:
    """The tenants state the space's facts inside it."""
    assert step.space is not None
    shared = step.space  # narrowed for the functions below
    scenario, space = run.input.scenario, run.state.spaces[shared]
    domains = scenario.spaces[step.space].domains

    async def write_tenant(role: Role) -> list[Observation]:
        language = scenario.language_of(run.state.pair.tenant(role))
        messages = [
            Message(
                pick(
                    scenario.domains[d].templates[language].statement, run.input.pair_index + i
                ).format(value=space.facts[d].value),
                "write",
                d,
            )
            for i, d in enumerate(domains)
        ]
        observations = await run.converse(role, messages, space=step.space)
        for domain, observation in zip(domains, observations, strict=True):
            if observation.status == "ok":
                run.state.record_space_write(shared, domain)
        return observations

    per_tenant = await asyncio.gather(*(write_tenant(role) for role in step.tenants))
    return StepWork(observations=[o for items in per_tenant for o in items])


async def probe(run: Lifecycle, index: int, step: ProbeStep) -> StepWork:
    """Questions about the space's facts, asked inside it."""
    assert step.space is not None
    shared = step.space  # narrowed for the functions below
    scenario, space = run.input.scenario, run.state.spaces[shared]
    now = run.scenario_now()

    async def probe_tenant(role: Role) -> tuple[list[ProbeCase], list[Observation]]:
        language = scenario.language_of(run.state.pair.tenant(role))
        cases = [
            run.state.space_case(
                f"s{index}-{role}-{shared}-{d}-q{q}",
                role,
                shared,
                d,
                question,
                now,
                scenario.space_grace,
            )
            for d in sorted(space.stated)
            for q, question in enumerate(scenario.domains[d].templates[language].question)
        ]
        observations = await run.converse(
            role,
            [Message(c.question, "probe", c.domain, c.case_id) for c in cases],
            space=step.space,
        )
        return cases, observations

    per_tenant = await asyncio.gather(*(probe_tenant(role) for role in step.tenants))
    return StepWork(
        cases=[c for cases, _ in per_tenant for c in cases],
        observations=[o for _, obs in per_tenant for o in obs],
    )
