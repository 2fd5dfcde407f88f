"""The reference target's background work, run lazily in time order whenever a request
brings the scenario clock past its due time: the asynchronous deletion worker's purges,
session summaries after an hour idle, and the nightly job at 02:00 UTC that rebuilds
memory from checkpoints.

Every run has a clock of its own (a row of `clock`), and every piece of background work
belongs to the run whose request caused it (a `run` column): a request advances its own
run's clock and runs that run's work only. One run skipping three days ahead never makes
another run's deletion or summary happen early, nor late."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import Fault
from memlife.bundled.reference.schema import (
    NIGHTLY_HOUR,
    SESSION_IDLE,
    iso,
    norm,
    parse,
    run_clock_name,
)


class BackgroundJobs:
    """Part of ReferenceRuntime (store.py): what runs when the clock moves on."""

    _db: sqlite3.Connection
    faults: frozenset[Fault]
    _run: str  # the run whose request holds the lock (store.py: ReferenceRuntime._at)

    def _is_active(self, tenant: str) -> bool:
        row = self._db.execute("SELECT status FROM users WHERE user_id=?", (tenant,)).fetchone()
        return row is not None and row["status"] == "active"

    def _store_fact(self, tenant: str, message: str, stamp: str, *, graph: bool) -> bool:
        raise NotImplementedError  # the write path (store.py)

    # ingestion.py (annotations only: a stub here would shadow it in ReferenceRuntime's MRO)
    _due_ingestions: Callable[[str, datetime], list[tuple[datetime, int]]]
    _apply_queued: Callable[[int, datetime], None]
    _purge_member_spaces: Callable[[str], None]  # spaces.py

    def _advance(self, now: datetime, run: str) -> datetime:
        """Run every background job of `run` due by `now`, in time order. A run's clock
        never goes back; each run's is its own (the requests without a run share one)."""
        clock = run_clock_name(run)
        row = self._db.execute("SELECT value FROM clock WHERE name=?", (clock,)).fetchone()
        last = parse(row["value"]) if row else None
        if last is not None and now <= last:
            return last
        start = last or now
        events: list[tuple[datetime, int, str, str]] = [
            (due, -1, "ingest", str(queue_id)) for due, queue_id in self._due_ingestions(run, now)
        ]
        for deletion in self._db.execute(
            "SELECT id, purge_due FROM deletions WHERE run=? AND completed_at IS NULL "
            "AND purge_due <= ?",
            (run, iso(now)),
        ).fetchall():
            due = parse(deletion["purge_due"])
            if due <= now:
                events.append((due, 0, "purge", deletion["id"]))
        for item in self._db.execute(
            "SELECT tenant_id, last_message_at FROM activity "
            "WHERE run=? AND summarized_at IS NULL AND last_message_at <= ?",
            (run, iso(now - SESSION_IDLE)),
        ).fetchall():
            due = parse(item["last_message_at"]) + SESSION_IDLE
            if due <= now:
                events.append((due, 1, "summary", item["tenant_id"]))
        night = start.replace(hour=NIGHTLY_HOUR, minute=0, second=0, microsecond=0)
        if night <= start:
            night += timedelta(days=1)
        while last is not None and night <= now:
            events.append((night, 2, "nightly", ""))
            night += timedelta(days=1)
        for when, _, kind, subject in sorted(events):
            if kind == "ingest":
                self._apply_queued(int(subject), when)
            elif kind == "purge":
                self._purge(subject, when)
            elif kind == "summary":
                self._summarize(subject, when, "session")
                self._db.execute(
                    "UPDATE activity SET summarized_at=? WHERE tenant_id=?", (iso(when), subject)
                )
            else:
                self._nightly(when, run)
        self._db.execute("DELETE FROM cache WHERE run=? AND expires_at <= ?", (run, iso(now)))
        self._db.execute(
            "INSERT INTO clock(name, value) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET value=excluded.value",
            (clock, iso(now)),
        )
        return now

    def _summarize(self, tenant: str, when: datetime, source: str) -> None:
        if not self._is_active(tenant):
            return
        texts = [
            row["text"]
            for row in self._db.execute(
                "SELECT text FROM memories WHERE tenant_id=? ORDER BY seq", (tenant,)
            )
        ]
        if not texts:
            return
        content = " ".join(texts)
        self._db.execute(
            "INSERT INTO summaries(tenant_id, content, norm, updated_at, source) VALUES "
            "(?,?,?,?,?) ON CONFLICT(tenant_id) DO UPDATE SET content=excluded.content, "
            "norm=excluded.norm, updated_at=excluded.updated_at, source=excluded.source",
            (tenant, content, norm(content), iso(when), source),
        )

    def _nightly(self, when: datetime, run: str) -> None:
        """Rebuild memory from checkpoints (replaying statements in order), then summarize:
        for the tenants whose last change came from `run`, on that run's night.

        Clean: only live checkpoints of active tenants. The nightly-resurrection fault reads
        every checkpoint, tombstoned ones included, and so re-creates deleted memories.
        """
        include_deleted = Fault.NIGHTLY_RESURRECTION in self.faults
        query = (
            "SELECT tenant_id, content FROM thread_messages WHERE role='user' "
            + ("" if include_deleted else "AND deleted=0 ")
            + "AND tenant_id IN (SELECT tenant_id FROM nightly_dirty WHERE run=?) "
            "ORDER BY id"
        )
        by_tenant: dict[str, list[str]] = {}
        for row in self._db.execute(query, (run,)).fetchall():
            by_tenant.setdefault(row["tenant_id"], []).append(row["content"])
        stamp = iso(when)
        for tenant, messages in by_tenant.items():
            if not include_deleted and not self._is_active(tenant):
                continue
            for message in messages:
                if not language.is_question(message):
                    self._store_fact(tenant, message, stamp, graph=False)
        for row in self._db.execute(
            "SELECT user_id FROM users WHERE status='active' "
            "AND user_id IN (SELECT tenant_id FROM nightly_dirty WHERE run=?)",
            (run,),
        ).fetchall():
            self._summarize(row["user_id"], when, "nightly")
        self._db.execute("DELETE FROM nightly_dirty WHERE run=?", (run,))

    def _dirty(self, tenant: str) -> None:
        """The tenant changed: the nightly rebuild of the run that changed it redoes it."""
        self._db.execute(
            "INSERT INTO nightly_dirty(tenant_id, run) VALUES (?,?) "
            "ON CONFLICT(tenant_id) DO UPDATE SET run=excluded.run",
            (tenant, self._run),
        )

    def _purge(self, deletion_id: str, when: datetime) -> None:
        row = self._db.execute(
            "SELECT tenant_id FROM deletions WHERE id=?", (deletion_id,)
        ).fetchone()
        tenant = row["tenant_id"]
        stamp = iso(when)
        keys = [
            r["key"]
            for r in self._db.execute("SELECT key FROM memories WHERE tenant_id=?", (tenant,))
        ]
        self._dirty(tenant)
        if Fault.DELETE_OVERREACH in self.faults and keys:  # other tenants lose memories too
            marks = ",".join("?" * len(keys))
            self._db.execute(
                "INSERT INTO nightly_dirty(tenant_id, run) SELECT DISTINCT tenant_id, ? "
                f"FROM memories WHERE key IN ({marks}) "  # noqa: S608
                "ON CONFLICT(tenant_id) DO UPDATE SET run=excluded.run",
                [self._run, *keys],
            )
        if Fault.PARTIAL_DELETE in self.faults:
            self._db.execute(
                "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE tenant_id=? "
                "ORDER BY seq LIMIT 1)",
                (tenant,),
            )
        else:
            self._db.execute("DELETE FROM memories WHERE tenant_id=?", (tenant,))
        if Fault.GRAPH_UNSCOPED_DELETE not in self.faults:
            self._db.execute("DELETE FROM graph_nodes WHERE tenant_id=?", (tenant,))
            self._db.execute("DELETE FROM graph_edges WHERE tenant_id=?", (tenant,))
        if Fault.DELETE_OVERREACH in self.faults and keys:
            marks = ",".join("?" * len(keys))
            self._db.execute(f"DELETE FROM memories WHERE key IN ({marks})", keys)  # noqa: S608
            self._db.execute(
                f"DELETE FROM graph_nodes WHERE label='Fact' AND predicate IN ({marks})",  # noqa: S608
                keys,
            )
        if Fault.DELETION_SKIPS_SUMMARIES not in self.faults:
            self._db.execute("DELETE FROM summaries WHERE tenant_id=?", (tenant,))
        self._purge_member_spaces(tenant)
        self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))
        self._db.execute("DELETE FROM activity WHERE tenant_id=?", (tenant,))
        self._db.execute("UPDATE thread_messages SET deleted=1 WHERE tenant_id=?", (tenant,))
        self._db.execute(
            "UPDATE jobs SET input='[redacted]', output='[redacted]', norm='[redacted]', "
            "status='redacted' WHERE tenant_id=?",
            (tenant,),
        )
        self._db.execute(
            "UPDATE deletions SET status='completed', completed_at=?, "
            "reported_completed_at=COALESCE(reported_completed_at, ?) WHERE id=?",
            (stamp, stamp, deletion_id),
        )
