"""A stand-in for the Letta API, for tests: NOT Letta.

It follows the shapes of Letta's API reference for agents and their messages: POST
/v1/agents (memory blocks, model, embedding) answering the agent's `id`, POST
/v1/agents/{agent_id}/messages answering `messages` of several `message_type`s (a
reasoning message, then the assistant's), DELETE /v1/agents/{agent_id}; keys as
`Authorization: Bearer …`; and standalone memory blocks shared between agents: POST
/v1/blocks/, PATCH /v1/blocks/{block_id} (its value), PATCH
/v1/agents/{agent_id}/core-memory/blocks/attach|detach/{block_id}, DELETE
/v1/blocks/{block_id}. Where a Letta agent is an LLM that keeps what it learns in its
memory, this one keeps each statement and answers a question with the statements, and the
values of the blocks attached to it, sharing words with it, or says it does not know.
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel
from unidecode import unidecode


class Block(BaseModel):
    label: str
    value: str


class CreateAgent(BaseModel):
    name: str | None = None
    model: str
    embedding: str
    memory_blocks: list[Block] = []


class CreateBlock(BaseModel):
    label: str
    value: str = ""
    description: str | None = None


class ModifyBlock(BaseModel):
    value: str


class LettaMessage(BaseModel):
    role: str
    content: str


class SendMessages(BaseModel):
    messages: list[LettaMessage]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", unidecode(text).casefold()) if len(w) > 3}


def create_app(api_key: str) -> FastAPI:
    lock = threading.Lock()
    agents: dict[str, list[str]] = {}
    blocks: dict[str, dict[str, str]] = {}  # block id -> label, value
    attached: dict[str, set[str]] = {}  # agent id -> block ids
    app = FastAPI(title="Letta API (memlife test stand-in)")

    def authorized(authorization: str | None) -> None:
        if authorization != f"Bearer {api_key}":
            raise HTTPException(401, "unauthorized")

    @app.post("/v1/agents/")
    def create_agent(body: CreateAgent, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        agent_id = f"agent-{uuid.uuid4()}"
        with lock:
            agents[agent_id] = []
        return {"id": agent_id, "name": body.name, "model": body.model,
                "memory": {"blocks": [b.model_dump() for b in body.memory_blocks]}}

    @app.post("/v1/agents/{agent_id}/messages")
    def send(agent_id: str, body: SendMessages,
             authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            memory = agents.get(agent_id)
            if memory is None:
                raise HTTPException(404, f"Agent {agent_id} not found")
            text = body.messages[-1].content
            if "?" in text:
                shared = [blocks[b]["value"] for b in sorted(attached.get(agent_id, ()))
                          if b in blocks]
                known = [m for m in [*memory, *shared] if _words(m) & _words(text)]
                answer = " ".join(known) if known else "I don't have that information."
            else:
                memory.append(text)
                answer = "Noted."
        return {"messages": [
            {"id": f"message-{uuid.uuid4()}", "message_type": "reasoning_message",
             "reasoning": "Looking at what I remember."},
            {"id": f"message-{uuid.uuid4()}", "message_type": "assistant_message",
             "content": answer}],
            "usage": {"message_type": "usage_statistics", "total_tokens": 42}}

    @app.delete("/v1/agents/{agent_id}")
    def delete_agent(agent_id: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if agents.pop(agent_id, None) is None:
                raise HTTPException(404, f"Agent {agent_id} not found")
            attached.pop(agent_id, None)  # a shared block outlives the agents it served
        return {}

    @app.post("/v1/blocks/")
    def create_block(body: CreateBlock, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        block_id = f"block-{uuid.uuid4()}"
        with lock:
            blocks[block_id] = {"label": body.label, "value": body.value}
        return {"id": block_id, **blocks[block_id]}

    @app.patch("/v1/blocks/{block_id}")
    def modify_block(block_id: str, body: ModifyBlock,
                     authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if block_id not in blocks:
                raise HTTPException(404, f"Block {block_id} not found")
            blocks[block_id]["value"] = body.value
            return {"id": block_id, **blocks[block_id]}

    @app.delete("/v1/blocks/{block_id}")
    def delete_block(block_id: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if blocks.pop(block_id, None) is None:
                raise HTTPException(404, f"Block {block_id} not found")
            for ids in attached.values():
                ids.discard(block_id)
        return {}

    @app.patch("/v1/agents/{agent_id}/core-memory/blocks/{action}/{block_id}")
    def attach(agent_id: str, action: str, block_id: str,
               authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if agent_id not in agents or block_id not in blocks or action not in (
                    "attach", "detach"):
                raise HTTPException(404, "agent or block not found")
            ids = attached.setdefault(agent_id, set())
            (ids.add if action == "attach" else ids.discard)(block_id)
            return {"id": agent_id, "memory": {"blocks": [
                {"id": b, **blocks[b]} for b in sorted(ids)]}}

    return app
