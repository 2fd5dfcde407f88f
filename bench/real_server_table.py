"""The real-server bench's section of BENCHMARKS.md (bench/real_server.py measures,
bench/render.py writes the file): memlife against the plain aiohttp runner on the bundled
Mem0 stack, the same requests side by side, and each side's time per request outside the
stack's own."""

from __future__ import annotations

import statistics
from typing import Any

from bench import cpus


def _rate(figures: dict[str, Any]) -> float:
    return float(figures["requests"] / figures["seconds"])


def _each(figures: list[dict[str, Any]]) -> str:
    return ", ".join(f"{_rate(one):.1f}" for one in figures)


def _findings(findings: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in findings.items()) or "none"


def _correctness(findings: dict[str, int]) -> dict[str, int]:
    """The findings but latency's (L): those depend on how busy the machine was."""
    return {name: count for name, count in findings.items() if not name.startswith("L ")}


def _cores(machine: str) -> int:
    """The machine's CPUs, from how bench/machine.py describes it."""
    return int(machine.split(" CPU")[0].rsplit(" ", 1)[-1]) if " CPU" in machine else 0


def _statuses(figures: list[dict[str, Any]]) -> str:
    total: dict[str, int] = {}
    for one in figures:
        for status, count in one.get("statuses", {}).items():
            total[status] = total.get(status, 0) + count
    return ", ".join(f"{count} × HTTP {status}" for status, count in sorted(total.items()))


def _cpu_row(label: str, runs: list[dict[str, Any]], own: str) -> str:
    """ms of CPU per request and cores busy on average, by process, over the runs."""
    requests = sum(run["requests"] for run in runs)
    seconds = sum(run["seconds"] for run in runs)

    def part(name: str) -> float:
        return sum(run["cpu_seconds"].get(name, 0.0) for run in runs)

    cells = []
    for name in (own, "temporal", "target"):
        used = part(name)
        cells.append(f"{used / requests * 1000:.1f} ms ({used / seconds:.2f})")
    every = sum(part(name) for name in (own, "temporal", "target"))
    return (
        f"| {label} | {requests / seconds:.1f} | {' | '.join(cells)} | "
        f"**{every / requests * 1000:.1f} ms** ({every / seconds:.2f}) |"
    )


def _busy(runs: list[dict[str, Any]]) -> tuple[float, float]:
    """The stack's cores busy on average over the runs, and its CPU ms per request."""
    used = sum(run["cpu_seconds"]["target"] for run in runs)
    return (
        used / sum(run["seconds"] for run in runs),
        used / sum(run["requests"] for run in runs) * 1000,
    )


def _stack_cpu_lines(row: dict[str, Any]) -> list[str]:
    """Whether the stack was CPU-bound, and where the ratio's gap lies."""
    ours, ours_ms = _busy(row["memlife"])
    bare, bare_ms = _busy(row["plain"])
    text = (
        f"The stack kept {bare:.2f} cores busy in the plain runner's replays and {ours:.2f} "
        f"in memlife's runs, for about the same CPU per request ({bare_ms:.1f} and "
        f"{ours_ms:.1f} ms)."
    )
    if bare >= 0.8:
        text += (
            " About one core is the most one interpreter's lock lets its Python run (the "
            "embedding model's native code aside): at "
            f"`max_concurrency: {row['concurrency']}` Mem0 on the scripted model is CPU-bound "
            "on this machine, the replays keep it so, and giving it a CPU of its own, as the "
            "reference target has, applies here too. Under memlife it is idle the rest of "
            "the time: slots left empty at the timeline's steps and waits, while the worker "
            "judges, records and reads the stores it reads itself. Its busy share, "
            f"{ours / bare:.2f} of the replays', is about memlife's ratio."
        )
    else:
        text += (
            f" Less than one core even in the replays: at `max_concurrency: "
            f"{row['concurrency']}` its requests wait on something other than its CPU as well "
            "(its one-at-a-time Qdrant calls, the model's answers, or the machine's other "
            "work)."
        )
    return [text]


def _fidelity_row(label: str, figures: dict[str, Any]) -> str:
    return (
        f"| {label} | {int(figures['count']):,} | {figures['median_latency']:.1f} ms | "
        f"{figures['median_server']:.1f} ms | **{figures['median']:.2f} ms** | "
        f"{figures['p95']:.1f} ms |"
    )


def render_lines(rows: list[dict[str, Any]] | None) -> list[str]:
    """The section of BENCHMARKS.md, or nothing before the bench has run."""
    if not rows:
        return []
    lines = [
        "## memlife against a plain runner on a real server",
        "",
    ]
    for row in rows:
        lines += _row_lines(row)
    return lines


