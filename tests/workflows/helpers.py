from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from memlife import recorder
from memlife.contracts import (
    FRESH_TARGET_KIND,
    RunInput,
    RunMeta,
    RunSummary,
    suite_workflow_id,
)
from memlife.recorder.builder import build_artifact
from memlife.rules.clock import Clock
from memlife.rules.scenario import DeleteStep, Scenario, UpdateStep
from memlife.rules.scoring import normalize
from memlife.rules.target import Target
from memlife.stack.connection import suite_result
from memlife.workflows.suite import SuiteWorkflow

# The suite runs beside itself on shared cores: a probe may wait a second for a CPU. These
# runs check isolation, updates and deletion; the latency check (L) has its own tests
# (tests/rules/test_judge.py), so here its budget is one that load cannot break.
UNHURRIED = timedelta(seconds=60)


def run_input(
    scenario: Scenario, target: Target, clock: Clock | None = None, *, fresh: bool = False
) -> RunInput:
    """A run as `memlife run` starts it. `fresh`: the target's store holds this test's
    runs only (started for it), so the values are the seed's exactly, listed ones too,
    and nothing is claimed; else it is a service other runs may share (contracts:
    shared_target), where listed values are marked per run (rules/pairs.py:
    vary_listed)."""
    run_id = f"test-{uuid.uuid4().hex[:10]}"
    scenario = scenario.model_copy(update={"latency_budget": UNHURRIED})
    meta = RunMeta(
        memlife_version="test",
        git_revision=None,
        command="pytest",
        scenario_file="(test)",
        scenario_name=scenario.name,
        scenario_sha256=scenario.digest(),
        target_name=target.name,
        target_base_url=target.base_url,
        clock="skip",
        temporal_address="time-skipping",
        target_identity={"kind": FRESH_TARGET_KIND} if fresh else {},
    )
    return RunInput(
        run_id=run_id,
        scenario=scenario,
        target=target,
        clock=clock or Clock(mode="skip"),
        meta=meta,
    )


async def run_suite(client: Client, task_queue: str, run: RunInput) -> RunSummary:
    """Run a suite to its end: its summary, whether it passed (COMPLETED) or not (FAILED
    with its verdict)."""
    handle = await client.start_workflow(
        SuiteWorkflow.run,
        run,
        id=suite_workflow_id(run.scenario.name, run.run_id),
        task_queue=task_queue,
    )
    return await suite_result(handle)


def run_artifact(run_id: str) -> dict[str, Any]:
    """The whole artifact of a recorded run, as `memlife run --out` writes it."""
    loaded = recorder.load_run(run_id)
    assert loaded is not None
    return build_artifact(loaded).model_dump(mode="json")


def holds(texts: list[str], value: str) -> bool:
    """Whether any text holds the value, after memlife's normalization."""
    wanted = normalize(value)
    return any(wanted in normalize(text) for text in texts)


def erased_values(scenario: Scenario) -> set[tuple[str, str]]:
    """(tenant alias, value) of everything the scenario erases: every value a deleted
    tenant stated, and each forgotten fact's value as it stood when it was forgotten."""
    erased: set[tuple[str, str]] = set()
    for pair in scenario.pairs:
        updates_seen: dict[tuple[str, str], int] = {}
        for step in scenario.timeline:
            if isinstance(step, UpdateStep):
                for role in step.tenants:
                    for domain in step.domains:
                        updates_seen[role, domain] = updates_seen.get((role, domain), 0) + 1
            if not isinstance(step, DeleteStep):
                continue
            for role in step.tenants:
                tenant = pair.tenant(role)
                for domain in step.domains or list(tenant.facts):
                    fact = tenant.facts[domain]
                    if step.domains is None:  # the whole tenant: all it ever stated
                        erased.update((tenant.alias, text) for text in [fact.value, *fact.updates])
                    else:
                        seen = updates_seen.get((role, domain), 0)
                        erased.add((tenant.alias, ([fact.value, *fact.updates])[seen]))
    return erased
