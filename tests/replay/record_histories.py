"""Record workflow histories into tests/histories/ for the replay tests.

    python -m tests.replay.record_histories

Run it when a workflow version is released, then keep the files: the point of the
recorded histories is that *old* runs keep replaying against *new* code. A change that
breaks replay of a released history belongs behind `workflow.patched`; new histories are
added beside the old ones (a new name prefix), never written over them.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from memlife import embedded
from memlife.lifecycle import pair_workflow_id
from memlife.scenario import load_scenario, materialize
from memlife.targets.config import reference_target
from memlife.temporal import build_worker, bundled_binary
from tests.workflows.helpers import run_input, run_suite

REPO = Path(__file__).resolve().parents[2]
HISTORIES = REPO / "tests" / "histories"


async def record(name: str, scenario_path: Path, faults: list[str],
                 generated_pairs: int | None = None) -> None:
    import os

    scratch = Path(tempfile.mkdtemp(prefix="memlife-histories-"))
    os.environ["MEMLIFE_DB_URL"] = f"sqlite:///{scratch / 'memlife.db'}"
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter,
        test_server_existing_path=bundled_binary("temporal-test-server"),
    )
    try:
        with embedded.reference_target(scratch, faults) as process, \
                ThreadPoolExecutor(max_workers=8) as executor:
            task_queue = f"record-{uuid.uuid4().hex[:6]}"
            async with build_worker(env.client, task_queue, executor):
                scenario = load_scenario(scenario_path)
                if generated_pairs is not None:
                    assert scenario.generate is not None
                    scenario = materialize(scenario.model_copy(update={
                        "generate": scenario.generate.model_copy(
                            update={"count": generated_pairs})}), seed=name)
                run = run_input(scenario, reference_target(process.base_url))
                await run_suite(env.client, task_queue, run)
            for kind, workflow_id in (
                ("suite", f"memlife/{scenario.name}/{run.run_id}"),
                ("pair", pair_workflow_id(scenario.name, run.run_id, 0)),
            ):
                history = await env.client.get_workflow_handle(workflow_id).fetch_history()
                path = HISTORIES / f"{name}-{kind}.json"
                path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
                print(f"wrote {path.relative_to(REPO)}")
    finally:
        await env.shutdown()


async def main() -> None:
    HISTORIES.mkdir(parents=True, exist_ok=True)
    for stale in HISTORIES.glob("*.json"):
        stale.unlink()
    seed = REPO / "scenarios" / "seed-six-case.yaml"
    await record("v1-seed-clean", seed, [])
    await record("v1-seed-leak", seed, ["cross-tenant-leak"])
    nightly = REPO / "scenarios" / "lifecycle-nightly.yaml"
    await record("v1-nightly-resurrection", nightly, ["nightly-resurrection"],
                 generated_pairs=1)


if __name__ == "__main__":
    asyncio.run(main())