def _row_lines(row: dict[str, Any]) -> list[str]:
    memlife, plain = row["memlife"], row["plain"]
    memlife_rate = statistics.mean(map(_rate, memlife))
    plain_rate = statistics.mean(map(_rate, plain))
    first = memlife[0]
    own_reads = first["observations"] - first["requests"]
    placement = (
        f" {cpus.describe(row['cpus'])}, memlife's processes and the plain runner alike "
        "(bench/cpus.py)."
        if row.get("cpus")
        else " Every process ran on every CPU."
    )
    spread = ", ".join(f"{ratio:.2f}" for ratio in row["by_round"])
    lines = [
        f"The bundled Mem0 stack ({row['library']} with its model on, `infer=True`; its LLM "
        "and embeddings memlife's scripted model, docs/scripted-model.md) started as a user "
        "starts it (`memlife target serve mem0`), a fresh one, with fresh stores, for every "
        f"run and every replay. memlife runs `{row['scenario']}` ({row['pairs']} pairs) with "
        f"the shipped target file (`max_concurrency: {row['concurrency']}`) on the skip "
        "clock, as the reference target's rows are run: a time-skipping Temporal server of "
        "its own, one standalone worker (`worker.py`), the clock started once the worker "
        "polls. The plain asyncio + aiohttp runner (memlife's own HTTP client, nothing else "
        "in its process) sends memlife's first run's requests again, each built from the "
        "same target file (a forgotten fact with every value it had, as memlife sends it), "
        "at the same concurrency. Runs and replays alternated, "
        f"{', '.join(row['order'])}, so that the machine's drift weighs on both alike."
        f"{placement} Both rates count the requests to the stack: the {own_reads:,} store "
        f"reads of each run that memlife makes itself (Mem0's `history` and `messages` "
        "tables in SQLite, its files on disk) are memlife's own work, in its time but not "
        "in its count.",
        "",
        "| measurement | figure | ratio |",
        "|---|---|---|",
        f"| memlife: `{row['scenario']}`, {row['pairs']} pairs, on {row['library']} | "
        f"{memlife_rate:.1f} target requests/s (the mean of {len(memlife)} runs of "
        f"{first['requests']:,} requests each: {_each(memlife)}) | |",
        f"| plain asyncio + aiohttp runner: the same {plain[0]['requests']:,} requests, "
        f"same concurrency ({row['concurrency']}), a fresh stack each time | "
        f"{plain_rate:.1f} requests/s (the mean of {len(plain)} replays: {_each(plain)}; "
        f"{sum(one['errors'] for one in plain)} error(s)) | memlife / plain aiohttp = "
        f"**{row['ratio']:.2f}** (round by round: {spread}) |",
        "",
    ]
    expected: dict[str, int] | None = row.get("stacks_findings")
    same = expected is not None and all(
        _correctness(run["findings"]) == _correctness(expected) for run in memlife
    )
    late = [run["findings"].get("L · response", 0) for run in memlife]
    findings = {_findings(run["findings"]) for run in memlife}
    lines.append(
        "memlife's findings, "
        + (
            f"in every run: {findings.pop()}"
            if len(findings) == 1
            else "run by run: " + "; ".join(_findings(run["findings"]) for run in memlife)
        )
        + (
            f" — the same as the real stacks' row for `{row['scenario']}` above (real findings "
            "of Mem0, docs/bug-classes.md)"
            + (
                f", but for latency (L: {', '.join(map(str, late))} answer(s) over the "
                "scenario's budget, run by run, on the busy machine)."
                if any(late) and not (expected or {}).get("L · response")
                else "."
            )
            if same
            else (
                " — not those of the real stacks' row for "
                f"`{row['scenario']}` ({_findings(row['stacks_findings'])})."
                if row.get("stacks_findings")
                else "."
            )
        )
        + " Answers outside 2xx: "
        + (
            f"memlife's runs {_statuses(memlife) or 'none'}, the replays "
            f"{_statuses(plain) or 'none'}."
        )
    )
    cores = _cores(row.get("machine", ""))
    lines += [
        "",
        "Where the CPU went: each process's own user and system time (from /proc) over the "
        "run, per request and, in brackets, in cores busy on average"
        + (f" (the machine has {cores})" if cores else "")
        + ". The stack is one Python process: Mem0, its local Qdrant (one call at a time), "
        "and the scripted model and its embeddings in a thread of the same interpreter.",
        "",
        "| runs | requests/s | memlife's worker or the plain runner | Temporal server | "
        "the Mem0 stack | all |",
        "|---|---|---|---|---|---|",
        _cpu_row(f"memlife, {len(memlife)} runs", memlife, "workers"),
        _cpu_row(f"plain aiohttp runner, {len(plain)} replays", plain, "runner"),
        "",
    ]
    lines += [*_stack_cpu_lines(row), ""]
    lines += [
        "Each conversation request's latency as recorded (from its headers written to its "
        "body read, once it has its turn under the concurrency limit) against the stack's "
        "own time for it (`Server-Timing: total`, from its arrival in the application to its "
        "response; memlife's launcher of the stack adds the header, memlife/cli/target.py, "
        "which Mem0 itself does not send):",
        "",
        "| run | requests | median recorded | median server-side | median difference | "
        "p95 difference |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        _fidelity_row(f"memlife, run {index}", run["fidelity"])
        for index, run in enumerate(memlife, start=1)
    ]
    lines += [
        _fidelity_row(f"plain aiohttp runner, replay {index}", replay["fidelity"])
        for index, replay in enumerate(plain, start=1)
    ]
    share = row["own_share"]
    lines += [
        "",
        "memlife's own time per request is its difference less the plain runner's (the "
        "client, the transport and the stack's HTTP server, which both pay): "
        f"**{share['median']:+.2f} ms** at the median and **{share['p95']:+.1f} ms** at the "
        "95th percentile (the means over the runs and over the replays). As under full load "
        "on the reference target (Latency fidelity), an answer that has arrived may wait for "
        "the worker's busy event loop before it is read: the tail is memlife's more than "
        "the median.",
        "",
        f"Reproduce: `{row['command']}` (measured {row['measured_at']}"
        + (f" on {row['machine']}" if row.get("machine") else "")
        + ").",
        "",
    ]
    return lines
