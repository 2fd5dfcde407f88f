"""Physical residue through a whole lifecycle: a files probe scans the reference target's
own data directory. Its deletion purges memory and graph rows logically, but SQLite keeps
the bytes (free pages, WAL frames, tombstoned checkpoints): with no grace that is an
I4-physical failure naming the files, with a grace longer than the run it is allowed; the
logical I4 of every store is judged apart and passes either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.recorder.builder import build_artifact
from memlife.rules.target import Store
from memlife.stack import embedded
from tests.reliability.helpers import small_nightly
from tests.workflows.helpers import run_input, run_suite

DATA_ENV = "MEMLIFE_TEST_REFERENCE_DATA_DIR"


@pytest.mark.parametrize(("grace", "residue"), [("0s", True), ("365d", False)])
async def test_deleted_bytes_on_disk_are_judged_by_the_grace(
    tmp_path: Path,
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    monkeypatch: pytest.MonkeyPatch,
    grace: str,
    residue: bool,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv(DATA_ENV, str(data))
    scenario = small_nightly("files-probe")
    with embedded.reference_target(tmp_path, db_path=data / "reference.db") as process:
        target = reference_target(process.base_url)
        disk = Store.model_validate(
            {
                "name": "disk",
                "role": "the target's data directory",
                "probe": {"kind": "files", "path_env": DATA_ENV, "grace": grace},
            }
        )
        target = target.model_copy(update={"stores": [*target.stores, disk]})
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    artifact = build_artifact(loaded).model_dump(mode="json")

    assert artifact["inconclusive"] == []
    physical = artifact["summary"]["by_invariant"]["I4-physical"]
    assert physical["checked"] > 0
    assert artifact["summary"]["by_invariant"]["I4"]["failed"] == 0  # logically clean
    failures = [f for f in artifact["failures"] if f["invariant"] == "I4-physical"]
    if residue:
        assert physical["failed"] > 0 and failures
        assert {f["store"] for f in failures} == {"disk"}
        assert all("reference.db" in f["evidence"]["detail"] for f in failures)
        assert all("past the 0s grace" in f["evidence"]["detail"] for f in failures)
        deleted_values = {v.text for v in loaded["values"]}
        assert {f["evidence"]["value"] for f in failures} <= deleted_values
        assert not artifact["summary"]["passed"]
    else:
        assert physical["failed"] == 0 and not failures
        assert artifact["summary"]["passed"]
