"""memlife's command line. Exit codes: 0 ok, 1 checks failed (--enforce), 2 bad input or an
unreachable service (one clear line, no traceback, nothing started)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memlife import __version__
from memlife.display import command, output_console, temporal_command, wait_showing
from memlife.errors import InputError, MemlifeError, Problem, collect
from memlife.yamlio import load_yaml_file

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
STATE_DIR = Path(".memlife")


def _print_err(message: str) -> None:
    print(message, file=sys.stderr)


# -- validate ------------------------------------------------------------------------------


def _is_target_document(data: Any) -> bool:
    return isinstance(data, dict) and ("base_url" in data or "operations" in data)


def cmd_validate(args: argparse.Namespace) -> int:
    from memlife.scenario import parse_scenario
    from memlife.targets.config import parse_target

    status = EXIT_OK
    for file in args.files:
        try:
            data = load_yaml_file(file)
            if _is_target_document(data):
                target = parse_target(data, file)
                missing = [name for name in target.secret_names() if name not in os.environ]
                note = f" (secrets not set here: {', '.join(missing)})" if missing else ""
                print(f"{file}: ok: target {target.name!r} at {target.base_url}, "
                      f"{len(target.stores)} store(s){note}")
            else:
                scenario = parse_scenario(data, file)
                pairs = (f"{scenario.generate.count} generated pair(s)" if scenario.generate
                         else f"{len(scenario.pairs)} pair(s)")
                print(f"{file}: ok: scenario {scenario.name!r}, {pairs}, "
                      f"{len(scenario.domains)} domain(s), {len(scenario.timeline)} step(s)")
        except InputError as error:
            for problem in error.problems:
                _print_err(str(problem))
            status = EXIT_USAGE
    return status


# -- run -----------------------------------------------------------------------------------


def _git_revision() -> str | None:
    source = Path(__file__).resolve().parent.parent
    try:
        result = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, timeout=5, check=False,
    ).stdout.strip()
    return result.stdout.strip() + ("-dirty" if dirty else "")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _check_target_reachable(file: str, base_url: str) -> None:
    """Any HTTP answer will do: this only guards against starting a run at nothing."""
    import httpx

    from memlife.errors import UnreachableError

    try:
        httpx.get(base_url, timeout=5)
    except httpx.HTTPError as exc:
        reason = {"ConnectError": "connection refused or no such host",
                  "ConnectTimeout": "connection timed out"}.get(type(exc).__name__,
                                                                type(exc).__name__)
        raise UnreachableError(
            f"{file}: base_url: cannot reach {base_url} ({reason}); start the target, or fix "
            "base_url"
        ) from None


@dataclass
class Configuration:
    """One system under test in a run: a target file, or the bundled reference target in
    one retrieval mode. Several make an experiment (seed §9): same tenants and values."""

    label: str
    target: Any = None  # a Target; None: the bundled reference target
    retrieval: str = "combined"
    file: str = "reference"
    faults: list[str] | None = None  # None: the command line's --fault


def cmd_run(args: argparse.Namespace) -> int:
    from memlife.lifecycle import parse_clock
    from memlife.reference.store import RETRIEVAL_MODES
    from memlife.scenario import load_scenario
    from memlife.targets.config import load_target, reference_target

    problems: list[Problem] = []
    scenario = collect(problems, load_scenario, args.scenario)
    files = args.target or ["reference"]
    modes = [mode.strip() for text in args.retrieval for mode in text.split(",") if mode.strip()]
    for mode in modes:
        if mode not in RETRIEVAL_MODES:
            problems.append(Problem("command line", "--retrieval", f"unknown mode {mode!r}; "
                                    f"one of {', '.join(RETRIEVAL_MODES)}"))
    configurations: list[Configuration] = []
    if args.matrix:
        if args.target or args.retrieval:
            problems.append(Problem("command line", "--matrix", "replaces --target and "
                                    "--retrieval; give one or the other"))
        configurations += collect(problems, _matrix_configurations, args.matrix) or []
        files = []
    for file in files:
        if file == "reference":
            for mode in modes or ["combined"]:
                configurations.append(Configuration(
                    label=f"reference/{mode}" if modes else "reference", retrieval=mode))
            continue
        target = collect(problems, load_target, file)
        if target is not None:
            configurations.append(Configuration(label=target.name, target=target, file=file))
    if args.fault and any(c.target is not None for c in configurations):
        problems.append(Problem("command line", "--fault", "applies only to the bundled "
                                "reference target (--target reference)"))
    if modes and "reference" not in files:
        problems.append(Problem("command line", "--retrieval", "applies only to the bundled "
                                "reference target (--target reference)"))
    labels = [c.label for c in configurations]
    for label in {label for label in labels if labels.count(label) > 1}:
        problems.append(Problem("command line", "--target", f"two configurations are both "
                                f"named {label!r}; give each target file its own name"))
    if args.repeat is not None and args.repeat < 1:
        problems.append(Problem("command line", "--repeat", "must be at least 1"))
    if args.pairs is not None and scenario is not None:
        if scenario.generate is None:
            problems.append(Problem("command line", "--pairs", f"{args.scenario} lists its "
                                    "pairs; --pairs needs a scenario with `generate`"))
        elif not 1 <= args.pairs <= 20_000:
            problems.append(Problem("command line", "--pairs", "must be 1 to 20000"))
        else:
            scenario = scenario.model_copy(update={"generate": scenario.generate.model_copy(
                update={"count": args.pairs})})
    if args.max_active_pairs < 0:
        problems.append(Problem("command line", "--max-active-pairs",
                                "must be 0 (every pair at once) or a number of pairs"))
    if args.cohort != "auto" and not (args.cohort.isdigit() and int(args.cohort) <= 500):
        problems.append(Problem("command line", "--cohort", "must be auto, 0 (a workflow "
                                "per pair) or a cohort size up to 500"))
    try:
        clock = parse_clock(args.clock)
    except ValueError as error:
        problems.append(Problem("command line", "--clock", str(error)))
    if problems:
        for problem in problems:
            _print_err(str(problem))
        return EXIT_USAGE
    assert scenario is not None
    for configuration in configurations:
        described = configuration.target or reference_target("http://127.0.0.1:8080")
        cross = _scenario_target_problems(scenario, described, configuration.file,
                                          args.scenario)
        if cross:
            for problem in cross:
                _print_err(str(problem))
            return EXIT_USAGE
    _ensure_runtime_extras([c.target for c in configurations if c.target is not None])
    for configuration in configurations:
        target = configuration.target
        if target is None:
            continue
        missing = [name for name in target.secret_names() if name not in os.environ]
        if missing:
            _print_err(f"{configuration.file}: environment variable(s) "
                       f"{', '.join(missing)} (named by its headers or probes) not set; "
                       "export them before running")
            return EXIT_USAGE
        _check_target_reachable(configuration.file, target.base_url)
    args.scenario_generates = scenario.generate is not None
    args.repeat = args.repeat or scenario.repetitions
    return asyncio.run(_run(args, scenario, configurations, clock))


def _ensure_runtime_extras(targets: list[Any]) -> None:
    """What this command will run beyond memlife's core, installed once: the clients of
    the targets' probes, and the PostgreSQL driver when the recorder is PostgreSQL."""
    from memlife import extras, records

    if records.database_url().startswith("postgresql"):
        extras.ensure("postgres", "the PostgreSQL recorder (MEMLIFE_DB_URL)")
    for target in targets:
        for extra, purpose in extras.for_target(target):
            extras.ensure(extra, purpose)


