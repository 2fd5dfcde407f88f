"""The reference target's runtime: four stores in the seed's roles, persisted in SQLite.

- thread: thread checkpoints (every user message and assistant reply, per tenant)
- memory: long-term vector memory (one record per stated key; bag-of-words vectors)
- graph: graph evidence, nodes keyed by tenant (tenant node, fact nodes, STATED edges)
- jobs: job / operations projections (one row per conversation job, input and output)

Answers are assembled with the seed's precedence: graph, then memory, then thread.
Deterministic: no LLM, no randomness; the clock is the caller's `X-Memlife-Now` if given.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memlife.reference import language

STORES: dict[str, str] = {
    "thread": "thread checkpoints",
    "memory": "long-term vector memory",
    "graph": "graph evidence",
    "jobs": "job and operations projections",
}

FAULTS: dict[str, str] = {
    "cross-tenant-leak": "answers also carry other tenants' values for the same key "
    "(retrieval without the tenant filter)",
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY, phone TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS users_phone ON users(phone, status);
CREATE TABLE IF NOT EXISTS thread_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS thread_tenant ON thread_messages(tenant_id);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL,
    value TEXT NOT NULL, vector TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_tenant ON memories(tenant_id);
CREATE TABLE IF NOT EXISTS graph_nodes (
    node_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, label TEXT NOT NULL,
    predicate TEXT NOT NULL, value TEXT NOT NULL, evidence TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_nodes_tenant ON graph_nodes(tenant_id);
CREATE TABLE IF NOT EXISTS graph_edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, rel TEXT NOT NULL, tenant_id TEXT NOT NULL,
    PRIMARY KEY (src, dst, rel)
);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT NOT NULL, output TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_tenant ON jobs(tenant_id);
CREATE TABLE IF NOT EXISTS deletions (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, status TEXT NOT NULL,
    requested_at TEXT NOT NULL, completed_at TEXT
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


ABSTAIN_ES = "No tengo esa información."
ABSTAIN_EN = "I don't have that information."


class UnknownTenant(LookupError):
    pass


class UnknownStore(LookupError):
    pass


@dataclass(frozen=True)
class Evidence:
    layer: str
    text: str
    value: str


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class ReferenceRuntime:
    """All state of the reference target. Thread-safe through one lock (small and honest)."""

    def __init__(self, db_path: str | Path, faults: Iterable[str] = ()):
        unknown = sorted(set(faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s): {', '.join(unknown)}; known: {', '.join(FAULTS)}")
        self.faults = frozenset(faults)
        self._lock = threading.Lock()
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(db_path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- helpers -------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One atomic write: a turn lands in every store or in none."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _next_seq(self) -> int:
        self._db.execute(
            "INSERT INTO counters(name, value) VALUES ('seq', 1) "
            "ON CONFLICT(name) DO UPDATE SET value = value + 1"
        )
        return self._db.execute("SELECT value FROM counters WHERE name='seq'").fetchone()[0]

    def _tenant_for_phone(self, phone: str) -> str:
        row = self._db.execute(
            "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
        ).fetchone()
        if row is None:
            raise UnknownTenant(phone)
        return row["user_id"]

    # -- public surface ------------------------------------------------------------------

    def register(self, phone: str, now: datetime) -> tuple[str, bool]:
        """Return (user_id, created). A phone maps to one active user."""
        with self._lock, self._transaction():
            row = self._db.execute(
                "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
            ).fetchone()
            if row is not None:
                return row["user_id"], False
            user_id = f"u_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO users(user_id, phone, status, created_at) VALUES (?,?,?,?)",
                (user_id, phone, "active", _iso(now)),
            )
            return user_id, True

    def converse(self, phone: str, message: str, now: datetime) -> tuple[str, str]:
        """One conversation turn through the preview path: (user_id, reply). Nothing is sent."""
        with self._lock, self._transaction():
            tenant = self._tenant_for_phone(phone)
            stamp = _iso(now)
            self._db.execute(
                "INSERT INTO thread_messages(tenant_id, role, content, created_at) "
                "VALUES (?,?,?,?)",
                (tenant, "user", message, stamp),
            )
            if language.is_question(message):
                reply = self._answer(tenant, message)
            else:
                reply = self._remember(tenant, message, stamp)
            self._db.execute(
                "INSERT INTO thread_messages(tenant_id, role, content, created_at) "
                "VALUES (?,?,?,?)",
                (tenant, "assistant", reply, stamp),
            )
            self._db.execute(
                "INSERT INTO jobs(id, tenant_id, kind, status, input, output, created_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (f"job_{uuid.uuid4().hex[:16]}", tenant, "conversation", "completed",
                 message, reply, stamp),
            )
            return tenant, reply

    def delete_tenant(self, user_id: str, now: datetime) -> dict[str, str]:
        """Erase a tenant from every store; the user row keeps only its id and status."""
        with self._lock, self._transaction():
            row = self._db.execute(
                "SELECT status FROM users WHERE user_id=?", (user_id,)
            ).fetchone()
            if row is None:
                raise UnknownTenant(user_id)
            stamp = _iso(now)
            for table in ("thread_messages", "memories", "graph_nodes", "graph_edges", "jobs"):
                self._db.execute(f"DELETE FROM {table} WHERE tenant_id=?", (user_id,))  # noqa: S608
            self._db.execute(
                "UPDATE users SET status='deleted', phone='', deleted_at=? WHERE user_id=?",
                (stamp, user_id),
            )
            deletion_id = f"del_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO deletions(id, tenant_id, status, requested_at, completed_at) "
                "VALUES (?,?,?,?,?)",
                (deletion_id, user_id, "completed", stamp, stamp),
            )
            return {"deletion_id": deletion_id, "status": "completed"}

    def deletion_status(self, user_id: str) -> dict[str, str | None]:
        with self._lock:
            row = self._db.execute(
                "SELECT id, status, requested_at, completed_at FROM deletions "
                "WHERE tenant_id=? ORDER BY requested_at DESC LIMIT 1",
                (user_id,),
            ).fetchone()
        if row is None:
            raise UnknownTenant(user_id)
        return {"deletion_id": row["id"], "status": row["status"],
                "requested_at": row["requested_at"], "completed_at": row["completed_at"]}

    # -- admin reads (for probes) --------------------------------------------------------

    def store_records(self, store: str, tenant_id: str | None = None,
                      needle: str | None = None) -> list[dict[str, object]]:
        """Records of one store, by tenant scope and/or by normalized needle search."""
        if store not in STORES:
            raise UnknownStore(store)
        with self._lock:
            records = [self._record(store, row) for row in self._rows(store, tenant_id)]
        if needle is not None:
            wanted = language.normalize(needle)
            records = [r for r in records if wanted and wanted in language.normalize(
                str(r["content"]))]
        return records

    def _rows(self, store: str, tenant_id: str | None) -> list[sqlite3.Row]:
        table = {"thread": "thread_messages", "memory": "memories", "graph": "graph_nodes",
                 "jobs": "jobs"}[store]
        if tenant_id is None:
            return self._db.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608
        return self._db.execute(
            f"SELECT * FROM {table} WHERE tenant_id=?", (tenant_id,)  # noqa: S608
        ).fetchall()

    @staticmethod
    def _record(store: str, row: sqlite3.Row) -> dict[str, object]:
        if store == "thread":
            return {"id": str(row["id"]), "tenant_id": row["tenant_id"], "role": row["role"],
                    "content": row["content"], "created_at": row["created_at"]}
        if store == "memory":
            return {"id": row["id"], "tenant_id": row["tenant_id"], "content": row["text"],
                    "key": row["key"], "updated_at": row["updated_at"]}
        if store == "graph":
            return {"id": row["node_key"], "tenant_id": row["tenant_id"], "label": row["label"],
                    "content": f"{row['predicate']}: {row['value']}",
                    "updated_at": row["updated_at"]}
        return {"id": row["id"], "tenant_id": row["tenant_id"], "kind": row["kind"],
                "status": row["status"], "content": f"{row['input']}\n{row['output']}",
                "created_at": row["created_at"]}

    # -- memory write path ---------------------------------------------------------------

    def _remember(self, tenant: str, message: str, stamp: str) -> str:
        parsed = language.split_statement(message)
        lang = language.detect_language(message)
        if parsed is None:
            return "Entendido." if lang == "es" else "Noted."
        key_tokens, value = parsed
        key = " ".join(sorted(key_tokens))
        seq = self._next_seq()
        vector = json.dumps(sorted(language.content_tokens(message)))
        existing = self._db.execute(
            "SELECT id FROM memories WHERE tenant_id=? AND key=?", (tenant, key)
        ).fetchone()
        if existing is not None:  # an update supersedes the value in place (Mem0 UPDATE)
            self._db.execute(
                "UPDATE memories SET text=?, value=?, vector=?, updated_at=?, seq=? WHERE id=?",
                (message, value, vector, stamp, seq, existing["id"]),
            )
        else:
            self._db.execute(
                "INSERT INTO memories(id, tenant_id, key, text, value, vector, created_at, "
                "updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?)",
                (f"mem_{uuid.uuid4().hex[:16]}", tenant, key, message, value, vector, stamp,
                 stamp, seq),
            )
        tenant_node = f"tenant:{tenant}"
        fact_node = f"tenant:{tenant}:fact:{key.replace(' ', '_')}"
        self._db.execute(
            "INSERT INTO graph_nodes(node_key, tenant_id, label, predicate, value, evidence, "
            "updated_at, seq) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(node_key) DO UPDATE SET "
            "value=excluded.value, evidence=excluded.evidence, updated_at=excluded.updated_at, "
            "seq=excluded.seq",
            (fact_node, tenant, "Fact", key, value, message, stamp, seq),
        )
        self._db.execute(
            "INSERT OR IGNORE INTO graph_nodes(node_key, tenant_id, label, predicate, value, "
            "evidence, updated_at, seq) VALUES (?,?,?,?,?,?,?,?)",
            (tenant_node, tenant, "Tenant", "tenant", tenant, "", stamp, seq),
        )
        self._db.execute(
            "INSERT OR IGNORE INTO graph_edges(src, dst, rel, tenant_id) VALUES (?,?,?,?)",
            (tenant_node, fact_node, "STATED", tenant),
        )
        return "Entendido, lo recordaré." if lang == "es" else "Got it, I'll remember that."

    # -- answer path: graph, then memory, then thread ------------------------------------

    def _answer(self, tenant: str, question: str) -> str:
        lang = language.detect_language(question)
        wanted = language.content_tokens(question)
        evidence = (
            self._from_graph(tenant, wanted)
            or self._from_memory(tenant, wanted)
            or self._from_thread(tenant, wanted)
        )
        if evidence is None:
            reply = ABSTAIN_ES if lang == "es" else ABSTAIN_EN
        else:
            prefix = "Según lo que me contaste" if lang == "es" else "From what you told me"
            reply = f"{prefix}: {evidence.text}"
        if "cross-tenant-leak" in self.faults:
            foreign = self._foreign_values(tenant, wanted)
            if foreign:
                joiner = "También tengo anotado" if lang == "es" else "I also have noted"
                reply += f" {joiner}: {'; '.join(foreign)}."
        return reply

    def _best(self, rows: list[sqlite3.Row], wanted: frozenset[str],
              tokens_of: str) -> sqlite3.Row | None:
        best: tuple[float, int] | None = None
        chosen = None
        for row in rows:
            tokens = frozenset(str(row[tokens_of]).split()) if tokens_of != "vector" else \
                frozenset(json.loads(row["vector"]))
            score = language.overlap(wanted, tokens)
            if score <= 0:
                continue
            rank = (score, row["seq"])
            if best is None or rank > best:
                best, chosen = rank, row
        return chosen

    def _from_graph(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute(
            "SELECT * FROM graph_nodes WHERE tenant_id=? AND label='Fact'", (tenant,)
        ).fetchall()
        row = self._best(rows, wanted, "predicate")
        return Evidence("graph", row["evidence"], row["value"]) if row else None

    def _from_memory(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute("SELECT * FROM memories WHERE tenant_id=?", (tenant,)).fetchall()
        row = self._best(rows, wanted, "vector")
        return Evidence("memory", row["text"], row["value"]) if row else None

    def _from_thread(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute(
            "SELECT * FROM thread_messages WHERE tenant_id=? AND role='user' ORDER BY id DESC",
            (tenant,),
        ).fetchall()
        for row in rows:
            if language.is_question(row["content"]):
                continue
            if wanted & language.content_tokens(row["content"]):
                return Evidence("thread", row["content"], row["content"])
        return None

    def _foreign_values(self, tenant: str, wanted: frozenset[str]) -> list[str]:
        """The fault: the same graph lookup without the tenant predicate, newest first."""
        rows = self._db.execute(
            "SELECT * FROM graph_nodes WHERE tenant_id != ? AND label='Fact' "
            "ORDER BY seq DESC LIMIT 200",
            (tenant,),
        ).fetchall()
        matches = [r for r in rows if language.overlap(wanted, frozenset(r["predicate"].split()))]
        best = max((language.overlap(wanted, frozenset(r["predicate"].split()))
                    for r in matches), default=0)
        return [r["value"] for r in matches
                if language.overlap(wanted, frozenset(r["predicate"].split())) == best][:3]
