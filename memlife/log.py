"""structlog configuration: bound context, on stderr — readable console lines at a terminal,
JSON lines otherwise (workers in production). MEMLIFE_LOG_FORMAT=json|console forces one;
MEMLIFE_LOG_LEVEL sets the level. Inside an activity every line carries the run, pair,
workflow and activity. Secrets are never bound: they are resolved at the call site."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

_configured = False


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


def configure(level: str | None = None) -> None:
    """Idempotent; an explicit `level` (a command's own default) reconfigures, since
    module-level loggers may already have configured the default before main() runs."""
    global _configured
    if _configured and level is None:
        return
    level_name = (os.environ.get("MEMLIFE_LOG_LEVEL") or level or "WARNING").upper()
    renderer: Any = (structlog.processors.JSONRenderer() if log_format() == "json"
                     else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_activity_context,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level_name, logging.WARNING)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    _configured = True


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    configure()
    return structlog.get_logger(name)