def _matrix_configurations(path: str) -> list[Configuration]:
    from memlife.experiment import load_matrix
    from memlife.targets.config import load_target

    matrix = load_matrix(path)
    configurations = []
    problems: list[Problem] = []
    for entry in matrix.configurations:
        if entry.target is None:
            configurations.append(Configuration(label=entry.name,
                                                retrieval=entry.retrieval or "combined",
                                                faults=list(entry.faults)))
            continue
        file = str(Path(path).parent / entry.target)
        target = collect(problems, load_target, file)
        if target is not None:
            configurations.append(Configuration(label=entry.name, target=target, file=file))
    if problems:
        raise InputError(problems)
    return configurations


def _scenario_target_problems(scenario: Any, target: Any, file: str,
                              scenario_file: str) -> list[Problem]:
    """What the scenario asks of the target that the target file cannot do."""
    from memlife.scenario import AwaitDeletionStep, DeleteStep, InspectStep

    problems = []
    for index, step in enumerate(scenario.timeline):
        if isinstance(step, DeleteStep) and step.domains and target.operations.forget is None:
            problems.append(Problem(file, "operations.forget", f"the scenario forgets single "
                                    f"facts (timeline.{index}) but the target file has no "
                                    "forget operation; drop the step or describe one"))
            break
    for index, step in enumerate(scenario.timeline):
        if (isinstance(step, DeleteStep) and not step.domains
                or isinstance(step, AwaitDeletionStep)) and (
                target.operations.delete_tenant is None):
            problems.append(Problem(file, "operations.delete_tenant", f"the scenario deletes "
                                    f"tenants (timeline.{index}) but the target file has no "
                                    "delete_tenant operation"))
            break
    declared = [store.name for store in target.stores if store.probe is not None]
    for index, step in enumerate(scenario.timeline):
        if isinstance(step, InspectStep) and step.stores:
            for position, name in enumerate(step.stores):
                if name not in declared:
                    problems.append(Problem(
                        scenario_file, f"timeline.{index}.stores.{position}",
                        f"unknown store {name!r}; {file} probes: {', '.join(declared) or 'none'}"))
    inspects = [i for i, step in enumerate(scenario.timeline) if isinstance(step, InspectStep)]
    if inspects and not any(store.probe for store in target.stores):
        problems.append(Problem(file, "stores", f"the scenario inspects stores "
                                f"(timeline.{inspects[0]}) but no store has a probe"))
    return problems


