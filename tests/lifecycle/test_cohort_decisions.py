"""A cohort's batching (workflows/batching.py), run in milliseconds in plain asyncio: four
pairs of lifecycle-nightly.yaml, each the real LifecycleRunner, sharing one real Batcher
whose batch activities (TARGET_BATCH, RECORD_STEPS, RECORD_TENANT_SETS) a fake answers
with MemoryTarget and the rules' judge (fake_calls.py). What the Batcher needs of
Temporal is fake_workflow.py's, which keeps Temporal's scheduling where batching depends
on it (a condition checked only when every task is blocked; timers one per activation).
test_cohort.py keeps the real workflow under Temporal."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

from memlife import contracts
from memlife.contracts import CohortInput, ConverseRequest, PairResult, TargetBatch
from memlife.rules.clock import Clock
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from memlife.workflows.batching import Batcher, SharedTimers
from memlife.workflows.calls import BatchItemError
from memlife.workflows.lifecycle import LifecycleRunner
from tests.lifecycle.fake_calls import (
    START,
    MemoryTarget,
    batch_answers,
    fake_calls,
    pair_input,
    scenario,
    storeless_target,
)
from tests.lifecycle.fake_workflow import FakeWorkflow

PAIRS = 4
# The nightly's waits (150 ms, 1 h, 5 h, 3 d): one timer each, whatever the cohort's size.
WAITS = [timedelta(milliseconds=150), timedelta(hours=1), timedelta(hours=5), timedelta(days=3)]


@pytest.fixture(scope="module")
def nightly() -> Scenario:
    return scenario("lifecycle-nightly.yaml")


@pytest.fixture(scope="module")
def target() -> Target:
    return storeless_target()


class Cohort:
    """PAIRS (or `pairs`) lifecycles over one Batcher, as CohortLifecycleWorkflow runs
    them, on a FakeWorkflow answered by `handlers` (default: batch_answers(memory))."""

    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        memory: MemoryTarget,
        pairs: int = PAIRS,
        handlers: dict[str, Callable[[Any], Any]] | None = None,
    ) -> None:
        self.workflow = FakeWorkflow(handlers or batch_answers(memory))
        cohort = CohortInput(
            run_id="fake-run",
            first_pair=0,
            pair_count=pairs,
            clock=Clock(mode="skip"),
            clock_origin=START,
        )
        self.timers = SharedTimers(self.workflow)
        self.batcher = Batcher(cohort, target, self.timers, self.workflow)
        self.runners = [
            LifecycleRunner(pair_input(scenario, target, pair=i), self.batcher)
            for i in range(pairs)
        ]

    async def run(self) -> list[PairResult | BaseException]:
        async def main() -> list[PairResult | BaseException]:
            serving = asyncio.create_task(self.batcher.serve())
            try:
                return await asyncio.gather(
                    *(r.run() for r in self.runners), return_exceptions=True
                )
            finally:
                serving.cancel()

        return await self.workflow.run(main())

    def batches(self) -> list[tuple[str, int]]:
        """(kind, items) of every batch activity, in the order they were started."""
        found = []
        for call in self.workflow.executed:
            if call.activity == contracts.TARGET_BATCH.name:
                found.append((call.arg.kind, len(call.arg.items)))
            elif call.activity == contracts.RECORD_STEPS.name:
                found.append(("record-steps", len(call.arg)))
            else:
                assert call.activity == contracts.RECORD_TENANT_SETS.name, call.activity
                found.append(("record-tenants", len(call.arg[1])))
        return found


def _activity_error(message: str) -> ActivityError:
    error = ActivityError(
        "activity failed",
        scheduled_event_id=1,
        started_event_id=2,
        identity="fake",
        activity_type=contracts.TARGET_BATCH.name,
        activity_id="1",
        retry_state=RetryState.MAXIMUM_ATTEMPTS_REACHED,
    )
    error.__cause__ = ApplicationError(message, type="TargetUnavailable")
    return error


async def test_the_pairs_calls_leave_as_one_batch_per_kind_per_step(
    nightly: Scenario, target: Target
) -> None:
    alone = Cohort(nightly, target, MemoryTarget(nightly), pairs=1)
    cohort = Cohort(nightly, target, MemoryTarget(nightly))
    assert all(isinstance(r, PairResult) for r in await alone.run())
    results = await cohort.run()
    assert all(
        isinstance(r, PairResult)
        and r.failures == r.inconclusive == 0
        and r.cases == r.cases_passed > 50
        for r in results
    )
    # Four pairs make exactly the batches one pair makes, each four times as large.
    one = alone.batches()
    assert cohort.batches() == [(kind, items * PAIRS) for kind, items in one]
    assert len(one) == cohort.batcher.batches == 44
    # Both tenants' registrations in one batch, then their recording, then the first
    # write step's conversations (beside the registration step's recording).
    assert cohort.batches()[:4] == [
        ("register", 8),
        ("record-tenants", 4),
        ("record-steps", 4),
        ("converse", 8),
    ]
    # The same activations too: no pair ever fell a task behind the others.
    assert [c.activation for c in cohort.workflow.executed] == [
        c.activation for c in alone.workflow.executed
    ]


async def test_results_go_back_to_the_pair_that_asked(nightly: Scenario, target: Target) -> None:
    memory = MemoryTarget(nightly)
    cohort = Cohort(nightly, target, memory)
    await cohort.run()
    users = set()
    for runner in cohort.runners:
        for role in ("a", "b"):
            tenant = runner.tenants[role]
            assert tenant.user_id == f"user-{tenant.phone}"  # its own registration's answer
            users.add(tenant.user_id)
        # b lost only its pet; a was deleted and registered again (as alone, fake_calls).
        assert memory.memory[runner.tenants["a"].user_id or ""] == {}
        assert set(memory.memory[runner.tenants["b"].user_id or ""]) == {
            "employer",
            "address",
            "friend",
        }
    assert len(users) == 2 * PAIRS


@pytest.mark.parametrize("fault", ["clean", "keeps_deleted"])
async def test_the_cohorts_verdicts_are_those_of_the_same_pairs_run_alone(
    nightly: Scenario, target: Target, fault: str
) -> None:
    options = {} if fault == "clean" else {fault: True}
    cohort = Cohort(nightly, target, MemoryTarget(nightly, **options))
    await cohort.run()
    for pair, runner in enumerate(cohort.runners):
        alone = LifecycleRunner(
            pair_input(nightly, target, pair=pair), fake_calls(MemoryTarget(nightly, **options))
        )
        await alone.run()
        assert runner.verdicts() == alone.verdicts(), pair
    failures = [r.verdicts().failures for r in cohort.runners]
    assert (fault == "clean") == (failures == [0] * PAIRS) and all(
        n == failures[0] for n in failures
    )


async def test_one_pairs_failed_item_fails_only_that_pairs_call(
    nightly: Scenario, target: Target
) -> None:
    def failing_for(memory: MemoryTarget, user: str) -> MemoryTarget:
        converse = memory.converse

        def answer(request: ConverseRequest) -> Any:
            if request.user_id == user:
                raise BatchItemError("TargetUnavailable: connection refused")
            return converse(request)

        memory.converse = answer  # type: ignore[method-assign]
        return memory

    user = f"user-{pair_input(nightly, target, pair=2).tenants[0].phone}"
    cohort = Cohort(nightly, target, failing_for(MemoryTarget(nightly), user))
    results = await cohort.run()
    verdicts = [r.verdict() for r in cohort.runners]
    assert verdicts == ["pass", "pass", "inconclusive", "pass"]
    assert isinstance(results[2], PairResult) and results[2].failures == 0
    alone = LifecycleRunner(
        pair_input(nightly, target, pair=2), fake_calls(failing_for(MemoryTarget(nightly), user))
    )
    await alone.run()
    assert cohort.runners[2].verdicts() == alone.verdicts()
    assert cohort.batcher.batches == 44  # the failed items left with the others


async def test_a_whole_batch_that_fails_fails_every_item_closed(
    nightly: Scenario, target: Target
) -> None:
    memory = MemoryTarget(nightly)
    handlers = batch_answers(memory)
    answer = handlers[contracts.TARGET_BATCH.name]
    converse_batches = 0

    def failing_third_converse(batch: TargetBatch) -> Any:
        nonlocal converse_batches
        if batch.kind == "converse":
            converse_batches += 1
            if converse_batches == 3:  # update-1h: the employer updates
                raise _activity_error("target down")
        return answer(batch)

    handlers[contracts.TARGET_BATCH.name] = failing_third_converse
    cohort = Cohort(nightly, target, memory, handlers=handlers)
    results = await cohort.run()  # FakeWorkflow raises Stuck if a pair were left waiting
    assert all(
        isinstance(r, PairResult) and r.failures == 0 and r.inconclusive > 0 for r in results
    )
    assert {r.verdict() for r in cohort.runners} == {"inconclusive"}
    # Each pair's every update failed with the batch's error, none passed.
    for runner in cohort.runners:
        problems = [p for p in runner.verdicts().problems if p["outcome"] == "inconclusive"]
        assert problems and {p["reason"] for p in problems} == {"target-error"}
    [inconclusive] = {r.inconclusive for r in results if isinstance(r, PairResult)}
    assert inconclusive > 0


async def test_a_failed_recording_batch_fails_every_pair_and_leaves_none_waiting(
    nightly: Scenario, target: Target
) -> None:
    memory = MemoryTarget(nightly)
    handlers = batch_answers(memory)
    recordings = 0
    record = handlers[contracts.RECORD_STEPS.name]

    def failing_second(steps: list[Any]) -> Any:
        nonlocal recordings
        recordings += 1
        if recordings == 2:
            raise _activity_error("recorder down")
        return record(steps)

    handlers[contracts.RECORD_STEPS.name] = failing_second
    cohort = Cohort(nightly, target, memory, handlers=handlers)
    results = await cohort.run()
    # Every pair's recording was in that batch: each lifecycle fails (the cohort
    # workflow counts it as not finished), none waits forever.
    assert all(isinstance(r, BatchItemError) and "recorder down" in str(r) for r in results)


async def test_pairs_that_wait_together_share_a_timer_and_wake_together(
    nightly: Scenario, target: Target
) -> None:
    cohort = Cohort(nightly, target, MemoryTarget(nightly))
    await cohort.run()
    assert [deadline - START for deadline, _ in cohort.workflow.timers] == [
        sum(WAITS[: i + 1], timedelta()) for i in range(len(WAITS))
    ]
    assert cohort.workflow.clock - START == sum(WAITS, timedelta())
    sizes = {items for _, items in cohort.batches()}
    assert sizes <= {PAIRS, 2 * PAIRS}  # every batch holds every pair

    # Without sharing (a timer per pair), due together but fired one per activation
    # as Temporal may, the pairs drift apart and their calls leave in pieces.
    apart = Cohort(nightly, target, MemoryTarget(nightly))
    apart.batcher.sleep = (  # type: ignore[method-assign]
        lambda real, summary: SharedTimers(apart.workflow).sleep(real, summary)
    )
    await apart.run()
    assert len(apart.workflow.timers) == len(WAITS) * PAIRS
    assert apart.batcher.batches > cohort.batcher.batches
    assert min(items for _, items in apart.batches()) == 1


async def test_an_operator_skip_wakes_every_pair_with_the_time_left(
    nightly: Scenario, target: Target
) -> None:
    cohort = Cohort(nightly, target, MemoryTarget(nightly))
    wait_condition = cohort.workflow.wait_condition

    async def skipped_when_long(
        fn: Callable[[], bool],
        *,
        timeout: timedelta | None = None,
        timeout_summary: str | None = None,
    ) -> None:
        if timeout == timedelta(days=3):  # the signal comes in while the pairs wait
            asyncio.get_running_loop().call_soon(cohort.timers.skip)
        await wait_condition(fn, timeout=timeout, timeout_summary=timeout_summary)

    cohort.workflow.wait_condition = skipped_when_long  # type: ignore[method-assign]
    results = await cohort.run()
    assert all(isinstance(r, PairResult) and r.failures == 0 for r in results)
    # One shared timer ended: every pair moved scenario time on by the full 3 days.
    assert {runner.skipped for runner in cohort.runners} == {timedelta(days=3)}
    assert cohort.workflow.clock - START == sum(WAITS[:3], timedelta())
    assert len(cohort.workflow.timers) == len(WAITS)
