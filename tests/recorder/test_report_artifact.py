"""A report built from the recorder's streamed rows (recorder.report_artifact: the digest,
the probes' latencies beside, the lists read as the report is written) is the very report
the whole artifact gives, in every format, for a run with findings of every kind it
holds. And the artifact `memlife run --out` writes from streamed rows
(recorder.artifact_chunks) is the whole artifact, byte for byte."""

from __future__ import annotations

import json

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.recorder.artifact import json_chunks
from memlife.recorder.builder import build_artifact
from memlife.reports import FORMATS, render
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from tests.workflows.helpers import run_input, run_suite


async def test_the_streamed_report_is_the_whole_artifacts_report(
        skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario,
        leaky_target: Target) -> None:
    run = run_input(seed_scenario, leaky_target)
    await run_suite(skip_env.client, skip_worker, run)
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    whole = build_artifact(loaded)
    assert whole.failures and whole.observations  # something to show, and to leave out
    # Figures the streamed digest has the database sort and sum: there are some to compare.
    assert whole.latency_ms.count and whole.latency_ms.stages and whole.cost
    chunks = recorder.artifact_chunks(run.run_id)
    assert chunks is not None
    assert "".join(chunks) == json.dumps(whole.model_dump(mode="json"), indent=2,
                                         ensure_ascii=False)
    reported = recorder.report_artifact(run.run_id)
    assert reported is not None
    streamed, samples, lists = reported
    assert streamed.observations == streamed.cases == streamed.timeline == []
    assert list(lists.cases()) == [c.model_dump(mode="json") for c in whole.cases]
    assert sorted(samples) == sorted(o.latency_ms for o in whole.observations
                                     if o.kind == "probe" and o.latency_ms is not None)
    for fmt in FORMATS:
        for redacted in (True, False):
            assert render(streamed, fmt, samples=samples, lists=lists, redacted=redacted) == (
                render(whole, fmt, redacted=redacted)), (fmt, redacted)


def test_a_run_the_recorder_does_not_hold_has_no_report(db_url: str) -> None:
    assert recorder.report_artifact("20260101T000000Z-none") is None
    assert recorder.artifact_chunks("20260101T000000Z-none") is None


@pytest.mark.parametrize("head, lists", [
    ({}, []),
    ({"a": 1}, []),
    ({}, [("xs", [])]),
    ({"meta": {"name": "ñandú", "nested": [1, {"b": None}]}, "n": 1.5},
     [("empty", []), ("rows", [{"k": [1, 2]}, {"k": []}, "text"])]),
])
def test_json_chunks_write_what_json_dumps_writes(head: dict, lists: list) -> None:
    written = "".join(json_chunks(head, [(name, iter(entries)) for name, entries in lists]))
    assert written == json.dumps({**head, **dict(lists)}, indent=2, ensure_ascii=False)

