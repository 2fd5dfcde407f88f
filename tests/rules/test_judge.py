"""Expectations derived from a pair's state, and the judging of one reply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memlife.rules.clock import parse_clock
from memlife.rules.evidence import Observation
from memlife.rules.judging import judge_probe
from memlife.rules.scenario import FactValue, Pair, Scenario, Tenant
from memlife.rules.state import PairState
from memlife.rules.verdicts import CaseVerdict, Check, ForbiddenValue

NOW = datetime(2026, 11, 30, tzinfo=UTC)
GRACE = timedelta(minutes=30)


def observation(reply: str | None, latency: float | None = 12.0, **extra: Any) -> Observation:
    return Observation(
        seq=1,
        role="a",
        kind="probe",
        case_id="c",
        request="q",
        reply=reply,
        latency_ms=latency,
        scenario_time=NOW,
        wall_time=NOW,
        **extra,
    )


def written_state(seed_scenario: Scenario) -> PairState:
    state = PairState(seed_scenario.pairs[0])
    for role in ("a", "b"):
        for domain in ("color", "allergy", "employer"):
            state.record_write(role, domain)
    return state


def recall(state: PairState, role: str = "a", domain: str = "color", now: datetime = NOW):
    return state.probe_case("c", "recall", role, domain, "?", now, GRACE, [])


def updatable_pair() -> PairState:
    pair = Pair(
        a=Tenant(
            alias="ana",
            facts={
                "job": FactValue(value="Panadería Quispe", updates=["Taller Rivas"]),
                "pet": FactValue(value="Canelo"),
            },
        ),
        b=Tenant(
            alias="bruno",
            facts={"job": FactValue(value="Ferretería Olmos"), "pet": FactValue(value="Luna")},
        ),
    )
    state = PairState(pair)
    for role in ("a", "b"):
        state.record_write(role, "job")
    state.record_write("a", "pet")
    return state


def test_recall_case_requires_own_value_and_forbids_every_partner_value(
    seed_scenario: Scenario,
) -> None:
    case = recall(written_state(seed_scenario))
    assert case.required == ["azul"]
    assert sorted(f.text for f in case.forbidden) == ["Ferretería Olmos", "mariscos", "verde"]
    assert {f.owner for f in case.forbidden} == {"bruno"}


def test_nothing_stated_nothing_asked(seed_scenario: Scenario) -> None:
    state = PairState(seed_scenario.pairs[0])
    assert state.probe_domains("recall", "a", ["color"]) == []


def test_clean_reply_passes_every_check(seed_scenario: Scenario) -> None:
    verdict = judge_probe(
        recall(written_state(seed_scenario)), observation("Tu color favorito es AZUL."), 700
    )
    assert verdict.passed and verdict.outcome == "pass" and verdict.findings == []
    assert {(c.invariant, c.outcome) for c in verdict.checks} == {
        ("recall", "pass"),
        ("I3", "pass"),
        ("L", "pass"),
    }


def test_each_leak_is_its_own_I3_finding(seed_scenario: Scenario) -> None:
    verdict = judge_probe(
        recall(written_state(seed_scenario)),
        observation("azul, y también verde y Ferreteria OLMOS"),
        700,
    )
    assert not verdict.passed
    leaks = [(f.invariant, f.reason, f.value) for f in verdict.findings]
    assert leaks == [("I3", "leaked", "verde"), ("I3", "leaked", "Ferretería Olmos")]
    assert all(f.store == "response" for f in verdict.findings)


def test_values_of_tenants_outside_the_pair_are_leaks_too(seed_scenario: Scenario) -> None:
    stranger = [
        ForbiddenValue(
            text="Quesería Arriaga", origin="foreign", domain="employer", owner="t007b (pair 7)"
        )
    ]
    verdict = judge_probe(
        recall(written_state(seed_scenario)),
        observation("azul; también Queseria Arriaga"),
        700,
        stranger,
    )
    assert [(f.invariant, f.value) for f in verdict.findings] == [("I3", "Quesería Arriaga")]


def test_retrieval_context_is_checked_for_I2(seed_scenario: Scenario) -> None:
    verdict = judge_probe(
        recall(written_state(seed_scenario)),
        observation("azul", context="Mi color favorito es verde."),
        700,
    )
    assert not verdict.passed
    assert [(f.invariant, f.store, f.value) for f in verdict.findings] == [
        ("I2", "response-context", "verde")
    ]


def test_missing_recall_is_not_a_leak(seed_scenario: Scenario) -> None:
    verdict = judge_probe(
        recall(written_state(seed_scenario)), observation("No tengo esa información."), 700
    )
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("recall", "missing")]
    assert ("I3", "pass") in {(c.invariant, c.outcome) for c in verdict.checks}


def test_slow_reply_fails_latency_only(seed_scenario: Scenario) -> None:
    verdict = judge_probe(recall(written_state(seed_scenario)), observation("azul", 701.0), 700)
    assert verdict.passed  # the content rule holds; latency is its own check
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("L", "slow")]


def test_target_error_is_inconclusive_never_pass(seed_scenario: Scenario) -> None:
    failed = observation(None, latency=None, status="target-error", error="HTTP 503")
    verdict = judge_probe(recall(written_state(seed_scenario)), failed, 700)
    assert not verdict.passed and verdict.outcome == "inconclusive"
    assert {c.outcome for c in verdict.checks} == {"inconclusive"}
    assert all(f.reason == "target-error" and f.detail == "HTTP 503" for f in verdict.findings)


def test_failed_write_makes_dependent_cases_inconclusive(seed_scenario: Scenario) -> None:
    state = written_state(seed_scenario)
    state.record_write("b", "color", confirmed=False)
    case = recall(state)
    assert case.blocked_by == "bruno's color write failed"
    assert judge_probe(case, observation("azul"), 700).outcome == "inconclusive"


def test_update_forbids_the_old_value_once_the_grace_period_is_over() -> None:
    state = updatable_pair()
    state.record_update("a", "job", NOW)
    within = recall(state, domain="job", now=NOW + GRACE / 2)
    assert within.required == ["Taller Rivas"]
    assert "Panadería Quispe" not in [f.text for f in within.forbidden]
    after = recall(state, domain="job", now=NOW + GRACE)
    stale = [f for f in after.forbidden if f.origin == "superseded"]
    assert [f.text for f in stale] == ["Panadería Quispe"]
    verdict = judge_probe(after, observation("Trabajas en Panadería Quispe"), 700)
    assert {(f.invariant, f.reason) for f in verdict.findings} == {
        ("U1", "stale"),
        ("recall", "missing"),
    }
    assert state.probe_domains("stale", "a", ["job", "pet"]) == ["job"]
    # the partner's superseded values stay forbidden as the partner's (I3)
    assert "Panadería Quispe" in [f.text for f in recall(state, "b", "job").forbidden]


def test_deleted_tenant_values_are_forbidden_and_resurrection_armed() -> None:
    state = updatable_pair()
    state.record_registration("a", "u1")
    state.record_deletion("a", NOW, "del-1")
    assert state.tenants["a"].deleted_identities == ["u1"]
    case = recall(state, domain="job")
    assert case.required == [] and case.kind == "recall"
    assert {f.text for f in case.forbidden if f.origin == "deleted"} == {
        "Panadería Quispe",
        "Canelo",
    }
    verdict = judge_probe(case, observation("Trabajas en Panadería Quispe"), 700)
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("I4", "residue")]
    clean = CaseVerdict(
        case_id="c",
        role="a",
        tenant_alias="ana",
        passed=True,
        outcome="pass",
        checks=[Check(invariant="I4", outcome="pass")],
        findings=[],
    )
    state.absorb_probe_verdicts("a", [clean])
    again = judge_probe(recall(state, domain="job"), observation("Panadería Quispe"), 700)
    assert [(f.invariant, f.reason) for f in again.findings] == [("I4", "resurrected")]


def test_scoped_deletion_applies_to_what_was_answered_before() -> None:
    state = updatable_pair()
    answered = CaseVerdict(
        case_id="c",
        role="b",
        tenant_alias="bruno",
        domain="job",
        passed=True,
        outcome="pass",
        checks=[Check(invariant="recall", outcome="pass")],
        findings=[],
    )
    state.absorb_probe_verdicts("b", [answered])
    state.record_deletion("a", NOW)
    case = recall(state, "b", "job")
    assert case.scoped_deletion
    verdict = judge_probe(case, observation("No tengo esa información."), 700)
    assert {(f.invariant, f.reason) for f in verdict.findings} == {
        ("recall", "missing"),
        ("D2", "overreach"),
    }


def test_a_question_unanswered_before_the_deletion_is_not_blamed_on_it() -> None:
    # One question about the job was answered, another was not (a search that ranks the
    # fact low for one wording): the deletion cannot be shown to have taken anything.
    state = updatable_pair()
    verdicts = [
        CaseVerdict(
            case_id=f"c{i}",
            role="b",
            tenant_alias="bruno",
            domain="job",
            passed=outcome == "pass",
            outcome=outcome,
            checks=[Check(invariant="recall", outcome=outcome)],
            findings=[],
        )
        for i, outcome in enumerate(("pass", "fail", "pass"))
    ]
    state.absorb_probe_verdicts("b", verdicts)
    state.record_deletion("a", NOW)
    case = recall(state, "b", "job")
    assert not case.scoped_deletion
    verdict = judge_probe(case, observation("No tengo esa información."), 700)
    assert {(f.invariant, f.reason) for f in verdict.findings} == {("recall", "missing")}


def test_abstain_cases_need_an_abstention_and_forbid_the_partner() -> None:
    state = updatable_pair()
    assert state.probe_domains("abstain", "b", ["job", "pet"]) == ["pet"]
    case = state.probe_case("c", "abstain", "b", "pet", "?", NOW, GRACE, ["no lo sé"])
    assert case.any_of == ["no lo sé"] and "Canelo" in [f.text for f in case.forbidden]
    assert judge_probe(case, observation("No lo sé."), 700).passed
    leaked = judge_probe(case, observation("Tu mascota es Canelo"), 700)
    assert {(f.invariant, f.reason) for f in leaked.findings} == {
        ("abstain", "missing"),
        ("I3", "leaked"),
    }


def test_clock_modes() -> None:
    origin = datetime(2026, 1, 1, tzinfo=UTC)
    later = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    compress = parse_clock("compress=60")
    assert compress.scenario_now(origin, later) == datetime(2026, 1, 1, 1, tzinfo=UTC)
    assert compress.real_wait(timedelta(hours=6)) == timedelta(minutes=6)
    assert parse_clock("real").real_wait(timedelta(hours=6)) == timedelta(hours=6)
    assert parse_clock("skip").scenario_now(origin, later) == later
    assert parse_clock("compress=100000000").factor == 100_000_000
    for bad in (
        "compress=0",
        "compress=x",
        "fast",
        "compress=inf",
        "compress=nan",
        "compress=1e999",
        "compress=100000001",
    ):
        try:
            parse_clock(bad)
        except ValueError as error:
            assert "--clock" in str(error)
        else:
            raise AssertionError(f"{bad} accepted")


def test_forgotten_fact_is_forbidden_while_the_tenant_lives_on() -> None:
    state = updatable_pair()
    state.record_forget("a", "pet")
    assert state.probe_domains("recall", "a", ["job", "pet"]) == ["job", "pet"]
    case = recall(state, domain="pet")
    assert case.required == []
    assert [(f.text, f.origin) for f in case.forbidden if f.owner == "ana"] == [
        ("Canelo", "deleted")
    ]
    verdict = judge_probe(case, observation("Tu mascota se llama Canelo."), 700)
    assert [(f.invariant, f.reason) for f in verdict.findings] == [("I4", "residue")]
    inspect = state.inspect_case("s9-a", "a", NOW, GRACE)
    assert ("Canelo", "deleted") in [(n.text, n.origin) for n in inspect.needles]
    # the partner's answers must not carry it either
    assert "Canelo" in [f.text for f in recall(state, "b", "job").forbidden]


def test_inspections_know_how_long_ago_the_erasure_was() -> None:
    state = updatable_pair()
    assert state.inspect_case("s1-a", "a", NOW, GRACE).erased_for is None
    state.record_forget("a", "pet", NOW - timedelta(hours=5))
    assert state.inspect_case("s2-a", "a", NOW, GRACE).erased_for == timedelta(hours=5)
    state.record_deletion("a", NOW - timedelta(days=2), "del-1")
    assert state.inspect_case("s3-a", "a", NOW, GRACE).erased_for == timedelta(days=2)
    assert state.inspect_case("s3-b", "b", NOW, GRACE).erased_for is None


def spaced_pair() -> PairState:
    pair = Pair(
        a=Tenant(alias="ana", facts={"pet": FactValue(value="Canelo")}),
        b=Tenant(alias="bruno", facts={"pet": FactValue(value="Luna")}),
        spaces={"team": {"supplier": FactValue(value="Conservas Palacios")}},
    )
    state = PairState(pair)
    state.record_space("team", "create", ["a", "b"], NOW)
    state.record_space_write("team", "supplier")
    return state


def space_verdict(outcome: str) -> CaseVerdict:
    return CaseVerdict(
        case_id="s",
        role="b",
        tenant_alias="bruno",
        domain="supplier",
        passed=outcome == "pass",
        outcome=outcome,
        checks=[Check(invariant="recall", outcome=outcome)],
        findings=[],
    )


def test_a_members_deletion_is_blamed_only_for_a_space_fact_recalled_before_it() -> None:
    # Recalled inside the space before ana's deletion, missing after it: S2.
    state = spaced_pair()
    state.absorb_probe_verdicts("b", [space_verdict("pass")])
    state.record_deletion("a", NOW)
    case = state.space_case("s", "b", "team", "supplier", "?", NOW, GRACE)
    verdict = judge_probe(case, observation("No tengo esa información."), 700)
    assert {(f.invariant, f.reason) for f in verdict.findings} == {
        ("recall", "missing"),
        ("S2", "overreach"),
    }
    # Never recalled inside it (a joiner's agent that never saw the space: Letta 0.16.8
    # does not rebuild its prompt on attach): the deletion took nothing it can be shown to.
    state = spaced_pair()
    state.absorb_probe_verdicts("b", [space_verdict("fail")])
    state.record_deletion("a", NOW)
    case = state.space_case("s", "b", "team", "supplier", "?", NOW, GRACE)
    verdict = judge_probe(case, observation("No tengo esa información."), 700)
    assert {(f.invariant, f.reason) for f in verdict.findings} == {("recall", "missing")}
