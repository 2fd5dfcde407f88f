"""A standalone worker (`memlife worker`) as a child of the command that needs it: started,
waited for until it polls its task queue, started again when it dies, and stopped by its
PID. `memlife run --target-worker` sends the run's target requests from one, on a task
queue of their own, so that they never wait for the recording or a workflow activation in
the same interpreter (docs/scale.md, "A worker of their own for the target requests")."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from memlife.errors import MemlifeError
from memlife.stack.processes import stop_process


def target_task_queue(task_queue: str) -> str:
    """The task queue of a run's target requests when a worker of their own serves them."""
    return f"{task_queue}-targets"


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which taskset, cgroups' cpusets and
    containers narrow), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1


def target_worker_helps(cpus: int | None = None) -> bool:
    """Whether a worker process of their own for the target requests is worth starting on
    a machine with `cpus` CPUs (None: this one's, available_cpus): where there is more
    than one.

    Why: the second process helps by reading the target's answers as they come, not after
    a recording or a workflow activation that holds the first one's interpreter. Every
    measurement of it was on 2 CPUs, where it helped: 790 target requests/s against 744
    (0.94 and 0.89 of the plain httpx runner; BENCHMARKS.md, the nightly at 100 pairs,
    memlife's processes on one CPU and the target on the other), and 0.87/0.84 against
    0.70/0.63 of the plain runner on shared CPUs (docs/scale.md). With a single CPU, which
    `memlife dev`'s Temporal server and reference target share too, nothing was measured:
    there the interpreters only take turns, and the second costs its start (about a
    second) and its memory.
    """
    return (available_cpus() if cpus is None else cpus) > 1


# From how many pairs a run of `memlife run` (its own Temporal server, its worker in the
# command's process) starts a worker for its target requests by itself. Measured on 2 CPUs,
# every process on both, the nightly on the skip clock, default against --target-worker,
# two rounds each (docs/scale.md): 2 pairs 3.3 s against 4.3, 8 pairs 7.0 against 8.0,
# 16 pairs 11.2 against 11.2, 30 pairs 21.2 against 19.6, 50 pairs 32.2 against 29.8. The
# second interpreter's start (about a second) is what a small run loses.
TARGET_WORKER_PAIRS = 20


def target_worker_pays(pairs: int, cpus: int | None = None) -> bool:
    """Whether a run of `pairs` pairs gains from a worker of their own for its target
    requests: where one helps (target_worker_helps) and the run is large enough to win
    back its start (TARGET_WORKER_PAIRS)."""
    return target_worker_helps(cpus) and pairs >= TARGET_WORKER_PAIRS


class WorkerProcessError(MemlifeError):
    """The child worker could not be started, or kept dying; the message names its log."""


@dataclass
class WorkerProcess:
    """One child worker serving `task_queue`. Its output goes to `log_path`; it writes
    `ready_path` (`memlife worker --ready-file`) once it polls."""

    task_queue: str
    log_path: Path
    ready_path: Path
    env: dict[str, str]
    serve: str = "activities"
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "memlife",
            "worker",
            "--serve",
            self.serve,
            "--task-queue",
            self.task_queue,
            "--ready-file",
            str(self.ready_path),
        ]

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def start(self) -> None:
        self.ready_path.unlink(missing_ok=True)  # a killed worker's is stale
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.starts += 1

    async def wait_ready(self, timeout: float) -> None:
        """Until the worker polls; WorkerProcessError when it exits first or takes longer
        than `timeout` seconds (it is stopped then)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while not self.ready_path.exists():
            code = self.process.poll()
            if code is not None:
                raise WorkerProcessError(
                    f"worker for task queue {self.task_queue}: exited at start (code {code}); "
                    f"see {self.log_path}"
                )
            if time.monotonic() > deadline:
                await asyncio.to_thread(stop_process, self.process, 10)
                raise WorkerProcessError(
                    f"worker for task queue {self.task_queue}: not polling after "
                    f"{timeout:g}s; see {self.log_path}"
                )
            await asyncio.sleep(0.1)

    async def stop(self, grace: float) -> None:
        if self.process is not None:
            await asyncio.to_thread(stop_process, self.process, grace)
        self.ready_path.unlink(missing_ok=True)


@contextlib.asynccontextmanager
async def worker_process(
    task_queue: str,
    state_dir: Path,
    *,
    db_url: str,
    address: str | None = None,
    say: Callable[[str], None] = print,
    start_timeout: float = 60.0,
    starts_at_most: int = 4,
    grace: float = 30.0,
    check_every: float = 0.5,
) -> AsyncIterator[WorkerProcess]:
    """A worker serving the activities of `task_queue` while the block runs, polling when
    the block starts. `address` is the Temporal server's when this command started or
    found it; None keeps the configured connection (TEMPORAL_ADDRESS, a profile), which
    the child reads from the same environment. The child writes to `db_url`, this
    command's recorder, and resolves the target's secrets from the same environment.

    A worker that dies is started again, and `say` tells why; one that cannot start, or
    has been started `starts_at_most` times, ends the block with WorkerProcessError: the
    run could not go on without it."""
    env = {**os.environ, "MEMLIFE_DB_URL": db_url}
    if address is not None:
        env["TEMPORAL_ADDRESS"] = address
    stamp = time.strftime("%Y%m%dT%H%M%S")
    child = WorkerProcess(
        task_queue,
        state_dir / "logs" / f"worker-{task_queue}-{stamp}.log",
        state_dir / f"worker-{task_queue}-{os.getpid()}.ready",
        env,
    )
    child.start()
    try:
        await child.wait_ready(start_timeout)
    except BaseException:
        await child.stop(grace=10)
        raise
    owner = asyncio.current_task()
    failure: list[WorkerProcessError] = []

    async def supervise() -> None:
        assert child.process is not None
        while True:
            await asyncio.sleep(check_every)
            code = child.process.poll()
            if code is None:
                continue
            if child.starts >= starts_at_most:
                failure.append(
                    WorkerProcessError(
                        f"worker for task queue {task_queue}: exited (code {code}) after "
                        f"{child.starts} start(s); see {child.log_path}"
                    )
                )
                break
            say(
                f"worker for task queue {task_queue} (pid {child.pid}) exited with code "
                f"{code}; starting it again (its log: {child.log_path})"
            )
            child.start()
            try:
                await child.wait_ready(start_timeout)
            except WorkerProcessError as error:
                failure.append(error)
                break
        if owner is not None:
            owner.cancel()

    supervisor = asyncio.create_task(supervise())
    try:
        yield child
    except asyncio.CancelledError:
        if not failure:
            raise
        if owner is not None:
            owner.uncancel()
        raise failure[0] from None
    finally:
        supervisor.cancel()
        await asyncio.gather(supervisor, return_exceptions=True)
        await child.stop(grace)
