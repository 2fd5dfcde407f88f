"""Neighbour invariance (rules/invariance.py): control twins are made with the same facts
(rules/pairs.py), their answers' outcomes compared, and their shared values never taken
for a misfiling or a residue in another tenant's records (rules/judging.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlife.errors import InputError
from memlife.rules.evidence import StoreRead, StoreRecordView
from memlife.rules.invariance import (
    TwinAnswer,
    influence_verdict,
    own_variation,
    twin_links,
    twin_verdict,
)
from memlife.rules.judging import judge_inspection
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario, parse_scenario
from memlife.rules.target import Store
from memlife.rules.verdicts import InspectCase, Needle

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def answer(
    checks: dict, reply: str = "From what you told me: I live at 1 Oak Lane.", alias: str = "t000a"
) -> TwinAnswer:
    return TwinAnswer(
        step=3,
        stage="baseline",
        case_id="s3-a-address-q0",
        domain="address",
        alias=alias,
        checks=checks,
        reply=reply,
    )


def test_twins_judged_alike_pass() -> None:
    verdict = twin_verdict(
        answer({"recall": "pass", "I3": "pass", "L": "fail"}),
        answer({"recall": "pass", "I3": "pass", "L": "pass"}, alias="t000a-twin"),
    )
    assert verdict is not None
    assert (verdict.case_id, verdict.outcome, verdict.findings) == (
        "s3-a-address-q0-twin",
        "pass",
        [],
    )


def test_a_difference_is_an_N1_failure_with_both_answers() -> None:
    verdict = twin_verdict(
        answer({"recall": "fail"}, reply="I don't have that information."),
        answer({"recall": "pass"}, alias="t000a-twin"),
    )
    assert verdict is not None and verdict.outcome == "fail"
    (finding,) = verdict.findings
    assert (finding.invariant, finding.reason) == ("N1", "influenced")
    assert "recall is fail here and pass for the twin" in finding.detail
    assert "I don't have that information." in finding.detail
    assert "1 Oak Lane" in finding.detail


def test_a_leak_on_either_side_is_its_own_finding_not_N1() -> None:
    assert (
        twin_verdict(
            answer({"recall": "pass", "I3": "fail"}), answer({"recall": "pass", "I3": "pass"})
        )
        is None
    )


def test_an_unjudged_side_leaves_N1_inconclusive() -> None:
    verdict = twin_verdict(answer({"recall": "inconclusive"}), answer({"recall": "pass"}))
    assert verdict is not None and verdict.outcome == "inconclusive"


def test_twins_are_found_by_the_values_their_tenants_a_state() -> None:
    same = frozenset({"1 Oak Lane", "Acme Bakery"})
    assert twin_links({0: same, 1: frozenset({"x"}), 2: same, 3: frozenset()}) == [(0, 2)]


def test_a_twin_states_its_originals_facts_beside_a_partner_of_its_own() -> None:
    scenario = load_scenario(SCENARIOS / "neighbour-invariance.yaml")
    assert scenario.generate is not None and scenario.generate.twins == 4
    plain = materialize(
        scenario.model_copy(update={"generate": scenario.generate.model_copy(update={"twins": 0})}),
        "seed",
    )
    twinned = materialize(scenario, "seed")
    assert scenario.pair_count() == len(twinned.pairs) == 12
    assert twinned.pairs[:8] == [
        p.model_copy(update={"twin": twinned.pairs[i].twin}) for i, p in enumerate(plain.pairs)
    ]  # draws unchanged
    for index in range(4):
        original, twin = twinned.pairs[index], twinned.pairs[8 + index]
        assert (original.twin, twin.twin) == (8 + index, index)
        assert twin.a.facts == original.a.facts and twin.a.alias == f"{original.a.alias}-twin"
        assert not (
            {f.value for f in twin.b.facts.values()} & {f.value for f in original.b.facts.values()}
        )
    assert all(pair.twin is None for pair in twinned.pairs[4:8])


@pytest.mark.parametrize(
    ("generate", "reason"),
    [
        ({"count": 2, "twins": 3}, "at most generate.count (2)"),
        ({"count": 2, "twins": 1, "collide": True}, "not with collide"),
    ],
)
def test_twins_a_file_cannot_have(generate: dict, reason: str) -> None:
    data = load_scenario(SCENARIOS / "neighbour-invariance.yaml").model_dump(mode="json")
    data["generate"] = generate
    with pytest.raises(InputError) as raised:
        parse_scenario(data, "s.yaml")
    assert f"s.yaml: generate.twins: {reason}" in str(raised.value)


def test_a_shared_value_in_another_tenants_record_found_by_value_is_the_twins() -> None:
    store = Store(name="memory", retention="purge")
    needle = Needle(text="1 Oak Lane", domain="address", origin="current")
    case = InspectCase(
        case_id="i",
        role="a",
        tenant_alias="t000a",
        deleted=False,
        identities=["u-a"],
        needles=[needle],
        partner_values=[],
    )
    twin_record = StoreRecordView(id="r9", tenant_id="u-twin", matches=[0])
    reads = [StoreRead(store="memory", mode="needle", key="1 Oak Lane", records=[twin_record])]
    (misfiled,), _ = judge_inspection(case, reads, [store])
    assert [f.invariant for f in misfiled.findings] == ["I1"]  # without a twin: misfiled
    shared = case.model_copy(update={"shared": ["1 Oak Lane"]})
    (verdict,), _ = judge_inspection(shared, reads, [store])
    assert verdict.outcome == "pass" and verdict.findings == []
    deleted = shared.model_copy(
        update={"deleted": True, "needles": [needle.model_copy(update={"origin": "deleted"})]}
    )
    own_record = StoreRecordView(id="r1", tenant_id="u-a", matches=[0])
    (verdict,), _ = judge_inspection(
        deleted, [reads[0].model_copy(update={"records": [twin_record, own_record]})], [store]
    )
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("I4", "residue")]
    assert "r1" in verdict.findings[0].detail and "r9" not in verdict.findings[0].detail


def asked(
    step: int, outcome: str, question: str = "Where do I live?", domain: str = "address"
) -> TwinAnswer:
    return TwinAnswer(
        step=step,
        stage=f"s{step}",
        case_id=f"s{step}-a-{domain}-q0",
        domain=domain,
        alias="t000a",
        checks={"recall": outcome},
        reply="…",
        question=question,
    )


def test_own_variation_counts_a_question_asked_again_while_nothing_of_the_tenant_changed() -> None:
    answers = [
        asked(3, "pass"),
        asked(9, "fail"),
        asked(12, "pass"),
        asked(3, "pass", "Where do I work?", "employer"),
        asked(9, "fail", "Where do I work?", "employer"),
    ]
    assert own_variation(answers) == (3, 3)
    # The employer was updated at step 6: its askings around it are not the same question.
    assert own_variation(answers, [(6, "employer")]) == (2, 2)
    assert own_variation(answers, [(10, None)]) == (2, 2)  # deleted, say, at step 10


def test_by_rates_twins_must_differ_beyond_the_targets_own_variation() -> None:
    example = [(asked(3, "fail"), asked(3, "pass"))]
    influenced = influence_verdict(
        [(9, 10), (8, 10), (9, 10)], [(1, 10), (0, 10), (1, 10)], example, "n1-rates", "t000a"
    )
    assert influenced.outcome == "fail"
    (finding,) = influenced.findings
    assert finding.reason == "influenced" and "26 of 30 answers" in finding.detail
    assert "2 of 30 answers" in finding.detail and "For example t000a" in finding.detail
    noisy = influence_verdict([(3, 10), (4, 10)], [(3, 10), (2, 10)], example, "n", "t")
    assert noisy.outcome == "pass" and noisy.findings == []
    assert influence_verdict([(3, 10)], [], example, "n", "t").outcome == "inconclusive"
