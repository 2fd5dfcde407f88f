"""Nightly runs as Temporal Schedules (`memlife schedule ...`). Client side.

A schedule's action starts `SuiteWorkflow` with the scenario as written and an empty run
id: each start gets its own run id, canary seed and fresh tenants (the workflow assigns
them). Lifecycles span days, so a new night's run overlaps the previous ones: the overlap
policy allows all.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError

from memlife import __version__
from memlife.contracts import RunInput, RunMeta
from memlife.errors import InputError, Problem
from memlife.rules.clock import Clock
from memlife.rules.scenario import Scenario
from memlife.rules.sizing import DEFAULT_MAX_ACTIVE_PAIRS, cohort_size
from memlife.rules.target import Target
from memlife.workflows import attributes

SCHEDULE_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"


def check_schedule_options(name: str, cron: str, timezone: str | None) -> list[Problem]:
    import re

    problems = []
    if not re.match(SCHEDULE_ID_PATTERN, name):
        problems.append(
            Problem(
                "command line",
                "NAME",
                f"{name!r}: use lowercase letters, "
                "digits, '-' and '_' (at most 63), e.g. nightly-reference",
            )
        )
    fields = cron.split()
    if not (5 <= len(fields) <= 7) and not cron.startswith("@"):
        problems.append(
            Problem(
                "command line",
                "--cron",
                f"{cron!r} is not a cron expression "
                "(five fields: minute hour day-of-month month day-of-week, "
                "e.g. '0 2 * * *')",
            )
        )
    if timezone:
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            problems.append(
                Problem(
                    "command line",
                    "--timezone",
                    f"unknown time zone {timezone!r}; use an IANA name such as Europe/Madrid",
                )
            )
    return problems


def scheduled_run_input(
    scenario: Scenario,
    target: Target,
    clock: Clock,
    scenario_file: str,
    command: str,
    address: str,
    search_attributes: bool,
    target_task_queue: str | None = None,
) -> RunInput:
    """The action's input: run id, seed and tenants are left for each start to assign.
    `target_task_queue`: the task queue of its target requests (None: the run's)."""
    pairs = scenario.pair_count()
    cohort = cohort_size(pairs, scenario.acting_steps())
    meta = RunMeta(
        memlife_version=__version__,
        git_revision=None,
        command=command,
        scenario_file=scenario_file,
        scenario_name=scenario.name,
        scenario_sha256=hashlib.sha256(Path(scenario_file).read_bytes()).hexdigest(),
        target_name=target.name,
        target_base_url=target.base_url,
        target_identity={"kind": "target file"},
        clock=clock.describe(),
        temporal_address=address,
        cohort_size=cohort,
    )
    return RunInput(
        run_id="",
        scenario=scenario,
        target=target,
        clock=clock,
        meta=meta,
        search_attributes=search_attributes,
        cohort_size=cohort,
        max_active_pairs=DEFAULT_MAX_ACTIVE_PAIRS,
        target_task_queue=target_task_queue,
    )


async def create_schedule(
    client: Client,
    name: str,
    run: RunInput,
    *,
    cron: str,
    timezone: str | None,
    catchup: timedelta,
    jitter: timedelta | None,
    task_queue: str,
    paused: bool,
) -> None:
    from memlife.workflows.suite import SuiteWorkflow

    action = ScheduleActionStartWorkflow(
        SuiteWorkflow.run,
        run,
        # Temporal appends the start time: memlife/<scenario>/<name>-<time>, whose last
        # part becomes the run id (workflows/suite.py), as for a run started by hand.
        id=f"memlife/{run.scenario.name}/{name}",
        task_queue=task_queue,
        typed_search_attributes=attributes.start_attributes(
            scenario=run.scenario.name, target=run.target.name
        )
        if run.search_attributes
        else TypedSearchAttributes.empty,
        static_summary=f"scheduled {name}: {run.scenario.name} against {run.target.name}",
    )
    schedule = Schedule(
        action=action,
        spec=ScheduleSpec(cron_expressions=[cron], time_zone_name=timezone, jitter=jitter),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL, catchup_window=catchup),
        state=ScheduleState(paused=paused, note=f"created by memlife {__version__}"),
    )
    try:
        await client.create_schedule(
            name,
            schedule,
            memo={
                "memlife_scenario": run.scenario.name,
                "memlife_target": run.target.name,
                "memlife_scenario_file": run.meta.scenario_file,
            },
        )
    except ScheduleAlreadyRunningError:
        raise InputError(
            [
                Problem(
                    "command line",
                    "NAME",
                    f"a schedule named {name!r} already "
                    "exists; delete it first or choose another name",
                )
            ]
        ) from None
    except RPCError as error:
        field = (
            "--cron"
            if "cron" in error.message.lower() or "spec" in error.message.lower()
            else "schedule"
        )
        raise InputError([Problem("command line", field, error.message)]) from None