@dataclass
class StartedRun:
    run_id: str
    configuration: str
    repetition: int
    handle: Any
    link: str | None


async def _run(args: argparse.Namespace, scenario: Any, configurations: list[Configuration],
               clock: Any) -> int:
    from contextlib import AsyncExitStack

    from memlife import embedded, records
    from memlife.artifact import build_artifact
    from memlife.lifecycle import cohort_size
    from memlife.scenario import materialize
    from memlife.temporal import configured_connection, connect
    from workflows.registry import DEFAULT_TASK_QUEUE

    experiment = new_run_id() if len(configurations) > 1 or args.repeat > 1 else None
    task_queue = args.task_queue or DEFAULT_TASK_QUEUE
    started: list[StartedRun] = []
    embedded_ui = False  # a Web UI that stops with this command
    async with AsyncExitStack() as stack:
        connection = configured_connection()
        dev_stack = None if connection is not None or clock.mode == "skip" else (
            await _running_dev_stack())
        if connection is not None:
            client = await connect(connection)
            address, web_ui = connection["target_host"], os.environ.get("MEMLIFE_WEB_UI")
        elif dev_stack is not None:
            client, address, web_ui = dev_stack
            print(f"using the local stack from `{command()} dev` at {address}", file=sys.stderr)
        else:
            temporal = await stack.enter_async_context(embedded.embedded_temporal(
                STATE_DIR, skip_time=clock.mode == "skip"))
            client, address, web_ui = temporal.client, temporal.address, temporal.web_ui
            embedded_ui = web_ui is not None
        # The time-skipping server has no custom search attributes.
        search_attributes = clock.mode != "skip" and await _search_attributes_ready(client)
        if not args.no_worker:
            await stack.enter_async_context(embedded.running_worker(client, task_queue))
        if experiment:
            print(f"memlife {__version__} · experiment {experiment} · scenario "
                  f"{scenario.name} · {len(configurations)} configuration(s) × "
                  f"{args.repeat} repetition(s) · clock {clock.describe()}", flush=True)
        for repetition in range(1, args.repeat + 1):
            # Every configuration of a repetition gets the same tenants and values; every
            # repetition fresh ones.
            base_seed = args.seed or experiment or ""
            for configuration in configurations:
                run_id = new_run_id()
                seed = (f"{base_seed}-r{repetition}" if args.repeat > 1 else base_seed) or run_id
                materialized = materialize(scenario, seed)
                cohort = (cohort_size(len(materialized.pairs)) if args.cohort == "auto"
                          else int(args.cohort))
                target, identity = configuration.target, {}
                if target is None:
                    from memlife.targets.config import reference_target

                    # A fresh database per run: needle searches see this run's data only.
                    faults = (args.fault if configuration.faults is None
                              else configuration.faults)
                    process = stack.enter_context(embedded.reference_target(
                        STATE_DIR, faults, db_path=STATE_DIR / "reference" / f"{run_id}.db",
                        retrieval=configuration.retrieval))
                    target = reference_target(process.base_url)
                    identity = {"kind": "bundled reference target",
                                "faults": ",".join(faults) or "none",
                                "retrieval": configuration.retrieval}
                started.append(await _start_run(
                    args, client, materialized, target, identity, clock, run_id, seed,
                    scenario if cohort else materialized, cohort,
                    address, web_ui, task_queue, search_attributes, experiment,
                    configuration.label, repetition))
                if clock.mode == "skip":
                    # One skipped clock for the whole server: runs take turns.
                    await _await_runs(client, started[-1:])
        if clock.mode != "skip":
            await _await_runs(client, started)

    artifacts = []
    # The whole artifact (every case and observation) only where it is written or compared;
    # the summary table needs the digest alone, streamed at any size.
    whole = bool(args.out) or experiment is not None
    for run in started:
        if whole:
            loaded = records.load_run(run.run_id)
            artifact = None if loaded is None else build_artifact(loaded)
        else:
            artifact = records.run_digest(run.run_id)
        if artifact is None:
            _print_err(f"run {run.run_id} finished but its records are not in "
                       f"{records.database_url()}; is MEMLIFE_DB_URL the same for the workers "
                       "and this command?")
            return EXIT_USAGE
        artifacts.append(artifact)
    if experiment is None:
        artifact = artifacts[0]
        link = started[0].link
        if link and embedded_ui:  # the server is gone; `memlife dev` serves its history
            link = (f"run `{command()} dev` (it keeps {STATE_DIR / 'temporal.db'}), then open "
                    f"{link}")
        _print_summary(artifact, link)
        document = artifact
    else:
        from memlife.experiment import experiment_document

        document = experiment_document(experiment, artifacts)
        _print_comparison(document)
    if args.out:
        _write_immutable_json(Path(args.out), document)
        print(f"artifact: {args.out}")
    if args.enforce and not all(a["summary"]["passed"] for a in artifacts):
        return EXIT_FAILED
    return EXIT_OK


