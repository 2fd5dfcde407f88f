"""Colliding identities (scenarios/colliding-identities.yaml): tenants named t000 and
t000-corp are kept apart by the clean reference target, and a namespaced lookup that
matches by prefix (the namespace-prefix-match fault, langchain-ai/langgraph #8478) is
caught: t000's answers carry t000-corp's values; t000-corp's never carry t000's. The two
phones of a pair differ in their last digit only."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.rules.scenario_file import load_scenario
from tests.workflows.test_detection_matrix import cells, run_nightly, target_with

__all__ = ["target_with"]  # the fixture, shared with the detection matrix

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "colliding-identities.yaml"
# fault -> (cells that must fail, cells that must not fail), as in test_detection_matrix.py.
DETECTION = {"namespace-prefix-match": ([("I3", "response", "baseline", "leaked")], [])}


@pytest.mark.parametrize("fault", [None, "namespace-prefix-match"])
async def test_prefix_named_tenants_are_kept_apart_and_a_prefix_match_is_caught(
    skip_env: WorkflowEnvironment, skip_worker: str, target_with, fault: str | None
) -> None:
    scenario = load_scenario(SCENARIO)
    artifact = await run_nightly(
        skip_env, skip_worker, scenario, target_with([fault] if fault else []), "collide"
    )
    phones = {t["alias"]: t["phone"] for t in artifact["tenants"]}
    assert {"t000", "t000-corp"} <= set(phones)  # the partner's name extends the tenant's
    for alias in (a for a in phones if not a.endswith("-corp")):  # and its phone, but one digit
        mine, partner = phones[alias], phones[f"{alias}-corp"]
        assert mine[:-1] == partner[:-1] and mine != partner
    if fault is None:
        assert artifact["failures"] == [] and artifact["inconclusive"] == []
        return
    must, must_not = DETECTION[fault]
    found = cells(artifact)
    assert all(cell in found for cell in must) and not any(c in found for c in must_not)
    leaked_to = {f["tenant"] for f in artifact["failures"] if f["invariant"] == "I3"}
    assert leaked_to and all(not alias.endswith("-corp") for alias in leaked_to)
