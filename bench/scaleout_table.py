"""The scale-out bench's section of BENCHMARKS.md (bench/scaleout.py measures,
bench/render.py writes the file): each worker count's rate beside one worker's."""

from __future__ import annotations

import os
from typing import Any


def render_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The section of BENCHMARKS.md: each worker count's rate beside one worker's."""
    if not rows:
        return []
    rows = sorted(rows, key=lambda row: row["workers"])
    base = rows[0]  # one worker, unless the invocation measured none
    base_rate = base["pairs"] / base["seconds"]
    lines = [
        "## Scaling out: 1, 2 and 3 workers on PostgreSQL",
        "",
        f"The nightly at {base['pairs']:,} pairs, in {base['shards']} runs started together "
        f"(one per shard of pairs, each against a bundled reference-target process of its "
        f"own), served by N standalone workers (`worker.py`) on one task queue, recording to "
        f"one PostgreSQL; clock `{base['clock']}`, each worker count with fresh targets, "
        "database and Temporal server, side by side in one invocation. CPU is the "
        "processes' own user and system time over the wall time, in cores (the machine "
        f"has {_cores(base)}).{_placement(base)}",
        "",
        f"| workers | wall time | pairs/min | target requests/s | speed-up over "
        f"{base['workers']} | speed-up ÷ workers | cases passed | failures | inconclusive | "
        "workflow tasks over 1 s | "
        "worker peak RSS | CPU: workers | CPU: targets | CPU: Temporal server | CPU: "
        "PostgreSQL |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        rate = row["pairs"] / row["seconds"]
        speedup = rate / base_rate
        cores = {part: value / row["seconds"] for part, value in row["cpu_seconds"].items()}
        lines.append(
            f"| {row['workers']} | {row['seconds'] / 60:,.1f} min | {rate * 60:,.0f} | "
            f"{row['requests'] / row['seconds']:,.0f} | **{speedup:.2f}×** | "
            f"{speedup / (row['workers'] / base['workers']):.2f} | "
            f"{row['cases_passed']:,}/{row['cases']:,} | "
            f"{row['failures']:,} | {row['inconclusive']:,} | "
            f"{row['workflow_tasks_over_1s']:,} of {row['workflow_tasks']:,} | "
            f"{max(row['worker_peak_rss_mb']):,.0f} MB | {cores['workers']:.2f} | "
            f"{cores['targets']:.2f} | {cores['temporal']:.2f} | "
            f"{'—' if 'postgres' not in cores else format(cores['postgres'], '.2f')} |"
        )

    def cores(row: dict[str, Any]) -> float:
        return sum(row["cpu_seconds"].values()) / row["seconds"]

    busiest = max(rows, key=cores)
    lines += [
        "",
        f"With {base['workers']} worker(s) these processes kept {cores(base):.1f} of "
        f"the machine's {_cores(base)} cores busy; at most {cores(busiest):.1f}, with "
        f"{busiest['workers']}. A worker adds speed only with cores free for it: where "
        "the first worker and the targets leave little, the speed-up measures the "
        "machine more than memlife. A machine with more cores, or workers on hosts of "
        "their own, measures memlife's.",
    ]
    commands = sorted({row["command"] for row in rows})
    lines += [
        "",
        "Reproduce: " + "; ".join(f"`{c}`" for c in commands) + f" (measured "
        f"{rows[-1]['measured_at']}"
        + (f" on {rows[-1]['machine']}" if "machine" in rows[-1] else "")
        + ").",
        "",
    ]
    return lines


def _cores(row: dict[str, Any]) -> int:
    """The CPUs of the machine the row was measured on (rows before 2026-12-06 do not
    name it: this one's)."""
    machine = row.get("machine", "")
    return int(machine.split()[0]) if machine[:1].isdigit() else os.cpu_count() or 1


def _placement(row: dict[str, Any]) -> str:
    """Where the target requests went and where the processes ran, for rows that say."""
    if "target_requests" not in row:
        return ""
    return (
        " Every worker serves everything, the target requests included: they stay on the "
        "runs' own task queue (as `memlife run --no-target-worker`, or a cluster's workers "
        "without `--target-queue`), and no worker is theirs alone. Every process runs on "
        "every CPU: unlike the side-by-side runs' one target, no target has a CPU of its "
        f"own (bench/cpus.py keeps one for one target; the {row['shards']} targets here "
        "would share it)."
    )
