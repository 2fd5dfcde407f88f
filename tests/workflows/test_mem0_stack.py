"""Mem0 with its model on (infer=True, the scripted model) run through the English
nightly, and every finding memlife reports checked against what Mem0's own stores hold
afterwards, read directly: local Qdrant through Mem0's client, the history database with
sqlite3. A finding memlife makes that the stores do not show, or a row they hold that
memlife misses, fails this test."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.mem0.runtime import COLLECTION, HISTORY_DB
from memlife.bundled.mem0.serve import Mem0Stack, mem0_stack, probe_environment
from memlife.bundled.realstack.app import create_app
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import load_target
from tests.groups import MINILM
from tests.servers import serve_in_thread
from tests.workflows.helpers import erased_values, holds, run_artifact, run_input, run_suite

# The module's tests share a worker, so its stack starts once (with MiniLM's other users).
pytestmark = [pytest.mark.slow, MINILM]

REPO = Path(__file__).resolve().parents[2]
TARGET_FILE = REPO / "scenarios" / "targets" / "mem0.yaml"


@dataclass
class Served:
    base_url: str
    data_dir: Path
    stack: Mem0Stack


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("mem0")
    saved = dict(os.environ)
    os.environ.update(probe_environment(data_dir))
    try:
        with mem0_stack(data_dir) as stack, serve_in_thread(create_app(stack.runtime)) as base_url:
            yield Served(base_url, data_dir, stack)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _store_texts(served: Served) -> dict[str, list[str]]:
    """Every text each of Mem0's stores holds now, read past the target."""
    with sqlite3.connect(served.data_dir / HISTORY_DB) as history:
        changes = [
            f"{old or ''} -> {new or ''}"
            for old, new in history.execute("SELECT old_memory, new_memory FROM history")
        ]
        messages = [str(row[0]) for row in history.execute("SELECT content FROM messages")]
    store = served.stack.runtime.memory.vector_store
    with store._lock:
        points, _ = store.inner.client.scroll(COLLECTION, limit=100_000, with_payload=True)
    return {
        "history": changes,
        "messages": messages,
        "memory": [str((p.payload or {}).get("data", "")) for p in points],
    }


async def test_the_english_nightly_on_mem0_finds_what_its_stores_hold(
    served: Served, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    target = load_target(TARGET_FILE).model_copy(update={"base_url": served.base_url})
    english = load_scenario(REPO / "scenarios" / "lifecycle-nightly-en.yaml")
    assert english.generate is not None
    scenario = materialize(
        english.model_copy(update={"generate": english.generate.model_copy(update={"count": 1})}),
        "mem0-en",
    )
    run = run_input(scenario, target, fresh=True)
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]

    # Every store was read; Mem0 recalls each tenant's facts and never leaks the partner's.
    assert artifact["inconclusive"] == []
    for invariant in ("recall", "I1", "I2", "I3"):
        assert by_invariant[invariant]["checked"] > 0, invariant
        assert by_invariant[invariant]["failed"] == 0, invariant

    # Mem0 2.x only adds: after "Now I work at X" both employers are memories, and a
    # search for the employer serves the old one too (U1, stale).
    held = _store_texts(served)
    stale = {
        (f["tenant"], f["evidence"]["value"])
        for f in artifact["failures"]
        if f["invariant"] == "U1"
    }
    assert stale
    pair = scenario.pairs[0]
    old_values = {
        (t.alias, t.facts["employer"].value) for t in (pair.tenant("a"), pair.tenant("b"))
    }
    assert stale <= old_values
    b = pair.tenant("b")  # b lives on: its old employer is still one of its memories
    assert holds(held["memory"], b.facts["employer"].value)

    # The erasure findings, store by store, are exactly what Mem0's stores hold.
    erased = erased_values(scenario)
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
    # Mem0's history keeps each deleted memory's text (DELETE rows), and its messages
    # table keeps what the deleted user said; delete_all and delete empty the vectors.
    assert {store for _, store, _ in truth} == {"history", "messages"}

    # Mem0's own extraction ran on every statement, through the scripted model.
    kinds = {call.kind for call in served.stack.model.calls()}
    assert "mem0.additive-extraction" in kinds and "unknown" not in kinds


def test_identical_concurrent_adds_leave_duplicates_and_forget_takes_every_copy(
    served: Served,
) -> None:
    """mem0ai/mem0 #6515: two identical adds at once both pass Mem0's md5 dedup (each
    searched before the other inserted), so the user has the memory twice; a forget that
    deleted one id would leave the copy. The mem0 target's forget deletes every memory
    holding the value (as memlife's target files select them), so nothing is left."""
    import threading

    runtime = served.stack.runtime
    user_id, _ = runtime.register("+15550006515")
    statement = "The name of my pet is Biscuit Ravenscroft Quill."
    # "At once" made certain: each add's search of the user's memories waits for the
    # other's before going on (around Mem0, in its vector store; Mem0's pipeline as is).
    store, both_searched = runtime.memory.vector_store, threading.Barrier(2, timeout=30)
    search = store.search

    def searched_together(*args: object, **kwargs: object) -> object:
        found = search(*args, **kwargs)
        both_searched.wait()
        return found

    store.search = searched_together
    try:
        threads = [
            threading.Thread(target=runtime.converse, args=("+15550006515", statement))
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        del store.search
    held = runtime.memory.get_all(filters={"user_id": user_id}, top_k=100)["results"]
    assert [m["memory"] for m in held] == ["The name of my pet is Biscuit Ravenscroft Quill"] * 2
    assert runtime.forget(user_id, ["Biscuit Ravenscroft Quill"])["memories"] == 2
    assert runtime.memory.get_all(filters={"user_id": user_id}, top_k=100)["results"] == []
