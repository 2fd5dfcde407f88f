"""A report built from the recorder's streamed rows (recorder.report_artifact: no cases,
no observations, the probes' latencies beside) is the very report the whole artifact
gives, in every format, for a run with findings of every kind it holds."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from memlife import recorder
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
    for fmt in FORMATS:
        reported = recorder.report_artifact(run.run_id, cases=fmt == "junit")
        assert reported is not None
        streamed, samples = reported
        assert streamed.observations == []
        assert (streamed.cases == whole.cases) if fmt == "junit" else streamed.cases == []
        assert sorted(samples) == sorted(o.latency_ms for o in whole.observations
                                         if o.kind == "probe" and o.latency_ms is not None)
        assert render(streamed, fmt, samples=samples) == render(whole, fmt), fmt


def test_a_run_the_recorder_does_not_hold_has_no_report(db_url: str) -> None:
    assert recorder.report_artifact("20260101T000000Z-none") is None

