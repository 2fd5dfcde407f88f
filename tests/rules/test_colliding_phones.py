"""Colliding identities' phones: a generated pair with `collide` gets two phones that differ
in their last digit only, still unique within the run; a scenario mixing colliding and
apart pairs is refused."""

from __future__ import annotations

import pytest

from memlife.errors import InputError
from memlife.rules.pairs import materialize, pair_tenants
from memlife.rules.phones import synthetic_phone
from memlife.rules.scenario_file import parse_scenario

SCENARIO = {
    "name": "collide",
    "domains": {
        "pet": {
            "canary": "pet",
            "templates": {
                "es": {"statement": ["Mi mascota se llama {value}."], "question": ["¿Mi mascota?"]}
            },
        }
    },
    "generate": {"count": 60, "collide": True},
    "timeline": [{"step": "write"}, {"step": "probe"}],
}


@pytest.mark.parametrize("run_id", [f"run-{n}" for n in range(12)])  # odd and even offsets
def test_a_colliding_pair_differs_in_the_last_digit_only(run_id: str) -> None:
    scenario = materialize(parse_scenario(SCENARIO), "seed")
    phones = []
    for index, pair in enumerate(scenario.pairs):
        a, b = (t.phone for t in pair_tenants(run_id, index, pair, scenario))
        assert a[:-1] == b[:-1] and a[-1] != b[-1], (a, b)
        phones += [a, b]
    assert len(set(phones)) == len(phones)  # still unique within the run


def test_pairs_apart_keep_their_phones() -> None:
    apart = parse_scenario({**SCENARIO, "generate": {"count": 3}})
    scenario = materialize(apart, "seed")
    tenants = pair_tenants("run-1", 1, scenario.pairs[1], scenario)
    assert [t.phone for t in tenants] == [synthetic_phone("run-1", 2), synthetic_phone("run-1", 3)]


def test_a_scenario_mixing_colliding_and_apart_pairs_is_refused() -> None:
    pairs = materialize(parse_scenario(SCENARIO), "seed").pairs[:2]
    data = {
        **SCENARIO,
        "generate": None,
        "pairs": [pairs[0].model_dump(), pairs[1].model_dump() | {"collide_phones": False}],
    }
    with pytest.raises(InputError) as raised:
        parse_scenario(data)
    assert "pairs.1.collide_phones" in str(raised.value)
