"""The claims bench's section of BENCHMARKS.md (bench/claims.py measures, bench/render.py
writes the file): live claims and preparation time at the first, middle and last run."""

from __future__ import annotations

from typing import Any


def render_lines(result: dict[str, Any] | None) -> list[str]:
    """The section of BENCHMARKS.md, or nothing before the bench has run."""
    if not result:
        return []
    lines = [
        "## Claims on one long-lived target",
        "",
        f"{result['runs']} runs of `{result['scenario']}` one after another against one "
        "bundled reference target that outlives them, recording to one SQLite recorder. "
        "Each run is prepared as a run against a target file is (its values marked from its "
        "seed and claimed, after the finished runs' claims are reviewed), indexes the "
        "other runs' live values, registers its tenants (their phones claimed), deletes "
        "them with the deletion confirmed, and is recorded and finished as the lifecycle "
        "does it, in the activities' own code without Temporal (bench/claims.py). Live "
        "claims are those no review has retired, counted after the run's preparation and "
        "registration; a claim retires once its run finished with its tenants' deletion "
        'confirmed (docs/operations.md, "Many runs, one service"). The foreign-value index '
        "holds the run's own values and the other runs' live ones; run 1's times include "
        "the recorder's first use (its tables created).",
        "",
        "| run | live claims | preparation | foreign-value index | values in it |",
        "|---|---|---|---|---|",
    ]
    for figure in result["at"]:
        lines.append(
            f"| {figure['run']} | {figure['live_claims']} | "
            f"{figure['prepare_ms']:.1f} ms | {figure['index_ms']:.1f} ms | "
            f"{figure['foreign_values']} |"
        )
    lines += ["", f"Reproduce: `{result['command']}` (measured {result['measured_at']}).", ""]
    return lines
