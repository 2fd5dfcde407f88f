"""The reference target's runtime: the reference runtime's stores (docs/design.md),
persisted in SQLite, with time.

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

Answers use the answer precedence: graph, then memory, then thread. Time is the caller's
`X-Memlife-Now` (or the wall clock): background work — session summaries, the nightly
job at 02:00 UTC, the asynchronous deletion worker, cache expiry — runs lazily, in time
order, whenever a request brings the clock past its due time. Each run (`X-Memlife-Run`)
has a clock of its own, and the background work a request causes is due on its run's
clock: runs that share one long-lived target, one after another or at once, each skip and
compress time without moving anyone else's (docs/simulated-targets.md). Deterministic: no
LLM, no randomness beyond opaque ids.

Its parts: schema.py (tables and indexes), jobs.py (background work), retrieval.py (the
answer path), faults.py (what it can be told to get wrong).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import RETRIEVAL_MODES, Fault, parse_faults
from memlife.bundled.reference.ingestion import Ingestion
from memlife.bundled.reference.jobs import BackgroundJobs
from memlife.bundled.reference.maintenance import Maintenance
from memlife.bundled.reference.retrieval import Answer, Retrieval
from memlife.bundled.reference.schema import (
    DELETION_DELAY,
    PREMATURE_PURGE_DELAY,
    STORE_TABLES,
    STORES,
    iso,
    match_query,
    norm,
    open_database,
)
from memlife.bundled.reference.spaces import Spaces, UnknownSpace

_PHONE = re.compile(r"\+\d{8,15}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class UnknownTenant(LookupError):
    pass


class UnknownStore(LookupError):
    pass


class ReferenceRuntime(BackgroundJobs, Ingestion, Maintenance, Spaces, Retrieval):
    """All state of the reference target. Thread-safe through one lock (small and honest).
    `ingest_delay`: how much later on the run's clock a statement lands (ingestion.py);
    zero writes it at once. `refuse`: turn away who a space does not admit with a status,
    as real services do (spaces.py)."""

    def __init__(
        self,
        db_path: str | Path,
        faults: Iterable[str] = (),
        retrieval: str = "combined",
        ingest_delay: timedelta = timedelta(0),
        refuse: bool = False,
    ):
        if retrieval not in RETRIEVAL_MODES:
            raise ValueError(
                f"unknown retrieval {retrieval!r}; one of {', '.join(RETRIEVAL_MODES)}"
            )
        self.faults = parse_faults(faults)
        self.retrieval = retrieval
        self.ingest_delay = ingest_delay
        # Refuse as real services do (403 for a non-member, 410 for a deleted space)
        # rather than answer that there is no access (spaces.py).
        self.refuse = refuse
        self._lock = threading.Lock()
        self._db = open_database(db_path)
        self._run = ""

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
    def _at(self, now: datetime, run: str) -> Iterator[datetime]:
        """Lock, open a transaction, and bring `run`'s background work up to `now` first.
        While the lock is held, `self._run` is the run whose request holds it: the work the
        request causes is due on that run's clock."""
        with self._lock, self._transaction():
            self._run = run
            yield self._advance(now, run)

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

    def _claimed_identity(self, message: str) -> str | None:
        """The identity-from-prompt fault: the tenant a message names (a registered phone
        or alias), whose memory then answers it. Clean, the session's tenant always does."""
        if Fault.IDENTITY_FROM_PROMPT not in self.faults:
            return None
        for phone in _PHONE.findall(message):
            with suppress(UnknownTenant):
                return self._tenant_for_phone(phone)
        for name in _NAME.findall(message):
            row = self._db.execute(
                "SELECT user_id FROM users WHERE namespace=? AND status='active'", (name,)
            ).fetchone()
            if row is not None:
                return str(row["user_id"])
        return None

    # -- public surface ------------------------------------------------------------------

    def register(
        self, phone: str, now: datetime, run: str = "", namespace: str = ""
    ) -> tuple[str, bool]:
        """Return (user_id, created). A phone maps to one active user; `namespace` is the
        name the tenant registered under (the namespace-prefix-match fault looks it up)."""
        with self._at(now, run) as clock:
            row = self._db.execute(
                "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
            ).fetchone()
            if row is not None:
                return row["user_id"], False
            user_id = f"u_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO users(user_id, phone, status, created_at, namespace) "
                "VALUES (?,?,?,?,?)",
                (user_id, phone, "active", iso(clock), namespace),
            )
            return user_id, True

    def converse(
        self, phone: str, message: str, now: datetime, run: str = ""
    ) -> tuple[str, Answer]:
        """One conversation turn through the preview path: (user_id, answer). Nothing is sent."""
        arrived = time.perf_counter()
        with self._at(now, run) as clock:
            queued_ms = (time.perf_counter() - arrived) * 1000
            tenant = self._tenant_for_phone(phone)
            stamp = iso(clock)
            self._thread_append(tenant, "user", message, stamp)
            if language.is_question(message):
                self._flush(clock, tenant=tenant)  # reads wait for queued writes
                answer = self._answer(self._claimed_identity(message) or tenant, message, clock)
            else:
                answer = Answer(self._remember(tenant, message, clock), [], None)
            self._thread_append(tenant, "assistant", answer.reply, stamp)
            self._db.execute(
                "INSERT INTO jobs(id, tenant_id, kind, status, input, output, norm, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (
                    f"job_{uuid.uuid4().hex[:16]}",
                    tenant,
                    "conversation",
                    "completed",
                    message,
                    answer.reply,
                    norm(f"{message}\n{answer.reply}"),
                    stamp,
                ),
            )
            self._db.execute(
                "INSERT INTO activity(tenant_id, last_message_at, run) VALUES (?,?,?) "
                "ON CONFLICT(tenant_id) DO UPDATE SET last_message_at=excluded.last_message_at, "
                "summarized_at=NULL, run=excluded.run",
                (tenant, stamp, run),
            )
            return tenant, replace(answer, timings={"queue": round(queued_ms, 3), **answer.timings})

    def delete_tenant(self, user_id: str, now: datetime, run: str = "") -> dict[str, str]:
        """Request erasure. The user is detached from its phone at once (so the phone can
        register afresh); the purge runs asynchronously, DELETION_DELAY later."""
        with self._at(now, run) as clock:
            row = self._db.execute(
                "SELECT status FROM users WHERE user_id=?", (user_id,)
            ).fetchone()
            if row is None:
                raise UnknownTenant(user_id)
            existing = self._db.execute(
                "SELECT id, status FROM deletions WHERE tenant_id=?", (user_id,)
            ).fetchone()
            if existing is not None:  # idempotent: a retried request is the same request
                return {"deletion_id": existing["id"], "status": existing["status"]}
            stamp = iso(clock)
            self._dirty(user_id)
            self._db.execute(
                "UPDATE users SET status='deleted', phone='', deleted_at=? WHERE user_id=?",
                (stamp, user_id),
            )
            premature = Fault.PREMATURE_DELETION_STATUS in self.faults
            due = clock + (PREMATURE_PURGE_DELAY if premature else DELETION_DELAY)
            self._before_deletion(user_id, due)
            deletion_id = f"del_{uuid.uuid4().hex[:16]}"
            self._db.execute(
                "INSERT INTO deletions(id, tenant_id, status, requested_at, purge_due, "
                "reported_completed_at, run) VALUES (?,?,?,?,?,?,?)",
                (
                    deletion_id,
                    user_id,
                    "completed" if premature else "pending",
                    stamp,
                    iso(due),
                    stamp if premature else None,
                    run,
                ),
            )
            return {"deletion_id": deletion_id, "status": "completed" if premature else "pending"}

    def forget(self, user_id: str, value: str, now: datetime, run: str = "") -> dict[str, str]:
        """Erase one fact: memories and graph facts holding it go; the checkpoints that state
        it or its earlier values (the same key) are tombstoned, so nothing serves or rebuilds
        it; job rows that mention it are redacted; the cache is dropped, the summary redone."""
        with self._at(now, run) as clock:
            if not self._is_active(user_id):
                raise UnknownTenant(user_id)
            self._before_forget(user_id, clock)
            needle = norm(value)
            self._dirty(user_id)
            keys = {
                row["key"]
                for row in self._db.execute(
                    "SELECT key FROM memories WHERE tenant_id=? AND instr(norm, ?) > 0",
                    (user_id, needle),
                )
            }
            self._db.execute(
                "DELETE FROM memories WHERE tenant_id=? AND instr(norm, ?) > 0", (user_id, needle)
            )
            if Fault.FORGET_SKIPS_GRAPH not in self.faults:
                self._db.execute(
                    "DELETE FROM graph_nodes WHERE tenant_id=? AND label='Fact' AND "
                    "instr(norm, ?) > 0",
                    (user_id, needle),
                )
            self._tombstone_checkpoints(user_id, needle, keys)
            self._redact_jobs(user_id, needle, keys)
            self._db.execute("DELETE FROM cache WHERE tenant_id=?", (user_id,))
            self._db.execute("DELETE FROM summaries WHERE tenant_id=?", (user_id,))
            self._summarize(user_id, clock, "session")
            return {"status": "completed"}

    @staticmethod
    def _states(text: str, needle: str, norm_text: str, keys: set[str]) -> bool:
        """Whether a record holds the forgotten value, or states the same fact (an older
        value of a forgotten fact must not be served or kept in its place)."""
        if needle in norm_text:
            return True
        parsed = language.split_statement(text) if keys else None
        return parsed is not None and " ".join(sorted(parsed[0])) in keys

    def _tombstone_checkpoints(self, tenant: str, needle: str, keys: set[str]) -> None:
        doomed = [
            (row["id"],)
            for row in self._db.execute(
                "SELECT id, role, content, norm FROM thread_messages WHERE tenant_id=? AND "
                "deleted=0",
                (tenant,),
            ).fetchall()
            if self._states(
                row["content"] if row["role"] == "user" else "", needle, row["norm"], keys
            )
        ]
        self._db.executemany("UPDATE thread_messages SET deleted=1 WHERE id=?", doomed)

    def _redact_jobs(self, tenant: str, needle: str, keys: set[str]) -> None:
        doomed = [
            (row["id"],)
            for row in self._db.execute(
                "SELECT id, input, norm FROM jobs WHERE tenant_id=? AND status != 'redacted'",
                (tenant,),
            ).fetchall()
            if self._states(row["input"], needle, row["norm"], keys)
        ]
        self._db.executemany(
            "UPDATE jobs SET input='[olvidado]', output='[olvidado]', norm='[olvidado]' WHERE id=?",
            doomed,
        )

    def reindex(self, user_id: str, now: datetime, run: str = "") -> dict[str, object]:
        """Rebuild one tenant's vector memory from its checkpoints (maintenance.py)."""
        with self._at(now, run) as clock:
            if (
                self._db.execute("SELECT 1 FROM users WHERE user_id=?", (user_id,)).fetchone()
                is None
            ):
                raise UnknownTenant(user_id)
            return self._reindex(user_id, clock)

    # -- shared spaces (spaces.py) ----------------------------------------------------------

    def create_space(self, phone: str, name: str, now: datetime, run: str = "") -> dict[str, str]:
        with self._at(now, run) as clock:
            return self._create_space(self._tenant_for_phone(phone), name, clock)

    def change_membership(
        self, space_id: str, phone: str, action: str, now: datetime, run: str = ""
    ) -> dict[str, str]:
        """`join` or `leave` a space (UnknownSpace, UnknownTenant)."""
        with self._at(now, run):
            tenant = self._tenant_for_phone(phone)
            status = "active" if action == "join" else "left"
            if self._space(space_id)["status"] != "active":
                raise UnknownSpace(space_id)
            self._set_member(space_id, tenant, status)
            return {"space_id": space_id, "status": status}

    def delete_space(
        self, space_id: str, phone: str, now: datetime, run: str = ""
    ) -> dict[str, str]:
        """Delete a space, at a member's request (PermissionError for anyone else)."""
        with self._at(now, run):
            if not self._may_write(space_id, self._tenant_for_phone(phone)):
                raise PermissionError(space_id)
            return self._delete_space(space_id)

    def space_say(
        self, space_id: str, phone: str, message: str, now: datetime, run: str = ""
    ) -> tuple[str, Answer]:
        with self._at(now, run) as clock:
            tenant = self._tenant_for_phone(phone)
            return tenant, self._space_turn(space_id, tenant, message, clock)

    def deletion_status(self, user_id: str, now: datetime, run: str = "") -> dict[str, str | None]:
        with self._at(now, run):
            row = self._db.execute(
                "SELECT * FROM deletions WHERE tenant_id=? ORDER BY requested_at DESC LIMIT 1",
                (user_id,),
            ).fetchone()
        if row is None:
            raise UnknownTenant(user_id)
        reported = row["reported_completed_at"] or row["completed_at"]
        return {
            "deletion_id": row["id"],
            "status": "completed" if reported else "pending",
            "requested_at": row["requested_at"],
            "completed_at": reported,
        }

    # -- admin reads (for probes) --------------------------------------------------------

    def store_records(
        self,
        store: str,
        now: datetime,
        tenant_id: str | None = None,
        needle: str | None = None,
        run: str = "",
    ) -> list[dict[str, object]]:
        """Records of one store, by tenant scope or by normalized needle (all tenants)."""
        with self._at(now, run) as clock:
            self._flush(clock, tenant=tenant_id, needle=needle)
            return self._select_records(store, tenant_id, needle)

    def search_records(
        self, store: str, now: datetime, needles: list[str], run: str = ""
    ) -> list[dict[str, object]]:
        """Records holding any of the needles (each record once), in one transaction."""
        found: dict[str, dict[str, object]] = {}
        with self._at(now, run) as clock:
            for needle in dict.fromkeys(needles):
                self._flush(clock, needle=needle)
                for record in self._select_records(store, None, needle):
                    found.setdefault(str(record["id"]), record)
        return list(found.values())

    def _select_records(
        self, store: str, tenant_id: str | None, needle: str | None
    ) -> list[dict[str, object]]:
        if store not in STORES:
            raise UnknownStore(store)
        table = STORE_TABLES[store]
        clauses: list[str] = []
        params: list[str] = []
        if tenant_id is not None:
            clauses.append("tenant_id = ?")
            params.append(tenant_id)
        if needle is not None:
            normalized = norm(needle)
            narrowed = match_query(normalized)
            if narrowed is not None:  # candidates from an index, then the exact test
                index, query = narrowed
                clauses.append(
                    f"rowid IN (SELECT rowid FROM {table}_{index} WHERE {table}_{index} MATCH ?)"
                )
                params.append(query)
            clauses.append("instr(norm, ?) > 0")
            params.append(normalized)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._db.execute(f"SELECT * FROM {table}{where}", params).fetchall()  # noqa: S608
        return [self._record(store, row) for row in rows]

    @staticmethod
    def _record(store: str, row: sqlite3.Row) -> dict[str, object]:
        if store == "thread":
            return {
                "id": str(row["id"]),
                "tenant_id": row["tenant_id"],
                "role": row["role"],
                "content": row["content"],
                "deleted": bool(row["deleted"]),
                "created_at": row["created_at"],
            }
        if store == "memory":
            return {
                "id": row["id"],
                "tenant_id": row["tenant_id"],
                "content": row["text"],
                "key": row["key"],
                "updated_at": row["updated_at"],
            }
        if store == "graph":
            return {
                "id": row["node_key"],
                "tenant_id": row["tenant_id"],
                "label": row["label"],
                "content": f"{row['predicate']}: {row['value']}",
                "updated_at": row["updated_at"],
            }
        if store == "jobs":
            return {
                "id": row["id"],
                "tenant_id": row["tenant_id"],
                "kind": row["kind"],
                "status": row["status"],
                "content": f"{row['input']}\n{row['output']}",
                "created_at": row["created_at"],
            }
        if store == "summaries":
            return {
                "id": f"summary:{row['tenant_id']}",
                "tenant_id": row["tenant_id"],
                "content": row["content"],
                "source": row["source"],
                "updated_at": row["updated_at"],
            }
        return {
            "id": f"cache:{row['tenant_id']}:{row['question']}",
            "tenant_id": row["tenant_id"],
            "content": row["answer"],
            "cached_at": row["cached_at"],
            "expires_at": row["expires_at"],
        }

    # -- write path ----------------------------------------------------------------------

    def _thread_append(self, tenant: str, role: str, content: str, stamp: str) -> None:
        self._dirty(tenant)
        self._db.execute(
            "INSERT INTO thread_messages(tenant_id, role, content, norm, created_at) "
            "VALUES (?,?,?,?,?)",
            (tenant, role, content, norm(content), stamp),
        )

    def _remember(self, tenant: str, message: str, clock: datetime) -> str:
        lang = language.detect_language(message)
        stored = language.split_statement(message) is not None
        self._enqueue(tenant, message, clock)
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
        keep_old = Fault.STALE_AFTER_UPDATE in self.faults
        if existing is not None and existing["text"] == message:
            pass  # nothing new (e.g. the nightly rebuild replaying a statement)
        elif existing is not None and not keep_old:  # an update supersedes in place
            self._db.execute(
                "UPDATE memories SET text=?, value=?, norm=?, vector=?, updated_at=?, seq=? "
                "WHERE id=?",
                (message, value, norm(message), vector, stamp, seq, existing["id"]),
            )
        else:
            duplicate = self._db.execute(
                "SELECT 1 FROM memories WHERE tenant_id=? AND text=?", (tenant, message)
            ).fetchone()
            if duplicate is None:
                self._db.execute(
                    "INSERT INTO memories(id, tenant_id, key, text, value, norm, vector, "
                    "created_at, updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        f"mem_{uuid.uuid4().hex[:16]}",
                        tenant,
                        key,
                        message,
                        value,
                        norm(message),
                        vector,
                        stamp,
                        stamp,
                        seq,
                    ),
                )
        if graph:
            self._graph_fact(tenant, key, value, message, stamp, seq, keep_old)
        return True

    def _graph_fact(
        self, tenant: str, key: str, value: str, message: str, stamp: str, seq: int, keep_old: bool
    ) -> None:
        tenant_node = f"tenant:{tenant}"
        fact_node = f"tenant:{tenant}:fact:{key.replace(' ', '_')}"
        conflict = (
            "NOTHING"
            if keep_old
            else (
                "UPDATE SET value=excluded.value, evidence=excluded.evidence, norm=excluded.norm, "
                "updated_at=excluded.updated_at, seq=excluded.seq"
            )
        )
        self._db.execute(
            "INSERT INTO graph_nodes(node_key, tenant_id, label, predicate, value, evidence, "
            f"norm, updated_at, seq) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(node_key) DO "
            f"{conflict}",
            (fact_node, tenant, "Fact", key, value, message, norm(f"{key}: {value}"), stamp, seq),
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
