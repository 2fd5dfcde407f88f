"""A stand-in for Zep's v2 API, for tests: NOT Zep.

It follows the shapes of Zep's v2 reference (users, sessions, session memory): POST
/api/v2/users, POST /api/v2/sessions, POST /api/v2/sessions/{sessionId}/memory with
`return_context`, DELETE /api/v2/users/{userId}, keys sent as `Authorization: Api-Key …`;
and group graphs: POST /api/v2/groups, POST /api/v2/graph with `group_id` (data added to a
group's graph), POST /api/v2/graph/search with `group_id` (its edges' facts),
DELETE /api/v2/groups/{groupId}. Like Zep's, a group has no members: whoever asks with its
id gets its facts (membership is the application's to check).
Where Zep builds a knowledge graph with an LLM and answers with the facts relevant to the
latest messages, this keeps each user's statements and answers with those sharing words
with the latest message.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel
from unidecode import unidecode


class CreateUser(BaseModel):
    user_id: str
    email: str | None = None
    first_name: str | None = None


class CreateSession(BaseModel):
    session_id: str
    user_id: str


class ZepMessage(BaseModel):
    role_type: str
    content: str
    role: str | None = None


class CreateGroup(BaseModel):
    group_id: str
    name: str | None = None
    description: str | None = None


class AddData(BaseModel):
    data: str
    type: str
    group_id: str | None = None
    user_id: str | None = None


class SearchGraph(BaseModel):
    query: str
    group_id: str | None = None
    user_id: str | None = None
    limit: int = 10


class AddMemory(BaseModel):
    messages: list[ZepMessage]
    return_context: bool = False


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", unidecode(text).casefold()) if len(w) > 2}


def create_app(api_key: str) -> FastAPI:
    lock = threading.Lock()
    users: dict[str, list[str]] = {}  # user_id -> statements
    sessions: dict[str, str] = {}  # session_id -> user_id
    groups: dict[str, list[str]] = {}  # group_id -> facts added to its graph
    app = FastAPI(title="Zep v2 API (memlife test stand-in)")

    def authorized(authorization: str | None) -> None:
        if authorization != f"Api-Key {api_key}":
            raise HTTPException(401, "unauthorized")

    @app.post("/api/v2/users", status_code=201)
    def add_user(user: CreateUser, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if user.user_id in users:
                raise HTTPException(400, "user already exists")
            users[user.user_id] = []
        return {"user_id": user.user_id, "uuid": user.user_id}

    @app.post("/api/v2/sessions", status_code=201)
    def add_session(session: CreateSession, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if session.user_id not in users:
                raise HTTPException(404, "user not found")
            sessions[session.session_id] = session.user_id
        return {"session_id": session.session_id, "user_id": session.user_id}

    @app.post("/api/v2/sessions/{session_id}/memory")
    def add_memory(session_id: str, body: AddMemory,
                   authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            user_id = sessions.get(session_id)
            if user_id is None or user_id not in users:
                raise HTTPException(404, "session not found")
            latest = body.messages[-1].content if body.messages else ""
            facts = users[user_id]
            relevant = [f for f in facts if _words(f) & _words(latest)] or list(facts)
            users[user_id].extend(m.content for m in body.messages
                                  if m.role_type == "user" and "?" not in m.content)
        if not body.return_context:
            return {}
        return {"context": "FACTS:\n" + "\n".join(f"- {fact}" for fact in relevant)}

    @app.delete("/api/v2/users/{user_id}")
    def delete_user(user_id: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if users.pop(user_id, None) is None:
                raise HTTPException(404, "user not found")
            for session_id in [s for s, u in sessions.items() if u == user_id]:
                del sessions[session_id]
        return {"message": "deleted"}

    @app.post("/api/v2/groups", status_code=201)
    def add_group(group: CreateGroup, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if group.group_id in groups:
                raise HTTPException(400, "group already exists")
            groups[group.group_id] = []
        return {"group_id": group.group_id, "name": group.name, "uuid": group.group_id}

    @app.post("/api/v2/graph", status_code=202)
    def add_data(body: AddData, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if body.group_id is None or body.group_id not in groups:
                raise HTTPException(404, "group not found")
            groups[body.group_id].append(body.data)
        return {"content": body.data, "created_at": "2026-01-01T00:00:00Z",
                "uuid": f"episode-{len(groups[body.group_id])}"}

    @app.post("/api/v2/graph/search")
    def search(body: SearchGraph, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            facts = groups.get(body.group_id or "", [])
            relevant = [f for f in facts if _words(f) & _words(body.query)]
        return {"edges": [{"fact": fact, "uuid": str(i)} for i, fact in
                          enumerate(relevant[: body.limit])], "nodes": []}

    @app.delete("/api/v2/groups/{group_id}")
    def delete_group(group_id: str, authorization: str | None = Header(None)) -> Any:
        authorized(authorization)
        with lock:
            if groups.pop(group_id, None) is None:
                raise HTTPException(404, "group not found")
        return {"message": "deleted"}

    return app
