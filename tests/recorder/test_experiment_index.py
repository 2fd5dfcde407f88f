"""An experiment's runs are found by the run_experiments index, not by reading every run's
meta; runs a recorder holds from before the index are indexed on first use, once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlmodel import select

from memlife import recorder


def add_run(run_id: str, experiment: str | None, *, indexed: bool) -> None:
    meta = {"experiment": experiment} if experiment else {}
    with recorder.session() as db:
        db.add(
            recorder.RunRow(
                id=run_id,
                scenario="s",
                scenario_sha256="0",
                target_name="t",
                target_base_url="http://127.0.0.1:9",
                clock="skip",
                meta_json=json.dumps(meta),
                started_at=datetime.now(UTC),
            )
        )
        if indexed:
            db.add(recorder.RunExperimentRow(run_id=run_id, experiment=experiment or ""))


def test_runs_are_found_by_the_index_and_older_runs_indexed_once(db_url: str) -> None:
    # Recorded by an older memlife: no index rows. One run's meta mentions the experiment's
    # name elsewhere than as its experiment (a scan by text would have found it).
    add_run("r1", "retrieval", indexed=False)
    add_run("r2", "retrieval-2", indexed=False)
    add_run("r3", None, indexed=False)
    add_run("r4", "retrieval", indexed=True)  # recorded since
    assert recorder.experiment_run_ids("retrieval") == ["r1", "r4"]
    with recorder.session() as db:
        index = dict(
            db.exec(
                select(recorder.RunExperimentRow.run_id, recorder.RunExperimentRow.experiment)
            ).all()
        )
    assert index == {"r1": "retrieval", "r2": "retrieval-2", "r3": "", "r4": "retrieval"}
    # Once indexed, an older run's meta is not what is read: the index answers.
    with recorder.session() as db:
        row = db.get(recorder.RunRow, "r1")
        assert row is not None
        row.meta_json = json.dumps({"experiment": "renamed"})
        db.add(row)
    assert recorder.experiment_run_ids("retrieval") == ["r1", "r4"]
    assert recorder.experiment_run_ids("nothing") == []
