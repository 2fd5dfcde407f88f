"""Shared fixtures: a real reference target, the time-skipping Temporal server, a scratch
recorder database. Every server binds loopback on a free port and is stopped by handle."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from memlife import embedded
from memlife.scenario import Scenario, load_scenario
from memlife.targets.config import Target, reference_target
from memlife.temporal import build_worker, bundled_binary

REPO = Path(__file__).resolve().parent.parent
SEED_SCENARIO = REPO / "scenarios" / "seed-six-case.yaml"


@pytest.fixture(scope="session")
def seed_scenario() -> Scenario:
    return load_scenario(SEED_SCENARIO)


@pytest.fixture(scope="session")
def clean_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    state = tmp_path_factory.mktemp("reference-clean")
    with embedded.reference_target(state) as process:
        yield reference_target(process.base_url)


@pytest.fixture(scope="session")
def leaky_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    state = tmp_path_factory.mktemp("reference-leaky")
    with embedded.reference_target(state, faults=["cross-tenant-leak"]) as process:
        yield reference_target(process.base_url)


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'memlife.db'}"
    monkeypatch.setenv("MEMLIFE_DB_URL", url)
    return url


@pytest_asyncio.fixture(scope="session")
async def skip_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter,
        test_server_existing_path=bundled_binary("temporal-test-server"),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture
async def skip_worker(skip_env: WorkflowEnvironment, db_url: str) -> AsyncIterator[str]:
    """A worker with the real workflows and activities on a fresh task queue."""
    task_queue = f"test-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=16) as executor:
        async with build_worker(skip_env.client, task_queue, executor):
            yield task_queue
