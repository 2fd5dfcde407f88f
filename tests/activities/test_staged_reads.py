"""Store reads staged in the recorder: an inspection hands the workflow its reads without
their records (history keeps only counts), and the step's recording judges the whole reads,
failing closed when they are gone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.testing import ActivityEnvironment

from memlife import recorder
from memlife.activities.record import record_step, whole_steps
from memlife.activities.stores import inspect_stores
from memlife.contracts import InspectRequest, StepRecord
from memlife.rules.evidence import StoreRead, StoreRecordView
from tests.activities.test_sql_probe import SCOPE, _target, fill_store

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _request(stage_key: str | None) -> InspectRequest:
    return InspectRequest(
        target=_target(SCOPE),
        identities=["u_ana"],
        needles=["Olmo"],
        watch=["Olmo", "Trufa"],
        scenario_now="2026-12-01T00:00:00Z",
        run_id="r1",
        stage_key=stage_key,
    )


def _shape(reads: list[StoreRead]) -> list[tuple[str, str, int, list[StoreRecordView]]]:
    return [(r.mode, r.key, r.total, r.records) for r in reads]


async def test_the_workflow_gets_counts_and_the_recorder_the_whole_reads(store_url: str) -> None:
    whole = await ActivityEnvironment().run(inspect_stores, _request(None))
    slim = await ActivityEnvironment().run(inspect_stores, _request("r1/0/5/s5-a"))
    assert any(read.records for read in whole)
    assert [read.records for read in slim] == [[] for _ in whole]
    assert [(r.mode, r.key, r.total, r.status) for r in slim] == [
        (r.mode, r.key, r.total, r.status) for r in whole
    ]
    assert _shape(recorder.staged_reads(["r1/0/5/s5-a"])["r1/0/5/s5-a"]) == _shape(whole)

    recorder.drop_staged_reads("r1")  # once the run is summarized
    assert recorder.staged_reads(["r1/0/5/s5-a"]) == {}


def _step(reads: dict[str, list[StoreRead]], staged: dict[str, str]) -> StepRecord:
    return StepRecord(
        run_id="r1",
        pair_index=0,
        step_index=5,
        kind="inspect",
        stage="x",
        scenario_started=T0,
        scenario_finished=T0,
        wall_started=T0,
        wall_finished=T0,
        reads=reads,
        staged_reads=staged,
    )


def test_a_step_judges_the_staged_reads_and_unread_is_never_absent(db_url: str) -> None:
    staged = [
        StoreRead(
            store="memories",
            mode="scope",
            key="u_ana",
            total=1,
            records=[StoreRecordView(id="m1", tenant_id="u_ana", matches=[0])],
        )
    ]
    recorder.stage_reads("r1/0/5/s5-a", "r1", staged)
    slim = [staged[0].model_copy(update={"records": []})]
    [found, gone] = whole_steps(
        [
            _step({"s5-a": slim}, {"s5-a": "r1/0/5/s5-a"}),
            _step({"s5-b": slim}, {"s5-b": "r1/0/5/s5-b"}),
        ]
    )
    assert found.reads == {"s5-a": staged}
    [read] = gone.reads["s5-b"]
    assert read.status == "error" and "'r1/0/5/s5-b'" in (read.error or "")
    assert read.total == 1 and read.records == []


def test_a_step_without_staged_reads_is_recorded_as_it_came(db_url: str) -> None:
    step = _step({}, {})
    assert whole_steps([step]) == [step]
    assert record_step(step).verdicts == []


@pytest.fixture
def store_url(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store to probe (the probe reads it with SQL), in the recorder's own database."""
    return fill_store(db_url, monkeypatch)


def _reads(key: str, records: int = 1) -> list[StoreRead]:
    return [
        StoreRead(
            store="memories",
            mode="scope",
            key=key,
            total=records,
            records=[
                StoreRecordView(id=f"m{i}", tenant_id=key, matches=[0]) for i in range(records)
            ],
        )
    ]


