"""SuiteWorkflow: one run of a scenario against a target; one child lifecycle per pair."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    import memlife.contracts as contracts
    import memlife.workflows.attributes as attributes
    from memlife.contracts import (
        VERDICT_FAILURE,
        CohortInput,
        PairInput,
        PairResult,
        RunInput,
        RunProgress,
        RunSummary,
        RunVerdicts,
        SuiteProgress,
        cohort_workflow_id,
        pair_workflow_id,
    )
    from memlife.rules.pairs import pair_tenants
    from memlife.rules.sizing import SUITE_CONTINUE_AT_EVENTS, active_cohorts
    from memlife.workflows.calls import execute
    from memlife.workflows.cohort import CohortLifecycleWorkflow
    from memlife.workflows.options import (
        PARAPHRASE_RETRY,
        PARAPHRASE_TIMEOUT,
        RECORD_RETRY,
        RECORD_TIMEOUT,
    )
    from memlife.workflows.pair import PairLifecycleWorkflow


def verdict_headline(verdict: str, summary: RunSummary, failed_pairs: list[int]) -> str:
    """One line: the verdict and its counts, as `memlife run` ends its output."""
    text = (
        f"{verdict.upper()}: {summary.cases_passed}/{summary.cases} cases passed · "
        f"{summary.failures} failure(s) · {summary.inconclusive} inconclusive"
    )
    if failed_pairs:
        text += f" · pair lifecycle(s) {', '.join(map(str, failed_pairs))} broke"
    if not summary.latency_within_target:
        text += " · latency target missed"
    return f"{text} · run {summary.run_id}"


def _verdict_details(error: ChildWorkflowError) -> object:
    """What a child that did not pass ended with (its verdict failure's first detail:
    workflows/pair.py, cohort.py), or None when the child itself broke."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.type == VERDICT_FAILURE and cause.details:
        return cause.details[0]
    return None


def _pair_verdict(error: ChildWorkflowError) -> PairResult | None:
    """The PairResult a pair that did not pass ended with, or None when its lifecycle truly
    broke."""
    details = _verdict_details(error)
    if not isinstance(details, dict):
        return None
    try:
        return PairResult.model_validate(details)
    except ValueError:  # pydantic's ValidationError: not a pair's result after all
        return None


def _cohort_verdicts(error: ChildWorkflowError, pair_count: int) -> list[PairResult | None] | None:
    """The results a cohort whose pairs did not all pass ended with, or None when the
    cohort itself broke."""
    details = _verdict_details(error)
    if not isinstance(details, list) or len(details) != pair_count:
        return None
    try:
        return [None if r is None else PairResult.model_validate(r) for r in details]
    except ValueError:  # pydantic's ValidationError: not a cohort's results after all
        return None


def _report_hint(run_id: str) -> str:
    return (
        f"Every finding is recorded: `memlife report {run_id} --format html` shows them; "
        "the Result or Failure below carries the counts."
    )


