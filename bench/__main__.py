"""memlife's benchmarks, side by side in one run on this machine; writes BENCHMARKS.md.

    ./scripts/bench                      # everything: throughput, ceiling, fidelity, scale
    ./scripts/bench --scale 100,1000     # a shorter scale series
    ./scripts/bench --scale-only --scale 10000   # one scale point, merged into the results

Every figure is kept in BENCHMARKS.json beside BENCHMARKS.md, which is rendered from it: a
scale point measured on its own (hours at 10,000 pairs) replaces only its own row.

One dev server serves every measurement; every memlife run gets a fresh reference target
and a fresh recorder database, and is served by a standalone worker process (worker.py),
whose peak RSS is read from /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from bench.histories import HISTORY_WARN_BYTES, HISTORY_WARN_EVENTS
from bench.machine import describe_machine
from bench.noop import NoopWorkflow, noop
from bench.plain_runner import PlainResult, replay_in_process
from bench.reports import render_lines as report_lines
from bench.runs import (
    NIGHTLY,
    REPO,
    MemlifeRun,
    cpu_seconds,
    difference_figures,
    fidelity,
    run_until_stopped,
    say,
    scale_run,
)
from bench.scaleout import render_lines as scaleout_lines
from memlife import __version__
from memlife.bundled.reference.target_file import reference_target
from memlife.rules.clock import parse_clock
from memlife.rules.scenario_file import load_scenario
from memlife.rules.sizing import DEFAULT_MAX_ACTIVE_PAIRS, SUITE_CONTINUE_AT_EVENTS
from memlife.stack import embedded


async def ceiling(client: Client, workflows: int, activities: int) -> float:
    """No-op activities per second: `workflows` workflows, each `activities` in turn."""
    task_queue = f"bench-noop-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=task_queue, workflows=[NoopWorkflow],
                      activities=[noop], max_concurrent_activities=64):
        started = time.perf_counter()
        await asyncio.gather(*(client.execute_workflow(
            NoopWorkflow.run, activities, id=f"bench-noop-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue) for _ in range(workflows)))
        seconds = time.perf_counter() - started
    return workflows * activities / seconds


# memlife's target requests/s over the plain runner's on the same requests, at the same
# concurrency (issue #20: at least 0.9).
PLAIN_RATIO_GOAL = 0.9


def _replays(results: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A plain runner's replays: one (`plain`), or since 2026-12-04 a second one after
    memlife's last run (`plain_again`), so that drift over the minutes weighs on the
    baseline as on memlife's rate."""
    return [results[k] for k in (key, f"{key}_again") if k in results]


def _replay_rate(replays: list[dict[str, Any]]) -> float:
    """The mean of the replays' rates, as memlife's is the mean of its runs'."""
    return statistics.mean(replay["requests"] / replay["seconds"] for replay in replays)


def _replays_text(replays: list[dict[str, Any]]) -> str:
    errors = sum(replay["errors"] for replay in replays)
    if len(replays) == 1:
        return f"({replays[0]['seconds']:,.1f} s, {errors} error(s))"
    each = ", ".join(f"{replay['requests'] / replay['seconds']:,.0f}" for replay in replays)
    return (f"(the mean of a replay after memlife's first run and one after its last: "
            f"{each}; {errors} error(s))")


def _same_client_row(results: dict[str, Any], memlife_rate: float) -> list[str]:
    """The plain runner on aiohttp, memlife's own client (runs since it was measured)."""
    replays = _replays(results, "plain_aiohttp")
    if not replays:
        return []
    rate = _replay_rate(replays)
    return [f"| plain asyncio + aiohttp runner (memlife's own HTTP client): the same "
            f"{replays[0]['requests']:,} requests, same concurrency, fresh target | "
            f"{rate:,.0f} requests/s {_replays_text(replays)} | memlife / "
            f"plain aiohttp = **{memlife_rate / rate:.2f}** | none: what orchestration "
            "costs |"]


def _verdict(met: bool) -> str:
    """A goal's cell: met or missed."""
    return "✅ met" if met else "❌ missed"


