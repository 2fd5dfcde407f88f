"""The suite's reference targets, forked instead of each started as `python -m memlife`.

The suite starts about a hundred reference targets, and each such start spent most of its
CPU importing memlife, uvicorn and pydantic's models (0.38 CPU-s, then 0.08 forked, measured
side by side). Here multiprocessing's forkserver imports them once per test worker, and
each target is a fork of it that runs the same command line through the same
`memlife.cli.main`, in a process of its own with its own PID, log, environment and exit
code. conftest.py makes it the launcher of memlife/stack/embedded.py (`launch_target`) for
every test; tests/stack/test_embedded.py also starts one the product's way.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from functools import cache
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from pathlib import Path

# What `memlife target serve reference` imports before it listens (python -X importtime),
# so that a fork finds it imported; uvicorn picks its loop and protocols when it starts.
PRELOAD = [
    "tests.forked_targets",
    "memlife.cli",
    "memlife.cli.target",
    "memlife.bundled.reference.app",
    "memlife.bundled.reference.store",
    "memlife.rules.durations",
    "uvicorn",
    "uvicorn.main",
    "uvicorn.loops.auto",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.on",
]


@cache
def _forkserver() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _serve(argv: list[str], log_path: str, environment: dict[str, str], cwd: str) -> None:
    """In the fork: the environment and directory of the test that started it (the server
    forking was started by an earlier test), output appended to the log, then memlife's
    own command line."""
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    from memlife.cli import end_process, main

    sys.argv = ["memlife", *argv]
    end_process(main(argv))


class ForkedProcess:
    """A forked target, as memlife/stack/processes.py's ChildProcess: what stop_process and
    the tests ask of a subprocess.Popen."""

    def __init__(self, process: BaseProcess, argv: list[str]) -> None:
        self._process = process
        self.args = argv

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # never a PID the system may have given to another
            os.kill(self.pid, signum)


def launch(argv: list[str], log_path: Path) -> ForkedProcess:
    """`memlife ARGV`, forked, its output appended to `log_path`."""
    process = _forkserver().Process(
        target=_serve,
        args=(argv, str(log_path), dict(os.environ), os.getcwd()),
        name=f"memlife {' '.join(argv[:3])}",
        daemon=True,  # stopped with the test worker if a test left one running
    )
    process.start()
    return ForkedProcess(process, argv)
