"""The graphiti target (graphiti-core 0.31.2 on FalkorDB, its LLM paths answered by
memlife's scripted model) run through the nightly lifecycle, and memlife's verdicts compared
with what Graphiti's graphs really hold afterwards, read directly with FalkorDB's client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.graphiti.app import create_app
from memlife.bundled.graphiti.serve import graphiti_stack
from memlife.bundled.model.serve import ScriptedModel, summary
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import load_target
from tests.groups import MINILM
from tests.reliability.helpers import small_nightly
from tests.servers import serve_in_thread
from tests.workflows.helpers import erased_values, holds, run_artifact, run_input, run_suite

# The module's tests share a worker, so its stack starts once (with MiniLM's other users).
pytestmark = [pytest.mark.slow, MINILM]

REPO = Path(__file__).resolve().parents[2]
TARGET_FILE = REPO / "scenarios" / "targets" / "graphiti.yaml"


@dataclass
class Stack:
    base_url: str
    falkordb_url: str
    model: ScriptedModel


@pytest.fixture(scope="module")
def graphiti(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    pytest.importorskip("graphiti_core")
    saved = dict(os.environ)
    with graphiti_stack(tmp_path_factory.mktemp("graphiti")) as stack:
        os.environ.update(stack.environment)
        try:
            with serve_in_thread(create_app(stack.runtime)) as base_url:
                yield Stack(base_url, stack.runtime.falkordb_url, stack.model)
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _graphs(stack: Stack) -> dict[str, list[tuple[str, str]]]:
    """(group id, text) of every entity (name: summary), fact edge and episode of every
    tenant's graph, read past the target with FalkorDB's own client."""
    from falkordb import FalkorDB

    client = FalkorDB.from_url(stack.falkordb_url)
    held: dict[str, list[tuple[str, str]]] = {"entities": [], "edges": [], "episodes": []}
    queries = {
        "entities": "MATCH (n:Entity) RETURN n.group_id, n.name + ': ' + n.summary",
        "edges": "MATCH ()-[e:RELATES_TO]->() RETURN e.group_id, "
        "e.fact + coalesce(' (invalid since ' + e.invalid_at + ')', '')",
        "episodes": "MATCH (e:Episodic) RETURN e.group_id, e.content",
    }
    for name in client.list_graphs():
        if str(name).startswith("tenant_"):
            graph = client.select_graph(name)
            for store, query in queries.items():
                held[store] += [(str(g), str(t)) for g, t in graph.ro_query(query).result_set]
    return held


async def test_the_nightly_on_graphiti_finds_what_its_graphs_hold(
    graphiti: Stack, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    target = load_target(TARGET_FILE).model_copy(update={"base_url": graphiti.base_url})
    scenario = small_nightly("graphiti", pairs=1)
    run = run_input(scenario, target, fresh=True)
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]

    # Every store was read, every model call had a rule; answers recall and never leak.
    assert artifact["inconclusive"] == []
    assert not [c for c in graphiti.model.calls() if c.error], summary(graphiti.model.calls())
    assert by_invariant["recall"]["checked"] > 0 and by_invariant["recall"]["failed"] == 0
    for invariant in ("I1", "I2", "I3", "D2", "L"):
        assert by_invariant[invariant]["checked"] > 0, invariant
        assert by_invariant[invariant]["failed"] == 0, invariant

    # memlife's erasure findings, store by store, are what the graphs hold after the run.
    held = _graphs(graphiti)
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
        for store, rows in held.items()
        if holds([text for _, text in rows], value)
    }
    assert found == truth
    # clear_data empties a deleted tenant's group; remove_episode takes a forgotten fact's
    # episode, its edge and its entity, and rebuilds the summaries of the entities that stay
    # (graphiti-core 0.31.2): nothing of an erased value is left in the graphs.
    assert truth == set()

    # An update is served as the one current fact: Graphiti invalidates the old edge (kept,
    # dated, as its stores declare) and the search asks for facts still valid.
    assert by_invariant["U1"]["checked"] > 0 and by_invariant["U1"]["failed"] == 0
    first_employer = scenario.pairs[0].tenant("b").facts["employer"].value
    old = [text for _, text in held["edges"] if holds([text], first_employer)]
    assert old and all("(invalid since " in text for text in old)

    # Deleted bytes stay in FalkorDB's append-only file: physical residue, reported apart.
    physical = [f for f in artifact["failures"] if f["invariant"] == "I4-physical"]
    assert physical and all(f["store"] == "disk" for f in physical)
    assert {(f["tenant"], f["evidence"]["value"]) for f in physical} <= erased

    # The model was asked only what its Graphiti rules know.
    kinds = {call.kind for call in graphiti.model.calls()}
    assert {
        "graphiti.extract-nodes",
        "graphiti.extract-edges",
        "graphiti.dedupe-edges",
        "graphiti.summarize-from-episodes",
        "embeddings",
    } <= kinds
    assert kinds <= {"embeddings"} | {
        f"graphiti.{k}"
        for k in (
            "extract-nodes",
            "dedupe-nodes",
            "extract-edges",
            "extract-timestamps",
            "dedupe-edges",
            "summarize-entities",
            "summarize-from-episodes",
        )
    }
    # Graphiti's FalkorDB driver keeps a graph per group: the probes read each tenant's.
    assert len({group for rows in held.values() for group, _ in rows}) >= 1


async def test_graphiti_answers_the_english_nightly(
    graphiti: Stack, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    target = load_target(TARGET_FILE).model_copy(update={"base_url": graphiti.base_url})
    english = load_scenario(REPO / "scenarios" / "lifecycle-nightly-en.yaml")
    assert english.generate is not None
    run = run_input(
        materialize(
            english.model_copy(
                update={"generate": english.generate.model_copy(update={"count": 1})}
            ),
            "graphiti-en",
        ),
        target,
        fresh=True,
    )
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]
    assert artifact["inconclusive"] == []
    for invariant in ("recall", "I1", "I2", "I3", "I4", "U1"):
        assert by_invariant[invariant]["checked"] > 0, invariant
        assert by_invariant[invariant]["failed"] == 0, invariant
    # A retrieval answer: the facts Graphiti's search found, each as the user said it.
    replies = [o["reply"] or "" for o in artifact["observations"] if o["kind"] == "probe"]
    assert any(reply.startswith(("I work at", "Now I work at")) for reply in replies)
