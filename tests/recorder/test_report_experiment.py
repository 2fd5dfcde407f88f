"""An experiment from the recorder (recorder.report_experiment: the runs' digests, the
probes' figures pooled by the database, each run's lists read as a report is written) is
the very comparison, and the very report in every format, that the runs' whole artifacts
give. And the document `memlife run --experiment --out` writes from streamed rows
(recorder.experiment_chunks) is the whole document, byte for byte."""

from __future__ import annotations

import json

from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.recorder.builder import build_artifact
from memlife.recorder.experiment import experiment_document
from memlife.reports.experiment import render_experiment
from memlife.rules.scenario import Scenario
from memlife.rules.target import Target
from tests.workflows.helpers import run_input, run_suite


async def test_the_streamed_experiment_is_the_whole_experiment(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    leaky_target: Target,
    clean_target: Target,
) -> None:
    run_ids = []
    for configuration, repetition, target in (
        ("leaky", 1, leaky_target),
        ("clean", 1, clean_target),
        ("leaky", 2, leaky_target),
    ):
        run = run_input(seed_scenario, target)
        run = run.model_copy(
            update={
                "meta": run.meta.model_copy(
                    update={
                        "experiment": "exp-streamed",
                        "configuration": configuration,
                        "repetition": repetition,
                    }
                )
            }
        )
        await run_suite(skip_env.client, skip_worker, run)
        run_ids.append(run.run_id)
    loaded = [recorder.load_run(run_id) for run_id in run_ids]
    whole_runs = sorted(
        (build_artifact(rows) for rows in loaded if rows is not None),
        key=lambda a: (a.meta.repetition or 0, a.meta.started_at or ""),
    )
    whole = experiment_document("exp-streamed", whole_runs)
    reported = recorder.report_experiment("exp-streamed")
    assert reported is not None
    streamed, lists = reported
    assert sorted(lists) == sorted(run_ids)
    assert all(run.observations == run.cases == [] for run in streamed.runs)
    # Something to compare: findings, and figures the database sorts, pools and sums.
    leaky = whole.comparison["leaky"]
    assert leaky.leaks and leaky.latency_ms.count and leaky.stages_ms and leaky.cost_per_probe
    assert leaky.latency_ms.count > whole.comparison["clean"].latency_ms.count  # pooled
    assert streamed.comparison == whole.comparison
    for fmt in ("json", "md", "html", "junit"):
        for redacted in (True, False):
            assert render_experiment(streamed, fmt, redacted=redacted, lists=lists) == (
                render_experiment(whole, fmt, redacted=redacted)
            ), (fmt, redacted)
    assert "".join(recorder.experiment_chunks(streamed)) == json.dumps(
        whole.model_dump(mode="json"), indent=2, ensure_ascii=False
    )


def test_an_experiment_the_recorder_has_no_run_of_has_no_report(db_url: str) -> None:
    assert recorder.report_experiment("no-such-experiment") is None
