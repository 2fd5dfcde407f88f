"""Follows letta-client 1.12.1 and letta-ai/letta 0.16.8 (letta/server/rest_api/routers/v1/
agents.py, blocks.py, passages.py; letta/schemas/passage.py; letta_client/resources/).

The Letta stand-in driven by Letta's own Python client (`letta-client` 1.x): it accepts
what the client sends (`Authorization: Bearer`, the /v1 paths, bodies) and answers in shapes
the client parses, with the statuses its errors map."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.servers import serve_in_thread
from tests.standins.letta import create_app

# The client is imported where it is used, not at collection: every test worker collects
# this module, and letta_client is some 260 modules (0.37 s of each worker's start, and
# compiled first by each in a fresh clone).
if TYPE_CHECKING:
    from letta_client import Letta

KEY = "letta-key-20f7"
TARGETS = Path(__file__).resolve().parents[2] / "scenarios" / "targets"
MEMORY = [
    {"label": "human", "value": ""},
    {"label": "persona", "value": "A helpful assistant that remembers."},
]


@pytest.fixture
def letta_url() -> Iterator[str]:
    with serve_in_thread(create_app(KEY)) as url:
        yield url


@pytest.fixture
def letta(letta_url: str) -> Letta:
    from letta_client import Letta

    return Letta(api_key=KEY, base_url=letta_url, timeout=5, max_retries=0)


def _reply(response: object) -> str:
    return " ".join(
        str(m.content)
        for m in response.messages  # type: ignore[attr-defined]
        if m.message_type == "assistant_message"
    )


def test_each_agent_remembers_what_it_was_told_in_its_core_memory(letta: Letta) -> None:
    ana = letta.agents.create(
        name="ana",
        model="openai/gpt-4o-mini",
        embedding="openai/text-embedding-3-small",
        memory_blocks=MEMORY,
    )
    bruno = letta.agents.create(name="bruno", model="openai/gpt-4o-mini", memory_blocks=MEMORY)
    assert ana.id.startswith("agent-") and ana.id != bruno.id
    assert {b.label for b in ana.memory.blocks} == {"human", "persona"}

    told = letta.agents.messages.create(
        ana.id, messages=[{"role": "user", "content": "Mi mascota se llama Canelo."}]
    )
    assert [m.message_type for m in told.messages] == ["reasoning_message", "assistant_message"]
    assert told.stop_reason.stop_reason == "end_turn" and told.usage.total_tokens
    letta.agents.messages.create(bruno.id, input="Mi mascota se llama Luna.")
    answer = letta.agents.messages.create(
        ana.id, messages=[{"role": "user", "content": "¿Cómo se llama mi mascota?"}]
    )
    assert "Canelo" in _reply(answer) and "Luna" not in _reply(answer)
    human = letta.agents.blocks.retrieve("human", agent_id=ana.id)
    assert "Canelo" in human.value
    # Recall memory: the whole conversation, newest first, a page at a time.
    recall = letta.agents.messages.list(ana.id, limit=2)
    assert len(recall.items) == 2 and recall.items[0].message_type == "assistant_message"
    assert len(list(recall)) == 6


def test_deleting_an_agent_leaves_its_blocks_and_archival_passages(letta: Letta) -> None:
    from letta_client import NotFoundError

    agent = letta.agents.create(name="ana", model="openai/gpt-4o-mini", memory_blocks=MEMORY)
    letta.agents.messages.create(agent.id, input="Trabajo en Conservas Palacios.")
    passage = letta.agents.passages.create(agent.id, text="Ana trabaja en Conservas Palacios.")
    assert passage[0].id and passage[0].text.startswith("Ana")
    found = letta.agents.passages.search(agent.id, query="Conservas Palacios")
    assert found.count == 1 and found.results[0].content == passage[0].text
    assert [p.id for p in letta.agents.passages.list(agent.id)] == [passage[0].id]

    deleted = letta.agents.delete(agent.id)
    assert "successfully deleted" in str(deleted)
    for gone in (
        lambda: letta.agents.retrieve(agent.id),
        lambda: letta.agents.messages.create(agent.id, input="¿Dónde trabajo?"),
        lambda: letta.agents.messages.list(agent.id),
        lambda: letta.agents.blocks.list(agent.id),
        lambda: letta.agents.delete(agent.id),
    ):
        with pytest.raises(NotFoundError) as refused:
            gone()
        assert refused.value.status_code == 404
    # As the 0.16.8 server answers it: the archival list does not look the agent up.
    assert letta.agents.passages.list(agent.id) == []
    # What 0.16.8's ORM leaves: the blocks (only their links cascade) and the archive's
    # passages, readable by value across the organization.
    orphans = letta.blocks.list(value_search="Conservas Palacios")
    assert [b.label for b in orphans] == ["human"]
    assert [b.label for b in letta.blocks.list(connected_to_agents_count_eq=[0])] == [
        "human",
        "persona",
    ]
    hits = letta.passages.search(query="Conservas Palacios")
    assert [hit.passage.text for hit in hits] == [passage[0].text]


def test_shared_blocks_attach_and_detach(letta: Letta) -> None:
    from letta_client import NotFoundError

    ana = letta.agents.create(name="ana", model="openai/gpt-4o-mini", memory_blocks=MEMORY)
    bruno = letta.agents.create(name="bruno", model="openai/gpt-4o-mini", memory_blocks=MEMORY)
    team = letta.blocks.create(label="team", value="", description="a shared space")
    assert team.id.startswith("block-")
    letta.blocks.update(team.id, value="El proveedor del equipo es Conservas Palacios.")
    state = letta.agents.blocks.attach(team.id, agent_id=ana.id)
    assert team.id in [b.id for b in state.memory.blocks]
    question = "¿Cuál es el proveedor del equipo?"
    assert "Palacios" in _reply(letta.agents.messages.create(ana.id, input=question))
    assert "Palacios" not in _reply(letta.agents.messages.create(bruno.id, input=question))
    assert [a.id for a in letta.blocks.agents.list(team.id)] == [ana.id]
    letta.agents.blocks.detach(team.id, agent_id=ana.id)
    assert "Palacios" not in _reply(letta.agents.messages.create(ana.id, input=question))
    letta.blocks.delete(team.id)
    with pytest.raises(NotFoundError):
        letta.blocks.retrieve(team.id)


def test_refusals_map_to_the_clients_errors(letta_url: str, letta: Letta) -> None:
    from letta_client import AuthenticationError, Letta, NotFoundError, UnprocessableEntityError

    with pytest.raises(AuthenticationError):
        Letta(api_key="wrong", base_url=letta_url, max_retries=0).agents.list()
    # A self-hosted server in secure mode also takes its password in X-BARE-PASSWORD.
    bare = Letta(
        api_key=None,
        base_url=letta_url,
        max_retries=0,
        default_headers={"X-BARE-PASSWORD": f"password {KEY}"},
    )
    assert bare.agents.list().items == []
    with pytest.raises(UnprocessableEntityError):  # not an agent-<uuid4>
        letta.agents.retrieve("agent-42")
    with pytest.raises(NotFoundError):
        letta.agents.retrieve("agent-123e4567-e89b-42d3-8456-426614174000")


def test_agents_page_by_cursor(letta: Letta) -> None:
    made = [letta.agents.create(name=f"a{i}", model="openai/gpt-4o-mini").id for i in range(5)]
    page = letta.agents.list(limit=2)
    assert [a.id for a in page.items] == made[:2]
    assert [a.id for a in page] == made


def test_the_async_client_speaks_to_it_too(letta_url: str) -> None:
    from letta_client import AsyncLetta

    async def flow() -> str:
        client = AsyncLetta(api_key=KEY, base_url=letta_url, max_retries=0)
        agent = await client.agents.create(model="openai/gpt-4o-mini", memory_blocks=MEMORY)
        await client.agents.messages.create(agent.id, input="Mi color favorito es el verde.")
        return _reply(
            await client.agents.messages.create(agent.id, input="¿Cuál es mi color favorito?")
        )

    assert "verde" in asyncio.run(flow())


def test_the_shipped_file_reads_a_full_page_of_passages_as_large_as_the_servers(
    letta_url: str, letta: Letta, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Letta 0.16.8 answers each passage with its embedding padded to 4096 floats
    # (letta/schemas/passage.py Passage.pad_embeddings, MAX_EMBEDDING_DIM in
    # letta/constants.py), and POST /v1/passages/search returns up to 100 of them
    # (letta/server/rest_api/routers/v1/passages.py PassageSearchRequest.limit, le=100): a
    # search of every passage of the organization outgrew the default 1 MiB cap on a real
    # server's nightly, and every archival read after it was inconclusive.
    from memlife.rules.target import load_target
    from memlife.targets.http import call, close_clients

    agent = letta.agents.create(name="ana", model="openai/gpt-4o-mini", memory_blocks=MEMORY)
    for index in range(100):
        letta.agents.passages.create(agent.id, text=f"Ana trabaja en Conservas {index}.")
    monkeypatch.setenv("LETTA_API_KEY", KEY)
    target = load_target(TARGETS / "letta.yaml").model_copy(update={"base_url": letta_url})
    archival = next(store for store in target.stores if store.name == "archival")

    async def search() -> object:
        try:
            return await call(target, archival.probe.needle, {"needle": "Conservas"})
        finally:
            await close_clients()

    response = asyncio.run(search())
    assert len(response.data) == 100  # type: ignore[attr-defined]
    assert len(response.data[0]["passage"]["embedding"]) == 4096  # type: ignore[attr-defined]
