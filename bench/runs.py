"""One memlife run of the nightly for the bench: a fresh reference target, a fresh recorder
database and a standalone worker process (worker.py) whose memory is read from /proc; the
Temporal server is the bench's dev server, or for `skip` a time-skipping server of the run's
own (one skipped clock per server). What the run cost Temporal is read from its workflows'
histories before the server goes (bench/histories.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from temporalio.client import Client

from bench.cpus import place_target
from bench.histories import RunHistories, run_histories
from bench.task_latency import TaskLatency, scrape
from memlife import __version__, recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.contracts import (
    RunInput,
    RunMeta,
    RunSummary,
    cohort_workflow_id,
    pair_workflow_id,
    suite_workflow_id,
)
from memlife.rules.clock import Clock
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.sizing import DEFAULT_MAX_ACTIVE_PAIRS, cohort_size
from memlife.rules.target import Target
from memlife.stack import embedded
from memlife.stack.connection import suite_result
from memlife.stack.processes import LOOPBACK, free_port
from memlife.workflows.suite import SuiteWorkflow

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"
# The reference target's nightly rebuild (bundled/reference/jobs.py) replays every tenant
# changed that day under its one lock: at 300 live pairs a request that arrives then waits
# up to ~1.6 s (its Server-Timing `queue`, measured at 1,000 pairs). The nightly's 700 ms
# budget would count those waits as the target's latency findings; the bench's runs are
# about correctness and cost, and latency fidelity is measured on its own.
LATENCY_BUDGET = timedelta(seconds=5)
# The task queue of the target requests when a worker of their own sends them.
TARGET_TASK_QUEUE = "memlife-targets"
TABLES = (
    "runs",
    "tenants",
    "steps",
    "observations",
    "observation_metrics",
    "verdicts",
    "run_values",
    "run_pairs",
)


@dataclass
class MemlifeRun:
    pairs: int
    run_id: str
    db_url: str
    db_path: Path
    seconds: float
    summary: RunSummary
    worker_peak_rss_mb: float
    # The largest resident set seen while the lifecycles ran (sampled every 5 s), apart
    # from the peak, which also covers the run's summary.
    worker_lifecycle_rss_mb: float
    requests: int
    rows: int
    db_bytes: int
    cohort: int
    max_active_pairs: int
    clock: str
    histories: RunHistories
    tasks: TaskLatency
    # CPU seconds (user and system) from the run's start to its summary, by process:
    # "workers", "target", "temporal" (the time-skipping server, or the dev server), and
    # "target_worker" where one sends the target requests (its share of "workers").
    cpu: dict[str, float]

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds

    def point(self, command: str) -> dict[str, Any]:
        """The scale row this run makes, as kept in BENCHMARKS.json."""
        return {
            "pairs": self.pairs,
            "cohort": self.cohort,
            "max_active_pairs": self.max_active_pairs,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "rows": self.rows,
            "db_bytes": self.db_bytes,
            "worker_peak_rss_mb": round(self.worker_peak_rss_mb, 1),
            "worker_lifecycle_rss_mb": round(self.worker_lifecycle_rss_mb, 1),
            "cases": self.summary.cases,
            "cases_passed": self.summary.cases_passed,
            "failures": self.summary.failures,
            "inconclusive": self.summary.inconclusive,
            "clock": self.clock,
            "latency_budget_ms": LATENCY_BUDGET / timedelta(milliseconds=1),
            "histories": self.histories.figures(),
            "workflow_tasks": self.tasks.figures(),
            "cpu_seconds": {part: round(value, 2) for part, value in self.cpu.items()},
            "measured_at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "command": command,
        }


def say(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def run_until_stopped(main: Coroutine[Any, Any, int]) -> int:
    """asyncio.run(main), stopped cleanly by SIGTERM or SIGINT: either cancels it, so the
    `finally` blocks stop every worker, target and server it started (by PID). SIGINT
    counts even when a shell started the bench in the background with SIGINT ignored.
    Returns main's exit status, or 128 + the signal's number."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        received: list[signal.Signals] = []

        def stop(signum: signal.Signals) -> None:
            if not received:
                say(f"bench: {signum.name} received: stopping what it started")
            received.append(signum)
            task.cancel()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop, signum)
        try:
            return await main
        except asyncio.CancelledError:
            if not received:
                raise
            return 128 + received[0]

    return asyncio.run(guarded())


