"""Running a plan (api/plan.py): connect to Temporal (a configured cluster, the running
`memlife dev` stack, or an embedded server), start one SuiteWorkflow per configuration
and repetition, wait for them, and read what they found from the recorder. What a
person sees along the way goes through an `Output` (the command line prints it; Python
callers get nothing unless they ask)."""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from memlife import __version__
from memlife.api.plan import Configuration, RunPlan
from memlife.stack import STATE_DIR
from memlife.stack.processes import StoppedTogether

if TYPE_CHECKING:
    from memlife.stack.devstack import StackInfo


class Output:
    """What a run tells a person. The default tells nothing and waits silently; the
    command line's (cli/runner.py) prints and shows a live status line."""

    def say(self, line: str) -> None:
        """A line of the run's story (stdout on the command line)."""

    def note(self, line: str) -> None:
        """A remark beside it (stderr on the command line)."""

    async def wait(
        self,
        handle: Any,
        describe: Callable[[], Awaitable[str]],
        waiting: str,
        result_of: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """The workflow's result; the command line shows `describe()` meanwhile."""
        return await result_of(handle)

    async def wait_all(self, results: list[Awaitable[Any]]) -> list[Any]:
        """Every run's result; the command line shows how many are done meanwhile."""
        return list(await asyncio.gather(*results))


@dataclass
class Session:
    """Where the runs of one command go."""

    client: Any
    address: str
    web_ui: str | None
    task_queue: str
    search_attributes: bool
    experiment: str | None
    stopped_together: StoppedTogether  # the reference targets' stops (StoppedTogether)
    target_queue: str | None = None


@dataclass
class StartedRun:
    run_id: str
    configuration: str
    repetition: int
    handle: Any
    link: str | None


@dataclass
class Started:
    """The runs one plan started, and where: the recorder has what they found."""

    runs: list[StartedRun] = field(default_factory=list)
    experiment: str | None = None
    embedded_ui: bool = False  # the Web UI stopped with the runs


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


async def start_and_await(plan: RunPlan, output: Output) -> Started:
    """Start every run of the plan and wait for all of them."""
    from memlife import DEFAULT_TASK_QUEUE
    from memlife.stack import embedded
    from memlife.stack.commands import command
    from memlife.stack.connection import configured_connection, connect
    from memlife.stack.worker_process import available_cpus

    experiment = new_run_id() if len(plan.configurations) > 1 or plan.repeat > 1 else None
    clock = plan.clock
    started = Started(experiment=experiment)
    stopped_together = StoppedTogether()
    async with AsyncExitStack() as stack:
        # Entered first, so left last: the reference targets stop while the rest does.
        stack.callback(stopped_together.wait)
        connection = configured_connection()
        dev_stack = (
            None if connection is not None or clock.mode == "skip" else (await _running_dev_stack())
        )
        if connection is not None:
            client = await connect(connection)
            address, web_ui = connection["target_host"], os.environ.get("MEMLIFE_WEB_UI")
        elif dev_stack is not None:
            client, address, web_ui = dev_stack.client, dev_stack.address, dev_stack.web_ui
            output.note(f"using the local stack from `{command()} dev` at {address}")
        else:
            temporal = await stack.enter_async_context(
                embedded.embedded_temporal(STATE_DIR, skip_time=clock.mode == "skip")
            )
            client, address, web_ui = temporal.client, temporal.address, temporal.web_ui
            started.embedded_ui = web_ui is not None
        # Temporal answers: the first run's reference target starts while the worker does.
        first = _start_fresh_target(plan, plan.configurations[0])
        if first is not None:
            stack.push_async_callback(first.stop_unless_taken, stopped_together)
        task_queue = plan.task_queue or DEFAULT_TASK_QUEUE
        target_queue = plan.target_queue
        stack_queue = None if dev_stack is None else stack_target_queue(plan, dev_stack.info)
        chosen = connection is None and dev_stack is None and _target_worker_pays(plan)
        if plan.target_worker or chosen:
            target_queue = await _start_target_worker(
                stack, task_queue, None if connection is not None else address, output
            )
            if chosen:
                output.note(
                    f"  started for a run of {plan.scenario.pair_count()} pairs on "
                    f"{available_cpus()} CPUs; --no-target-worker keeps them in this process"
                )
        elif stack_queue is not None and dev_stack is not None:
            target_queue = stack_queue
            output.note(
                f"target requests: to task queue {stack_queue}, the local stack's target "
                f"worker's (pid {dev_stack.info.pids.get('target_worker')}); "
                "--no-target-worker keeps them on this run's own task queue"
            )
        if plan.worker:
            await stack.enter_async_context(embedded.running_worker(client, task_queue))
        await _check_served(client, address, plan, task_queue, output, stack_queue)
        # The time-skipping server has no custom search attributes.
        session = Session(
            client,
            address,
            web_ui,
            task_queue,
            clock.mode != "skip" and await search_attributes_ready(client, output),
            experiment,
            stopped_together,
            target_queue,
        )
        if experiment:
            output.say(
                f"memlife {__version__} · experiment {experiment} · scenario "
                f"{plan.scenario.name} · {len(plan.configurations)} configuration(s) × "
                f"{plan.repeat} repetition(s) · clock {clock.describe()}"
            )
        for repetition in range(1, plan.repeat + 1):
            for configuration in plan.configurations:
                fresh, first = first, None
                started.runs.append(
                    await _start(plan, session, stack, configuration, repetition, output, fresh)
                )
                if clock.mode == "skip":
                    # One skipped clock for the whole server: runs take turns.
                    await _await_runs(client, started.runs[-1:], output)
        if clock.mode != "skip":
            await _await_runs(client, started.runs, output)
    return started


@dataclass
class FreshTarget:
    """A run's own reference target, starting in a thread: its interpreter's start (half a
    second) overlaps the command's worker's."""

    run_id: str
    faults: list[str]
    starting: asyncio.Future[Any]
    taken: bool = False

    async def take(self) -> Any:
        """The started target (embedded.ReferenceTargetProcess), now the run's to stop.
        Shielded: a command interrupted meanwhile still stops it (stop_unless_taken)."""
        process = await asyncio.shield(self.starting)
        self.taken = True
        return process

    async def stop_unless_taken(self, stopped_together: StoppedTogether) -> None:
        """When the command ended before its run took the target: stopped with the rest."""
        from memlife.stack import embedded

        if self.taken:
            return
        try:
            process = await self.starting
        except Exception:  # it did not start: the run said why, or what ended the command will
            return
        stopped_together.terminate(process.process, embedded.REFERENCE_TARGET_GRACE_S)


def _start_fresh_target(plan: RunPlan, configuration: Configuration) -> FreshTarget | None:
    """The reference target of a run of `configuration`, starting, when the run has one of
    its own (no target file)."""
    from memlife.stack import embedded

    if configuration.target is not None:
        return None
    run_id = new_run_id()
    faults = list(plan.faults if configuration.faults is None else configuration.faults)
    # In the loop's executor at once: the worker is built next without yielding to the loop.
    starting = asyncio.get_running_loop().run_in_executor(
        None,
        functools.partial(
            embedded.start_reference_target,
            STATE_DIR,
            faults,
            # A fresh database per run: needle searches see this run's data only.
            db_path=STATE_DIR / "reference" / f"{run_id}.db",
            retrieval=configuration.retrieval,
        ),
    )
    return FreshTarget(run_id, faults, starting)


def stack_target_queue(plan: RunPlan, info: StackInfo) -> str | None:
    """The task queue of the `memlife dev` stack's target worker (`info`, its StackInfo)
    when a run that uses the stack sends its target requests there: when the stack has one
    and the command named no other place (--target-worker, --target-queue,
    --no-target-worker). Not when the run records elsewhere than the stack: the stack's
    worker stages store reads in its own recorder, where the recording looks for them."""
    from memlife import recorder

    if _target_requests_placed(plan):
        return None
    if info.target_task_queue is None or info.recorder != recorder.database_url():
        return None
    return info.target_task_queue


def _target_worker_pays(plan: RunPlan) -> bool:
    """Whether a run on this command's own Temporal server, with its worker in this process
    and nothing said about its target requests, gets a worker of their own for them: on a
    machine with a CPU to spare, from TARGET_WORKER_PAIRS pairs (stack/worker_process.py,
    where the measurements are)."""
    from memlife.stack.worker_process import target_worker_pays

    return (
        plan.worker
        and not _target_requests_placed(plan)
        and target_worker_pays(plan.scenario.pair_count())
    )


def _target_requests_placed(plan: RunPlan) -> bool:
    """Whether the command said where the target requests go: --target-worker,
    --target-queue or --no-target-worker."""
    return plan.target_worker or plan.target_queue is not None or not plan.stack_target_worker


async def _check_served(
    client: Any,
    address: str,
    plan: RunPlan,
    task_queue: str,
    output: Output,
    stack_queue: str | None = None,
) -> None:
    """Refuse, before any run starts, work that standalone workers must do and none polls
    for (memlife/stack/queues.py): the run would wait at its first step, unseen."""
    from memlife.errors import MemlifeError, Problem
    from memlife.stack.commands import command
    from memlife.stack.queues import Need, unserved

    remedies: dict[str, str] = {}
    if not plan.worker:
        remedies[task_queue] = (
            f"start `{command()} worker --task-queue {task_queue}` with "
            "this command's MEMLIFE_DB_URL, or run without --no-worker"
        )
    if plan.target_queue is not None:
        remedies[plan.target_queue] = (
            f"start `{command()} worker --serve activities --task-queue "
            f"{plan.target_queue}` with this command's MEMLIFE_DB_URL, or use "
            "--target-worker instead of --target-queue"
        )
    if stack_queue is not None:
        remedies[stack_queue] = (
            f"the `{command()} dev` stack's target worker is not polling (see its "
            "output); restart the stack, or run with --no-target-worker"
        )
    needs = [Need(task_queue, "workflow")] if not plan.worker else []
    needs += [Need(queue, "activity") for queue in remedies]
    if not needs:
        return
    wait = plan.worker_wait.total_seconds()
    missing = await unserved(client, needs, within=wait, say=output.note)
    if missing:
        need = missing[0]
        raise MemlifeError(
            str(
                Problem(
                    f"Temporal at {address}",
                    f"task queue {need.queue}",
                    f"no worker polls it for {need.kind} tasks (waited {wait:g} s); "
                    f"{remedies[need.queue]}; no run was started",
                )
            )
        )


async def _start_target_worker(
    stack: AsyncExitStack, task_queue: str, address: str | None, output: Output
) -> str:
    """A worker process of their own for the run's target requests, polling before the
    run starts and stopped when this command ends: its task queue."""
    from memlife import recorder
    from memlife.stack.worker_process import target_task_queue, worker_process

    queue = target_task_queue(task_queue)
    child = await stack.enter_async_context(
        worker_process(
            queue, STATE_DIR, db_url=recorder.database_url(), address=address, say=output.note
        )
    )
    output.note(
        f"target requests: from worker pid {child.pid} on task queue {queue} "
        f"(its log: {child.log_path})"
    )
    return queue


async def _start(
    plan: RunPlan,
    session: Session,
    stack: AsyncExitStack,
    configuration: Configuration,
    repetition: int,
    output: Output,
    fresh: FreshTarget | None = None,
) -> StartedRun:
    """One run of one configuration: its tenants, its target (`fresh`: its reference
    target, already starting), its workflow."""
    from memlife.bundled.reference.target_file import reference_target
    from memlife.contracts import FRESH_TARGET_KIND, RunInput, RunMeta, suite_workflow_id
    from memlife.rules.durations import format_duration
    from memlife.rules.sizing import cohort_size
    from memlife.stack import embedded
    from memlife.workflows import attributes
    from memlife.workflows.suite import SuiteWorkflow

    fresh = fresh or _start_fresh_target(plan, configuration)
    run_id = fresh.run_id if fresh is not None else new_run_id()
    # Every configuration of a repetition gets the same tenants and values; every
    # repetition fresh ones.
    base_seed = plan.seed or session.experiment or ""
    seed = (f"{base_seed}-r{repetition}" if plan.repeat > 1 else base_seed) or run_id
    target, identity = configuration.target, {}
    # The scenario as written: the run's first activity draws its pairs from the seed and
    # claims their values against a shared target (activities/record.py: prepare_run).
    scenario = plan.scenario
    pairs = scenario.pair_count()
    cohort = (
        cohort_size(pairs, scenario.acting_steps()) if plan.cohort == "auto" else int(plan.cohort)
    )
    if fresh is not None:
        process = await fresh.take()
        stack.callback(
            session.stopped_together.terminate, process.process, embedded.REFERENCE_TARGET_GRACE_S
        )
        target = reference_target(process.base_url)
        identity = {
            "kind": FRESH_TARGET_KIND,
            "faults": ",".join(fresh.faults) or "none",
            "retrieval": configuration.retrieval,
        }
    clock = plan.clock
    settle = next((step.duration for step in scenario.timeline if step.step == "wait"), None)
    experiment = session.experiment
    meta = RunMeta(
        memlife_version=__version__,
        git_revision=_git_revision(),
        command=shlex.join(["memlife", *sys.argv[1:]]),
        scenario_file=plan.scenario_file,
        scenario_name=scenario.name,
        scenario_sha256=plan.scenario_sha256,
        target_name=target.name,
        target_base_url=target.base_url,
        target_identity=identity,
        settle=format_duration(settle) if settle else None,
        clock=clock.describe(),
        temporal_address=session.address,
        web_ui=session.web_ui,
        # What the run's values are drawn from: generated ones, and listed ones marked for a
        # target other runs share (rules/pairs.py: vary_listed).
        canary_seed=seed if scenario.generate is not None or not identity else None,
        experiment=experiment,
        configuration=configuration.label if experiment else None,
        repetition=repetition if experiment else None,
        namespace=session.client.namespace,
        cohort_size=cohort,
    )
    workflow_id = suite_workflow_id(scenario.name, run_id)
    link = (
        f"{session.web_ui}/namespaces/{session.client.namespace}/workflows/"
        f"{quote(workflow_id, safe='')}"
        if session.web_ui
        else None
    )
    where = f" · {configuration.label} #{repetition}" if experiment else ""
    twins = pairs - (scenario.generate.count if scenario.generate else pairs)
    twinned = f", {twins} of them control twins for N1" if twins else ""
    output.say(
        f"memlife {__version__} · run {run_id} · scenario {scenario.name} "
        f"({pairs} pair(s){twinned}) · target {target.name} at {target.base_url} "
        f"· clock {clock.describe()}{where}"
    )
    handle = await session.client.start_workflow(
        SuiteWorkflow.run,
        RunInput(
            run_id=run_id,
            scenario=scenario,
            target=target,
            clock=clock,
            meta=meta,
            search_attributes=session.search_attributes,
            review_queue=plan.review_queue,
            paraphrases=plan.paraphrases,
            cohort_size=cohort,
            seed=seed,
            max_active_pairs=plan.max_active_pairs,
            target_task_queue=session.target_queue,
        ),
        id=workflow_id,
        task_queue=session.task_queue,
        static_summary=f"{scenario.name} against {target.name} ({clock.describe()}){where}",
        search_attributes=attributes.start_attributes(
            scenario=scenario.name, target=target.name, run=run_id
        )
        if session.search_attributes
        else None,
    )
    return StartedRun(run_id, configuration.label, repetition, handle, link)


def _git_revision() -> str | None:
    source = Path(__file__).resolve().parent.parent.parent
    try:
        result = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        timeout=5,
        check=False,
    ).stdout.strip()
    return result.stdout.strip() + ("-dirty" if dirty else "")


