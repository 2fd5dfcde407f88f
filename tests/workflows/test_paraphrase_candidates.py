"""A run asked for paraphrase candidates looks for them before it is summarized
(workflows/suite.py, activities/paraphrase.py, the real local model) and records how many:
on the clean reference target, none."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.recorder.builder import build_artifact
from memlife.rules.pairs import materialize
from memlife.rules.scenario import Scenario
from tests.groups import MINILM
from tests.workflows.helpers import run_input, run_suite
from tests.workflows.test_detection_matrix import nightly_small, target_with

__all__ = ["nightly_small", "target_with"]  # the fixtures, shared with the detection matrix


@MINILM
async def test_a_clean_run_queues_no_paraphrase_candidate_and_says_so(
    skip_env: WorkflowEnvironment, skip_worker: str, nightly_small: Scenario, target_with
) -> None:
    run = run_input(materialize(nightly_small, "paraphrases"), target_with([])).model_copy(
        update={"review_queue": "paraphrase-test", "paraphrases": True}
    )
    await run_suite(skip_env.client, skip_worker, run)
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    artifact = build_artifact(loaded)
    assert artifact.meta.paraphrase_candidates == 0
    assert artifact.summary.passed
