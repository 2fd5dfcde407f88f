"""A memlife worker: every workflow and activity (registry.py) built into a Temporal worker;
and the standalone worker process (`python worker.py`, `memlife worker`).

    TEMPORAL_ADDRESS=host:7233 [MEMLIFE_DB_URL=postgresql+psycopg://...] memlife worker

`--serve workflows` and `--serve activities` split one worker's work over two processes
on the same task queue, so that target requests and recording never wait for workflow
activations in the same interpreter (docs/scale.md, "Running on a cluster").

Connection settings come from TEMPORAL_ADDRESS or a Temporal envconfig profile
(TEMPORAL_PROFILE, TLS, API key). Ctrl-C or SIGTERM drains in-flight activities and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlife import DEFAULT_TASK_QUEUE
from memlife.errors import MemlifeError
from memlife.stack import DEFAULT_ADDRESS, heap

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.worker import Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

SERVES = ("all", "workflows", "activities")

# pytest rewrites the asserts of every module of a distribution that has a pytest11 entry
# point (memlife's: memlife, workflows, activities), and each rewritten module imports
# _pytest.assertion.rewrite. The workflow sandbox imports a workflow's modules again for
# every run it starts, and with them pytest's internals: in a pytest process (the pytest
# plugin's runs, this project's tests) that was most of the CPU of starting a workflow run.
# Passed through, they are imported once; no workflow calls them.
PYTEST_MODULES = ("_pytest", "pytest", "pluggy", "py", "iniconfig", "pygments")


def build_worker(
    client: Client,
    task_queue: str,
    executor: ThreadPoolExecutor,
    tracer: Any = None,
    serve: str = "all",
    **tuning: Any,
) -> Worker:
    """A worker with memlife's workflows and activities. With `tracer`, or when OTEL_*
    asks for traces (stack/telemetry.py), its workflows, activities and target requests
    are spans of it.

    `serve` is what it polls for: `all`, `workflows` (workflow tasks, and the local
    activities a pair alone runs inside its own workflow task: those cannot leave the
    workflow's worker), or `activities` (activity tasks only)."""
    from temporalio.worker import Worker

    from memlife.stack import telemetry
    from memlife.stack.registry import ACTIVITIES, WORKFLOWS

    if serve not in SERVES:
        raise ValueError(f"serve must be one of {', '.join(SERVES)}, not {serve!r}")
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[] if serve == "activities" else WORKFLOWS,
        activities=ACTIVITIES,
        no_remote_activities=serve == "workflows",
        activity_executor=executor,
        workflow_runner=workflow_runner(),
        interceptors=telemetry.interceptors(tracer or telemetry.configured_tracer()),
        **tuning,
    )


