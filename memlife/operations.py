"""Day-to-day commands: `dev`, `schedule`, `status`, `check-deletion`, `receipt`, `report`,
`fast-forward` and `cancel`. Each validates its input before anything starts, and speaks
to the local stack (`memlife dev`, 127.0.0.1:7233) or the configured cluster."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlife.display import command, output_console, temporal_command, wait_showing
from memlife.errors import InputError, Problem, collect

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
STATE_DIR = Path(".memlife")


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _problems(problems: list[Problem]) -> int:
    for problem in problems:
        _err(str(problem))
    return EXIT_USAGE


def _duration(text: str, flag: str, problems: list[Problem]) -> timedelta | None:
    from memlife.durations import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as error:
        problems.append(Problem("command line", flag, str(error)))
        return None
    if value <= timedelta(0):
        problems.append(Problem("command line", flag, "must be longer than zero"))
        return None
    return value


# -- dev -----------------------------------------------------------------------------------


def cmd_dev(args: argparse.Namespace) -> int:
    from memlife import devstack
    from memlife.reference.store import FAULTS

    unknown = [fault for fault in args.fault if fault not in FAULTS]
    if unknown:
        return _problems([Problem("command line", "--fault", f"unknown fault {unknown[0]!r}; "
                                  f"known: {', '.join(FAULTS)}")])
    asyncio.run(devstack.serve(STATE_DIR, port=args.port, ui_port=args.ui_port,
                               target_port=args.target_port, faults=args.fault,
                               task_queue=args.task_queue))
    print("memlife dev: stopped", flush=True)
    return EXIT_OK


# -- schedule ------------------------------------------------------------------------------


def _load_scenario_and_target(scenario_file: str, target_file: str,
                              clock_text: str) -> tuple[Any, Any, Any]:
    """Everything a run needs, validated together: every problem reported at once."""
    from memlife.cli import _scenario_target_problems
    from memlife.lifecycle import parse_clock
    from memlife.scenario import load_scenario
    from memlife.targets.config import load_target

    problems: list[Problem] = []
    clock = None
    scenario = collect(problems, load_scenario, scenario_file)
    target = collect(problems, load_target, target_file)
    try:
        clock = parse_clock(clock_text)
    except ValueError as error:
        problems.append(Problem("command line", "--clock", str(error)))
    if clock is not None and clock.mode == "skip":
        problems.append(Problem("command line", "--clock", "skip needs the time-skipping test "
                                "server; a schedule runs on a real cluster (real or "
                                "compress=N)"))
    if scenario is not None and target is not None:
        problems += _scenario_target_problems(scenario, target, target_file, scenario_file)
    if problems:
        raise InputError(problems)
    return scenario, target, clock


def cmd_schedule_create(args: argparse.Namespace) -> int:
    from memlife import schedules

    problems = schedules.check_schedule_options(args.name, args.cron, args.timezone)
    catchup = _duration(args.catchup, "--catchup", problems)
    jitter = _duration(args.jitter, "--jitter", problems) if args.jitter else None
    try:
        scenario, target, clock = _load_scenario_and_target(args.scenario, args.target,
                                                            args.clock)
    except InputError as error:
        problems = error.problems + problems
    if problems:
        return _problems(problems)
    missing = [name for name in target.secret_names() if name not in os.environ]
    if missing:
        _err(f"memlife: note: {', '.join(missing)} not set here; the workers must have "
             "them (secrets are read by the activities, never stored in the schedule)")

    async def create() -> None:
        from memlife.cli import _search_attributes_ready
        from memlife.temporal import connect_to_stack

        client, address = await connect_to_stack()
        ready = await _search_attributes_ready(client)
        run = schedules.scheduled_run_input(
            scenario, target, clock, args.scenario,
            shlex.join(["memlife", *sys.argv[1:]]), address, ready)
        assert catchup is not None
        await schedules.create_schedule(
            client, args.name, run, cron=args.cron, timezone=args.timezone, catchup=catchup,
            jitter=jitter, task_queue=args.task_queue, paused=args.paused)
        description = await schedules.describe_schedule(client, args.name)
        print(f"schedule {args.name!r} created: {scenario.name} against {target.name} · "
              f"{description['spec']} · next run {(description['next_runs'] or ['-'])[0]}"
              + (" · paused" if args.paused else ""))
        print(f"  run it now: {command()} schedule trigger {args.name}")

    asyncio.run(create())
    return EXIT_OK


def cmd_schedule_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife import schedules
    from memlife.temporal import connect_to_stack

    async def listing() -> list[dict[str, Any]]:
        client, _ = await connect_to_stack()
        return await schedules.list_schedules(client)

    rows = asyncio.run(listing())
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print(f"no schedules; create one with `{command()} schedule create NAME --scenario FILE "
              "--target FILE --cron '0 2 * * *'`")
        return EXIT_OK
    table = Table(title="memlife schedules", title_justify="left")
    for column in ("name", "scenario", "target", "spec", "state", "next run", "runs so far"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], row["scenario"], row["target"], row["spec"],
                      "paused" if row["paused"] else "active", row["next"], str(row["recent"]))
    output_console().print(table)
    return EXIT_OK


def _schedule_action(args: argparse.Namespace) -> int:
    from temporalio.client import ScheduleOverlapPolicy
    from temporalio.service import RPCError, RPCStatusCode

    from memlife import schedules
    from memlife.temporal import connect_to_stack

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
                raise InputError([Problem("command line", "NAME", f"no schedule named "
                                          f"{args.name!r}; see `{command()} schedule list`")]
                                 ) from None
            raise
        return None

    described = asyncio.run(act())
    if args.action == "describe":
        assert described is not None
        if args.json:
            print(json.dumps(described, indent=2))
            return EXIT_OK
        for key in ("name", "scenario", "target", "clock", "spec", "jitter", "catchup_window",
                    "overlap", "paused", "note", "task_queue", "created"):
            print(f"{key:>15}: {described[key]}")
        print(f"{'next runs':>15}: " + (", ".join(described["next_runs"]) or "-"))
        print(f"{'running':>15}: " + (", ".join(described["running"]) or "-"))
        for run in described["recent_runs"]:
            print(f"{'recent':>15}: {run['started']}  {run['workflow_id']}")
        return EXIT_OK
    done = {"trigger": f"triggered: a run starts now (see `{command()} status`)",
            "pause": "paused", "unpause": "unpaused", "delete": "deleted (runs already "
            f"started go on; cancel them with `{command()} cancel RUN`)"}[args.action]
    print(f"schedule {args.name!r} {done}")
    return EXIT_OK


# -- status, fast-forward, cancel ----------------------------------------------------------


async def _find_workflow(client: Any, reference: str) -> tuple[str, str]:
    """A run id (or 'latest'), a deletion check id, or a workflow id → (workflow id, type)."""
    from memlife import records
    from memlife.lifecycle import suite_workflow_id

    if "/" in reference:
        description = await client.get_workflow_handle(reference).describe()
        return reference, description.workflow_type
    query = (f'MemlifeRun = "{reference}" AND WorkflowType = "SuiteWorkflow"'
             if reference != "latest" else 'WorkflowType = "SuiteWorkflow"')
    try:
        async for execution in client.list_workflows(query, limit=1):
            return execution.id, execution.workflow_type
    except Exception:  # no search attributes on this cluster: fall back to the recorder
        pass
    with records.session() as db:
        run = db.get(records.RunRow, reference)
        if run is not None:
            return suite_workflow_id(run.scenario, run.id), "SuiteWorkflow"
    check = f"memlife/deletion-check/{reference}"
    try:
        await client.get_workflow_handle(check).describe()
        return check, "DeletionCheckWorkflow"
    except Exception:
        pass
    raise InputError([Problem("command line", "RUN", f"no run or check {reference!r} found; "
                              f"see `{command()} status`")])


def cmd_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife.progress import describe_pairs, humanize, pair_progress
    from memlife.temporal import connect_to_stack

    async def gather() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        client, _ = await connect_to_stack()
        now = datetime.now(UTC)
        if args.run:
            workflow_id, kind = await _find_workflow(client, args.run)
            handle = client.get_workflow_handle(workflow_id)
            progress = await handle.query("progress")
            if kind != "SuiteWorkflow":
                return [{"workflow_id": workflow_id, "type": kind, **progress}], []
            verdicts = await handle.query("verdicts")
            description = await handle.describe()
            run_id = progress.get("run_id") or args.run
            scenario = workflow_id.split("/")[1]
            pairs = await pair_progress(client, scenario, run_id, progress["pairs"],
                                        progress.get("cohort_size", 0))
            return [{"workflow_id": workflow_id, "type": kind, "run_id": run_id,
                     "status": description.status.name if description.status else "?",
                     **progress, "verdict": verdicts["verdict"],
                     "failures": verdicts["failures"]}], pairs
        rows = []
        query = ('ExecutionStatus = "Running" AND (WorkflowType = "SuiteWorkflow" OR '
                 'WorkflowType = "DeletionCheckWorkflow")')
        async for execution in client.list_workflows(query, limit=200):
            handle = client.get_workflow_handle(execution.id)
            row: dict[str, Any] = {"workflow_id": execution.id, "type": execution.workflow_type,
                                   "started": execution.start_time}
            try:
                row.update(await handle.query("progress"))
                if execution.workflow_type == "SuiteWorkflow":
                    row["verdict"] = (await handle.query("verdicts"))["verdict"]
                    pairs = await pair_progress(client, execution.id.split("/")[1],
                                                row.get("run_id") or "", row["pairs"],
                                                row.get("cohort_size", 0))
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
    if not rows:
        console.print("no runs in flight")
        return EXIT_OK
    if args.run and pairs:
        run = rows[0]
        console.print(f"run {run.get('run_id')} · {run['phase']} · "
                      f"{run['pairs_done']}/{run['pairs']} pair(s) done · verdict "
                      f"{run['verdict']} · {run['failures']} failure(s) · {run['status']}")
        table = Table(title="pairs", title_justify="left")
        for column in ("pair", "step", "stage", "doing", "cases passed", "failures",
                       "next wake-up"):
            table.add_column(column)
        now = datetime.now(UTC)
        for pair in pairs:
            wake = pair.get("wake_at")
            when = "-"
            if wake:
                moment = datetime.fromisoformat(wake.replace("Z", "+00:00"))
                when = f"{moment:%Y-%m-%d %H:%M:%S} (in {humanize((moment - now).total_seconds())})"
            table.add_row(str(pair["pair"]), f"{pair['step'] + 1}/{pair['steps']}",
                          pair.get("stage") or "", "waiting" if wake else pair.get("kind", ""),
                          f"{pair['cases_passed']}/{pair['cases']}", str(pair["failures"]),
                          when)
        console.print(table)
        return EXIT_OK
    table = Table(title="memlife: in flight", title_justify="left")
    for column in ("workflow", "type", "phase", "pairs", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        pairs_text = (f"{row['pairs_done']}/{row['pairs']}" if "pairs" in row else
                      f"{row.get('rounds', 0)} round(s)")
        detail = row.get("detail") or (", ".join(f"{k}: {v}" for k, v in
                                                 row.get("stores", {}).items()))
        table.add_row(row["workflow_id"], row["type"], str(row.get("phase")), pairs_text,
                      str(row.get("verdict", "")), detail)
    console.print(table)
    return EXIT_OK


def cmd_signal(args: argparse.Namespace) -> int:
    from memlife.temporal import connect_to_stack

    async def send() -> str:
        client, _ = await connect_to_stack()
        workflow_id, _ = await _find_workflow(client, args.run)
        handle = client.get_workflow_handle(workflow_id)
        if args.signal == "skip_wait":
            await handle.signal("skip_wait")
        else:
            await handle.signal("cancel", args.reason)
        return workflow_id

    workflow_id = asyncio.run(send())
    print({"skip_wait": f"{workflow_id}: current waits end now (scenario time moves on)",
           "cancel": f"{workflow_id}: cancelling at the next step boundary"}[args.signal])
    return EXIT_OK


# -- check-deletion and receipts -----------------------------------------------------------


def deletion_check_input(args: argparse.Namespace) -> Any:
    """The workflow input from the command line, validated (raises InputError)."""
    from memlife.erasure import DeletionCheckInput
    from memlife.targets.config import load_target

    problems: list[Problem] = []
    target = collect(problems, load_target, args.target)
    deadline = _duration(args.deadline, "--deadline", problems)
    poll = _duration(args.poll, "--poll", problems)
    if not args.tenant.strip():
        problems.append(Problem("command line", "--tenant", "must not be empty"))
    if args.ask and not args.phone:
        problems.append(Problem("command line", "--ask", "asking the tenant's channel needs "
                                "its --phone"))
    if target is not None:
        if args.request and target.operations.delete_tenant is None:
            problems.append(Problem(args.target, "operations.delete_tenant", "--request needs "
                                    "a delete_tenant operation in the target file"))
        if not any(store.probe for store in target.stores) and not args.ask:
            problems.append(Problem(args.target, "stores", "no store has a probe and no "
                                    "--ask question was given: there is nothing to check"))
    if problems:
        raise InputError(problems)
    check_id = args.id or (datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-"
                           + os.urandom(3).hex())
    return DeletionCheckInput(
        check_id=check_id, target=target, user_id=args.tenant.strip(), phone=args.phone,
        values=args.value, questions=args.ask, request=args.request, deadline=deadline,
        poll=poll)


def cmd_check_deletion(args: argparse.Namespace) -> int:
    from memlife.temporal import connect_to_stack
    from workflows.deletion_check import DeletionCheckWorkflow
    from workflows.registry import DEFAULT_TASK_QUEUE

    check = deletion_check_input(args)
    workflow_id = f"memlife/deletion-check/{check.check_id}"
    if args.print_input:
        from temporalio.contrib.pydantic import pydantic_data_converter

        payload = pydantic_data_converter.payload_converter.to_payloads([check])[0]
        document = json.loads(payload.data)
        print(json.dumps(document, indent=2))
        _err(f"start it with: {temporal_command()} workflow start --type DeletionCheckWorkflow "
             f"--task-queue {args.task_queue or DEFAULT_TASK_QUEUE} --workflow-id "
             f"{workflow_id} --input-file FILE")
        return EXIT_OK

    async def start() -> Any:
        from memlife.cli import _search_attributes_ready

        client, _ = await connect_to_stack()
        ready = await _search_attributes_ready(client)
        handle = await client.start_workflow(
            DeletionCheckWorkflow.run, check.model_copy(update={"search_attributes": ready}),
            id=workflow_id, task_queue=args.task_queue or DEFAULT_TASK_QUEUE,
            static_summary=f"deletion check of {check.user_id} on {check.target.name}",
            search_attributes=None if not ready else _check_attributes(check))
        print(f"deletion check {check.check_id} started ({workflow_id})", flush=True)
        if not args.wait:
            print(f"  follow it: {command()} status {check.check_id}\n"
                  f"  its receipt: {command()} receipt {check.check_id} [--out FILE]")
            return None
        return await _await_receipt(handle)

    receipt = asyncio.run(start())
    if receipt is None:
        return EXIT_OK
    return _emit_receipt(receipt, args.out, args.format)


def _check_attributes(check: Any) -> Any:
    from temporalio.common import SearchAttributePair, TypedSearchAttributes

    from workflows import attributes

    return TypedSearchAttributes([
        SearchAttributePair(attributes.TARGET, check.target.name),
        SearchAttributePair(attributes.PHASE, "deletion-check"),
        SearchAttributePair(attributes.VERDICT, attributes.RUNNING)])


async def _await_receipt(handle: Any) -> Any:
    async def describe() -> str:
        progress = await handle.query("progress")
        stores = " · ".join(f"{k} {v}" for k, v in progress["stores"].items())
        return f"round {progress['rounds']}: {stores}" + (
            f" · next round {progress['wake_at']}" if progress.get("wake_at") else "")

    from memlife.erasure import ErasureReceipt
    from memlife.temporal import verdict_result

    return await wait_showing(handle, describe, "deletion check: waiting for a worker…",
                              lambda h: verdict_result(h, ErasureReceipt))


def _emit_receipt(receipt: Any, out: str | None, fmt: str) -> int:
    from memlife.erasure import receipt_markdown

    text = (receipt.model_dump_json(indent=2) + "\n" if fmt == "json"
            else receipt_markdown(receipt))
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
        print(f"receipt ({fmt}): {out}")
    print(receipt_markdown(receipt) if fmt == "json" or out else text, end="")
    return EXIT_OK if receipt.verdict == "pass" else EXIT_FAILED


def _recorded_receipt(check_id: str) -> Any:
    from memlife import records
    from memlife.erasure import ErasureReceipt

    with records.session() as db:
        row = db.get(records.ErasureReceiptRow, check_id)
        return None if row is None else ErasureReceipt.model_validate_json(row.receipt_json)


def cmd_receipt(args: argparse.Namespace) -> int:
    from memlife.erasure import ErasureReceipt
    from memlife.temporal import connect_to_stack

    async def fetch() -> Any:
        client, _ = await connect_to_stack()
        workflow_id = (args.check if "/" in args.check
                       else f"memlife/deletion-check/{args.check}")
        from workflows.deletion_check import DeletionCheckWorkflow

        handle = client.get_workflow_handle_for(DeletionCheckWorkflow.run, workflow_id)
        try:
            description = await handle.describe()
        except Exception:
            recorded = _recorded_receipt(workflow_id.rsplit("/", 1)[-1])
            if recorded is not None:  # past Temporal's retention: the recorder keeps it
                return recorded
            raise InputError([Problem("command line", "CHECK", f"no deletion check "
                                      f"{args.check!r}; see `{command()} status`")]) from None
        if description.status and description.status.name == "RUNNING" and not args.wait:
            receipt = await handle.query("receipt", result_type=ErasureReceipt)
            _err("memlife: the check is still running; this is its receipt so far "
                 "(--wait waits for the end)")
            return receipt
        return await _await_receipt(handle)

    receipt = asyncio.run(fetch())
    return _emit_receipt(receipt, args.out, args.format)


# -- review --------------------------------------------------------------------------------


def cmd_review(args: argparse.Namespace) -> int:
    from memlife import review
    from memlife.temporal import connect_to_stack

    judge = None
    reviewer = args.reviewer or review.default_reviewer()
    if args.judge_endpoint:
        if not args.judge_model:
            return _problems([Problem("command line", "--judge-model", "required with "
                                      "--judge-endpoint")])
        key = None
        if args.judge_key_env:
            key = os.environ.get(args.judge_key_env)
            if not key:
                return _problems([Problem("command line", "--judge-key-env", f"environment "
                                          f"variable {args.judge_key_env} is not set")])
        endpoint, model = args.judge_endpoint, args.judge_model

        def judge(item: dict[str, Any]) -> review.Verdict:
            return review.judge_with_model(endpoint, model, key, item)
        reviewer = args.reviewer or f"model:{model}"

    async def session() -> dict[str, int]:
        client, _ = await connect_to_stack()
        return await review.review(client, args.queue, reviewer, judge=judge,
                                   limit=args.limit)

    counts = asyncio.run(session())
    print(f"\nreview: {counts['decided']} decided, {counts['skipped']} skipped, by {reviewer}")
    return EXIT_OK


# -- report --------------------------------------------------------------------------------


def load_artifact(reference: str) -> dict[str, Any]:
    """A run id (or `latest`) from the recorder, or an artifact file written by `run`."""
    from sqlmodel import select

    from memlife import records
    from memlife.artifact import build_artifact

    path = Path(reference)
    if path.suffix == ".json" or path.exists():
        if not path.exists():
            raise InputError([Problem(reference, "", "no such file")])
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise InputError([Problem(reference, "", f"not a JSON artifact ({error})")]
                             ) from None
        if isinstance(document, dict) and "experiment" in document and "runs" in document:
            return document
        if not isinstance(document, dict) or "summary" not in document or "meta" not in (
                document):
            raise InputError([Problem(reference, "", "not a memlife artifact (no meta/summary)")])
        return document
    run_id = reference
    if reference == "latest":
        with records.session() as db:
            latest = db.exec(select(records.RunRow).order_by(
                records.RunRow.started_at.desc()).limit(1)).first()  # type: ignore[attr-defined]
            if latest is None:
                raise InputError([Problem("command line", "RUN", "no runs recorded in "
                                          f"{records.database_url()}")])
            run_id = latest.id
    loaded = records.load_run(run_id)
    if loaded is None:
        experiment = load_experiment(run_id)
        if experiment is not None:
            return experiment
        raise InputError([Problem("command line", "RUN", f"no run {run_id!r} in "
                                  f"{records.database_url()}; give a run id, an experiment "
                                  "id, `latest`, or an artifact file")])
    return build_artifact(loaded)


def load_experiment(experiment: str) -> dict[str, Any] | None:
    """Every run of an experiment, from the recorder, as one comparison document."""
    from sqlmodel import col, select

    from memlife import records
    from memlife.artifact import build_artifact
    from memlife.experiment import experiment_document

    with records.session() as db:
        candidates = db.exec(select(records.RunRow).where(
            col(records.RunRow.meta_json).contains(experiment))).all()
        run_ids = [run.id for run in candidates
                   if json.loads(run.meta_json).get("experiment") == experiment]
    if not run_ids:
        return None
    artifacts = []
    for run_id in run_ids:
        loaded = records.load_run(run_id)
        assert loaded is not None
        artifacts.append(build_artifact(loaded))
    artifacts.sort(key=lambda a: (a["meta"].get("repetition") or 0, a["meta"]["started_at"]))
    return experiment_document(experiment, artifacts)


def cmd_report(args: argparse.Namespace) -> int:
    from memlife.experiment import render_experiment
    from memlife.reports import render

    artifact = load_artifact(args.run)
    if "runs" in artifact and "experiment" in artifact:
        text = render_experiment(artifact, args.format, redacted=not args.no_redact)
    else:
        text = render(artifact, args.format, redacted=not args.no_redact)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"report ({args.format}): {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


# -- parsers -------------------------------------------------------------------------------


def add_parsers(commands: Any) -> None:
    from memlife.reports import FORMATS
    from memlife.temporal import DEFAULT_ADDRESS
    from workflows.registry import DEFAULT_TASK_QUEUE

    default_port = int(DEFAULT_ADDRESS.rsplit(":", 1)[1])
    dev = commands.add_parser("dev", help="run the local stack (Temporal, worker, reference "
                              "target) until Ctrl-C")
    dev.add_argument("--port", type=int, default=default_port)
    dev.add_argument("--ui-port", type=int, default=8233)
    dev.add_argument("--target-port", type=int, default=8080)
    dev.add_argument("--fault", action="append", default=[], metavar="NAME",
                     help="fault for the reference target (repeatable)")
    dev.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE)
    dev.set_defaults(handler=cmd_dev)

    schedule = commands.add_parser("schedule", help="nightly runs (Temporal Schedules)")
    actions = schedule.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a schedule that starts runs")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--scenario", required=True, metavar="FILE")
    create.add_argument("--target", required=True, metavar="FILE")
    create.add_argument("--cron", required=True, help="e.g. '0 2 * * *' (02:00 every day)")
    create.add_argument("--timezone", default=None, metavar="TZ", help="IANA name (UTC)")
    create.add_argument("--catchup", default="1h", metavar="DURATION",
                        help="how late a missed run may still start (default 1h)")
    create.add_argument("--jitter", default=None, metavar="DURATION",
                        help="random delay up to this long (spreads load)")
    create.add_argument("--clock", default="real", help="real | compress=N")
    create.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE)
    create.add_argument("--paused", action="store_true")
    create.set_defaults(handler=cmd_schedule_create)
    listing = actions.add_parser("list", help="list schedules")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=cmd_schedule_list)
    for action, text in (("describe", "show a schedule"), ("trigger", "start a run now"),
                         ("pause", "pause"), ("unpause", "unpause"),
                         ("delete", "delete (started runs go on)")):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("name", metavar="NAME")
        if action in ("pause", "unpause"):
            sub.add_argument("--note", default=None)
        if action == "describe":
            sub.add_argument("--json", action="store_true")
        sub.set_defaults(handler=_schedule_action)

    status = commands.add_parser("status", help="runs and checks in flight")
    status.add_argument("run", nargs="?", metavar="RUN",
                        help="a run id, check id or workflow id: per-pair detail")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=cmd_status)

    forward = commands.add_parser("fast-forward", help="end the current waits of a run now")
    forward.add_argument("run", metavar="RUN")
    forward.set_defaults(handler=cmd_signal, signal="skip_wait")
    cancel = commands.add_parser("cancel", help="cancel a run or check cleanly")
    cancel.add_argument("run", metavar="RUN")
    cancel.add_argument("--reason", default="cancelled by an operator")
    cancel.set_defaults(handler=cmd_signal, signal="cancel")

    check = commands.add_parser("check-deletion",
                                help="is a tenant gone from every store? (erasure receipt)")
    check.add_argument("--target", required=True, metavar="FILE")
    check.add_argument("--tenant", required=True, metavar="ID", help="the tenant's user id")
    check.add_argument("--phone", default=None, help="the tenant's channel (for --ask)")
    check.add_argument("--value", action="append", default=[], metavar="V",
                       help="a value of the tenant to search for everywhere (repeatable)")
    check.add_argument("--ask", action="append", default=[], metavar="QUESTION",
                       help="ask the tenant's channel; an answer carrying a value is residue")
    check.add_argument("--request", action="store_true", help="request the deletion first")
    check.add_argument("--deadline", default="24h")
    check.add_argument("--poll", default="15m")
    check.add_argument("--wait", action="store_true", help="wait and print the receipt")
    check.add_argument("--out", default=None, metavar="FILE")
    check.add_argument("--format", choices=["md", "json"], default="md")
    check.add_argument("--id", default=None, help="check id (default: time-based)")
    check.add_argument("--task-queue", default=None)
    check.add_argument("--print-input", action="store_true",
                       help="print the workflow's JSON input (for `temporal workflow start`)")
    check.set_defaults(handler=cmd_check_deletion)

    receipt = commands.add_parser("receipt", help="the erasure receipt of a deletion check")
    receipt.add_argument("check", metavar="CHECK")
    receipt.add_argument("--wait", action="store_true")
    receipt.add_argument("--out", default=None, metavar="FILE")
    receipt.add_argument("--format", choices=["md", "json"], default="md")
    receipt.set_defaults(handler=cmd_receipt)

    review_parser = commands.add_parser(
        "review", help="review queued replies blind (or let a model judge them)")
    review_parser.add_argument("--queue", default="default")
    review_parser.add_argument("--reviewer", default=None,
                               help="who decides (default: $MEMLIFE_REVIEWER or $USER)")
    review_parser.add_argument("--limit", type=int, default=None, metavar="N")
    review_parser.add_argument("--judge-endpoint", default=None, metavar="URL",
                               help="an OpenAI-compatible API base URL: a model decides")
    review_parser.add_argument("--judge-model", default=None)
    review_parser.add_argument("--judge-key-env", default=None, metavar="VAR",
                               help="environment variable holding the endpoint's API key")
    review_parser.set_defaults(handler=cmd_review)

    report = commands.add_parser("report", help="a run's report: json | md | html | junit")
    report.add_argument("run", metavar="RUN", help="run id, `latest`, or an artifact file")
    report.add_argument("--format", choices=FORMATS, default="md")
    report.add_argument("--out", default=None, metavar="FILE")
    report.add_argument("--no-redact", action="store_true",
                        help="keep phone numbers and tenant ids")
    report.set_defaults(handler=cmd_report)


