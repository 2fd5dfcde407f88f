"""memlife's benchmarks, side by side in one run on this machine; writes BENCHMARKS.md.

    ./scripts/bench                      # everything: throughput, ceiling, fidelity, scale
    ./scripts/bench --scale 100,1000     # a shorter scale series
    ./scripts/bench --scale-only --scale 10000   # one scale point, merged into the results

Every figure is kept in BENCHMARKS.json beside BENCHMARKS.md, which is rendered from it: a
scale point measured on its own (hours at 10,000 pairs) replaces only its own row.

One dev server serves every measurement; every memlife run gets a fresh reference target
and a fresh recorder database, and is served by a standalone worker process (worker.py),
whose peak RSS is read from /proc. The side-by-side runs keep a CPU for the target
alone (bench/cpus.py); the rendering of BENCHMARKS.md is bench/render.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from bench import cpus
from bench.machine import describe_machine
from bench.noop import NoopWorkflow, noop
from bench.plain_runner import PlainResult, replay_in_process
from bench.render import LAYOUTS, render
from bench.runs import (
    REPO,
    MemlifeRun,
    cpu_seconds,
    difference_figures,
    fidelity,
    run_until_stopped,
    say,
    scale_run,
)
from bench.workdir import remove_work_directory
from memlife import __version__
from memlife.bundled.reference.target_file import reference_target
from memlife.rules.clock import parse_clock
from memlife.rules.sizing import DEFAULT_MAX_ACTIVE_PAIRS
from memlife.stack import embedded


async def ceiling(client: Client, workflows: int, activities: int) -> float:
    """No-op activities per second: `workflows` workflows, each `activities` in turn."""
    task_queue = f"bench-noop-{uuid.uuid4().hex[:6]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[NoopWorkflow],
        activities=[noop],
        max_concurrent_activities=64,
    ):
        started = time.perf_counter()
        await asyncio.gather(
            *(
                client.execute_workflow(
                    NoopWorkflow.run,
                    activities,
                    id=f"bench-noop-{uuid.uuid4().hex[:8]}",
                    task_queue=task_queue,
                )
                for _ in range(workflows)
            )
        )
        seconds = time.perf_counter() - started
    return workflows * activities / seconds


# What bench.runs.scale_run is given for each layout.
LAYOUT_OPTIONS: dict[str, dict[str, bool]] = {
    "one": {},
    "split": {"split_workers": True},
    "target worker": {"target_worker": True},
    "three": {"split_workers": True, "target_worker": True},
}


def merge_scale(previous: dict[str, Any], points: list[dict[str, Any]]) -> dict[str, Any]:
    """The earlier results with these scale rows in place of the rows of the same pair
    counts; every other figure, and the rows of other pair counts, untouched."""
    measured = {point["pairs"] for point in points}
    kept = [point for point in previous["scale"] if point["pairs"] not in measured]
    return {**previous, "scale": sorted(kept + points, key=lambda point: point["pairs"])}


# What other benches measure and write into the same results (`./scripts/bench reports`,
# `scaleout`, `stacks`, `claims`, `real-server`, `profile`): a full run keeps them as they are.
KEPT_SECTIONS = ("reports", "scaleout", "stacks", "claims", "real_server", "profile")


def kept_sections(previous: dict[str, Any] | None) -> dict[str, Any]:
    """The sections of earlier results that other benches measured."""
    kept = {"reports": [], "scaleout": []} | {
        key: value for key, value in (previous or {}).items() if key in KEPT_SECTIONS
    }
    return kept


def _command() -> str:
    return f"./scripts/bench {shlex.join(sys.argv[1:])}".rstrip()


def _results_path(out: str) -> Path:
    return Path(out).with_suffix(".json")


async def _baselines(
    work: Path, run: MemlifeRun, concurrency: int, tag: str
) -> tuple[PlainResult, PlainResult]:
    """The plain httpx runner, then the plain aiohttp runner, each replaying `run`'s
    requests against a fresh target."""
    replays = []
    for client, label in (("httpx", "httpx"), ("aiohttp", "aiohttp (memlife's own client)")):
        say(f"plain asyncio + {label}: the same requests against a fresh target")
        replay = await _replay_on_fresh_target(
            work / f"target-plain-{client}{tag}", run, concurrency, client
        )
        say(
            f"  {replay.requests:,} requests in {replay.seconds:,.1f} s: "
            f"{replay.per_second:,.0f}/s ({replay.errors} errors)"
        )
        replays.append(replay)
    return replays[0], replays[1]


async def _replay_on_fresh_target(
    state: Path, run: MemlifeRun, concurrency: int, client: str
) -> PlainResult:
    """The plain runner sending `run`'s requests again, to a reference target of its own
    (whose CPU time over the replay goes beside the runner's)."""
    target = embedded.start_reference_target(state, access_log=False)
    try:
        cpus.place_target(target.process.pid)  # bench/cpus.py
        target_cpu = cpu_seconds(target.process.pid)
        result = await replay_in_process(
            target.base_url, run.run_id, run.db_url, concurrency=concurrency, client=client
        )
        result.cpu_seconds["target"] = cpu_seconds(target.process.pid) - target_cpu
        return result
    finally:
        target.stop()


async def side_by_side(
    args: argparse.Namespace, client: Client, address: str, work: Path
) -> tuple[dict[str, Any], MemlifeRun]:
    """The throughput runs in every layout, the plain runners' replays of run 1's requests
    and latency fidelity: their keys of the results, and run 1."""
    say(f"memlife (one worker, run 1 of 6): nightly at {args.pairs} pairs")
    baseline = await scale_run(client, address, work, args.pairs, args.clock, args.cohort)
    say(
        f"  {baseline.requests:,} requests in {baseline.seconds:,.1f} s: "
        f"{baseline.requests_per_second:,.0f}/s"
    )
    concurrency = reference_target("http://127.0.0.1").max_concurrency
    # One worker, the baselines, then a worker for the target requests and three
    # workers, each twice in mirrored order, one worker again, the baselines again:
    # a rate that drifts over the minutes, or a first run's handicap, then weighs on
    # every way alike. Every replay sends run 1's requests.
    throughput_runs = [_throughput_run("one", baseline)]
    plain, plain_aiohttp = await _baselines(work, baseline, concurrency, "")
    layouts = ("target worker", "three", "three", "target worker", "one")
    for order, layout in enumerate(layouts, start=2):
        say(
            f"memlife ({LAYOUTS[layout]}, run {order} of {len(layouts) + 1}): "
            f"nightly at {args.pairs} pairs"
        )
        again = await scale_run(
            client,
            address,
            work,
            args.pairs,
            args.clock,
            args.cohort,
            tag=f"-{order}",
            **LAYOUT_OPTIONS[layout],
        )
        say(
            f"  {again.requests:,} requests in {again.seconds:,.1f} s: "
            f"{again.requests_per_second:,.0f}/s"
        )
        throughput_runs.append(_throughput_run(layout, again))
    plain_again, plain_aiohttp_again = await _baselines(work, baseline, concurrency, "-again")
    loaded_figures = fidelity(baseline)
    say(f"latency fidelity at rest: nightly at {args.fidelity_pairs} pairs")
    # One request at a time at the target: its own timing then covers all its time
    # (a request queued inside uvicorn, before the application, is invisible to it).
    light = await scale_run(
        client, address, work, args.fidelity_pairs, args.clock, args.cohort, max_concurrency=1
    )
    say("  the same requests, one at a time, by the plain aiohttp runner")
    plain_rest = await _replay_on_fresh_target(work / "target-plain-rest", light, 1, "aiohttp")
    fidelity_figures = {
        "rest": fidelity(light),
        "load": loaded_figures,
        "rest_pairs": args.fidelity_pairs,
        "plain_rest": difference_figures(plain_rest.timed),
        "plain_load": difference_figures(plain_aiohttp.timed),
    }
    say(f"  latency fidelity: {fidelity_figures}")
    return {
        "throughput": {
            "pairs": baseline.pairs,
            "requests": baseline.requests,
            "seconds": baseline.seconds,
            "concurrency": concurrency,
            # bench/runs.py `polling`: the clock waits for the workers.
            "clock_starts": "workers polling",
        },
        "throughput_runs": throughput_runs,
        "plain": plain.figures(),
        "plain_again": plain_again.figures(),
        "plain_aiohttp": plain_aiohttp.figures(),
        "plain_aiohttp_again": plain_aiohttp_again.figures(),
        "fidelity": fidelity_figures,
    }, baseline


async def shared_cpus(
    args: argparse.Namespace,
    client: Client,
    address: str,
    work: Path,
    baseline: MemlifeRun,
    concurrency: int,
) -> dict[str, Any]:
    """memlife with a worker for the target requests, and the plain httpx runner replaying
    run 1's requests, once each with every process on every CPU: the side-by-side as it
    was measured before the target had a CPU of its own (bench/cpus.py)."""
    say(
        f"memlife ({LAYOUTS['target worker']}), every process on every CPU: nightly at "
        f"{args.pairs} pairs"
    )
    run = await scale_run(
        client,
        address,
        work,
        args.pairs,
        args.clock,
        args.cohort,
        tag="-shared",
        **LAYOUT_OPTIONS["target worker"],
    )
    say(f"  {run.requests:,} requests in {run.seconds:,.1f} s: {run.requests_per_second:,.0f}/s")
    say("plain asyncio + httpx, every process on every CPU: the same requests")
    plain = await _replay_on_fresh_target(
        work / "target-plain-shared", baseline, concurrency, "httpx"
    )
    say(
        f"  {plain.requests:,} requests in {plain.seconds:,.1f} s: "
        f"{plain.per_second:,.0f}/s ({plain.errors} errors)"
    )
    return {"memlife": _throughput_run("target worker", run), "plain": plain.figures()}


def _throughput_run(layout: str, run: MemlifeRun) -> dict[str, Any]:
    return {
        "layout": layout,
        "requests": run.requests,
        "seconds": run.seconds,
        "cpu_seconds": run.cpu,
    }


async def main(args: argparse.Namespace) -> int:
    results_path = _results_path(args.out)
    if not results_path.parent.is_dir():  # found now, not after a quarter of an hour
        print(f"bench: --out: directory {results_path.parent} does not exist", file=sys.stderr)
        return 2
    previous: dict[str, Any] | None = None
    if results_path.exists():
        try:
            previous = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(
                f"bench: earlier results in {results_path} cannot be read ({error}); "
                "move the file aside to start afresh",
                file=sys.stderr,
            )
            return 2
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    machine = describe_machine()
    placement = cpus.split(os.sched_getaffinity(0)) if args.cpus == "split" else None
    if args.cpus == "split" and placement is None and not args.scale_only:
        say("one CPU: the target shares it with everything that drives it")
    work = Path(tempfile.mkdtemp(prefix="memlife-bench-"))
    say(f"working in {work}; {machine}")
    server = embedded.start_dev_server(work / "temporal", ui_port=None)
    scale: list[MemlifeRun] = []
    noop_rate: float | None = None
    try:
        client = await embedded.wait_for_client(server)
        if not args.scale_only or args.scale:
            # A scale point measured on its own keeps the ceiling of its day beside it.
            say("ceiling: no-op activities")
            noop_rate = await ceiling(client, args.noop_workflows, args.noop_activities)
            say(f"  {noop_rate:,.0f} no-op activities/s")
        if not args.scale_only:
            with cpus.placed(placement):
                measured, baseline = await side_by_side(args, client, server.address, work)
            if placement is not None:
                measured["throughput"]["cpus"] = placement.describe()
                measured["shared"] = await shared_cpus(
                    args,
                    client,
                    server.address,
                    work,
                    baseline,
                    measured["throughput"]["concurrency"],
                )
        for pairs in args.scale:
            run_1_size = not args.scale_only and pairs == args.pairs
            # Run 1 is a scale row too, when it ran as the scale series runs: on every CPU.
            if run_1_size and placement is None:
                scale.append(baseline)
                continue
            say(f"scale: nightly at {pairs:,} pairs")
            # A target and recorder of its own: run 1's have its tenants in them already.
            scale.append(
                await scale_run(
                    client,
                    server.address,
                    work,
                    pairs,
                    args.clock,
                    args.cohort,
                    tag="-scale" if run_1_size else "",
                    max_active_pairs=args.max_active_pairs,
                )
            )
            say(
                f"  {scale[-1].seconds / 60:,.1f} min, worker peak "
                f"{scale[-1].worker_peak_rss_mb:,.0f} MB"
            )
    finally:
        server.stop()
    points = [
        {**run.point(_command()), "noop_rate": noop_rate, "machine": machine} for run in scale
    ]
    if args.scale_only:
        results = merge_scale(previous or {"scale": []}, points)
    else:
        results = {
            "measured_at": f"{started_at:%Y-%m-%d %H:%M} UTC",
            "minutes": (time.perf_counter() - clock) / 60,
            "machine": machine,
            "version": __version__,
            "command": _command(),
            "clock": args.clock.describe(),
            "noop": {
                "rate": noop_rate,
                "workflows": args.noop_workflows,
                "activities": args.noop_activities,
            },
            **measured,
            "scale": [],
            **kept_sections(previous),
        }
        # Rows of pair counts this run did not measure stay, marked with their own command.
        results = merge_scale({**results, "scale": (previous or {}).get("scale", [])}, points)
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    say(f"wrote {args.out} and {results_path}")
    say(remove_work_directory(work))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs",
        type=int,
        default=100,
        help="pairs of the side-by-side throughput run (default 100)",
    )
    parser.add_argument(
        "--scale",
        default="100,1000,10000",
        help="pair counts of the scale series (default 100,1000,10000)",
    )
    parser.add_argument(
        "--clock",
        default="skip",
        help="scenario time of every memlife run: skip (the lifecycle's "
        "real waits, skipped on a time-skipping server of the run's own) or "
        "compress=N (every wait / N, on the dev server; a 24 h deletion SLA "
        "must outlast a batch under load) (default skip)",
    )
    parser.add_argument(
        "--cohort",
        type=int,
        default=-1,
        help="pairs per cohort (default: as `memlife run --cohort auto`)",
    )
    parser.add_argument(
        "--max-active-pairs",
        type=int,
        default=DEFAULT_MAX_ACTIVE_PAIRS,
        help="live pairs at most in each scale run (default "
        f"{DEFAULT_MAX_ACTIVE_PAIRS}, as `memlife run`)",
    )
    parser.add_argument(
        "--fidelity-pairs",
        type=int,
        default=4,
        help="pairs of the light run that measures latency fidelity at rest",
    )
    parser.add_argument(
        "--cpus",
        choices=("split", "shared"),
        default="split",
        help="where the side-by-side runs' processes run: split (one CPU "
        "the reference target's alone, everything that drives it on the "
        "others, as on hosts of their own; then once more with every "
        "process on every CPU, for comparison) or shared (every process on "
        "every CPU) (default split)",
    )
    parser.add_argument("--noop-workflows", type=int, default=20)
    parser.add_argument("--noop-activities", type=int, default=100)
    parser.add_argument(
        "--scale-only",
        action="store_true",
        help="measure only the scale series and merge its rows into the "
        "results of an earlier full run (BENCHMARKS.json beside --out)",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to write; its figures go beside it as .json",
    )
    args = parser.parse_args(argv)
    try:
        args.scale = [int(part) for part in args.scale.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--scale: pair counts separated by commas, not {args.scale!r}")
    try:
        args.clock = parse_clock(args.clock)
    except ValueError as error:
        parser.error(str(error))
    if args.clock.mode == "real":
        parser.error("--clock real would wait out 3 days per pair: use skip or compress=N")
    return args


if __name__ == "__main__":
    sys.exit(run_until_stopped(main(parse_args(sys.argv[1:]))))
