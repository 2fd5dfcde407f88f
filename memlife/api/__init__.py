"""memlife from Python: run a scenario against a target and get its result, or check a
deletion ad hoc, from plain code or from asyncio. `import memlife` gives the same names.

    import memlife

    result = memlife.run("scenarios/seed-six-case.yaml", clock="skip")
    assert result.passed, result.failures

`memlife run` is built on the same engine (api/plan.py reads and checks, api/engine.py
starts and awaits); what it prints is what an `Output` hears.

The names in `__all__` are memlife's Python API, versioned by `API_VERSION` under
semantic versioning: a minor version adds, only a major one removes or changes what a
name takes or gives. Everything else (memlife.api's modules, memlife.rules, …) is
internal and may change in any release. docs/python-api.md says more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memlife.api.engine import Output
from memlife.errors import InputError, MemlifeError, Problem

if TYPE_CHECKING:
    from memlife.recorder.artifact import Artifact, CaseEntry, FindingEntry
    from memlife.rules.erasure import ErasureReceipt
    from memlife.rules.scenario import Scenario
    from memlife.rules.target import Target

API_VERSION = "1.0.0"

__all__ = [
    "API_VERSION",
    "InputError",
    "MemlifeError",
    "Output",
    "Problem",
    "RunResult",
    "check_deletion",
    "check_deletion_async",
    "run",
    "run_async",
]

T = TypeVar("T")


@dataclass(frozen=True)
class RunResult:
    """What a run found. `digest` is the artifact without its long lists (what `memlife
    run` prints from); `artifact()` reads the whole one, every case and observation,
    from the recorder; `write()` writes it as `memlife run --out` does."""

    run_id: str
    digest: Artifact
    link: str | None  # the run's page in the Temporal Web UI, when there is one

    @property
    def passed(self) -> bool:
        return self.digest.summary.passed

    @property
    def failures(self) -> list[FindingEntry]:
        """Every failed check: which invariant, why, where, and the evidence."""
        return self.digest.failures

    @property
    def inconclusive(self) -> list[FindingEntry]:
        """Every check that could not be judged (memlife fails closed: never a pass)."""
        return self.digest.inconclusive

    def artifact(self) -> Artifact:
        """The whole artifact, read from the recorder (every case: `cases()`)."""
        from memlife import recorder
        from memlife.recorder.builder import build_artifact

        rows = recorder.load_run(self.run_id)
        if rows is None:
            raise MemlifeError(f"recorder {recorder.database_url()}: no run {self.run_id}")
        return build_artifact(rows)

    def cases(self) -> list[CaseEntry]:
        """Every check the run made, passed or not, in the order it made them."""
        return self.artifact().cases

    def write(self, path: str | Path) -> int:
        """The whole artifact as JSON at `path` (streamed: any size); the bytes written."""
        from memlife import recorder

        chunks = recorder.artifact_chunks(self.run_id)
        if chunks is None:
            raise MemlifeError(f"recorder {recorder.database_url()}: no run {self.run_id}")
        with Path(path).open("w", encoding="utf-8") as out:
            for chunk in chunks:
                out.write(chunk)
            return out.tell()


async def run_async(
    scenario: str | Path | Scenario,
    target: str | Path | Target | None = None,
    *,
    clock: str = "skip",
    faults: Sequence[str] = (),
    pairs: int | None = None,
    twins: int | None = None,
    seed: str | None = None,
    cohort: str | int = "auto",
    review_queue: str | None = None,
    task_queue: str | None = None,
    output: Output | None = None,
) -> RunResult:
    """Run `scenario` (a file, or a Scenario) against `target` (a target file, a Target,
    or None: the bundled reference target, with `faults` if any) and return what it
    found. `clock` is `skip` (the default: waits take no time, on a server of the run's
    own), `real` or `compress=N`, as `memlife run --clock` takes it. Without a cluster
    configured (TEMPORAL_ADDRESS, an envconfig profile) or `memlife dev` running, memlife
    starts what it needs on free loopback ports and stops it afterwards.

    Raises InputError (every problem of every input, one line each) before anything
    starts, and MemlifeError (one line) when the world is not as the run needs it (a
    target that does not answer, a recorder that does not hold the run). A run that found
    failures is no error: see `RunResult.passed`."""
    from memlife.api.engine import start_and_await
    from memlife.api.plan import RunOptions, check_plan, read_plan

    options = RunOptions(
        scenario=scenario if not isinstance(scenario, Path) else str(scenario),
        target=[] if target is None else [str(target) if isinstance(target, Path) else target],
        fault=list(faults),
        pairs=pairs,
        twins=twins,
        seed=seed,
        clock=clock,
        cohort=str(cohort),
        review=review_queue,
        task_queue=task_queue,
    )
    plan = read_plan(options)
    await asyncio.to_thread(check_plan, plan)  # it may ask the target, or install extras
    started = await start_and_await(plan, output or Output())
    return await asyncio.to_thread(_result, started.runs[0].run_id, started.runs[0].link)


def run(
    scenario: str | Path | Scenario,
    target: str | Path | Target | None = None,
    **options: Any,
) -> RunResult:
    """`run_async`, from plain code (not inside a running event loop)."""
    return _blocking(run_async(scenario, target, **options), "run_async")


async def check_deletion_async(
    target: str | Path | Target,
    user_id: str,
    *,
    values: Sequence[str] = (),
    phone: str | None = None,
    questions: Sequence[str] = (),
    ask_through_say: bool = False,
    request: bool = False,
    deadline: str = "24h",
    poll: str = "1h",
    check_id: str | None = None,
    task_queue: str | None = None,
    output: Output | None = None,
) -> ErasureReceipt:
    """Check that `user_id` is gone from `target`: its stores read for it and for
    `values`, `questions` asked as the tenant (through `ask`), the deletion requested
    first when `request`; every `poll` until every store is clean or `deadline` passes.
    Runs on the running stack (`memlife dev`, or the configured cluster's workers), as
    `memlife check-deletion --wait` does, and returns the receipt (`.verdict`: pass,
    fail or inconclusive)."""
    from memlife import DEFAULT_TASK_QUEUE
    from memlife.api.deletion import (
        DeletionOptions,
        deletion_check_input,
        start_deletion_check,
    )

    check = deletion_check_input(
        DeletionOptions(
            target=str(target) if isinstance(target, Path) else target,
            tenant=user_id,
            value=list(values),
            phone=phone,
            ask=list(questions),
            ask_through_say=ask_through_say,
            request=request,
            deadline=deadline,
            poll=poll,
            id=check_id,
        )
    )
    receipt = await start_deletion_check(
        check, task_queue or DEFAULT_TASK_QUEUE, output or Output(), wait=True
    )
    assert receipt is not None  # waited for
    return receipt


def check_deletion(target: str | Path | Target, user_id: str, **options: Any) -> ErasureReceipt:
    """`check_deletion_async`, from plain code (not inside a running event loop)."""
    return _blocking(check_deletion_async(target, user_id, **options), "check_deletion_async")


def _result(run_id: str, link: str | None) -> RunResult:
    from memlife import recorder

    digest = recorder.run_digest(run_id)
    if digest is None:
        raise MemlifeError(
            f"recorder {recorder.database_url()}: run {run_id} finished but its records "
            "are not here; is MEMLIFE_DB_URL the same for the workers and this process?"
        )
    return RunResult(run_id=run_id, digest=digest, link=link)


def _blocking(work: Coroutine[Any, Any, T], instead: str) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    work.close()
    raise MemlifeError(
        f"memlife: called from a running event loop; await memlife.{instead}(...) there"
    )