def workflow_runner() -> SandboxedWorkflowRunner:
    """The workflow sandbox memlife's workers and replayers run workflows in."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PYTEST_MODULES)
    )


def graceful_shutdown() -> timedelta:
    """How long a stopping worker lets in-flight activities finish (MEMLIFE_GRACEFUL_SHUTDOWN,
    default 30s). Keep it shorter than the platform's grace period (Kubernetes:
    terminationGracePeriodSeconds), or the worker is killed mid-drain."""
    from memlife.rules.durations import parse_duration

    return parse_duration(os.environ.get("MEMLIFE_GRACEFUL_SHUTDOWN", "30s"))


async def serve(
    task_queue: str,
    max_concurrent_activities: int,
    max_cached_workflows: int,
    serves: str = "all",
    ready_file: Path | None = None,
) -> None:
    from memlife.log import get_logger
    from memlife.stack.connection import configured_connection, connect

    log = get_logger("memlife.worker")
    connection = configured_connection() or {"target_host": DEFAULT_ADDRESS}
    client = await connect(connection)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with ThreadPoolExecutor(max_workers=max_concurrent_activities) as executor:
        worker = build_worker(
            client,
            task_queue,
            executor,
            serve=serves,
            max_concurrent_activities=max_concurrent_activities,
            max_cached_workflows=max_cached_workflows,
            graceful_shutdown_timeout=graceful_shutdown(),
        )
        try:
            with heap.serving():
                async with worker:
                    log.warning(
                        "worker running",
                        address=connection["target_host"],
                        task_queue=task_queue,
                        serves=serves,
                    )
                    if ready_file is not None:
                        await _until_the_server_lists_its_poll(client, task_queue, serves)
                        _write_ready_file(ready_file, task_queue, serves)
                    await stop.wait()
                    log.warning("worker stopping: draining in-flight activities")
                    if ready_file is not None:
                        ready_file.unlink(missing_ok=True)
        finally:
            from memlife.targets import http

            await http.close_clients()


async def _until_the_server_lists_its_poll(client: Client, task_queue: str, serves: str) -> None:
    """A started worker's first long poll may not have reached the server yet (on a busy
    machine, seconds later), and what reads the ready file asks the server who serves the
    queue: so the file waits, 60 s at most, for the server to list a poll (queues.unserved;
    a server that cannot say is not waited for)."""
    from memlife.stack.queues import Need, unserved

    need = Need(task_queue, "workflow" if serves == "workflows" else "activity")
    await unserved(client, [need], within=60, say=lambda _: None)


def _write_ready_file(path: Path, task_queue: str, serves: str) -> None:
    """Whole or not at all (written aside, then renamed): a reader that sees the file
    sees every line of it."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(
        f"pid {os.getpid()}\ntask_queue {task_queue}\nserves {serves}\n", encoding="utf-8"
    )
    partial.replace(path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The worker's options (`python worker.py`, `memlife worker`)."""
    parser.add_argument(
        "--task-queue",
        default=DEFAULT_TASK_QUEUE,
        help="the task queue to poll (default: %(default)s)",
    )
    # Batches of a cohort and single calls alike; each target's own max_concurrency still
    # bounds its requests.
    parser.add_argument(
        "--max-concurrent-activities",
        type=int,
        default=64,
        metavar="N",
        help="activities in flight at once (default: %(default)s)",
    )
    # A run of N pairs has about N/10 cohort workflows (or N pair workflows) plus its
    # suite; one evicted is replayed from history on its next task: CPU, not correctness.
    parser.add_argument(
        "--max-cached-workflows",
        type=int,
        default=1000,
        metavar="N",
        help="workflows kept in memory between tasks (default: %(default)s)",
    )
    parser.add_argument(
        "--serve",
        choices=SERVES,
        default="all",
        help="what this worker polls for: all (default), workflows, or "
        "activities; run a `workflows` and an `activities` worker on the same "
        "task queue to keep target requests and recording out of the "
        "interpreter that runs workflow activations",
    )
    parser.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help="serve the Temporal SDK's metrics for Prometheus at "
        "http://HOST:PORT/metrics: workflow task latency "
        "(temporal_workflow_task_execution_latency, local activities "
        "included), activity latency, slots, polls (docs/operations.md)",
    )
    parser.add_argument(
        "--ready-file",
        type=Path,
        metavar="PATH",
        help="write PATH (its pid, task queue and what it serves) once the "
        "worker polls, and remove it when it stops: for a readiness probe, "
        "or a command that starts the worker and waits for it",
    )


def run_worker(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; exit 2 when Temporal cannot be reached."""
    from memlife.log import configure, forward_sdk_core_logs

    # A worker says what it does, and what the SDK warns about; MEMLIFE_LOG_LEVEL overrides.
    configure(level="INFO", sdk_level="WARNING")
    try:
        forward_sdk_core_logs(metrics_address=args.metrics)
    except (RuntimeError, ValueError) as error:  # a malformed address, a port in use
        print(f"memlife worker: --metrics {args.metrics}: {error}", file=sys.stderr)
        return 2
    from memlife.stack import telemetry

    try:
        asyncio.run(
            serve(
                args.task_queue,
                args.max_concurrent_activities,
                args.max_cached_workflows,
                args.serve,
                args.ready_file,
            )
        )
    except MemlifeError as error:
        print(f"memlife worker: {error}", file=sys.stderr)
        return 2
    finally:
        telemetry.shutdown()  # the spans still batched, before `python worker.py` ends
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="worker.py",
        description="A standalone memlife worker for a Temporal cluster "
        "(TEMPORAL_ADDRESS or an envconfig profile; MEMLIFE_DB_URL for the recorder).",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    # Before the SDK's runtime starts its threads; `memlife worker` does it in cli/__init__.py.
    heap.limit_malloc_arenas()
    return run_worker(args)
