"""The machine a benchmark ran on, in one line (BENCHMARKS.md names it beside its figures)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from memlife.stack import embedded


def describe_machine() -> str:
    """Cores and their model, memory, kernel, Python and Temporal: what a figure measured
    here depends on, for the reader to set it beside figures of other days."""
    memory = next(
        (
            line.split()[1]
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal:")
        ),
        "0",
    )
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    temporal = subprocess.run(
        [embedded.bundled_binary("temporal"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    return (
        f"{os.cpu_count()} CPU(s) ({cpu}), {int(memory) / 1024 / 1024:.0f} GiB, "
        f"Linux {platform.release()}, Python {platform.python_version()}, {temporal}"
    )
