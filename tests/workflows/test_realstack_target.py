"""The realstack target (Mem0 on local Qdrant with MiniLM, LangGraph's SQLite checkpointer,
FalkorDB, SQL jobs) run through the nightly lifecycle, and memlife's verdicts compared with
what its databases really hold afterwards, read directly with each library's own client."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.realstack.app import create_app
from memlife.bundled.realstack.runtime import APP_DB, CHECKPOINTS_DB, HISTORY_DB, RealstackRuntime
from memlife.bundled.realstack.serve import falkordb_server, probe_environment
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import load_target
from tests.groups import MINILM
from tests.reliability.helpers import small_nightly
from tests.servers import serve_in_thread
from tests.workflows.helpers import erased_values, holds, run_artifact, run_input, run_suite

# The module's tests share a worker, so its stack starts once (with MiniLM's other users).
pytestmark = MINILM

REPO = Path(__file__).resolve().parents[2]
TARGET_FILE = REPO / "scenarios" / "targets" / "realstack.yaml"


@dataclass
class Realstack:
    base_url: str
    data_dir: Path
    runtime: RealstackRuntime


@pytest.fixture(scope="module")
def realstack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realstack]:
    data_dir = tmp_path_factory.mktemp("realstack")
    saved = dict(os.environ)
    with falkordb_server(data_dir / "falkordb") as falkordb_url:
        os.environ.update(probe_environment(data_dir, falkordb_url))
        runtime = RealstackRuntime(data_dir, falkordb_url)
        try:
            with serve_in_thread(create_app(runtime)) as base_url:
                yield Realstack(base_url, data_dir, runtime)
        finally:
            runtime.close()
            os.environ.clear()
            os.environ.update(saved)


def _store_texts(stack: Realstack) -> dict[str, list[str]]:
    """Every text each store holds now, read past the target with the stores' own clients."""

    def rows(db: str, query: str) -> list[str]:
        with sqlite3.connect(stack.data_dir / db) as connection:
            return [
                bytes(r[0]).decode("utf-8", "replace") if isinstance(r[0], bytes) else str(r[0])
                for r in connection.execute(query)
                if r[0] is not None
            ]

    graph = stack.runtime.graph.ro_query("MATCH (f:Fact) RETURN f.evidence").result_set
    return {
        "thread": rows(
            CHECKPOINTS_DB, "SELECT checkpoint FROM checkpoints UNION ALL SELECT value FROM writes"
        ),
        "history": rows(
            HISTORY_DB,
            "SELECT coalesce(old_memory, '') || ' ' || coalesce(new_memory, '') FROM history",
        ),
        "jobs": rows(APP_DB, "SELECT input || ' ' || output FROM jobs"),
        "graph": [str(row[0]) for row in graph],
        "memory": [str(r["content"]) for r in stack.runtime.memory_records()],
    }


async def test_the_nightly_on_the_real_stack_finds_what_its_databases_hold(
    realstack: Realstack, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    target = load_target(TARGET_FILE).model_copy(update={"base_url": realstack.base_url})
    scenario = small_nightly("realstack", pairs=1)
    run = run_input(scenario, target, fresh=True)
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]

    # Every store was read: nothing inconclusive; answers recall, never leak.
    assert artifact["inconclusive"] == []
    assert by_invariant["recall"]["checked"] > 0 and by_invariant["recall"]["failed"] == 0
    for invariant in ("I1", "I2", "I3", "U1"):
        assert by_invariant[invariant]["checked"] > 0, invariant
        assert by_invariant[invariant]["failed"] == 0, invariant

    # memlife's erasure findings, store by store, are exactly what the databases hold
    # after the run, read past the target with each store's own client.
    held = _store_texts(realstack)
    erased = erased_values(scenario)
    assert erased
    found = {
        (f["tenant"], f["store"], f["evidence"]["value"])
        for f in artifact["failures"]
        if f["invariant"] == "I4" and f["store"] in held
    }
    truth = {
        (alias, store, value)
        for alias, value in erased
        for store, texts in held.items()
        if holds(texts, value)
    }
    assert found == truth
    stores_with_residue = {store for _, store, _ in truth}
    # Mem0 writes each deleted memory's text into its history (DELETE rows): residue there.
    assert "history" in stores_with_residue
    # LangGraph's checkpoints cannot be edited: a forgotten fact stays in the thread.
    assert "thread" in stores_with_residue
    # delete_all, delete_thread and DETACH DELETE leave nothing in Qdrant or the graph.
    assert not stores_with_residue & {"memory", "graph"}

    # Deleted bytes stay on disk (SQLite WAL frames, Qdrant's storage, FalkorDB's AOF):
    # reported apart, as physical residue, naming files under the data directory.
    physical = [f for f in artifact["failures"] if f["invariant"] == "I4-physical"]
    assert physical and all(f["store"] == "disk" for f in physical)
    assert {(f["tenant"], f["evidence"]["value"]) for f in physical} <= erased


def test_serving_on_a_busy_port_is_one_clear_error_before_anything_loads(tmp_path: Path) -> None:
    from tests.e2e.test_memlife_run import memlife

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = memlife(
            "target",
            "serve",
            "realstack",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
            cwd=tmp_path,
            timeout=60,
        )
    assert result.returncode == 2
    assert f"--port: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data").exists()  # no store was created, no server started


async def test_the_real_stack_answers_the_english_nightly(
    realstack: Realstack, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    target = load_target(TARGET_FILE).model_copy(update={"base_url": realstack.base_url})
    english = load_scenario(REPO / "scenarios" / "lifecycle-nightly-en.yaml")
    assert english.generate is not None
    run = run_input(
        materialize(
            english.model_copy(
                update={"generate": english.generate.model_copy(update={"count": 1})}
            ),
            "realstack-en",
        ),
        target,
        fresh=True,
    )
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]
    assert artifact["inconclusive"] == []
    for invariant in ("recall", "I1", "I2", "I3", "U1"):
        assert by_invariant[invariant]["checked"] > 0, invariant
        assert by_invariant[invariant]["failed"] == 0, invariant
    replies = [o["reply"] or "" for o in artifact["observations"] if o["kind"] == "probe"]
    assert any(reply.startswith("From what you told me") for reply in replies)
