"""Stand-ins for Mem0's open-source REST server and its hosted platform API, for tests:
NOT Mem0.

It follows the shapes of `server/main.py` in mem0ai/mem0 (POST /memories, POST /search,
GET /memories, DELETE /memories, DELETE /memories/{id}) and stores what Mem0 stores where
Mem0 stores it, with Mem0's `infer=False` behaviour (each message is kept as a memory, no
LLM): the vector store's table `memories(id, vector, payload)` with the payload as JSON
(`data`, `hash`, `user_id`, `created_at`, `updated_at`), and the history database's table
`history` as Mem0's SQLiteManager writes it — including the DELETE rows that keep the
deleted memory's text in `old_memory`, as `Memory._delete_memory` does. Search ranks a
user's memories by shared words (Mem0 ranks by embedding similarity).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Header, HTTPException, Request
from pydantic import BaseModel
from unidecode import unidecode


class Message(BaseModel):
    role: str
    content: str


class MemoryCreate(BaseModel):
    messages: list[Message]
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None


class SearchRequest(BaseModel):
    query: str
    user_id: str | None = None
    run_id: str | None = None
    agent_id: str | None = None
    filters: dict[str, Any] | None = None


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unidecode(text).casefold()))


def create_app(vectors: Path, history: Path) -> FastAPI:
    lock = threading.Lock()
    vector_db = sqlite3.connect(vectors, check_same_thread=False)
    vector_db.execute("CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, "
                      "vector TEXT, payload TEXT)")
    history_db = sqlite3.connect(history, check_same_thread=False)
    history_db.execute(
        "CREATE TABLE IF NOT EXISTS history (id TEXT PRIMARY KEY, memory_id TEXT, "
        "old_memory TEXT, new_memory TEXT, event TEXT, created_at DATETIME, "
        "updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)")
    app = FastAPI(title="Mem0 REST APIs (memlife test stand-in)")

    def now() -> str:
        return datetime.now(UTC).isoformat()

    def add_history(memory_id: str, old: str | None, new: str | None, event: str,
                    deleted: int = 0) -> None:
        history_db.execute(
            "INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)",
            (str(uuid.uuid4()), memory_id, old, new, event, now(), now(), deleted, None,
             "user"))
        history_db.commit()

    def user_memories(user_id: str | None, agent_id: str | None = None,
                      ) -> list[dict[str, Any]]:
        """The memories of a user, or of an agent (Mem0's agent scope)."""
        field, value = ("agent_id", agent_id) if agent_id else ("user_id", user_id)
        rows = vector_db.execute(
            f"SELECT id, payload FROM memories WHERE payload->>'{field}' = ?", (value,))  # noqa: S608
        found = []
        for memory_id, payload in rows:
            data = json.loads(payload)
            found.append({"id": memory_id, "memory": data["data"], "hash": data["hash"],
                          "metadata": None, "created_at": data["created_at"],
                          "updated_at": data["updated_at"], "user_id": data["user_id"],
                          "agent_id": data.get("agent_id")})
        return found

    @app.post("/memories")
    def add_memory(memory_create: MemoryCreate) -> dict[str, Any]:
        if not any([memory_create.user_id, memory_create.agent_id, memory_create.run_id]):
            raise HTTPException(400, "At least one identifier (user_id, agent_id, run_id) "
                                "is required.")
        results = []
        with lock:
            for message in memory_create.messages:
                if message.role != "user":
                    continue
                memory_id = str(uuid.uuid4())
                stamp = now()
                payload = {"data": message.content, "user_id": memory_create.user_id,
                           "agent_id": memory_create.agent_id,
                           "hash": hashlib.md5(message.content.encode()).hexdigest(),
                           "created_at": stamp, "updated_at": stamp}
                vector_db.execute("INSERT INTO memories VALUES (?,?,?)",
                                  (memory_id, "[]", json.dumps(payload, ensure_ascii=False)))
                vector_db.commit()
                add_history(memory_id, None, message.content, "ADD")
                results.append({"id": memory_id, "memory": message.content, "event": "ADD"})
        return {"results": results}

    @app.get("/memories")
    def get_all_memories(user_id: str | None = None, run_id: str | None = None,
                         agent_id: str | None = None) -> dict[str, Any]:
        if not user_id:
            raise HTTPException(400, "At least one identifier is required.")
        with lock:
            return {"results": user_memories(user_id)}

    @app.post("/search")
    def search_memories(search_req: SearchRequest) -> dict[str, Any]:
        if not (search_req.user_id or search_req.agent_id):
            raise HTTPException(500, "At least one of 'user_id', 'agent_id', or 'run_id' "
                                "must be specified.")
        query = _words(search_req.query)
        with lock:
            found = user_memories(search_req.user_id, search_req.agent_id)
        for memory in found:
            memory["score"] = len(query & _words(memory["memory"])) / (len(query) or 1)
        found.sort(key=lambda m: (-m["score"], m["created_at"]))
        return {"results": found[:100]}

    @app.delete("/memories/{memory_id}")
    def delete_memory(memory_id: str) -> dict[str, str]:
        with lock:
            row = vector_db.execute("SELECT payload FROM memories WHERE id = ?",
                                    (memory_id,)).fetchone()
            if row is None:
                raise HTTPException(500, f"Memory with id {memory_id} not found")
            vector_db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            vector_db.commit()
            add_history(memory_id, json.loads(row[0])["data"], None, "DELETE", deleted=1)
        return {"message": "Memory deleted successfully"}

    @app.delete("/memories")
    def delete_all_memories(user_id: str | None = None, run_id: str | None = None,
                            agent_id: str | None = None) -> dict[str, str]:
        if not (user_id or agent_id):
            raise HTTPException(400, "At least one identifier is required.")
        with lock:
            for memory in user_memories(user_id, agent_id):
                vector_db.execute("DELETE FROM memories WHERE id = ?", (memory["id"],))
                vector_db.commit()
                add_history(memory["id"], memory["memory"], None, "DELETE", deleted=1)
        return {"message": "All relevant memories deleted"}

    return app


def create_platform_app(vectors: Path, history: Path, api_key: str) -> FastAPI:
    """The same store behind the shapes of Mem0's hosted platform API (v1): `Token` keys,
    trailing slashes, memories added synchronously when `async_mode` is false, search
    answering a bare list."""
    oss = create_app(vectors, history)
    routes = {(route.path, method): route.endpoint  # type: ignore[attr-defined]
              for route in oss.routes for method in getattr(route, "methods", ())}
    app = FastAPI(title="Mem0 platform API (memlife test stand-in)")

    def authorized(authorization: str | None) -> None:
        if authorization != f"Token {api_key}":
            raise HTTPException(401, "Invalid API key")

    @app.post("/v1/memories/")
    async def add(request: Request, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        body = await request.json()
        if body.get("async_mode", True):  # the platform's default: queued, not stored yet
            return {"results": [{"message": "Memory processing has been queued for "
                                 "background execution", "status": "PENDING",
                                 "event_id": str(uuid.uuid4())}]}
        create = MemoryCreate(messages=body["messages"], user_id=body.get("user_id"))
        return routes[("/memories", "POST")](create)

    @app.post("/v1/memories/search/")
    async def search(request: Request, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        body = await request.json()
        found = routes[("/search", "POST")](SearchRequest(query=body["query"],
                                                          user_id=body.get("user_id")))
        return found["results"][: int(body.get("top_k", 10))]

    @app.get("/v1/memories/")
    def list_memories(user_id: str | None = None,
                      authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        return routes[("/memories", "GET")](user_id=user_id)["results"]

    @app.delete("/v1/memories/")
    def delete_memories(user_id: str | None = None,
                        authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        routes[("/memories", "DELETE")](user_id=user_id)
        return {"message": "Memories deleted successfully!"}

    return app
