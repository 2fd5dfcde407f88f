"""What a person sees while memlife works: output consoles and the live status line."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def output_console(width: int = 160) -> Console:
    """stdout; with no terminal to fit (logs, CI) a fixed width keeps tables whole."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=width)
    return console


async def wait_showing(
    handle: Any,
    describe: Callable[[], Awaitable[str]],
    waiting: str,
    result_of: Callable[[Any], Awaitable[Any]] | None = None,
) -> Any:
    """The workflow's result (`result_of(handle)`, default its plain result); meanwhile a
    status line on stderr, refreshed every 2 s from `describe()` (a query can race the
    workflow's start or a worker: `waiting` then)."""
    from rich.console import Console

    result = asyncio.ensure_future(result_of(handle) if result_of else handle.result())
    console = Console(stderr=True)
    if not console.is_terminal:
        # Nobody would see the line (a pipe, a CI log): no queries to the run's workflows,
        # which a worker answers with CPU it could give the run.
        return await result
    loop = asyncio.get_running_loop()
    started = loop.time()
    with console.status(waiting) as status:
        while not result.done():
            await asyncio.wait([result], timeout=2.0)
            if result.done():
                break
            try:
                text = await describe()
            except Exception:
                text = waiting
            status.update(f"{text} · {loop.time() - started:.0f}s")
    return result.result()
