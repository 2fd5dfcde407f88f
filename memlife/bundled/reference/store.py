"""The reference target's runtime: the seed's stores, persisted in SQLite, with time.

Stores (retention policy in parentheses, as `scenarios/targets/reference.yaml` declares):
- thread: thread checkpoints, every user message and reply (tombstone: deletion marks rows
  deleted; deleted checkpoints are never served)
- memory: long-term vector memory, one record per stated key (purge)
- graph: graph evidence, tenant-keyed nodes and STATED edges (purge)
- jobs: job / operations projections, one row per conversation job (retain-redacted:
  deletion keeps the row for audit and blanks its input and output)
- summaries: per-tenant summaries, written when a session has been idle for an hour and
  refreshed by the nightly job (purge)
- cache: answers cached per tenant and question for 6 hours (purge)

Answers use the seed's precedence: graph, then memory, then thread. Time is the caller's
`X-Memlife-Now` (or the wall clock): background work — session summaries, the nightly
job at 02:00 UTC, the asynchronous deletion worker, cache expiry — runs lazily, in time
order, whenever a request brings the clock past its due time. Deterministic: no LLM, no
randomness beyond opaque ids.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import FAULTS, RETRIEVAL_MODES

STORES: dict[str, str] = {
    "thread": "thread checkpoints",
    "memory": "long-term vector memory",
    "graph": "graph evidence",
    "jobs": "job and operations projections",
    "summaries": "tenant summaries",
    "cache": "response cache",
}

ABSTAIN_ES = "No tengo esa información."
ABSTAIN_EN = "I don't have that information."
TOP_K = 3

# Simulated usage, priced like a small hosted model (USD per million tokens): the reference
# target reports what a real one would, so cost per probe can be measured end to end.
PRICE_PER_MILLION = {"prompt": 0.15, "completion": 0.60}
SESSION_IDLE = timedelta(hours=1)
NIGHTLY_HOUR = 2
DELETION_DELAY = timedelta(minutes=30)
PREMATURE_PURGE_DELAY = timedelta(hours=2)
CACHE_TTL = timedelta(hours=6)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY, phone TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS users_phone ON users(phone, status);
CREATE TABLE IF NOT EXISTS thread_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, norm TEXT NOT NULL, created_at TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS thread_tenant ON thread_messages(tenant_id);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL,
    value TEXT NOT NULL, norm TEXT NOT NULL, vector TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_tenant ON memories(tenant_id);
CREATE TABLE IF NOT EXISTS graph_nodes (
    node_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, label TEXT NOT NULL,
    predicate TEXT NOT NULL, value TEXT NOT NULL, evidence TEXT NOT NULL, norm TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_nodes_tenant ON graph_nodes(tenant_id);
CREATE TABLE IF NOT EXISTS graph_edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, rel TEXT NOT NULL, tenant_id TEXT NOT NULL,
    PRIMARY KEY (src, dst, rel)
);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT NOT NULL, output TEXT NOT NULL, norm TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_tenant ON jobs(tenant_id);
CREATE TABLE IF NOT EXISTS summaries (
    tenant_id TEXT PRIMARY KEY, content TEXT NOT NULL, norm TEXT NOT NULL,
    updated_at TEXT NOT NULL, source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cache (
    tenant_id TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    context TEXT NOT NULL, norm TEXT NOT NULL, cached_at TEXT NOT NULL,
    expires_at TEXT NOT NULL, PRIMARY KEY (tenant_id, question)
);
CREATE TABLE IF NOT EXISTS deletions (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, status TEXT NOT NULL,
    requested_at TEXT NOT NULL, purge_due TEXT NOT NULL, completed_at TEXT,
    reported_completed_at TEXT
);
CREATE TABLE IF NOT EXISTS activity (
    tenant_id TEXT PRIMARY KEY, last_message_at TEXT NOT NULL, summarized_at TEXT
);
-- A session is summarized once it has been idle long enough: only unsummarized ones are
-- looked at on each request.
CREATE INDEX IF NOT EXISTS activity_unsummarized ON activity(last_message_at)
    WHERE summarized_at IS NULL;
-- Tenants whose checkpoints or memories changed since the last nightly rebuild: the only
-- ones a rebuild can change (it is idempotent), so the only ones it redoes.
CREATE TABLE IF NOT EXISTS nightly_dirty (tenant_id TEXT PRIMARY KEY);
-- Lookups made on every request or every deletion: without them each is a scan of a table
-- that grows with the number of tenants (quadratic over a run of thousands of pairs).
CREATE INDEX IF NOT EXISTS deletions_pending ON deletions(purge_due)
    WHERE completed_at IS NULL;
CREATE INDEX IF NOT EXISTS deletions_tenant ON deletions(tenant_id, requested_at);
CREATE INDEX IF NOT EXISTS cache_expiry ON cache(expires_at);
CREATE INDEX IF NOT EXISTS graph_edges_tenant ON graph_edges(tenant_id);
CREATE TABLE IF NOT EXISTS clock (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

# The tables behind each store, searched by needle across all tenants.
STORE_TABLES = {"thread": "thread_messages", "memory": "memories", "graph": "graph_nodes",
                "jobs": "jobs", "summaries": "summaries", "cache": "cache"}
# A needle search is a substring search over every tenant's rows: a full scan grows with
# the store, and a ten-thousand-pair run would spend its life scanning. Like the indexes a
# real store has, full-text indexes find the candidate rows and the substring test on them
# keeps the answer exact. Triggers keep them in step with every write.
# - A word index (FTS5 unicode61) serves needles of three or more words, as every canary
#   value is: the needle's inner words appear whole in any row that holds it, and its last
#   word begins a word there, so the phrase of them (last word as a prefix) is a superset.
#   Its posting lists are those of rare words, 10-20x cheaper than the trigram phrase.
# - A trigram index serves shorter needles, which may begin and end mid-word.
_FULL_TEXT_INDEXES = {"search": "trigram", "words": "unicode61"}
_SEARCH_INDEX = "".join(f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(
    norm, content='{table}', content_rowid='rowid', tokenize='{tokenizer}');
CREATE TRIGGER IF NOT EXISTS {fts}_insert AFTER INSERT ON {table} BEGIN
    INSERT INTO {fts}(rowid, norm) VALUES (new.rowid, new.norm);
END;
CREATE TRIGGER IF NOT EXISTS {fts}_delete AFTER DELETE ON {table} BEGIN
    INSERT INTO {fts}({fts}, rowid, norm) VALUES ('delete', old.rowid, old.norm);
END;
CREATE TRIGGER IF NOT EXISTS {fts}_update AFTER UPDATE OF norm ON {table} BEGIN
    INSERT INTO {fts}({fts}, rowid, norm) VALUES ('delete', old.rowid, old.norm);
    INSERT INTO {fts}(rowid, norm) VALUES (new.rowid, new.norm);
END;
""" for table in STORE_TABLES.values() for index, tokenizer in _FULL_TEXT_INDEXES.items()
    for fts in (f"{table}_{index}",))
