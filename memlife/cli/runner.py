"""`memlife run`'s side of a run: the plan goes to the engine (memlife/api/engine.py), which
starts and awaits it with this command's output (lines on stdout and stderr, a live
status line); then the summary, the artifact --out asks for, and the exit code."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlife.api.engine import Output, start_and_await
from memlife.api.plan import RunPlan
from memlife.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, STATE_DIR, err


class CommandLineOutput(Output):
    """The run's lines on stdout, remarks on stderr, and a live status line while it runs
    (cli/display.py: only on a terminal)."""

    def say(self, line: str) -> None:
        print(line, flush=True)

    def note(self, line: str) -> None:
        err(line)

    async def wait(
        self,
        handle: Any,
        describe: Callable[[], Awaitable[str]],
        waiting: str,
        result_of: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        from memlife.cli.display import wait_showing

        return await wait_showing(handle, describe, waiting, result_of)

    async def wait_all(self, results: list[Awaitable[Any]]) -> list[Any]:
        from rich.console import Console

        console = Console(stderr=True)
        pending = [asyncio.ensure_future(result) for result in results]
        loop = asyncio.get_running_loop()
        started = loop.time()
        with console.status("starting…") as status:
            while not all(future.done() for future in pending):
                await asyncio.wait(pending, timeout=2.0)
                done = sum(1 for future in pending if future.done())
                status.update(f"{done}/{len(pending)} run(s) done · {loop.time() - started:.0f}s")
        return [future.result() for future in pending]


async def execute(plan: RunPlan) -> int:
    from memlife import recorder
    from memlife.cli import render
    from memlife.stack.commands import command

    outcome = await start_and_await(plan, CommandLineOutput())
    started, experiment, embedded_ui = outcome.runs, outcome.experiment, outcome.embedded_ui

    # The summary needs the digest alone, an experiment's comparison the digests and the
    # probes' figures the database pools (recorder.report_experiment), and what --out
    # writes, signed or not, is streamed from the recorder (recorder/streams.py), all at
    # any size.
    compared = None
    if experiment is not None:
        reported = recorder.report_experiment(experiment)
        compared = None if reported is None else reported[0]
        artifacts = [] if compared is None else list(compared.runs)
    else:
        digest = recorder.run_digest(started[0].run_id)
        artifacts = [] if digest is None else [digest]
    found = {artifact.meta.run_id for artifact in artifacts}
    missing = [run.run_id for run in started if run.run_id not in found]
    if missing:
        err(
            f"recorder {recorder.database_url()}: run {missing[0]} finished but its "
            "records are not here; is MEMLIFE_DB_URL the same for the workers and this "
            "command?"
        )
        return EXIT_USAGE
    if experiment is None:
        artifact = artifacts[0]
        link = started[0].link
        if link and embedded_ui:  # the server is gone; `memlife dev` serves its history
            link = f"run `{command()} dev` (it keeps {STATE_DIR / 'temporal.db'}), then open {link}"
        render.print_summary(artifact, link)
        document = artifact
    else:
        from memlife.recorder.experiment import experiment_document

        document = compared if compared is not None else experiment_document(experiment, artifacts)
        render.print_comparison(document)
    if plan.out:
        if plan.signing_key is not None:  # one run's (run.py refuses an experiment's)
            from memlife.reports.signing import signed_chunks

            parts = recorder.artifact_parts(started[0].run_id)
            assert parts is not None  # its digest was just read
            chunks = signed_chunks(*parts, plan.signing_key, "artifact", lambda: datetime.now(UTC))
        else:
            chunks = (
                recorder.experiment_chunks(document)
                if compared is not None
                else recorder.artifact_chunks(started[0].run_id)
            )
            assert chunks is not None  # its digest was just read
        size = render.write_immutable(Path(plan.out), chunks, progress=err)
        signed = (
            f", signed; `{command()} verify {plan.out} --public-key PUBFILE` checks it"
            if plan.signing_key is not None
            else ""
        )
        print(f"artifact: {plan.out} ({render.file_size(size)}{signed})")
    if plan.enforce and not all(a.summary.passed for a in artifacts):
        return EXIT_FAILED
    return EXIT_OK
