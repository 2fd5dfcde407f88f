"""Runs against one long-lived target never share a phone or a value (recorder/claims.py),
a value of another run seen in an answer is attributed to that run and tenant, and a
finished run's claims are let go once nothing of its tenants can be on the target."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import select

from memlife import recorder
from memlife.contracts import FRESH_TARGET_KIND
from memlife.recorder.claims import (
    claim,
    claim_count,
    claims_generation,
    claims_of_others,
    materialize_unclaimed,
    retire_claims,
)
from memlife.recorder.values import foreign_values
from memlife.rules.pairs import materialize, pair_values, vary_listed
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.scoring import normalize

NIGHTLY = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly.yaml"
SERVICE = "http://127.0.0.1:8080"


def _nightly(pairs: int) -> Scenario:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    return scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": pairs})}
    )


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
    assert materialize_unclaimed(scenario, "one-seed", "run-3", "http://127.0.0.1:9999") == first
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
    recorder.merge_all(
        [
            recorder.RunRow(
                id=run_id,
                scenario="lifecycle-nightly",
                scenario_sha256="0" * 64,
                target_name="reference",
                target_base_url=SERVICE,
                clock="skip",
                meta_json=json.dumps(meta),
                started_at=datetime.now(UTC),
            )
        ]
    )


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
        (normalize(text), f"{alias} (pair {index}) of run run-1", domain)
    ]
    # A run against a fresh target of its own has no other runs to look at.
    _record_run("run-3", {"kind": FRESH_TARGET_KIND})
    assert foreign_values("run-3", 0).found_in(answer) == []


SIX_CASE = NIGHTLY.parent / "seed-six-case.yaml"


def _finish(
    run_id: str,
    scenario: Scenario,
    deleted: set[str],
    *,
    by_invariant: dict[str, dict[str, int]] | None = None,
) -> None:
    """Record `run_id` as the lifecycle does (run, tenants, values, the deletion-status
    verdicts of the tenants in `deleted`) and finished, as finish_run leaves it."""
    _record_run(run_id, {"kind": "target file"})
    rows: list[Any] = []
    for index, pair in enumerate(scenario.pairs):
        for role in ("a", "b"):
            alias = pair.tenant(role).alias
            rows.append(
                recorder.TenantRow(
                    id=f"{run_id}/{index}/{role}",
                    run_id=run_id,
                    pair_index=index,
                    role=role,
                    alias=alias,
                    phone=f"+1201555{index:03d}{role == 'b':d}",
                    language="es",
                    user_id=f"u-{alias}",
                )
            )
            if alias in deleted:
                rows.append(
                    recorder.VerdictRow(
                        id=f"{run_id}/{index}/9/s9-{role}-deletion",
                        run_id=run_id,
                        pair_index=index,
                        step_index=9,
                        stage="deletion-confirmed",
                        case_id=f"s9-{role}-deletion",
                        role=role,
                        tenant_alias=alias,
                        domain="",
                        store="deletion-status",
                        outcome="pass",
                        passed=True,
                        checks_json="[]",
                        findings_json="[]",
                    )
                )
    rows += [
        recorder.RunValueRow(
            id=f"{run_id}/{v.pair}/{v.role}/{v.domain}/{v.position}",
            run_id=run_id,
            pair_index=v.pair,
            role=v.role,
            alias=v.alias,
            domain=v.domain,
            text=v.text,
        )
        for v in pair_values(scenario.pairs)
    ]
    recorder.merge_all(rows)
    with recorder.session() as db:
        run = db.get(recorder.RunRow, run_id)
        assert run is not None
        run.finished_at = datetime.now(UTC)
        run.status = "finished"
        run.summary_json = json.dumps(
            {"by_invariant": by_invariant or {"I3": {"checked": 4, "failed": 0, "inconclusive": 0}}}
        )
        db.add(run)


def _aliases(scenario: Scenario) -> set[str]:
    return {pair.tenant(role).alias for pair in scenario.pairs for role in ("a", "b")}


def test_runs_that_delete_their_tenants_leave_the_live_claims_flat(recorder_url: str) -> None:
    scenario = _nightly(2)
    live = []
    for night in range(4):
        run_id = f"night-{night}"
        materialized = materialize_unclaimed(scenario, "fixed-seed", run_id, SERVICE)
        live.append(claim_count(SERVICE))
        _finish(run_id, materialized, _aliases(materialized))
    assert live == [live[0]] * 4 and live[0] == len(_texts(materialized))
    # Every night's values were let go as the next one was prepared: the same seed, on a
    # target where nothing of the earlier nights can still be, draws the same values.
    assert materialize_unclaimed(scenario, "fixed-seed", "night-4", SERVICE) == materialized
    with recorder.session() as db:
        retired = {
            (row.run_id, row.reason) for row in db.exec(select(recorder.RetiredClaimRow)).all()
        }
    assert retired == {(f"night-{n}", "its tenants' deletion confirmed") for n in range(4)}


def test_what_may_still_be_on_the_target_stays_claimed(recorder_url: str) -> None:
    scenario = _nightly(2)
    first = materialize_unclaimed(scenario, "seed", "kept-1", SERVICE)
    tenant_a = {pair.a.alias for pair in first.pairs}
    _finish("kept-1", first, tenant_a)  # as the nightly: only tenant a is deleted
    running = materialize_unclaimed(scenario, "other", "kept-2", SERVICE)  # not finished
    leaky = materialize_unclaimed(scenario, "third", "kept-3", SERVICE)
    _finish(
        "kept-3",
        leaky,
        _aliases(leaky),
        by_invariant={"I4": {"checked": 9, "failed": 1, "inconclusive": 0}},
    )
    result = retire_claims(SERVICE)
    assert result.runs == 1  # kept-1 was reviewed as kept-2 was prepared
    others = {text for text, *_ in claims_of_others(SERVICE, "nobody")}
    b_values = {normalize(v.text) for v in pair_values(first.pairs) if v.role == "b"}
    a_values = {normalize(v.text) for v in pair_values(first.pairs) if v.role == "a"}
    assert b_values <= others and others.isdisjoint(a_values)
    assert _texts(running) <= others and _texts(leaky) <= others
    assert retire_claims(SERVICE) == (0, 0, 0, claim_count(SERVICE))  # reviewed once


def test_a_listed_scenario_gets_its_seeds_own_values_against_a_shared_target(
    recorder_url: str,
) -> None:
    written = load_scenario(SIX_CASE)
    fresh = materialize_unclaimed(written, "s", "listed-0", None)
    assert fresh == written  # a fresh target of the run's own: as written
    first = materialize_unclaimed(written, "s", "listed-1", SERVICE)
    assert first == vary_listed(written, "s") and _texts(first).isdisjoint(_texts(written))
    # Another run with the same seed while the first one's tenants may be there: other ones.
    second = materialize_unclaimed(written, "s", "listed-2", SERVICE)
    assert _texts(second).isdisjoint(_texts(first))
    assert materialize_unclaimed(written, "s", "listed-1", SERVICE) == first  # a retry


def test_a_worker_sees_claims_change_even_when_their_number_does_not(recorder_url: str) -> None:
    scenario = _nightly(1)
    before = claims_generation(SERVICE)
    first = materialize_unclaimed(scenario, "g", "gen-1", SERVICE)
    count = claim_count(SERVICE)
    _finish("gen-1", first, _aliases(first))
    materialize_unclaimed(scenario, "h", "gen-2", SERVICE)  # retires gen-1's, claims its own
    assert claim_count(SERVICE) == count
    assert claims_generation(SERVICE) >= before + 3