async def _start_run(args: argparse.Namespace, client: Any, scenario: Any, target: Any,
                     identity: dict[str, str], clock: Any, run_id: str, seed: str,
                     written: Any, cohort: int,
                     address: str, web_ui: str | None, task_queue: str,
                     search_attributes: bool, experiment: str | None, configuration: str,
                     repetition: int) -> StartedRun:
    from memlife.durations import format_duration
    from memlife.lifecycle import RunInput, RunMeta, suite_workflow_id
    from workflows import attributes
    from workflows.suite import SuiteWorkflow

    settle = next((step.duration for step in scenario.timeline if step.step == "wait"), None)
    meta = RunMeta(
        memlife_version=__version__, git_revision=_git_revision(),
        command=shlex.join(["memlife", *sys.argv[1:]]),
        scenario_file=str(args.scenario), scenario_name=scenario.name,
        scenario_sha256=hashlib.sha256(Path(args.scenario).read_bytes()).hexdigest(),
        target_name=target.name, target_base_url=target.base_url, target_identity=identity,
        settle=format_duration(settle) if settle else None,
        clock=clock.describe(), temporal_address=address, web_ui=web_ui,
        canary_seed=seed if args.scenario_generates else None,
        experiment=experiment, configuration=configuration if experiment else None,
        repetition=repetition if experiment else None,
    )
    workflow_id = suite_workflow_id(scenario.name, run_id)
    link = (f"{web_ui}/namespaces/{client.namespace}/workflows/{quote(workflow_id, safe='')}"
            if web_ui else None)
    where = f" · {configuration} #{repetition}" if experiment else ""
    print(f"memlife {__version__} · run {run_id} · scenario {scenario.name} "
          f"({len(scenario.pairs)} pair(s)) · target {target.name} at {target.base_url} "
          f"· clock {clock.describe()}{where}")
    handle = await client.start_workflow(
        SuiteWorkflow.run,
        RunInput(run_id=run_id, scenario=written, target=target, clock=clock, meta=meta,
                 search_attributes=search_attributes, review_queue=args.review,
                 cohort_size=cohort, seed=seed if cohort else None,
                 max_active_pairs=args.max_active_pairs),
        id=workflow_id, task_queue=task_queue,
        static_summary=f"{scenario.name} against {target.name} ({clock.describe()}){where}",
        search_attributes=attributes.start_attributes(
            scenario=scenario.name, target=target.name, run=run_id)
        if search_attributes else None,
    )
    return StartedRun(run_id, configuration, repetition, handle, link)


async def _await_runs(client: Any, runs: list[StartedRun]) -> list[Any]:
    if len(runs) == 1:
        run = runs[0]
        scenario = run.handle.id.split("/")[1]
        return [await _await_with_progress(client, run.handle, scenario, run.run_id)]
    from rich.console import Console

    console = Console(stderr=True)
    from memlife.temporal import suite_result

    pending = {asyncio.ensure_future(suite_result(run.handle)): run for run in runs}
    loop = asyncio.get_running_loop()
    started = loop.time()
    with console.status("starting…") as status:
        while not all(future.done() for future in pending):
            await asyncio.wait(list(pending), timeout=2.0)
            done = sum(1 for future in pending if future.done())
            status.update(f"{done}/{len(runs)} run(s) done · {loop.time() - started:.0f}s")
    return [future.result() for future in pending]


