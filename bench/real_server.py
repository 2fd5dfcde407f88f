"""memlife against the plain runner on a real server: the bundled Mem0 stack (mem0ai with
its model on, the model memlife's scripted one), started as a user starts it (`memlife
target serve mem0`), a fresh one for every run and every replay.

    ./scripts/bench real-server                       # lifecycle-nightly, three rounds
    ./scripts/bench real-server --scenario lifecycle-nightly-en --rounds 3

memlife runs the shipped scenario with the shipped target file on the skip clock, as
bench/runs.py runs the nightly: a time-skipping Temporal server of the run's own, one
standalone worker (worker.py), the clock started once the worker polls. The plain aiohttp
runner (bench/plain_runner.py, memlife's own HTTP client and nothing else) then sends
memlife's first run's requests again, each built from the same target file, at the target
file's `max_concurrency`. Rounds alternate (memlife then plain, plain then memlife, ...),
so that the machine's drift weighs on both alike. Store reads memlife makes itself (Mem0's
history and messages tables in SQLite, its files on disk) are not requests to the target:
both rates count the HTTP requests alone.

Both sides' latency of each conversation request is set beside the stack's own time for it
(`Server-Timing: total`, which memlife's launcher of the stack adds: memlife/cli/target.py);
the difference is what lies outside the application, and memlife's share of it is the
difference between memlife's and the plain runner's.

Where the processes run is bench/cpus.py's: with 2 CPUs or more, one the stack's alone and
everything that drives it (memlife's worker and Temporal server, or the plain runner) on
the others. The row goes into BENCHMARKS.json ("real_server") and BENCHMARKS.md is rendered
again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import text

from bench import cpus
from bench.machine import describe_machine
from bench.plain_runner import replay_in_process
from bench.render import render
from bench.runs import (
    bench_input,
    children_named,
    cpu_seconds,
    difference_figures,
    polling,
    run_until_stopped,
    start_worker,
)
from bench.stacks import STACKS, START_SECONDS, Stack, read_env_file, start_target
from bench.workdir import remove_work_directory
from memlife.stack.processes import free_port, stop_process, wait_listening

REPO = Path(__file__).resolve().parents[1]


def say(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] bench real-server: {message}", flush=True)


@dataclass
class Served:
    """A bundled stack serving on a loopback port, and what its target file reads its
    stores with."""

    process: subprocess.Popen[bytes]
    base_url: str
    env: dict[str, str]


@contextlib.contextmanager
def served(stack: Stack, data: Path, log_path: Path) -> Iterator[Served]:
    """`memlife target serve KIND` on a free loopback port with a fresh data directory,
    on the target's CPUs (bench/cpus.py); stopped by its PID."""
    port = free_port()
    with log_path.open("ab") as log:
        process = start_target(stack.kind, port, data, log)
        try:
            started = time.monotonic()
            if not wait_listening(port, process, START_SECONDS):
                raise SystemExit(f"bench real-server: {stack.kind} did not start (log: {log_path})")
            cpus.place_target(process.pid)
            say(f"{stack.kind} up in {time.monotonic() - started:.0f} s on port {port}")
            yield Served(process, f"http://127.0.0.1:{port}", read_env_file(data / stack.env_file))
        finally:
            stop_process(process, grace=30)


def http_stores(target: Any) -> set[str]:
    """The stores the target file reads over HTTP, through the target (the others memlife
    reads itself)."""
    from memlife.rules.target import StoreProbe

    return {store.name for store in target.stores if isinstance(store.probe, StoreProbe)}


def is_target_request(kind: str, request: str, stores: set[str]) -> bool:
    """Whether a recorded observation was a request to the target: every one but a store
    read memlife made itself (its request is `STORE MODE KEY`)."""
    return kind != "inspect" or request.split(" ", 1)[0] in stores


