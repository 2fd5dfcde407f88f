"""The lifecycle's decisions (workflows/lifecycle.py, steps.py), run in milliseconds on a
fake of its calls (fake_calls.py): what it sends when, what it does with what the target
answers, and the verdicts that follow. The Temporal tests (test_suite_workflow.py,
tests/reliability) keep what only Temporal does: timers, signals, kills and replay."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlife import contracts
from memlife.contracts import ConverseRequest, DeleteRequest, ForgetRequest
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from memlife.workflows.lifecycle import LifecycleRunner
from tests.lifecycle.fake_calls import (
    START,
    MemoryTarget,
    failures,
    fake_calls,
    judge,
    pair_input,
    scenario,
    storeless_target,
)


@pytest.fixture(scope="module")
def nightly() -> Scenario:
    return scenario("lifecycle-nightly.yaml")


@pytest.fixture(scope="module")
def target() -> Target:
    return storeless_target()


async def test_a_clean_target_passes_the_nightly_with_every_step_in_order(
    nightly: Scenario, target: Target
) -> None:
    memory = MemoryTarget(nightly)
    calls = fake_calls(memory)
    runner = LifecycleRunner(pair_input(nightly, target), calls)
    result = await runner.run()
    assert result.failures == 0 and result.inconclusive == 0
    assert result.cases == result.cases_passed > 50
    # Registration, then each step's calls and its recording, as the timeline says.
    names = calls.names()
    assert names[:3] == ["register_tenant", "record_tenants", "record_step"]
    assert names.count("forget_fact") == 1 and names.count("delete_tenant") == 1
    assert names.index("forget_fact") < names.index("delete_tenant")
    # The waits ran their course on the scenario's clock: 150 ms, 1 h, 5 h, 3 d, and the
    # deletion's confirmation needed no poll (the target said done).
    assert [real for real, _ in calls.sleeps] == [
        timedelta(milliseconds=150),
        timedelta(hours=1),
        timedelta(hours=5),
        timedelta(days=3),
    ]
    assert calls.clock - START == sum((real for real, _ in calls.sleeps), timedelta())
    # Tenant a was deleted, then registered again: it has nothing; b lost its pet only.
    a, b = (memory.memory[runner.tenants[role].user_id or ""] for role in ("a", "b"))
    assert a == {} and set(b) == {"employer", "address", "friend"}


async def test_after_an_update_questions_require_the_new_value_and_forbid_the_old(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly))
    runner = LifecycleRunner(pair_input(nightly, target), calls)
    await runner.run()
    pair = runner.input.scenario.pairs[0]
    said = [
        message
        for call in calls.calls
        if call.activity == contracts.CONVERSE.name
        for message in call.arg.messages
    ]
    for role in ("a", "b"):
        employer = pair.tenant(role).facts["employer"]
        [new] = employer.updates
        assert any(new in message for message in said), role
        stale = [
            case
            for call in calls.calls
            if call.activity == contracts.RECORD_STEP.name and call.arg.stage == "update-1h"
            for case in call.arg.with_forbidden_per_case().cases
            if case.role == role and case.domain == "employer"
        ]
        assert stale and all(
            case.kind == "stale"
            and case.required == [new]
            and employer.value in {f.text for f in case.forbidden}
            for case in stale
        ), role


async def test_a_memory_shared_between_users_fails_isolation_at_every_stage(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly, shared=True))
    result = await LifecycleRunner(pair_input(nightly, target), calls).run()
    failed = failures(calls)
    assert result.failures == 60
    leaks = {stage for invariant, stage, reason in failed if invariant == "I3"}
    # Every stage where a tenant with a partner's facts in the memory asks; at b-intact
    # only b asks, and a's deleted user took its facts with it.
    assert leaks == {"baseline", "update-1h", "update-6h", "deletion-confirmed", "after-3d"}
    assert {reason for invariant, _, reason in failed if invariant == "I3"} == {"leaked"}
    # b never said where it studied: a's school in its answer fails the abstain check too.
    assert failed[("abstain", "baseline", "missing")] == 3


async def test_a_target_that_keeps_deleted_facts_fails_as_residue_where_they_come_back(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly, keeps_deleted=True))
    result = await LifecycleRunner(pair_input(nightly, target), calls).run()
    failed = failures(calls)
    assert result.failures == 36
    # a, deleted and registered again under the same user, is answered its old facts;
    # b is answered the pet it had asked to be forgotten.
    assert set(failed) == {
        ("I4", "deletion-confirmed", "residue"),
        ("I4", "b-intact", "residue"),
        ("I4", "after-3d", "residue"),
    }
    forgets = [c.arg for c in calls.calls if c.activity == contracts.FORGET_FACT.name]
    assert [type(f) for f in forgets] == [ForgetRequest] and forgets[0].domain == "pet"


async def test_an_unreachable_target_is_inconclusive_never_a_pass_and_never_a_crash(
    nightly: Scenario, target: Target
) -> None:
    memory = MemoryTarget(nightly)
    memory.unreachable = {contracts.CONVERSE.name}
    calls = fake_calls(memory)
    result = await LifecycleRunner(pair_input(nightly, target), calls).run()
    assert result.failures == 0
    # Only what the target said of the deletion passes: no answer was ever read.
    passed = [
        (c.arg.stage, check.store)
        for c in calls.calls
        if c.activity == contracts.RECORD_STEP.name
        for v in judge(c.arg).verdicts
        if v.passed
        for check in v.checks
    ]
    assert passed == [("deletion-confirmed", "deletion-status")]
    assert result.inconclusive == result.cases - 1 > 0
    # The lifecycle went on to its end: the deletion was still requested.
    assert contracts.DELETE_TENANT.name in {c.activity for c in calls.calls}


async def test_a_tenant_that_could_not_register_is_never_sent_a_message(
    nightly: Scenario, target: Target
) -> None:
    memory = MemoryTarget(nightly)
    memory.unreachable = {contracts.REGISTER_TENANT.name}
    calls = fake_calls(memory)
    result = await LifecycleRunner(pair_input(nightly, target), calls).run()
    assert not [c for c in calls.calls if c.activity == contracts.CONVERSE.name]
    assert result.cases_passed == 0 and result.inconclusive == result.cases > 0


async def test_an_operator_ending_every_wait_still_moves_scenario_time_by_the_full_wait(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly), skip_waits=True)
    runner = LifecycleRunner(pair_input(nightly, target), calls)
    result = await runner.run()
    assert calls.clock == START  # no wall time passed
    assert result.failures == 0
    waited = sum((real for real, _ in calls.sleeps), timedelta())
    assert runner.scenario_now() - START == waited
    assert len([line for line in calls.logged if "wait skipped" in line]) == len(calls.sleeps)
    # The three-day inspection's questions carry a scenario time three days on.
    last = [c.arg for c in calls.calls if c.activity == contracts.CONVERSE.name][-1]
    assert isinstance(last, ConverseRequest)
    assert last.scenario_now >= (START + waited).isoformat().replace("+00:00", "Z")[:10]


async def test_a_cancelled_lifecycle_stops_at_the_next_step_and_reads_cancelled(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly))
    runner = LifecycleRunner(pair_input(nightly, target), calls)

    def cancel_on_update(request: object) -> object:
        runner.cancel_reason = "stopped by a test"
        return MemoryTarget(nightly).converse(request)  # type: ignore[arg-type]

    original = calls.handlers[contracts.CONVERSE.name]
    calls.handlers[contracts.CONVERSE.name] = lambda request: (
        cancel_on_update(request)
        if any("Ahora" in m or "Desde hoy" in m for m in request.messages)
        else original(request)
    )
    result = await runner.run()
    assert result.cancelled and runner.verdict() == "cancelled"
    assert not [c for c in calls.calls if c.activity == contracts.DELETE_TENANT.name]
    assert any("cancelled before step" in line for line in calls.logged)


async def test_failed_answers_go_to_review_when_the_run_has_a_queue(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly, shared=True))
    await LifecycleRunner(pair_input(nightly, target, review_queue="q"), calls).run()
    queued = [c for c in calls.calls if c.activity == contracts.QUEUE_FOR_REVIEW.name]
    assert queued and all(c.arg[0] == "q" and c.arg[1] for c in queued)
    clean = fake_calls(MemoryTarget(nightly))
    await LifecycleRunner(pair_input(nightly, target, review_queue="q"), clean).run()
    assert not [c for c in clean.calls if c.activity == contracts.QUEUE_FOR_REVIEW.name]


async def test_every_call_names_a_timeout_and_a_retry_policy(
    nightly: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(nightly))  # FakeCalls asserts both on every call
    await LifecycleRunner(pair_input(nightly, target), calls).run()
    deletes = [c.arg for c in calls.calls if c.activity == contracts.DELETE_TENANT.name]
    assert [type(d) for d in deletes] == [DeleteRequest]
    assert {c.options["summary"].split()[0] for c in calls.calls} >= {
        "register",
        "record",
        "delete",
    }
