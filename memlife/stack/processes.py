"""Child servers on loopback: free ports, waiting until one listens, stopping one by its
PID (never by name)."""

from __future__ import annotations

import socket
import subprocess
import time
from typing import Protocol

LOOPBACK = "127.0.0.1"


class ChildProcess(Protocol):
    """What memlife asks of a child server: `subprocess.Popen` has it, and so does a process
    forked by another launcher (embedded.py, `launch_target`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int:
        """The exit code; subprocess.TimeoutExpired when `timeout` passes first."""

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


def free_port(preferred: int | None = None) -> int:
    """`preferred` if it is free on loopback, else any free port."""
    if preferred:
        with socket.socket() as probe:
            # Like the servers we start: a port whose old connections linger in TIME_WAIT
            # is free to listen on again.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, preferred))
                return preferred
            except OSError:
                pass
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether a child server accepts connections on loopback `port` within `timeout`
    seconds (False as soon as it exits)."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection((LOOPBACK, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


class StoppedTogether:
    """Children asked to stop where each one's block ends, and waited for where the last
    block ends: a run's reference target drains (0.3 s) while the run's worker and Temporal
    server stop after it (1.3 s for the dev server), instead of before them
    (memlife/api/engine.py)."""

    def __init__(self) -> None:
        self._stopping: list[tuple[ChildProcess, float]] = []

    def terminate(self, process: ChildProcess, grace: float) -> None:
        """SIGTERM this child now; `wait` kills it if it has not exited `grace` seconds on."""
        if process.poll() is None:
            process.terminate()
        self._stopping.append((process, time.monotonic() + grace))

    def wait(self) -> None:
        """Every child told to stop has exited: each reaped, SIGKILLed past its grace."""
        stopping, self._stopping = self._stopping, []
        for process, deadline in stopping:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def stop_process(process: ChildProcess, grace: float) -> None:
    """SIGTERM this child (by its PID, never by name), SIGKILL it after `grace` seconds."""
    alone = StoppedTogether()
    alone.terminate(process, grace)
    alone.wait()