async def _running_dev_stack() -> tuple[Any, str, str | None] | None:
    """The `memlife dev` stack of this directory, when it is up: runs then show in its Web
    UI and its recorder, beside the scheduled ones."""
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from memlife.devstack import read_stack
    from memlife.temporal import mark_client_used

    info = read_stack(STATE_DIR)
    if info is None:
        return None
    mark_client_used()
    try:
        client = await asyncio.wait_for(Client.connect(
            info.temporal_address, data_converter=pydantic_data_converter), timeout=3)
        await client.workflow_service.get_system_info(GetSystemInfoRequest())
    except Exception:  # a stale file from a stack that was killed: run embedded instead
        return None
    return client, info.temporal_address, info.web_ui


async def _search_attributes_ready(client: Any) -> bool:
    from memlife.temporal import ensure_search_attributes
    from workflows import attributes

    missing = await ensure_search_attributes(client)
    if missing:
        _print_err("memlife: note: this namespace lacks memlife's search attributes ("
                   + ", ".join(missing) + "); runs work, but cannot be found by them. "
                   "Register them once with:\n  " + "\n  ".join(attributes.create_commands(
                       temporal_command())))
    return not missing


async def _await_with_progress(client: Any, handle: Any, scenario: str, run_id: str) -> Any:
    from memlife.progress import describe_run_progress, pair_progress

    async def describe() -> str:
        progress = await handle.query("progress")
        pairs = await pair_progress(client, scenario, run_id, progress["pairs"],
                                     progress.get("cohort_size", 0))
        return describe_run_progress(progress, pairs, datetime.now(UTC))

    from memlife.temporal import suite_result

    return await wait_showing(handle, describe, "waiting for the worker…", suite_result)


def _print_comparison(document: dict[str, Any]) -> None:
    from rich.table import Table

    from memlife.experiment import comparison_rows

    console = output_console()
    labels, rows = comparison_rows(document)
    meta = document["experiment"]
    table = Table(title=f"experiment {meta['id']}: {len(labels)} configuration(s) × "
                  f"{meta['repetitions']} repetition(s) (95% CI over pairs)",
                  title_justify="left")
    table.add_column("")
    for label in labels:
        table.add_column(label, justify="right")
    for row in rows:
        table.add_row(*[f"[red]{value}[/red]" if value == "FAIL" else value for value in row])
    console.print(table)
    for artifact in document["runs"]:
        summary = artifact["summary"]
        console.print(f"  {artifact['meta'].get('configuration')} #"
                      f"{artifact['meta'].get('repetition')}: run {artifact['meta']['run_id']}"
                      f" · {summary['cases_passed']}/{summary['cases']} cases")