# How memlife's workers were laid out in a throughput run, as the CPU table names it.
LAYOUTS = {
    "one": "one worker",
    "split": "workflows and activities in two workers",
    "target worker": "one worker and a worker for the target requests",
    "three": "workflows, activities and target requests in three workers",
}
# The throughput table's row for each layout but one worker, and its ratio's name.
_LAYOUT_ROWS = {
    "split": ("workflows and activities in two worker processes (`worker.py --serve "
              "workflows`, `--serve activities`)", "memlife split"),
    "target worker": ("the target requests from a worker process of their own, as `memlife "
                      "run --target-worker` sends them (`worker.py`, and `worker.py --serve "
                      "activities --task-queue memlife-targets`)", "memlife + target worker"),
    "three": ("workflows, activities and target requests in three worker processes "
              "(`--serve workflows`, `--serve activities`, and `--serve activities` on the "
              "target requests' queue), as a cluster's workers would serve them",
              "memlife in three"),
}
# What bench.runs.scale_run is given for each layout.
LAYOUT_OPTIONS: dict[str, dict[str, bool]] = {
    "one": {}, "split": {"split_workers": True}, "target worker": {"target_worker": True},
    "three": {"split_workers": True, "target_worker": True}}


def _layout(run: dict[str, Any]) -> str:
    """A run's layout; runs recorded before layouts had names say only whether they were
    split."""
    return run.get("layout") or ("split" if run.get("split") else "one")


def _memlife_rates(results: dict[str, Any], layout: str) -> list[tuple[int, float]]:
    """(position, requests/s) of each throughput run of one layout."""
    runs = results.get("throughput_runs") or [{"layout": "one", **results["throughput"]}]
    return [(position, run["requests"] / run["seconds"])
            for position, run in enumerate(runs, start=1) if _layout(run) == layout]


def _rates_text(rates: list[tuple[int, float]], requests: int) -> str:
    if len(rates) == 1:
        seconds = requests / rates[0][1]
        return f"({requests:,} requests in {seconds:,.1f} s)"
    which = " and ".join(str(position) for position, _ in rates)
    each = ", ".join(f"{rate:,.0f}" for _, rate in rates)
    return f"(the mean of runs {which} of {requests:,} requests each: {each})"


def _layout_rows(results: dict[str, Any], plain_rate: float) -> list[str]:
    """memlife with its work in more than one worker process, each layout measured held to
    the same goal."""
    rows = []
    for layout, (described, ratio_name) in _LAYOUT_ROWS.items():
        rates = _memlife_rates(results, layout)
        if not rates:
            continue
        rate = statistics.mean(rate for _, rate in rates)
        ratio = rate / plain_rate
        rows.append(f"| memlife: the same nightly, {described} | {rate:,.0f} target "
                    f"requests/s {_rates_text(rates, results['throughput']['requests'])} | "
                    f"{ratio_name} / plain = **{ratio:.2f}** | ≥ {PLAIN_RATIO_GOAL} "
                    f"{_verdict(ratio >= PLAIN_RATIO_GOAL)} |")
    return rows


# A process's part in the CPU table: (its key in cpu_seconds, its column heading).
_CPU_PARTS = (("tester", "memlife's worker(s) or the plain runner"),
              ("target", "the reference target"), ("temporal", "Temporal server"))


def _cpu_of(cpu: dict[str, float], part: str) -> float:
    """A part's CPU seconds: the tester is memlife's "workers" or a plain "runner"; the
    plain runners have no Temporal server."""
    if part == "tester":
        return cpu["workers"] if "workers" in cpu else cpu["runner"]
    return cpu.get(part, 0.0)


def _cpu_row(label: str, runs: list[dict[str, Any]]) -> tuple[str, float]:
    """A row of the CPU table for `runs` (summed), and their CPU ms per request in all."""
    requests = sum(run["requests"] for run in runs)
    seconds = sum(run["seconds"] for run in runs)
    used = {part: sum(_cpu_of(run["cpu_seconds"], part) for run in runs)
            for part, _ in _CPU_PARTS}
    per_request = {part: used[part] / requests * 1000 for part in used}
    cells = " | ".join(f"{per_request[part]:.2f} ms ({used[part] / seconds:.2f})"
                       for part, _ in _CPU_PARTS)
    total = sum(per_request.values())
    return (f"| {label} | {requests / seconds:,.0f} | {cells} | **{total:.2f} ms** "
            f"({sum(used.values()) / seconds:.2f}) |", total)


def _cores(machine: str) -> int:
    """The measured machine's CPU count, from its description ("2 CPU(s) (…), …")."""
    return int(machine.split(" CPU(s)", 1)[0])


