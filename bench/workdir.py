"""A bench's scratch directory: its recorder files, servers' data and logs (650 MB for the
100-pair side-by-side, tens of GB at 10,000 pairs). Removed once the bench's figures are
written; a bench that stops on an error leaves it where its `working in` line said, for a
look at what went wrong."""

from __future__ import annotations

import shutil
from pathlib import Path


def remove_work_directory(work: Path) -> str:
    """Remove `work` and say what was removed."""
    size = sum(path.stat().st_size for path in work.rglob("*") if path.is_file())
    shutil.rmtree(work, ignore_errors=True)
    return f"removed the working directory {work} ({size / 2**20:,.0f} MB)"
