"""Which claims of a finished run retire (rules/claims.py), and listed values made each
run's own against a long-lived target (rules/pairs.py: vary_listed). Pure, milliseconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlife.rules.claims import TenantTrail, retirement
from memlife.rules.pairs import materialize, pair_values, vary_listed
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.scoring import normalize

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
CLEAN = {
    "I3": {"checked": 6, "failed": 0, "inconclusive": 0},
    "recall": {"checked": 6, "failed": 2, "inconclusive": 1},  # no containment check
    "L": {"checked": 6, "failed": 1, "inconclusive": 0},
}
ANA, BRUNO = "ana", "bruno"
VALUES = [
    (ANA, "Azul"),
    (ANA, "penicilina"),
    (BRUNO, "verde"),
    ("ana (space club)", "Club Náutico"),
]
CLAIMED = [normalize(text) for _, text in VALUES]


def _deleted(alias: str, step: int = 5, *registered: int) -> TenantTrail:
    return TenantTrail(alias, step, (-1, *registered))


def test_a_deleted_tenants_values_and_phone_retire_and_nothing_else() -> None:
    decision = retirement([_deleted(ANA), TenantTrail(BRUNO, None, (-1,))], VALUES, CLAIMED, CLEAN)
    assert decision.values == {"azul", "penicilina"}
    assert decision.phones == {ANA}  # bruno was never deleted: his values may be there
    assert decision.unused == frozenset()


def test_a_space_value_stays_claimed_when_every_member_is_gone() -> None:
    decision = retirement([_deleted(ANA), _deleted(BRUNO)], VALUES, CLAIMED, CLEAN)
    assert "club nautico" not in decision.values
    assert decision.phones == {ANA, BRUNO}


def test_a_value_two_tenants_state_retires_only_when_both_are_gone() -> None:
    shared = [*VALUES, (BRUNO, "azul")]  # a control twin states its original's values
    assert (
        "azul"
        not in retirement([_deleted(ANA), TenantTrail(BRUNO, None)], shared, CLAIMED, CLEAN).values
    )
    assert "azul" in retirement([_deleted(ANA), _deleted(BRUNO)], shared, CLAIMED, CLEAN).values


@pytest.mark.parametrize("outcome", ["failed", "inconclusive"])
@pytest.mark.parametrize("invariant", ["I1", "I2", "I3", "I4", "I4-physical"])
def test_anything_seen_where_it_should_not_be_keeps_every_claim(
    invariant: str, outcome: str
) -> None:
    tallies = {**CLEAN, invariant: {"checked": 3, "failed": 0, "inconclusive": 0} | {outcome: 1}}
    decision = retirement([_deleted(ANA), _deleted(BRUNO)], VALUES, [*CLAIMED, "lila"], tallies)
    assert decision.values == {"lila"} == decision.unused  # never stated: it never got there
    assert decision.phones == frozenset()


def test_a_tenant_registered_again_after_its_deletion_keeps_its_phone() -> None:
    decision = retirement([_deleted(ANA, 5, 7), _deleted(BRUNO, 5, 3)], VALUES, CLAIMED, CLEAN)
    assert decision.phones == {BRUNO}  # ana's phone is a live user's again
    assert {"azul", "penicilina", "verde"} <= decision.values  # her values were erased


def test_one_alias_twice_is_gone_only_if_both_are() -> None:
    decision = retirement([_deleted(ANA), TenantTrail(ANA, None)], VALUES, CLAIMED, CLEAN)
    assert decision.values == frozenset() and ANA not in decision.phones


def _six_case() -> Scenario:
    return load_scenario(SCENARIOS / "seed-six-case.yaml")


def _texts(scenario: Scenario) -> list[str]:
    return [v.text for v in pair_values(scenario.pairs)]


def test_listed_values_vary_with_the_seed_and_come_back_with_it() -> None:
    written = _six_case()
    one, again, other = (vary_listed(written, seed) for seed in ("s1", "s1", "s2"))
    assert _texts(one) == _texts(again)
    assert set(map(normalize, _texts(one))).isdisjoint(map(normalize, _texts(other)))
    for as_written, varied in zip(_texts(written), _texts(one), strict=True):
        assert varied.startswith(f"{as_written} ") and varied != as_written
    normalized = [normalize(text) for text in _texts(one)]
    assert not any(a != b and a in b for a in normalized for b in normalized)
    # A fresh target keeps them as written; a generated scenario is materialize's.
    assert materialize(written, "s1") == written
    nightly = load_scenario(SCENARIOS / "lifecycle-nightly.yaml")
    assert vary_listed(nightly, "s1") is nightly


def test_listed_values_avoid_what_other_runs_claimed() -> None:
    written = _six_case()
    first = _texts(vary_listed(written, "same"))
    second = _texts(vary_listed(written, "same", avoid=first[:1]))
    assert normalize(first[0]) not in map(normalize, second)


def test_one_text_gets_one_marked_text_and_renderings_share_its_marker() -> None:
    written = _six_case()
    ana = written.pairs[0].a
    color = ana.facts["color"].model_copy(
        update={"any_of": ["celeste"], "updates": ["verde"]}
    )  # bruno's value
    scenario = written.model_copy(
        update={
            "pairs": [
                written.pairs[0].model_copy(
                    update={"a": ana.model_copy(update={"facts": {**ana.facts, "color": color}})}
                )
            ]
        }
    )
    varied = vary_listed(scenario, "s")
    fact, bruno = varied.pairs[0].a.facts["color"], varied.pairs[0].b.facts["color"]
    marker = fact.value.removeprefix("azul ")
    assert fact.any_of == [f"celeste {marker}"]
    assert fact.updates == [bruno.value]  # the same text, the same marked text
