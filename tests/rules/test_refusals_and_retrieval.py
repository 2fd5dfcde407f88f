"""Refused answers and retrieval answers (docs/design.md, "Retrieval answers and
refusals"): a correct search API or a refusing service can pass every check a correct
assistant passes, and a leaking one cannot."""

from __future__ import annotations

from memlife.rules.judging import judge_probe
from tests.rules.test_judge import GRACE, NOW, observation, recall, updatable_pair


def findings(verdict) -> set[tuple[str, str]]:
    return {(f.invariant, f.reason) for f in verdict.findings}


def test_a_refusal_holds_nothing_so_it_fails_recall_as_refused_and_leaks_nothing() -> None:
    case = recall(updatable_pair(), domain="job")
    refused = observation("", refused=True, http_status=403)
    verdict = judge_probe(case, refused, 700)
    assert verdict.outcome == "fail"
    assert findings(verdict) == {("recall", "refused")}
    assert verdict.findings[0].detail == "the target refused (HTTP 403)"
    assert {c.invariant: c.outcome for c in verdict.checks}["I3"] == "pass"


def test_a_refusal_passes_where_nothing_is_expected() -> None:
    state = updatable_pair()
    state.record_deletion("a", NOW)
    after_deletion = recall(state, domain="job")
    verdict = judge_probe(after_deletion, observation(None, refused=True, http_status=404), 700)
    assert verdict.passed and {c.invariant for c in verdict.checks} >= {"I3", "I4"}
    abstain = updatable_pair().probe_case("c", "abstain", "b", "pet", "?", NOW, GRACE, ["no lo sé"])
    assert judge_probe(abstain, observation("", refused=True, http_status=403), 700).passed


def test_a_retrieval_answer_abstains_by_holding_nothing_of_the_partner() -> None:
    state = updatable_pair()
    case = state.probe_case("c", "abstain", "b", "pet", "?", NOW, GRACE, ["no lo sé"])
    # Bruno's own memory, found by the search: no abstaining words, and none needed.
    own = judge_probe(case, observation("Trabajo en Ferretería Olmos", retrieval=True), 700)
    assert own.passed, own.findings
    # The same answer from an assistant does not abstain.
    assert findings(judge_probe(case, observation("Trabajo en Ferretería Olmos"), 700)) == {
        ("abstain", "missing")
    }
    # A search that serves Ana's pet to Bruno neither abstains nor isolates.
    leaked = judge_probe(case, observation("Mi mascota es Canelo", retrieval=True), 700)
    assert findings(leaked) == {("abstain", "leaked"), ("I3", "leaked")}


def test_a_stale_value_fails_the_probe_of_its_own_fact_only() -> None:
    state = updatable_pair()
    state.record_update("a", "job", NOW)
    # A search serves every memory it finds: the old employer beside the pet.
    answer = observation("Panadería Quispe · Taller Rivas · Canelo", retrieval=True)
    job = judge_probe(recall(state, domain="job", now=NOW + GRACE), answer, 700)
    pet = judge_probe(recall(state, domain="pet", now=NOW + GRACE), answer, 700)
    assert findings(job) == {("U1", "stale")}
    assert pet.passed and "U1" not in {c.invariant for c in pet.checks}
