"""`worker.py --metrics`: a standalone worker serves the SDK's metrics for Prometheus, with
workflow task latencies in buckets fine enough to tell a task over a second; an address it
cannot serve is one clear error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from bench.task_latency import task_latency
from memlife import DEFAULT_TASK_QUEUE
from memlife.bundled.reference.target_file import reference_target
from memlife.stack import embedded
from memlife.stack.processes import LOOPBACK, free_port
from tests.reliability.helpers import REPO, small_nightly, start_worker
from tests.workflows.helpers import run_input, run_suite


async def test_a_worker_serves_its_workflow_task_latencies(
    tmp_path: Path, skip_env: WorkflowEnvironment, db_url: str
) -> None:
    address = f"{LOOPBACK}:{free_port()}"
    worker = start_worker(
        skip_env.client.service_client.config.target_host,
        db_url,
        tmp_path / "worker.log",
        ["--metrics", address],
    )
    try:
        with embedded.reference_target(tmp_path / "target") as target:
            run = run_input(small_nightly("metrics", pairs=1), reference_target(target.base_url))
            summary = await run_suite(skip_env.client, DEFAULT_TASK_QUEUE, run)
        assert summary.passed
        scrape = httpx.get(f"http://{address}/metrics", timeout=10).text
    finally:
        embedded.stop_process(worker, grace=30)
    tasks = task_latency(scrape)  # raises without memlife's 1000 ms bucket
    assert tasks.by_workflow_type.keys() == {"SuiteWorkflow", "PairLifecycleWorkflow"}
    assert tasks.tasks == sum(kind["tasks"] for kind in tasks.by_workflow_type.values()) > 0


def test_an_address_the_worker_cannot_serve_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        for address in ("nonsense", f"{LOOPBACK}:{taken.getsockname()[1]}"):
            ended = subprocess.run(
                [sys.executable, str(REPO / "worker.py"), "--metrics", address],
                env={**os.environ, "TEMPORAL_ADDRESS": f"{LOOPBACK}:1"},
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ended.returncode == 2
            assert ended.stderr.startswith(f"memlife worker: --metrics {address}: ")
            assert "Traceback" not in ended.stderr
