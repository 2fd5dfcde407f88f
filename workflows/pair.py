"""PairLifecycleWorkflow: one pair of tenants through the scenario's timeline, each call an
activity of its own and each wait a timer (calls.py: DirectCalls). Small runs get one per
pair: easy to read pair by pair in the Web UI. The lifecycle itself is lifecycle.py.

A pair that did not pass ends FAILED, as its run does (workflows/suite.py): the Web UI's
list shows the pair where the leaks were found as Failed, its verdict the failure's message
and its PairResult the failure's details, which the suite reads as the pair's result."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    import memlife.workflows.attributes as attributes
    from memlife.contracts import VERDICT_FAILURE, PairInput, PairProgress, PairResult, PairVerdicts
    from memlife.workflows.calls import DirectCalls
    from memlife.workflows.lifecycle import LifecycleRunner, Observer, tell_run_failing


class _ShownInTheWebUI(Observer):
    """A pair's own workflow shows its phase and verdict as search attributes (when the
    cluster has them) and its tallies as current details; its first failure turns the
    run's verdict to fail at once (signal to the suite)."""

    def __init__(self, search_attributes: bool) -> None:
        self.search_attributes = search_attributes
        self.verdict_attribute = attributes.RUNNING

    def step_started(self, runner: LifecycleRunner) -> None:
        if self.search_attributes:
            stage, kind = runner.stage, runner.step_kind
            workflow.upsert_search_attributes(
                [attributes.PHASE.value_set(f"{stage} ({kind})" if stage != kind else kind)]
            )

    async def tallied(self, runner: LifecycleRunner) -> None:
        show_details(runner)
        if not self.search_attributes:
            return
        current = (
            attributes.FAIL
            if runner.failures
            else attributes.INCONCLUSIVE
            if runner.inconclusive
            else attributes.RUNNING
        )
        if current == self.verdict_attribute:
            return
        self.verdict_attribute = current
        workflow.upsert_search_attributes([attributes.VERDICT.value_set(current)])
        if current == attributes.FAIL:
            await tell_run_failing(runner.input.pair_index)


def show_details(runner: LifecycleRunner) -> None:
    """The pair's verdict so far on its Web UI page (no history: a query answers it)."""
    workflow.set_current_details(
        f"**{runner.verdict().upper()}**: {runner.cases_passed}/{runner.cases} cases passed · "
        f"{runner.failures} failure(s) · {runner.inconclusive} inconclusive · stage "
        f"{runner.stage or '-'}"
    )


def verdict_headline(verdict: str, result: PairResult, run_id: str) -> str:
    """One line: the pair's verdict and its counts, as the run's headline reads."""
    return (
        f"{verdict.upper()}: {result.cases_passed}/{result.cases} cases passed · "
        f"{result.failures} failure(s) · {result.inconclusive} inconclusive · "
        f"pair {result.pair_index} of run {run_id}"
    )


@workflow.defn(name="PairLifecycleWorkflow")
class PairLifecycleWorkflow:
    def __init__(self) -> None:
        self._runner: LifecycleRunner | None = None
        self._calls = DirectCalls(lambda: self._cancel_reason is not None)
        self._observer = _ShownInTheWebUI(False)
        self._cancel_reason: str | None = None  # until the runner exists

    @workflow.query
    def progress(self) -> PairProgress:
        if self._runner is None:
            return PairProgress(cancelled=self._cancel_reason)
        return self._runner.progress()

    @workflow.query
    def verdicts(self) -> PairVerdicts:
        """Tallies so far and every failed or inconclusive check (the first 200)."""
        if self._runner is None:
            return PairVerdicts()
        return self._runner.verdicts()

    @workflow.signal
    def skip_wait(self) -> None:
        """Operator fast-forward: end the current wait now. Outside a wait it does nothing."""
        if self._runner is None or self._runner.wake_at is None:
            workflow.logger.info("skip_wait ignored: the lifecycle is not waiting")
            return
        self._calls.skip_requested = True

    @workflow.signal
    def cancel(self, reason: str) -> None:
        """Stop at the next step boundary (a wait ends at once); the run never passes."""
        self._cancel_reason = reason or "cancelled by an operator"
        if self._runner is not None:
            self._runner.cancel_reason = self._cancel_reason

    @workflow.run
    async def run(self, pair_input: PairInput) -> PairResult:
        self._observer = _ShownInTheWebUI(pair_input.search_attributes)
        self._calls.target_task_queue = pair_input.target_task_queue
        runner = self._runner = LifecycleRunner(pair_input, self._calls, self._observer)
        runner.cancel_reason = self._cancel_reason
        scenario = pair_input.scenario
        if pair_input.search_attributes:
            workflow.upsert_search_attributes(
                [
                    attributes.RUN.value_set(pair_input.run_id),
                    attributes.SCENARIO.value_set(scenario.name),
                    attributes.TARGET.value_set(pair_input.target.name),
                    attributes.PAIR.value_set(pair_input.pair_index),
                    attributes.TENANT.value_set([t.alias for t in pair_input.tenants]),
                    attributes.VERDICT.value_set(attributes.RUNNING),
                ]
            )
        result = await runner.run()
        show_details(runner)
        final = (
            attributes.CANCELLED
            if runner.cancel_reason
            else attributes.FAIL
            if runner.failures
            else attributes.INCONCLUSIVE
            if runner.inconclusive or runner.cases_passed < runner.cases
            else attributes.PASS
        )
        if pair_input.search_attributes:
            workflow.upsert_search_attributes(
                [attributes.PHASE.value_set(runner.step_kind), attributes.VERDICT.value_set(final)]
            )
        # As the run does (workflows/suite.py): anything but pass ends FAILED, the verdict
        # the message and the PairResult the details (the suite reads it from there), sent
        # without a stack trace (stack/codec.py: VerdictFailureConverter). Pairs started
        # before this ended COMPLETED whatever their verdict.
        if final != attributes.PASS and workflow.patched("pair-verdict-as-status"):
            raise ApplicationError(
                verdict_headline(final, result, pair_input.run_id),
                result.model_dump(mode="json"),
                type=VERDICT_FAILURE,
                non_retryable=True,
            )
        return result
