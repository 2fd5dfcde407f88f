"""Store reads staged in the recorder: an inspection hands the workflow its reads without
their records (history keeps only counts), and the step's recording judges the whole reads,
failing closed when they are gone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from memlife.activities.record import record_step, whole_steps
from memlife.activities.stores import inspect_stores
from temporalio.testing import ActivityEnvironment

from memlife import recorder
from memlife.contracts import InspectRequest, StepRecord
from memlife.rules.evidence import StoreRead, StoreRecordView
from tests.activities.test_sql_probe import SCOPE, _target, fill_store

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _request(stage_key: str | None) -> InspectRequest:
    return InspectRequest(
        target=_target(SCOPE), identities=["u_ana"], needles=["Olmo"],
        watch=["Olmo", "Trufa"], scenario_now="2026-12-01T00:00:00Z", run_id="r1",
        stage_key=stage_key)


def _shape(reads: list[StoreRead]) -> list[tuple[str, str, int, list[StoreRecordView]]]:
    return [(r.mode, r.key, r.total, r.records) for r in reads]


async def test_the_workflow_gets_counts_and_the_recorder_the_whole_reads(
        store_url: str) -> None:
    whole = await ActivityEnvironment().run(inspect_stores, _request(None))
    slim = await ActivityEnvironment().run(inspect_stores, _request("r1/0/5/s5-a"))
    assert any(read.records for read in whole)
    assert [read.records for read in slim] == [[] for _ in whole]
    assert [(r.mode, r.key, r.total, r.status) for r in slim] == [
        (r.mode, r.key, r.total, r.status) for r in whole]
    assert _shape(recorder.staged_reads(["r1/0/5/s5-a"])["r1/0/5/s5-a"]) == _shape(whole)

    recorder.drop_staged_reads("r1")  # once the run is summarized
    assert recorder.staged_reads(["r1/0/5/s5-a"]) == {}


def _step(reads: dict[str, list[StoreRead]], staged: dict[str, str]) -> StepRecord:
    return StepRecord(run_id="r1", pair_index=0, step_index=5, kind="inspect", stage="x",
                      scenario_started=T0, scenario_finished=T0, wall_started=T0,
                      wall_finished=T0, reads=reads, staged_reads=staged)


def test_a_step_judges_the_staged_reads_and_unread_is_never_absent(db_url: str) -> None:
    staged = [StoreRead(store="memories", mode="scope", key="u_ana", total=1,
                        records=[StoreRecordView(id="m1", tenant_id="u_ana", matches=[0])])]
    recorder.stage_reads("r1/0/5/s5-a", "r1", staged)
    slim = [staged[0].model_copy(update={"records": []})]
    [found, gone] = whole_steps([
        _step({"s5-a": slim}, {"s5-a": "r1/0/5/s5-a"}),
        _step({"s5-b": slim}, {"s5-b": "r1/0/5/s5-b"})])
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
