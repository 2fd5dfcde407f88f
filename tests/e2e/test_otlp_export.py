"""`memlife run` with the standard OTEL_* variables exports its spans through OTLP/HTTP to a
receiver started here: workflow and activity spans and one span per target request, whose
ids are the observations' (stack/telemetry.py). Without them it exports nothing."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI, Request, Response
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.e2e.test_memlife_run import SEED, memlife
from tests.servers import serve_in_thread


def receiver(received: list[ExportTraceServiceRequest]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/traces")
    async def traces(request: Request) -> Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.body())
        received.append(message)
        return Response(status_code=200)

    return app


def test_a_run_exports_its_spans_to_the_otlp_endpoint_it_is_given(tmp_path: Path) -> None:
    received: list[ExportTraceServiceRequest] = []
    with serve_in_thread(receiver(received)) as endpoint:
        quiet = memlife("run", str(SEED), "--clock", "skip", cwd=tmp_path)
        assert quiet.returncode == 0, quiet.stdout + quiet.stderr
        assert received == []  # not asked for: nothing exported
        run = memlife(
            "run",
            str(SEED),
            "--clock",
            "skip",
            "--out",
            "r.json",
            cwd=tmp_path,
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "memlife-nightly"},
        )
        assert run.returncode == 0, run.stdout + run.stderr
    spans = {}
    services = set()
    for message in received:
        for resource_spans in message.resource_spans:
            services |= {
                attribute.value.string_value
                for attribute in resource_spans.resource.attributes
                if attribute.key == "service.name"
            }
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    spans[span.trace_id.hex() + span.span_id.hex()] = span
    assert services == {"memlife-nightly"}
    names = {span.name for span in spans.values()}
    assert "RunWorkflow:SuiteWorkflow" in names and "RunActivity:memlife.converse" in names
    observations = json.loads((tmp_path / "r.json").read_text())["observations"]
    for observation in observations:
        span = spans[observation["trace_id"] + observation["span_id"]]
        assert span.name.startswith("target POST ") or span.name.startswith("target GET ")