@workflow.defn(name="SuiteWorkflow")
class SuiteWorkflow:
    def __init__(self) -> None:
        self._pairs_total = 0
        self._pairs_done = 0
        self._phase = "starting"
        self._results: dict[int, PairResult | None] = {}
        self._failing_pairs: set[int] = set()
        self._children: dict[int, str] = {}
        self._cancel_reason: str | None = None
        self._run: RunInput | None = None
        self._verdict_attribute = attributes.RUNNING
        self._final_verdict: str | None = None
        # What the suite's earlier Temporal runs found, when it has continued as new.
        self._carried: SuiteProgress | None = None

    @workflow.query
    def progress(self) -> RunProgress:
        return RunProgress(
            phase=self._phase,
            pairs=self._pairs_total,
            pairs_done=self._pairs_done,
            cohort_size=self._run.cohort_size if self._run else 0,
            run_id=self._run.run_id if self._run else None,
            cancelled=self._cancel_reason,
        )

    @workflow.query
    def verdicts(self) -> RunVerdicts:
        """Per finished pair: cases, passes, failures; and which pairs have failed so far."""
        done = {index: result for index, result in self._results.items() if result}
        return RunVerdicts(
            verdict=self._verdict(),
            pairs_failing=sorted(self._failing_pairs),
            pairs_broken=self._broken_pairs(),
            **self._counts(),
            # Those of this Temporal run: the suite's earlier runs carried only counts.
            pairs={str(i): r for i, r in sorted(done.items())},
        )

    _COUNTS = ("cases", "cases_passed", "failures", "inconclusive")

    def _counts(self) -> dict[str, int]:
        """The cases and their outcomes of every pair done, in any Temporal run."""
        done = [result for result in self._results.values() if result]
        return {
            name: (getattr(self._carried, name) if self._carried else 0)
            + sum(getattr(result, name) for result in done)
            for name in self._COUNTS
        }

    def _broken_pairs(self) -> list[int]:
        """Pairs whose lifecycle workflow failed (no result), in any Temporal run."""
        return sorted(
            [
                *(self._carried.broken_pairs if self._carried else []),
                *(i for i, result in self._results.items() if result is None),
            ]
        )

    def _cancelled_pairs(self) -> list[int]:
        return sorted(
            [
                *(self._carried.cancelled_pairs if self._carried else []),
                *(i for i, result in self._results.items() if result and result.cancelled),
            ]
        )

    @workflow.signal
    def pair_failing(self, pair_index: int) -> None:
        """A pair reports its first failure at once, so the run's verdict is current."""
        if pair_index not in self._failing_pairs:
            self._failing_pairs.add(pair_index)
            self._upsert_verdict()

    @workflow.signal
    async def skip_wait(self) -> None:
        """Operator fast-forward: every pair ends its current wait now."""
        await self._broadcast("skip_wait")

    @workflow.signal
    async def cancel(self, reason: str) -> None:
        """Stop every pair at its next step boundary (or now, if waiting); the run is
        recorded as cancelled and never passes."""
        self._cancel_reason = reason or "cancelled by an operator"
        await self._broadcast("cancel", self._cancel_reason)

    async def _broadcast(self, signal: str, *args: Any) -> None:
        running = list(
            dict.fromkeys(  # a cohort serves many pairs: signal it once
                workflow_id
                for index, workflow_id in self._children.items()
                if index not in self._results
            )
        )
        for workflow_id in running:
            try:
                await workflow.get_external_workflow_handle(workflow_id).signal(signal, *args)
            except Exception as error:  # a pair that just finished cannot be signalled
                workflow.logger.info(
                    "signal %s to %s not delivered: %s", signal, workflow_id, error
                )

    @workflow.run
    async def run(self, run: RunInput) -> RunSummary:
        carried = run.progress
        if carried is None:
            run, by_reference = await self._begin(run)
            origin = workflow.now()
        else:  # continued as new: the run is recorded and its pairs materialized
            self._resume(run, carried)
            by_reference, origin = carried.by_reference, carried.clock_origin
        scenario = run.scenario
        children: list[Coroutine[Any, Any, Any]] = []
        if run.cohort_size:
            cohorts = [
                CohortInput(
                    run_id=run.run_id,
                    first_pair=first,
                    pair_count=min(run.cohort_size, self._pairs_total - first),
                    scenario=None if by_reference else scenario,
                    target=None if by_reference else run.target,
                    clock=run.clock,
                    clock_origin=origin,
                    review_queue=run.review_queue,
                    target_task_queue=run.target_task_queue,
                    search_attributes=run.search_attributes,
                )
                for first in range(0, self._pairs_total, run.cohort_size)
            ]
            if carried is not None or workflow.patched("suite-continue-as-new"):
                window = active_cohorts(run.cohort_size, run.max_active_pairs, len(cohorts))
                next_cohort = await self._cohorts_until_full(
                    run, cohorts, carried.next_cohort if carried else 0, window
                )
                if next_cohort < len(cohorts):
                    # Signal handlers (skip_wait, cancel) finish before the history closes.
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(
                        run.model_copy(
                            update={"progress": self._progress(next_cohort, origin, by_reference)}
                        )
                    )
            else:
                # Waves: a run started before the window existed keeps starting every
                # cohort at once when replayed.
                window = (
                    active_cohorts(run.cohort_size, run.max_active_pairs, len(cohorts))
                    if workflow.patched("cohort-window")
                    else len(cohorts)
                )
                slots = asyncio.Semaphore(window)
                children += [self._cohort_in_turn(slots, cohort) for cohort in cohorts]
        for index, pair in enumerate([] if run.cohort_size else scenario.pairs):
            tenants = pair_tenants(run.run_id, index, pair, scenario)
            pair_input = PairInput(
                run_id=run.run_id,
                pair_index=index,
                scenario=scenario.model_copy(update={"pairs": [pair]}),
                target=run.target,
                clock=run.clock,
                clock_origin=origin,
                tenants=tenants,
                search_attributes=run.search_attributes,
                review_queue=run.review_queue,
                target_task_queue=run.target_task_queue,
            )
            children.append(self._pair(pair_input))
        await asyncio.gather(*children)
        # Every pair's result is in _results (this Temporal run's) or carried over.
        failed_pairs, cancelled = self._broken_pairs(), self._cancelled_pairs()
        if run.review_queue and run.paraphrases and workflow.patched("paraphrase-candidates"):
            self._set_phase("paraphrases")
            await execute(
                contracts.QUEUE_PARAPHRASES,
                (run.run_id, run.review_queue),
                start_to_close_timeout=PARAPHRASE_TIMEOUT,
                retry_policy=PARAPHRASE_RETRY,
                summary="queue paraphrase candidates",
            )
        self._set_phase("summarizing")
        # The cancelled pairs only when there are some: as runs before them sent it.
        finish_args: tuple[str, list[int]] | tuple[str, list[int], list[int]] = (
            (run.run_id, failed_pairs, cancelled) if cancelled else (run.run_id, failed_pairs)
        )
        summary = await execute(
            contracts.FINISH_RUN,
            finish_args,
            start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY,
            summary="summarize run",
        )
        self._phase = "done"
        final = (
            attributes.CANCELLED
            if cancelled or self._cancel_reason
            else attributes.PASS
            if summary.passed
            else attributes.FAIL
            if summary.failures or failed_pairs
            else attributes.INCONCLUSIVE
        )
        self._final_verdict = final
        self._upsert(attributes.PHASE.value_set("done"), attributes.VERDICT.value_set(final))
        headline = verdict_headline(final, summary, failed_pairs)
        workflow.set_current_details(f"**{headline}**\n\n" + _report_hint(run.run_id))
        # A run that did not pass ends FAILED, so the Web UI's list and its Failures view
        # show it at a glance; the failure carries the summary (memlife reads it as the
        # run's result). Runs started before this ended COMPLETED whatever their verdict.
        if final != attributes.PASS and workflow.patched("verdict-as-status"):
            raise ApplicationError(
                headline, summary.model_dump(mode="json"), type=VERDICT_FAILURE, non_retryable=True
            )
        return summary

    async def _begin(self, run: RunInput) -> tuple[RunInput, bool]:
        """A run's first steps: its id (a scheduled run), its record, its pairs. Returns
        the run and whether cohorts read the scenario and target from the recorder."""
        if workflow.patched("one-preparation"):
            return await self._prepare(run)
        # Runs started before preparation was one activity: as they were recorded.
        if not run.run_id:  # started by a schedule: a fresh run every time
            start = workflow.info().start_time
            run_id = start.strftime("%Y%m%dT%H%M%SZ") + "-" + workflow.uuid4().hex[:6]
            workflow_id = workflow.info().workflow_id
            if workflow.patched("scheduled-run-id"):
                # memlife/<scenario>/<run>, as every run's id: the schedule names the run
                # (schedules.py), and its pairs' ids nest under the suite's.
                run_id = workflow_id.split("/", 2)[-1]
            run = await execute(
                contracts.PREPARE_SCHEDULED_RUN,
                (run, run_id),
                start_to_close_timeout=RECORD_TIMEOUT,
                retry_policy=RECORD_RETRY,
                summary="prepare scheduled run",
            )
        self._run = run
        scenario = run.scenario
        self._pairs_total = len(scenario.pairs)
        self._upsert(
            attributes.RUN.value_set(run.run_id),
            attributes.SCENARIO.value_set(scenario.name),
            attributes.TARGET.value_set(run.target.name),
        )
        await execute(
            contracts.RECORD_RUN_STARTED,
            run,
            start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY,
            summary="record run",
        )
        # Cohorts read the scenario and the target from the recorder, where materializing
        # the pairs puts them, rather than each carrying both in its input (contracts.py).
        by_reference = bool(run.cohort_size) and workflow.patched("cohort-by-reference")
        if run.cohort_size:
            self._pairs_total = await execute(
                contracts.MATERIALIZE_PAIRS,
                (run.run_id, scenario, run.seed or run.run_id, run.target)
                if by_reference
                else (run.run_id, scenario, run.seed or run.run_id),
                start_to_close_timeout=RECORD_TIMEOUT * 5,
                retry_policy=RECORD_RETRY,
                summary="materialize pairs",
            )
        self._set_phase("lifecycles")
        return run, by_reference

    async def _prepare(self, run: RunInput) -> tuple[RunInput, bool]:
        """One activity prepares every run, however it was started (activities/record.py:
        prepare_run): its record, its pairs, its values claimed. A scheduled run gets its
        id from the schedule's workflow id (memlife/<scenario>/<run>: schedules.py), and
        that id is its canary seed: fresh tenants every time."""
        if not run.run_id:  # a schedule's target is a service: even listed values are drawn
            run_id = workflow.info().workflow_id.split("/", 2)[-1]
            meta = run.meta.model_copy(update={"canary_seed": run_id})
            run = run.model_copy(update={"run_id": run_id, "seed": run_id, "meta": meta})
        self._run = run
        self._upsert(
            attributes.RUN.value_set(run.run_id),
            attributes.SCENARIO.value_set(run.scenario.name),
            attributes.TARGET.value_set(run.target.name),
        )
        prepared = await execute(
            contracts.PREPARE_RUN,
            run,
            start_to_close_timeout=RECORD_TIMEOUT * 5,
            retry_policy=RECORD_RETRY,
            summary="prepare run",
        )
        self._run, self._pairs_total = prepared.run, prepared.pairs
        self._set_phase("lifecycles")
        # Cohorts read the scenario and the target from the recorder (load_cohort).
        return prepared.run, bool(run.cohort_size)

    def _resume(self, run: RunInput, carried: SuiteProgress) -> None:
        """Take up a run where the suite's previous Temporal run left it; its search
        attributes came along (continue_as_new keeps them)."""
        self._run, self._carried = run, carried
        self._pairs_total, self._pairs_done = carried.pairs_total, carried.pairs_done
        self._failing_pairs = set(carried.failing_pairs)
        self._cancel_reason = carried.cancel_reason
        self._phase = "lifecycles"
        self._verdict_attribute = self._verdict()

    def _history_full(self, run: RunInput) -> bool:
        info = workflow.info()
        return (
            info.get_current_history_length()
            >= (run.continue_at_events or SUITE_CONTINUE_AT_EVENTS)
            or info.is_continue_as_new_suggested()
        )

    async def _cohorts_until_full(
        self, run: RunInput, cohorts: list[CohortInput], first: int, window: int
    ) -> int:
        """Start cohorts from `first` on, `window` at a time, until all have started or
        the suite's history is long enough to continue as new; wait for those started.
        Returns the first cohort not started. The window drains before the suite continues
        (a child cannot move to the next run): in a run's waves, cohorts started together
        end about together, so little is lost."""
        started: list[asyncio.Task[list[PairResult | None]]] = []
        running: set[asyncio.Task[list[PairResult | None]]] = set()
        index = first
        while index < len(cohorts):
            await workflow.wait_condition(lambda: len(running) < window)
            if index > first and self._history_full(run):
                break
            task = asyncio.create_task(self._cohort_or_cancelled(cohorts[index]))
            started.append(task)
            running.add(task)
            task.add_done_callback(running.discard)
            index += 1
        # A cohort that raised (a bug, not a failed child) fails the workflow task, as the
        # gathered cohorts did before: never a run summarized without its pairs.
        await asyncio.gather(*started)
        return index

    def _progress(self, next_cohort: int, origin: datetime, by_reference: bool) -> SuiteProgress:
        """What the next Temporal run of this suite carries: everything found so far."""
        return SuiteProgress(
            next_cohort=next_cohort,
            clock_origin=origin,
            pairs_total=self._pairs_total,
            pairs_done=self._pairs_done,
            by_reference=by_reference,
            **self._counts(),
            failing_pairs=sorted(self._failing_pairs),
            broken_pairs=self._broken_pairs(),
            cancelled_pairs=self._cancelled_pairs(),
            cancel_reason=self._cancel_reason,
            continued=(self._carried.continued if self._carried else 0) + 1,
        )

    async def _pair(self, pair_input: PairInput) -> PairResult | None:
        pair = pair_input.scenario.pairs[0]
        workflow_id = pair_workflow_id(
            pair_input.scenario.name, pair_input.run_id, pair_input.pair_index
        )
        self._children[pair_input.pair_index] = workflow_id
        result: PairResult | None = None
        try:
            result = await workflow.execute_child_workflow(
                PairLifecycleWorkflow.run,
                pair_input,
                id=workflow_id,
                static_summary=f"pair {pair_input.pair_index}: {pair.a.alias} / {pair.b.alias}",
            )
            return result
        except ChildWorkflowError as error:
            # A pair that did not pass ends FAILED with its verdict, its result the
            # failure's details (workflows/pair.py): read as the result it is.
            verdict = _pair_verdict(error)
            if verdict is not None and workflow.patched("pair-verdict-as-status"):
                result = verdict
                return result
            # The run is marked incomplete and fails closed; the error is in the pair's history.
            workflow.logger.error("pair lifecycle failed: %s", error)
            return None
        finally:
            self._results[pair_input.pair_index] = result
            self._pairs_done += 1
            if result is None or result.failures:
                self._failing_pairs.add(pair_input.pair_index)
            self._upsert_verdict()

    async def _cohort_in_turn(
        self, slots: asyncio.Semaphore, cohort: CohortInput
    ) -> list[PairResult | None]:
        async with slots:
            return await self._cohort_or_cancelled(cohort)

    async def _cohort_or_cancelled(self, cohort: CohortInput) -> list[PairResult | None]:
        if self._cancel_reason:  # cancelled before its turn: it never starts
            results: list[PairResult | None] = [
                PairResult(
                    pair_index=cohort.first_pair + offset,
                    cases=0,
                    cases_passed=0,
                    inconclusive=0,
                    failures=0,
                    cancelled=True,
                )
                for offset in range(cohort.pair_count)
            ]
            for result in results:
                assert result is not None
                self._results[result.pair_index] = result
                self._pairs_done += 1
            return results
        return await self._cohort(cohort)

    async def _cohort(self, cohort: CohortInput) -> list[PairResult | None]:
        last = cohort.first_pair + cohort.pair_count - 1
        assert self._run is not None
        workflow_id = cohort_workflow_id(self._run.scenario.name, cohort.run_id, cohort.first_pair)
        indexes = range(cohort.first_pair, last + 1)
        for index in indexes:
            self._children[index] = workflow_id
        results: list[PairResult | None] = [None] * cohort.pair_count
        try:
            results = await workflow.execute_child_workflow(
                CohortLifecycleWorkflow.run,
                cohort,
                id=workflow_id,
                static_summary=f"pairs {cohort.first_pair}–{last}",
            )
            return results
        except ChildWorkflowError as error:
            # A cohort whose pairs did not all pass ends FAILED with its results as the
            # failure's details (workflows/cohort.py): read as the results they are.
            verdicts = _cohort_verdicts(error, cohort.pair_count)
            if verdicts is not None and workflow.patched("cohort-verdict-as-status"):
                results = verdicts
                return results
            workflow.logger.error("cohort lifecycle failed: %s", error)
            return results
        finally:
            for index, result in zip(indexes, results, strict=True):
                self._results[index] = result
                self._pairs_done += 1
                if result is None or result.failures:
                    self._failing_pairs.add(index)
            self._upsert_verdict()

    def _verdict(self) -> str:
        if self._final_verdict:
            return self._final_verdict
        if self._cancel_reason:
            return attributes.CANCELLED
        if self._failing_pairs:
            return attributes.FAIL
        return attributes.RUNNING

    def _upsert_verdict(self) -> None:
        verdict = self._verdict()
        if verdict != self._verdict_attribute:
            self._verdict_attribute = verdict
            self._upsert(attributes.VERDICT.value_set(verdict))

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        self._upsert(attributes.PHASE.value_set(phase))

    def _upsert(self, *updates: Any) -> None:
        """Only when the cluster has memlife's attributes (input flag): older histories and
        the time-skipping server never see these commands."""
        if self._run is not None and self._run.search_attributes:
            workflow.upsert_search_attributes(list(updates))
