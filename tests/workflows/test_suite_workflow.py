"""SuiteWorkflow and PairLifecycleWorkflow on the time-skipping server, with the real
activities, the real recorder and the real reference target."""

from __future__ import annotations

import socket
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.recorder.builder import build_artifact
from memlife.rules.scenario import Scenario, WaitStep
from memlife.rules.target import Target
from tests.workflows.helpers import run_input, run_suite


async def test_seed_protocol_passes_six_of_six(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, clean_target: Target
) -> None:
    run = run_input(seed_scenario, clean_target)
    summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.passed and summary.cases == 6 and summary.cases_passed == 6
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    # Exactly the expected rows: 2 tenants; register + 3 timeline steps; 2 + 6 + 6 exchanges.
    assert len(loaded["tenants"]) == 2
    assert sorted(s.kind for s in loaded["steps"]) == ["probe", "register", "wait", "write"]
    kinds = [o.kind for o in loaded["observations"]]
    assert (kinds.count("register"), kinds.count("write"), kinds.count("probe")) == (2, 6, 6)
    assert len(loaded["verdicts"]) == 6
    phones = {t.phone for t in loaded["tenants"]}
    assert len(phones) == 2 and all(p[5:10] == "55501" for p in phones)
    artifact = build_artifact(loaded).model_dump(mode="json")
    assert artifact["summary"]["passed"]
    assert artifact["summary"]["by_invariant"]["I3"] == {
        "checked": 6,
        "failed": 0,
        "inconclusive": 0,
    }
    assert artifact["failures"] == []


async def test_cross_tenant_leak_lists_every_leak_as_I3(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, leaky_target: Target
) -> None:
    run = run_input(seed_scenario, leaky_target)
    summary = await run_suite(skip_env.client, skip_worker, run)
    assert not summary.passed
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    failures = build_artifact(loaded).model_dump(mode="json")["failures"]
    # The values the run stated: the scenario's, each marked for this run (a target other
    # runs may share: rules/pairs.py, vary_listed).
    stated = {(value.role, value.domain): value for value in loaded["values"]}
    pair = seed_scenario.pairs[0]
    assert all(
        pair.tenant(role).facts[domain].value in value.text
        for (role, domain), value in stated.items()
    )
    expected = {
        (value.alias, domain, stated["b" if role == "a" else "a", domain].text)
        for (role, domain), value in stated.items()
    }
    assert len(expected) == 6
    assert {(f["tenant"], f["domain"], f["evidence"]["value"]) for f in failures} >= expected
    assert {(f["invariant"], f["reason"], f["store"]) for f in failures} == {
        ("I3", "leaked", "response")
    }


async def test_unreachable_target_is_inconclusive_never_pass(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, clean_target: Target
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    down = clean_target.model_copy(update={"base_url": f"http://127.0.0.1:{closed}"})
    run = run_input(seed_scenario, down)
    summary = await run_suite(skip_env.client, skip_worker, run)
    assert not summary.passed and summary.cases_passed == 0
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    artifact = build_artifact(loaded).model_dump(mode="json")
    assert artifact["summary"]["cases_inconclusive"] == 6
    assert artifact["failures"] == []  # nothing is claimed either way
    assert {i["reason"] for i in artifact["inconclusive"]} == {"target-error"}
    registrations = [o for o in loaded["observations"] if o.kind == "register"]
    assert all(
        o.status == "target-error" and "TargetUnreachable" in (o.error or "") for o in registrations
    )


async def test_three_day_wait_is_durable_and_skipped(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, clean_target: Target
) -> None:
    timeline = list(seed_scenario.timeline)
    timeline[1] = WaitStep(step="wait", label="three days", duration=timedelta(days=3))
    scenario = seed_scenario.model_copy(update={"timeline": timeline})
    run = run_input(scenario, clean_target)
    summary = await run_suite(skip_env.client, skip_worker, run)
    assert summary.passed
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    writes = [o.scenario_time for o in loaded["observations"] if o.kind == "write"]
    probes = [o.scenario_time for o in loaded["observations"] if o.kind == "probe"]
    assert min(probes) - max(writes) >= timedelta(days=3)
