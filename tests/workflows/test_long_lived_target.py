"""One reference target that outlives its runs, as a user's service does: runs one after
another against the same database each pass on the clean target, and a fault switched on
later is caught exactly as on a fresh target (tests/workflows/test_detection_matrix.py).

Each run gets a time-skipping server of its own, as every `memlife run --clock skip` does:
its scenario clock starts at the real time, days behind where the previous run left the
target. With one simulated clock for every run, the second run's deletions were scheduled
from the first run's clock and stayed pending; each run now has a clock of its own
(docs/simulated-targets.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.recorder.claims import claims_of_others, retire_claims
from memlife.rules.scenario import Scenario
from memlife.stack import embedded
from memlife.stack.codec import DATA_CONVERTER
from memlife.stack.connection import bundled_binary
from memlife.stack.worker import build_worker
from tests.workflows.test_detection_matrix import (
    DETECTION,
    cells,
    nightly_small,
    run_nightly,
)

__all__ = ["nightly_small"]  # the fixture, shared with the detection matrix


@asynccontextmanager
async def fresh_skip_server() -> AsyncIterator[tuple[WorkflowEnvironment, str]]:
    """A time-skipping server starting at the real time, with a worker on it."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=DATA_CONVERTER,
        test_server_existing_path=bundled_binary("temporal-test-server"),
    )
    task_queue = f"test-{uuid.uuid4().hex[:8]}"
    try:
        with ThreadPoolExecutor(max_workers=16) as executor:
            async with build_worker(env.client, task_queue, executor):
                yield env, task_queue
    finally:
        await env.shutdown()


async def test_runs_after_runs_on_one_target_pass_and_a_later_fault_is_caught(
    db_url: str, nightly_small: Scenario, tmp_path: Path
) -> None:
    database = tmp_path / "long-lived.db"
    with embedded.reference_target(tmp_path / "clean", db_path=database) as process:
        target = reference_target(process.base_url)
        for night, cohort in ((1, False), (2, True)):
            async with fresh_skip_server() as (env, task_queue):
                artifact = await run_nightly(
                    env,
                    task_queue,
                    nightly_small,
                    target,
                    f"night-{night}",
                    cohort=cohort,
                    shared=True,
                )
            assert artifact["failures"] == [], (night, artifact["failures"][:3])
            assert artifact["inconclusive"] == [], night
        # Night 2 (a cohort: its values claimed) deleted its tenants a and confirmed it, and
        # saw nothing where it should not be: their values are let go; its tenants b were
        # never deleted, and every one of their values stays claimed (recorder/claims.py).
        review = retire_claims(target.base_url)
        assert review.runs == 1 and review.retired > 0, review
        owners = {owner for _, _, owner, _ in claims_of_others(target.base_url, "nobody")}
        assert owners and all(owner.split(" ")[0].endswith("b") for owner in owners), owners
    # The same service, its database and both runs' tenants kept, now with a fault.
    fault = "nightly-resurrection"
    with embedded.reference_target(tmp_path / "faulty", [fault], db_path=database) as process:
        async with fresh_skip_server() as (env, task_queue):
            artifact = await run_nightly(
                env,
                task_queue,
                nightly_small,
                reference_target(process.base_url),
                "night-3",
                cohort=True,
                shared=True,
            )
    must_fail, must_pass = DETECTION[fault]
    found = cells(artifact)
    assert set(must_fail) <= found, sorted(found)
    assert not {cell for cell in must_pass if cell in found}, sorted(found)
