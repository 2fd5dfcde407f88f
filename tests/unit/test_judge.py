"""Expectations derived from a pair's state, and the judging of one reply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memlife.lifecycle import Observation, PairState, judge_probe, parse_clock
from memlife.scenario import Scenario

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def observation(reply: str | None, latency: float | None = 12.0, **extra: Any) -> Observation:
    return Observation(seq=1, role="a", kind="probe", case_id="c", request="q", reply=reply,
                       latency_ms=latency, scenario_time=NOW, wall_time=NOW, **extra)


def written_state(seed_scenario: Scenario) -> PairState:
    state = PairState(seed_scenario.pairs[0])
    for role in ("a", "b"):
        for domain in ("color", "allergy", "employer"):
            state.record_write(role, domain)
    return state


def test_recall_case_requires_own_value_and_forbids_every_partner_value(
        seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "¿Cuál es mi color?")
    assert case.required == ["azul"]
    assert sorted(f.text for f in case.forbidden) == ["Ferretería Olmos", "mariscos", "verde"]
    assert {f.owner for f in case.forbidden} == {"bruno"}


def test_nothing_required_before_the_tenant_stated_it(seed_scenario: Scenario) -> None:
    case = PairState(seed_scenario.pairs[0]).recall_case("c", "a", "color", "?")
    assert case.required == [] and case.forbidden == []


def test_clean_reply_passes_every_check(seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "?")
    verdict = judge_probe(case, observation("Tu color favorito es AZUL."), 700)
    assert verdict.passed and verdict.outcome == "pass" and verdict.findings == []
    assert {(c.invariant, c.outcome) for c in verdict.checks} == {
        ("recall", "pass"), ("I3", "pass"), ("L", "pass")}


def test_each_leak_is_its_own_I3_finding(seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "?")
    verdict = judge_probe(case, observation("azul, y también verde y Ferreteria OLMOS"), 700)
    assert not verdict.passed
    leaks = [(f.invariant, f.reason, f.value) for f in verdict.findings]
    assert leaks == [("I3", "leaked", "verde"), ("I3", "leaked", "Ferretería Olmos")]
    assert all(f.store == "response" for f in verdict.findings)


def test_missing_recall_is_not_a_leak(seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "?")
    verdict = judge_probe(case, observation("No tengo esa información."), 700)
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("recall", "missing")]
    assert ("I3", "pass") in {(c.invariant, c.outcome) for c in verdict.checks}


def test_slow_reply_fails_latency_only(seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "?")
    verdict = judge_probe(case, observation("azul", latency=701.0), 700)
    assert verdict.passed  # the content rule holds; latency is its own check
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("L", "slow")]


def test_target_error_is_inconclusive_never_pass(seed_scenario: Scenario) -> None:
    case = written_state(seed_scenario).recall_case("c", "a", "color", "?")
    failed = observation(None, latency=None, status="target-error", error="HTTP 503")
    verdict = judge_probe(case, failed, 700)
    assert not verdict.passed and verdict.outcome == "inconclusive"
    assert {c.outcome for c in verdict.checks} == {"inconclusive"}
    assert all(f.reason == "target-error" and f.detail == "HTTP 503" for f in verdict.findings)


def test_failed_write_makes_dependent_cases_inconclusive(seed_scenario: Scenario) -> None:
    state = written_state(seed_scenario)
    state.record_write("b", "color", confirmed=False)
    case = state.recall_case("c", "a", "color", "?")
    assert case.blocked_by == "bruno's color write failed"
    verdict = judge_probe(case, observation("azul"), 700)
    assert verdict.outcome == "inconclusive" and not verdict.passed


def test_clock_modes() -> None:
    origin = datetime(2026, 1, 1, tzinfo=UTC)
    later = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    compress = parse_clock("compress=60")
    assert compress.scenario_now(origin, later) == datetime(2026, 1, 1, 1, tzinfo=UTC)
    assert compress.real_wait(timedelta(hours=6)) == timedelta(minutes=6)
    assert parse_clock("real").real_wait(timedelta(hours=6)) == timedelta(hours=6)
    assert parse_clock("skip").scenario_now(origin, later) == later
    for bad in ("compress=0", "compress=x", "fast"):
        try:
            parse_clock(bad)
        except ValueError as error:
            assert "--clock" in str(error)
        else:
            raise AssertionError(f"{bad} accepted")
