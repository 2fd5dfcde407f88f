"""OpenTelemetry, when asked for: a worker's workflows, activities and target requests are
spans of one tracer, each request's traceparent is its span's (a child of the activity
that sent it), and the observations record those ids (stack/telemetry.py)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.rules.scenario import Scenario
from memlife.stack import embedded, telemetry
from memlife.stack.worker import build_worker
from memlife.targets import http
from tests.workflows.helpers import run_artifact, run_input, run_suite


def test_only_the_otel_environment_turns_it_on() -> None:
    assert not telemetry.requested({})
    assert telemetry.requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert telemetry.requested({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"})
    assert telemetry.requested({"OTEL_TRACES_EXPORTER": "otlp"})
    assert not telemetry.requested(
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    )
    assert not telemetry.requested(
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    )


async def test_workflow_activity_and_request_spans_make_one_trace(
    skip_env: WorkflowEnvironment, db_url: str, seed_scenario: Scenario, tmp_path: Path
) -> None:
    exporter = InMemorySpanExporter()
    provider = telemetry.provider_with(exporter)
    task_queue = f"otel-{uuid.uuid4().hex[:8]}"
    try:
        with (
            embedded.reference_target(tmp_path) as process,
            ThreadPoolExecutor(max_workers=8) as executor,
        ):
            async with build_worker(
                skip_env.client, task_queue, executor, tracer=provider.get_tracer("memlife")
            ):
                run = run_input(seed_scenario, reference_target(process.base_url))
                await run_suite(skip_env.client, task_queue, run)
    finally:
        http.trace_requests_with(None)  # the next worker of this process traces nothing
    provider.force_flush()
    spans = exporter.get_finished_spans()
    names = {span.name for span in spans}
    assert "RunWorkflow:SuiteWorkflow" in names and "RunWorkflow:PairLifecycleWorkflow" in names
    assert any(name.startswith("RunActivity:memlife.") for name in names), names
    requests = {
        f"{span.context.trace_id:032x}{span.context.span_id:016x}": span
        for span in spans
        if span.name.startswith("target ")
    }
    by_span_id = {span.context.span_id: span for span in spans}
    observations = run_artifact(run.run_id)["observations"]
    assert observations
    for observation in observations:
        request = requests[observation["trace_id"] + observation["span_id"]]
        parent = by_span_id[request.parent.span_id]  # the activity that sent it
        assert parent.name.startswith("RunActivity:"), parent.name
    # The pair's activities are in the run's trace: one trace from start to the requests.
    assert len({observation["trace_id"] for observation in observations}) == 1
