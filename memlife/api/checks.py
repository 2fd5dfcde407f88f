"""What every run and check is refused for before anything starts: options out of range,
faults the reference target does not know, a scenario asking what its target file cannot
do, a target that does not answer, and what a run needs installed first. Each problem is
one line (memlife/errors.py: Problem)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memlife.errors import Problem


def duration_option(text: str, flag: str, problems: list[Problem]) -> timedelta | None:
    """A positive duration given on the command line, or a problem naming the flag."""
    from memlife.rules.durations import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as error:
        problems.append(Problem("command line", flag, str(error)))
        return None
    if value <= timedelta(0):
        problems.append(Problem("command line", flag, "must be longer than zero"))
        return None
    return value


def unknown_faults(faults: list[str]) -> list[Problem]:
    """--fault names the bundled reference target does not know."""
    from memlife.bundled.reference.faults import FAULTS

    return [
        Problem("command line", "--fault", f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        for fault in faults
        if fault not in FAULTS
    ]


def scenario_target_problems(
    scenario: Any, target: Any, file: str, scenario_file: str
) -> list[Problem]:
    """What the scenario asks of the target that the target file cannot do."""
    from memlife.rules.scenario import (
        AwaitDeletionStep,
        DeleteStep,
        InspectStep,
        MaintainStep,
        SpaceStep,
    )

    problems = []
    for index, step in enumerate(scenario.timeline):
        if isinstance(step, DeleteStep) and step.domains and target.operations.forget is None:
            problems.append(
                Problem(
                    file,
                    "operations.forget",
                    f"the scenario forgets single "
                    f"facts (timeline.{index}) but the target file has no "
                    "forget operation; drop the step or describe one",
                )
            )
            break
    for index, step in enumerate(scenario.timeline):
        if (
            isinstance(step, DeleteStep) and not step.domains or isinstance(step, AwaitDeletionStep)
        ) and (target.operations.delete_tenant is None):
            problems.append(
                Problem(
                    file,
                    "operations.delete_tenant",
                    f"the scenario deletes "
                    f"tenants (timeline.{index}) but the target file has no "
                    "delete_tenant operation",
                )
            )
            break
    # Creating is optional: without create_space a space exists once something is said in it.
    needed = {
        f"{step.action}_space"
        for step in scenario.timeline
        if isinstance(step, SpaceStep) and step.action != "create"
    }
    # A space created with several tenants: all but its creator join it.
    if any(
        isinstance(step, SpaceStep) and step.action == "create" and len(step.tenants) > 1
        for step in scenario.timeline
    ):
        needed.add("join_space")
    if any(
        getattr(step, "space", None)
        for step in scenario.timeline
        if not isinstance(step, SpaceStep)
    ):
        needed.add("space_say")
    for name in sorted(n for n in needed if getattr(target.operations, n) is None):
        problems.append(
            Problem(
                file,
                f"operations.{name}",
                "the scenario uses shared spaces "
                f"but the target file has no {name} operation; describe one "
                "(docs/target-files.md)",
            )
        )
    maintenance = list(target.operations.maintain)
    for index, step in enumerate(scenario.timeline):
        if not isinstance(step, MaintainStep):
            continue
        if not maintenance:
            problems.append(
                Problem(
                    file,
                    "operations.maintain",
                    f"the scenario triggers "
                    f"maintenance (timeline.{index}) but the target file "
                    "names no maintain operation; drop the step or name one",
                )
            )
            break
        for position, name in enumerate(step.operations or []):
            if name not in maintenance:
                problems.append(
                    Problem(
                        scenario_file,
                        f"timeline.{index}.operations.{position}",
                        f"unknown maintenance {name!r}; {file} names: {', '.join(maintenance)}",
                    )
                )
    declared = [store.name for store in target.stores if store.probe is not None]
    for index, step in enumerate(scenario.timeline):
        if isinstance(step, InspectStep) and step.stores:
            for position, name in enumerate(step.stores):
                if name not in declared:
                    problems.append(
                        Problem(
                            scenario_file,
                            f"timeline.{index}.stores.{position}",
                            f"unknown store {name!r}; {file} probes: "
                            f"{', '.join(declared) or 'none'}",
                        )
                    )
    inspects = [i for i, step in enumerate(scenario.timeline) if isinstance(step, InspectStep)]
    if inspects and not any(store.probe for store in target.stores):
        problems.append(
            Problem(
                file,
                "stores",
                f"the scenario inspects stores (timeline.{inspects[0]}) but no store has a probe",
            )
        )
    return problems


def check_target_reachable(file: str, base_url: str) -> None:
    """Any HTTP answer will do: this only guards against starting a run at nothing."""
    import httpx

    from memlife.errors import UnreachableError

    try:
        httpx.get(base_url, timeout=5)
    except httpx.HTTPError as exc:
        reason = {
            "ConnectError": "connection refused or no such host",
            "ConnectTimeout": "connection timed out",
        }.get(type(exc).__name__, type(exc).__name__)
        raise UnreachableError(
            f"{file}: base_url: cannot reach {base_url} ({reason}); start the target, or fix "
            "base_url"
        ) from None


def ensure_runtime_extras(targets: list[Any], *, recording: bool = True) -> None:
    """What this command will run beyond memlife's core, installed once: the clients of
    the targets' probes, and, for a command that records (`recording`), the PostgreSQL
    driver when the recorder is PostgreSQL."""
    from memlife.stack import extras

    if recording:
        from memlife import recorder  # its database layer: a third of a second to import

        if recorder.database_url().startswith("postgresql"):
            extras.ensure("postgres", "the PostgreSQL recorder (MEMLIFE_DB_URL)")
    for target in targets:
        for extra, purpose in extras.for_target(target):
            extras.ensure(extra, purpose)
