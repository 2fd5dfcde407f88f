"""Stand-ins for Mem0's open-source REST server and its hosted platform API, for tests:
NOT Mem0. No model, no embeddings, no Mem0 code: the shapes, status codes and stored rows
follow upstream's files, and search ranks by shared words where Mem0 ranks by embedding
similarity (with no score threshold; Mem0's default is 0.1).

What each behaviour follows (mem0ai/mem0 at 8d5b786 for `server/`, the mem0ai 2.2.1 package
for `mem0/`; notes with line numbers: /tmp/mem0-notes.md during issue 53):

- Auth (`server/auth.py`): `X-API-Key` equal to the admin key (the server's
  `ADMIN_API_KEY`) is admin; the ordinary key is one user's key (`m0sk_…` upstream) with
  that user's role. A `Bearer` token must be a JWT the server issued (the stand-in issues
  none: 401). No credentials: 401 with `WWW-Authenticate: Bearer`; a wrong key: 401
  "Invalid API key."; a non-admin on an admin endpoint (`DELETE /memories`,
  `POST /reset`, `DELETE /entities/…`, `GET /memories` with no identifier): 403. Upstream
  registration only ever creates the admin, so a stock deployment's dashboard keys are
  admin-level; `api_key_role="user"` (the default here) stands for a user whose role was
  changed, to show the admin-only endpoints refusing it.
- Requests and answers (`server/main.py`, `mem0/memory/main.py`): `POST /memories`
  (`infer` defaults to true, as `Memory.add`), `POST /search` (ids at the top level or in
  `filters`, `top_k` 20 by default), `GET /memories` (`top_k` 20 by default, at most 1000),
  `GET /memories/{id}` (200 with `null` for an unknown id), `DELETE /memories/{id}` (404
  for an unknown well-formed id, 502 for one that is not a UUID, as the pgvector `UUID`
  column makes it), `DELETE /memories` (synchronous, 200 whether or not anything matched),
  `POST /reset`, `DELETE /entities/{type}/{id}`.
- `infer=False` (`Memory._add_to_vector_store`): every user and assistant message becomes a
  memory as said (system messages are skipped), one `history` ADD row each, no `messages`
  row. `infer=True` (upstream: one LLM extraction call): the stand-in has no model and
  takes each user and assistant message as the extracted fact, verbatim; the rest is
  upstream's pipeline — md5 dedup against the scope's memories, `history` rows as
  `batch_add_history` writes them (no updated_at, actor_id or role), and the conversation
  saved to the `messages` table (every message, system included; the 10 newest per
  session scope kept). No entity store: without spaCy (not in the server's requirements)
  upstream writes none either.
- Stores: the vector store's table `memories(id, vector, payload)` (pgvector's columns; the
  payload as JSON text, with `text_lemmatized` equal to the text as upstream without spaCy),
  and the history database's `history` and `messages` tables exactly as
  `mem0/memory/storage.py` (SQLiteManager) creates and fills them. Deleting a memory, or all
  of a user's, removes its vector row and writes a DELETE history row holding its text
  (`Memory._delete_memory`); nothing ever deletes `messages` rows except `POST /reset`.
"""

# No `from __future__ import annotations`: FastAPI reads the dependencies annotated
# inside create_app (closures over its keys) at definition time.

import hashlib
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from unidecode import unidecode

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
# mem0/memory/main.py: payload keys answered at the top level of a memory, and those that
# are neither answered there nor as metadata.
PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to", "expiration_date")
CORE = {
    "data",
    "hash",
    "created_at",
    "updated_at",
    "id",
    "text_lemmatized",
    "attributed_to",
    *PROMOTED,
}
ALL_MEMORIES_LIMIT = 1000  # server/main.py
MESSAGES_KEPT = 10  # storage.py save_messages: the newest 10 per session scope


# --- server/main.py request models -------------------------------------------------------


class Message(BaseModel):
    role: str = Field(..., description="Role of the message (user or assistant).")
    content: str = Field(..., description="Message content.")


class MemoryCreate(BaseModel):
    messages: list[Message] = Field(..., description="List of messages to store.")
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None
    infer: bool | None = Field(
        None, description="Whether to extract facts from messages. Defaults to True."
    )
    memory_type: str | None = None
    prompt: str | None = None


class SearchRequest(BaseModel):
    query: str
    user_id: str | None = None
    run_id: str | None = None
    agent_id: str | None = None
    filters: dict[str, Any] | None = None
    top_k: int | None = None
    threshold: float | None = None
    explain: bool | None = None
    show_expired: bool | None = None


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unidecode(text).casefold()))


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _expired(payload: dict[str, Any]) -> bool:
    value = payload.get("expiration_date")
    if not value:
        return False
    try:
        return date.fromisoformat(str(value)) < datetime.now(UTC).date()
    except ValueError:
        return False


