"""The detection matrix in English: lifecycle-nightly-en.yaml (English tenants, values and
questions) is clean on the clean reference target and catches each fault in the same
invariant, store and stage as the Spanish nightly (tests/workflows/test_detection_matrix.py).
One generated pair and one cohort per run keep it cheap: the cells are per pair."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from tests.workflows.test_detection_matrix import DETECTION, cells, run_nightly, target_with

__all__ = ["target_with"]  # the fixture, shared with the Spanish matrix

NIGHTLY_EN = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly-en.yaml"


@pytest.fixture(scope="module")
def nightly_en() -> Scenario:
    scenario = load_scenario(NIGHTLY_EN)
    assert scenario.language == "en" and scenario.generate is not None
    return scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": 1})}
    )


@pytest.mark.parametrize("fault", [None, *sorted(DETECTION)])
async def test_the_english_nightly_catches_what_the_spanish_one_does(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    nightly_en: Scenario,
    target_with,
    fault: str | None,
) -> None:
    artifact = await run_nightly(
        skip_env,
        skip_worker,
        nightly_en,
        target_with([fault] if fault else []),
        f"en-{fault}",
        cohort=True,
    )
    replies = [o["reply"] or "" for o in artifact["observations"] if o["kind"] == "probe"]
    assert any(reply.startswith("From what you told me") for reply in replies)  # English
    if fault is None:
        assert artifact["failures"] == [] and artifact["inconclusive"] == []
        assert artifact["summary"]["passed"]
        return
    found = cells(artifact)
    must, must_not = DETECTION[fault]
    for cell in must:
        assert cell in found, f"{fault}: expected {cell}, found {sorted(found)}"
    for cell in must_not:
        assert cell not in found, f"{fault}: {cell} should hold, found {sorted(found)}"
