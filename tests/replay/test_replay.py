"""Recorded histories replay against the current workflow code (sdk-python's
test_replayer pattern): a deploy in the middle of a multi-day lifecycle must not break it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from memlife.stack.codec import DATA_CONVERTER
from memlife.stack.registry import WORKFLOWS
from memlife.stack.worker import workflow_runner

HISTORIES = sorted((Path(__file__).resolve().parents[1] / "histories").glob("*.json"))


def test_there_are_histories_of_every_workflow_type() -> None:
    types = {
        json.loads(path.read_text())["events"][0]["workflowExecutionStartedEventAttributes"][
            "workflowType"
        ]["name"]
        for path in HISTORIES
    }
    assert types == {workflow.__temporal_workflow_definition.name for workflow in WORKFLOWS}


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays_against_current_code(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    # debug_mode: no deadlock detector. On a loaded machine an activation of a large
    # cohort history once took over its 2 s (TMPRL1101), which says nothing about
    # determinism, what these tests are for; task durations are the bench's to measure
    # (bench/histories.py).
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=DATA_CONVERTER,
        workflow_runner=workflow_runner(),  # the sandbox memlife's workers run them in
        debug_mode=True,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
