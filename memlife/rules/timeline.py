"""The timeline walked before anything runs: steps that cannot work or would check nothing
are problems of the scenario file, found with the same pair state the lifecycle uses.
Pure."""

from __future__ import annotations

from datetime import UTC, datetime

from memlife.rules.scenario import (
    AwaitDeletionStep,
    DeleteStep,
    InspectStep,
    ProbeStep,
    RegisterStep,
    Role,
    Scenario,
    SpaceStep,
    UpdateStep,
    WaitStep,
    WriteStep,
)
from memlife.rules.state import PairState


def timeline_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Walk the timeline with the first pair's state; report steps that cannot work or
    would check nothing, with the reason and what to do."""
    problems: list[tuple[str, str]] = []
    state = PairState(scenario.pairs[0])
    now = datetime(2000, 1, 1, tzinfo=UTC)
    deleted_at: dict[Role, int] = {}
    for index, step in enumerate(scenario.timeline):
        path = f"timeline.{index}"
        tenants: list[Role] = list(getattr(step, "tenants", []))
        for role in tenants:
            tenant = state.tenants[role]
            needs_identity = isinstance(step, WriteStep | UpdateStep | ProbeStep | DeleteStep)
            if needs_identity and tenant.deleted and not tenant.registered:
                problems.append(
                    (
                        path,
                        f"tenant {role} was deleted at timeline."
                        f"{deleted_at[role]}; add a `register` step for it first",
                    )
                )
        if problems:
            return problems
        if isinstance(step, WaitStep):
            now += step.duration
        elif isinstance(step, SpaceStep):
            problem = _space_problem(state, step)
            if problem:
                problems.append((path, problem))
                return problems
            state.record_space(step.space, step.action, tenants, now)
        elif isinstance(step, WriteStep) and step.space:
            space = state.spaces[step.space]
            outsiders = [role for role in tenants if role not in space.members]
            if space.deleted or outsiders:
                problems.append(
                    (
                        path,
                        f"writes into space {step.space}, but "
                        + (
                            "it was deleted"
                            if space.deleted
                            else f"tenant {outsiders[0]} is not a member"
                        ),
                    )
                )
                return problems
            for domain in scenario.spaces[step.space].domains:
                state.record_space_write(step.space, domain)
        elif isinstance(step, ProbeStep) and step.space:
            if not state.spaces[step.space].stated:
                problems.append(
                    (
                        path,
                        f"this probe of space {step.space} would check "
                        "nothing: nothing was written into the space before it",
                    )
                )
        elif isinstance(step, WriteStep):
            for role in tenants:
                for domain in scenario.step_domains(step):
                    if domain in state.tenants[role].facts:
                        state.record_write(role, domain)
        elif isinstance(step, UpdateStep):
            for role in tenants:
                for domain in step.domains:
                    if domain not in state.tenants[role].current:
                        problems.append(
                            (path, f"updates {domain} of tenant {role} before it was written")
                        )
                        return problems
                    state.record_update(role, domain, now)
        elif isinstance(step, ProbeStep):
            domains = scenario.step_domains(step)
            if not any(state.probe_domains(step.kind, role, domains) for role in tenants):
                hint = {
                    "stale": "no probed domain was updated before this step",
                    "abstain": "no probed domain was stated by the partner alone",
                    "recall": "no probed domain was written before this step",
                }[step.kind]
                problems.append((path, f"this {step.kind} probe would check nothing: {hint}"))
        elif isinstance(step, DeleteStep) and step.domains:
            for role in tenants:
                for domain in step.domains:
                    if domain not in state.tenants[role].current:
                        problems.append(
                            (
                                path,
                                f"forgets {domain} of tenant {role}, which is "
                                "not a current fact of it",
                            )
                        )
                        return problems
                    state.record_forget(role, domain)
        elif isinstance(step, DeleteStep):
            for role in tenants:
                if state.tenants[role].deleted:
                    problems.append((path, f"tenant {role} is already deleted"))
                    return problems
                state.record_deletion(role, now)
                deleted_at[role] = index
        elif isinstance(step, AwaitDeletionStep):
            for role in tenants:
                if not state.tenants[role].deleted:
                    problems.append(
                        (
                            path,
                            f"awaits the deletion of tenant {role}, but no earlier step deletes it",
                        )
                    )
        elif isinstance(step, RegisterStep):
            for role in tenants:
                if not state.tenants[role].deleted:
                    problems.append(
                        (
                            path,
                            f"tenant {role} is registered already (register "
                            "re-registers a deleted tenant's phone)",
                        )
                    )
                state.tenants[role].registered = True
        elif isinstance(step, InspectStep):
            pass
    return problems


def _space_problem(state: PairState, step: SpaceStep) -> str | None:
    space = state.spaces[step.space]
    created = space.members or space.left_at or space.deleted
    if step.action == "create":
        return f"space {step.space} is created twice" if created else None
    if not created or space.deleted:
        return (
            f"space {step.space} is {'deleted' if space.deleted else 'not created'} "
            f"before this {step.action}"
        )
    if step.action == "join":
        inside = [r for r in step.tenants if r in space.members]
        return f"tenant {inside[0]} is already a member of {step.space}" if inside else None
    if step.action == "leave":
        outside = [r for r in step.tenants if r not in space.members]
        return f"tenant {outside[0]} is not a member of {step.space}" if outside else None
    return None


def stage_of(step_index: int, label: str) -> str:
    return label or f"step-{step_index}"
