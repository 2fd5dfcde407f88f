"""BENCHMARKS.md from the results document (BENCHMARKS.json): the side-by-side
throughput table, where the CPU went, and latency fidelity; the scale rows are
bench/scale_table.py's, the report and scale-out rows bench/reports.py's and
bench/scaleout.py's, the real server's bench/real_server_table.py's, the profile's
bench/profile_table.py's."""

from __future__ import annotations

import statistics
from typing import Any

from bench import cpus
from bench.claims_table import render_lines as claims_lines
from bench.profile_table import render_lines as profile_lines
from bench.real_server_table import render_lines as real_server_lines
from bench.report_tables import render_lines as report_lines
from bench.runs import NIGHTLY
from bench.scale_table import scale_lines, verdict
from bench.scaleout_table import render_lines as scaleout_lines
from memlife.rules.scenario_file import load_scenario

# memlife's target requests/s over the plain runner's on the same requests, at the same
# concurrency (issue #20: at least 0.9).
PLAIN_RATIO_GOAL = 0.9


def _placement_text(throughput: dict[str, Any]) -> str:
    """Where the side-by-side runs' processes ran, for results that placed them."""
    placement = throughput.get("cpus")
    if not placement:
        return ""
    return (
        f" In the side-by-side runs {cpus.describe(placement)}, for memlife's processes "
        "and the plain runners alike: a service and its tester run on hosts of their "
        "own (bench/cpus.py). The table's last row but one has every process on every "
        "CPU."
    )


def _shared_row(results: dict[str, Any]) -> list[str]:
    """memlife and the plain httpx runner with every process on every CPU, beside the
    runs that gave the target a CPU of its own."""
    shared = results.get("shared")
    if not shared:
        return []
    memlife_rate, plain_rate = _rate(shared["memlife"]), _rate(shared["plain"])
    return [
        f"| the same, every process on every CPU (the target sharing them with what "
        f"drives it): memlife {LAYOUTS['target worker']}, then the plain httpx runner "
        f"replaying run 1's requests, one run each | {memlife_rate:,.0f} and "
        f"{plain_rate:,.0f} requests/s | memlife + target worker / plain, shared CPUs "
        f"= **{memlife_rate / plain_rate:.2f}** | none: how the side-by-side was "
        "measured until 2026-12-04 |"
    ]


def _rate(figures: dict[str, Any]) -> float:
    """A run's or a replay's requests per second."""
    return float(figures["requests"] / figures["seconds"])


def _placement_lines(results: dict[str, Any]) -> list[str]:
    """Why the target has a CPU of its own, with this run's figures."""
    shared, placement = results.get("shared"), results["throughput"].get("cpus")
    rates = _memlife_rates(results, "target worker")
    if not shared or not placement or not rates:
        return []
    split_ratio = statistics.mean(rate for _, rate in rates) / _replay_rate(
        _replays(results, "plain")
    )
    shared_ratio = _rate(shared["memlife"]) / _rate(shared["plain"])
    return [
        "",
        "Where the target runs. The reference target is one Python process whose "
        "one lock serializes its work: its rate is the CPU it gets when a request "
        "comes. With every process on every CPU it gets what its driver leaves it, "
        "and memlife (two workers and a Temporal server, each with threads that wake "
        "as the target's answers come) leaves it less than the plain runner (one "
        "process that does nothing else). That, more than memlife's pace, is what the "
        "ratio measured there: with a worker for the target requests it is "
        f"**{shared_ratio:.2f}** on shared CPUs and **{split_ratio:.2f}** with the "
        "target on a CPU of its own, in this one run. A team's target runs on hosts "
        "of its own, so the goal is held with a CPU the target's alone and every "
        "driver, memlife's processes and each plain replay alike, on the other "
        '(docs/scale.md, "Where the target runs", has the placements measured).',
    ]


