"""CohortLifecycleWorkflow: many pairs through the timeline in one workflow, for scale.

Each pair runs the very same lifecycle as PairLifecycleWorkflow (lifecycle.py), but its
calls go through the cohort's Batcher (batching.py): the dev server's activity rate stops
being the ceiling; the target and the recorder are. What a pair decides, judges and
records is the same as alone.

The pairs themselves are read from the recorder (materialized there by the suite), so
neither the run's input nor any history carries ten thousand pairs at once.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    import memlife.workflows.attributes as attributes
    from memlife.contracts import (
        VERDICT_FAILURE,
        CohortInput,
        PairInput,
        PairProgress,
        PairResult,
        PairVerdicts,
    )
    from memlife.rules.pairs import pair_tenants
    from memlife.workflows.batching import Batcher, SharedTimers
    from memlife.workflows.calls import BatchItemError, execute
    from memlife.workflows.lifecycle import LifecycleRunner, Observer, tell_run_failing
    from memlife.workflows.options import RECORD_RETRY, RECORD_TIMEOUT


class _VerdictAsItGoes(Observer):
    """On a cluster with memlife's search attributes, a cohort's verdict turns as its pairs
    tally, and each pair's first failure reaches the run at once, as a pair alone does
    (workflows/pair.py: _ShownInTheWebUI): the run reads fail days before the cohort ends."""

    def __init__(self) -> None:
        self.verdict = attributes.RUNNING
        self.failing: set[int] = set()

    async def tallied(self, runner: LifecycleRunner) -> None:
        index = runner.input.pair_index
        if runner.inconclusive and self.verdict == attributes.RUNNING:
            self.verdict = attributes.INCONCLUSIVE
            workflow.upsert_search_attributes([attributes.VERDICT.value_set(self.verdict)])
        if not runner.failures or index in self.failing:
            return
        self.failing.add(index)
        if self.verdict != attributes.FAIL:
            self.verdict = attributes.FAIL
            workflow.upsert_search_attributes([attributes.VERDICT.value_set(self.verdict)])
        await tell_run_failing(index)


# Verdicts in a pair's own order of precedence (workflows/pair.py).
_PRECEDENCE = (attributes.CANCELLED, attributes.FAIL, attributes.INCONCLUSIVE, attributes.PASS)


def _pair_verdict(result: PairResult | None) -> str:
    """A pair's verdict from its result; a pair whose lifecycle broke (None) fails."""
    if result is None:
        return attributes.FAIL
    if result.cancelled:
        return attributes.CANCELLED
    if result.failures:
        return attributes.FAIL
    if result.inconclusive or result.cases_passed < result.cases:
        return attributes.INCONCLUSIVE
    return attributes.PASS


def cohort_verdict(results: list[PairResult | None]) -> str:
    """The cohort's verdict: its pairs' verdict that comes first in a pair's own order."""
    return min((_pair_verdict(r) for r in results), key=_PRECEDENCE.index, default=attributes.PASS)


def cohort_headline(verdict: str, results: list[PairResult | None], cohort: CohortInput) -> str:
    """One line: the cohort's verdict and its pairs' counts."""
    done = [r for r in results if r is not None]
    passing = sum(1 for r in done if _pair_verdict(r) == attributes.PASS)
    last = cohort.first_pair + cohort.pair_count - 1
    return (
        f"{verdict.upper()}: {passing}/{len(results)} pair(s) passed · "
        f"{sum(r.failures for r in done)} failure(s) · "
        f"{sum(r.inconclusive for r in done)} inconclusive · "
        f"{len(results) - len(done)} broken · pairs {cohort.first_pair}–{last} of run "
        f"{cohort.run_id}"
    )