def recorded_figures(db_url: str, run_id: str, stores: set[str]) -> dict[str, Any]:
    """From the recorder: the run's observations, those that were requests to the target,
    their non-2xx statuses, and each conversation request's latency beside the target's
    Server-Timing total."""
    from memlife import recorder

    engine = recorder.engine_for(db_url)
    with engine.connect() as db:
        observed = db.execute(
            text("SELECT kind, request, http_status FROM observations WHERE run_id = :r"),
            {"r": run_id},
        ).all()
        timed = db.execute(
            text(
                "SELECT o.latency_ms, m.value FROM observations o JOIN observation_metrics m "
                "ON m.observation_id = o.id WHERE o.run_id = :r AND m.name = 'stage:total' "
                "AND o.latency_ms IS NOT NULL"
            ),
            {"r": run_id},
        ).all()
    engine.dispose()
    requests = [row for row in observed if is_target_request(row[0], row[1], stores)]
    statuses = Counter(
        str(status) for _, _, status in requests if status is not None and not 200 <= status < 300
    )
    return {
        "observations": len(observed),
        "requests": len(requests),
        "statuses": dict(sorted(statuses.items())),
        "fidelity": difference_figures([(latency, total) for latency, total in timed]),
    }


def findings_of(artifact: dict[str, Any]) -> dict[str, int]:
    """Finding counts by check and store, as the real stacks' rows count them."""
    found = Counter(f"{f['invariant']} · {f['store']}" for f in artifact["failures"])
    return dict(found.most_common())


async def memlife_run(
    stack: Stack, scenario_file: Path, work: Path, tag: str, pairs: int | None = None
) -> dict[str, Any]:
    """The scenario against a fresh stack, as bench/runs.py runs the nightly: its figures."""
    from memlife import recorder
    from memlife.contracts import suite_workflow_id
    from memlife.rules.clock import parse_clock
    from memlife.rules.scenario_file import load_scenario
    from memlife.rules.sizing import cohort_size
    from memlife.rules.target import load_target
    from memlife.stack import embedded
    from memlife.stack.connection import suite_result
    from memlife.workflows.suite import SuiteWorkflow

    db_url = f"sqlite:///{work / f'memlife-{tag}.db'}"
    with served(stack, work / f"{stack.kind}-{tag}", work / f"{stack.kind}-{tag}.log") as live:
        target = load_target(REPO / stack.target_file).model_copy(
            update={"base_url": live.base_url}
        )
        scenario = load_scenario(scenario_file)
        if pairs and scenario.generate is not None:  # fewer pairs: a quick look only
            scenario = scenario.model_copy(
                update={"generate": scenario.generate.model_copy(update={"count": pairs})}
            )
        run_id = f"bench-{stack.kind}-{uuid.uuid4().hex[:6]}"
        cohort = cohort_size(scenario.pair_count(), scenario.acting_steps())
        clock = parse_clock("skip")
        earlier = set(children_named("temporal"))
        async with embedded.embedded_temporal(work / f"skip-{tag}", skip_time=True) as own:
            server_pids = [pid for pid in children_named("temporal") if pid not in earlier]
            log = work / f"worker-{tag}.log"
            os.environ.update(live.env)  # the worker reads the stack's stores with them
            worker = start_worker(own.address, db_url, log, None)
            try:
                await polling([(worker, log)])

                def cpu_now() -> dict[str, float]:
                    return {
                        "workers": cpu_seconds(worker.pid),
                        "temporal": sum(cpu_seconds(pid) for pid in server_pids),
                        "target": cpu_seconds(live.process.pid),
                    }

                before = cpu_now()
                started = time.perf_counter()
                handle = await own.client.start_workflow(
                    SuiteWorkflow.run,
                    bench_input(
                        "bench real-server",
                        scenario_file,
                        scenario,
                        target,
                        clock,
                        own.address,
                        run_id,
                        cohort,
                        0,  # every pair at once
                    ),
                    id=suite_workflow_id(scenario.name, run_id),
                    task_queue="memlife",
                )
                summary = await suite_result(handle)
                seconds = time.perf_counter() - started
                cpu = {part: used - before[part] for part, used in cpu_now().items()}
            finally:
                embedded.stop_process(worker, grace=30)
    chunks = recorder.artifact_chunks(run_id, db_url)
    if chunks is None:
        raise SystemExit(f"bench real-server: run {run_id} is not in {db_url}")
    artifact = json.loads("".join(chunks))
    return {
        "run_id": run_id,
        "db_url": db_url,
        "pairs": scenario.pair_count(),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "cases": summary.cases,
        "cases_passed": summary.cases_passed,
        "inconclusive": len(artifact["inconclusive"]),
        "findings": findings_of(artifact),
        **recorded_figures(db_url, run_id, http_stores(target)),
    }


