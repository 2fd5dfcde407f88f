"""What a cohort's Batcher needs of Temporal (workflows/batching.py: WorkflowOps), in plain
asyncio, with Temporal's scheduling where batching depends on it:

- `wait_condition`'s condition is checked only when every other task is blocked, as the
  SDK checks conditions at the end of an activation. "Blocked" here is "the event loop has
  no callback ready to run" (`loop._ready` empty, read between yields of the driver: the
  one private attribute this leans on). Yielding a fixed number of times instead would
  guess how deep a pair's awaits go; an empty ready queue is exactly "nothing else can run".
- Activities answer in a later activation: all the activities in flight at once, when the
  workflow is blocked and no condition holds.
- Timers fire one per activation, the earliest first, and move the clock to their
  deadline: timers that are due together need not fire in the same activation, which is
  what SharedTimers is for.
- If nothing can run, no condition holds, and nothing is in flight, the run is stuck
  (a pair left waiting): `Stuck`.

`run(main)` drives all of it until `main` is done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from memlife.contracts import Activity
from tests.lifecycle.fake_calls import START

T = TypeVar("T")


class Stuck(Exception):
    """Nothing can run and nothing will: a task waits for what never comes."""


@dataclass
class Executed:
    """An activity the workflow started."""

    activity: str
    arg: Any
    local: bool
    at: datetime
    activation: int
    options: dict[str, Any]


@dataclass
class _Waiter:
    fn: Callable[[], bool]
    future: asyncio.Future[None]
    deadline: datetime | None


@dataclass
class FakeWorkflow:
    """WorkflowOps (workflows/batching.py) answered by `handlers`, keyed by activity name.
    A handler that raises fails that activity (an ActivityError: the whole call)."""

    handlers: dict[str, Callable[[Any], Any]]
    clock: datetime = START
    patches: set[str] | None = None  # None: every patch taken, as a new run takes them
    executed: list[Executed] = field(default_factory=list)
    timers: list[tuple[datetime, str | None]] = field(default_factory=list)  # deadline
    activation: int = 0
    logged: list[str] = field(default_factory=list)
    _waiters: list[_Waiter] = field(default_factory=list)
    _in_flight: list[tuple[asyncio.Future[Any], str, Any]] = field(default_factory=list)

    async def _execute(
        self, activity: Activity[Any, Any], arg: Any, local: bool, options: dict[str, Any]
    ) -> Any:
        assert "start_to_close_timeout" in options, f"{activity.name} has no timeout"
        assert "retry_policy" in options, f"{activity.name} has no retry policy"
        self.executed.append(
            Executed(activity.name, arg, local, self.clock, self.activation, options)
        )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._in_flight.append((future, activity.name, arg))
        return await future

    async def execute(self, activity: Activity[Any, Any], arg: Any, **options: Any) -> Any:
        return await self._execute(activity, arg, False, options)

    async def execute_local(self, activity: Activity[Any, Any], arg: Any, **options: Any) -> Any:
        return await self._execute(activity, arg, True, options)

    async def wait_condition(
        self,
        fn: Callable[[], bool],
        *,
        timeout: timedelta | None = None,
        timeout_summary: str | None = None,
    ) -> None:
        deadline = None if timeout is None else self.clock + timeout
        if deadline is not None:
            self.timers.append((deadline, timeout_summary))
        waiter = _Waiter(fn, asyncio.get_running_loop().create_future(), deadline)
        self._waiters.append(waiter)
        try:
            await waiter.future
        finally:
            self._waiters.remove(waiter)

    def now(self) -> datetime:
        return self.clock

    def patched(self, patch_id: str) -> bool:
        return self.patches is None or patch_id in self.patches

    def log(self, level: int, message: str, *args: object) -> None:
        self.logged.append(logging.getLevelName(level) + " " + message % args)

    # -- the driver ------------------------------------------------------------------------

    async def _blocked(self) -> None:
        """Return once no other task can run (see the module's docstring)."""
        loop = asyncio.get_running_loop()
        for _ in range(100_000):
            await asyncio.sleep(0)
            if not loop._ready:  # type: ignore[attr-defined]
                return
        raise RuntimeError("the event loop never settled")

    async def run(self, main: Awaitable[T]) -> T:
        task = asyncio.ensure_future(main)
        while True:
            await self._blocked()
            if task.done():
                return task.result()
            # The activation's end: every condition checked, those that hold wake.
            holding = [w for w in self._waiters if not w.future.done() and w.fn()]
            for waiter in holding:
                waiter.future.set_result(None)
            if holding:
                continue
            self.activation += 1
            if self._in_flight:  # the activities in flight answer
                answering, self._in_flight = self._in_flight, []
                for future, name, arg in answering:
                    try:
                        future.set_result(self.handlers[name](arg))
                    except Exception as error:  # the activity failed
                        future.set_exception(error)
                continue
            timed = [w for w in self._waiters if w.deadline is not None and not w.future.done()]
            if not timed:
                task.cancel()
                raise Stuck(f"{len(self._waiters)} wait(s) for a condition that never holds")
            first = min(timed, key=lambda w: w.deadline or self.clock)  # earliest, oldest
            self.clock = max(self.clock, first.deadline or self.clock)
            first.future.set_exception(TimeoutError())