def session_scope(ids: dict[str, Any]) -> str:
    """mem0/memory/main.py `_build_session_scope`: the sorted ids, delimiters escaped."""

    def escape(value: Any) -> str:
        return str(value).replace("%", "%25").replace("&", "%26").replace("=", "%3D")

    return "&".join(f"{key}={escape(ids[key])}" for key in sorted(ENTITY_KEYS) if ids.get(key))


def _trimmed_id(value: Any, name: str) -> str | None:
    """mem0/memory/main.py `_validate_and_trim_entity_id`."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise ValueError(
            f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier."
        )
    if any(c.isspace() for c in text):
        raise ValueError(
            f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces."
        )
    return text


class MemoryNotFound(ValueError):
    pass


class Mem0Store:
    """What `mem0.Memory` keeps, where it keeps it: the vector store's table and the history
    database's two tables, in SQLite files tests (and target files' SQL probes) can read."""

    def __init__(self, vectors: Path, history: Path) -> None:
        self.lock = threading.RLock()
        self.vectors = sqlite3.connect(vectors, check_same_thread=False)
        self.vectors.execute(
            "CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, vector TEXT, payload TEXT)"
        )
        self.vectors.commit()
        self.history = sqlite3.connect(history, check_same_thread=False)
        self._create_history_tables()

    def _create_history_tables(self) -> None:
        # mem0/memory/storage.py, SQLiteManager._create_history_table and
        # _create_messages_table: the same statements.
        self.history.execute("""
            CREATE TABLE IF NOT EXISTS history (
                id           TEXT PRIMARY KEY,
                memory_id    TEXT,
                old_memory   TEXT,
                new_memory   TEXT,
                event        TEXT,
                created_at   DATETIME,
                updated_at   DATETIME,
                is_deleted   INTEGER,
                actor_id     TEXT,
                role         TEXT
            )""")
        self.history.execute("""
            CREATE TABLE IF NOT EXISTS messages (
                id TEXT PRIMARY KEY,
                session_scope TEXT,
                role TEXT,
                content TEXT,
                name TEXT,
                created_at DATETIME
            )""")
        self.history.commit()

    # -- history database (storage.py) --

    def _add_history(
        self,
        memory_id: str,
        old: str | None,
        new: str | None,
        event: str,
        *,
        created_at: str | None = None,
        updated_at: str | None = None,
        is_deleted: int = 0,
        actor_id: str | None = None,
        role: str | None = None,
    ) -> None:
        self.history.execute(
            "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, "
            "updated_at, is_deleted, actor_id, role) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                str(uuid.uuid4()),
                memory_id,
                old,
                new,
                event,
                created_at,
                updated_at,
                is_deleted,
                actor_id,
                role,
            ),
        )
        self.history.commit()

    def _save_messages(self, messages: list[dict[str, Any]], scope: str) -> None:
        if not messages:
            return
        now = _now()
        for message in messages:
            self.history.execute(
                "INSERT INTO messages (id, session_scope, role, content, name, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    str(uuid.uuid4()),
                    scope,
                    message.get("role"),
                    message.get("content"),
                    message.get("name"),
                    now,
                ),
            )
        self.history.execute(
            "DELETE FROM messages WHERE session_scope = ? AND id NOT IN (SELECT id FROM ("
            "SELECT id FROM messages WHERE session_scope = ? ORDER BY created_at DESC "
            f"LIMIT {MESSAGES_KEPT}))",
            (scope, scope),
        )
        self.history.commit()

    # -- vector store --

    def _insert(self, memory_id: str, payload: dict[str, Any]) -> None:
        self.vectors.execute(
            "INSERT INTO memories (id, vector, payload) VALUES (?, ?, ?)",
            (memory_id, "[]", json.dumps(payload, ensure_ascii=False)),
        )
        self.vectors.commit()

    def _rows(
        self, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        rows = []
        for memory_id, payload in self.vectors.execute(
            "SELECT id, payload FROM memories ORDER BY rowid"
        ):
            data = json.loads(payload)
            if all(data.get(key) == value for key, value in (filters or {}).items()):
                rows.append((memory_id, data))
            if limit is not None and len(rows) >= limit:
                break
        return rows

    def get_payload(self, memory_id: str) -> dict[str, Any] | None:
        row = self.vectors.execute(
            "SELECT payload FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    # -- Memory's operations (mem0/memory/main.py) --

    def add(
        self,
        messages: list[dict[str, Any]],
        ids: dict[str, str],
        metadata: dict[str, Any] | None = None,
        *,
        infer: bool = True,
        expiration_date: str | None = None,
    ) -> list[dict[str, Any]]:
        base = {k: v for k, v in (metadata or {}).items() if k not in (*ENTITY_KEYS, "actor_id")}
        base.update({key: value for key, value in ids.items() if value})
        if expiration_date:
            base["expiration_date"] = date.fromisoformat(expiration_date).isoformat()
        with self.lock:
            return (
                self._add_inferred(messages, ids, base) if infer else self._add_raw(messages, base)
            )

    def _add_raw(
        self, messages: list[dict[str, Any]], base: dict[str, Any]
    ) -> list[dict[str, Any]]:
        added = []
        for message in messages:
            if message.get("role") is None or message.get("content") is None:
                continue
            if message["role"] == "system":
                continue
            stamp = _now()
            payload = {**base, "role": message["role"]}
            if message.get("name"):
                payload["actor_id"] = message["name"]
            text = message["content"]
            payload.update(
                {
                    "data": text,
                    "hash": hashlib.md5(text.encode()).hexdigest(),
                    "created_at": stamp,
                    "updated_at": stamp,
                    "text_lemmatized": text,
                }
            )
            memory_id = str(uuid.uuid4())
            self._insert(memory_id, payload)
            self._add_history(
                memory_id,
                None,
                text,
                "ADD",
                created_at=stamp,
                updated_at=stamp,
                actor_id=payload.get("actor_id"),
                role=payload["role"],
            )
            added.append(
                {
                    "id": memory_id,
                    "memory": text,
                    "event": "ADD",
                    "actor_id": message.get("name") or None,
                    "role": message["role"],
                }
            )
        return added

    def _add_inferred(
        self, messages: list[dict[str, Any]], ids: dict[str, str], base: dict[str, Any]
    ) -> list[dict[str, Any]]:
        scope = session_scope(ids)
        # The extraction: upstream asks an LLM; the stand-in takes each statement as said.
        facts = [
            m["content"]
            for m in messages
            if m.get("role") in ("user", "assistant") and m.get("content")
        ]
        existing = {
            payload.get("hash") for _, payload in self._rows({k: v for k, v in ids.items() if v})
        }
        added = []
        for text in facts:
            digest = hashlib.md5(text.encode()).hexdigest()
            if digest in existing:
                continue
            existing.add(digest)
            stamp = _now()
            payload = {
                **base,
                "data": text,
                "text_lemmatized": text,
                "hash": digest,
                "created_at": stamp,
                "updated_at": stamp,
            }
            memory_id = str(uuid.uuid4())
            self._insert(memory_id, payload)
            # batch_add_history: memory_id, old, new, event, created_at, is_deleted only.
            self._add_history(memory_id, None, text, "ADD", created_at=stamp)
            added.append({"id": memory_id, "memory": text, "event": "ADD"})
        self._save_messages(messages, scope)
        return added

    @staticmethod
    def item(
        memory_id: str, payload: dict[str, Any], score: float | None = None, with_score: bool = True
    ) -> dict[str, Any]:
        """A memory as Memory.search (with score) and Memory.get_all (without) answer it."""
        item: dict[str, Any] = {
            "id": memory_id,
            "memory": payload.get("data", ""),
            "hash": payload.get("hash"),
            "metadata": None,
        }
        if with_score:
            item["score"] = score
        item.update(
            {"created_at": payload.get("created_at"), "updated_at": payload.get("updated_at")}
        )
        item.update({key: payload[key] for key in PROMOTED if key in payload})
        extra = {k: v for k, v in payload.items() if k not in CORE}
        if extra:
            item["metadata"] = extra
        return item

    def get_all(
        self, filters: dict[str, Any], top_k: int = 20, show_expired: bool = False
    ) -> list[dict[str, Any]]:
        with self.lock:
            rows = self._rows(filters)
        found = [
            self.item(i, p, with_score=False) for i, p in rows if show_expired or not _expired(p)
        ]
        return found[:top_k]

    def search(
        self, query: str, filters: dict[str, Any], top_k: int = 20, show_expired: bool = False
    ) -> list[dict[str, Any]]:
        words = _words(query)
        with self.lock:
            rows = self._rows(filters)
        scored = [
            (len(words & _words(p.get("data", ""))) / (len(words) or 1), i, p)
            for i, p in rows
            if show_expired or not _expired(p)
        ]
        scored.sort(key=lambda entry: (-entry[0], entry[2].get("created_at") or ""))
        return [self.item(i, p, score) for score, i, p in scored[:top_k]]

    def delete(self, memory_id: str) -> None:
        with self.lock:
            payload = self.get_payload(memory_id)
            if payload is None:
                raise MemoryNotFound(f"Memory with id {memory_id} not found")
            self._delete(memory_id, payload)

    def _delete(self, memory_id: str, payload: dict[str, Any]) -> None:
        """Memory._delete_memory: the vector row goes, a DELETE history row keeps its text."""
        self.vectors.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        self.vectors.commit()
        self._add_history(
            memory_id,
            payload.get("data", ""),
            None,
            "DELETE",
            created_at=payload.get("created_at"),
            updated_at=_now(),
            actor_id=payload.get("actor_id"),
            role=payload.get("role"),
            is_deleted=1,
        )

    def delete_all(self, ids: dict[str, str]) -> int:
        filters = {key: value for key, value in ids.items() if value}
        if not filters:
            raise ValueError(
                "At least one filter is required to delete all memories. If "
                "you want to delete all memories, use the `reset()` method."
            )
        with self.lock:
            rows = self._rows(filters)
            for memory_id, payload in rows:
                self._delete(memory_id, payload)
        return len(rows)

    def reset(self) -> None:
        """SQLiteManager.reset drops both tables (and a new manager recreates them); the
        vector collection is dropped and recreated."""
        with self.lock:
            self.history.execute("DROP TABLE IF EXISTS history")
            self.history.execute("DROP TABLE IF EXISTS messages")
            self.history.commit()
            self._create_history_tables()
            self.vectors.execute("DELETE FROM memories")
            self.vectors.commit()

    def list_raw(self, limit: int) -> list[dict[str, Any]]:
        """server/main.py `_serialize_memory`, for the admin's listing of everything."""
        reserved = {
            "data",
            "user_id",
            "agent_id",
            "run_id",
            "hash",
            "created_at",
            "updated_at",
            "expiration_date",
        }
        with self.lock:
            rows = self._rows(limit=limit)
        return [
            {
                "id": i,
                "memory": p.get("data"),
                "user_id": p.get("user_id"),
                "agent_id": p.get("agent_id"),
                "run_id": p.get("run_id"),
                "hash": p.get("hash"),
                "expiration_date": p.get("expiration_date"),
                "metadata": {k: v for k, v in p.items() if k not in reserved},
                "created_at": p.get("created_at"),
                "updated_at": p.get("updated_at"),
            }
            for i, p in rows
        ]


