"""The scale series' rows in BENCHMARKS.md: wall time, rate, memory and validity at each
number of pairs, and what each run cost Temporal (histories and workflow tasks)."""

from __future__ import annotations

from typing import Any

from bench.histories import HISTORY_WARN_BYTES, HISTORY_WARN_EVENTS
from memlife.rules.sizing import SUITE_CONTINUE_AT_EVENTS


def verdict(met: bool) -> str:
    """A goal's cell: met or missed."""
    return "✅ met" if met else "❌ missed"


def _mb(value: float) -> str:
    return f"{value / 1024 / 1024:,.1f} MB"


def scale_lines(results: dict[str, Any]) -> list[str]:
    scale = sorted(results["scale"], key=lambda point: point["pairs"])
    lines = [
        "## Scale: the nightly at growing numbers of pairs",
        "",
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
            f"{point['inconclusive']:,} |"
        )
    for number, ((command, measured_at, machine), rate) in enumerate(notes.items(), start=1):
        ceiling_then = (
            f"; the dev server's no-op ceiling then {rate:,.0f} activities/s" if rate else ""
        )
        where = (
            "the same machine"
            if machine == results.get("machine")
            else "a machine not recorded"
            if machine is None
            else machine
        )
        lines += [
            "",
            f"[{number}] Measured on its own, {measured_at}, with `{command}` "
            f"({where}{ceiling_then}; merged into BENCHMARKS.json).",
        ]
    lines += _history_lines(scale)
    largest = scale[-1] if scale else None
    if largest is not None:
        if largest["pairs"] < 10_000:
            hours = largest["seconds"] / largest["pairs"] * 10_000 / 3600
            lines += [
                "",
                f"**Not measured: 10,000 pairs.** At the {largest['pairs']:,}-pair "
                f"rate it takes about {hours:.1f} h on this machine; "
                "`./scripts/bench --scale-only --scale 10000` measures it and adds its "
                "row.",
            ]
        goal = (
            verdict(largest["worker_peak_rss_mb"] <= 400)
            if largest["pairs"] >= 10_000
            else "not measured at 10,000 here"
        )
        after = largest["worker_peak_rss_mb"] - largest["worker_lifecycle_rss_mb"]
        # Sampled every 5 s, the lifecycles' largest may miss their peak by a little.
        summary_peak = (
            f" Here the peak came after the lifecycles, {after:,.0f} MB over "
            'their largest: at the run\'s summary (docs/scale.md, "Memory").'
            if after >= 10
            else ""
        )
        lines += [
            "",
            f"Worker peak RSS at {largest['pairs']:,} pairs: "
            f"{largest['worker_peak_rss_mb']:,.0f} MB (goal ≤ 400 MB at 10,000 pairs: "
            f"{goal}). The peak covers the whole run, the run's summary included "
            "(computed streaming from the recorder); the column before it is the "
            f"largest RSS sampled while the lifecycles ran.{summary_peak}",
            "",
        ]
    lines += [
        "Pairs in flight: a run goes in waves of at most `--max-active-pairs` live pairs "
        "(default 300), cohorts starting as earlier ones end; a worker holds every live "
        "pair, about 0.7 MB each on the nightly, so the waves bound its memory at any "
        "number of pairs.",
        "",
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
        "memlife; latency fidelity has a section of its own.",
        "",
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
    measured = [point for point in scale if point.get("histories") and point.get("workflow_tasks")]
    if not measured:
        return []
    lines = [
        "",
        "What each run cost Temporal. Histories are read from the server once the "
        "run has ended (Temporal warns past "
        f"{HISTORY_WARN_BYTES // 2**20} MB or {HISTORY_WARN_EVENTS:,} events in one "
        "history); the suite's grows with the number of cohorts until it continues as new "
        f"({SUITE_CONTINUE_AT_EVENTS:,} events; its largest Temporal run is shown), a "
        "cohort's with its pairs and steps. Workflow tasks are the worker's own histogram "
        "(`temporal_workflow_task_execution_latency`, `worker.py --metrics`): from a "
        "task's arrival at the worker to its completion, local activities included; "
        "the longest is bounded by the histogram's buckets. The server retries a task "
        "after 10 s; the goal is none over 1 s.",
        "",
        "| pairs | clock | workflows | suite history | largest lifecycle history | "
        "workflow tasks | over 1 s | longest | timed out or failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
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
            f"{costs['failed_tasks']:,} |"
        )
    return lines


def _suite_runs(runs: int) -> str:
    return f" (largest of {runs} runs)" if runs > 1 else ""