@workflow.defn(name="CohortLifecycleWorkflow")
class CohortLifecycleWorkflow:
    def __init__(self) -> None:
        self._pairs: list[LifecycleRunner] = []
        self._first_pair = 0
        self._timers = SharedTimers()

    @workflow.query
    def progress(self) -> dict[str, PairProgress]:
        """Every pair's progress, by pair index."""
        return {str(self._first_pair + i): pair.progress() for i, pair in enumerate(self._pairs)}

    @workflow.query
    def verdicts(self) -> dict[str, PairVerdicts]:
        return {str(self._first_pair + i): pair.verdicts() for i, pair in enumerate(self._pairs)}

    @workflow.signal
    def skip_wait(self) -> None:
        """Operator fast-forward: every pair's current wait ends now."""
        self._timers.skip()

    @workflow.signal
    def cancel(self, reason: str) -> None:
        for pair in self._pairs:
            pair.cancel_reason = reason or "cancelled by an operator"
        self._timers.cancelled = True

    @workflow.run
    async def run(self, cohort: CohortInput) -> list[PairResult | None]:
        self._first_pair = cohort.first_pair
        last = cohort.first_pair + cohort.pair_count - 1
        if cohort.scenario is None or cohort.target is None:  # by reference (contracts.py)
            setup = await execute(
                contracts.LOAD_COHORT,
                (cohort.run_id, cohort.first_pair, cohort.pair_count),
                start_to_close_timeout=RECORD_TIMEOUT,
                retry_policy=RECORD_RETRY,
                summary=f"load pairs {cohort.first_pair}–{last}",
            )
            scenario, target, pairs = setup.scenario, setup.target, setup.pairs
        else:
            scenario, target = cohort.scenario, cohort.target
            pairs = await execute(
                contracts.LOAD_PAIRS,
                (cohort.run_id, cohort.first_pair, cohort.pair_count),
                start_to_close_timeout=RECORD_TIMEOUT,
                retry_policy=RECORD_RETRY,
                summary=f"load pairs {cohort.first_pair}–{last}",
            )
        if cohort.search_attributes:  # never in cohorts started before the flag existed
            workflow.upsert_search_attributes(
                [
                    attributes.RUN.value_set(cohort.run_id),
                    attributes.SCENARIO.value_set(scenario.name),
                    attributes.TARGET.value_set(target.name),
                    attributes.PHASE.value_set("running"),
                    attributes.VERDICT.value_set(attributes.RUNNING),
                ]
            )
        batcher = Batcher(cohort, target, self._timers)
        observer = _VerdictAsItGoes() if cohort.search_attributes else None
        for offset, pair in enumerate(pairs):
            index = cohort.first_pair + offset
            self._pairs.append(
                LifecycleRunner(
                    PairInput(
                        run_id=cohort.run_id,
                        pair_index=index,
                        scenario=scenario.model_copy(update={"pairs": [pair]}),
                        target=target,
                        clock=cohort.clock,
                        clock_origin=cohort.clock_origin,
                        tenants=pair_tenants(cohort.run_id, index, pair, scenario),
                        review_queue=cohort.review_queue,
                    ),
                    batcher,
                    observer,
                )
            )
        serving = asyncio.create_task(batcher.serve())
        results = await asyncio.gather(*(self._one(pair) for pair in self._pairs))
        serving.cancel()
        done = [r for r in results if r is not None]
        failing = sum(1 for r in done if r.failures)
        workflow.set_current_details(
            f"**{'FAIL' if failing or len(done) < len(results) else 'done'}**: "
            f"{len(done)}/{len(results)} pair(s) finished · {failing} with failures · "
            f"{sum(r.failures for r in done)} failure(s)"
        )
        workflow.logger.info(
            "cohort done: %d pair(s) in %d batch(es)", len(results), batcher.batches
        )
        # As a pair alone does (workflows/pair.py): a cohort whose pairs did not all pass
        # ends FAILED, its verdict the message and its results the details (the suite reads
        # them from there), without a stack trace (stack/codec.py). Cohorts started before
        # this ended COMPLETED whatever their pairs' verdicts.
        final = cohort_verdict(results)
        if cohort.search_attributes:
            workflow.upsert_search_attributes(
                [attributes.PHASE.value_set("done"), attributes.VERDICT.value_set(final)]
            )
        if final != attributes.PASS and workflow.patched("cohort-verdict-as-status"):
            raise ApplicationError(
                cohort_headline(final, results, cohort),
                [None if r is None else r.model_dump(mode="json") for r in results],
                type=VERDICT_FAILURE,
                non_retryable=True,
            )
        return list(results)

    async def _one(self, pair: LifecycleRunner) -> PairResult | None:
        try:
            return await pair.run()
        except BatchItemError as error:  # a call outside the lifecycle's own handling
            workflow.logger.error("pair %d of the cohort failed: %s", pair.input.pair_index, error)
            return None
