"""Shared fixtures: a real reference target, the time-skipping Temporal server, the dev
server (for workflow updates), a scratch recorder database. Every server binds loopback on
a free port and is stopped by handle."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bench.postgres import PostgresServer, running_postgres
from memlife.bundled.reference.target_file import reference_target
from memlife.log import forward_sdk_core_logs
from memlife.recorder.database import close_engine
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import Target
from memlife.stack import embedded, heap
from memlife.stack.codec import DATA_CONVERTER
from memlife.stack.connection import bundled_binary
from memlife.stack.worker import build_worker
from memlife.targets import http
from tests import forked

# `--cpu-per-test N` (scripts/test passes it through to pytest).
pytest_plugins = ["tests.cpu_per_test"]

# Mem0 keeps a Qdrant store of its own under MEM0_DIR (~/.mem0 unless set), read when the
# package is imported, and local Qdrant admits one process: each test process gets its own.
# Set, not defaulted: xdist's workers inherit the controller's environment, and with its
# value two workers' Mem0 servers starting at once met on one lock ("Storage folder …
# migrations_qdrant is already accessed by another instance of Qdrant client").
os.environ["MEM0_DIR"] = tempfile.mkdtemp(prefix="memlife-tests-mem0-")
atexit.register(shutil.rmtree, os.environ["MEM0_DIR"], ignore_errors=True)
# mem0, graphiti-core and chromadb send usage events to PostHog unless told not to (the
# bundled stacks say so in memlife/bundled/*/runtime.py); a test sends nothing anywhere.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

# A test process holds a large heap (every collected test, the libraries of every module)
# and makes many short-lived objects, as a worker does. With CPython's default (a young
# collection every 700 allocations) the collector took 3.5 s of the 48 CPU-s of the
# detection matrices, cohorts, rules and activities run in one process (timed in
# gc.callbacks), 2,600 collections; with the threshold a serving worker uses
# (memlife/stack/heap.py), 0.9 s in 500. For this process only: the servers and commands
# the tests start run as they run for a user.
gc.set_threshold(heap.YOUNG_GENERATION, *gc.get_threshold()[1:])

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
SEED_SCENARIO = REPO / "scenarios" / "seed-six-case.yaml"
# Whole lifecycles, servers and subprocesses: `./scripts/test --quick` leaves these out.
SLOW_FOLDERS = ("e2e", "reliability", "workflows", "bench")
# The longest modules, longest first (a module's wall time in a run of scripts/test, each
# xdist group's modules together). scripts/test runs the suite on parallel workers, which
# take tests and groups in collection order (it turns off xdist's reordering of groups by
# size): started first, these run beside the many short ones instead of holding up the end
# of the run. test_worker_crash mostly waits out activity timeouts (about 185 s, little
# CPU): started 100 s in, it alone made the last 30 s of a run. (Only the order depends on
# this list.)
LONGEST_FIRST = (
    "reliability/test_worker_crash.py",
    "e2e/test_many_nights.py",  # with test_operations.py: the dev-stack group, ~135 s
    "e2e/test_operations.py",
    "workflows/test_letta_server.py",
    "e2e/test_memlife_run.py",
    "reliability/test_server_restart.py",
    "reliability/test_many_workers.py",
    "workflows/test_realstack_target.py",
    "e2e/test_web_ui.py",
    "workflows/test_mem0_stack.py",
    "workflows/test_graphiti_target.py",
    "e2e/test_experiment.py",
)

# The SDK core's log lines go through logging (as in memlife's commands), not straight to
# the terminal in the middle of pytest's output.
forward_sdk_core_logs()


def _start_rank(item: pytest.Item) -> tuple[int, int]:
    module = Path(str(item.fspath)).relative_to(TESTS).as_posix()
    if module in LONGEST_FIRST:
        return 0, LONGEST_FIRST.index(module)
    return (1 if module.split("/")[0] in SLOW_FOLDERS else 2), 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).relative_to(TESTS).parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
    items.sort(key=_start_rank)  # stable: within a rank, the usual order


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest collects garbage five times as a process ends, to report what a finalizer
        # raised then (_pytest/unraisableexception.py). On a worker's heap that took 3 to 8
        # s, past the 5 s execnet gives a worker to finish once the run is over: it then
        # interrupted the worker (the KeyboardInterrupt printed at the end of a run). What
        # the worker holds is frozen instead, and those collections have nothing to scan.
        gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def forked_reference_targets() -> Iterator[None]:
    """Every reference target a test starts is forked from an interpreter that has already
    imported it (tests/forked.py): the same command line at a fifth of the CPU."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedded, "launch_target", forked.launch_memlife)
        yield


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
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'memlife.db'}"
    monkeypatch.setenv("MEMLIFE_DB_URL", url)
    yield url
    # Its engine (a pool, compiled statements) would otherwise stay for the rest of the
    # worker's life, one more on the heap that every full garbage collection scans.
    close_engine(url)


@pytest_asyncio.fixture(scope="session", autouse=True)
async def close_target_sessions() -> AsyncIterator[None]:
    """Target sessions opened by tests that call activities or `http.call` directly are
    closed with the session's loop, as a worker closes its own when it stops."""
    yield
    await http.close_clients()


@pytest_asyncio.fixture(scope="session")
async def skip_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=DATA_CONVERTER,
        test_server_existing_path=bundled_binary("temporal-test-server"),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture
async def skip_worker(skip_env: WorkflowEnvironment, db_url: str) -> AsyncIterator[str]:
    """A worker with the real workflows and activities on a fresh task queue."""
    async with _worker(skip_env.client) as task_queue:
        yield task_queue


@pytest_asyncio.fixture(scope="module")
async def dev_client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """A client of the real dev server (`temporal server start-dev`, headless), for tests of
    workflow updates: under load the time-skipping test server loses an update's outcome,
    and then every later update to that workflow (reproduced with the cores busy; see
    sdk-java#2283 and sdk-python#826 on its update support)."""
    async with embedded.embedded_temporal(
        tmp_path_factory.mktemp("dev-server"), ui_port=None
    ) as temporal:
        yield temporal.client


@pytest_asyncio.fixture
async def dev_worker(dev_client: Client, db_url: str) -> AsyncIterator[str]:
    """A worker with the real workflows and activities on a fresh task queue of the dev
    server."""
    async with _worker(dev_client) as task_queue:
        yield task_queue


@contextlib.asynccontextmanager
async def _worker(client: Client) -> AsyncIterator[str]:
    """The worker's collector is tuned as a serving worker's is (memlife/stack/heap.py).
    Untuned, a full collection of a test process's heap (up to a million objects late in
    the suite) held the interpreter lock for up to 1.6 s, inside a workflow activation:
    past the SDK's 2 s deadlock detector on a busy machine, a failed workflow task."""
    task_queue = f"test-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=16) as executor, heap.serving():
        async with build_worker(client, task_queue, executor):
            yield task_queue


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL (bench/postgres.py), stopped at the end of the session."""
    with running_postgres("memlife-test") as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database on the session's PostgreSQL, as the recorder's MEMLIFE_DB_URL."""
    url = postgres_server.create_database()
    monkeypatch.setenv("MEMLIFE_DB_URL", url)
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def recorder_url(request: pytest.FixtureRequest) -> str:
    """The recorder on each database memlife supports."""
    return request.getfixturevalue("db_url" if request.param == "sqlite" else "postgres_url")
