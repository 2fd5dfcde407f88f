"""Canary values, generated pairs, and the timeline checks validation runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from memlife.errors import InputError
from memlife.rules.canaries import KINDS, SURNAMES, SURNAMES_EN, CanaryPool
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario, parse_scenario
from memlife.rules.scoring import normalize

REPO = Path(__file__).resolve().parents[2]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"


def test_canaries_are_distinct_never_nested_and_reproducible() -> None:
    pool = CanaryPool("seed-1")
    values = [pool.draw(kind) for kind in KINDS for _ in range(300)]
    normalized = [normalize(v) for v in values]
    assert len(set(normalized)) == len(normalized)
    for i, first in enumerate(normalized[:200]):
        assert not any(first in other for other in normalized[i + 1 :])
    again = CanaryPool("seed-1")
    assert [again.draw(kind) for kind in KINDS for _ in range(300)] == values
    assert CanaryPool("seed-2").draw("employer") != CanaryPool("seed-1").draw("employer")


def test_generated_pairs_get_canaries_and_update_values() -> None:
    scenario = load_scenario(NIGHTLY)
    concrete = materialize(scenario, "run-42")
    assert len(concrete.pairs) == scenario.generate.count and concrete.generate is None
    first = concrete.pairs[0]
    assert set(first.a.facts) == set(scenario.domains)
    assert len(first.a.facts["employer"].updates) == 1  # the timeline updates it once
    assert first.a.facts["address"].updates == []
    assert materialize(scenario, "run-42") == concrete
    assert materialize(scenario, "run-43").pairs[0] != first


def test_english_tenants_get_english_values_and_spanish_ones_spanish() -> None:
    english = load_scenario(REPO / "scenarios" / "lifecycle-nightly-en.yaml")
    tenant = materialize(english, "run-42").pairs[0].a
    words = {
        word for fact in tenant.facts.values() for text in fact.all_texts() for word in text.split()
    }
    assert words & set(SURNAMES_EN) and not words & set(SURNAMES)
    assert tenant.facts["school"].value.split()[0] == "Saint"
    spanish = materialize(load_scenario(NIGHTLY), "run-42").pairs[0].a
    assert {
        word
        for fact in spanish.facts.values()
        for text in fact.all_texts()
        for word in text.split()
    } & set(SURNAMES)
    # English values follow the same rules: distinct, never nested, reproducible.
    pool = CanaryPool("seed-en")
    values = [normalize(pool.draw(kind, "en")) for kind in KINDS for _ in range(300)]
    assert len(set(values)) == len(values)
    assert not any(a in b for i, a in enumerate(values[:200]) for b in values[i + 1 :])


def nightly_data() -> dict[str, Any]:
    return yaml.safe_load(NIGHTLY.read_text())


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_scenario(data, "n.yaml")
    return [str(p) for p in caught.value.problems]


def test_probe_after_deletion_needs_a_register_step() -> None:
    data = nightly_data()
    data["timeline"] = [s for s in data["timeline"] if s.get("step") != "register"]
    deleted_at = next(
        i
        for i, step in enumerate(data["timeline"])
        if step.get("step") == "delete" and "domains" not in step
    )
    assert any(
        p.startswith("n.yaml: timeline.")
        and f"was deleted at timeline.{deleted_at}; add a `register` step" in p
        for p in problems(data)
    )


def test_stale_probe_without_an_update_checks_nothing() -> None:
    data = nightly_data()
    data["timeline"] = [s for s in data["timeline"] if s.get("step") != "update"]
    assert any(
        "this stale probe would check nothing: no probed domain was updated" in p
        for p in problems(data)
    )


def test_await_deletion_needs_a_deletion() -> None:
    data = nightly_data()
    data["timeline"] = [s for s in data["timeline"] if s.get("step") != "delete"]
    assert any(
        "awaits the deletion of tenant a, but no earlier step deletes it" in p
        for p in problems(data)
    )


def test_generated_pairs_need_canary_generators() -> None:
    data = nightly_data()
    del data["domains"]["pet"]["canary"]
    assert problems(data) == [
        "n.yaml: domains.pet.canary: generated pairs need a canary "
        "generator for every domain (employer, address, person, pet, "
        "school)"
    ]


def test_updates_must_be_given_for_listed_pairs() -> None:
    data = yaml.safe_load((REPO / "scenarios" / "seed-six-case.yaml").read_text())
    data["timeline"].append({"step": "update", "domains": ["color"]})
    data["timeline"].append({"step": "probe", "kind": "stale"})
    found = problems(data)
    assert (
        "n.yaml: pairs.0.a.facts.color.updates: the timeline updates color 1 time(s) but "
        "0 new value(s) are given" in found
    )


def test_dev_and_eval_questions_must_not_overlap() -> None:
    data = nightly_data()
    templates = data["domains"]["pet"]["templates"]["es"]
    templates["question_dev"] = [templates["question"][0]]
    assert any(
        p.startswith("n.yaml: domains.pet.templates.es.question_dev.0: also in the evaluation set")
        for p in problems(data)
    )


def test_forgetting_what_was_never_stated_is_refused() -> None:
    data = nightly_data()
    for step in data["timeline"]:
        if step.get("label") == "forget":
            step["domains"] = ["school"]  # b never states its school
    assert any(
        "forgets school of tenant b, which is not a current fact of it" in p for p in problems(data)
    )


@pytest.mark.parametrize("seed", ["clash-a", "clash-b"])
def test_the_indexed_clash_test_is_exactly_the_brute_force_one(seed: str) -> None:
    """Short words from a tiny alphabet make containments common: the index must find
    every one (either way round) and invent none."""
    import random

    rng = random.Random(seed)
    pool = CanaryPool(seed, avoid=["ab", "¿Dónde trabajo?"])
    taken = [normalize("ab"), normalize("¿Dónde trabajo?")]
    words = ["a", "ab", "ba", "abc", "cab", "b c", "dónde"]
    clashes = 0
    for _ in range(3000):
        candidate = normalize(" ".join(rng.choice(words) for _ in range(rng.randint(1, 5))))
        expected = any(candidate in text or text in candidate for text in taken)
        assert pool._clashes(candidate) is expected, candidate
        clashes += expected
        if not expected:
            pool._take(candidate)
            taken.append(candidate)
    assert clashes > 100 and len(taken) > 10  # both outcomes were exercised


def test_a_seeds_values_stay_what_they_were() -> None:
    """A seed's values are part of a run's record (`--seed`): generating them another way
    must draw the same parts in the same order (rules/canaries.py, RECIPES)."""
    pool = CanaryPool("ref-pool")
    assert [pool.draw(kind, language) for language in ("es", "en") for kind in KINDS] == [
        "Muebles Fajardo Guzmán",
        "travesía Herrero 6031",
        "Carmen Manrique Rentería",
        "Greta Heredia Escalante",
        "Colegio San Millán Valcárcel 9",
        "Ravenscroft Davenport Bakery",
        "1605 Davenport Mews",
        "Cordelia Tolliver Galloway",
        "Bramble Merriweather Davenport",
        "Saint Petroc Pemberton School 65",
    ]