def _replays(results: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A plain runner's replays: one (`plain`), or since 2026-12-04 a second one after
    memlife's last run (`plain_again`), so that drift over the minutes weighs on the
    baseline as on memlife's rate."""
    return [results[k] for k in (key, f"{key}_again") if k in results]


def _replay_rate(replays: list[dict[str, Any]]) -> float:
    """The mean of the replays' rates, as memlife's is the mean of its runs'."""
    return statistics.mean(_rate(replay) for replay in replays)


def _replays_text(replays: list[dict[str, Any]]) -> str:
    errors = sum(replay["errors"] for replay in replays)
    if len(replays) == 1:
        return f"({replays[0]['seconds']:,.1f} s, {errors} error(s))"
    each = ", ".join(f"{replay['requests'] / replay['seconds']:,.0f}" for replay in replays)
    return (
        f"(the mean of a replay after memlife's first run and one after its last: "
        f"{each}; {errors} error(s))"
    )


def _same_client_row(results: dict[str, Any], memlife_rate: float) -> list[str]:
    """The plain runner on aiohttp, memlife's own client (runs since it was measured)."""
    replays = _replays(results, "plain_aiohttp")
    if not replays:
        return []
    rate = _replay_rate(replays)
    return [
        f"| plain asyncio + aiohttp runner (memlife's own HTTP client): the same "
        f"{replays[0]['requests']:,} requests, same concurrency, fresh target | "
        f"{rate:,.0f} requests/s {_replays_text(replays)} | memlife / "
        f"plain aiohttp = **{memlife_rate / rate:.2f}** | none: what orchestration "
        "costs |"
    ]


# How memlife's workers were laid out in a throughput run, as the CPU table names it.
LAYOUTS = {
    "one": "one worker",
    "split": "workflows and activities in two workers",
    "target worker": "one worker and a worker for the target requests",
    "three": "workflows, activities and target requests in three workers",
}
# The throughput table's row for each layout but one worker, and its ratio's name.
_LAYOUT_ROWS = {
    "split": (
        "workflows and activities in two worker processes (`worker.py --serve "
        "workflows`, `--serve activities`)",
        "memlife split",
    ),
    "target worker": (
        "the target requests from a worker process of their own, as `memlife "
        "run` sends them by default from 20 pairs where a CPU is spare "
        "(`--target-worker` at any size; here `worker.py`, and `worker.py --serve "
        "activities --task-queue memlife-targets`)",
        "memlife + target worker",
    ),
    "three": (
        "workflows, activities and target requests in three worker processes "
        "(`--serve workflows`, `--serve activities`, and `--serve activities` on the "
        "target requests' queue), as a cluster's workers would serve them",
        "memlife in three",
    ),
}


def _layout(run: dict[str, Any]) -> str:
    """A run's layout; runs recorded before layouts had names say only whether they were
    split."""
    return run.get("layout") or ("split" if run.get("split") else "one")


def _memlife_rates(results: dict[str, Any], layout: str) -> list[tuple[int, float]]:
    """(position, requests/s) of each throughput run of one layout."""
    runs = results.get("throughput_runs") or [{"layout": "one", **results["throughput"]}]
    return [
        (position, _rate(run))
        for position, run in enumerate(runs, start=1)
        if _layout(run) == layout
    ]


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
        rows.append(
            f"| memlife: the same nightly, {described} | {rate:,.0f} target "
            f"requests/s {_rates_text(rates, results['throughput']['requests'])} | "
            f"{ratio_name} / plain = **{ratio:.2f}** | ≥ {PLAIN_RATIO_GOAL} "
            f"{verdict(ratio >= PLAIN_RATIO_GOAL)} |"
        )
    return rows


# A process's part in the CPU table: (its key in cpu_seconds, its column heading).
_CPU_PARTS = (
    ("tester", "memlife's worker(s) or the plain runner"),
    ("target", "the reference target"),
    ("temporal", "Temporal server"),
)


def _cpu_of(cpu: dict[str, float], part: str) -> float:
    """A part's CPU seconds: the tester is memlife's "workers" or a plain "runner"; the
    plain runners have no Temporal server."""
    if part == "tester":
        return cpu["workers"] if "workers" in cpu else cpu["runner"]
    return cpu.get(part, 0.0)


def _cpu_row(label: str, runs: list[dict[str, Any]]) -> tuple[str, dict[str, float]]:
    """A row of the CPU table for `runs` (summed), and their CPU ms per request by part."""
    requests = sum(run["requests"] for run in runs)
    seconds = sum(run["seconds"] for run in runs)
    used = {part: sum(_cpu_of(run["cpu_seconds"], part) for run in runs) for part, _ in _CPU_PARTS}
    per_request = {part: used[part] / requests * 1000 for part in used}
    cells = " | ".join(
        f"{per_request[part]:.2f} ms ({used[part] / seconds:.2f})" for part, _ in _CPU_PARTS
    )
    total = sum(per_request.values())
    return (
        f"| {label} | {requests / seconds:,.0f} | {cells} | **{total:.2f} ms** "
        f"({sum(used.values()) / seconds:.2f}) |",
        per_request,
    )


def _answer_reading_lines(runs: list[dict[str, Any]], plain_ms: float | None) -> list[str]:
    """What the worker that sends the target requests took of its layout's workers' CPU,
    beside the plain aiohttp runner's per request (`plain_ms`): it reads every answer, so
    its CPU per request is what holds the target's slots (docs/scale.md, "Two queues in
    turn"). Runs recorded before it was measured have none."""
    shares = []
    for layout in ("target worker", "three"):
        laid_out = [
            run for run in runs if _layout(run) == layout and "target_worker" in run["cpu_seconds"]
        ]
        if laid_out:
            requests = sum(run["requests"] for run in laid_out)
            seconds = sum(run["seconds"] for run in laid_out)
            used = sum(run["cpu_seconds"]["target_worker"] for run in laid_out)
            shares.append(
                f"{used / requests * 1000:.2f} ms ({used / seconds:.2f}) in the run with "
                f"{LAYOUTS[layout]}"
            )
    if not shares:
        return []
    plain = (
        ""
        if plain_ms is None
        else f"; the plain aiohttp runner's whole process took {plain_ms:.2f} ms"
    )
    return [
        "",
        "Of memlife's workers, the one that sends the target requests reads every answer, "
        "so its CPU per request is what holds a target's slot: "
        + " and ".join(shares)
        + plain
        + ' (docs/scale.md, "Two queues in turn").',
    ]


def _cores(machine: str) -> int:
    """The measured machine's CPU count, from its description ("2 CPU(s) (…), …")."""
    return int(machine.split(" CPU(s)", 1)[0])


def cpu_lines(results: dict[str, Any]) -> list[str]:
    """Where the CPU of each throughput run went, per request and in cores: what a machine
    of this size allows memlife at the plain runner's rate (runs since it was measured)."""
    runs = results.get("throughput_runs") or []
    plains = [
        (label, _replays(results, key))
        for label, key in (
            ("plain asyncio + httpx runner", "plain"),
            ("plain asyncio + aiohttp runner", "plain_aiohttp"),
        )
        if key in results
    ]
    if not runs or any(
        "cpu_seconds" not in run for run in runs + [r for _, replays in plains for r in replays]
    ):
        return []
    one_worker, memlife_parts = _cpu_row(
        "memlife, one worker", [run for run in runs if _layout(run) == "one"]
    )
    rows = [one_worker]
    for layout, described in LAYOUTS.items():
        laid_out = [run for run in runs if _layout(run) == layout]
        if layout != "one" and laid_out:
            rows.append(_cpu_row(f"memlife, {described}", laid_out)[0])
    plain_rows = {label: _cpu_row(label, replays) for label, replays in plains}
    rows += [row for row, _ in plain_rows.values()]
    aiohttp = plain_rows.get("plain asyncio + aiohttp runner")
    answers = _answer_reading_lines(runs, aiohttp[1]["tester"] if aiohttp else None)
    wanted = PLAIN_RATIO_GOAL * _replay_rate(_replays(results, "plain"))
    placement = results["throughput"].get("cpus")
    if placement:  # memlife's side has the drivers' CPUs, the target its own
        cores = len(placement["drivers"])
        needed = wanted * (memlife_parts["tester"] + memlife_parts["temporal"]) / 1000
        what, of = (
            "memlife's own CPU per request (its workers and Temporal server)",
            (f"of the {cores} CPU(s) its side has"),
        )
    else:
        cores = _cores(results["machine"])
        needed = wanted * sum(memlife_parts.values()) / 1000
        what, of = "memlife's CPU per request", f"of the machine's {cores}"
    return [
        "",
        "Where the CPU went in those runs: each process's own user and system time "
        "(from /proc) over the run, per target request and, in brackets, in cores busy "
        f"on average (the machine has {_cores(results['machine'])}). The Temporal server "
        "is the one each run used (its own time-skipping server in `skip`); the plain "
        "runners use none.",
        "",
        "| run | requests/s | " + " | ".join(heading for _, heading in _CPU_PARTS) + " | all |",
        "|---|---|---|---|---|---|",
        *rows,
        *answers,
        "",
        f"At {PLAIN_RATIO_GOAL} of the plain httpx runner's rate ({wanted:,.0f} requests/s) "
        f"{what}, as measured here with one worker, would keep **{needed:.2f} cores** "
        f"busy, {of}"
        + (
            _shared_coresverdict(needed > cores)
            if not placement
            else ": more than that side has."
            if needed > cores
            else "."
        ),
    ]


def _shared_coresverdict(short: bool) -> str:
    if short:
        return (
            ": more than the machine has, so on it the goal asks for less CPU per "
            "request, not only less waiting."
        )
    return ": the machine could hold it; what is missing is time a request waits, not CPU."


def render(results: dict[str, Any]) -> str:
    """BENCHMARKS.md from the results document (BENCHMARKS.json)."""
    if "throughput" not in results:  # only scale points measured on their own so far
        return "\n".join(
            [
                "# BENCHMARKS",
                "",
                "Only scale points measured on their own "
                "(`--scale-only`) are recorded so far; `./scripts/bench` measures "
                "the rest.",
                "",
                *scale_lines(results),
                *report_lines(results.get("reports", [])),
                *scaleout_lines(results.get("scaleout", [])),
                *stacks_lines(results.get("stacks", [])),
                *real_server_lines(results.get("real_server")),
                *claims_lines(results.get("claims")),
                *profile_lines(results.get("profile")),
            ]
        )
    steps = len(load_scenario(NIGHTLY).timeline)
    throughput, noop = results["throughput"], results["noop"]
    plains = _replays(results, "plain")
    one_worker = _memlife_rates(results, "one")
    memlife_rate = statistics.mean(rate for _, rate in one_worker)
    plain_rate = _replay_rate(plains)
    lines = [
        "# BENCHMARKS",
        "",
        f"Measured {results['measured_at']} in one run of {results['minutes']:.0f} min, on "
        f"{results['machine']}. memlife {results['version']}.",
        "",
        "Reproduce (from a clean clone; the script sets up the venv):",
        "",
        "```",
        results["command"],
        "```",
        "",
        "The machine is shared and noisy: the ratios are what to compare (each measured side "
        "by side in this one run), not the absolute figures. Every memlife run is the "
        f"nightly lifecycle (`scenarios/lifecycle-nightly.yaml`, {steps} "
        f"steps over 3 days 6 hours of scenario time) with the clock "
        f"{_clock_text(results)}, against a fresh bundled reference target (one "
        f"process, one lock; `max_concurrency: {throughput['concurrency']}`), served by one "
        "standalone worker process (`worker.py`; more where a row says so) recording to "
        f"SQLite.{_placement_text(throughput)} Every figure is also "
        "in `BENCHMARKS.json`, which this file is rendered from.",
        "",
        "## Throughput against the baseline and the ceiling",
        "",
        "| measurement | figure | ratio | goal |",
        "|---|---|---|---|",
        f"| memlife: nightly, {throughput['pairs']} pairs | {memlife_rate:,.0f} target "
        f"requests/s {_rates_text(one_worker, throughput['requests'])} | | |",
        f"| plain asyncio + httpx runner: the same {plains[0]['requests']:,} requests, same "
        f"concurrency ({throughput['concurrency']}), fresh target | {plain_rate:,.0f} "
        f"requests/s {_replays_text(plains)} | memlife / "
        f"plain = **{memlife_rate / plain_rate:.2f}** | ≥ {PLAIN_RATIO_GOAL} "
        f"{verdict(memlife_rate / plain_rate >= PLAIN_RATIO_GOAL)} |",
        *_same_client_row(results, memlife_rate),
        *_layout_rows(results, plain_rate),
        *_shared_row(results),
        f"| Temporal dev server ceiling: no-op activities, {noop['workflows']} workflows × "
        f"{noop['activities']} in turn | {noop['rate']:,.0f} activities/s | memlife "
        f"requests/s / ceiling = **{memlife_rate / noop['rate']:.2f}** | ≥ 0.8 "
        f"{verdict(memlife_rate / noop['rate'] >= 0.8)} |",
        "",
        "memlife's rate counts every recorded target request (conversation turns, "
        "registrations, deletions and status polls, and every store read by scope and by "
        "needle) over the run's whole wall time, waits included"
        + (
            ", from the moment its workers poll: their interpreters' start is the "
            "harness's, as the plain runner's process start is"
            if throughput.get("clock_starts") == "workers polling"
            else ""
        )
        + ". The plain runner replays "
        "exactly those requests from the recorder, pair by pair in their recorded order with "
        "their recorded scenario clock (all pairs at once), and does nothing else: no "
        "Temporal, no judging, no recording. Each replay runs in a fresh process of its "
        "own (`python -m bench.plain_runner`), so the baseline owes nothing to the "
        "bench's process"
        + (
            "; each plain runner replays twice, after memlife's first run and after its "
            "last, so that the machine's drift over the minutes weighs on the baseline as "
            "on memlife"
            if "plain_again" in results
            else ""
        )
        + ". The ceiling is what one activity per request "
        "would allow at best: against it memlife's batched steps (one activity per step per "
        "cohort of pairs) are what lift the rate above what the dev server could schedule.",
        *(
            [
                "",
                "memlife sends its target requests with aiohttp (memlife/targets/http.py), "
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
                'waves", has the measurements). A worker now '
                "tunes CPython's cycle collector while it serves, which had taken 11 to 13 s of "
                "a two-minute run and stalled every slot for 0.3 s at a time (docs/scale.md, "
                '"Garbage collection"). '
                "The goal is held against the httpx runner, the "
                "baseline issue #20 set; the aiohttp runner's row holds memlife to the same "
                "client, so that its ratio is what Temporal, judging and recording cost.",
            ]
            if "plain_aiohttp" in results
            else []
        ),
        *_placement_lines(results),
        *cpu_lines(results),
        "",
        "## Latency fidelity",
        "",
    ]
    rest, load = results["fidelity"]["rest"], results["fidelity"]["load"]
    if rest.get("count") and load.get("count"):
        lines += [
            "memlife's recorded latency of each conversation request against the reference "
            "target's own time for it (`Server-Timing: total`, from the request's arrival in "
            "the application to its response), request by request:",
            "",
            "| run | requests | median recorded | median server-side | median difference "
            "| p95 difference | goal |",
            "|---|---|---|---|---|---|---|",
        ]

        def row(label: str, figures: dict[str, float], goal: str) -> str:
            return (
                f"| {label} | {int(figures['count']):,} | "
                f"{figures['median_latency']:.2f} ms | {figures['median_server']:.2f} ms "
                f"| **{figures['median']:.2f} ms** | {figures['p95']:.2f} ms | {goal} |"
            )

        plain_rest = results["fidelity"].get("plain_rest", {})
        plain_load = results["fidelity"].get("plain_load", {})
        for label, figures, pairs, plain in (
            ("one request at a time", rest, results["fidelity"]["rest_pairs"], plain_rest),
            ("under full load", load, throughput["pairs"], plain_load),
        ):
            lines.append(
                row(
                    f"{label}: nightly, {pairs} pairs",
                    figures,
                    f"median ≤ 1 ms {verdict(figures['median'] <= 1.0)}",
                )
            )
            if plain.get("count"):
                lines.append(
                    row(
                        f"{label}: the plain aiohttp runner, the same requests",
                        plain,
                        "none: the client and target alone",
                    )
                )
        lines += [
            "",
            "The first row is memlife's own measurement error: the same lifecycle with the "
            "target's `max_concurrency: 1`, so that no request waits inside the target's HTTP "
            "server before the application sees it (where its timing cannot). The difference "
            "is then the transport and the HTTP client on both sides. Under full load (the "
            "throughput run) a request also waits in the target's single event loop before "
            "the application, and a response that has arrived waits for the worker's busy "
            "event loop: both count in that row. memlife starts its clock once a request has "
            "its turn under the target's concurrency limit, so memlife's own queueing is "
            "never counted as the target's latency.",
            "",
        ]
        if plain_rest.get("count") and plain_load.get("count"):
            lines[-1:-1] = [
                "",
                "The plain aiohttp runner's rows time the same conversation requests the "
                "same way (from headers written to body read, once the request has its turn) "
                "with nothing else in the process: what the client, the transport and the "
                "target's HTTP server cost on their own. memlife's own share is the "
                "difference between the medians: "
                f"**{rest['median'] - plain_rest['median']:+.2f} ms** one request at a time, "
                f"**{load['median'] - plain_load['median']:+.2f} ms** under full load."
                + (
                    " Under full load the bare client alone is above the goal: no tester "
                    "on this client, target and machine meets it, and memlife's share is "
                    "what there is to win."
                    if plain_load["median"] > 1.0
                    else ""
                ),
            ]
    return "\n".join(
        lines
        + scale_lines(results)
        + report_lines(results.get("reports", []))
        + scaleout_lines(results.get("scaleout", []))
        + stacks_lines(results.get("stacks", []))
        + real_server_lines(results.get("real_server"))
        + claims_lines(results.get("claims"))
        + profile_lines(results.get("profile"))
    )


def stacks_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The real stacks' section (bench/stacks.py): each stack's full runs, time per
    pair and findings."""
    if not rows:
        return []
    lines = [
        "## Real stacks on the scripted model",
        "",
        "Each bundled stack started as a user starts it (`memlife target serve KIND`), its "
        "LLM and embeddings memlife's scripted model (docs/scripted-model.md), each shipped "
        "scenario run against it with its shipped target file on the skip clock. Time per "
        "pair is the run's wall time (the embedded Temporal server's start included) over "
        "its pairs. Every finding class is confirmed by a direct read of the stack's own "
        "stores in tests/workflows/ (docs/bug-classes.md); the Letta server's is read by the "
        "bench too, after each run (below the table). Latency (L) is judged against each "
        "scenario's budget (700 ms) on this 2-core machine, the stack and its model sharing "
        "the cores.",
        "",
        "| stack | scenario | pairs | wall time | per pair | cases passed | inconclusive | "
        "findings (check · store: count) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        findings = ", ".join(f"{name}: {count}" for name, count in row["findings"].items())
        lines.append(
            f"| {row['library']} | `{row['scenario']}` | {row['pairs']} | "
            f"{row['seconds']:.0f} s | {row['seconds'] / row['pairs']:.1f} s | "
            f"{row['cases_passed']:,}/{row['cases']:,} | {row['inconclusive']} | "
            f"{findings or 'none'} |"
        )
    confirmed = [row for row in rows if row.get("confirmed")]
    if confirmed:
        lines += ["", "Read directly in the stack's own store after the run:", ""]
        lines += [
            f"- {row['library']} `{row['scenario']}`: {row['confirmed']}" for row in confirmed
        ]
    commands = sorted({row["command"] for row in rows})
    latest = max(row["measured_at"] for row in rows)  # "YYYY-MM-DD HH:MM UTC" sorts
    lines += [
        "",
        "Reproduce: " + "; ".join(f"`{c}`" for c in commands) + f" (last measured {latest}).",
        "",
    ]
    return lines


def _clock_text(results: dict[str, Any]) -> str:
    """How the run's clock is described; results from before `--clock` had only a factor."""
    clock = results.get("clock") or f"compress={results['compress']:g}"
    if clock == "skip":
        return (
            "`skip` (every wait of the timeline as written, skipped by a time-skipping "
            "Temporal server of the run's own)"
        )
    return (
        f"`{clock}` (every wait divided, on the embedded Temporal dev server; a 24 h "
        "deletion SLA is then a few seconds of real time)"
    )
