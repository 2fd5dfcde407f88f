"""Runs against one long-lived target never share a phone or a value (recorder/claims.py),
and a value of another run seen in an answer is attributed to that run and tenant."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from memlife import recorder
from memlife.contracts import FRESH_TARGET_KIND
from memlife.recorder.claims import claim, materialize_unclaimed
from memlife.recorder.values import foreign_values
from memlife.rules.pairs import materialize, pair_values
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.scoring import normalize

NIGHTLY = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly.yaml"
SERVICE = "http://127.0.0.1:8080"


def _nightly(pairs: int) -> Scenario:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    return scenario.model_copy(update={
        "generate": scenario.generate.model_copy(update={"count": pairs})})


def _texts(scenario: Scenario) -> set[str]:
    return {normalize(v.text) for v in pair_values(scenario.pairs)}


def test_a_second_run_with_the_same_seed_gets_other_values(recorder_url: str) -> None:
    scenario = _nightly(4)
    first = materialize_unclaimed(scenario, "one-seed", "run-1", SERVICE)
    assert first == materialize(scenario, "one-seed")  # nothing claimed yet: the seed's
    second = materialize_unclaimed(scenario, "one-seed", "run-2", SERVICE + "/")
    ours, theirs = _texts(first), _texts(second)
    assert ours.isdisjoint(theirs)
    assert not any(a in b or b in a for a in ours for b in theirs)  # nor inside one another
    # A retried activity of the first run claims and gets the same values again.
    assert materialize_unclaimed(scenario, "one-seed", "run-1", SERVICE) == first
    # Another service, and a fresh target of the run's own, are not constrained.
    assert materialize_unclaimed(scenario, "one-seed", "run-3",
                                 "http://127.0.0.1:9999") == first
    assert materialize_unclaimed(scenario, "one-seed", "run-4", None) == first


def test_a_value_claimed_at_the_same_moment_is_redrawn(recorder_url: str) -> None:
    scenario = _nightly(2)
    expected = materialize(scenario, "race")
    # Another run claimed one of the values this seed draws, a moment before this run did.
    _, _, alias, domain, _, text = next(pair_values(expected.pairs))
    assert claim(SERVICE, "other-run", "value", [(text, "someone (pair 0)", domain)]) == set()
    result = materialize_unclaimed(scenario, "race", "this-run", SERVICE)
    assert normalize(text) not in _texts(result)


def test_a_phone_is_one_tenants_on_one_target(recorder_url: str) -> None:
    phone = "+12015550101"
    assert claim(SERVICE, "run-1", "phone", [(phone, "t000a", "")]) == set()
    assert claim(SERVICE, "run-1", "phone", [(phone, "t000a", "")]) == set()  # a retry
    assert claim(SERVICE, "run-2", "phone", [(phone, "t000a", "")]) == {phone}
    assert claim(SERVICE, "run-1", "phone", [(phone, "t001b", "")]) == {phone}
    assert claim("http://127.0.0.1:9999", "run-2", "phone", [(phone, "t000a", "")]) == set()


def _record_run(run_id: str, identity: dict[str, str]) -> None:
    meta = {"target_identity": identity, "target_base_url": SERVICE}
    recorder.merge_all([recorder.RunRow(
        id=run_id, scenario="lifecycle-nightly", scenario_sha256="0" * 64,
        target_name="reference", target_base_url=SERVICE, clock="skip",
        meta_json=json.dumps(meta), started_at=datetime.now(UTC))])


def test_another_runs_value_in_an_answer_is_attributed_to_it(recorder_url: str) -> None:
    scenario = _nightly(2)
    _record_run("run-1", {"kind": "target file"})
    first = materialize_unclaimed(scenario, "s", "run-1", SERVICE)
    _record_run("run-2", {"kind": "target file"})
    materialize_unclaimed(scenario, "s", "run-2", SERVICE)
    index, _, alias, domain, _, text = next(pair_values(first.pairs))
    answer = normalize(f"Según lo que me contaste: {text}.")
    found = foreign_values("run-2", 0).found_in(answer)
    assert [(f.text, f.owner, f.domain) for f in found] == [
        (normalize(text), f"{alias} (pair {index}) of run run-1", domain)]
    # A run against a fresh target of its own has no other runs to look at.
    _record_run("run-3", {"kind": FRESH_TARGET_KIND})
    assert foreign_values("run-3", 0).found_in(answer) == []
