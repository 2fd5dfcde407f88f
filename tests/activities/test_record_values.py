"""The run's values, written by materialize_pairs and indexed once per worker: a reply is
checked against every other pair's values, found exactly as written, never its own."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from memlife import recorder
from memlife.activities.record import materialize_pairs
from memlife.recorder.values import _foreign_cache, foreign_values
from memlife.rules.pairs import materialize, pair_values
from memlife.rules.scenario import Pair
from memlife.rules.scenario_file import load_scenario
from memlife.rules.scoring import normalize
from tests.reliability.helpers import NIGHTLY, recorded_nightly_values


def test_values_are_written_in_chunks_and_found_for_other_pairs_only(db_url: str) -> None:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": 3})}
    )
    run_id = "values-run"
    assert materialize_pairs(run_id, scenario, "values-seed") == 3
    pairs = materialize(scenario, "values-seed").pairs
    with recorder.engine_for(db_url).connect() as db:
        written = db.execute(
            text("SELECT count(*) FROM run_values WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
    expected = sum(
        len(fact.all_texts())
        for pair in pairs
        for role in ("a", "b")
        for fact in pair.tenant(role).facts.values()
    )
    assert written == expected

    mine = pairs[0].a.facts["employer"].value
    theirs = pairs[2].b.facts["pet"].value
    reply = normalize(f"Trabajas en {mine}; tu mascota es {theirs}.")
    found = foreign_values(run_id, 0).found_in(reply)
    assert [(f.text, f.origin, f.domain, f.owner) for f in found] == [
        (theirs, "foreign", "pet", f"{pairs[2].b.alias} (pair 2)")
    ]
    assert [f.text for f in foreign_values(run_id, 2).found_in(reply)] == [mine]
    assert (recorder.database_url(), run_id) in _foreign_cache  # indexed once


def test_pairs_drawn_a_chunk_at_a_time_are_the_pairs_drawn_at_once(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlife.activities import record

    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": 5})}
    )
    monkeypatch.setattr(record, "_PAIRS_PER_CHUNK", 2)  # chunks of 2, 2 and 1
    assert materialize_pairs("chunked-run", scenario, "chunk-seed") == 5

    at_once = materialize(scenario, "chunk-seed").pairs
    with recorder.engine_for(db_url).connect() as db:
        pairs = db.execute(
            text(
                "SELECT pair_index, pair_json FROM run_pairs WHERE run_id = "
                "'chunked-run' ORDER BY pair_index"
            )
        ).all()
        values = db.execute(
            text(
                "SELECT pair_index, alias, domain, text FROM run_values "
                "WHERE run_id = 'chunked-run'"
            )
        ).all()
    assert [(index, Pair.model_validate_json(json)) for index, json in pairs] == list(
        enumerate(at_once)
    )
    assert sorted(map(tuple, values)) == sorted(
        (v.pair, v.alias, v.domain, v.text) for v in pair_values(at_once)
    )
    assert len({v.text for v in pair_values(at_once)}) == len(values)  # all drawn distinct


def test_a_finished_run_forgets_its_values_before_it_is_summarized(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary is the worker's last peak of a large run: the index (48 MB at 10,000
    pairs) must be gone before it, not after."""
    from memlife.activities.record import finish_run

    run_id = recorded_nightly_values(2, "finish-seed")
    foreign_values(run_id, 0)  # a probe's judging indexed the run's values
    key = (recorder.database_url(), run_id)
    assert key in _foreign_cache

    held_at_summary: list[bool] = []
    run_builder = recorder.run_builder

    def summarizing(run_id: str, **options: object) -> object:
        held_at_summary.append(key in _foreign_cache)
        return run_builder(run_id, **options)

    monkeypatch.setattr(recorder, "run_builder", summarizing)
    summary = finish_run(run_id, [])
    assert held_at_summary == [False]
    assert key not in _foreign_cache
    assert summary.run_id == run_id and summary.cases == 0


def test_another_pairs_value_reworded_is_found_and_a_twins_shared_value_is_not(db_url: str) -> None:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": 2, "twins": 1})}
    )
    run_id = "twins-run"
    assert materialize_pairs(run_id, scenario, "twins-seed") == 3
    pairs = materialize(scenario, "twins-seed").pairs
    mine, theirs = pairs[0].a.facts["friend"].value, pairs[1].b.facts["friend"].value
    given, *family = theirs.split()
    reply = normalize(f"Tu amiga es {mine}; la de otro, {' '.join(family)}, {given}.")
    found = foreign_values(run_id, 0).found_in(reply)  # the twin's (pair 2) is its own too
    assert [(f.text, f.owner) for f in found] == [(theirs, f"{pairs[1].b.alias} (pair 1)")]
    assert [f.text for f in foreign_values(run_id, 1).found_in(reply)] == [mine]