def cpu_lines(results: dict[str, Any]) -> list[str]:
    """Where the CPU of each throughput run went, per request and in cores: what a machine
    of this size allows memlife at the plain runner's rate (runs since it was measured)."""
    runs = results.get("throughput_runs") or []
    plains = [(label, _replays(results, key)) for label, key in (
        ("plain asyncio + httpx runner", "plain"),
        ("plain asyncio + aiohttp runner", "plain_aiohttp")) if key in results]
    if not runs or any("cpu_seconds" not in run
                       for run in runs + [r for _, replays in plains for r in replays]):
        return []
    one_worker, memlife_total = _cpu_row(
        "memlife, one worker", [run for run in runs if _layout(run) == "one"])
    rows = [one_worker]
    for layout, described in LAYOUTS.items():
        laid_out = [run for run in runs if _layout(run) == layout]
        if layout != "one" and laid_out:
            rows.append(_cpu_row(f"memlife, {described}", laid_out)[0])
    rows += [_cpu_row(label, replays)[0] for label, replays in plains]
    wanted = PLAIN_RATIO_GOAL * _replay_rate(_replays(results, "plain"))
    cores = _cores(results["machine"])
    needed = wanted * memlife_total / 1000
    return [
        "", "Where the CPU went in those runs: each process's own user and system time "
        "(from /proc) over the run, per target request and, in brackets, in cores busy "
        f"on average (the machine has {cores}). The Temporal server is the one each run "
        "used (its own time-skipping server in `skip`); the plain runners use none.", "",
        "| run | requests/s | " + " | ".join(heading for _, heading in _CPU_PARTS)
        + " | all |", "|---|---|---|---|---|---|", *rows, "",
        f"At {PLAIN_RATIO_GOAL} of the plain httpx runner's rate ({wanted:,.0f} requests/s) "
        f"memlife's CPU per request, as measured here with one worker, would keep "
        f"**{needed:.2f} cores** busy, of the machine's {cores}"
        + (": more than the machine has, so on it the goal asks for less CPU per request, "
           "not only less waiting." if needed > cores else
           ": the machine could hold it; what is missing is time a request waits, not "
           "CPU.")]


def _mb(value: float) -> str:
    return f"{value / 1024 / 1024:,.1f} MB"


