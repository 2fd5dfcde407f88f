"""The shared-space and maintenance decisions (workflows/spaces.py, steps.py: maintain), run
in milliseconds on a fake of the lifecycle's calls (fake_calls.py): one pair of
scenarios/shared-spaces.yaml and of scenarios/maintenance.yaml, against a clean memory and
against memories with the bugs the scenarios are for. The S checks (rules/verdicts.py):
S1, a space's facts reach no one outside it (a non-member, a member past its leave's
grace); S2, a space's fact outlives a member's deletion for the members that remain."""

from __future__ import annotations

from collections import Counter

import pytest

from memlife import contracts
from memlife.contracts import SpaceRequest
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from memlife.workflows.lifecycle import LifecycleRunner
from tests.lifecycle.fake_calls import (
    FakeCalls,
    MemoryTarget,
    failures,
    fake_calls,
    judged_steps,
    pair_input,
    scenario,
    storeless_target,
)


@pytest.fixture(scope="module")
def spaces() -> Scenario:
    return scenario("shared-spaces.yaml")


@pytest.fixture(scope="module")
def maintenance() -> Scenario:
    return scenario("maintenance.yaml")


@pytest.fixture(scope="module")
def target() -> Target:
    # create, join, leave, delete a space; space_say; maintain.reindex per tenant
    return storeless_target()


def _checks(calls: FakeCalls, *invariants: str) -> Counter[tuple[str, str, str]]:
    """(invariant, stage, outcome) of every check of these invariants the recorded steps
    were judged to hold, and how often."""
    return Counter(
        (check.invariant, record.stage, check.outcome)
        for record, outcome in judged_steps(calls)
        for verdict in outcome.verdicts
        for check in verdict.checks
        if check.invariant in invariants
    )


# What the scenario's S checks are, on a memory that keeps a space to its members: the
# supplier has two questions. At space-created b, no member yet, asks them inside the
# space (2) and its own three private questions (employer ×2, pet) (3), none of which may
# hold the space's fact; at left, past the 30 min grace, b asks inside it again (2); at
# member-deleted, b (who recalled the supplier when it joined) must still get it (2).
CLEAN_S = Counter(
    {
        ("S1", "space-created", "pass"): 5,
        ("S1", "left", "pass"): 2,
        ("S2", "member-deleted", "pass"): 2,
    }
)


async def test_a_memory_that_keeps_a_space_to_its_members_passes_every_space_check(
    spaces: Scenario, target: Target
) -> None:
    memory = MemoryTarget(spaces)
    calls = fake_calls(memory)
    runner = LifecycleRunner(pair_input(spaces, target), calls)
    result = await runner.run()
    assert result.failures == 0 and result.inconclusive == 0
    assert result.cases == result.cases_passed == 29 and runner.verdict() == "pass"
    assert _checks(calls, "S1", "S2") == CLEAN_S
    # Create (a), a joins its own space (the target file has join_space), b joins, leaves,
    # joins again, b deletes it: each as the tenant, by the id the target gave at create.
    operations = [
        (c.arg.action, c.arg.user_id)
        for c in calls.calls
        if c.activity == contracts.SPACE_OPERATION.name
    ]
    a, b = (runner.tenants[role].user_id for role in ("a", "b"))
    assert operations == [
        ("create", a),
        ("join", a),
        ("join", b),
        ("leave", b),
        ("join", b),
        ("delete", b),
    ]
    [space] = memory.spaces.values()
    assert space.deleted and space.facts == {}
    said = [
        c.arg
        for c in calls.calls
        if c.activity == contracts.CONVERSE.name and c.arg.space_id is not None
    ]
    assert {r.space_id for r in said} == {f"space-{space.name}"}
    assert {r.space_name for r in said} == {"team-fake-run-p0"}


async def test_a_space_answered_to_anyone_fails_s1_where_a_non_member_asks_inside_it(
    spaces: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(spaces, space_leak=True))
    result = await LifecycleRunner(pair_input(spaces, target), calls).run()
    # b's questions inside the space before it joined and after it left: 2 + 2. b's
    # private questions (the other 3 at space-created) are not the space's to answer.
    assert failures(calls) == Counter(
        {("S1", "space-created", "leaked"): 2, ("S1", "left", "leaked"): 2}
    )
    assert _checks(calls, "S1", "S2") == CLEAN_S - Counter(
        {("S1", "space-created", "pass"): 2, ("S1", "left", "pass"): 2}
    ) + Counter({("S1", "space-created", "fail"): 2, ("S1", "left", "fail"): 2})
    assert result.failures == 4


async def test_a_revoked_member_still_served_fails_s1_only_after_leaving(
    spaces: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(spaces, revocation_ignored=True))
    result = await LifecycleRunner(pair_input(spaces, target), calls).run()
    assert failures(calls) == Counter({("S1", "left", "leaked"): 2})
    assert result.failures == 2 and result.cases_passed == result.cases - 2


async def test_deleting_a_member_that_empties_the_space_fails_s2_for_the_one_left(
    spaces: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(spaces, member_delete_overreach=True))
    result = await LifecycleRunner(pair_input(spaces, target), calls).run()
    # b's two supplier questions after a's deletion: the fact it recalled is gone, which
    # fails its recall and, as the deletion's doing, S2.
    assert failures(calls) == Counter(
        {("S2", "member-deleted", "overreach"): 2, ("recall", "member-deleted", "missing"): 2}
    )
    assert _checks(calls, "S1", "S2")[("S2", "member-deleted", "fail")] == 2
    assert result.failures == 4