def _spec_text(spec: ScheduleSpec) -> str:
    parts = list(spec.cron_expressions)
    for calendar in spec.calendars:  # the server hands cron back as calendars

        def field(ranges: Any, whole: tuple[int, int]) -> str:
            if len(ranges) == 1 and (ranges[0].start, ranges[0].end) == whole:
                return "*"
            return (
                ",".join(
                    str(r.start) if r.start == r.end or not r.end else f"{r.start}-{r.end}"
                    for r in ranges
                )
                or "*"
            )

        parts.append(
            f"{field(calendar.minute, (0, 59))} {field(calendar.hour, (0, 23))} "
            f"{field(calendar.day_of_month, (1, 31))} {field(calendar.month, (1, 12))} "
            f"{field(calendar.day_of_week, (0, 6))}"
        )
    for interval in spec.intervals:
        parts.append(f"every {interval.every}")
    text = "; ".join(parts) or "-"
    if spec.time_zone_name:
        text += f" ({spec.time_zone_name})"
    return text


async def list_schedules(client: Client) -> list[dict[str, Any]]:
    rows = []
    async for entry in await client.list_schedules():
        memo = await entry.memo()
        info = entry.info
        rows.append(
            {
                "name": entry.id,
                "scenario": memo.get("memlife_scenario", "?"),
                "target": memo.get("memlife_target", "?"),
                "spec": _spec_text(entry.schedule.spec) if entry.schedule else "-",
                "paused": bool(entry.schedule and entry.schedule.state.paused),
                "next": _when(info.next_action_times[0])
                if info and info.next_action_times
                else "-",
                "recent": len(info.recent_actions) if info else 0,
            }
        )
    return sorted(rows, key=lambda row: row["name"])


async def describe_schedule(client: Client, name: str) -> dict[str, Any]:
    description = await client.get_schedule_handle(name).describe()
    schedule, info = description.schedule, description.info
    action = schedule.action
    run_input: dict[str, Any] = {}
    if isinstance(action, ScheduleActionStartWorkflow) and action.args:
        payload = action.args[0]
        run_input = (
            (await client.data_converter.decode([payload]))[0]
            if not isinstance(payload, dict)
            else payload
        )
    scenario = run_input.get("scenario", {}) if isinstance(run_input, dict) else {}
    target = run_input.get("target", {}) if isinstance(run_input, dict) else {}
    return {
        "name": name,
        "spec": _spec_text(schedule.spec),
        "jitter": str(schedule.spec.jitter) if schedule.spec.jitter else None,
        "catchup_window": str(schedule.policy.catchup_window),
        "overlap": schedule.policy.overlap.name,
        "paused": schedule.state.paused,
        "note": schedule.state.note,
        "scenario": scenario.get("name"),
        "target": f"{target.get('name')} at {target.get('base_url')}" if target else None,
        "clock": (run_input.get("clock") or {}).get("mode")
        if isinstance(run_input, dict)
        else None,
        "workflow": action.workflow if isinstance(action, ScheduleActionStartWorkflow) else None,
        "task_queue": action.task_queue
        if isinstance(action, ScheduleActionStartWorkflow)
        else None,
        "target_queue": run_input.get("target_task_queue") if isinstance(run_input, dict) else None,
        "next_runs": [_when(moment) for moment in info.next_action_times[:5]],
        "recent_runs": [
            {
                "scheduled": _when(a.scheduled_at),
                "started": _when(a.started_at),
                "workflow_id": getattr(a.action, "workflow_id", None),
            }
            for a in info.recent_actions
        ],
        "running": [getattr(w, "workflow_id", str(w)) for w in info.running_actions],
        "created": _when(info.created_at),
    }


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
