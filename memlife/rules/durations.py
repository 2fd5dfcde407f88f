"""Human durations ("150ms", "6h", "3d", "1h30m") to and from timedelta. Pure."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

_UNITS: dict[str, float] = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
# Longer than any lifecycle, SLA or grace could mean, and far inside what timedelta holds.
MAX_DURATION = timedelta(days=3650)


def parse_duration(text: str) -> timedelta:
    """Parse "150ms", "6h", "3d", "1h30m" or "2.5s". Raises ValueError with the reason."""
    if not isinstance(text, str):
        raise ValueError(f"expected a duration such as '150ms', '6h' or '3d', got {text!r}")
    compact = text.strip().replace(" ", "").lower()
    if not compact:
        raise ValueError("empty duration; write e.g. '150ms', '6h' or '3d'")
    position = 0
    seconds = 0.0
    for match in _PART.finditer(compact):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(compact):
        raise ValueError(
            f"{text!r} is not a duration; use a number and a unit ms, s, m, h, d or w "
            "(e.g. '150ms', '6h', '3d', '1h30m')"
        )
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be greater than zero")
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(
            f"duration {text!r} is longer than {MAX_DURATION.days}d (ten years), "
            "the longest memlife accepts"
        )
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The shortest exact human form: 150ms, 6h, 3d, 1h30m."""
    total_ms = round(value.total_seconds() * 1000)
    if total_ms == 0:
        return "0s"
    parts: list[str] = []
    for unit, size_ms in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        count, total_ms = divmod(total_ms, size_ms)
        if count:
            parts.append(f"{count}{unit}")
    if total_ms:
        parts.append(f"{total_ms}ms")
    return "".join(parts)


# Durations in input files: "150ms", "6h", "3d" in, the same text out.
def _to_timedelta(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError("duration must be greater than zero")
        return value
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"expected a duration string such as '150ms', '6h' or '3d', got {value!r}")
    return parse_duration(value)


Duration = Annotated[
    timedelta,
    BeforeValidator(_to_timedelta),
    PlainSerializer(format_duration, return_type=str),
]


def _non_negative_duration(value: Any) -> timedelta:
    if value in ("0", "0s", 0):
        return timedelta(0)
    return _to_timedelta(value)


GraceDuration = Annotated[
    timedelta,
    BeforeValidator(_non_negative_duration),
    PlainSerializer(format_duration, return_type=str),
]
