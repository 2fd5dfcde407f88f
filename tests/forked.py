"""The suite's reference targets and `worker.py` processes, forked instead of each started
by a new interpreter.

The suite starts about a hundred reference targets and a score of workers, and each start
spent most of its CPU importing memlife, uvicorn, the Temporal SDK and pydantic's models.
Until it answered: a target 0.38 CPU-s, 0.08 forked; a worker 1.3 CPU-s, 0.15 to 0.25
forked; the server they are forked from 1.6 CPU-s once per test worker. Here
multiprocessing's forkserver imports them once, and each process is a fork of it that
runs the same command line through the same entry point (`memlife.cli.main`, worker.py):
a process of its own with its own PID, log, environment, directory and exit code, stopped
or killed by its PID as before. conftest.py makes it the launcher of
memlife/stack/embedded.py (`launch_target`) for every test. tests/stack/test_embedded.py
and tests/stack/test_worker.py still start a target and a worker the product's way, and
the end-to-end tests start every process of `memlife run`, `memlife dev` and `memlife
worker` as a user does.

Under `pytest -n0` from the console script, multiprocessing runs that script again in each
fork (as `__mp_main__`; its main guard keeps it from running pytest): a target's fork then
costs 0.15 CPU-s instead of 0.08.
"""

from __future__ import annotations

import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
from functools import cache
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from pathlib import Path

# What `memlife target serve reference` and worker.py import before they serve (python -X
# importtime), so that a fork finds it imported; uvicorn picks its loop and protocols as it
# starts, the worker its activities and workflows.
PRELOAD = [
    "tests.forked",
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
    "memlife.stack.worker",
    "memlife.stack.registry",
    "memlife.stack.telemetry",
    "memlife.recorder.database",
    "memlife.activities.batch",
    "memlife.activities.record",
    "memlife.workflows.suite",
    "temporalio.worker",
    "temporalio.client",
    "sqlalchemy.dialects.sqlite",
]


@cache
def _forkserver() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _run(
    script: str | None, argv: list[str], log_path: str, environment: dict[str, str], cwd: str
) -> None:
    """In the fork: the environment and directory of the test that started it (the server
    forking was started by an earlier test), output appended to the log, then the script
    (`python SCRIPT ARGV`) or memlife's own command line (`python -m memlife ARGV`)."""
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if script is not None:
        sys.argv = [script, *argv]
        runpy.run_path(script, run_name="__main__")
        return
    from memlife.cli import end_process, main

    sys.argv = ["memlife", *argv]
    end_process(main(argv))


class ForkedProcess:
    """A forked target or worker, as memlife/stack/processes.py's ChildProcess: what
    stop_process and the tests ask of a subprocess.Popen."""

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


def _launch(
    script: Path | None,
    argv: list[str],
    log_path: Path,
    environment: dict[str, str],
    cwd: Path,
) -> ForkedProcess:
    name = script.name if script else "memlife"
    process = _forkserver().Process(
        target=_run,
        args=(str(script) if script else None, argv, str(log_path), environment, str(cwd)),
        name=f"{name} {' '.join(argv[:3])}",
        daemon=True,  # stopped with the test worker if a test left one running
    )
    process.start()
    return ForkedProcess(process, [name, *argv])


def launch_memlife(argv: list[str], log_path: Path) -> ForkedProcess:
    """`python -m memlife ARGV`, forked, its output appended to `log_path`: what
    memlife/stack/embedded.py's `launch_target` is in the suite."""
    return _launch(None, argv, log_path, dict(os.environ), Path.cwd())


def launch_script(
    script: Path, argv: list[str], log_path: Path, environment: dict[str, str], cwd: Path
) -> ForkedProcess:
    """`python SCRIPT ARGV` in `cwd` with `environment`, forked, its output appended to
    `log_path`."""
    return _launch(script, argv, log_path, environment, cwd)
