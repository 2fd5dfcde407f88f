"""`memlife schedule create|list|describe|trigger|pause|unpause|delete`: nightly runs as
Temporal Schedules. Each start is a run of its own: fresh run id, canary seed and tenants;
runs overlap (a night's lifecycle lasts days)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from typing import Any

from memlife.cli.common import (
    EXIT_OK,
    add_command,
    duration_option,
    err,
    problems_exit,
    scenario_target_problems,
)
from memlife.cli.display import output_console
from memlife.errors import InputError, Problem, collect
from memlife.stack.commands import command


def add_parsers(commands: Any) -> None:
    schedule = add_command(
        commands,
        "schedule",
        "nightly runs (Temporal Schedules)",
        "Nightly runs as Temporal Schedules on the local stack (`memlife dev`) or the "
        "configured cluster. A schedule starts a run of the scenario against the target file "
        "at each time its cron names; each run gets its own run id, canary seed and fresh "
        "tenants, and runs overlap (overlap policy ALLOW_ALL).",
    )
    actions = schedule.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = add_command(
        actions,
        "create",
        "create a schedule that starts runs",
        "Create a schedule. The scenario and target file are validated together, as "
        "`memlife run` would, before anything is created; secrets stay environment "
        "variable names (the workers resolve them).",
    )
    create.add_argument("name", metavar="NAME", help="the schedule's name, e.g. nightly")
    create.add_argument("--scenario", required=True, metavar="FILE", help="the scenario file")
    create.add_argument("--target", required=True, metavar="FILE", help="the target file")
    create.add_argument(
        "--cron", required=True, help="when to start a run, e.g. '0 2 * * *' (02:00 every day)"
    )
    create.add_argument(
        "--timezone",
        default=None,
        metavar="TZ",
        help="the cron's IANA time zone, e.g. Europe/Madrid (default: UTC)",
    )
    create.add_argument(
        "--catchup",
        default="1h",
        metavar="DURATION",
        help="how late a missed run may still start after an outage",
    )
    create.add_argument(
        "--jitter",
        default=None,
        metavar="DURATION",
        help="a random delay up to this long before each start (spreads load)",
    )
    create.add_argument(
        "--clock",
        default="real",
        metavar="MODE",
        help="scenario time: real, or compress=N (every wait / N)",
    )
    create.add_argument(
        "--task-queue", default="memlife", metavar="QUEUE", help="the task queue the runs go to"
    )
    create.add_argument(
        "--target-queue",
        default=None,
        metavar="QUEUE",
        help="send each run's target requests through this task queue, "
        "which workers of their own serve (`memlife worker --serve "
        "activities --task-queue QUEUE`; docs/scale.md)",
    )
    create.add_argument("--paused", action="store_true", help="create it paused")
    create.set_defaults(handler=cmd_schedule_create)
    listing = add_command(
        actions,
        "list",
        "list schedules",
        "List the schedules: scenario, target, spec, state, next run.",
    )
    listing.add_argument("--json", action="store_true", help="as JSON")
    listing.set_defaults(handler=cmd_schedule_list)
    for action, text, description in (
        (
            "describe",
            "show a schedule",
            "Show a schedule: its spec, policies, next and recent runs.",
        ),
        (
            "trigger",
            "start a run now",
            "Start a run of the schedule now (it overlaps any run in flight).",
        ),
        ("pause", "pause it", "Pause the schedule: no run starts until it is unpaused."),
        ("unpause", "unpause it", "Unpause the schedule."),
        (
            "delete",
            "delete it (started runs go on)",
            "Delete the schedule; runs it already started go on (`memlife cancel RUN` stops one).",
        ),
    ):
        sub = add_command(actions, action, text, description)
        sub.add_argument("name", metavar="NAME", help="the schedule's name")
        if action in ("pause", "unpause"):
            sub.add_argument("--note", default=None, help="why (shown by describe)")
        if action == "describe":
            sub.add_argument("--json", action="store_true", help="as JSON")
        sub.set_defaults(handler=_schedule_action)


def _load_scenario_and_target(
    scenario_file: str, target_file: str, clock_text: str
) -> tuple[Any, Any, Any]:
    """Everything a run needs, validated together: every problem reported at once."""
    from memlife.rules.clock import parse_clock
    from memlife.rules.scenario_file import load_scenario
    from memlife.rules.target import load_target

    problems: list[Problem] = []
    clock = None
    scenario = collect(problems, load_scenario, scenario_file)
    target = collect(problems, load_target, target_file)
    try:
        clock = parse_clock(clock_text)
    except ValueError as error:
        problems.append(Problem("command line", "--clock", str(error)))
    if clock is not None and clock.mode == "skip":
        problems.append(
            Problem(
                "command line",
                "--clock",
                "skip needs the time-skipping test "
                "server; a schedule runs on a real cluster (real or "
                "compress=N)",
            )
        )
    if scenario is not None and target is not None:
        problems += scenario_target_problems(scenario, target, target_file, scenario_file)
    if problems:
        raise InputError(problems)
    return scenario, target, clock


def cmd_schedule_create(args: argparse.Namespace) -> int:
    from memlife.stack import schedules

    problems = schedules.check_schedule_options(args.name, args.cron, args.timezone)
    catchup = duration_option(args.catchup, "--catchup", problems)
    jitter = duration_option(args.jitter, "--jitter", problems) if args.jitter else None
    try:
        scenario, target, clock = _load_scenario_and_target(args.scenario, args.target, args.clock)
    except InputError as error:
        problems = error.problems + problems
    if problems:
        return problems_exit(problems)
    missing = [name for name in target.secret_names() if name not in os.environ]
    if missing:
        err(
            f"memlife: note: {', '.join(missing)} not set here; the workers must have "
            "them (secrets are read by the activities, never stored in the schedule)"
        )

    async def create() -> None:
        from memlife.api.engine import search_attributes_ready
        from memlife.cli.runner import CommandLineOutput
        from memlife.stack.connection import connect_to_stack

        client, address = await connect_to_stack()
        ready = await search_attributes_ready(client, CommandLineOutput())
        run = schedules.scheduled_run_input(
            scenario,
            target,
            clock,
            args.scenario,
            shlex.join(["memlife", *sys.argv[1:]]),
            address,
            ready,
            target_task_queue=args.target_queue,
        )
        assert catchup is not None
        await schedules.create_schedule(
            client,
            args.name,
            run,
            cron=args.cron,
            timezone=args.timezone,
            catchup=catchup,
            jitter=jitter,
            task_queue=args.task_queue,
            paused=args.paused,
        )
        description = await schedules.describe_schedule(client, args.name)
        print(
            f"schedule {args.name!r} created: {scenario.name} against {target.name} · "
            f"{description['spec']} · next run {(description['next_runs'] or ['-'])[0]}"
            + (" · paused" if args.paused else "")
        )
        print(f"  run it now: {command()} schedule trigger {args.name}")
        await _note_unserved(client, args.task_queue, args.target_queue)

    asyncio.run(create())
    return EXIT_OK


async def _note_unserved(client: Any, task_queue: str, target_queue: str | None) -> None:
    """A note for each queue of the schedule's runs that no worker polls now: its runs
    would wait for one (memlife/stack/queues.py). Workers may well start before the first
    run, so this warns and does not refuse."""
    from memlife import DEFAULT_TASK_QUEUE
    from memlife.stack.queues import Need, unserved

    needs = [Need(task_queue, "workflow"), Need(task_queue, "activity")]
    if target_queue is not None:
        needs.append(Need(target_queue, "activity"))
    missing = await unserved(client, needs, within=0, say=err)
    for queue in dict.fromkeys(need.queue for need in missing):
        serve = " --serve activities" if queue == target_queue != task_queue else ""
        dev = f" or `{command()} dev`" if queue == DEFAULT_TASK_QUEUE else ""
        err(
            f"memlife: note: no worker polls task queue {queue} now; its runs wait until "
            f"one does: start `{command()} worker{serve} --task-queue {queue}`{dev}"
        )


def cmd_schedule_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife.stack import schedules
    from memlife.stack.connection import connect_to_stack

    async def listing() -> list[dict[str, Any]]:
        client, _ = await connect_to_stack()
        return await schedules.list_schedules(client)

    rows = asyncio.run(listing())
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print(
            f"no schedules; create one with `{command()} schedule create NAME --scenario FILE "
            "--target FILE --cron '0 2 * * *'`"
        )
        return EXIT_OK
    table = Table(title="memlife schedules", title_justify="left")
    for column in ("name", "scenario", "target", "spec", "state", "next run", "runs so far"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["name"],
            row["scenario"],
            row["target"],
            row["spec"],
            "paused" if row["paused"] else "active",
            row["next"],
            str(row["recent"]),
        )
    output_console().print(table)
    return EXIT_OK


def _schedule_action(args: argparse.Namespace) -> int:
    from temporalio.client import ScheduleOverlapPolicy
    from temporalio.service import RPCError, RPCStatusCode

    from memlife.stack import schedules
    from memlife.stack.connection import connect_to_stack

    async def act() -> dict[str, Any] | None:
        client, _ = await connect_to_stack()
        handle = client.get_schedule_handle(args.name)
        try:
            if args.action == "describe":
                return await schedules.describe_schedule(client, args.name)
            if args.action == "trigger":
                await handle.trigger(overlap=ScheduleOverlapPolicy.ALLOW_ALL)
            elif args.action == "pause":
                await handle.pause(note=args.note or "paused with memlife")
            elif args.action == "unpause":
                await handle.unpause(note=args.note or "unpaused with memlife")
            elif args.action == "delete":
                await handle.delete()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise InputError(
                    [
                        Problem(
                            "command line",
                            "NAME",
                            f"no schedule named {args.name!r}; see `{command()} schedule list`",
                        )
                    ]
                ) from None
            raise
        return None

    described = asyncio.run(act())
    if args.action == "describe":
        assert described is not None
        if args.json:
            print(json.dumps(described, indent=2))
            return EXIT_OK
        for key in (
            "name",
            "scenario",
            "target",
            "clock",
            "spec",
            "jitter",
            "catchup_window",
            "overlap",
            "paused",
            "note",
            "task_queue",
            "target_queue",
            "created",
        ):
            if key == "target_queue" and described[key] is None:
                continue  # the run's own queue
            print(f"{key:>15}: {described[key]}")
        print(f"{'next runs':>15}: " + (", ".join(described["next_runs"]) or "-"))
        print(f"{'running':>15}: " + (", ".join(described["running"]) or "-"))
        for run in described["recent_runs"]:
            print(f"{'recent':>15}: {run['started']}  {run['workflow_id']}")
        return EXIT_OK
    done = {
        "trigger": f"triggered: a run starts now (see `{command()} status`)",
        "pause": "paused",
        "unpause": "unpaused",
        "delete": "deleted (runs already "
        f"started go on; cancel them with `{command()} cancel RUN`)",
    }[args.action]
    print(f"schedule {args.name!r} {done}")
    return EXIT_OK
