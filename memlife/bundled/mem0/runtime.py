"""The mem0 stack: Mem0 (mem0ai 2.x) as an application would run it with its model on —
`Memory.add(infer=True)`, so each statement goes through Mem0's own extraction call
(`mem0/memory/main.py`, `_add_to_vector_store`) — with memlife's scripted model as its LLM
and embedder (docs/scripted-model.md). Everything else is Mem0's public API:

- a statement: `Memory.add([{role: user, content}], user_id=…)`; Mem0 searches the user's
  memories, asks the model what to add, inserts what it extracted (Mem0 2.x only adds:
  an update of a fact is a new memory beside the old one), writes one `history` ADD row a
  memory, and keeps the raw messages in its `messages` table;
- a question: `Memory.search(question, filters={user_id}, top_k=20)` (the default of
  Mem0's own REST server, `server/main.py`); the memories found are the answer (a
  retrieval answer: docs/design.md);
- a tenant's deletion: `Memory.delete_all(user_id=…)`;
- forgetting a fact: `Memory.get_all` of the user's memories, and `Memory.delete` of each
  holding the fact's value, as Mem0 erases (by id).

Stores: the vector store is local Qdrant (one client per process: read through this
process), Mem0's history database (tables `history`, `messages`) and the application's own
users table are SQLite files under the data directory.

Requests run concurrently, as in Mem0's own server: each call into local Qdrant is
serialized (`_Serialized`), nothing else, so two adds of one user interleave as they do
upstream.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlife.bundled.realstack.runtime import (
    Reply,
    close_memory,
    offline_environment,
    open_memory,
)
from memlife.bundled.reference import language
from memlife.bundled.tenants import Tenants, UnknownTenant

TOP_K = 20
COLLECTION = "memories"
APP_DB = "app.sqlite"
HISTORY_DB = "mem0-history.sqlite"
QDRANT_DIR = "qdrant"
# The model names Mem0 is configured with: the scripted model answers to any.
LLM_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "memlife-minilm"
EMBEDDING_DIMS = 384


def mem0_config(data_dir: Path, model_url: str) -> dict[str, Any]:
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(data_dir / QDRANT_DIR),
                "collection_name": COLLECTION,
                "embedding_model_dims": EMBEDDING_DIMS,
                "on_disk": True,
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": EMBEDDING_MODEL,
                "embedding_dims": EMBEDDING_DIMS,
                "openai_base_url": model_url,
                "api_key": "scripted-model",
            },
        },
        "llm": {
            "provider": "openai",
            "config": {
                "model": LLM_MODEL,
                "openai_base_url": model_url,
                "api_key": "scripted-model",
                "temperature": 0,
            },
        },
        "history_db_path": str(data_dir / HISTORY_DB),
    }


class _Serialized:
    """A stand-in for an object whose every method call takes one lock: local Qdrant is
    not safe to call from two threads at once; a Qdrant server would serialize the same
    way, per request."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return found(*args, **kwargs)

        return call

    @property
    def inner(self) -> Any:
        return self._inner


class Mem0Runtime:
    def __init__(self, data_dir: str | Path, model_url: str) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offline_environment(self.data_dir)
        self._lock = threading.Lock()  # the application's own tables only
        self._db = sqlite3.connect(
            str(self.data_dir / APP_DB), check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self.tenants = Tenants(self._db)
        self.memory = open_memory(mem0_config(self.data_dir, model_url))
        self.memory.vector_store = _Serialized(self.memory.vector_store)

    def close(self) -> None:
        close_memory(self.memory)
        with self._lock:
            self._db.close()

    def _app(self, work: Callable[[Tenants], Any]) -> Any:
        with self._lock:
            return work(self.tenants)

    def register(self, phone: str) -> tuple[str, bool]:
        result: tuple[str, bool] = self._app(lambda t: t.register(phone))
        return result

    def converse(self, phone: str, message: str) -> tuple[str, Reply]:
        tenant: str = self._app(lambda t: t.for_phone(phone))
        if language.is_question(message):
            found = self.memory.search(message, filters={"user_id": tenant}, top_k=TOP_K)
            memories = [str(item["memory"]) for item in found.get("results", [])]
            return tenant, Reply("\n".join(memories), memories, "memory" if memories else None)
        added = self.memory.add([{"role": "user", "content": message}], user_id=tenant)
        spanish = language.detect_language(message) == "es"
        stored = [str(item["memory"]) for item in added.get("results", [])]
        return tenant, Reply("Entendido." if spanish else "Noted.", stored, None)

    def delete_tenant(self, user_id: str) -> dict[str, str]:
        done = self._app(lambda t: t.deletion_of(user_id))
        if done is not None:  # idempotent: a retried request is the same request
            return {"deletion_id": done, "status": "completed"}
        self.memory.delete_all(user_id=user_id)
        result: dict[str, str] = self._app(lambda t: t.record_deletion(user_id))
        return result

    def deletion_status(self, user_id: str) -> dict[str, str | None]:
        result: dict[str, str | None] = self._app(lambda t: t.deletion_status(user_id))
        return result

    def forget(self, user_id: str, values: list[str]) -> dict[str, object]:
        """Delete each of the user's memories holding any value the fact has had: Mem0 2.x
        keeps a superseded value as a memory of its own."""
        if not self._app(lambda t: t.is_active(user_id)):
            raise UnknownTenant(user_id)
        needles = [language.normalize(value) for value in values]
        memories = self.memory.get_all(filters={"user_id": user_id}, top_k=10_000)
        forgotten = [
            item["id"]
            for item in memories.get("results", [])
            if any(n in language.normalize(item["memory"]) for n in needles)
        ]
        for memory_id in forgotten:
            self.memory.delete(memory_id)
        return {"status": "completed", "memories": len(forgotten)}

    def memory_records(
        self, tenant_id: str | None = None, needles: list[str] | None = None
    ) -> list[dict[str, object]]:
        """Mem0's collection for one tenant, or holding any of the needles (local Qdrant
        admits one client: memlife reads it through this process)."""
        from memlife.targets.stores import qdrant_records

        store = self.memory.vector_store
        with store._lock:
            records, _ = qdrant_records(
                store.inner.client,
                COLLECTION,
                tenant_key="user_id",
                content_key="data",
                tenant=tenant_id,
                needles=needles or (),
            )
        return records
