"""A verdict other than pass reads as failed wherever a person looks: the pair where the
checks failed ends FAILED (not only its run), each verdict failure carries its message and
its result as details and no stack trace, and the suite still counts the pair's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.exceptions import ApplicationError, ChildWorkflowError, RetryState
from temporalio.testing import WorkflowEnvironment

from memlife.contracts import VERDICT_FAILURE, PairResult, pair_workflow_id, suite_workflow_id
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from memlife.stack.codec import DATA_CONVERTER
from memlife.workflows.suite import _pair_verdict
from tests.workflows.helpers import run_input, run_suite


def _failed_event(history: WorkflowHistory) -> HistoryEvent:
    last = history.events[-1]
    assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, last
    return last


async def _details(event: HistoryEvent) -> list[Any]:
    failure = event.workflow_execution_failed_event_attributes.failure
    payloads = await DATA_CONVERTER.payload_codec.decode(  # type: ignore[union-attr]
        failure.application_failure_info.details.payloads
    )
    return DATA_CONVERTER.payload_converter.from_payloads(payloads)


async def test_a_leaking_pair_ends_failed_with_its_result_and_no_stack_trace(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, leaky_target: Target
) -> None:
    run = run_input(seed_scenario, leaky_target)
    summary = await run_suite(skip_env.client, skip_worker, run)
    # The suite read the failed pair's result from its failure: six failures, no pair
    # counted as broken.
    assert not summary.passed and (summary.cases, summary.failures) == (6, 6), summary

    client = skip_env.client
    pair_id = pair_workflow_id(seed_scenario.name, run.run_id, 0)
    pair_event = _failed_event(await client.get_workflow_handle(pair_id).fetch_history())
    failure = pair_event.workflow_execution_failed_event_attributes.failure
    assert failure.application_failure_info.type == VERDICT_FAILURE
    assert failure.application_failure_info.non_retryable
    assert failure.message == (
        f"FAIL: 0/6 cases passed · 6 failure(s) · 0 inconclusive · pair 0 of run {run.run_id}"
    )
    assert failure.stack_trace == ""
    details = await _details(pair_event)
    assert PairResult.model_validate(details[0]) == PairResult(
        pair_index=0, cases=6, cases_passed=0, inconclusive=0, failures=6
    )

    suite_id = suite_workflow_id(seed_scenario.name, run.run_id)
    suite_event = _failed_event(await client.get_workflow_handle(suite_id).fetch_history())
    failure = suite_event.workflow_execution_failed_event_attributes.failure
    assert failure.message.startswith("FAIL: 0/6 cases passed · 6 failure(s)"), failure.message
    assert "broke" not in failure.message  # the pair is failed, not broken
    assert failure.stack_trace == ""
    assert (await _details(suite_event))[0]["failures"] == 6


def test_a_pair_that_truly_broke_is_not_read_as_a_verdict() -> None:
    def child_error(cause: BaseException) -> ChildWorkflowError:
        error = ChildWorkflowError(
            "child failed",
            namespace="default",
            workflow_id="pair",
            run_id="run",
            workflow_type="PairLifecycleWorkflow",
            initiated_event_id=1,
            started_event_id=2,
            retry_state=RetryState.NON_RETRYABLE_FAILURE,
        )
        error.__cause__ = cause
        return error

    result = PairResult(pair_index=3, cases=6, cases_passed=5, inconclusive=1, failures=0)
    verdict = ApplicationError("INCONCLUSIVE", result.model_dump(mode="json"), type=VERDICT_FAILURE)
    assert _pair_verdict(child_error(verdict)) == result
    assert _pair_verdict(child_error(ApplicationError("boom", type="KeyError"))) is None
    assert _pair_verdict(child_error(ApplicationError("x", type=VERDICT_FAILURE))) is None
    assert _pair_verdict(child_error(ApplicationError("x", {"a": 1}, type=VERDICT_FAILURE))) is None


def test_only_verdict_failures_lose_their_stack_trace() -> None:
    from temporalio.api.failure.v1 import Failure

    def converted(error: Exception) -> Failure:
        try:
            raise error
        except Exception as raised:
            failure = Failure()
            DATA_CONVERTER.failure_converter.to_failure(
                raised, DATA_CONVERTER.payload_converter, failure
            )
            return failure

    verdict = converted(ApplicationError("FAIL: 0/6", {"cases": 6}, type=VERDICT_FAILURE))
    assert verdict.message == "FAIL: 0/6" and verdict.stack_trace == ""
    assert verdict.application_failure_info.details.payloads
    crash = converted(ApplicationError("boom", type="KeyError"))
    assert "test_verdict_as_status.py" in crash.stack_trace


async def test_a_deletion_check_that_fails_carries_its_receipt_and_no_stack_trace(
    skip_env: WorkflowEnvironment, skip_worker: str, tmp_path: Path
) -> None:
    from memlife.bundled.reference.target_file import reference_target
    from memlife.stack import embedded
    from tests.workflows.test_deletion_check import check_input, run_check, write_tenant

    with embedded.reference_target(tmp_path, faults=["graph-unscoped-delete"]) as process:
        target = reference_target(process.base_url)
        user_id, phone = write_tenant(target)
        check = check_input(target, user_id, phone)
        receipt = await run_check(skip_env, skip_worker, check)
    assert receipt.verdict == "fail"
    handle = skip_env.client.get_workflow_handle(f"memlife/deletion-check/{check.check_id}")
    event = _failed_event(await handle.fetch_history())
    failure = event.workflow_execution_failed_event_attributes.failure
    assert failure.message.startswith(f"FAIL: {user_id} on "), failure.message
    assert failure.stack_trace == ""
    assert (await _details(event))[0]["verdict"] == "fail"
