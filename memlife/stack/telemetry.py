"""OpenTelemetry, optional and off by default (docs/tracing.md).

With the standard OTEL_* environment variables asking for traces (an OTLP endpoint, or
OTEL_TRACES_EXPORTER), a worker exports its workflow and activity spans (the Temporal
SDK's TracingInterceptor) and a span per target request, through OTLP over HTTP. Each
request's `traceparent` is then its span's, a child of the activity that sent it, so
memlife's work and the service's own spans are one trace. Nothing is exported, and nothing
installed (the `otel` extra), unless asked for.
"""

from __future__ import annotations

import os
from typing import Any

from memlife.targets import http

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_provider: Any = None  # this process's, once configured
_exported = False  # shutdown() has run


def requested(environ: dict[str, str] | None = None) -> bool:
    """Whether the environment asks for traces to be exported."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter) or any(env.get(name) for name in _ENDPOINTS)


def provider_with(exporter: Any) -> Any:
    """A tracer provider whose spans go to `exporter` in batches, named by
    OTEL_SERVICE_NAME (memlife by default)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "memlife")})
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def configured_tracer() -> Any:
    """This process's tracer when the environment asks for traces, else None. Configured
    once: the `otel` extra installed if missing, spans exported with OTLP over HTTP (its
    endpoint and headers from OTEL_*); `shutdown` exports the last of them."""
    global _provider
    if _provider is None and requested():
        from memlife.stack import extras

        extras.ensure("otel", "exporting traces (OTEL_* asks for them)")
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        _provider = provider_with(OTLPSpanExporter())
        trace.set_tracer_provider(_provider)
    return None if _provider is None else _provider.get_tracer("memlife")


def shutdown() -> None:
    """Export what is still batched: memlife's commands end without atexit handlers
    (cli/__init__.py: end_process), so they call this first. Idempotent: a worker calls it
    when it stops, and again as its process ends."""
    global _exported
    if _provider is not None and not _exported:
        _exported = True
        _provider.shutdown()


def interceptors(tracer: Any) -> list[Any]:
    """The worker's interceptors for `tracer` (none without one), and target requests
    traced as its spans."""
    http.trace_requests_with(tracer)
    if tracer is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    # The client that starts a run is not traced: a run's workflow span starts its trace.
    return [TracingInterceptor(tracer, always_create_workflow_spans=True)]
