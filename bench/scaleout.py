"""memlife scaled out: the same nightly pairs served by 1, 2 and 3 standalone workers
(worker.py) on one task queue, recording to one PostgreSQL, side by side in one invocation.

The target is sharded so that it is not the bottleneck: one bundled reference-target
process per shard, each shard a run of its own (pairs ÷ shards pairs), the runs started
together on one Temporal server. Each worker count gets fresh targets, a fresh database
and, in `skip` mode, a time-skipping server of its own. The rows go into BENCHMARKS.json
("scaleout") and BENCHMARKS.md is rendered again.

Every worker serves everything, the target requests included: the runs leave them on their
own task queue (RunInput.target_task_queue None, as `memlife run --no-target-worker` and a
cluster's workers without --target-queue), so no run waits on a queue nobody serves, and no
worker is the target requests' alone. Every process runs on every CPU: no CPU is a target's
own, as bench/cpus.py gives the side-by-side's one target; the shards' targets beside the
workers on a machine of few cores would have one CPU between them, and measure that.

    ./scripts/bench scaleout                        # 300 pairs, 3 shards; 1, 2, 3 workers
    ./scripts/bench scaleout --pairs 600 --workers 1,2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, text
from temporalio.api.testservice.v1 import UnlockTimeSkippingRequest
from temporalio.client import Client, WorkflowExecutionStatus

from bench.machine import describe_machine
from bench.postgres import PostgresServer, running_postgres
from bench.render import render
from bench.runs import (
    REPO,
    children_named,
    cpu_seconds,
    nightly_input,
    peak_rss_mb,
    polling,
    run_until_stopped,
    say,
    start_worker,
)
from bench.task_latency import scrape
from bench.workdir import remove_work_directory
from memlife import recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import RunSummary, suite_workflow_id
from memlife.rules.clock import Clock, parse_clock
from memlife.stack import embedded
from memlife.stack.connection import suite_result
from memlife.stack.processes import LOOPBACK, free_port, stop_process
from memlife.workflows.suite import SuiteWorkflow


def fresh_database(server: PostgresServer) -> str:
    """A new database, its schema created once here: workers that start together would
    race to create it."""
    url = server.create_database("memlife_bench")
    recorder.engine_for(url)
    return url


def database_cpu_seconds(server: PostgresServer) -> float:
    """The server's CPU time so far: the postmaster's, and that of the backends that have
    ended (a backend ends with its connection)."""
    return cpu_seconds(server.postmaster, reaped_children=True)


@contextlib.asynccontextmanager
async def temporal(clock: Clock, work: Path) -> AsyncIterator[tuple[Client, str]]:
    """A time-skipping server of this measurement's own (`skip`), else a dev server."""
    async with embedded.embedded_temporal(
        work, skip_time=clock.mode == "skip", ui_port=None
    ) as server:
        yield server.client, server.address


