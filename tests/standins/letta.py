"""A stand-in for the Letta API, for tests: NOT Letta.

It follows the Letta server's REST API as its source describes it at the last server release,
`letta` 0.16.8 (github.com/letta-ai/letta, tag 0.16.8: letta/server/rest_api/app.py,
middleware/check_password.py, routers/v1/agents.py, blocks.py, passages.py; the ORM in
letta/orm/), and as the `letta-client` 1.12.1 Python client sends and parses it
(letta_client/_client.py, resources/agents/, resources/blocks/, resources/passages.py,
types/), so that `Letta(api_key=..., base_url=url)` drives it unchanged:

- keys as `Authorization: Bearer <key>` (a self-hosted server in secure mode also takes
  `X-BARE-PASSWORD: password <key>`); anything else is 401 `{"detail": "Unauthorized"}`.
- ids are `agent-<uuid4>`, `block-<uuid4>`, `message-<uuid4>`, `passage-<uuid4>`; a path id
  of the wrong form is 422 (letta/validators.py), an unknown one 404 `{"detail": ...}`.
- models: GET /v1/models/ (the LLM handles a new agent may name).
- agents: POST /v1/agents/ (200 AgentState; `memory_blocks` become the agent's core-memory
  blocks), GET /v1/agents/ (a bare list, `after`/`before`/`limit` cursors), GET and DELETE
  /v1/agents/{id} (DELETE: 200 `{"message": "Agent id=… successfully deleted"}`).
- messages: POST /v1/agents/{id}/messages (`messages` or `input`) answers a LettaResponse:
  `messages` of several `message_type`s (a reasoning message, the assistant's message),
  `stop_reason` and `usage`; GET /v1/agents/{id}/messages is the recall memory (newest first
  by default).
- core memory: GET /v1/agents/{id}/core-memory/blocks, GET/PATCH …/blocks/{label}, PATCH
  …/blocks/attach|detach/{block_id} (answers the AgentState); standalone blocks: POST, GET
  (`value_search`, `label`, `connected_to_agents_count_eq`), PATCH and DELETE /v1/blocks/….
- archival memory: POST/GET /v1/agents/{id}/archival-memory (lists of passages), GET
  …/archival-memory/search (`{results, count}`), DELETE …/archival-memory/{memory_id} (which,
  as upstream's delete_passage, deletes the passage by its id alone, whichever agent's path
  names it), and POST /v1/passages/search across the organization.

Deleting an agent does what 0.16.8's AgentManager.delete_agent_async and its ORM do: the
agent row goes, and with it (by foreign-key cascade, on PostgreSQL) its messages and its
links to blocks and archives; its core-memory blocks and its archive's passages are not
deleted (nothing cascades from an agent to a block or an archive), so they stay readable at
/v1/blocks/ and /v1/passages/search, while every /v1/agents/{id}/… read of it answers 404
(except the archival list, which answers 200 and empty: it does not look the agent up).
Checked against a real 0.16.8 server on PostgreSQL: after the deletion, the agent's blocks
are still found by `value_search`, its message rows are gone.

Where a Letta agent is an LLM that keeps what it learns in its memory with tools, this one
appends each statement (a user message without a question mark) to its `human` block, and
answers a question with the lines of its core-memory blocks (its own and the shared blocks
attached to it) sharing words with it, or says it does not know.
"""

from __future__ import annotations

import math
import random
import re
import threading
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from unidecode import unidecode

CHAR_LIMIT = 100_000  # a block's default character limit, as 0.16.8 answers it


def _id_path(prefix: str) -> Any:
    return Path(
        pattern=f"^{prefix}-[0-9a-f]{{8}}-[0-9a-f]{{4}}-4[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}"
        "-[0-9a-f]{12}$"
    )


AgentId = Annotated[str, _id_path("agent")]
BlockId = Annotated[str, _id_path("block")]
Auth = Annotated[str | None, Header(alias="Authorization")]
Bare = Annotated[str | None, Header(alias="X-BARE-PASSWORD")]
IntList = Annotated[list[int] | None, Query()]
StrList = Annotated[list[str] | None, Query()]


class LettaError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class CreateBlock(Loose):
    label: str
    value: str = ""
    limit: int = CHAR_LIMIT
    description: str | None = None


class CreateAgent(Loose):
    name: str | None = None
    model: str | None = None
    embedding: str | None = None
    agent_type: str = "letta_v1_agent"
    system: str | None = None
    memory_blocks: list[CreateBlock] | None = None
    block_ids: list[str] | None = None
    tags: list[str] | None = None
    tools: list[str] | None = None