def _delete_from_recorder(key: str) -> None:
    from sqlalchemy import delete

    with recorder.engine_for().begin() as db:
        db.execute(
            delete(recorder.StagedReadsRow.__table__).where(  # type: ignore[attr-defined]
                recorder.StagedReadsRow.__table__.c.id == key
            )
        )  # type: ignore[attr-defined]


def test_reads_staged_here_are_taken_from_memory_once_and_the_recorder_keeps_them(
    db_url: str,
) -> None:
    recorder.stage_reads("r1/0/5/s5-a", "r1", _reads("u_ana"))
    recorder.stage_reads("r1/0/5/s5-b", "r1", _reads("u_bo"))
    # A retried recording finds them in the recorder after the first took them here.
    first = recorder.staged_reads(["r1/0/5/s5-a"])
    assert recorder.staged_reads(["r1/0/5/s5-a"]) == first == {"r1/0/5/s5-a": _reads("u_ana")}
    # Gone from the recorder, still here: taken from memory, not read back.
    _delete_from_recorder("r1/0/5/s5-b")
    assert recorder.staged_reads(["r1/0/5/s5-b"]) == {"r1/0/5/s5-b": _reads("u_bo")}
    assert recorder.staged_reads(["r1/0/5/s5-b"]) == {}


def test_memory_keeps_a_bounded_share_and_the_recorder_the_rest(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlife.recorder import staging

    monkeypatch.setattr(
        staging, "KEPT_BYTES", len(staging._READS.dump_json(_reads("u_0", records=20))) * 2
    )
    for i in range(4):
        recorder.stage_reads(f"r1/{i}/5/s5-a", "r1", _reads(f"u_{i}", records=20))
    for i in range(4):
        _delete_from_recorder(f"r1/{i}/5/s5-a")
    # The two newest fit under the bound; the oldest were only in the recorder.
    assert recorder.staged_reads([f"r1/{i}/5/s5-a" for i in range(4)]) == {
        f"r1/{i}/5/s5-a": _reads(f"u_{i}", records=20) for i in (2, 3)
    }


def test_a_finished_run_drops_its_reads_from_memory_too(db_url: str) -> None:
    recorder.stage_reads("r1/0/5/s5-a", "r1", _reads("u_ana"))
    recorder.stage_reads("r2/0/5/s5-a", "r2", _reads("u_ana"))
    recorder.drop_staged_reads("r1")
    _delete_from_recorder("r2/0/5/s5-a")
    assert recorder.staged_reads(["r1/0/5/s5-a", "r2/0/5/s5-a"]) == {"r2/0/5/s5-a": _reads("u_ana")}


async def test_a_batch_of_inspections_stages_every_items_reads_in_one_write(store_url: str) -> None:
    from sqlalchemy import event

    from memlife.activities.batch import target_batch
    from memlife.contracts import TargetBatch

    keys = [f"r1/{pair}/5/s5-a" for pair in range(3)]
    requests = [_request(key) for key in keys]
    whole = await ActivityEnvironment().run(inspect_stores, _request(None))
    commits: list[int] = []

    def committed(_connection: object) -> None:
        commits.append(1)

    engine = recorder.engine_for()
    event.listen(engine, "commit", committed)
    try:
        outcomes = await ActivityEnvironment().run(
            target_batch,
            TargetBatch(
                kind="inspect",
                target=requests[0].target,
                items=[r.model_dump(mode="json", exclude={"target"}) for r in requests],
            ),
        )
    finally:
        event.remove(engine, "commit", committed)
    assert len(commits) == 1  # the three inspections' reads, in one transaction
    # The workflow gets counts; the recorder (and this worker's memory) the whole reads.
    for outcome in outcomes:
        assert outcome.ok and [read["records"] for read in outcome.value] == [[] for _ in whole]
    staged = recorder.staged_reads(keys)
    assert sorted(staged) == sorted(keys)
    assert all(_shape(reads) == _shape(whole) for reads in staged.values())