def peak_rss_mb(pid: int, field: str = "VmHWM") -> float:
    """VmHWM: the process's peak resident set, from the kernel (VmRSS: the current one)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int, *, reaped_children: bool = False) -> float:
    """The CPU time a live process has used so far (user and system, from /proc); with
    `reaped_children`, also that of its children that have ended and been waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def children_named(fragment: str) -> list[int]:
    """PIDs of this process's children whose command line holds `fragment` (to read their
    CPU time; nothing is stopped by name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if parent == os.getpid() and fragment in command:
            found.append(int(entry.name))
    return found


def start_worker(
    address: str,
    db_url: str,
    log: Path,
    metrics: str | None,
    serve: str = "all",
    task_queue: str = "memlife",
) -> subprocess.Popen[bytes]:
    """A standalone worker (worker.py) on `task_queue`, serving its metrics when given an
    address; `serve` as `worker.py --serve`. It says it polls through a file beside `log`
    (`polling` waits for it)."""
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": address,
        "MEMLIFE_DB_URL": db_url,
        "MEMLIFE_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
    }
    ready = _ready_file(log)
    ready.unlink(missing_ok=True)
    command = [
        sys.executable,
        str(REPO / "worker.py"),
        "--serve",
        serve,
        "--task-queue",
        task_queue,
        "--ready-file",
        str(ready),
    ]
    if metrics:
        command += ["--metrics", metrics]
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def _ready_file(log: Path) -> Path:
    return log.with_name(log.name + ".ready")


async def polling(
    workers: list[tuple[subprocess.Popen[bytes], Path]], timeout: float = 120
) -> None:
    """Until every worker (each with the log it was started with) polls: `memlife worker
    --ready-file`. A run's clock starts after this. The workers' interpreter start and
    imports are the harness's, as the plain runner's process start is (its clock starts
    at its first request: bench/plain_runner.py); and a workflow stays with the worker
    that takes it first, so one worker up early would take a whole run alone.
    RuntimeError names the log of a worker that exited or took longer than `timeout`
    seconds."""
    deadline = time.monotonic() + timeout
    for worker, log in workers:
        while not _ready_file(log).exists():
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited at start (code {worker.returncode}); see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker not polling after {timeout:g}s; see {log}")
            await asyncio.sleep(0.05)


async def scale_run(
    client: Client,
    address: str,
    work: Path,
    pairs: int,
    clock: Clock,
    cohort: int,
    max_concurrency: int | None = None,
    max_active_pairs: int = DEFAULT_MAX_ACTIVE_PAIRS,
    split_workers: bool = False,
    tag: str = "",
    target_worker: bool = False,
) -> MemlifeRun:
    """The nightly at `pairs` pairs on the dev server (`client`, `address`), or in `skip`
    mode on a time-skipping server of its own, as `memlife run --clock skip` runs it."""
    if clock.mode != "skip":
        return await memlife_run(
            client,
            address,
            work,
            pairs,
            clock,
            cohort,
            max_concurrency,
            max_active_pairs,
            split_workers,
            tag,
            server_pids=children_named("temporal"),
            target_worker=target_worker,
        )
    earlier = set(children_named("temporal"))  # the bench's own dev server
    async with embedded.embedded_temporal(work / f"skip-{pairs}{tag}", skip_time=True) as own:
        return await memlife_run(
            own.client,
            own.address,
            work,
            pairs,
            clock,
            cohort,
            max_concurrency,
            max_active_pairs,
            split_workers,
            tag,
            server_pids=[pid for pid in children_named("temporal") if pid not in earlier],
            target_worker=target_worker,
        )


def nightly_input(
    pairs: int,
    target: Target,
    clock: Clock,
    address: str,
    cohort: int,
    max_active_pairs: int = DEFAULT_MAX_ACTIVE_PAIRS,
) -> RunInput:
    """The nightly at `pairs` pairs against `target`, as `memlife run` would start it, with
    the bench's latency budget; `cohort` -1 sizes cohorts as `--cohort auto` does."""
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={
            "generate": scenario.generate.model_copy(update={"count": pairs}),
            "latency_budget": LATENCY_BUDGET,
        }
    )
    run_id = f"bench-{pairs}-{uuid.uuid4().hex[:6]}"
    size = cohort if cohort >= 0 else cohort_size(pairs, scenario.acting_steps())
    return bench_input(
        "bench",
        NIGHTLY,
        scenario,
        target,
        clock,
        address,
        run_id,
        size,
        max_active_pairs if size else 0,
    )