async def plain_replay(
    stack: Stack, run: dict[str, Any], work: Path, tag: str, concurrency: int
) -> dict[str, Any]:
    """The plain aiohttp runner sending `run`'s requests again to a fresh stack: its
    figures, the stack's CPU time beside the runner's."""
    data = work / f"{stack.kind}-{tag}"
    with served(stack, data, work / f"{stack.kind}-{tag}.log") as live:
        target_file = work / f"{stack.kind}-{tag}.yaml"
        document = yaml.safe_load((REPO / stack.target_file).read_text(encoding="utf-8"))
        target_file.write_text(
            yaml.safe_dump({**document, "base_url": live.base_url}, allow_unicode=True),
            encoding="utf-8",
        )
        target_cpu = cpu_seconds(live.process.pid)
        result = await replay_in_process(
            live.base_url,
            run["run_id"],
            run["db_url"],
            concurrency=concurrency,
            client="aiohttp",
            target_file=target_file,
        )
        result.cpu_seconds["target"] = cpu_seconds(live.process.pid) - target_cpu
    return {
        **result.figures(),
        "statuses": result.statuses,
        "fidelity": difference_figures(result.timed),
    }


def own_share(memlife: list[dict[str, Any]], plain: list[dict[str, Any]]) -> dict[str, float]:
    """memlife's own time per conversation request: the mean over memlife's runs of the
    median (and p95) of recorded latency minus the server's own time, less the same over
    the plain runner's replays, in ms."""
    figures: dict[str, float] = {}
    for key in ("median", "p95"):
        ours = statistics.mean(run["fidelity"][key] for run in memlife)
        bare = statistics.mean(replay["fidelity"][key] for replay in plain)
        figures[key] = ours - bare
    return figures


def rate_ratios(memlife: list[dict[str, Any]], plain: list[dict[str, Any]]) -> dict[str, Any]:
    """memlife's mean rate over the plain runner's, and each memlife run's rate over the
    replay measured next to it (round by round), for the spread."""

    def rate(figures: dict[str, Any]) -> float:
        return float(figures["requests"] / figures["seconds"])

    return {
        "ratio": statistics.mean(map(rate, memlife)) / statistics.mean(map(rate, plain)),
        "by_round": [rate(ours) / rate(bare) for ours, bare in zip(memlife, plain, strict=True)],
    }


