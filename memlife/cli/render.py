"""What a run prints: the checks by invariant, the invariant × store × stage matrix, the
deletions and latency lines, the failures, the verdict line, and an experiment's
comparison; and the artifact, written once and read-only."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlife.cli.display import output_console

if TYPE_CHECKING:
    from memlife.recorder.artifact import Artifact, ExperimentDocument, Tally

FAILURES_SHOWN = 25
# A large run's artifact takes minutes to write (2.7 GB in about 4 min at 10,000 pairs,
# BENCHMARKS.md): how far it got is said this often.
PROGRESS_EVERY_S = 10.0


def print_comparison(document: ExperimentDocument) -> None:
    from rich.table import Table

    from memlife.reports.experiment import comparison_rows

    console = output_console()
    labels, rows = comparison_rows(document)
    meta = document.experiment
    table = Table(
        title=f"experiment {meta.id}: {len(labels)} configuration(s) × "
        f"{meta.repetitions} repetition(s) (95% CI over pairs)",
        title_justify="left",
    )
    table.add_column("")
    for label in labels:
        table.add_column(label, justify="right")
    for row in rows:
        table.add_row(*[f"[red]{value}[/red]" if value == "FAIL" else value for value in row])
    console.print(table)
    for run in document.runs:
        console.print(
            f"  {run.meta.configuration} #{run.meta.repetition}: run "
            f"{run.meta.run_id} · {run.summary.cases_passed}/{run.summary.cases} "
            "cases"
        )


def _verdict(tally: Tally) -> str:
    if tally.failed:
        return "[red]fail[/red]"
    if tally.inconclusive:
        return "[yellow]inconclusive[/yellow]"
    return "[green]pass[/green]"


def print_summary(artifact: Artifact, link: str | None) -> None:
    from rich.table import Table

    from memlife.reports.scorecard import latency_line

    console = output_console(width=140)
    summary, latency = artifact.summary, artifact.latency_ms
    table = Table(title="memlife: checks by invariant", title_justify="left")
    table.add_column("invariant")
    table.add_column("checked", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("inconclusive", justify="right")
    table.add_column("verdict")
    for name, tally in summary.by_invariant.items():
        if tally.checked:
            table.add_row(
                name,
                str(tally.checked),
                str(tally.failed),
                str(tally.inconclusive),
                _verdict(tally),
            )
    console.print(table)
    _print_matrix(console, artifact)
    if artifact.deletions:
        times = sorted(
            d.time_to_forget_s for d in artifact.deletions if d.time_to_forget_s is not None
        )
        confirmed = sum(1 for d in artifact.deletions if d.outcome == "pass")
        text = f"deletions: {confirmed}/{len(artifact.deletions)} confirmed within the SLA"
        if times:
            text += f" · time-to-forget median {times[len(times) // 2] / 60:.0f} min"
        console.print(text)
    if latency.count:
        console.print(f"latency (ms): {latency_line(latency)}")
    if artifact.summary.refusals:
        console.print(
            f"refusals: {artifact.summary.refusals} request(s) refused with a status "
            "the target file lists as `refused` (answers that hold nothing)"
        )
    if artifact.meta.paraphrase_candidates is not None:
        console.print(
            f"paraphrase candidates: {artifact.meta.paraphrase_candidates} "
            "answer(s) closer in meaning to the partner's facts than to the "
            "tenant's own, queued for review (`memlife review`), not judged"
        )
    failures = artifact.failures
    if failures:
        failure_table = Table(title=f"failures ({len(failures)})", title_justify="left")
        for column in ("invariant", "reason", "stage", "tenant", "store", "value"):
            failure_table.add_column(column, overflow="fold")
        for failure in failures[:FAILURES_SHOWN]:
            failure_table.add_row(
                failure.invariant,
                failure.reason,
                failure.stage,
                f"{failure.tenant} (pair {failure.pair})",
                failure.store,
                (failure.evidence.value or "")
                + (f" (found as {failure.evidence.form!r})" if failure.evidence.form else ""),
            )
        console.print(failure_table)
        if len(failures) > FAILURES_SHOWN:
            console.print(f"… and {len(failures) - FAILURES_SHOWN} more in the artifact")
    if artifact.inconclusive:
        console.print(
            f"[yellow]{len(artifact.inconclusive)} inconclusive check(s)[/yellow] "
            "(target errors; inconclusive never counts as a pass)"
        )
    verdict = "[green]PASS[/green]" if summary.passed else "[red]FAIL[/red]"
    console.print(
        f"{verdict}: {summary.cases_passed}/{summary.cases} cases passed · "
        f"{len(failures)} failure(s) · run {artifact.meta.run_id}"
    )
    if link:
        console.print(f"Web UI: {link}", soft_wrap=True)


def _print_matrix(console: Any, artifact: Artifact) -> None:
    """Invariant × store rows, one column per stage: passed/checked, red where failed."""
    from rich.table import Table

    from memlife.reports.scorecard import invariant_order

    matrix = artifact.matrix
    used = [
        stage
        for stage in artifact.stages
        if any(stage in cells for stores in matrix.values() for cells in stores.values())
    ]
    if len(used) < 2:
        return  # one stage: the invariant table already says it all
    table = Table(title="invariant × store × stage (passed/checked)", title_justify="left")
    table.add_column("invariant")
    table.add_column("store")
    for stage in used:
        table.add_column(stage, justify="center")
    for invariant in invariant_order(matrix):
        stores = matrix[invariant]
        for store, cells in sorted(
            stores.items(), key=lambda item: (item[0] != "response", item[0])
        ):
            row = []
            for stage in used:
                cell = cells.get(stage)
                if cell is None:
                    row.append("")
                    continue
                text = f"{cell.passed}/{cell.checked}"
                if cell.failed:
                    text = f"[red]{text}[/red]"
                elif cell.inconclusive:
                    text = f"[yellow]{text}[/yellow]"
                row.append(text)
            table.add_row(invariant, store, *row)
    console.print(table)


def write_immutable(
    path: Path, chunks: Iterable[str], progress: Callable[[str], None] | None = None
) -> int:
    """Write pieces of text as they come, atomically and read-only: a reader never sees
    half a file, and a failure midway leaves none. Returns the bytes written."""
    return write_chunks(path, _ending(chunks), mode=0o444, progress=progress)


def _ending(chunks: Iterable[str]) -> Iterator[str]:
    yield from chunks
    yield "\n"


def write_chunks(
    path: Path,
    chunks: Iterable[str],
    mode: int | None = None,
    progress: Callable[[str], None] | None = None,
    every_s: float = PROGRESS_EVERY_S,
) -> int:
    """Write pieces of text as they come, atomically: a file is replaced only once it is
    whole, and a failure midway leaves the old one (or none). Every `every_s` seconds
    `progress` hears how much is written so far. Returns the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            started = last = time.monotonic()
            for chunk in chunks:
                out.write(chunk)
                if progress is not None and time.monotonic() - last >= every_s:
                    last = time.monotonic()
                    # What reached the file; the little still buffered comes next time.
                    progress(
                        f"writing {path}: {file_size(os.fstat(out.fileno()).st_size)} "
                        f"so far ({last - started:.0f} s)"
                    )
        if mode is not None:
            temporary.chmod(mode)
        size = temporary.stat().st_size
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return size


def file_size(size: int) -> str:
    """`2.7 GB`, `215.3 MB`, `12.0 KB`, `812 bytes` (binary units, as BENCHMARKS.md's)."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
