"""Where the bench's processes run: one CPU is the reference target's alone, and
whatever drives it (memlife's workers and Temporal server, or a plain runner, and the bench
itself) runs on the others, as a service and its tester run on hosts of their own. The
target may use the drivers' CPUs too: its event loop and the thread running its SQLite
work then run at once, as on a host of its own with more than one CPU.

On a machine of 2 CPUs shared by all, the target got whatever CPU its driver left it:
memlife, with more processes, left it less than the plain runner did, and the
side-by-side ratio measured that as much as memlife's own pace (docs/scale.md, "Where the
target runs"). Every child started while `placed` holds inherits the drivers' CPUs; a
target is given its own with `place_target` once started.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Placement:
    """The CPUs the target may use (all) and those everything that drives it may use (all
    but the target's own)."""

    target: frozenset[int]
    drivers: frozenset[int]

    def describe(self) -> dict[str, list[int]]:
        return {"target": sorted(self.target), "drivers": sorted(self.drivers)}


def split(available: set[int] | frozenset[int]) -> Placement | None:
    """The highest CPU the target's alone (one Python process with one lock: one CPU is
    about what it keeps busy), the rest the drivers', and the target's too; None with
    fewer than 2 CPUs."""
    if len(available) < 2:
        return None
    return Placement(target=frozenset(available), drivers=frozenset(available - {max(available)}))


# The target's CPUs while `placed` holds (None: every process on every CPU).
_TARGET_CPUS: contextvars.ContextVar[frozenset[int] | None] = contextvars.ContextVar(
    "bench_target_cpus", default=None
)


@contextlib.contextmanager
def placed(placement: Placement | None) -> Iterator[None]:
    """This process, and every process it starts meanwhile, on the drivers' CPUs; targets
    started meanwhile go to their own with `place_target`. None: nothing moves."""
    if placement is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, placement.drivers)
    token = _TARGET_CPUS.set(placement.target)
    try:
        yield
    finally:
        _TARGET_CPUS.reset(token)
        os.sched_setaffinity(0, before)


def place_target(pid: int) -> None:
    """Every thread of the target process `pid` onto the target's CPUs, when `placed` holds
    (threads it starts later inherit them)."""
    cpus = _TARGET_CPUS.get()
    if cpus is not None:
        pin(pid, cpus)


def pin(pid: int, cpus: frozenset[int] | set[int]) -> None:
    """Every thread of `pid` onto `cpus`, again until no thread is new: one started while
    the others moved may have inherited the old CPUs."""
    moved: set[int] = set()
    while True:
        threads = {int(tid) for tid in os.listdir(f"/proc/{pid}/task")} - moved
        if not threads:
            return
        for tid in threads:
            with contextlib.suppress(ProcessLookupError):  # a thread that has ended
                os.sched_setaffinity(tid, cpus)
        moved |= threads


def describe(placement: dict[str, Any] | None) -> str:
    """How BENCHMARKS.md says where the processes ran."""
    if not placement:
        return "every process on every CPU"
    own = ", ".join(str(cpu) for cpu in placement["target"] if cpu not in placement["drivers"])
    drivers = ", ".join(str(cpu) for cpu in placement["drivers"])
    return (
        f"CPU {own} is the target's alone, and everything that drives it runs on CPU "
        f"{drivers} (where the target may run too)"
    )
