"""The reference target's asynchronous ingestion: a statement is acknowledged at once and
queued; the ingestion worker writes it into memory and the graph `ingest_delay` later on
the run's clock (as background work, jobs.py; at most INGEST_BATCH per request, as a
worker of finite throughput). Reads wait for what they can see (a read barrier): a
question applies its tenant's queued statements (the whole run's when a fault lets answers
cross tenants), a store read those of the tenant it reads or holding the needle it looks
for. So what a run reads does not depend on how fast its requests follow each other, and
no one request pays for a whole run's writes. Only erasures can race the queue.

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
from memlife.bundled.reference.schema import GLOBAL_TENANT, iso, norm, parse

# Queued statements one request's background work applies at most: the rest wait for the
# next request, or for a read that needs them (a worker's throughput, not a whole run's
# backlog in one request).
INGEST_BATCH = 200
# Faults whose answers read other tenants' memories: a question then waits for the whole
# run's queue, as the others' statements are what it may serve.
CROSS_TENANT = frozenset(
    {
        Fault.CROSS_TENANT_LEAK,
        Fault.TOPK_FALLBACK_LEAK,
        Fault.NAMESPACE_PREFIX_MATCH,
        Fault.IDENTITY_FROM_PROMPT,
        Fault.GLOBAL_PROMOTION,
        Fault.REINDEX_DROPS_TENANT,
        Fault.REWORDED_LEAK,
        Fault.POST_FILTER_CROWDING,
    }
)
# Held behind a purge that has not run yet (the ingest-after-delete fault's statements).
_NOT_HELD = "tenant_id NOT IN (SELECT tenant_id FROM deletions WHERE completed_at IS NULL)"


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
            "INSERT INTO ingest_queue(tenant_id, message, norm, due, run) VALUES (?,?,?,?,?)",
            (tenant, message, norm(message), iso(clock + self.ingest_delay), self._run),
        )

    def _ingest(self, tenant: str, message: str, stamp: str) -> None:
        self._store_fact(tenant, message, stamp, graph=True)
        if (
            Fault.GLOBAL_PROMOTION in self.faults
            and language.addressed_to_everyone(message) is not None
        ):
            self._store_fact(GLOBAL_TENANT, message, stamp, graph=False)
        if Fault.CACHE_STALE not in self.faults:
            self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))

    def _due_ingestions(self, run: str, now: datetime) -> list[tuple[datetime, int]]:
        """The first INGEST_BATCH queued statements of `run` due by `now`: (due, id)."""
        return [
            (parse(row["due"]), row["id"])
            for row in self._db.execute(
                "SELECT id, due FROM ingest_queue WHERE run=? AND due <= ? ORDER BY due, id "
                "LIMIT ?",
                (run, iso(now), INGEST_BATCH),
            )
        ]

    def _apply_queued(self, queue_id: int, when: datetime) -> None:
        row = self._db.execute(
            "SELECT tenant_id, message FROM ingest_queue WHERE id=?", (queue_id,)
        ).fetchone()
        if row is None:
            return
        self._db.execute("DELETE FROM ingest_queue WHERE id=?", (queue_id,))
        self._ingest(row["tenant_id"], row["message"], iso(when))

    def _flush(
        self, now: datetime, *, tenant: str | None = None, needle: str | None = None
    ) -> None:
        """The read barrier: apply the queued statements a read can see — the tenant's, or
        those holding the needle, or (a question under a cross-tenant fault) the whole
        run's — except those held behind a purge that has not run yet."""
        if tenant is not None and self.faults & CROSS_TENANT:
            tenant = None
        if tenant is not None:
            where, params = "tenant_id=?", [tenant]
        elif needle is not None:
            where, params = "run=? AND instr(norm, ?) > 0", [self._run, norm(needle)]
        else:
            where, params = "run=?", [self._run]
        for row in self._db.execute(
            f"SELECT id FROM ingest_queue WHERE {where} AND {_NOT_HELD} "  # noqa: S608
            "ORDER BY id",
            params,
        ).fetchall():
            self._apply_queued(row["id"], now)

    def _drain(self, tenant: str, now: datetime) -> None:
        """Apply every queued statement of `tenant` now, in the order they were said."""
        for row in self._db.execute(
            "SELECT id FROM ingest_queue WHERE tenant_id=? ORDER BY id", (tenant,)
        ).fetchall():
            self._apply_queued(row["id"], now)

    def _before_forget(self, tenant: str, now: datetime) -> None:
        if Fault.INGEST_AFTER_DELETE not in self.faults:
            self._drain(tenant, now)

    def _before_deletion(self, tenant: str, purge_due: datetime) -> None:
        if Fault.INGEST_AFTER_DELETE in self.faults:  # the worker waits out the purge
            self._db.execute(
                "UPDATE ingest_queue SET due=? WHERE tenant_id=?",
                (iso(purge_due + max(self.ingest_delay, timedelta(seconds=1))), tenant),
            )
        else:
            self._db.execute("DELETE FROM ingest_queue WHERE tenant_id=?", (tenant,))
