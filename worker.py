"""A standalone memlife worker for a Temporal cluster.

    TEMPORAL_ADDRESS=host:7233 [MEMLIFE_DB_URL=postgresql+psycopg://...] python worker.py

Connection settings come from TEMPORAL_ADDRESS or a Temporal envconfig profile
(TEMPORAL_PROFILE, TLS, API key). Ctrl-C or SIGTERM drains in-flight activities and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from memlife.errors import MemlifeError
from memlife.log import configure, forward_sdk_core_logs, get_logger
from memlife.temporal import DEFAULT_ADDRESS, build_worker, configured_connection, connect
from workflows.registry import DEFAULT_TASK_QUEUE


def graceful_shutdown() -> timedelta:
    """How long a stopping worker lets in-flight activities finish (MEMLIFE_GRACEFUL_SHUTDOWN,
    default 30s). Keep it shorter than the platform's grace period (Kubernetes:
    terminationGracePeriodSeconds), or the worker is killed mid-drain."""
    from memlife.durations import parse_duration

    return parse_duration(os.environ.get("MEMLIFE_GRACEFUL_SHUTDOWN", "30s"))


async def serve(task_queue: str, max_concurrent_activities: int,
                max_cached_workflows: int) -> None:
    log = get_logger("memlife.worker")
    connection = configured_connection() or {"target_host": DEFAULT_ADDRESS}
    client = await connect(connection)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with ThreadPoolExecutor(max_workers=max_concurrent_activities) as executor:
        worker = build_worker(client, task_queue, executor,
                              max_concurrent_activities=max_concurrent_activities,
                              max_cached_workflows=max_cached_workflows,
                              graceful_shutdown_timeout=graceful_shutdown())
        async with worker:
            log.warning("worker running", address=connection["target_host"],
                        task_queue=task_queue)
            await stop.wait()
            log.warning("worker stopping: draining in-flight activities")


def main() -> int:
    # A worker says what it does, and what the SDK warns about; MEMLIFE_LOG_LEVEL overrides.
    configure(level="INFO", sdk_level="WARNING")
    forward_sdk_core_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE)
    # Activities in flight at once: batches of a cohort and single calls alike (each
    # target's own max_concurrency still bounds its requests).
    parser.add_argument("--max-concurrent-activities", type=int, default=64)
    # Workflows kept in memory between tasks: a run of N pairs has about N/10 cohort
    # workflows (or N pair workflows) plus its suite; one evicted is replayed from history
    # on its next task, which costs CPU but no correctness.
    parser.add_argument("--max-cached-workflows", type=int, default=1000)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.task_queue, args.max_concurrent_activities,
                          args.max_cached_workflows))
    except MemlifeError as error:
        print(f"memlife worker: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