def render(results: dict[str, Any]) -> str:
    """BENCHMARKS.md from the results document (BENCHMARKS.json)."""
    if "throughput" not in results:  # only scale points measured on their own so far
        return "\n".join(["# BENCHMARKS", "", "Only scale points measured on their own "
                          "(`--scale-only`) are recorded so far; `./scripts/bench` measures "
                          "the rest.", "", *_scale_lines(results),
                          *report_lines(results.get("reports", [])),
                          *scaleout_lines(results.get("scaleout", []))])
    steps = len(load_scenario(NIGHTLY).timeline)
    throughput, noop = results["throughput"], results["noop"]
    plains = _replays(results, "plain")
    one_worker = _memlife_rates(results, "one")
    memlife_rate = statistics.mean(rate for _, rate in one_worker)
    plain_rate = _replay_rate(plains)
    lines = [
        "# BENCHMARKS", "",
        f"Measured {results['measured_at']} in one run of {results['minutes']:.0f} min, on "
        f"{results['machine']}. memlife {results['version']}.", "",
        "Reproduce (from a clean clone; the script sets up the venv):", "",
        "```", results["command"], "```", "",
        "The machine is shared and noisy: the ratios are what to compare (each measured side "
        "by side in this one run), not the absolute figures. Every memlife run is the "
        f"nightly lifecycle (`scenarios/lifecycle-nightly.yaml`, {steps} "
        f"steps over 3 days 6 hours of scenario time) with the clock "
        f"{_clock_text(results)}, against a fresh bundled reference target (one "
        f"process, one lock; `max_concurrency: {throughput['concurrency']}`), served by one "
        "standalone worker process (`worker.py`; more where a row says so) recording to "
        "SQLite. Every figure is also "
        "in `BENCHMARKS.json`, which this file is rendered from.", "",
        "## Throughput against the baseline and the ceiling", "",
        "| measurement | figure | ratio | goal |", "|---|---|---|---|",
        f"| memlife: nightly, {throughput['pairs']} pairs | {memlife_rate:,.0f} target "
        f"requests/s {_rates_text(one_worker, throughput['requests'])} | | |",
        f"| plain asyncio + httpx runner: the same {plains[0]['requests']:,} requests, same "
        f"concurrency ({throughput['concurrency']}), fresh target | {plain_rate:,.0f} "
        f"requests/s {_replays_text(plains)} | memlife / "
        f"plain = **{memlife_rate / plain_rate:.2f}** | ≥ {PLAIN_RATIO_GOAL} "
        f"{_verdict(memlife_rate / plain_rate >= PLAIN_RATIO_GOAL)} |",
        *_same_client_row(results, memlife_rate),
        *_layout_rows(results, plain_rate),
        f"| Temporal dev server ceiling: no-op activities, {noop['workflows']} workflows × "
        f"{noop['activities']} in turn | {noop['rate']:,.0f} activities/s | memlife "
        f"requests/s / ceiling = **{memlife_rate / noop['rate']:.2f}** | ≥ 0.8 "
        f"{_verdict(memlife_rate / noop['rate'] >= 0.8)} |", "",
        "memlife's rate counts every recorded target request (conversation turns, "
        "registrations, deletions and status polls, and every store read by scope and by "
        "needle) over the run's whole wall time, waits included"
        + (", from the moment its workers poll: their interpreters' start is the "
           "harness's, as the plain runner's process start is"
           if throughput.get("clock_starts") == "workers polling" else "")
        + ". The plain runner replays "
        "exactly those requests from the recorder, pair by pair in their recorded order with "
        "their recorded scenario clock (all pairs at once), and does nothing else: no "
        "Temporal, no judging, no recording. Each replay runs in a fresh process of its "
        "own (`python -m bench.plain_runner`), so the baseline owes nothing to the "
        "bench's process"
        + ("; each plain runner replays twice, after memlife's first run and after its "
           "last, so that the machine's drift over the minutes weighs on the baseline as "
           "on memlife" if "plain_again" in results else "")
        + ". The ceiling is what one activity per request "
        "would allow at best: against it memlife's batched steps (one activity per step per "
        "cohort of pairs) are what lift the rate above what the dev server could schedule.",
        *(["", "memlife sends its target requests with aiohttp (memlife/targets/http.py), "
           "for a fifth of httpx's CPU per request and latencies less delayed by the busy "
           "worker. The client alone did not change memlife's rate; what aiohttp did around "
           "each request did: with `trust_env` it looked up ~/.netrc and the proxy "
           "variables in a thread for every request, while the request held one of the "
           "target's concurrency slots. memlife now reads the proxy once per session. A "
           "freed slot no longer waits for the event loop to send the next request: the "
           "sender that read a response sends the next one (memlife/targets/lanes.py), "
           "oldest batch first, so that one cohort goes on to its next step while the "
           "others' requests keep the target busy. A worker process of their own for the "
           "target requests (`memlife run --target-worker`) reads each answer without "
           "waiting for a recording or a workflow activation in the same interpreter: "
           "the rows for it and for three workers. "
           "Most of the rest is time on both sides of the wire, and slots left idle at the "
           "timeline's waits, where the time-skipping server moves the clock only once "
           "every cohort's step and recording are done (docs/scale.md, \"Cohorts and "
           "waves\", has the measurements). A worker now "
           "tunes CPython's cycle collector while it serves, which had taken 11 to 13 s of "
           "a two-minute run and stalled every slot for 0.3 s at a time (docs/scale.md, "
           "\"Garbage collection\"). "
           "The goal is held against the httpx runner, the "
           "baseline issue #20 set; the aiohttp runner's row holds memlife to the same "
           "client, so that its ratio is what Temporal, judging and recording cost."]
          if "plain_aiohttp" in results else []),
        *cpu_lines(results),
        "", "## Latency fidelity", "",
    ]
    rest, load = results["fidelity"]["rest"], results["fidelity"]["load"]
    if rest.get("count") and load.get("count"):
        lines += [
            "memlife's recorded latency of each conversation request against the reference "
            "target's own time for it (`Server-Timing: total`, from the request's arrival in "
            "the application to its response), request by request:", "",
            "| run | requests | median recorded | median server-side | median difference "
            "| p95 difference | goal |", "|---|---|---|---|---|---|---|",
        ]
        def row(label: str, figures: dict[str, float], goal: str) -> str:
            return (f"| {label} | {int(figures['count']):,} | "
                    f"{figures['median_latency']:.2f} ms | {figures['median_server']:.2f} ms "
                    f"| **{figures['median']:.2f} ms** | {figures['p95']:.2f} ms | {goal} |")

        plain_rest = results["fidelity"].get("plain_rest", {})
        plain_load = results["fidelity"].get("plain_load", {})
        for label, figures, pairs, plain in (
                ("one request at a time", rest, results["fidelity"]["rest_pairs"], plain_rest),
                ("under full load", load, throughput["pairs"], plain_load)):
            lines.append(row(f"{label}: nightly, {pairs} pairs", figures,
                             f"median ≤ 1 ms {_verdict(figures['median'] <= 1.0)}"))
            if plain.get("count"):
                lines.append(row(f"{label}: the plain aiohttp runner, the same requests",
                                 plain, "none: the client and target alone"))
        lines += [
            "", "The first row is memlife's own measurement error: the same lifecycle with the "
            "target's `max_concurrency: 1`, so that no request waits inside the target's HTTP "
            "server before the application sees it (where its timing cannot). The difference "
            "is then the transport and the HTTP client on both sides. Under full load (the "
            "throughput run) a request also waits in the target's single event loop before "
            "the application, and a response that has arrived waits for the worker's busy "
            "event loop: both count in that row. memlife starts its clock once a request has "
            "its turn under the target's concurrency limit, so memlife's own queueing is "
            "never counted as the target's latency.", "",
        ]
        if plain_rest.get("count") and plain_load.get("count"):
            lines[-1:-1] = [
                "", "The plain aiohttp runner's rows time the same conversation requests the "
                "same way (from headers written to body read, once the request has its turn) "
                "with nothing else in the process: what the client, the transport and the "
                "target's HTTP server cost on their own. memlife's own share is the "
                "difference between the medians: "
                f"**{rest['median'] - plain_rest['median']:+.2f} ms** one request at a time, "
                f"**{load['median'] - plain_load['median']:+.2f} ms** under full load."
                + (" Under full load the bare client alone is above the goal: no tester "
                   "on this client, target and machine meets it, and memlife's share is "
                   "what there is to win." if plain_load["median"] > 1.0 else "")]
    return "\n".join(lines + _scale_lines(results) + report_lines(results.get("reports", []))
                     + scaleout_lines(results.get("scaleout", [])))


