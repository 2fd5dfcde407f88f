"""The profile bench's section of BENCHMARKS.md (bench/profile.py measures, bench/render.py
writes the file): where a default run's CPU goes, as shares of its busy samples."""

from __future__ import annotations

from typing import Any


def _rows(shares: list[list[Any]]) -> list[str]:
    return [f"| `{name}` | {share:.1%} |" for name, share in shares]


def render_lines(result: dict[str, Any] | None) -> list[str]:
    """The section of BENCHMARKS.md, or nothing before the bench has run."""
    if not result:
        return []
    return [
        "## Where a run's CPU goes",
        "",
        f"`memlife run {result['scenario']} --clock skip --no-target-worker` (its worker, "
        "target requests included, in the command's own process: from 20 pairs a run "
        "otherwise sends them from a second one), sampled by py-spy at "
        f"{result['rate']} Hz: {result['busy_samples']:,} busy samples ({result['outcome']}). "
        "Only memlife's process is sampled, not the reference target or Temporal's server "
        "it drives; samples where a thread waits (the event loop's poll, a lock, an idle "
        "pool thread) are left out. No single frame dominates: the cost is spread over the "
        "SDK (the workflow sandbox, payload conversion), the event loop, the recorder's "
        "SQLite writes and the HTTP client (bench/profile.py).",
        "",
        "By package, where the innermost frame was (a thread running outside Python, such as "
        "the SDK core's, counts as no Python frame):",
        "",
        "| package | share of busy samples |",
        "|---|---|",
        *_rows(result["packages"]),
        "",
        "The innermost frames:",
        "",
        "| frame | share |",
        "|---|---|",
        *_rows(result["frames"]),
        "",
        "memlife's own frames, with everything they called:",
        "",
        "| frame | share |",
        "|---|---|",
        *_rows(result["own"]),
        "",
        f"Reproduce: `{result['command']}` (measured {result['measured_at']} on "
        f"{result['machine']}).",
        "",
    ]
