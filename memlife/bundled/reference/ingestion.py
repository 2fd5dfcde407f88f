"""The reference target's asynchronous ingestion: a statement is acknowledged at once and
queued; the ingestion worker writes it into memory and the graph `ingest_delay` later on
the run's clock (as background work, jobs.py). Reads wait for it: a question or a store
read first applies the run's queued statements (a read barrier), so what a run reads does
not depend on how fast its requests follow each other. Only erasures can race the queue.

Erasure must not race the queue. Clean: a tenant deletion discards the tenant's queued
statements, and a forget applies them first so that it erases what they say. The
ingest-after-delete fault does neither: statements queued before a deletion wait on the
tenant (the purge holds it) and land after the purge; those queued before a forget land
after it (Significant-Gravitas/AutoGPT #12720)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import Fault
from memlife.bundled.reference.schema import GLOBAL_TENANT, iso, parse


class Ingestion:
    """Part of ReferenceRuntime (store.py): the write path's queue."""

    _db: sqlite3.Connection
    faults: frozenset[Fault]
    ingest_delay: timedelta
    _run: str

    def _store_fact(self, tenant: str, message: str, stamp: str, *, graph: bool) -> bool:
        raise NotImplementedError  # the write path (store.py)

    def _enqueue(self, tenant: str, message: str, clock: datetime) -> None:
        """Queue a statement, or write it at once when ingestion is synchronous."""
        if self.ingest_delay <= timedelta(0):
            self._ingest(tenant, message, iso(clock))
            return
        self._db.execute(
            "INSERT INTO ingest_queue(tenant_id, message, due, run) VALUES (?,?,?,?)",
            (tenant, message, iso(clock + self.ingest_delay), self._run))

    def _ingest(self, tenant: str, message: str, stamp: str) -> None:
        self._store_fact(tenant, message, stamp, graph=True)
        if (Fault.GLOBAL_PROMOTION in self.faults
                and language.addressed_to_everyone(message) is not None):
            self._store_fact(GLOBAL_TENANT, message, stamp, graph=False)
        if Fault.CACHE_STALE not in self.faults:
            self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))

    def _due_ingestions(self, run: str, now: datetime) -> list[tuple[datetime, int]]:
        """The queued statements of `run` due by `now`: (due, queue id)."""
        return [(parse(row["due"]), row["id"]) for row in self._db.execute(
            "SELECT id, due FROM ingest_queue WHERE run=? AND due <= ?", (run, iso(now)))]

    def _apply_queued(self, queue_id: int, when: datetime) -> None:
        row = self._db.execute("SELECT tenant_id, message FROM ingest_queue WHERE id=?",
                               (queue_id,)).fetchone()
        if row is None:
            return
        self._db.execute("DELETE FROM ingest_queue WHERE id=?", (queue_id,))
        self._ingest(row["tenant_id"], row["message"], iso(when))

    def _flush(self, run: str, now: datetime) -> None:
        """The read barrier: apply the run's queued statements, except those held behind a
        purge that has not run yet (the ingest-after-delete fault's)."""
        for row in self._db.execute(
                "SELECT id FROM ingest_queue WHERE run=? AND tenant_id NOT IN (SELECT "
                "tenant_id FROM deletions WHERE completed_at IS NULL) ORDER BY id",
                (run,)).fetchall():
            self._apply_queued(row["id"], now)

    def _drain(self, tenant: str, now: datetime) -> None:
        """Apply every queued statement of `tenant` now, in the order they were said."""
        for row in self._db.execute("SELECT id FROM ingest_queue WHERE tenant_id=? ORDER BY id",
                                    (tenant,)).fetchall():
            self._apply_queued(row["id"], now)

    def _before_forget(self, tenant: str, now: datetime) -> None:
        if Fault.INGEST_AFTER_DELETE not in self.faults:
            self._drain(tenant, now)

    def _before_deletion(self, tenant: str, purge_due: datetime) -> None:
        if Fault.INGEST_AFTER_DELETE in self.faults:  # the worker waits out the purge
            self._db.execute("UPDATE ingest_queue SET due=? WHERE tenant_id=?",
                             (iso(purge_due + max(self.ingest_delay, timedelta(seconds=1))),
                              tenant))
        else:
            self._db.execute("DELETE FROM ingest_queue WHERE tenant_id=?", (tenant,))
