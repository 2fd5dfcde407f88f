"""`wait_showing`: the status line while a command waits for a workflow. It asks the run's
workflows for their progress only where a person can see the answer (a terminal)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memlife.cli import display


class SlowHandle:
    """Stands in for a workflow handle whose result arrives after a while."""

    async def result(self) -> str:
        await asyncio.sleep(2.2)  # past the first refresh, at 2 s
        return "done"


@pytest.mark.parametrize(("terminal", "asked"), [(False, 0), (True, 1)])
async def test_progress_is_queried_only_for_a_terminal(
    monkeypatch: pytest.MonkeyPatch, terminal: bool, asked: int
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TTY_COMPATIBLE", "1" if terminal else "0")  # rich's own switch
    calls: list[Any] = []

    async def describe() -> str:
        calls.append(1)
        return "write ×2"

    assert await display.wait_showing(SlowHandle(), describe, "waiting…") == "done"
    assert len(calls) == asked
