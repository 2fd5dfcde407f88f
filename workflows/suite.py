"""SuiteWorkflow: one run of a scenario against a target; one child lifecycle per pair."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from activities.record import finish_run, record_run_started
    from memlife.lifecycle import (
        PairInput,
        PairResult,
        RunInput,
        RunSummary,
        TenantIdentity,
        pair_workflow_id,
    )
    from memlife.phones import synthetic_phone
    from workflows.options import RECORD_RETRY, RECORD_TIMEOUT
    from workflows.pair_lifecycle import PairLifecycleWorkflow


@workflow.defn(name="SuiteWorkflow")
class SuiteWorkflow:
    def __init__(self) -> None:
        self._pairs_total = 0
        self._pairs_done = 0
        self._phase = "starting"

    @workflow.query
    def progress(self) -> dict[str, Any]:
        return {"phase": self._phase, "pairs": self._pairs_total,
                "pairs_done": self._pairs_done}

    @workflow.run
    async def run(self, run: RunInput) -> RunSummary:
        scenario = run.scenario
        self._pairs_total = len(scenario.pairs)
        await workflow.execute_activity(
            record_run_started, run, start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY, summary="record run",
        )
        self._phase = "lifecycles"
        origin = workflow.now()
        children = []
        for index, pair in enumerate(scenario.pairs):
            tenants = [
                TenantIdentity(role=role, alias=pair.tenant(role).alias,
                               phone=synthetic_phone(run.run_id, 2 * index + offset),
                               language=scenario.language_of(pair.tenant(role)))
                for offset, role in enumerate(("a", "b"))
            ]
            pair_input = PairInput(
                run_id=run.run_id, pair_index=index,
                scenario=scenario.model_copy(update={"pairs": [pair]}),
                target=run.target, clock=run.clock, clock_origin=origin, tenants=tenants,
            )
            children.append(self._pair(pair_input))
        results = await asyncio.gather(*children)
        failed_pairs = [index for index, result in enumerate(results) if result is None]
        self._phase = "summarizing"
        summary = await workflow.execute_activity(
            finish_run, args=[run.run_id, failed_pairs], start_to_close_timeout=RECORD_TIMEOUT,
            retry_policy=RECORD_RETRY, summary="summarize run",
        )
        self._phase = "done"
        return summary

    async def _pair(self, pair_input: PairInput) -> PairResult | None:
        pair = pair_input.scenario.pairs[0]
        try:
            return await workflow.execute_child_workflow(
                PairLifecycleWorkflow.run, pair_input,
                id=pair_workflow_id(pair_input.scenario.name, pair_input.run_id,
                                    pair_input.pair_index),
                static_summary=f"pair {pair_input.pair_index}: {pair.a.alias} / {pair.b.alias}",
            )
        except ChildWorkflowError as error:
            # The run is marked incomplete and fails closed; the error is in the pair's history.
            workflow.logger.error("pair lifecycle failed: %s", error)
            return None
        finally:
            self._pairs_done += 1
