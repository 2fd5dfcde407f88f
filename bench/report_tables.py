"""The reports bench's section of BENCHMARKS.md (bench/reports.py measures, bench/render.py
writes the file): a table per invocation, each format's cost beside the smallest run's."""

from __future__ import annotations

from typing import Any

FORMATS = ("json", "html", "junit", "artifact", "signed artifact", "html of the file", "verify")


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """One invocation's rows: each format's cost by number of pairs, beside its smallest."""
    by_format: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda row: row["pairs"]):
        by_format.setdefault(row["format"], []).append(row)
    lines = [
        "| format | pairs | cases (not passed) | time | peak RSS | written | time ÷ "
        "smallest | RSS ÷ smallest |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fmt in (*FORMATS, *(f"experiment {fmt}" for fmt in FORMATS)):
        measured = by_format.get(fmt, [])
        for row in measured:
            base = measured[0]
            lines.append(
                f"| {fmt} | {row['pairs']:,} | {row['cases']:,} ({row['not_passed']:,}) | "
                f"{row['seconds']:,.1f} s | {row['peak_rss_mb']:,.0f} MB | "
                f"{row['output_bytes'] / 1e6:,.1f} MB | {row['seconds'] / base['seconds']:.2f}"
                f" | {row['peak_rss_mb'] / base['peak_rss_mb']:.2f} |"
            )
    command = rows[0]["command"]
    nightly = "`memlife run scenarios/lifecycle-nightly.yaml --pairs N --clock skip`"
    where = (
        "each file an SQLite recorder: `memlife-N.db` one scale run's, in the working "
        "directory that `./scripts/bench --scale-only --scale N` names as it starts; "
        f"`memlife-run-N.db` written by {nightly} with MEMLIFE_DB_URL=sqlite:///"
        "memlife-run-N.db"
        if ".db" in command
        else f"with the nightlies' recorder as MEMLIFE_DB_URL; the runs come from {nightly}"
    )
    if any(row["format"].startswith("experiment") for row in rows):
        where += (
            "; an experiment's pairs are those of all its runs, and `experiment-N.db` "
            "holds one written by `memlife run scenarios/lifecycle-nightly.yaml --pairs "
            "N --repeat 2 --clock skip` with MEMLIFE_DB_URL=sqlite:///experiment-N.db"
        )
    machine = rows[0].get("machine")  # rows before 2026-12-04 did not record it
    on = f" on {machine}" if machine else ""
    floor = (
        ""
        if rows[0].get("launched")
        else " Measured before the launcher (46d77ff): each peak RSS here counts the bench's "
        "own too, which Linux carries into a child's, so figures near the smallest are "
        "the bench's floor rather than the report's."
    )
    note = f" {rows[0]['note'].rstrip('.')}." if rows[0].get("note") else ""
    return [
        *lines,
        "",
        f"Measured {rows[0]['measured_at']}{on}. Reproduce: `{command}` ({where}).{floor}{note}",
        "",
    ]


def render_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The section of BENCHMARKS.md: a table per invocation, newest first, each format's
    cost beside the smallest run's of that invocation (never another's: the machine and
    its load change between them)."""
    if not rows:
        return []
    invocations: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        invocations.setdefault((row["measured_at"], row["command"]), []).append(row)
    lines = [
        "## Reports and artifacts at growing numbers of pairs",
        "",
        "Each a process of its own on the recorder of one finished nightly "
        "(`memlife report RUN --format F --out FILE`; `artifact` is what "
        "`memlife run --out` writes once the run has finished, `signed artifact` what "
        "`memlife run --out --sign KEYFILE` writes, `html of the file` is `memlife "
        "report FILE --format html` of that file, and `verify` is `memlife verify` of "
        "it, its size the file read). Time and peak RSS "
        "(the kernel's) beside the smallest run's, measured in one invocation; a table "
        "per invocation, the newest first.",
        "",
    ]
    for key in sorted(invocations, reverse=True):
        lines += _table(invocations[key])
    return lines