# --- server/auth.py ----------------------------------------------------------------------


class Caller(BaseModel):
    auth_type: str  # admin_api_key, api_key, disabled
    role: str


def _upstream_error() -> JSONResponse:
    """server/errors.py: an exception the handler did not map is a 502 with a code."""
    return JSONResponse(
        status_code=502,
        content={
            "detail": "Upstream provider error.",
            "code": "unknown",
            "request_id": uuid.uuid4().hex[:8],
        },
    )


def create_app(
    vectors: Path,
    history: Path,
    *,
    api_key: str | None = None,
    admin_api_key: str | None = None,
    api_key_role: str = "user",
    auth_disabled: bool = False,
) -> FastAPI:
    """Mem0's REST server (server/main.py) over `Mem0Store`. `admin_api_key` plays the
    server's ADMIN_API_KEY, `api_key` one dashboard user's `m0sk_` key whose user has
    `api_key_role`; with neither (and auth not disabled) every protected endpoint answers
    401, as upstream does unconfigured."""
    store = Mem0Store(vectors, history)
    app = FastAPI(title="Mem0 REST APIs (memlife test stand-in, NOT Mem0)", redirect_slashes=False)
    app.state.store = store
    bearer = HTTPBearer(auto_error=False)
    key_header = APIKeyHeader(name="X-API-Key", auto_error=False)

    async def verify_auth(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        x_api_key: Annotated[str | None, Depends(key_header)],
    ) -> Caller:
        if credentials is not None:  # a JWT from /auth/login: the stand-in issues none
            raise HTTPException(401, "Invalid or expired token.")
        if x_api_key is not None:
            if admin_api_key and x_api_key == admin_api_key:
                return Caller(auth_type="admin_api_key", role="admin")
            if api_key and x_api_key == api_key:
                return Caller(auth_type="api_key", role=api_key_role)
            raise HTTPException(401, "Invalid API key.")
        if auth_disabled:
            return Caller(auth_type="disabled", role="admin")
        raise HTTPException(
            401,
            "Authentication required. Provide a Bearer token or X-API-Key header.",
            headers={"WWW-Authenticate": "Bearer"},
        )

    async def require_admin(caller: Annotated[Caller, Depends(verify_auth)]) -> Caller:
        if caller.role != "admin":
            raise HTTPException(403, "Admin role required.")
        return caller

    Authenticated = Annotated[Caller, Depends(verify_auth)]
    Admin = Annotated[Caller, Depends(require_admin)]

    def client_error(error: ValueError) -> HTTPException:
        detail = str(error)
        return HTTPException(404 if "not found" in detail.lower() else 400, detail)

    @app.post("/memories", summary="Create memories")
    def add_memory(memory_create: MemoryCreate, _auth: Authenticated) -> Any:
        if not any([memory_create.user_id, memory_create.agent_id, memory_create.run_id]):
            raise HTTPException(
                400, "At least one identifier (user_id, agent_id, run_id) is required."
            )
        try:
            ids = {key: _trimmed_id(getattr(memory_create, key), key) for key in ENTITY_KEYS}
            if memory_create.memory_type is not None:
                raise ValueError("The stand-in stores no procedural memories.")
            results = store.add(
                [m.model_dump() for m in memory_create.messages],
                {k: v for k, v in ids.items() if v},
                memory_create.metadata,
                infer=memory_create.infer is not False,
                expiration_date=memory_create.expiration_date,
            )
        except ValueError as error:
            raise client_error(error) from None
        return JSONResponse(content={"results": results})

    @app.get("/memories", summary="Get memories")
    def get_all_memories(
        caller: Authenticated,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        top_k: int | None = Query(None, ge=0, le=ALL_MEMORIES_LIMIT),
        show_expired: bool = Query(False),
    ) -> Any:
        if not any([user_id, run_id, agent_id]):
            if caller.role != "admin":
                raise HTTPException(403, "Admin role required to list all memories.")
            return {"results": store.list_raw(top_k if top_k is not None else ALL_MEMORIES_LIMIT)}
        try:
            filters = {
                k: _trimmed_id(v, k)
                for k, v in {"user_id": user_id, "run_id": run_id, "agent_id": agent_id}.items()
                if v
            }
        except ValueError:
            return _upstream_error()  # main.py: every exception here is a 502
        return {"results": store.get_all(filters, 20 if top_k is None else top_k, show_expired)}

    @app.get("/memories/{memory_id}", summary="Get a memory")
    def get_memory(memory_id: str, _auth: Authenticated) -> Any:
        if not _is_uuid(memory_id):
            return _upstream_error()
        payload = store.get_payload(memory_id)
        if payload is None:
            return JSONResponse(content=None)  # Memory.get returns None: 200, null
        return store.item(memory_id, payload, with_score=False)

    @app.post("/search", summary="Search memories")
    def search_memories(search_req: SearchRequest, _auth: Authenticated) -> Any:
        filters = dict(search_req.filters or {})
        for key in ENTITY_KEYS:
            if getattr(search_req, key, None):
                filters[key] = getattr(search_req, key)
        try:
            for key in ENTITY_KEYS:
                if key in filters:
                    filters[key] = _trimmed_id(filters[key], key)
            if not any(key in filters for key in ENTITY_KEYS):
                raise ValueError(
                    "filters must contain at least one of: user_id, agent_id, "
                    "run_id. Example: filters={'user_id': 'u1'}"
                )
            if not search_req.query.strip():
                raise ValueError("Invalid query: cannot be empty or whitespace-only.")
            if search_req.top_k is not None and search_req.top_k < 0:
                raise ValueError(
                    f"Invalid top_k: {search_req.top_k}. Must be a non-negative integer."
                )
        except ValueError as error:
            raise HTTPException(400, str(error)) from None
        return {
            "results": store.search(
                search_req.query,
                filters,
                20 if search_req.top_k is None else search_req.top_k,
                bool(search_req.show_expired),
            )
        }

    @app.delete("/memories/{memory_id}", summary="Delete a memory")
    def delete_memory(memory_id: str, _auth: Authenticated) -> Any:
        if not _is_uuid(memory_id):
            return _upstream_error()  # pgvector: `id UUID`, psycopg refuses the text
        try:
            store.delete(memory_id)
        except ValueError as error:
            raise client_error(error) from None
        return {"message": "Memory deleted successfully"}

    @app.delete("/memories", summary="Delete all memories")
    def delete_all_memories(
        _auth: Admin,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> Any:
        if not any([user_id, run_id, agent_id]):
            raise HTTPException(400, "At least one identifier is required.")
        try:
            store.delete_all(
                {
                    "user_id": _trimmed_id(user_id, "user_id"),
                    "run_id": _trimmed_id(run_id, "run_id"),
                    "agent_id": _trimmed_id(agent_id, "agent_id"),
                }
            )
        except ValueError:
            return _upstream_error()
        return {"message": "All relevant memories deleted"}

    @app.delete("/entities/{entity_type}/{entity_id}")
    def delete_entity(entity_type: str, entity_id: str, _auth: Admin) -> Any:
        field = {"user": "user_id", "agent": "agent_id", "run": "run_id"}.get(entity_type)
        if field is None:
            raise HTTPException(422, "entity_type must be one of user, agent, run")
        store.delete_all({field: entity_id})
        return {"message": "Entity deleted"}

    @app.post("/reset", summary="Reset all memories")
    def reset_memory(_auth: Admin) -> Any:
        store.reset()
        return {"message": "All memories reset"}

    return app


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


# --- the hosted platform (api.mem0.ai), as MemoryClient 2.2.1 and docs/openapi.json -------

PLATFORM_ENTITY_KEYS = ("user_id", "agent_id", "app_id", "run_id")
PLATFORM_FILTER_KEYS = {
    "AND",
    "OR",
    "NOT",
    *PLATFORM_ENTITY_KEYS,
    "created_at",
    "updated_at",
    "timestamp",
    "expiration_date",
    "text",
    "categories",
    "metadata",
    "keywords_search",
    "memory_ids",
    "keywords",
}
INVALID_KEY = (
    "Invalid API key. You can find your API key on https://app.mem0.ai/dashboard/api-keys."
)


def _bad_request(message: str) -> HTTPException:
    return HTTPException(400, message)


def _matcher(filters: Any) -> Callable[[dict[str, Any]], bool]:
    """The platform's v2/v3 filter grammar (docs/platform/features/v2-memory-filters.mdx),
    as far as the stand-in needs it: AND / OR / NOT, entity fields with a value, "*" (any
    non-null value) or {"in": [...]}, and `keywords` with contains / icontains. Anything
    else is a 400, as the platform answers a key outside its allow-list."""
    if not isinstance(filters, dict):
        raise _bad_request("filters must be an object")
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for key, value in filters.items():
        if key not in PLATFORM_FILTER_KEYS:
            raise _bad_request(
                f"Top-level key must be a logical operator or an allowed "
                f"field: {sorted(PLATFORM_FILTER_KEYS)}"
            )
        if key in ("AND", "OR"):
            parts = [_matcher(part) for part in (value if isinstance(value, list) else [value])]
            combine = all if key == "AND" else any
            tests.append(lambda p, parts=parts, combine=combine: combine(part(p) for part in parts))
        elif key == "NOT":
            parts = [_matcher(part) for part in (value if isinstance(value, list) else [value])]
            tests.append(lambda p, parts=parts: not any(part(p) for part in parts))
        elif key in PLATFORM_ENTITY_KEYS:
            tests.append(_entity_test(key, value))
        elif key == "keywords" and isinstance(value, dict) and len(value) == 1:
            ((operator, needle),) = value.items()
            if operator == "contains":
                tests.append(lambda p, n=str(needle): n in p.get("data", ""))
            elif operator == "icontains":
                folded = str(needle).casefold()
                tests.append(lambda p, n=folded: n in p.get("data", "").casefold())
            else:
                raise _bad_request(f"keywords supports contains and icontains, not {operator}")
        else:
            raise _bad_request(f"the stand-in does not filter on {key}")
    return lambda payload: all(test(payload) for test in tests)


def _entity_test(key: str, value: Any) -> Callable[[dict[str, Any]], bool]:
    if value == "*":
        return lambda p: p.get(key) is not None
    if isinstance(value, dict) and set(value) == {"in"}:
        return lambda p: p.get(key) in value["in"]
    if isinstance(value, dict) and set(value) == {"ne"}:
        return lambda p: p.get(key) != value["ne"]
    if isinstance(value, dict) and set(value) == {"eq"}:
        return lambda p: p.get(key) == value["eq"]
    if isinstance(value, str):
        return lambda p: p.get(key) == value
    raise _bad_request(f"unsupported filter on {key}")


def _names_an_entity(filters: Any) -> bool:
    if not isinstance(filters, dict):
        return False
    for key, value in filters.items():
        if key in PLATFORM_ENTITY_KEYS:
            return True
        if key in ("AND", "OR") and any(
            _names_an_entity(part) for part in (value if isinstance(value, list) else [value])
        ):
            return True
    return False


def _platform_item(
    memory_id: str, payload: dict[str, Any], score: float | None = None
) -> dict[str, Any]:
    """A memory as the v3 endpoints answer it (docs/openapi.json)."""
    item: dict[str, Any] = {"id": memory_id, "memory": payload.get("data", "")}
    for key in PLATFORM_ENTITY_KEYS:
        item[key] = payload.get(key)
    item.update(
        {
            "metadata": {
                k: v for k, v in payload.items() if k not in CORE and k not in PLATFORM_ENTITY_KEYS
            }
            or None,
            "categories": [],
            "created_at": payload.get("created_at"),
            "updated_at": payload.get("updated_at"),
            "expiration_date": payload.get("expiration_date"),
        }
    )
    if score is not None:
        item["score"] = score
    return item


def create_platform_app(vectors: Path, history: Path, api_key: str) -> FastAPI:
    """Mem0's hosted platform API as mem0ai 2.2.1's MemoryClient calls it
    (mem0/client/main.py) and docs/openapi.json describes it, over the same `Mem0Store`
    (the platform's own stores are not visible; these files are the stand-in's).

    - `Authorization: Token <key>`; anything else is 401 (documented for /v1/ping/ with
      "Invalid API key. …"). MemoryClient checks its key with `GET /v1/ping/` when built.
    - `POST /v3/memories/add/`: ids at the top level; `infer: false` stores each user and
      assistant message as said and answers at once with `results` (`{id, data: {memory},
      event}`); otherwise the add is queued (`{event_id, status: PENDING}`) — the stand-in
      stores the messages verbatim at once (it has no model) and its event reads SUCCEEDED.
    - `POST /v3/memories/search/` and `POST /v3/memories/` (get_all): ids only inside
      `filters` (top-level ids: 400); search `top_k` 10 by default (1-1000); get_all is the
      paginated envelope `{count, next, previous, results}` (page, page_size ≤ 200, query).
    - `GET`/`DELETE /v1/memories/{id}/`: 400 for an id that is not a UUID, 404
      `{"error": "Memory not found!"}` for an unknown one.
    - `DELETE /v1/memories/?user_id=…` and `DELETE /v2/entities/{type}/{id}/` (delete_users)
      are queued upstream (`{message: "Delete in progress. …", event_id}`); the stand-in
      deletes at once and its event reads SUCCEEDED. `GET /v1/event/{id}/` reads events.
    """
    store = Mem0Store(vectors, history)
    app = FastAPI(title="Mem0 platform API (memlife test stand-in, NOT Mem0)")
    app.state.store = store
    events: dict[str, dict[str, Any]] = {}

    def authorized(authorization: str | None = Header(None)) -> None:
        if authorization != f"Token {api_key}":
            raise HTTPException(401, INVALID_KEY)

    def event(event_type: str, payload: Any, results: list[Any]) -> str:
        event_id = str(uuid.uuid4())
        stamp = _now()
        events[event_id] = {
            "id": event_id,
            "event_type": event_type,
            "status": "SUCCEEDED",
            "payload": payload,
            "metadata": None,
            "results": results,
            "created_at": stamp,
            "updated_at": stamp,
            "started_at": stamp,
            "completed_at": stamp,
            "latency": 0.0,
            "graph_status": None,
            "error": None,
        }
        return event_id

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise _bad_request("the body is not JSON") from None
        if not isinstance(body, dict):
            raise _bad_request("the body is not an object")
        return body

    @app.get("/v1/ping/", dependencies=[Depends(authorized)])
    def ping() -> Any:
        return {
            "status": "ok",
            "org_id": "org-standin",
            "project_id": "proj-standin",
            "user_email": "standin@example.invalid",
        }

    @app.post("/v3/memories/add/", dependencies=[Depends(authorized)])
    async def add(request: Request) -> Any:
        body = await body_of(request)
        messages = body.get("messages")
        ids = {key: body.get(key) for key in PLATFORM_ENTITY_KEYS if body.get(key)}
        if not isinstance(messages, list) or not messages or not ids:
            return JSONResponse(
                status_code=400,
                content={
                    "error": "400 Bad Request",
                    "details": {
                        "message": (
                            "Invalid input data. Please refer to the memory creation documentation "
                            "at https://docs.mem0.ai/platform/quickstart#4-1-create-memories for "
                            "correct formatting and required fields."
                        )
                    },
                },
            )
        with store.lock:
            added = store._add_raw(
                [m for m in messages if isinstance(m, dict)],
                {
                    **{
                        k: v
                        for k, v in (body.get("metadata") or {}).items()
                        if k not in PLATFORM_ENTITY_KEYS
                    },
                    **ids,
                },
            )
        results = [{"id": m["id"], "data": {"memory": m["memory"]}, "event": "ADD"} for m in added]
        event_id = event("ADD", body, results)
        if body.get("infer", True) is False:
            return {
                "message": "Memories added successfully",
                "status": "SUCCEEDED",
                "event_id": event_id,
                "results": results,
            }
        return {"event_id": event_id, "status": "PENDING"}

    def scoped_rows(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        if any(key in body for key in PLATFORM_ENTITY_KEYS):
            raise _bad_request("Entity IDs must be passed inside `filters`.")
        filters = body.get("filters")
        if not _names_an_entity(filters):
            raise _bad_request(
                "filters must include at least one entity ID (user_id, agent_id, app_id or run_id)."
            )
        matches = _matcher(filters)
        show_expired = bool(body.get("show_expired"))
        with store.lock:
            return [
                (i, p) for i, p in store._rows() if matches(p) and (show_expired or not _expired(p))
            ]

    @app.post("/v3/memories/search/", dependencies=[Depends(authorized)])
    async def search(request: Request) -> Any:
        body = await body_of(request)
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise _bad_request("query must be a non-empty string")
        top_k = body.get("top_k", 10)
        if not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise _bad_request("top_k must be between 1 and 1000")
        words = _words(query)
        scored = [
            (len(words & _words(p.get("data", ""))) / (len(words) or 1), i, p)
            for i, p in scoped_rows(body)
        ]
        scored.sort(key=lambda entry: (-entry[0], entry[2].get("created_at") or ""))
        return {"results": [_platform_item(i, p, score) for score, i, p in scored[:top_k]]}

    @app.post("/v3/memories/", dependencies=[Depends(authorized)])
    async def get_all(
        request: Request, page: int = Query(1, ge=1), page_size: int = Query(100, ge=1, le=200)
    ) -> Any:
        rows = scoped_rows(await body_of(request))
        start = (page - 1) * page_size
        base = f"{str(request.base_url).rstrip('/')}/v3/memories/"
        return {
            "count": len(rows),
            "next": (
                f"{base}?page={page + 1}&page_size={page_size}"
                if start + page_size < len(rows)
                else None
            ),
            "previous": f"{base}?page={page - 1}&page_size={page_size}" if page > 1 else None,
            "results": [_platform_item(i, p) for i, p in rows[start : start + page_size]],
        }

    def unknown(memory_id: str) -> JSONResponse | None:
        """docs/openapi.json: `{"error": …}` bodies for a bad or unknown memory id."""
        if not _is_uuid(memory_id):
            return JSONResponse(
                status_code=400, content={"error": "memory_id should be a valid UUID"}
            )
        if store.get_payload(memory_id) is None:
            return JSONResponse(status_code=404, content={"error": "Memory not found!"})
        return None

    @app.get("/v1/memories/{memory_id}/", dependencies=[Depends(authorized)])
    def get(memory_id: str) -> Any:
        with store.lock:
            refusal = unknown(memory_id)
            return refusal or _platform_item(memory_id, store.get_payload(memory_id) or {})

    @app.delete("/v1/memories/{memory_id}/", dependencies=[Depends(authorized)])
    def delete(memory_id: str) -> Any:
        with store.lock:
            refusal = unknown(memory_id)
            if refusal is not None:
                return refusal
            store._delete(memory_id, store.get_payload(memory_id) or {})
        return {"message": "Memory deleted successfully!"}

    def queued_deletion(ids: dict[str, str]) -> dict[str, Any]:
        deleted = store.delete_all(ids) if ids else 0
        return {
            "message": "Delete in progress. This may take some time.",
            "event_id": event("DELETE", ids, [{"deleted": deleted}]),
        }

    @app.delete("/v1/memories/", dependencies=[Depends(authorized)])
    def delete_all(
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        run_id: str | None = None,
    ) -> Any:
        ids = {
            k: v
            for k, v in {
                "user_id": user_id,
                "agent_id": agent_id,
                "app_id": app_id,
                "run_id": run_id,
            }.items()
            if v
        }
        if not ids:
            raise _bad_request("At least one filter is required to delete memories.")
        if "*" in ids.values():
            raise _bad_request("the stand-in does not delete by wildcard")
        return queued_deletion(ids)

    @app.delete("/v2/entities/{entity_type}/{entity_id}/", dependencies=[Depends(authorized)])
    def delete_entity(entity_type: str, entity_id: str) -> Any:
        if entity_type not in ("user", "agent", "app", "run"):
            raise _bad_request("Invalid entity type.")
        return queued_deletion({f"{entity_type}_id": entity_id})

    @app.get("/v1/event/{event_id}/", dependencies=[Depends(authorized)])
    def get_event(event_id: str) -> Any:
        if event_id not in events:
            return JSONResponse(
                status_code=404,
                content={"error": "Event not found or you don't have permission to access it."},
            )
        return events[event_id]

    return app


def rows(path: Path, query: str, parameters: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of one of the stand-in's SQLite files, read the way a probe reads them."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return connection.execute(query, tuple(parameters)).fetchall()
    finally:
        connection.close()