def bench_input(
    command: str,
    scenario_file: Path,
    scenario: Scenario,
    target: Target,
    clock: Clock,
    address: str,
    run_id: str,
    cohort: int,
    max_active_pairs: int,
) -> RunInput:
    """A run as `memlife run` would start it, recorded as the bench's `command`: its pairs
    drawn from the seed (the run's id) by the run's first activity (prepare_run)."""
    meta = RunMeta(
        memlife_version=__version__,
        git_revision=None,
        command=command,
        scenario_file=str(scenario_file),
        scenario_name=scenario.name,
        scenario_sha256=scenario.digest(),
        target_name=target.name,
        target_base_url=target.base_url,
        clock=clock.describe(),
        temporal_address=address,
        canary_seed=run_id,
        cohort_size=cohort,
    )
    return RunInput(
        run_id=run_id,
        scenario=scenario,
        target=target,
        clock=clock,
        meta=meta,
        cohort_size=cohort,
        seed=run_id,
        max_active_pairs=max_active_pairs,
    )


async def memlife_run(
    client: Client,
    address: str,
    work: Path,
    pairs: int,
    clock: Clock,
    cohort: int,
    max_concurrency: int | None = None,
    max_active_pairs: int = DEFAULT_MAX_ACTIVE_PAIRS,
    split_workers: bool = False,
    tag: str = "",
    server_pids: list[int] | None = None,
    target_worker: bool = False,
) -> MemlifeRun:
    """The nightly lifecycle at `pairs` pairs, as `memlife run` starts it: one worker, or
    with `split_workers` a `workflows` worker and an `activities` worker (their memory
    summed). `tag` tells apart the files of runs of the same size; `server_pids` are the
    Temporal server's processes, whose CPU time is counted with the workers' and the
    target's."""
    name = f"{pairs}{'-split' if split_workers else ''}{'-targets' if target_worker else ''}{tag}"
    db_path = work / f"memlife-{name}.db"
    db_url = f"sqlite:///{db_path}"
    # No access log: a line per request is 100 MB of disk at 10,000 pairs.
    target_process = embedded.start_reference_target(work / f"target-{name}", access_log=False)
    metrics = f"{LOOPBACK}:{free_port()}"  # the worker that runs the workflow tasks
    logs = [work / f"worker-{name}.log"]
    workers = [
        start_worker(address, db_url, logs[0], metrics, "workflows" if split_workers else "all")
    ]
    if split_workers:
        logs.append(work / f"worker-{name}-activities.log")
        workers.append(start_worker(address, db_url, logs[-1], None, "activities"))
    if target_worker:
        logs.append(work / f"worker-{name}-targets.log")
        workers.append(
            start_worker(address, db_url, logs[-1], None, "activities", TARGET_TASK_QUEUE)
        )
    try:
        place_target(target_process.process.pid)  # bench/cpus.py
        target = reference_target(target_process.base_url)
        if max_concurrency is not None:
            target = target.model_copy(update={"max_concurrency": max_concurrency})
        run = nightly_input(pairs, target, clock, address, cohort, max_active_pairs)
        if target_worker:
            run = run.model_copy(update={"target_task_queue": TARGET_TASK_QUEUE})
        run_id, scenario, size = run.run_id, run.scenario, run.cohort_size or 0

        def cpu_now() -> dict[str, float]:
            used = {
                "workers": sum(cpu_seconds(worker.pid) for worker in workers),
                "target": cpu_seconds(target_process.process.pid),
                "temporal": sum(cpu_seconds(pid) for pid in server_pids or []),
            }
            if target_worker:  # counted in "workers" too; it reads every answer
                used["target_worker"] = cpu_seconds(workers[-1].pid)
            return used

        await polling(list(zip(workers, logs, strict=True)))
        cpu_before = cpu_now()  # the workers' imports and start are not the run's
        started = time.perf_counter()
        handle = await client.start_workflow(
            SuiteWorkflow.run,
            run,
            id=suite_workflow_id(scenario.name, run_id),
            task_queue="memlife",
        )
        result = asyncio.ensure_future(suite_result(handle))
        lifecycle_rss, last_said = 0.0, time.perf_counter()
        try:
            while not result.done():
                await asyncio.wait([result], timeout=5)
                if result.done():
                    break
                progress = await handle.query("progress")
                if progress["phase"] == "lifecycles":
                    lifecycle_rss = max(
                        lifecycle_rss, sum(peak_rss_mb(worker.pid, "VmRSS") for worker in workers)
                    )
                if time.perf_counter() - last_said >= 30:
                    last_said = time.perf_counter()
                    say(
                        f"  {pairs} pairs: {progress['pairs_done']}/{progress['pairs']} "
                        f"done, {time.perf_counter() - started:.0f} s"
                    )
        finally:
            # A bench stopped mid-run (SIGTERM to its process group stops the servers too)
            # leaves no wait for the run's end to fail after the bench has said it stopped.
            if not result.done():
                result.cancel()
                await asyncio.gather(result, return_exceptions=True)
        summary: RunSummary = result.result()
        seconds = time.perf_counter() - started
        cpu = {part: used - cpu_before[part] for part, used in cpu_now().items()}
        peak = sum(peak_rss_mb(worker.pid) for worker in workers)
        tasks = await scrape(metrics)
        histories = await run_histories(
            client,
            suite_workflow_id(scenario.name, run_id),
            [
                cohort_workflow_id(scenario.name, run_id, first)
                if size
                else pair_workflow_id(scenario.name, run_id, first)
                for first in range(0, pairs, size or 1)
            ],
        )
    finally:
        for worker in workers:
            embedded.stop_process(worker, grace=30)
        target_process.stop()
    engine = recorder.engine_for(db_url)
    with engine.connect() as db:
        requests = db.execute(
            text("SELECT count(*) FROM observations WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        rows = sum(
            db.execute(
                text(
                    f"SELECT count(*) FROM {table} WHERE "  # noqa: S608
                    f"{'id' if table == 'runs' else 'run_id'} = :r"
                ),
                {"r": run_id},
            ).scalar_one()
            for table in TABLES
        )
    engine.dispose()
    db_bytes = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
    return MemlifeRun(
        pairs,
        run_id,
        db_url,
        db_path,
        seconds,
        summary,
        peak,
        lifecycle_rss,
        requests,
        rows,
        db_bytes,
        size,
        max_active_pairs,
        clock.describe(),
        histories,
        tasks,
        cpu,
    )


def fidelity(run: MemlifeRun) -> dict[str, float]:
    """memlife's recorded latency minus the target's own time in the application
    (Server-Timing `total`), for the same conversation requests."""
    engine = recorder.engine_for(run.db_url)
    with engine.connect() as db:
        pairs = db.execute(
            text(
                "SELECT o.latency_ms, m.value FROM observations o JOIN observation_metrics m "
                "ON m.observation_id = o.id WHERE o.run_id = :r AND m.name = 'stage:total' "
                "AND o.latency_ms IS NOT NULL"
            ),
            {"r": run.run_id},
        ).all()
    engine.dispose()
    return difference_figures([(latency, total) for latency, total in pairs])


def difference_figures(pairs: list[tuple[float, float]]) -> dict[str, float]:
    """Median and 95th percentile of recorded latency minus the target's own time, from
    (latency, Server-Timing total) pairs in ms."""
    differences = sorted(latency - total for latency, total in pairs)
    if not differences:
        return {"count": 0}
    return {
        "count": len(differences),
        "median": statistics.median(differences),
        "p95": differences[int(0.95 * (len(differences) - 1))],
        "median_latency": statistics.median(latency for latency, _ in pairs),
        "median_server": statistics.median(total for _, total in pairs),
    }