async def test_a_deleted_space_whose_facts_are_still_served_fails_as_residue(
    spaces: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(spaces, keeps_deleted=True))
    result = await LifecycleRunner(pair_input(spaces, target), calls).run()
    # Deleting a space erases its facts for everyone (I4), asked inside it afterwards.
    assert failures(calls) == Counter({("I4", "space-deleted", "residue"): 2})
    assert _checks(calls, "S1", "S2") == CLEAN_S
    assert result.failures == 2


async def test_space_operations_that_fail_leave_s_unproven_never_passed(
    spaces: Scenario, target: Target
) -> None:
    memory = MemoryTarget(spaces)
    memory.unreachable = {contracts.SPACE_OPERATION.name}
    calls = fake_calls(memory)
    runner = LifecycleRunner(pair_input(spaces, target), calls)
    result = await runner.run()
    # Each of the six operations is an inconclusive S1 at its step (create and a's join
    # at step 1), and no S check passes: with no space, nothing was stated inside one.
    assert _checks(calls, "S1", "S2") == Counter(
        {
            ("S1", "step-1", "inconclusive"): 2,
            ("S1", "step-6", "inconclusive"): 1,
            ("S1", "step-8", "inconclusive"): 1,
            ("S1", "step-12", "inconclusive"): 1,
            ("S1", "step-17", "inconclusive"): 1,
        }
    )
    assert result.failures == 0 and result.inconclusive == 6
    assert runner.verdict() == "inconclusive"
    # The writes inside the space went by its name (the create gave no id) and failed.
    said = [
        c.arg
        for c in calls.calls
        if c.activity == contracts.CONVERSE.name and c.arg.space_id is not None
    ]
    assert said and {r.space_id for r in said} == {"team-fake-run-p0"}


async def test_a_leave_whose_answer_was_lost_keeps_the_run_from_passing(
    spaces: Scenario, target: Target
) -> None:
    memory = MemoryTarget(spaces)
    memory.answer_lost = {f"{contracts.SPACE_OPERATION.name}:leave"}
    calls = fake_calls(memory)
    runner = LifecycleRunner(pair_input(spaces, target), calls)
    result = await runner.run()
    # The target did let b go, so everything checked after it passes; the leave itself
    # is unproven, and so is the run.
    assert _checks(calls, "S1", "S2") == CLEAN_S + Counter({("S1", "step-8", "inconclusive"): 1})
    assert result.failures == 0 and result.inconclusive == 1
    assert runner.verdict() == "inconclusive"
    [leave] = [
        c.arg
        for c in calls.calls
        if c.activity == contracts.SPACE_OPERATION.name and c.arg.action == "leave"
    ]
    assert isinstance(leave, SpaceRequest) and leave.space_id == "space-team-fake-run-p0"


async def test_maintenance_runs_per_tenant_and_a_clean_one_changes_nothing(
    maintenance: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(maintenance))
    runner = LifecycleRunner(pair_input(maintenance, target), calls)
    result = await runner.run()
    assert result.failures == result.inconclusive == 0 and result.cases == 43
    # reindex names {user_id}: once per tenant at each of the three maintain steps; after
    # a's deletion it still goes to the user a had.
    reindexes = [
        (c.arg.operation, c.arg.user_id)
        for c in calls.calls
        if c.activity == contracts.MAINTAIN_TARGET.name
    ]
    a, b = (runner.tenants[role].user_id for role in ("a", "b"))
    assert sorted(reindexes) == sorted([("reindex", a), ("reindex", b)] * 3)


async def test_maintenance_that_brings_erased_facts_back_fails_i4_after_it(
    maintenance: Scenario, target: Target
) -> None:
    calls = fake_calls(MemoryTarget(maintenance, resurrects=True))
    result = await LifecycleRunner(pair_input(maintenance, target), calls).run()
    # After each maintenance that follows the erasure: b's forgotten pet (2 questions)
    # and everything deleted a, registered again, is asked (employer, pet, school: 6).
    # The maintenance before any erasure has nothing to bring back.
    assert failures(calls) == Counter(
        {("I4", "maintained-after-erasure", "residue"): 8, ("I4", "after-1d", "residue"): 8}
    )
    assert result.failures == 16


async def test_maintenance_that_fails_leaves_i4_after_it_unproven(
    maintenance: Scenario, target: Target
) -> None:
    memory = MemoryTarget(maintenance, resurrects=True)
    memory.unreachable = {contracts.MAINTAIN_TARGET.name}
    calls = fake_calls(memory)
    runner = LifecycleRunner(pair_input(maintenance, target), calls)
    result = await runner.run()
    # Nothing was rebuilt, so nothing came back; but no step after maintenance is
    # proven: each failed reindex (2 tenants × 3 steps) is an inconclusive I4.
    assert _checks(calls, "I4")[("I4", "maintained", "inconclusive")] == 2
    assert (
        sum(n for (_, _, outcome), n in _checks(calls, "I4").items() if outcome == "inconclusive")
        == 6
    )
    assert result.failures == 0 and result.inconclusive == 6
    assert runner.verdict() == "inconclusive"