def merge_row(results: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The results with `row` in place of the same stack's and scenario's earlier row."""
    key = (row["stack"], row["scenario"])
    kept = [old for old in results.get("real_server", []) if (old["stack"], old["scenario"]) != key]
    return {**results, "real_server": [*kept, row]}


async def main(args: argparse.Namespace, command: str) -> int:
    stack = STACKS[args.stack]
    scenario_file = REPO / "scenarios" / f"{args.scenario}.yaml"
    results_path = Path(args.out).with_suffix(".json")
    work = Path(tempfile.mkdtemp(prefix="memlife-bench-real-server-"))
    target = yaml.safe_load((REPO / stack.target_file).read_text(encoding="utf-8"))
    concurrency = int(target.get("max_concurrency", 8))
    placement = cpus.split(os.sched_getaffinity(0)) if args.cpus == "split" else None
    say(f"working in {work}; {stack.version()}, `{args.scenario}`, concurrency {concurrency}")
    memlife: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    order: list[str] = []
    with cpus.placed(placement):
        for round_ in range(1, args.rounds + 1):
            # Mirrored: memlife first in odd rounds, the plain runner first in even ones.
            sides = ("memlife", "plain") if round_ % 2 else ("plain", "memlife")
            for side in sides:  # round 1 starts with memlife: every replay sends its run 1
                if side == "memlife":
                    say(f"memlife, run {len(memlife) + 1}")
                    run = await memlife_run(stack, scenario_file, work, f"m{round_}", args.pairs)
                    memlife.append(run)
                    order.append(f"memlife {len(memlife)}")
                    say(
                        f"  {run['requests']:,} requests in {run['seconds']:.1f} s: "
                        f"{run['requests'] / run['seconds']:.1f}/s; findings {run['findings']}"
                    )
                else:
                    say(f"plain aiohttp runner, replay {len(plain) + 1} of memlife's run 1")
                    replay = await plain_replay(stack, memlife[0], work, f"p{round_}", concurrency)
                    plain.append(replay)
                    order.append(f"plain {len(plain)}")
                    say(
                        f"  {replay['requests']:,} requests in {replay['seconds']:.1f} s: "
                        f"{replay['requests'] / replay['seconds']:.1f}/s, "
                        f"{replay['errors']} error(s), statuses {replay['statuses']}"
                    )
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    stacks_row = next(
        (
            row
            for row in results.get("stacks", [])
            if (row["stack"], row["scenario"], row["pairs"])
            == (stack.kind, args.scenario, memlife[0]["pairs"])
        ),
        None,
    )
    row = {
        "stack": stack.kind,
        "library": stack.version(),
        "scenario": args.scenario,
        "pairs": memlife[0]["pairs"],
        "concurrency": concurrency,
        "cpus": placement.describe() if placement else None,
        "order": order,
        "memlife": [{k: v for k, v in run.items() if k != "db_url"} for run in memlife],
        "plain": plain,
        **rate_ratios(memlife, plain),
        "own_share": own_share(memlife, plain),
        "stacks_findings": None if stacks_row is None else stacks_row["findings"],
        "machine": describe_machine(),
        "command": command,
        "measured_at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
    }
    say(f"memlife / plain = {row['ratio']:.2f} (by round {row['by_round']})")
    say(f"memlife's own share (ms): {row['own_share']}")
    for run in memlife:
        if stacks_row is not None and run["findings"] != stacks_row["findings"]:
            say(f"findings differ from the real stacks' row: {run['findings']}")
    # Read again just before writing: other benches write their own sections meanwhile.
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    results = merge_row(results, row)
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    say(f"wrote {args.out} and {results_path}")
    say(remove_work_directory(work))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench real-server", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", choices=["mem0"], default="mem0")
    parser.add_argument(
        "--scenario", default="lifecycle-nightly", help="a shipped scenario, without .yaml"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="memlife runs and plain replays, one of each per round (default 3)",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        help="pairs of a generated scenario (default: as written); a quick look, not a row "
        "the real stacks' findings compare with",
    )
    parser.add_argument(
        "--cpus",
        choices=("split", "shared"),
        default="split",
        help="split: one CPU the stack's alone, the drivers on the others "
        "(bench/cpus.py); shared: every process on every CPU (default split)",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    args = parser.parse_args(argv)
    if not (REPO / "scenarios" / f"{args.scenario}.yaml").exists():
        parser.error(f"--scenario: no scenarios/{args.scenario}.yaml")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    return args


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(
        run_until_stopped(
            main(parse_args(argv), f"./scripts/bench real-server {shlex.join(argv)}".rstrip())
        )
    )
