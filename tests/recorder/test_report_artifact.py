"""A report built from the recorder's streamed rows (recorder.report_artifact: the digest,
the probes' latencies beside, the lists read as the report is written) is the very report
the whole artifact gives, in every format, for a run with findings of every kind it
holds. And the artifact `memlife run --out` writes from streamed rows
(recorder.artifact_chunks) is the whole artifact, byte for byte; signed as it streams
(`--sign`), it is the whole artifact with a signature block that verifies."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.recorder.artifact import json_chunks
from memlife.recorder.builder import build_artifact
from memlife.reports import FORMATS, render
from memlife.reports.signing import generate_key_pair, signed_chunks
from memlife.reports.verifying import verify_file
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from tests.workflows.helpers import run_input, run_suite


async def test_the_streamed_report_is_the_whole_artifacts_report(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    leaky_target: Target,
    tmp_path: Path,
) -> None:
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
    assert "".join(chunks) == json.dumps(
        whole.model_dump(mode="json"), indent=2, ensure_ascii=False
    )
    parts = recorder.artifact_parts(run.run_id)
    assert parts is not None
    private, public = generate_key_pair()
    signed_file = tmp_path / "signed.json"
    signed_file.write_text(
        "".join(
            signed_chunks(*parts, private, "artifact", lambda: datetime(2026, 12, 4, tzinfo=UTC))
        )
    )
    problems, block = verify_file(signed_file, public)
    assert problems == [] and block["entries"] == len(whole.observations)
    signed = json.loads(signed_file.read_text())
    assert list(signed)[-1] == "signature"
    assert {k: v for k, v in signed.items() if k != "signature"} == whole.model_dump(mode="json")
    reported = recorder.report_artifact(run.run_id)
    assert reported is not None
    streamed, samples, lists = reported
    assert streamed.observations == streamed.cases == streamed.timeline == []
    assert list(lists.cases()) == [c.model_dump(mode="json") for c in whole.cases]
    assert sorted(samples) == sorted(
        o.latency_ms for o in whole.observations if o.kind == "probe" and o.latency_ms is not None
    )
    for fmt in FORMATS:
        for redacted in (True, False):
            assert render(streamed, fmt, samples=samples, lists=lists, redacted=redacted) == (
                render(whole, fmt, redacted=redacted)
            ), (fmt, redacted)


def test_a_run_the_recorder_does_not_hold_has_no_report(db_url: str) -> None:
    assert recorder.report_artifact("20260101T000000Z-none") is None
    assert recorder.artifact_chunks("20260101T000000Z-none") is None


@pytest.mark.parametrize(
    "head, lists, tail",
    [
        ({}, [], {}),
        ({"a": 1}, [], {}),
        ({}, [("xs", [])], {}),
        ({}, [], {"signature": {"v": 1}}),
        (
            {"meta": {"name": "ñandú", "nested": [1, {"b": None}]}, "n": 1.5},
            [("empty", []), ("rows", [{"k": [1, 2]}, {"k": []}, "text"])],
            {"z": [1, {"y": "ü"}]},
        ),
    ],
)
def test_json_chunks_write_what_json_dumps_writes(head: dict, lists: list, tail: dict) -> None:
    asked: list[int] = []

    def late() -> dict:  # asked once, after the lists are written
        asked.append(len(written))
        return tail

    written: list[str] = []
    for chunk in json_chunks(head, [(name, iter(entries)) for name, entries in lists], late):
        written.append(chunk)
    assert "".join(written) == json.dumps(
        {**head, **dict(lists), **tail}, indent=2, ensure_ascii=False
    )
    closed = len(written) - len(tail) - 1  # the tail's fields, then the closing brace
    assert asked == [closed]