_TRIGRAM = 3
# unicode61's token characters (letters, digits), for the ASCII text normalization leaves.
_WORD = re.compile(r"[a-z0-9]+")
_WORD_INDEX_MIN_WORDS = 3


def _match_query(needle: str) -> tuple[str, str] | None:
    """Which full-text index narrows the search for a normalized needle, and its query."""
    words = _WORD.findall(needle) if needle.isascii() else []
    if len(words) >= _WORD_INDEX_MIN_WORDS:  # the first word may end another: left out
        return "words", '"' + " ".join(words[1:]) + '" *'
    if len(needle) >= _TRIGRAM:
        return "search", '"' + needle.replace('"', '""') + '"'
    return None


class UnknownTenant(LookupError):
    pass


class UnknownStore(LookupError):
    pass


@dataclass(frozen=True)
class Evidence:
    layer: str
    text: str


@dataclass(frozen=True)
class Answer:
    reply: str
    context: list[str]
    layer: str | None
    # Milliseconds per stage (reported as Server-Timing): queue (waiting for the runtime),
    # retrieval (cache and layer lookups), assembly (composing the reply, caching it).
    timings: dict[str, float] = field(default_factory=dict)


def _iso(moment: datetime) -> str:
    """Always to the microsecond, so that stored times compare correctly as text."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _norm(text: str) -> str:
    return language.normalize(text)


class ReferenceRuntime:
    """All state of the reference target. Thread-safe through one lock (small and honest)."""

    def __init__(self, db_path: str | Path, faults: Iterable[str] = (),
                 retrieval: str = "combined"):
        unknown = sorted(set(faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s): {', '.join(unknown)}; known: {', '.join(FAULTS)}")
        if retrieval not in RETRIEVAL_MODES:
            raise ValueError(f"unknown retrieval {retrieval!r}; one of "
                             f"{', '.join(RETRIEVAL_MODES)}")
        self.faults = frozenset(faults)
        self.retrieval = retrieval
        self._lock = threading.Lock()
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(db_path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        # WAL with synchronous=NORMAL: still atomic and never corrupt, without an fsync per
        # turn (a power cut may forget the last turns; a reference target can afford it).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA recursive_triggers=ON")  # REPLACE's deletes reindex too
        indexed = {index for index in _FULL_TEXT_INDEXES if self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE name=?", (f"jobs_{index}",)).fetchone()}
        tracked = self._db.execute("SELECT 1 FROM sqlite_master WHERE name='nightly_dirty'"
                                   ).fetchone() is not None
        self._db.executescript(_SCHEMA + _SEARCH_INDEX)
        if not tracked:  # a database from before the tracking: every tenant may need it
            self._db.execute("INSERT OR IGNORE INTO nightly_dirty(tenant_id) "
                             "SELECT DISTINCT tenant_id FROM thread_messages")
            self._db.execute("UPDATE activity SET summarized_at=NULL "
                             "WHERE summarized_at < last_message_at")
        for index in set(_FULL_TEXT_INDEXES) - indexed:  # a database from before it
            for table in STORE_TABLES.values():
                self._db.execute(f"INSERT INTO {table}_{index}({table}_{index}) "
                                 "VALUES ('rebuild')")

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

    @contextmanager
    def _at(self, now: datetime) -> Iterator[datetime]:
        """Lock, open a transaction, and bring background work up to `now` first."""
        with self._lock, self._transaction():
            yield self._advance(now)

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

    def _is_active(self, tenant: str) -> bool:
        row = self._db.execute("SELECT status FROM users WHERE user_id=?", (tenant,)).fetchone()
        return row is not None and row["status"] == "active"

    # -- the clock and background work ---------------------------------------------------

    def _advance(self, now: datetime) -> datetime:
        """Run every background job due by `now`, in time order. The clock never goes back."""
        row = self._db.execute("SELECT value FROM clock WHERE name='now'").fetchone()
        last = _parse(row["value"]) if row else None
        if last is not None and now <= last:
            return last
        start = last or now
        events: list[tuple[datetime, int, str, str]] = []
        for deletion in self._db.execute(
            "SELECT id, purge_due FROM deletions WHERE completed_at IS NULL AND purge_due <= ?",
            (_iso(now),),
        ).fetchall():
            due = _parse(deletion["purge_due"])
            if due <= now:
                events.append((due, 0, "purge", deletion["id"]))
        for item in self._db.execute(
            "SELECT tenant_id, last_message_at FROM activity "
            "WHERE summarized_at IS NULL AND last_message_at <= ?",
            (_iso(now - SESSION_IDLE),),
        ).fetchall():
            due = _parse(item["last_message_at"]) + SESSION_IDLE
            if due <= now:
                events.append((due, 1, "summary", item["tenant_id"]))
        night = start.replace(hour=NIGHTLY_HOUR, minute=0, second=0, microsecond=0)
        if night <= start:
            night += timedelta(days=1)
        while last is not None and night <= now:
            events.append((night, 2, "nightly", ""))
            night += timedelta(days=1)
        for when, _, kind, subject in sorted(events):
            if kind == "purge":
                self._purge(subject, when)
            elif kind == "summary":
                self._summarize(subject, when, "session")
                self._db.execute("UPDATE activity SET summarized_at=? WHERE tenant_id=?",
                                 (_iso(when), subject))
            else:
                self._nightly(when)
        self._db.execute("DELETE FROM cache WHERE expires_at <= ?", (_iso(now),))
        self._db.execute(
            "INSERT INTO clock(name, value) VALUES ('now', ?) "
            "ON CONFLICT(name) DO UPDATE SET value=excluded.value", (_iso(now),))
        return now

    def _summarize(self, tenant: str, when: datetime, source: str) -> None:
        if not self._is_active(tenant):
            return
        texts = [row["text"] for row in self._db.execute(
            "SELECT text FROM memories WHERE tenant_id=? ORDER BY seq", (tenant,))]
        if not texts:
            return
        content = " ".join(texts)
        self._db.execute(
            "INSERT INTO summaries(tenant_id, content, norm, updated_at, source) VALUES "
            "(?,?,?,?,?) ON CONFLICT(tenant_id) DO UPDATE SET content=excluded.content, "
            "norm=excluded.norm, updated_at=excluded.updated_at, source=excluded.source",
            (tenant, content, _norm(content), _iso(when), source),
        )

    def _nightly(self, when: datetime) -> None:
        """Rebuild memory from checkpoints (replaying statements in order), then summarize.

        Clean: only live checkpoints of active tenants. The nightly-resurrection fault reads
        every checkpoint, tombstoned ones included, and so re-creates deleted memories.
        """
        include_deleted = "nightly-resurrection" in self.faults
        query = ("SELECT tenant_id, content FROM thread_messages WHERE role='user' "
                 + ("" if include_deleted else "AND deleted=0 ")
                 + "AND tenant_id IN (SELECT tenant_id FROM nightly_dirty) ORDER BY id")
        by_tenant: dict[str, list[str]] = {}
        for row in self._db.execute(query).fetchall():
            by_tenant.setdefault(row["tenant_id"], []).append(row["content"])
        stamp = _iso(when)
        for tenant, messages in by_tenant.items():
            if not include_deleted and not self._is_active(tenant):
                continue
            for message in messages:
                if not language.is_question(message):
                    self._store_fact(tenant, message, stamp, graph=False)
        for row in self._db.execute(
                "SELECT user_id FROM users WHERE status='active' "
                "AND user_id IN (SELECT tenant_id FROM nightly_dirty)").fetchall():
            self._summarize(row["user_id"], when, "nightly")
        self._db.execute("DELETE FROM nightly_dirty")

    def _dirty(self, tenant: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO nightly_dirty(tenant_id) VALUES (?)",
                         (tenant,))

    def _purge(self, deletion_id: str, when: datetime) -> None:
        row = self._db.execute("SELECT tenant_id FROM deletions WHERE id=?",
                               (deletion_id,)).fetchone()
        tenant = row["tenant_id"]
        stamp = _iso(when)
        keys = [r["key"] for r in self._db.execute(
            "SELECT key FROM memories WHERE tenant_id=?", (tenant,))]
        self._dirty(tenant)
        if "delete-overreach" in self.faults and keys:  # other tenants lose memories too
            marks = ",".join("?" * len(keys))
            self._db.execute(
                "INSERT OR IGNORE INTO nightly_dirty(tenant_id) SELECT DISTINCT tenant_id "
                f"FROM memories WHERE key IN ({marks})", keys)  # noqa: S608
        if "partial-delete" in self.faults:
            self._db.execute(
                "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE tenant_id=? "
                "ORDER BY seq LIMIT 1)", (tenant,))
        else:
            self._db.execute("DELETE FROM memories WHERE tenant_id=?", (tenant,))
        if "graph-unscoped-delete" not in self.faults:
            self._db.execute("DELETE FROM graph_nodes WHERE tenant_id=?", (tenant,))
            self._db.execute("DELETE FROM graph_edges WHERE tenant_id=?", (tenant,))
        if "delete-overreach" in self.faults and keys:
            marks = ",".join("?" * len(keys))
            self._db.execute(f"DELETE FROM memories WHERE key IN ({marks})", keys)  # noqa: S608
            self._db.execute(
                f"DELETE FROM graph_nodes WHERE label='Fact' AND predicate IN ({marks})",  # noqa: S608
                keys)
        if "deletion-skips-summaries" not in self.faults:
            self._db.execute("DELETE FROM summaries WHERE tenant_id=?", (tenant,))
        self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))
        self._db.execute("DELETE FROM activity WHERE tenant_id=?", (tenant,))
        self._db.execute("UPDATE thread_messages SET deleted=1 WHERE tenant_id=?", (tenant,))
        self._db.execute(
            "UPDATE jobs SET input='[redacted]', output='[redacted]', norm='[redacted]', "
            "status='redacted' WHERE tenant_id=?", (tenant,))
        self._db.execute(
            "UPDATE deletions SET status='completed', completed_at=?, "
            "reported_completed_at=COALESCE(reported_completed_at, ?) WHERE id=?",
            (stamp, stamp, deletion_id))

    # -- public surface ------------------------------------------------------------------

    def register(self, phone: str, now: datetime) -> tuple[str, bool]:
        """Return (user_id, created). A phone maps to one active user."""
        with self._at(now) as clock:
            row = self._db.execute(
                "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
            ).fetchone()
            if row is not None:
                return row["user_id"], False
            user_id = f"u_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO users(user_id, phone, status, created_at) VALUES (?,?,?,?)",
                (user_id, phone, "active", _iso(clock)),
            )
            return user_id, True

    def converse(self, phone: str, message: str, now: datetime) -> tuple[str, Answer]:
        """One conversation turn through the preview path: (user_id, answer). Nothing is sent."""
        arrived = time.perf_counter()
        with self._at(now) as clock:
            queued_ms = (time.perf_counter() - arrived) * 1000
            tenant = self._tenant_for_phone(phone)
            stamp = _iso(clock)
            self._thread_append(tenant, "user", message, stamp)
            if language.is_question(message):
                answer = self._answer(tenant, message, clock)
            else:
                answer = Answer(self._remember(tenant, message, stamp), [], None)
            self._thread_append(tenant, "assistant", answer.reply, stamp)
            self._db.execute(
                "INSERT INTO jobs(id, tenant_id, kind, status, input, output, norm, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (f"job_{uuid.uuid4().hex[:16]}", tenant, "conversation", "completed",
                 message, answer.reply, _norm(f"{message}\n{answer.reply}"), stamp),
            )
            self._db.execute(
                "INSERT INTO activity(tenant_id, last_message_at) VALUES (?,?) "
                "ON CONFLICT(tenant_id) DO UPDATE SET last_message_at=excluded.last_message_at, "
                "summarized_at=NULL",
                (tenant, stamp))
            return tenant, replace(answer, timings={"queue": round(queued_ms, 3),
                                                    **answer.timings})

    def delete_tenant(self, user_id: str, now: datetime) -> dict[str, str]:
        """Request erasure. The user is detached from its phone at once (so the phone can
        register afresh); the purge runs asynchronously, DELETION_DELAY later."""
        with self._at(now) as clock:
            row = self._db.execute(
                "SELECT status FROM users WHERE user_id=?", (user_id,)
            ).fetchone()
            if row is None:
                raise UnknownTenant(user_id)
            existing = self._db.execute(
                "SELECT id, status FROM deletions WHERE tenant_id=?", (user_id,)).fetchone()
            if existing is not None:  # idempotent: a retried request is the same request
                return {"deletion_id": existing["id"], "status": existing["status"]}
            stamp = _iso(clock)
            self._dirty(user_id)
            self._db.execute(
                "UPDATE users SET status='deleted', phone='', deleted_at=? WHERE user_id=?",
                (stamp, user_id),
            )
            premature = "premature-deletion-status" in self.faults
            due = clock + (PREMATURE_PURGE_DELAY if premature else DELETION_DELAY)
            deletion_id = f"del_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO deletions(id, tenant_id, status, requested_at, purge_due, "
                "reported_completed_at) VALUES (?,?,?,?,?,?)",
                (deletion_id, user_id, "completed" if premature else "pending", stamp,
                 _iso(due), stamp if premature else None),
            )
            return {"deletion_id": deletion_id,
                    "status": "completed" if premature else "pending"}

    def forget(self, user_id: str, value: str, now: datetime) -> dict[str, str]:
        """Erase one fact: memories and graph facts holding it go; checkpoints and job rows
        that mention it are redacted; the tenant's cache is dropped and its summary redone."""
        with self._at(now) as clock:
            if not self._is_active(user_id):
                raise UnknownTenant(user_id)
            needle = _norm(value)
            self._dirty(user_id)
            self._db.execute("DELETE FROM memories WHERE tenant_id=? AND instr(norm, ?) > 0",
                             (user_id, needle))
            if "forget-skips-graph" not in self.faults:
                self._db.execute(
                    "DELETE FROM graph_nodes WHERE tenant_id=? AND label='Fact' AND "
                    "instr(norm, ?) > 0", (user_id, needle))
            self._db.execute(
                "UPDATE thread_messages SET content='[olvidado]', norm='[olvidado]' "
                "WHERE tenant_id=? AND instr(norm, ?) > 0", (user_id, needle))
            self._db.execute(
                "UPDATE jobs SET input='[olvidado]', output='[olvidado]', norm='[olvidado]' "
                "WHERE tenant_id=? AND instr(norm, ?) > 0", (user_id, needle))
            self._db.execute("DELETE FROM cache WHERE tenant_id=?", (user_id,))
            self._db.execute("DELETE FROM summaries WHERE tenant_id=?", (user_id,))
            self._summarize(user_id, clock, "session")
            return {"status": "completed"}

    def deletion_status(self, user_id: str, now: datetime) -> dict[str, str | None]:
        with self._at(now):
            row = self._db.execute(
                "SELECT * FROM deletions WHERE tenant_id=? ORDER BY requested_at DESC LIMIT 1",
                (user_id,),
            ).fetchone()
        if row is None:
            raise UnknownTenant(user_id)
        reported = row["reported_completed_at"] or row["completed_at"]
        return {"deletion_id": row["id"], "status": "completed" if reported else "pending",
                "requested_at": row["requested_at"], "completed_at": reported}

    # -- admin reads (for probes) --------------------------------------------------------

    def store_records(self, store: str, now: datetime, tenant_id: str | None = None,
                      needle: str | None = None) -> list[dict[str, object]]:
        """Records of one store, by tenant scope or by normalized needle (all tenants)."""
        with self._at(now):
            return self._select_records(store, tenant_id, needle)

    def search_records(self, store: str, now: datetime,
                       needles: list[str]) -> list[dict[str, object]]:
        """Records holding any of the needles (each record once), in one transaction."""
        found: dict[str, dict[str, object]] = {}
        with self._at(now):
            for needle in dict.fromkeys(needles):
                for record in self._select_records(store, None, needle):
                    found.setdefault(str(record["id"]), record)
        return list(found.values())

    def _select_records(self, store: str, tenant_id: str | None,
                        needle: str | None) -> list[dict[str, object]]:
        if store not in STORES:
            raise UnknownStore(store)
        table = STORE_TABLES[store]
        clauses: list[str] = []
        params: list[str] = []
        if tenant_id is not None:
            clauses.append("tenant_id = ?")
            params.append(tenant_id)
        if needle is not None:
            normalized = _norm(needle)
            narrowed = _match_query(normalized)
            if narrowed is not None:  # candidates from an index, then the exact test
                index, query = narrowed
                clauses.append(f"rowid IN (SELECT rowid FROM {table}_{index} "
                               f"WHERE {table}_{index} MATCH ?)")
                params.append(query)
            clauses.append("instr(norm, ?) > 0")
            params.append(normalized)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._db.execute(f"SELECT * FROM {table}{where}", params).fetchall()  # noqa: S608
        return [self._record(store, row) for row in rows]

    @staticmethod
    def _record(store: str, row: sqlite3.Row) -> dict[str, object]:
        if store == "thread":
            return {"id": str(row["id"]), "tenant_id": row["tenant_id"], "role": row["role"],
                    "content": row["content"], "deleted": bool(row["deleted"]),
                    "created_at": row["created_at"]}
        if store == "memory":
            return {"id": row["id"], "tenant_id": row["tenant_id"], "content": row["text"],
                    "key": row["key"], "updated_at": row["updated_at"]}
        if store == "graph":
            return {"id": row["node_key"], "tenant_id": row["tenant_id"], "label": row["label"],
                    "content": f"{row['predicate']}: {row['value']}",
                    "updated_at": row["updated_at"]}
        if store == "jobs":
            return {"id": row["id"], "tenant_id": row["tenant_id"], "kind": row["kind"],
                    "status": row["status"], "content": f"{row['input']}\n{row['output']}",
                    "created_at": row["created_at"]}
        if store == "summaries":
            return {"id": f"summary:{row['tenant_id']}", "tenant_id": row["tenant_id"],
                    "content": row["content"], "source": row["source"],
                    "updated_at": row["updated_at"]}
        return {"id": f"cache:{row['tenant_id']}:{row['question']}", "tenant_id": row["tenant_id"],
                "content": row["answer"], "cached_at": row["cached_at"],
                "expires_at": row["expires_at"]}

    # -- write path ----------------------------------------------------------------------

    def _thread_append(self, tenant: str, role: str, content: str, stamp: str) -> None:
        self._dirty(tenant)
        self._db.execute(
            "INSERT INTO thread_messages(tenant_id, role, content, norm, created_at) "
            "VALUES (?,?,?,?,?)", (tenant, role, content, _norm(content), stamp))

    def _remember(self, tenant: str, message: str, stamp: str) -> str:
        lang = language.detect_language(message)
        stored = self._store_fact(tenant, message, stamp, graph=True)
        if "cache-stale" not in self.faults:
            self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))
        if not stored:
            return "Entendido." if lang == "es" else "Noted."
        return "Entendido, lo recordaré." if lang == "es" else "Got it, I'll remember that."

    def _store_fact(self, tenant: str, message: str, stamp: str, *, graph: bool) -> bool:
        parsed = language.split_statement(message)
        if parsed is None:
            return False
        key_tokens, value = parsed
        key = " ".join(sorted(key_tokens))
        seq = self._next_seq()
        vector = json.dumps(sorted(language.content_tokens(message)))
        existing = self._db.execute(
            "SELECT id, text FROM memories WHERE tenant_id=? AND key=? ORDER BY seq DESC",
            (tenant, key),
        ).fetchone()
        keep_old = "stale-after-update" in self.faults
        if existing is not None and existing["text"] == message:
            pass  # nothing new (e.g. the nightly rebuild replaying a statement)
        elif existing is not None and not keep_old:  # an update supersedes in place
            self._db.execute(
                "UPDATE memories SET text=?, value=?, norm=?, vector=?, updated_at=?, seq=? "
                "WHERE id=?",
                (message, value, _norm(message), vector, stamp, seq, existing["id"]),
            )
        else:
            duplicate = self._db.execute(
                "SELECT 1 FROM memories WHERE tenant_id=? AND text=?", (tenant, message)
            ).fetchone()
            if duplicate is None:
                self._db.execute(
                    "INSERT INTO memories(id, tenant_id, key, text, value, norm, vector, "
                    "created_at, updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (f"mem_{uuid.uuid4().hex[:16]}", tenant, key, message, value,
                     _norm(message), vector, stamp, stamp, seq),
                )
        if graph:
            self._graph_fact(tenant, key, value, message, stamp, seq, keep_old)
        return True

    def _graph_fact(self, tenant: str, key: str, value: str, message: str, stamp: str,
                    seq: int, keep_old: bool) -> None:
        tenant_node = f"tenant:{tenant}"
        fact_node = f"tenant:{tenant}:fact:{key.replace(' ', '_')}"
        conflict = "NOTHING" if keep_old else (
            "UPDATE SET value=excluded.value, evidence=excluded.evidence, norm=excluded.norm, "
            "updated_at=excluded.updated_at, seq=excluded.seq")
        self._db.execute(
            "INSERT INTO graph_nodes(node_key, tenant_id, label, predicate, value, evidence, "
            f"norm, updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(node_key) DO "
            f"{conflict}",
            (fact_node, tenant, "Fact", key, value, message, _norm(f"{key}: {value}"), stamp,
             seq),
        )
        self._db.execute(
            "INSERT OR IGNORE INTO graph_nodes(node_key, tenant_id, label, predicate, value, "
            "evidence, norm, updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?)",
            (tenant_node, tenant, "Tenant", "tenant", tenant, "", tenant, stamp, seq),
        )
        self._db.execute(
            "INSERT OR IGNORE INTO graph_edges(src, dst, rel, tenant_id) VALUES (?,?,?,?)",
            (tenant_node, fact_node, "STATED", tenant),
        )

    # -- answer path: cache, then graph, then memory, then thread ------------------------

    def _answer(self, tenant: str, question: str, now: datetime) -> Answer:
        started = time.perf_counter()
        normalized_question = _norm(question)
        cached = self._db.execute(
            "SELECT answer, context FROM cache WHERE tenant_id=? AND question=?",
            (tenant, normalized_question),
        ).fetchone()
        if cached is not None:
            return Answer(cached["answer"], json.loads(cached["context"]), "cache", {
                "retrieval": round((time.perf_counter() - started) * 1000, 3),
                "assembly": 0.0})
        answer, retrieved = self._compose(tenant, question)
        self._db.execute(
            "INSERT INTO cache(tenant_id, question, answer, context, norm, cached_at, "
            "expires_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT(tenant_id, question) DO UPDATE SET "
            "answer=excluded.answer, context=excluded.context, norm=excluded.norm, "
            "cached_at=excluded.cached_at, expires_at=excluded.expires_at",
            (tenant, normalized_question, answer.reply, json.dumps(answer.context),
             _norm(answer.reply), _iso(now), _iso(now + CACHE_TTL)),
        )
        finished = time.perf_counter()
        return replace(answer, timings={
            "retrieval": round((retrieved - started) * 1000, 3),
            "assembly": round((finished - retrieved) * 1000, 3)})

    def _compose(self, tenant: str, question: str) -> tuple[Answer, float]:
        """The answer, and when retrieval ended (perf_counter) for the stage timings."""
        lang = language.detect_language(question)
        wanted = language.content_tokens(question)
        mode = self.retrieval
        context = self._retrieve(tenant, wanted) if mode in ("combined", "vector") else []
        evidence = self._from_graph(tenant, wanted) if mode in ("combined", "graph") else None
        if evidence is None and context:
            evidence = Evidence("memory", context[0])
        if evidence is None and mode in ("combined", "thread"):
            evidence = self._from_thread(tenant, wanted)
        retrieved = time.perf_counter()
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
        return Answer(reply, context, evidence.layer if evidence else None), retrieved

    def _ranked(self, rows: list[sqlite3.Row], wanted: frozenset[str],
                tokens_of: str) -> list[sqlite3.Row]:
        scored = []
        for row in rows:
            raw = row[tokens_of]
            tokens = frozenset(json.loads(raw)) if tokens_of == "vector" else frozenset(
                str(raw).split())
            score = language.overlap(wanted, tokens)
            if score > 0:
                scored.append(((score, row["seq"]), row))
        scored.sort(key=lambda item: item[0], reverse=True)
        return [row for _, row in scored]

    def _retrieve(self, tenant: str, wanted: frozenset[str]) -> list[str]:
        """Top-k memories for the question: the retrieval context. Scoped to the tenant;
        the topk-fallback-leak fault fills an under-filled top-k from other tenants."""
        own = self._ranked(self._db.execute(
            "SELECT * FROM memories WHERE tenant_id=?", (tenant,)).fetchall(), wanted, "vector")
        chosen = own[:TOP_K]
        if len(chosen) < TOP_K and "topk-fallback-leak" in self.faults:
            foreign = self._ranked(self._db.execute(
                "SELECT * FROM memories WHERE tenant_id != ? ORDER BY seq DESC LIMIT 500",
                (tenant,)).fetchall(), wanted, "vector")
            chosen += foreign[: TOP_K - len(chosen)]
        return [row["text"] for row in chosen]

    def _from_graph(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute(
            "SELECT * FROM graph_nodes WHERE tenant_id=? AND label='Fact'", (tenant,)
        ).fetchall()
        ranked = self._ranked(rows, wanted, "predicate")
        return Evidence("graph", ranked[0]["evidence"]) if ranked else None

    def _from_thread(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute(
            "SELECT * FROM thread_messages WHERE tenant_id=? AND role='user' AND deleted=0 "
            "ORDER BY id DESC", (tenant,),
        ).fetchall()
        for row in rows:
            if language.is_question(row["content"]):
                continue
            if wanted & language.content_tokens(row["content"]):
                return Evidence("thread", row["content"])
        return None

    def _foreign_values(self, tenant: str, wanted: frozenset[str]) -> list[str]:
        """The cross-tenant-leak fault: the graph lookup without its tenant predicate."""
        rows = self._db.execute(
            "SELECT * FROM graph_nodes WHERE tenant_id != ? AND label='Fact' "
            "ORDER BY seq DESC LIMIT 200",
            (tenant,),
        ).fetchall()
        ranked = self._ranked(rows, wanted, "predicate")
        if not ranked:
            return []
        best = language.overlap(wanted, frozenset(ranked[0]["predicate"].split()))
        return [r["value"] for r in ranked
                if language.overlap(wanted, frozenset(r["predicate"].split())) == best][:3]
