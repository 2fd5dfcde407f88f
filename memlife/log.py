"""structlog configuration: bound context, on stderr — readable console lines at a terminal,
JSON lines otherwise (workers in production). MEMLIFE_LOG_FORMAT=json|console forces one;
MEMLIFE_LOG_LEVEL sets the level. Inside an activity every line carries the run, pair,
workflow and activity. Secrets are never bound: they are resolved at the call site.

The Temporal SDK's own messages (its Python loggers, and its Rust core's, forwarded) go
through the same renderer. A command's output is for its user: there the SDK speaks from
ERROR up unless MEMLIFE_LOG_LEVEL asks for more; a worker's log shows its warnings too."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

_configured = False
_forwarding = False


def log_format() -> str:
    explicit = os.environ.get("MEMLIFE_LOG_FORMAT", "").lower()
    if explicit in ("json", "console"):
        return explicit
    return "console" if sys.stderr.isatty() else "json"


def ids_from_workflow_id(workflow_id: str) -> dict[str, Any]:
    """memlife/<scenario>/<run>[/pair-N] and memlife/deletion-check/<id> → bound fields."""
    parts = workflow_id.split("/")
    if len(parts) < 3 or parts[0] != "memlife":
        return {}
    if parts[1] == "deletion-check":
        return {"check": parts[2]}
    fields: dict[str, Any] = {"scenario": parts[1], "run": parts[2]}
    if len(parts) > 3 and parts[3].startswith("pair-") and parts[3][5:].isdigit():
        fields["pair"] = int(parts[3][5:])
    return fields


def add_activity_context(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """Inside an activity: which one, for which workflow, run and pair."""
    from temporalio import activity

    try:
        info = activity.info()
    except RuntimeError:  # not in an activity
        return event
    event.setdefault("activity", info.activity_type)
    event.setdefault("attempt", info.attempt)
    event.setdefault("workflow_id", info.workflow_id)
    for key, value in ids_from_workflow_id(info.workflow_id or "").items():
        event.setdefault(key, value)
    return event


class _CurrentStderr:
    """sys.stderr as it is at each write, not as it was when logging was configured: a
    caller may swap it (pytest's capture does, then closes what it swapped in)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _level(name: str) -> int:
    return logging.getLevelNamesMapping().get(name.upper(), logging.WARNING)


def configure(level: str | None = None, sdk_level: str | None = None) -> None:
    """Idempotent; an explicit `level` (a command's own default) reconfigures, since
    module-level loggers may already have configured the default before main() runs.
    `sdk_level` is the Temporal SDK's threshold when MEMLIFE_LOG_LEVEL does not set one
    (default: ERROR)."""
    global _configured
    if _configured and level is None and sdk_level is None:
        return
    chosen = os.environ.get("MEMLIFE_LOG_LEVEL")
    level_name = (chosen or level or "WARNING").upper()
    json_lines = log_format() == "json"
    # repr, not structlog's JSON fallback, for what JSON cannot hold: the fallback imports
    # a module as it renders, which the workflow sandbox refuses, and the SDK logs a failed
    # workflow activation from inside it (the line saying why a workflow failed was lost).
    renderer: Any = (
        structlog.processors.JSONRenderer(default=repr)
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        add_activity_context,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # A JSON line keeps a traceback as text (`exception`); the console prints it itself.
    finish: list[Any] = [structlog.processors.format_exc_info] if json_lines else []
    # Standard-library records (the SDK's) through the same renderer, on stderr.
    handler = logging.StreamHandler(_CurrentStderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *finish,
                renderer,
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared[1:]],
        )
    )
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, "_memlife", False)]
    handler._memlife = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    # The standard library's loggers are other people's (the SDK, httpx, uvicorn): they
    # speak from `sdk_level` up; memlife's own speak through structlog at `level`.
    root.setLevel(_level(chosen or sdk_level or "ERROR"))
    # What memlife's own workflows and activities say through the SDK's loggers.
    for own in ("temporalio.workflow", "temporalio.activity"):
        logging.getLogger(own).setLevel(_level(level_name))
    structlog.configure(
        processors=[*shared, *finish, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level_name, logging.WARNING)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),
        cache_logger_on_first_use=True,
    )
    _configured = True


# Workflow task latencies in finer steps than the SDK's default buckets: the goal is that
# no task takes a second (docs/scale.md), and the server retries one at 10 s.
TASK_LATENCY_BUCKETS_MS = (
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    750.0,
    1_000.0,
    2_000.0,
    5_000.0,
    10_000.0,
    30_000.0,
)
TASK_LATENCY_METRIC = "temporal_workflow_task_execution_latency"


def forward_sdk_core_logs(metrics_address: str | None = None) -> None:
    """Send the SDK core's log lines (Rust, written straight to stderr by default) to the
    `temporalio.core` logger, where configure()'s level and renderer apply; with
    `metrics_address` (host:port), also serve the SDK's metrics there for Prometheus. Call
    before the first Temporal client or server of the process; later calls change nothing."""
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        PrometheusConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    global _forwarding
    if _forwarding:
        return
    metrics = (
        None
        if metrics_address is None
        else PrometheusConfig(
            bind_address=metrics_address,
            histogram_bucket_overrides={TASK_LATENCY_METRIC: TASK_LATENCY_BUCKETS_MS},
        )
    )
    Runtime.set_default(
        Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                    forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")),
                ),
                metrics=metrics,
            )
        ),
        error_if_already_set=False,
    )
    _forwarding = True


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    configure()
    return structlog.get_logger(name)
