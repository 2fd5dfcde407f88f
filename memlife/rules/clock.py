"""Scenario time: `real` and `skip` sleep as written, `compress=N` divides every wait by
N and multiplies elapsed time back. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from memlife.rules.models import Frozen

ClockMode = Literal["real", "skip", "compress"]
# A day in under a millisecond: beyond this a timer's resolution, not the target, decides.
MAX_COMPRESSION = 100_000_000


class Clock(Frozen):
    """Scenario time: `real` and `skip` sleep as written; `compress` divides every wait."""

    mode: ClockMode = "real"
    factor: float = Field(default=1.0, gt=0, le=MAX_COMPRESSION, allow_inf_nan=False)

    def real_wait(self, scenario_wait: timedelta) -> timedelta:
        return scenario_wait / self.factor if self.mode == "compress" else scenario_wait

    def scenario_now(self, origin: datetime, now: datetime) -> datetime:
        if self.mode == "compress":
            return origin + (now - origin) * self.factor
        return now

    def describe(self) -> str:
        return f"compress={self.factor:g}" if self.mode == "compress" else self.mode


def parse_clock(text: str) -> Clock:
    """`real`, `skip` or `compress=N` (0 < N <= MAX_COMPRESSION)."""
    if text in ("real", "skip"):
        return Clock(mode=text)
    if text.startswith("compress="):
        try:
            factor = float(text.removeprefix("compress="))
        except ValueError:
            factor = 0.0
        if 0 < factor <= MAX_COMPRESSION:  # also refuses inf and nan
            return Clock(mode="compress", factor=factor)
    raise ValueError(
        f"--clock {text!r}: expected real, skip or compress=N with 0 < N <= {MAX_COMPRESSION:,}"
    )