class ModifyBlock(Loose):
    value: str | None = None
    label: str | None = None
    description: str | None = None
    limit: int | None = None


class MessageIn(Loose):
    role: str = "user"
    content: str | list[dict[str, Any]]


class SendMessages(Loose):
    messages: list[MessageIn] | None = None
    input: str | list[dict[str, Any]] | None = None
    streaming: bool | None = None


class CreatePassage(Loose):
    text: str
    tags: list[str] | None = None
    created_at: str | None = None


class SearchPassages(Loose):
    query: str | None = None
    agent_id: str | None = None
    archive_id: str | None = None
    limit: int = 50


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", unidecode(text).casefold()) if len(w) > 3}


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content)


def _window(
    items: list[dict[str, Any]], after: str | None, before: str | None, limit: int | None
) -> list[dict[str, Any]]:
    """Letta's cursor pagination: items after (or before) the one with that id."""
    ids = [item["id"] for item in items]
    if after is not None:
        items = items[ids.index(after) + 1 :] if after in ids else []
    if before is not None:
        ids = [item["id"] for item in items]
        items = items[: ids.index(before)] if before in ids else []
        return items[-limit:] if limit else items
    return items[:limit] if limit else items


EMBEDDING_DIM = 1536
MAX_EMBEDDING_DIM = 4096  # letta/constants.py


def _embedding(text: str) -> list[float]:
    """A passage's vector as Letta answers it: the model's, padded with zeros to 4096
    (letta/schemas/passage.py pad_embeddings), so that every passage read is as large as
    the real server's. Here a unit vector from the text's hash stands for the model's."""
    rng = random.Random(text)
    vector = [rng.gauss(0.0, 1.0) for _ in range(EMBEDDING_DIM)]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector] + [0.0] * (MAX_EMBEDDING_DIM - EMBEDDING_DIM)


