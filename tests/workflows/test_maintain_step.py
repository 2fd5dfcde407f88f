"""The maintain step: each named maintenance operation runs in order, per tenant when it
names one ({user_id}, {phone}) and once per pair when it names none; one the target
refuses leaves I4 after maintenance unproven (inconclusive), never a pass."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memlife.rules.scenario_file import parse_scenario
from memlife.rules.target import Operation
from tests.workflows.test_detection_matrix import run_nightly, target_with

__all__ = ["target_with"]  # the fixture, shared with the detection matrix

SCENARIO = {
    "name": "maintain-step",
    "domains": {
        "pet": {
            "canary": "pet",
            "templates": {
                "es": {
                    "statement": ["Mi mascota se llama {value}."],
                    "question": ["¿Cómo se llama mi mascota?"],
                }
            },
        }
    },
    "generate": {"count": 2},
    "timeline": [
        {"step": "write"},
        {"step": "wait", "duration": "150ms"},
        {
            "step": "maintain",
            "label": "both",
            "operations": ["reindex", "health"],
            "tenants": ["a", "b"],
        },
        {"step": "maintain", "label": "refused", "operations": ["broken"]},
        {"step": "probe", "label": "after"},
    ],
}


async def test_maintenance_runs_per_tenant_or_once_and_a_refusal_is_inconclusive(
    skip_env: WorkflowEnvironment, skip_worker: str, target_with, tmp_path: Path
) -> None:
    target = target_with([])
    maintain = {
        "reindex": target.operations.maintain["reindex"],  # names {user_id}: per tenant
        "health": Operation(method="GET", path="/health"),  # names no tenant: once per pair
        "broken": Operation(method="POST", path="/admin/reindex", body={}),  # 422
    }
    target = target.model_copy(
        update={"operations": target.operations.model_copy(update={"maintain": maintain})}
    )
    artifact = await run_nightly(
        skip_env, skip_worker, parse_scenario(SCENARIO), target, "maintain"
    )
    requests = [o["request"] for o in artifact["observations"] if o["kind"] == "maintain"]
    assert sorted(requests) == sorted(["reindex"] * 4 + ["health"] * 2 + ["broken"] * 2)
    assert artifact["failures"] == []  # the recall probes after maintenance pass
    refused = artifact["inconclusive"]
    assert len(refused) == 2 and all(
        f["invariant"] == "I4"
        and f["store"] == "maintenance"
        and f["stage"] == "refused"
        and f["reason"] == "target-error"
        for f in refused
    ), refused
