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
memlife/stack/embedded.py (`launch_target`) for every test. The end-to-end tests' commands
run to their end the same way (`run_memlife`: `memlife run`, `report`, `schedule`,
`verify` and the rest, a second of CPU less for a run, half a second for the others).
tests/stack/test_embedded.py and tests/stack/test_worker.py still start a target and a
worker the product's way; `memlife dev`, `memlife worker`, the runs whose output a test
reads as it streams, the README's command and the executable's bad input start a new
interpreter as a user's shell does.

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
import tempfile
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
    # What the end-to-end tests' commands import besides (`memlife run`, `report`, `verify`,
    # `schedule` and the rest, python -X importtime): each a third to a second of CPU a
    # command that a fork of this server runs without.
    "memlife.api.engine",
    "memlife.cli.render",
    "memlife.cli.target_init",
    "memlife.recorder.staging",
    "memlife.recorder.streams",
    "memlife.reports.html",
    "memlife.reports.signing",
    "memlife.reports.verifying",
    "memlife.stack.connection",
    "memlife.stack.embedded",
    "memlife.stack.progress",
    "memlife.stack.schedules",
    "memlife.stack.worker_process",
    "temporalio.testing",
    "xml.etree.ElementTree",
]


@cache
def _forkserver() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _settle_in(environment: dict[str, str], cwd: str, outputs: dict[int, str], mode: int) -> None:
    """In the fork: the environment and directory of the test that started it (the server
    forking was started by an earlier test), each output descriptor to its file."""
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    for fd, path in outputs.items():
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | mode)
        os.dup2(opened, fd)
        os.close(opened)


def _run(
    script: str | None, argv: list[str], log_path: str, environment: dict[str, str], cwd: str
) -> None:
    """In the fork: output appended to the log, then the script (`python SCRIPT ARGV`) or
    memlife's own command line (`python -m memlife ARGV`)."""
    _settle_in(environment, cwd, {1: log_path, 2: log_path}, os.O_APPEND)
    if script is not None:
        sys.argv = [script, *argv]
        runpy.run_path(script, run_name="__main__")
        return
    from memlife.cli import end_process, main

    sys.argv = ["memlife", *argv]
    end_process(main(argv))


def _run_to_its_end(
    argv: list[str], stdout_path: str, stderr_path: str, environment: dict[str, str], cwd: str
) -> None:
    """In the fork: `python -m memlife ARGV` in `cwd` with `environment`, its output and its
    errors each to a file of their own."""
    _settle_in(environment, cwd, {1: stdout_path, 2: stderr_path}, os.O_TRUNC)
    # As `python -m memlife` runs it: memlife/__main__.py as __main__ and as sys.argv[0],
    # which memlife/stack/commands.py reads to spell the command in its hints.
    sys.argv = ["-m", *argv]
    runpy.run_module("memlife", run_name="__main__", alter_sys=True)


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


def run_memlife(
    argv: list[str], *, cwd: Path, environment: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python -m memlife ARGV` run to its end as `subprocess.run(capture_output=True,
    text=True, timeout=timeout)` runs it, forked: its own process, directory, environment,
    output, errors and exit code (a signal's as a negative one); killed at the timeout.
    For the end-to-end tests' commands; tests/e2e/test_memlife_run.py keeps a few that
    start a new interpreter as a user's shell does."""
    command = [sys.executable, "-m", "memlife", *argv]
    with tempfile.TemporaryDirectory(prefix="memlife-command-") as directory:
        stdout_path, stderr_path = Path(directory, "stdout"), Path(directory, "stderr")
        process = _forkserver().Process(
            target=_run_to_its_end,
            args=(argv, str(stdout_path), str(stderr_path), environment, str(cwd)),
            name=f"memlife {' '.join(argv[:3])}",
            daemon=True,
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            ForkedProcess(process, command).kill()
            process.join()
            raise subprocess.TimeoutExpired(
                command, timeout, _written(stdout_path), _written(stderr_path)
            )
        return subprocess.CompletedProcess(
            command, process.exitcode, _written(stdout_path), _written(stderr_path)
        )


def _written(path: Path) -> str:
    """What the command wrote there ("" if it ended before it opened the file)."""
    return path.read_text() if path.exists() else ""