def _clock_text(results: dict[str, Any]) -> str:
    """How the run's clock is described; results from before `--clock` had only a factor."""
    clock = results.get("clock") or f"compress={results['compress']:g}"
    if clock == "skip":
        return ("`skip` (every wait of the timeline as written, skipped by a time-skipping "
                "Temporal server of the run's own)")
    return (f"`{clock}` (every wait divided, on the embedded Temporal dev server; a 24 h "
            "deletion SLA is then a few seconds of real time)")


def _scale_lines(results: dict[str, Any]) -> list[str]:
    scale = sorted(results["scale"], key=lambda point: point["pairs"])
    lines = [
        "## Scale: the nightly at growing numbers of pairs", "",
        "| pairs | clock | pairs per cohort | pairs in flight at most | wall time | target "
        "requests/s | worker RSS during lifecycles | worker peak RSS | recorder DB | rows | "
        "rows recorded/s | cases passed | failures | inconclusive |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    # (command, when, machine) of rows measured on their own -> the dev server's no-op ceiling then
    # (rows measured on other days are comparable only with what the machine then gave).
    notes: dict[tuple[str, str, str | None], float | None] = {}
    for point in scale:
        mark = ""
        if point["command"] != results.get("command"):
            note = (point["command"], point["measured_at"], point.get("machine"))
            notes.setdefault(note, point.get("noop_rate"))
            mark = f" [{list(notes).index(note) + 1}]"
        lines.append(
            f"| {point['pairs']:,}{mark} | `{_row_clock(point, results)}` | "
            f"{point['cohort'] or 'one workflow each'} | "
            f"{min(point['pairs'], point.get('max_active_pairs') or point['pairs']):,} | "
            f"{point['seconds'] / 60:,.1f} min | "
            f"{point['requests'] / point['seconds']:,.0f} | "
            f"{point['worker_lifecycle_rss_mb']:,.0f} MB | "
            f"{point['worker_peak_rss_mb']:,.0f} MB | {_mb(point['db_bytes'])} | "
            f"{point['rows']:,} | {point['rows'] / point['seconds']:,.0f} | "
            f"{point['cases_passed']:,}/{point['cases']:,} | {point['failures']:,} | "
            f"{point['inconclusive']:,} |")
    for number, ((command, measured_at, machine), rate) in enumerate(notes.items(), start=1):
        ceiling_then = (f"; the dev server's no-op ceiling then {rate:,.0f} activities/s"
                        if rate else "")
        where = ("the same machine" if machine == results.get("machine")
                 else "a machine not recorded" if machine is None else machine)
        lines += ["", f"[{number}] Measured on its own, {measured_at}, with `{command}` "
                  f"({where}{ceiling_then}; merged into BENCHMARKS.json)."]
    lines += _history_lines(scale)
    largest = scale[-1] if scale else None
    if largest is not None:
        if largest["pairs"] < 10_000:
            hours = largest["seconds"] / largest["pairs"] * 10_000 / 3600
            lines += ["", f"**Not measured: 10,000 pairs.** At the {largest['pairs']:,}-pair "
                      f"rate it takes about {hours:.1f} h on this machine; "
                      "`./scripts/bench --scale-only --scale 10000` measures it and adds its "
                      "row."]
        goal = (_verdict(largest["worker_peak_rss_mb"] <= 400) if largest["pairs"] >= 10_000
                else "not measured at 10,000 here")
        after = largest["worker_peak_rss_mb"] - largest["worker_lifecycle_rss_mb"]
        # Sampled every 5 s, the lifecycles' largest may miss their peak by a little.
        summary_peak = (f" Here the peak came after the lifecycles, {after:,.0f} MB over "
                        "their largest: at the run's summary (docs/scale.md, \"Memory\")."
                        if after >= 10 else "")
        lines += ["", f"Worker peak RSS at {largest['pairs']:,} pairs: "
                  f"{largest['worker_peak_rss_mb']:,.0f} MB (goal ≤ 400 MB at 10,000 pairs: "
                  f"{goal}). The peak covers the whole run, the run's summary included "
                  "(computed streaming from the recorder); the column before it is the "
                  f"largest RSS sampled while the lifecycles ran.{summary_peak}", ""]
    lines += [
        "Pairs in flight: a run goes in waves of at most `--max-active-pairs` live pairs "
        "(default 300), cohorts starting as earlier ones end; a worker holds every live "
        "pair, about 0.7 MB each on the nightly, so the waves bound its memory at any "
        "number of pairs.", "",
        "Runs of more than 64 pairs go in cohorts (`memlife run --cohort`): each step's "
        "calls of a cohort leave as one activity and are recorded in one transaction. Rows "
        "are every row the run wrote (observations, their metrics, verdicts, steps, tenants, "
        "values, pairs). Every row is a run of the clean reference target, so every failure "
        "or inconclusive check in it is a bug to find, not a figure: `skip` keeps the "
        "timeline's every wait as written (a 24 h deletion SLA stays 24 h) and skips them "
        "on a time-skipping server; a `compress=N` row divides every wait by N on the dev "
        "server. The latency budget is 5 s rather than the nightly's 700 ms: the reference "
        "target's nightly rebuild holds its one lock while it replays the day's tenants, and "
        "at 300 live pairs a request that arrives then waits up to ~1.6 s in its queue "
        "(Server-Timing `queue`). That is the simulated target's nightly, not a finding about "
        "memlife; latency fidelity has a section of its own.", "",
    ]
    return lines


def _row_clock(point: dict[str, Any], results: dict[str, Any]) -> str:
    """A scale row's clock; rows from before `--clock` ran at the results' compression."""
    if "clock" in point:
        return str(point["clock"])
    return f"compress={results.get('compress', 100_000):g}"


def _history_lines(scale: list[dict[str, Any]]) -> list[str]:
    """What each scale run cost Temporal: its histories (bench/histories.py) and its
    workflow tasks (bench/task_latency.py). Rows measured before either was read show
    neither."""
    measured = [point for point in scale if point.get("histories")
                and point.get("workflow_tasks")]
    if not measured:
        return []
    lines = ["", "What each run cost Temporal. Histories are read from the server once the "
             "run has ended (Temporal warns past "
             f"{HISTORY_WARN_BYTES // 2**20} MB or {HISTORY_WARN_EVENTS:,} events in one "
             "history); the suite's grows with the number of cohorts until it continues as new "
             f"({SUITE_CONTINUE_AT_EVENTS:,} events; its largest Temporal run is shown), a "
             "cohort's with its pairs and steps. Workflow tasks are the worker's own histogram "
             "(`temporal_workflow_task_execution_latency`, `worker.py --metrics`): from a "
             "task's arrival at the worker to its completion, local activities included; "
             "the longest is bounded by the histogram's buckets. The server retries a task "
             "after 10 s; the goal is none over 1 s.", "",
             "| pairs | clock | workflows | suite history | largest lifecycle history | "
             "workflow tasks | over 1 s | longest | timed out or failed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for point in measured:
        costs, tasks = point["histories"], point["workflow_tasks"]
        longest = tasks["longest_at_most_ms"]
        lines.append(
            f"| {point['pairs']:,} | `{point.get('clock', '')}` | {costs['workflows']:,} | "
            f"{_mb(costs['suite_bytes'])}, {costs['suite_events']:,} events"
            f"{_suite_runs(costs.get('suite_runs', 1))} | "
            f"{_mb(costs['largest_bytes'])}, {costs['most_events']:,} events | "
            f"{tasks['tasks']:,} | **{tasks['over_1s']:,}** | "
            f"{'over 30 s' if longest is None else f'≤ {longest:,.0f} ms'} | "
            f"{costs['failed_tasks']:,} |")
    return lines


def _suite_runs(runs: int) -> str:
    return f" (largest of {runs} runs)" if runs > 1 else ""


def merge_scale(previous: dict[str, Any], points: list[dict[str, Any]]) -> dict[str, Any]:
    """The earlier results with these scale rows in place of the rows of the same pair
    counts; every other figure, and the rows of other pair counts, untouched."""
    measured = {point["pairs"] for point in points}
    kept = [point for point in previous["scale"] if point["pairs"] not in measured]
    return {**previous, "scale": sorted(kept + points, key=lambda point: point["pairs"])}


def _command() -> str:
    return f"./scripts/bench {shlex.join(sys.argv[1:])}".rstrip()


def _results_path(out: str) -> Path:
    return Path(out).with_suffix(".json")


async def _baselines(work: Path, run: MemlifeRun, concurrency: int,
                     tag: str) -> tuple[PlainResult, PlainResult]:
    """The plain httpx runner, then the plain aiohttp runner, each replaying `run`'s
    requests against a fresh target."""
    replays = []
    for client, label in (("httpx", "httpx"),
                          ("aiohttp", "aiohttp (memlife's own client)")):
        say(f"plain asyncio + {label}: the same requests against a fresh target")
        replay = await _replay_on_fresh_target(work / f"target-plain-{client}{tag}", run,
                                               concurrency, client)
        say(f"  {replay.requests:,} requests in {replay.seconds:,.1f} s: "
            f"{replay.per_second:,.0f}/s ({replay.errors} errors)")
        replays.append(replay)
    return replays[0], replays[1]


async def _replay_on_fresh_target(state: Path, run: MemlifeRun, concurrency: int,
                                  client: str) -> PlainResult:
    """The plain runner sending `run`'s requests again, to a reference target of its own
    (whose CPU time over the replay goes beside the runner's)."""
    target = embedded.start_reference_target(state, access_log=False)
    try:
        target_cpu = cpu_seconds(target.process.pid)
        result = await replay_in_process(target.base_url, run.run_id, run.db_url,
                                         concurrency=concurrency, client=client)
        result.cpu_seconds["target"] = cpu_seconds(target.process.pid) - target_cpu
        return result
    finally:
        target.stop()


async def main(args: argparse.Namespace) -> int:
    results_path = _results_path(args.out)
    if not results_path.parent.is_dir():  # found now, not after a quarter of an hour
        print(f"bench: --out: directory {results_path.parent} does not exist",
              file=sys.stderr)
        return 2
    previous: dict[str, Any] | None = None
    if results_path.exists():
        try:
            previous = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(f"bench: earlier results in {results_path} cannot be read ({error}); "
                  "move the file aside to start afresh", file=sys.stderr)
            return 2
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    machine = describe_machine()
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
            say(f"memlife (one worker, run 1 of 6): nightly at {args.pairs} pairs")
            baseline = await scale_run(client, server.address, work, args.pairs,
                                       args.clock, args.cohort)
            say(f"  {baseline.requests:,} requests in {baseline.seconds:,.1f} s: "
                 f"{baseline.requests_per_second:,.0f}/s")
            concurrency = reference_target("http://127.0.0.1").max_concurrency
            # One worker, the baselines, then a worker for the target requests and three
            # workers, each twice in mirrored order, one worker again, the baselines again:
            # a rate that drifts over the minutes, or a first run's handicap, then weighs on
            # every way alike. Every replay sends run 1's requests.
            throughput_runs = [{"layout": "one", "requests": baseline.requests,
                                "seconds": baseline.seconds, "cpu_seconds": baseline.cpu}]
            plain, plain_aiohttp = await _baselines(work, baseline, concurrency, "")
            layouts = ("target worker", "three", "three", "target worker", "one")
            for order, layout in enumerate(layouts, start=2):
                say(f"memlife ({LAYOUTS[layout]}, run {order} of {len(layouts) + 1}): "
                    f"nightly at {args.pairs} pairs")
                again = await scale_run(client, server.address, work, args.pairs,
                                        args.clock, args.cohort, tag=f"-{order}",
                                        **LAYOUT_OPTIONS[layout])
                say(f"  {again.requests:,} requests in {again.seconds:,.1f} s: "
                    f"{again.requests_per_second:,.0f}/s")
                throughput_runs.append({"layout": layout, "requests": again.requests,
                                        "seconds": again.seconds, "cpu_seconds": again.cpu})
            plain_again, plain_aiohttp_again = await _baselines(work, baseline, concurrency,
                                                                "-again")
            loaded_figures = fidelity(baseline)
            say(f"latency fidelity at rest: nightly at {args.fidelity_pairs} pairs")
            # One request at a time at the target: its own timing then covers all its time
            # (a request queued inside uvicorn, before the application, is invisible to it).
            light = await scale_run(client, server.address, work, args.fidelity_pairs,
                                    args.clock, args.cohort, max_concurrency=1)
            say("  the same requests, one at a time, by the plain aiohttp runner")
            plain_rest = await _replay_on_fresh_target(work / "target-plain-rest", light, 1,
                                                       "aiohttp")
            fidelity_figures = {"rest": fidelity(light), "load": loaded_figures,
                                "rest_pairs": args.fidelity_pairs,
                                "plain_rest": difference_figures(plain_rest.timed),
                                "plain_load": difference_figures(plain_aiohttp.timed)}
            say(f"  latency fidelity: {fidelity_figures}")
        for pairs in args.scale:
            if not args.scale_only and pairs == args.pairs:
                scale.append(baseline)
                continue
            say(f"scale: nightly at {pairs:,} pairs")
            scale.append(await scale_run(client, server.address, work, pairs,
                                         args.clock, args.cohort,
                                           max_active_pairs=args.max_active_pairs))
            say(f"  {scale[-1].seconds / 60:,.1f} min, worker peak "
                 f"{scale[-1].worker_peak_rss_mb:,.0f} MB")
    finally:
        server.stop()
    points = [{**run.point(_command()), "noop_rate": noop_rate, "machine": machine}
              for run in scale]
    if args.scale_only:
        results = merge_scale(previous or {"scale": []}, points)
    else:
        results = {
            "measured_at": f"{started_at:%Y-%m-%d %H:%M} UTC",
            "minutes": (time.perf_counter() - clock) / 60,
            "machine": machine, "version": __version__, "command": _command(),
            "clock": args.clock.describe(),
            "noop": {"rate": noop_rate, "workflows": args.noop_workflows,
                     "activities": args.noop_activities},
            "throughput": {"pairs": baseline.pairs, "requests": baseline.requests,
                           "seconds": baseline.seconds, "concurrency": concurrency,
                           # bench/runs.py `polling`: the clock waits for the workers.
                           "clock_starts": "workers polling"},
            "throughput_runs": throughput_runs,
            "plain": plain.figures(), "plain_again": plain_again.figures(),
            "plain_aiohttp": plain_aiohttp.figures(),
            "plain_aiohttp_again": plain_aiohttp_again.figures(),
            "fidelity": fidelity_figures,
            "scale": [],
            "reports": (previous or {}).get("reports", []),  # `./scripts/bench reports`
            "scaleout": (previous or {}).get("scaleout", []),  # `./scripts/bench scaleout`
        }
        # Rows of pair counts this run did not measure stay, marked with their own command.
        results = merge_scale({**results, "scale": (previous or {}).get("scale", [])},
                              points)
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    say(f"wrote {args.out} and {results_path}")
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100,
                        help="pairs of the side-by-side throughput run (default 100)")
    parser.add_argument("--scale", default="100,1000,10000",
                        help="pair counts of the scale series (default 100,1000,10000)")
    parser.add_argument("--clock", default="skip",
                        help="scenario time of every memlife run: skip (the lifecycle's "
                        "real waits, skipped on a time-skipping server of the run's own) or "
                        "compress=N (every wait / N, on the dev server; a 24 h deletion SLA "
                        "must outlast a batch under load) (default skip)")
    parser.add_argument("--cohort", type=int, default=-1,
                        help="pairs per cohort (default: as `memlife run --cohort auto`)")
    parser.add_argument("--max-active-pairs", type=int, default=DEFAULT_MAX_ACTIVE_PAIRS,
                        help="live pairs at most in each scale run (default "
                        f"{DEFAULT_MAX_ACTIVE_PAIRS}, as `memlife run`)")
    parser.add_argument("--fidelity-pairs", type=int, default=4,
                        help="pairs of the light run that measures latency fidelity at rest")
    parser.add_argument("--noop-workflows", type=int, default=20)
    parser.add_argument("--noop-activities", type=int, default=100)
    parser.add_argument("--scale-only", action="store_true",
                        help="measure only the scale series and merge its rows into the "
                        "results of an earlier full run (BENCHMARKS.json beside --out)")
    parser.add_argument("--out", default=str(REPO / "BENCHMARKS.md"),
                        help="the report to write; its figures go beside it as .json")
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
