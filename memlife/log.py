"""structlog configuration: bound context, key=value lines on stderr (JSON with
MEMLIFE_LOG_FORMAT=json). Secrets are never bound: they are resolved at the call site."""

from __future__ import annotations

import logging
import os
import sys

import structlog

_configured = False


def configure(level: str | None = None) -> None:
    global _configured
    if _configured:
        return
    level_name = (level or os.environ.get("MEMLIFE_LOG_LEVEL", "WARNING")).upper()
    renderer = (
        structlog.processors.JSONRenderer()
        if os.environ.get("MEMLIFE_LOG_FORMAT") == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
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
