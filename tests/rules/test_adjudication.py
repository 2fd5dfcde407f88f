"""Blinded adjudication: what a reviewer sees, and what a decision means for each check."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlife.cli.review import Verdict, parse_answer
from memlife.rules import adjudication
from memlife.rules.adjudication import Decision
from memlife.rules.evidence import Observation
from memlife.rules.judging import judge_probe
from memlife.rules.verdicts import ForbiddenValue, ProbeCase

T0 = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def failed_item(reply: str, kind: str = "recall") -> adjudication.ReviewItem:
    case = ProbeCase(
        case_id="s4-a-employer-q0",
        kind=kind,
        role="a",
        tenant_alias="t000a",
        domain="employer",
        question="¿Dónde trabajo?",
        required=[] if kind == "abstain" else ["Panadería Quispe"],
        forbidden=[
            ForbiddenValue(
                text="Ferretería Olmos", origin="partner", domain="employer", owner="t000b"
            ),
            ForbiddenValue(
                text="Taller Rivas", origin="superseded", domain="employer", owner="t000a"
            ),
        ],
    )
    observation = Observation(
        seq=1,
        role="a",
        kind="probe",
        case_id=case.case_id,
        request=case.question,
        reply=reply,
        latency_ms=5.0,
        scenario_time=T0,
        wall_time=T0,
    )
    verdict = judge_probe(case, observation, 700.0)
    items = adjudication.review_items("run-1", 3, 4, "baseline", [case], [observation], [verdict])
    assert len(items) == 1
    return items[0]


def test_only_failed_answers_are_queued_and_the_reviewer_sees_nothing_identifying() -> None:
    item = failed_item("Trabajas en Ferretería Olmos.")
    assert item.exact == {"recall": "fail", "I3": "fail", "U1": "pass"}
    assert sorted(item.candidates) == ["Ferretería Olmos", "Panadería Quispe", "Taller Rivas"]
    shown = adjudication.blind(item).model_dump()
    assert set(shown) == {"ticket", "question", "reply", "candidates"}
    text = str(shown)
    for hidden in ("run-1", "t000a", "t000b", "baseline", "s4-a"):
        assert hidden not in text
    # The expected value is not always first: the order follows the ticket.
    orders = {
        tuple(adjudication.review_items(f"run-{n}", 0, 4, "x", *_parts(item))[0].candidates).index(
            "Panadería Quispe"
        )
        for n in range(12)
    }
    assert len(orders) > 1


def _parts(item: adjudication.ReviewItem) -> tuple[list, list, list]:  # type: ignore[type-arg]
    case = ProbeCase(
        case_id=item.case_id,
        role="a",
        tenant_alias="t000a",
        domain="employer",
        question=item.question,
        required=item.required,
        forbidden=[
            ForbiddenValue(
                text="Ferretería Olmos", origin="partner", domain="employer", owner="t000b"
            )
        ],
    )
    observation = Observation(
        seq=1,
        role="a",
        kind="probe",
        case_id=item.case_id,
        request=item.question,
        reply="nada",
        scenario_time=T0,
        wall_time=T0,
    )
    return [case], [observation], [judge_probe(case, observation, 700.0)]


def test_passing_answers_are_not_queued() -> None:
    cases, observations, _ = _parts(failed_item("Trabajas en Ferretería Olmos."))
    good = observations[0].model_copy(update={"reply": "Trabajas en Panadería Quispe."})
    verdict = judge_probe(cases[0], good, 700.0)
    assert verdict.outcome == "pass"
    assert adjudication.review_items("r", 0, 1, "s", cases, [good], [verdict]) == []


def test_a_decision_decides_each_check_the_exact_match_made() -> None:
    # Exact match failed recall ("Quispe" alone); the reviewer reads it as the own value.
    item = failed_item("Trabajas en la panadería de los Quispe.")
    own = item.candidates.index("Panadería Quispe")
    checks = adjudication.adjudicate(
        item, Decision(ticket=item.ticket, asserted=[own], reviewer="alice")
    )
    assert checks == {"recall": "pass", "I3": "pass", "U1": "pass"}
    partner = item.candidates.index("Ferretería Olmos")
    checks = adjudication.adjudicate(
        item, Decision(ticket=item.ticket, asserted=[own, partner], reviewer="bob")
    )
    assert checks["I3"] == "fail" and checks["recall"] == "pass"
    assert (
        adjudication.adjudicate(item, Decision(ticket=item.ticket, abstains=True, reviewer="c"))[
            "recall"
        ]
        == "fail"
    )


def test_abstain_cases_pass_only_when_the_reply_abstains_without_leaking() -> None:
    item = failed_item("Trabajas en Ferretería Olmos.", kind="abstain")
    assert (
        adjudication.adjudicate(item, Decision(ticket=item.ticket, abstains=True, reviewer="a"))[
            "abstain"
        ]
        == "pass"
    )
    partner = item.candidates.index("Ferretería Olmos")
    assert (
        adjudication.adjudicate(
            item, Decision(ticket=item.ticket, asserted=[partner], reviewer="a")
        )["abstain"]
        == "fail"
    )


def test_impossible_decisions_are_refused() -> None:
    item = failed_item("Trabajas en Ferretería Olmos.")
    assert adjudication.decision_problems(
        item, Decision(ticket=item.ticket, asserted=[7], reviewer="a")
    )
    assert adjudication.decision_problems(
        item, Decision(ticket=item.ticket, asserted=[0], abstains=True, reviewer="a")
    )


def test_a_person_answers_with_numbers_none_abstains_or_skip() -> None:
    assert parse_answer("1 3", 3) == Verdict([0, 2], False)
    assert parse_answer("2,1", 3) == Verdict([0, 1], False)
    assert parse_answer("0", 3) == Verdict([], False)
    assert parse_answer("a", 3) == Verdict([], True)
    assert parse_answer("s", 3) is None
    for bad in ("4", "one", "1x"):
        with pytest.raises(ValueError):
            parse_answer(bad, 3)