def create_app(api_key: str | None) -> FastAPI:
    """Letta for `api_key` (None: a self-hosted server without a password, open to all)."""
    lock = threading.RLock()
    agents: dict[str, dict[str, Any]] = {}  # id -> AgentState fields (+ "block_ids")
    blocks: dict[str, dict[str, Any]] = {}
    messages: dict[str, list[dict[str, Any]]] = {}  # agent id -> recall memory
    archives: dict[str, dict[str, Any]] = {}  # archive id -> {"agent_ids", "passages"}
    app = FastAPI(title="Letta API (memlife test stand-in, not Letta)")

    @app.exception_handler(LettaError)
    async def letta_error(_: Request, exc: LettaError) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": exc.detail})

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": exc.errors()[:3]})

    def authorized(authorization: str | None, bare: str | None) -> None:
        if (
            api_key is not None
            and authorization != f"Bearer {api_key}"
            and bare != f"password {api_key}"
        ):
            raise LettaError(401, "Unauthorized")

    def agent_of(agent_id: str) -> dict[str, Any]:
        agent = agents.get(agent_id)
        if agent is None:
            raise LettaError(404, f"Agent not found with identifier {agent_id}")
        return agent

    def block_of(block_id: str) -> dict[str, Any]:
        block = blocks.get(block_id)
        if block is None:
            raise LettaError(404, f"Block with id '{block_id}' not found")
        return block

    def new_block(body: CreateBlock) -> dict[str, Any]:
        if len(body.value) > body.limit:
            raise LettaError(
                400,
                f"Edit failed: Exceeds {body.limit} character limit (requested {len(body.value)})",
            )
        block = {
            "id": f"block-{uuid.uuid4()}",
            "label": body.label,
            "value": body.value,
            "limit": body.limit,
            "description": body.description,
            "read_only": False,
            "is_template": False,
            "metadata": {},
        }
        blocks[block["id"]] = block
        return block

    def agent_blocks(agent: dict[str, Any]) -> list[dict[str, Any]]:
        return [blocks[b] for b in agent["block_ids"] if b in blocks]

    def state(agent: dict[str, Any]) -> dict[str, Any]:
        own = agent_blocks(agent)
        view = {k: v for k, v in agent.items() if k != "block_ids"}
        view.update(blocks=own, memory={"blocks": own, "prompt_template": ""})
        return view

    def archive_of(agent_id: str) -> dict[str, Any]:
        """The agent's default archive, made on its first archival insert (as upstream's
        get_or_create_default_archive_for_agent_async)."""
        for archive in archives.values():
            if agent_id in archive["agent_ids"]:
                return archive
        archive = {"id": f"archive-{uuid.uuid4()}", "agent_ids": {agent_id}, "passages": []}
        archives[archive["id"]] = archive
        return archive

    def passages_of(agent_id: str) -> list[dict[str, Any]]:
        return [p for a in archives.values() if agent_id in a["agent_ids"] for p in a["passages"]]

    def message(kind: str, agent_id: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"message-{uuid.uuid4()}",
            "date": _now(),
            "message_type": kind,
            "agent_id": agent_id,
            **fields,
        }

    # Models ------------------------------------------------------------------------------

    @app.get("/v1/models/")
    def list_models(authorization: Auth = None, bare: Bare = None) -> Any:
        """The server's LLM handles (routers/v1/llms.py): Letta Cloud's OpenAI model."""
        authorized(authorization, bare)
        return [
            {
                "handle": "openai/gpt-4o-mini",
                "name": "gpt-4o-mini",
                "display_name": "gpt-4o-mini",
                "model": "gpt-4o-mini",
                "model_type": "llm",
                "provider_type": "openai",
                "provider_name": "openai",
                "provider_category": "base",
                "model_endpoint_type": "openai",
                "context_window": 128000,
                "max_context_window": 128000,
            }
        ]

    # Agents ------------------------------------------------------------------------------

    @app.post("/v1/agents/")
    def create_agent(body: CreateAgent, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            for block_id in body.block_ids or []:
                block_of(block_id)
            agent_id = f"agent-{uuid.uuid4()}"
            own = [new_block(b)["id"] for b in body.memory_blocks or []]
            agents[agent_id] = {
                "id": agent_id,
                "name": body.name or f"agent-{len(agents) + 1}",
                "agent_type": body.agent_type,
                "model": body.model,
                "embedding": body.embedding,
                "system": body.system or "You are Letta.",
                "tags": body.tags or [],
                "sources": [],
                # The tools named, as upstream attaches them (their full Tool rows there).
                "tools": [{"name": name} for name in body.tools or []],
                "llm_config": {
                    "model": (body.model or "").split("/")[-1],
                    "model_endpoint_type": (body.model or "openai/").split("/")[0],
                    "context_window": 32000,
                },
                "embedding_config": {
                    "embedding_model": (body.embedding or "").split("/")[-1],
                    "embedding_endpoint_type": "openai",
                    "embedding_dim": 1536,
                },
                "created_at": _now(),
                "block_ids": [*own, *(body.block_ids or [])],
            }
            messages[agent_id] = []
            return state(agents[agent_id])

    @app.get("/v1/agents/")
    def list_agents(
        name: str | None = None,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(50),
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            found = [state(a) for a in agents.values() if name in (None, a["name"])]
            return _window(found, after, before, limit)

    @app.get("/v1/agents/{agent_id}")
    def retrieve_agent(agent_id: AgentId, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            return state(agent_of(agent_id))

    @app.delete("/v1/agents/{agent_id}")
    def delete_agent(agent_id: AgentId, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            agent_of(agent_id)
            del agents[agent_id]
            messages.pop(agent_id, None)  # ON DELETE CASCADE (PostgreSQL)
            for archive in archives.values():  # the link goes; the archive stays
                archive["agent_ids"].discard(agent_id)
            # Its blocks stay: only the blocks_agents rows cascade.
        return {"message": f"Agent id={agent_id} successfully deleted"}

    # Messages ----------------------------------------------------------------------------

    @app.post("/v1/agents/{agent_id}/messages")
    def send(
        agent_id: AgentId, body: SendMessages, authorization: Auth = None, bare: Bare = None
    ) -> Any:
        authorized(authorization, bare)
        if body.streaming:
            raise LettaError(400, "streaming is not supported by this stand-in")
        incoming = (
            [MessageIn(role="user", content=body.input)]
            if body.input is not None
            else list(body.messages or [])
        )
        if not incoming:
            raise LettaError(400, "No messages or input provided")
        with lock:
            agent = agent_of(agent_id)
            recall = messages[agent_id]
            for item in incoming:
                recall.append(
                    message(f"{item.role}_message", agent_id, content=_text(item.content))
                )
            text = _text(incoming[-1].content)
            if "?" in text:
                lines = [line for b in agent_blocks(agent) for line in b["value"].splitlines()]
                known = [line for line in lines if _words(line) & _words(text)]
                answer = " ".join(known) if known else "I don't have that information."
                thought = "The user asks about something; checking my memory blocks."
            else:
                human = next((b for b in agent_blocks(agent) if b["label"] == "human"), None)
                if human is None:
                    human = new_block(CreateBlock(label="human"))
                    agent["block_ids"].append(human["id"])
                human["value"] = "\n".join(v for v in (human["value"], text) if v)
                answer = "Noted, I will remember that."
                thought = "The user told me something about themselves; saving it to memory."
            out = [
                message(
                    "reasoning_message", agent_id, reasoning=thought, source="non_reasoner_model"
                ),
                message("assistant_message", agent_id, content=answer),
            ]
            recall.extend(out)
        return {
            "messages": out,
            "stop_reason": {"message_type": "stop_reason", "stop_reason": "end_turn"},
            "usage": {
                "message_type": "usage_statistics",
                "completion_tokens": 12,
                "prompt_tokens": 30,
                "total_tokens": 42,
                "step_count": 1,
            },
        }

    @app.get("/v1/agents/{agent_id}/messages")
    def list_messages(
        agent_id: AgentId,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(100),
        order: str = Query("desc"),
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            agent_of(agent_id)
            recall = list(messages[agent_id])
            if order == "desc":
                recall.reverse()
            return _window(recall, after, before, limit)

    # Core memory -------------------------------------------------------------------------

    @app.get("/v1/agents/{agent_id}/core-memory/blocks")
    def list_core_blocks(
        agent_id: AgentId,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(50),
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            return _window(agent_blocks(agent_of(agent_id)), after, before, limit)

    def labelled(agent_id: str, label: str) -> dict[str, Any]:
        found = [b for b in agent_blocks(agent_of(agent_id)) if b["label"] == label]
        if not found:
            raise LettaError(404, f"Block with label '{label}' not found")
        return found[0]

    @app.get("/v1/agents/{agent_id}/core-memory/blocks/{block_label}")
    def retrieve_core_block(
        agent_id: AgentId, block_label: str, authorization: Auth = None, bare: Bare = None
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            return labelled(agent_id, block_label)

    @app.patch("/v1/agents/{agent_id}/core-memory/blocks/{action}/{block_id}")
    def attach(
        agent_id: AgentId,
        action: str,
        block_id: BlockId,
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            if action not in ("attach", "detach"):
                raise LettaError(404, "Not Found")
            agent, _ = agent_of(agent_id), block_of(block_id)
            if action == "attach" and block_id not in agent["block_ids"]:
                agent["block_ids"].append(block_id)
            if action == "detach" and block_id in agent["block_ids"]:
                agent["block_ids"].remove(block_id)
            return state(agent)

    @app.patch("/v1/agents/{agent_id}/core-memory/blocks/{block_label}")
    def modify_core_block(
        agent_id: AgentId,
        block_label: str,
        body: ModifyBlock,
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            return update_block(labelled(agent_id, block_label), body)

    # Standalone blocks -------------------------------------------------------------------

    def update_block(block: dict[str, Any], body: ModifyBlock) -> dict[str, Any]:
        changes = body.model_dump(exclude_unset=True)
        value = changes.get("value", block["value"])
        if len(value) > changes.get("limit", block["limit"]):
            raise LettaError(
                400,
                f"Edit failed: Exceeds {block['limit']} character limit (requested {len(value)})",
            )
        block.update({k: v for k, v in changes.items() if k in block})
        return block

    def links(block_id: str) -> int:
        return sum(block_id in a["block_ids"] for a in agents.values())

    @app.post("/v1/blocks/")
    def create_block(body: CreateBlock, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            return new_block(body)

    @app.get("/v1/blocks/")
    def list_blocks(
        label: str | None = None,
        value_search: str | None = None,
        connected_to_agents_count_eq: IntList = None,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(50),
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            found = [
                b
                for b in blocks.values()
                if label in (None, b["label"])
                and (
                    value_search is None  # ILIKE '%…%'
                    or value_search.casefold() in b["value"].casefold()
                )
                and (
                    connected_to_agents_count_eq is None
                    or links(b["id"]) in connected_to_agents_count_eq
                )
            ]
            return _window(found, after, before, limit)

    @app.get("/v1/blocks/{block_id}")
    def retrieve_block(block_id: BlockId, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            return block_of(block_id)

    @app.patch("/v1/blocks/{block_id}")
    def modify_block(
        block_id: BlockId, body: ModifyBlock, authorization: Auth = None, bare: Bare = None
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            return update_block(block_of(block_id), body)

    @app.delete("/v1/blocks/{block_id}")
    def delete_block(block_id: BlockId, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            block_of(block_id)
            del blocks[block_id]
            for agent in agents.values():
                if block_id in agent["block_ids"]:
                    agent["block_ids"].remove(block_id)
        return None

    @app.get("/v1/blocks/{block_id}/agents")
    def agents_of_block(
        block_id: BlockId,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(50),
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            block_of(block_id)
            return _window(
                [state(a) for a in agents.values() if block_id in a["block_ids"]],
                after,
                before,
                limit,
            )

    # Archival memory ---------------------------------------------------------------------

    @app.post("/v1/agents/{agent_id}/archival-memory")
    def insert_passage(
        agent_id: AgentId, body: CreatePassage, authorization: Auth = None, bare: Bare = None
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            agent_of(agent_id)
            archive = archive_of(agent_id)
            passage = {
                "id": f"passage-{uuid.uuid4()}",
                "text": body.text,
                "archive_id": archive["id"],
                "tags": body.tags or [],
                "created_at": body.created_at or _now(),
                "metadata": {},
                "is_deleted": False,
                "embedding": _embedding(body.text),
                "embedding_config": {
                    "embedding_model": "text-embedding-3-small",
                    "embedding_endpoint_type": "openai",
                    "embedding_dim": EMBEDDING_DIM,
                },
            }
            archive["passages"].append(passage)
            return [passage]

    @app.get("/v1/agents/{agent_id}/archival-memory")
    def list_passages(
        agent_id: AgentId,
        after: str | None = None,
        before: str | None = None,
        limit: int | None = Query(100),
        search: str | None = None,
        ascending: bool = True,
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:  # no agent check upstream: a deleted agent's list is 200 and empty
            found = [
                p
                for p in passages_of(agent_id)
                if search is None or _words(search) & _words(p["text"])
            ]
            if not ascending:
                found.reverse()
            return _window(found, after, before, limit)

    @app.get("/v1/agents/{agent_id}/archival-memory/search")
    def search_archival(
        agent_id: AgentId,
        query: str,
        top_k: int | None = None,
        tags: StrList = None,
        authorization: Auth = None,
        bare: Bare = None,
    ) -> Any:
        authorized(authorization, bare)
        with lock:  # no agent check upstream: a deleted agent's list is 200 and empty
            found = [
                p
                for p in passages_of(agent_id)
                if _words(query) & _words(p["text"]) and (not tags or set(tags) & set(p["tags"]))
            ][: top_k or 10]
            return {
                "results": [
                    {
                        "id": p["id"],
                        "content": p["text"],
                        "timestamp": p["created_at"],
                        "tags": p["tags"],
                    }
                    for p in found
                ],
                "count": len(found),
            }

    @app.delete("/v1/agents/{agent_id}/archival-memory/{memory_id}")
    def delete_passage(
        agent_id: AgentId, memory_id: str, authorization: Auth = None, bare: Bare = None
    ) -> Any:
        authorized(authorization, bare)
        with lock:
            for archive in archives.values():  # by id alone, as upstream
                for passage in archive["passages"]:
                    if passage["id"] == memory_id:
                        archive["passages"].remove(passage)
                        return {"message": f"Memory id={memory_id} successfully deleted"}
            raise LettaError(404, f"Passage not found with identifier {memory_id}")

    @app.post("/v1/passages/search")
    def search_passages(body: SearchPassages, authorization: Auth = None, bare: Bare = None) -> Any:
        authorized(authorization, bare)
        with lock:
            if body.agent_id is not None:
                agent_of(body.agent_id)
                pool = passages_of(body.agent_id)
            elif body.archive_id is not None:
                pool = list(archives.get(body.archive_id, {"passages": []})["passages"])
            else:  # every passage of the organization, its agents' or not
                pool = [p for a in archives.values() for p in a["passages"]]
            query = _words(body.query or "")
            scored = sorted(
                ((len(query & _words(p["text"])) / (len(query) or 1), p) for p in pool),
                key=lambda pair: -pair[0],
            )
            return [
                {"passage": p, "score": score, "metadata": {}} for score, p in scored[: body.limit]
            ]

    return app