def _print_summary(artifact: dict[str, Any], link: str | None) -> None:
    from rich.table import Table

    console = output_console(width=140)
    summary, latency = artifact["summary"], artifact["latency_ms"]
    table = Table(title="memlife: checks by invariant", title_justify="left")
    table.add_column("invariant")
    table.add_column("checked", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("inconclusive", justify="right")
    table.add_column("verdict")
    for name, tally in summary["by_invariant"].items():
        if not tally["checked"]:
            continue
        if tally["failed"]:
            verdict = "[red]fail[/red]"
        elif tally["inconclusive"]:
            verdict = "[yellow]inconclusive[/yellow]"
        else:
            verdict = "[green]pass[/green]"
        table.add_row(name, str(tally["checked"]), str(tally["failed"]),
                      str(tally["inconclusive"]), verdict)
    console.print(table)
    _print_matrix(console, artifact)
    if artifact.get("deletions"):
        times = [d["time_to_forget_s"] for d in artifact["deletions"]
                 if d["time_to_forget_s"] is not None]
        confirmed = sum(1 for d in artifact["deletions"] if d["outcome"] == "pass")
        text = f"deletions: {confirmed}/{len(artifact['deletions'])} confirmed within the SLA"
        if times:
            text += f" · time-to-forget median {sorted(times)[len(times) // 2] / 60:.0f} min"
        console.print(text)
    if latency["count"]:
        console.print(
            f"latency (ms): mean {latency['mean']:.1f} · median {latency['median']:.1f} · "
            f"p95 {latency['p95']:.1f} · max {latency['max']:.1f} · "
            f"{latency['share_within_target'] * 100:.0f}% within {latency['target_ms']:g} ms"
        )
    failures = artifact["failures"]
    if failures:
        failure_table = Table(title=f"failures ({len(failures)})", title_justify="left")
        for column in ("invariant", "reason", "stage", "tenant", "store", "value"):
            failure_table.add_column(column, overflow="fold")
        for failure in failures[:25]:
            failure_table.add_row(
                failure["invariant"], failure["reason"], failure["stage"],
                f"{failure['tenant']} (pair {failure['pair']})", failure["store"],
                failure["evidence"].get("value") or "",
            )
        console.print(failure_table)
        if len(failures) > 25:
            console.print(f"… and {len(failures) - 25} more in the artifact")
    if artifact["inconclusive"]:
        console.print(f"[yellow]{len(artifact['inconclusive'])} inconclusive check(s)[/yellow] "
                      "(target errors; inconclusive never counts as a pass)")
    verdict = "[green]PASS[/green]" if summary["passed"] else "[red]FAIL[/red]"
    console.print(f"{verdict}: {summary['cases_passed']}/{summary['cases']} cases passed · "
                  f"{len(failures)} failure(s) · run {artifact['meta']['run_id']}")
    if link:
        console.print(f"Web UI: {link}", soft_wrap=True)


def _print_matrix(console: Any, artifact: dict[str, Any]) -> None:
    """Invariant × store rows, one column per stage: passed/checked, red where failed."""
    from rich.table import Table

    matrix, stages = artifact.get("matrix", {}), artifact.get("stages", [])
    used = [stage for stage in stages
            if any(stage in cells for stores in matrix.values() for cells in stores.values())]
    if len(used) < 2:
        return  # one stage: the invariant table already says it all
    table = Table(title="invariant × store × stage (passed/checked)", title_justify="left")
    table.add_column("invariant")
    table.add_column("store")
    for stage in used:
        table.add_column(stage, justify="center")
    from memlife.lifecycle import INVARIANTS

    order = {name: index for index, name in enumerate(INVARIANTS)}
    for invariant, stores in sorted(matrix.items(), key=lambda item: order.get(item[0], 99)):
        for store, cells in sorted(stores.items(), key=lambda item: (item[0] != "response",
                                                                     item[0])):
            row = []
            for stage in used:
                cell = cells.get(stage)
                if cell is None:
                    row.append("")
                    continue
                passed = cell["checked"] - cell["failed"] - cell["inconclusive"]
                text = f"{passed}/{cell['checked']}"
                if cell["failed"]:
                    text = f"[red]{text}[/red]"
                elif cell["inconclusive"]:
                    text = f"[yellow]{text}[/yellow]"
                row.append(text)
            table.add_row(invariant, store, *row)
    console.print(table)


def _write_immutable_json(path: Path, document: dict[str, Any]) -> None:
    """Write atomically and read-only: the artifact is a record, not a working file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    temporary.chmod(0o444)
    os.replace(temporary, path)


# -- target serve --------------------------------------------------------------------------


def cmd_target_serve(args: argparse.Namespace) -> int:
    if args.kind == "realstack":
        return _serve_realstack(args)
    import uvicorn

    from memlife.reference.app import create_app
    from memlife.reference.store import FAULTS, ReferenceRuntime

    unknown = [fault for fault in args.fault if fault not in FAULTS]
    if unknown:
        _print_err(f"--fault: unknown fault {unknown[0]!r}; known: {', '.join(FAULTS)}")
        return EXIT_USAGE
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.container:
        _print_err("--host: the reference target binds loopback only (127.0.0.1 or ::1); "
                   "inside a container, add --container to listen on its network")
        return EXIT_USAGE
    from memlife.durations import parse_duration

    try:
        service_time = parse_duration(args.service_time).total_seconds() if (
            args.service_time) else 0.0
    except ValueError as error:
        _print_err(f"--service-time: {error}")
        return EXIT_USAGE
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            _print_err(f"--api-key-env: environment variable {args.api_key_env} is not set")
            return EXIT_USAGE
    runtime = ReferenceRuntime(args.db, args.fault, args.retrieval)
    faults = ", ".join(args.fault) or "none"
    print(f"reference target on http://{args.host}:{args.port} (db {args.db}, faults: {faults},"
          f" retrieval: {args.retrieval})", flush=True)
    try:
        uvicorn.run(create_app(runtime, service_time, api_key), host=args.host,
                    port=args.port, log_level="warning")
    finally:
        runtime.close()
    return EXIT_OK


def _serve_realstack(args: argparse.Namespace) -> int:
    """The seed's runtime from real libraries; prints the variables its target file reads
    the stores with, and writes them beside the data as realstack.env."""
    import uvicorn

    from memlife.realstack.serve import (
        RealstackUnavailable,
        falkordb_server,
        probe_environment,
        require_extra,
    )

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        _print_err("--host: the realstack target binds loopback only (127.0.0.1 or ::1)")
        return EXIT_USAGE
    try:
        require_extra()
    except RealstackUnavailable as error:
        _print_err(f"target serve realstack: {error}")
        return EXIT_USAGE
    import socket

    from memlife.realstack.app import create_app
    from memlife.realstack.runtime import RealstackRuntime

    with socket.socket() as probe:  # before the models load (seconds), not after
        try:
            probe.bind((args.host, args.port))
        except OSError as error:
            _print_err(f"--port: cannot listen on {args.host}:{args.port} ({error.strerror}); "
                       "choose a free port")
            return EXIT_USAGE
    data_dir = Path(args.data_dir)
    try:
        with falkordb_server(data_dir / "falkordb") as falkordb_url:
            environment = probe_environment(data_dir, falkordb_url)
            exports = "".join(f"export {name}={value}\n" for name, value in environment.items())
            (data_dir / "realstack.env").write_text(exports, encoding="utf-8")
            print("loading Mem0 (local Qdrant, all-MiniLM-L6-v2), LangGraph and FalkorDB ...",
                  flush=True)
            runtime = RealstackRuntime(data_dir, falkordb_url)
            print(f"realstack target on http://{args.host}:{args.port} (data {data_dir}).\n"
                  "Its stores, for scenarios/targets/realstack.yaml (also in "
                  f"{data_dir / 'realstack.env'}):\n{exports}", end="", flush=True)
            try:
                uvicorn.run(create_app(runtime), host=args.host, port=args.port,
                            log_level="warning")
            finally:
                runtime.close()
    except RealstackUnavailable as error:
        _print_err(f"target serve realstack: {error}")
        return EXIT_FAILED
    return EXIT_OK


def cmd_target_check(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife.targetcheck import check_target
    from memlife.targets.config import load_target

    target = load_target(args.file)  # bad files: one line per problem, exit 2 (main)
    _ensure_runtime_extras([target])
    missing = [name for name in target.secret_names() if name not in os.environ]
    if missing:
        _print_err(f"{args.file}: headers: environment variable(s) {', '.join(missing)} not "
                   "set; export them before checking")
        return EXIT_USAGE
    _check_target_reachable(args.file, target.base_url)
    check = asyncio.run(check_target(target))
    console = output_console()
    table = Table(title=f"{args.file}: {target.name} at {target.base_url}",
                  title_justify="left")
    for column in ("operation", "request", "", "result"):
        table.add_column(column, overflow="fold")
    for result in check.results:
        mark = ("[green]ok[/green]" if result.ok else
                "[yellow]note[/yellow]" if result.optional else "[red]FAIL[/red]")
        table.add_row(result.operation, result.request, mark, result.detail)
    console.print(table)
    if check.misconfigured:
        console.print(f"[red]{len(check.misconfigured)} operation(s) or probe(s) do not work "
                      "as the file describes them[/red]: fix the fields named above")
        return EXIT_USAGE
    console.print("ok: every operation and probe works as the file describes it")
    return EXIT_OK


# -- entry point ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from memlife.lifecycle import (
        AUTO_COHORT,
        AUTO_COHORT_ABOVE,
        DEFAULT_MAX_ACTIVE_PAIRS,
    )
    from memlife.reference.store import RETRIEVAL_MODES

    parser = argparse.ArgumentParser(
        prog="memlife",
        description="Long-horizon lifecycle tests for multi-tenant conversational memory.",
    )
    parser.add_argument("--version", action="version", version=f"memlife {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check scenario and target files")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(handler=cmd_validate)

    run = commands.add_parser("run", help="run a scenario's lifecycles against a target")
    run.add_argument("scenario", metavar="SCENARIO")
    run.add_argument("--target", action="append", default=[], metavar="FILE",
                     help="target file, or 'reference' for the bundled reference target; "
                     "repeat it to compare configurations side by side")
    run.add_argument("--retrieval", action="append", default=[], metavar="MODES",
                     help="retrieval modes of the bundled reference target to compare, "
                     "e.g. thread,vector,graph,combined")
    run.add_argument("--repeat", type=int, default=None, metavar="N",
                     help="run N times with fresh tenants and values; every result kept "
                     "(default: the scenario's `repetitions`, 1)")
    run.add_argument("--review", nargs="?", const="default", default=None, metavar="QUEUE",
                     help="queue the replies exact matching failed for blinded review "
                     "(memlife review)")
    run.add_argument("--matrix", default=None, metavar="FILE",
                     help="configurations to compare (target files, reference retrieval "
                     "modes and faults), side by side")
    run.add_argument("--fault", action="append", default=[], metavar="NAME",
                     help="fault to inject into the bundled reference target (repeatable)")
    run.add_argument("--clock", default="real", help="real | skip | compress=N")
    run.add_argument("--out", metavar="FILE", help="write the JSON result artifact here")
    run.add_argument("--enforce", action="store_true",
                     help="exit 1 when any case fails or the latency target is missed")
    run.add_argument("--seed", default=None,
                     help="seed for generated canary values (default: the run id)")
    run.add_argument("--pairs", type=int, default=None, metavar="N",
                     help="generate N pairs instead of the scenario's `generate.count`")
    run.add_argument("--cohort", default="auto", metavar="N",
                     help="pairs per cohort workflow (their calls batched per step); 0: one "
                     f"workflow per pair; auto: cohorts of {AUTO_COHORT} above "
                     f"{AUTO_COHORT_ABOVE} pairs")
    run.add_argument("--max-active-pairs", type=int, default=DEFAULT_MAX_ACTIVE_PAIRS,
                     metavar="N", help="pairs in flight at once, in cohorts; later cohorts "
                     "start as earlier ones end, which bounds the worker's memory (default "
                     f"{DEFAULT_MAX_ACTIVE_PAIRS}; 0: every pair at once)")
    run.add_argument("--task-queue", default=None)
    run.add_argument("--no-worker", action="store_true",
                     help="do not run an in-process worker (standalone workers serve the run)")
    run.set_defaults(handler=cmd_run)

    target = commands.add_parser("target", help="target files and the bundled targets")
    target_commands = target.add_subparsers(dest="target_command", required=True,
                                            metavar="SUBCOMMAND")
    serve = target_commands.add_parser("serve", help="serve a bundled target over HTTP")
    serve.add_argument("kind", choices=["reference", "realstack"],
                       help="reference: the bundled SQLite model of the seed runtime; "
                       "realstack: the same surface on Mem0, LangGraph and FalkorDB "
                       "(extra memlife[realstack])")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--container", action="store_true",
                       help="allow --host beyond loopback (a container's own network only)")
    serve.add_argument("--db", default=str(STATE_DIR / "reference-target.db"))
    serve.add_argument("--data-dir", default=str(STATE_DIR / "realstack"),
                       help="realstack: where its stores keep their files")
    serve.add_argument("--fault", action="append", default=[], metavar="NAME")
    serve.add_argument("--api-key-env", default=None, metavar="NAME",
                       help="require 'Authorization: Bearer <value of NAME>' on every request")
    serve.add_argument("--service-time", default=None, metavar="DURATION",
                       help="simulated thinking time per conversation turn, e.g. 300ms")
    serve.add_argument("--retrieval", choices=RETRIEVAL_MODES, default="combined",
                       help="which layers answer: the thread, vector memory or the graph "
                       "alone, or all with the seed's precedence (default)")
    serve.set_defaults(handler=cmd_target_serve)
    target_check = target_commands.add_parser(
        "check", help="exercise every operation and probe of a target file once")
    target_check.add_argument("file", metavar="FILE")
    target_check.set_defaults(handler=cmd_target_check)

    from memlife.operations import add_parsers

    add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from temporalio.client import WorkflowFailureError

    from memlife.log import configure, forward_sdk_core_logs

    args = build_parser().parse_args(argv)
    # dev: the worker's steps, and what the SDK warns about, as a worker's log would.
    configure(level="INFO" if args.command == "dev" else "WARNING",
              sdk_level="WARNING" if args.command == "dev" else "ERROR")
    forward_sdk_core_logs()
    try:
        return args.handler(args)
    except InputError as error:  # one line per problem: file, field, reason
        for problem in error.problems:
            _print_err(str(problem))
        return EXIT_USAGE
    except MemlifeError as error:
        _print_err(f"memlife: {error}")
        return EXIT_USAGE
    except WorkflowFailureError as error:
        # Verdicts are data: a workflow that fails is memlife or its cluster failing.
        cause = error.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause
        _print_err(f"memlife: a workflow failed ({type(cause).__name__}: {cause}); what was "
                   "recorded so far is kept; see the worker's log and the Web UI")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _print_err("memlife: interrupted")
        return 130


def entry() -> None:
    """The `memlife` executable. After a command that used a Temporal client, the process
    ends without interpreter teardown: the SDK's Rust threads can otherwise abort a
    finished command during finalization (temporalio/sdk-python#300). Output is flushed
    first; nothing memlife writes depends on atexit handlers."""
    code = main()
    from memlife import temporal

    if temporal.client_used():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
