"""W3C trace context (https://www.w3.org/TR/trace-context/) as memlife uses it. Pure.

Every request memlife sends carries a `traceparent` of its own: a fresh trace id and span
id per request. A finding names the trace id of the request behind it, and searching a
tracing tool for that id finds exactly that request and whatever the service did for it
(docs/tracing.md). One trace per run would put days of requests in one trace, which
tracing tools truncate or refuse.
"""

from __future__ import annotations

import re

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


def traceparent(trace_id: str, span_id: str) -> str:
    """Version 00, sampled: the service is asked to keep what it traces of the request."""
    return f"00-{trace_id}-{span_id}-01"


def trace_ids(header: str | None) -> tuple[str, str] | None:
    """(trace id, span id) of a traceparent header, or None when there is none or it is
    invalid (all-zero ids are invalid, as the spec says)."""
    match = _TRACEPARENT.match(header or "")
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        return None
    return match.group(1), match.group(2)
