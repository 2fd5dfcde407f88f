"""`memlife status [RUN]`, `memlife fast-forward RUN`, `memlife cancel RUN`: runs and
deletion checks in flight, and the operator's two controls over them."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from datetime import UTC, datetime
from typing import Any

from memlife.cli.common import EXIT_OK, add_command
from memlife.cli.display import output_console
from memlife.errors import InputError, Problem
from memlife.stack.commands import command


def add_parsers(commands: Any) -> None:
    status = add_command(
        commands,
        "status",
        "runs and checks in flight",
        "Runs and deletion checks in flight on the local stack or the configured cluster: "
        "phase, pairs done, verdict so far. With RUN, that run pair by pair: step, stage, "
        "what each pair is doing, its failures and its next wake-up.",
    )
    status.add_argument(
        "run", nargs="?", metavar="RUN", help="a run id (or `latest`), a check id or a workflow id"
    )
    status.add_argument("--json", action="store_true", help="as JSON")
    status.set_defaults(handler=cmd_status)

    forward = add_command(
        commands,
        "fast-forward",
        "end the current waits of a run now",
        "End the current waits of every pair of a run (or the next round of a deletion "
        "check) now. Scenario time moves on by what was skipped, so a simulated target's "
        "background jobs still run.",
    )
    forward.add_argument("run", metavar="RUN", help="a run id, a check id or a workflow id")
    forward.set_defaults(handler=cmd_signal, signal="skip_wait")
    cancel = add_command(
        commands,
        "cancel",
        "cancel a run or check cleanly",
        "Stop a run (every pair at its next step boundary, or at once while waiting) or a "
        "deletion check. The run is recorded as cancelled and never passes.",
    )
    cancel.add_argument("run", metavar="RUN", help="a run id, a check id or a workflow id")
    cancel.add_argument(
        "--reason", default="cancelled by an operator", help="recorded with the run"
    )
    cancel.set_defaults(handler=cmd_signal, signal="cancel")


async def find_workflow(client: Any, reference: str) -> tuple[str, str]:
    """A run id (or 'latest'), a deletion check id, or a workflow id → (workflow id, type)."""
    from memlife import recorder
    from memlife.contracts import suite_workflow_id

    if "/" in reference:
        description = await client.get_workflow_handle(reference).describe()
        return reference, description.workflow_type
    query = (
        f'MemlifeRun = "{reference}" AND WorkflowType = "SuiteWorkflow"'
        if reference != "latest"
        else 'WorkflowType = "SuiteWorkflow"'
    )
    try:
        async for execution in client.list_workflows(query, limit=1):
            return execution.id, execution.workflow_type
    except Exception:  # no search attributes on this cluster: fall back to the recorder
        pass
    with recorder.session() as db:
        run = db.get(recorder.RunRow, reference)
        if run is not None:
            return suite_workflow_id(run.scenario, run.id), "SuiteWorkflow"
    check = f"memlife/deletion-check/{reference}"
    try:
        await client.get_workflow_handle(check).describe()
        return check, "DeletionCheckWorkflow"
    except Exception:
        pass
    raise InputError(
        [
            Problem(
                "command line",
                "RUN",
                f"no run or check {reference!r} found; see `{command()} status`",
            )
        ]
    )


def cmd_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife.contracts import pair_home_workflow_id, web_ui_link
    from memlife.stack.connection import connect_to_stack
    from memlife.stack.progress import describe_pairs, humanize, pair_progress

    stack_line: list[str] = []

    async def gather() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        client, address = await connect_to_stack()
        stack_line.extend(_local_stack_line(address))
        now = datetime.now(UTC)
        if args.run:
            workflow_id, kind = await find_workflow(client, args.run)
            handle = client.get_workflow_handle(workflow_id)
            progress = await handle.query("progress")
            if kind != "SuiteWorkflow":
                return [{"workflow_id": workflow_id, "type": kind, **progress}], []
            verdicts = await handle.query("verdicts")
            description = await handle.describe()
            run_id = progress.get("run_id") or args.run
            scenario = workflow_id.split("/")[1]
            cohort_size = progress.get("cohort_size", 0)
            pairs = await pair_progress(client, scenario, run_id, progress["pairs"], cohort_size)
            web_ui = web_ui_for(address)
            for pair in pairs:  # a failing pair links to its workflow in the Web UI
                if pair.get("failures"):
                    pair["web_ui"] = web_ui_link(
                        web_ui,
                        client.namespace,
                        pair_home_workflow_id(scenario, run_id, pair["pair"], cohort_size),
                    )
            return [
                {
                    "workflow_id": workflow_id,
                    "type": kind,
                    "run_id": run_id,
                    "status": description.status.name if description.status else "?",
                    **progress,
                    "verdict": verdicts["verdict"],
                    "failures": verdicts["failures"],
                }
            ], pairs
        rows = []
        query = (
            'ExecutionStatus = "Running" AND (WorkflowType = "SuiteWorkflow" OR '
            'WorkflowType = "DeletionCheckWorkflow")'
        )
        async for execution in client.list_workflows(query, limit=200):
            handle = client.get_workflow_handle(execution.id)
            row: dict[str, Any] = {
                "workflow_id": execution.id,
                "type": execution.workflow_type,
                "started": execution.start_time,
            }
            try:
                row.update(await handle.query("progress"))
                if execution.workflow_type == "SuiteWorkflow":
                    row["verdict"] = (await handle.query("verdicts"))["verdict"]
                    pairs = await pair_progress(
                        client,
                        execution.id.split("/")[1],
                        row.get("run_id") or "",
                        row["pairs"],
                        row.get("cohort_size", 0),
                    )
                    row["detail"] = describe_pairs(pairs, now)
            except Exception as error:  # no worker polling yet: still list it
                row["phase"] = f"(no answer: {str(error).splitlines()[0][:60]})"
            rows.append(row)
        return rows, []

    rows, pairs = asyncio.run(gather())
    if args.json:
        print(json.dumps({"runs": rows, "pairs": pairs}, indent=2, default=str))
        return EXIT_OK
    console = output_console()
    for line in stack_line:
        console.print(line)
    if not rows:
        console.print("no runs in flight")
        return EXIT_OK
    if args.run and pairs:
        run = rows[0]
        console.print(
            f"run {run.get('run_id')} · {run['phase']} · "
            f"{run['pairs_done']}/{run['pairs']} pair(s) done · verdict "
            f"{run['verdict']} · {run['failures']} failure(s) · {run['status']}"
        )
        table = Table(title="pairs", title_justify="left")
        for column in (
            "pair",
            "step",
            "stage",
            "doing",
            "cases passed",
            "failures",
            "next wake-up",
        ):
            table.add_column(column)
        table.add_column("Web UI (failing pairs)", overflow="fold")
        now = datetime.now(UTC)
        for pair in pairs:
            wake = pair.get("wake_at")
            when = "-"
            if wake:
                moment = datetime.fromisoformat(wake.replace("Z", "+00:00"))
                when = f"{moment:%Y-%m-%d %H:%M:%S} (in {humanize((moment - now).total_seconds())})"
            table.add_row(
                str(pair["pair"]),
                f"{pair['step'] + 1}/{pair['steps']}",
                pair.get("stage") or "",
                "waiting" if wake else pair.get("kind", ""),
                f"{pair['cases_passed']}/{pair['cases']}",
                str(pair["failures"]),
                when,
                pair.get("web_ui", ""),
            )
        console.print(table)
        return EXIT_OK
    table = Table(title="memlife: in flight", title_justify="left")
    for column in ("workflow", "type", "phase", "pairs", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        pairs_text = (
            f"{row['pairs_done']}/{row['pairs']}"
            if "pairs" in row
            else f"{row.get('rounds', 0)} round(s)"
        )
        detail = row.get("detail") or (
            ", ".join(f"{k}: {v}" for k, v in row.get("stores", {}).items())
        )
        table.add_row(
            row["workflow_id"],
            row["type"],
            str(row.get("phase")),
            pairs_text,
            str(row.get("verdict", "")),
            detail,
        )
    console.print(table)
    return EXIT_OK


def _local_stack_line(address: str) -> list[str]:
    """Where the runs that use the `memlife dev` stack send their target requests, when
    that stack is the cluster at `address`."""
    from memlife.cli.common import STATE_DIR
    from memlife.stack.devstack import read_stack, target_requests

    info = read_stack(STATE_DIR)
    if info is None or info.temporal_address != address:
        return []
    return [
        f"local stack at {address}: runs that use it send their target requests "
        f"{target_requests(info)}"
    ]


def web_ui_for(address: str) -> str:
    """The Web UI of the cluster at `address`: MEMLIFE_WEB_UI, else the local `memlife dev`
    stack's when that is the cluster, else the dev server's usual one."""
    from memlife.cli.common import STATE_DIR
    from memlife.contracts import DEV_WEB_UI
    from memlife.stack.devstack import read_stack

    configured = os.environ.get("MEMLIFE_WEB_UI")
    if configured:
        return configured
    info = read_stack(STATE_DIR)
    if info is not None and info.temporal_address == address and info.web_ui:
        return info.web_ui
    return DEV_WEB_UI


def cmd_signal(args: argparse.Namespace) -> int:
    from memlife.stack.connection import connect_to_stack

    async def send() -> str:
        client, _ = await connect_to_stack()
        workflow_id, _ = await find_workflow(client, args.run)
        handle = client.get_workflow_handle(workflow_id)
        if args.signal == "skip_wait":
            await handle.signal("skip_wait")
        else:
            await handle.signal("cancel", args.reason)
        return workflow_id

    workflow_id = asyncio.run(send())
    print(
        {
            "skip_wait": f"{workflow_id}: current waits end now (scenario time moves on)",
            "cancel": f"{workflow_id}: cancelling at the next step boundary",
        }[args.signal]
    )
    return EXIT_OK