async def search_attributes_ready(client: Any, output: Output) -> bool:
    """Whether the namespace has memlife's search attributes (registering them when the
    cluster lets us); a note, with the commands, when it does not."""
    from memlife.stack.commands import temporal_command
    from memlife.stack.connection import ensure_search_attributes
    from memlife.workflows import attributes

    missing = await ensure_search_attributes(client)
    if missing:
        output.note(
            "memlife: note: this namespace lacks memlife's search attributes ("
            + ", ".join(missing)
            + "); runs work, but cannot be found by them. Register "
            "them once with:\n  " + "\n  ".join(attributes.create_commands(temporal_command()))
        )
    return not missing


async def _await_runs(client: Any, runs: list[StartedRun], output: Output) -> list[Any]:
    from memlife.stack.connection import suite_result

    if len(runs) == 1:
        run = runs[0]
        scenario = run.handle.id.split("/")[1]
        return [await _await_with_progress(client, run.handle, scenario, run.run_id, output)]
    return await output.wait_all([suite_result(run.handle) for run in runs])


async def _await_with_progress(
    client: Any, handle: Any, scenario: str, run_id: str, output: Output
) -> Any:
    from memlife.stack.connection import suite_result
    from memlife.stack.progress import describe_run_progress, pair_progress

    async def describe() -> str:
        progress = await handle.query("progress")
        pairs = await pair_progress(
            client, scenario, run_id, progress["pairs"], progress.get("cohort_size", 0)
        )
        return describe_run_progress(progress, pairs, datetime.now(UTC))

    return await output.wait(handle, describe, "waiting for the worker…", suite_result)


@dataclass
class DevStack:
    """The running `memlife dev` stack a run uses: a client to its server, and what its
    stack file says (devstack.StackInfo)."""

    client: Any
    info: StackInfo

    @property
    def address(self) -> str:
        return self.info.temporal_address

    @property
    def web_ui(self) -> str | None:
        return self.info.web_ui


async def _running_dev_stack() -> DevStack | None:
    """The `memlife dev` stack of this directory, when it is up: runs then show in its Web
    UI and its recorder, beside the scheduled ones."""
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
    from temporalio.client import Client

    from memlife.stack.codec import DATA_CONVERTER
    from memlife.stack.connection import mark_client_used
    from memlife.stack.devstack import read_stack

    info = read_stack(STATE_DIR)
    if info is None:
        return None
    mark_client_used()
    try:
        client = await asyncio.wait_for(
            Client.connect(info.temporal_address, data_converter=DATA_CONVERTER), timeout=3
        )
        await client.workflow_service.get_system_info(GetSystemInfoRequest())
    except Exception:  # a stale file from a stack that was killed: run embedded instead
        return None
    return DevStack(client, info)