async def measure(
    workers: int,
    pairs: int,
    shards: int,
    clock: Clock,
    cohort: int,
    database: PostgresServer,
    work: Path,
    command: str,
) -> dict[str, Any]:
    """One row: `pairs` nightly pairs in `shards` runs, served by `workers` workers."""
    work.mkdir(parents=True)
    db_url = fresh_database(database)
    database_cpu = database_cpu_seconds(database)
    sizes = [pairs // shards + (1 if shard < pairs % shards else 0) for shard in range(shards)]
    async with temporal(clock, work / "temporal") as (client, address):
        server_pids = children_named("temporal")
        metrics = [f"{LOOPBACK}:{free_port()}" for _ in range(workers)]
        served_by: list[Any] = []  # worker processes, stopped however this ends
        targets: list[embedded.ReferenceTargetProcess] = []
        try:
            logs = [work / f"worker-{n}.log" for n in range(workers)]
            for log, address_of_metrics in zip(logs, metrics, strict=True):
                served_by.append(start_worker(address, db_url, log, address_of_metrics))
            for n in range(shards):
                targets.append(
                    embedded.start_reference_target(work / f"target-{n}", access_log=False)
                )
            runs = [
                nightly_input(size, reference_target(target.base_url), clock, address, cohort)
                for size, target in zip(sizes, targets, strict=True)
            ]
            # The target requests on the runs' own queue, which every worker serves.
            assert all(run.target_task_queue is None for run in runs)
            await polling(list(zip(served_by, logs, strict=True)))
            ids = [suite_workflow_id(run.scenario.name, run.run_id) for run in runs]
            started = time.perf_counter()
            for run, workflow_id in zip(runs, ids, strict=True):
                await client.start_workflow(
                    SuiteWorkflow.run, run, id=workflow_id, task_queue="memlife"
                )
            if clock.mode == "skip":
                # Once for all runs. A handle's result() would unlock time skipping and lock
                # it again when its run ends, stopping the clock for the runs still going.
                await client.test_service.unlock_time_skipping(UnlockTimeSkippingRequest())
            summaries = await _results(client, ids, sizes, started)
            seconds = time.perf_counter() - started
            cpu = {
                "workers": sum(cpu_seconds(w.pid) for w in served_by),
                "targets": sum(cpu_seconds(t.process.pid) for t in targets),
                "temporal": sum(cpu_seconds(pid) for pid in server_pids),
            }
            rss = [peak_rss_mb(w.pid) for w in served_by]
            tasks = [await _tasks(address) for address in metrics]
        finally:
            for worker in served_by:
                stop_process(worker, grace=30)
            for target in targets:
                target.stop()
    # The workers' connections have closed: their backends' time now counts.
    await asyncio.sleep(1)
    cpu["postgres"] = database_cpu_seconds(database) - database_cpu
    engine = recorder.engine_for(db_url)
    with engine.connect() as db:
        requests = db.execute(
            text("SELECT count(*) FROM observations WHERE run_id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            ),
            {"ids": [run.run_id for run in runs]},
        ).scalar_one()
    engine.dispose()
    return {
        "workers": workers,
        "shards": shards,
        "pairs": pairs,
        "cohort": runs[0].cohort_size,
        "clock": clock.describe(),
        "seconds": round(seconds, 3),
        "requests": requests,
        "cases": sum(s.cases for s in summaries),
        "cases_passed": sum(s.cases_passed for s in summaries),
        "failures": sum(s.failures for s in summaries),
        "inconclusive": sum(s.inconclusive for s in summaries),
        "worker_peak_rss_mb": [round(mb, 1) for mb in rss],
        "cpu_seconds": {part: round(value, 1) for part, value in cpu.items()},
        "workflow_tasks": sum(t["tasks"] for t in tasks),
        "workflow_tasks_over_1s": sum(t["over_1s"] for t in tasks),
        "tasks_per_worker": [t["tasks"] for t in tasks],
        "target_requests": "the runs' own task queue",
        "cpus": "every process on every CPU",
        "machine": describe_machine(),
        "measured_at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "command": command,
    }


async def _tasks(address: str) -> dict[str, int]:
    """A worker's workflow tasks; a worker that was given none has no histogram yet."""
    try:
        latency = await scrape(address)
    except ValueError:
        return {"tasks": 0, "over_1s": 0}
    return {"tasks": latency.tasks, "over_1s": latency.over_1s}


async def _results(
    client: Client, ids: list[str], sizes: list[int], started: float
) -> list[RunSummary]:
    """Every run's summary, once it has ended, saying how far they are every 30 s. Each run's
    state is polled: the time-skipping server's long poll for a result can come back empty
    ("No completion event found")."""
    summaries: dict[str, RunSummary] = {}
    last_said = time.perf_counter()
    while len(summaries) < len(ids):
        await asyncio.sleep(2)
        done = 0
        for workflow_id, size in zip(ids, sizes, strict=True):
            if workflow_id in summaries:
                done += size
                continue
            handle = client.get_workflow_handle_for(SuiteWorkflow.run, workflow_id)
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                summaries[workflow_id] = await suite_result(handle)
                done += size
            elif time.perf_counter() - last_said >= 30:
                with contextlib.suppress(Exception):  # a run just ending answers no query
                    done += (await handle.query("progress"))["pairs_done"]
        if time.perf_counter() - last_said >= 30:
            last_said = time.perf_counter()
            say(f"  {done}/{sum(sizes)} pairs done, {time.perf_counter() - started:.0f} s")
    return [summaries[workflow_id] for workflow_id in ids]


def _command(argv: list[str]) -> str:
    return f"./scripts/bench scaleout {shlex.join(argv)}".rstrip()


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench scaleout", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300, help="nightly pairs in all (default 300)")
    parser.add_argument(
        "--workers", default="1,2,3", help="worker counts, side by side (default 1,2,3)"
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=3,
        help="reference-target processes, one run of pairs each (default 3)",
    )
    parser.add_argument("--clock", default="skip", help="skip (default) or compress=N")
    parser.add_argument(
        "--cohort",
        type=int,
        default=-1,
        help="pairs per cohort (default: as `memlife run --cohort auto`)",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    parser.add_argument(
        "--work-dir",
        help="where the processes' logs and databases are kept (default: a new directory "
        "in the system's temporary directory, named when the bench starts)",
    )
    args = parser.parse_args(argv)
    try:
        counts = [int(part) for part in args.workers.split(",") if part.strip()]
        clock = parse_clock(args.clock)
    except ValueError as error:
        parser.error(f"--workers or --clock: {error}")
    if not counts or min(counts) < 1 or args.shards < 1 or args.pairs < args.shards:
        parser.error("--workers: counts of at least 1; --shards at least 1 and at most --pairs")
    if clock.mode == "real":
        parser.error("--clock real would wait out 3 days per pair: use skip or compress=N")
    results_path = Path(args.out).with_suffix(".json")
    if not results_path.parent.is_dir():
        parser.error(f"--out: directory {results_path.parent} does not exist")
    if (
        args.work_dir is not None
        and Path(args.work_dir).exists()
        and not Path(args.work_dir).is_dir()
    ):
        parser.error(f"--work-dir: {args.work_dir} exists and is not a directory")
    command = _command(argv)
    rows = []
    if args.work_dir is None:
        work = Path(tempfile.mkdtemp(prefix="memlife-bench-scaleout-"))
    else:
        work = Path(args.work_dir)
        work.mkdir(parents=True, exist_ok=True)
    say(f"working in {work}")
    with running_postgres("memlife-bench") as database:
        for workers in counts:
            say(f"{workers} worker(s): nightly at {args.pairs} pairs in {args.shards} shards")
            rows.append(
                await measure(
                    workers,
                    args.pairs,
                    args.shards,
                    clock,
                    args.cohort,
                    database,
                    work / f"workers-{workers}",
                    command,
                )
            )
            say(f"  {rows[-1]['seconds'] / 60:.1f} min, {rows[-1]['failures']} failure(s)")
    results = (
        json.loads(results_path.read_text(encoding="utf-8"))
        if results_path.exists()
        else {"scale": []}
    )
    results["scaleout"] = rows
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    say(f"wrote {args.out} and {results_path}")
    if args.work_dir is None:  # a directory given is the caller's to keep
        say(remove_work_directory(work))
    return 0


if __name__ == "__main__":
    sys.exit(run_until_stopped(main(sys.argv[1:])))
