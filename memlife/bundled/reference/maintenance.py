"""The reference target's on-demand maintenance: a reindex that rebuilds one tenant's
vector memory from its thread checkpoints (`POST /admin/reindex {tenant_id}`), as a
re-embedding or re-processing job does.

Clean, it is idempotent: only the live checkpoints of an active tenant are replayed, in
order, so an update still supersedes and a forgotten or deleted fact stays gone. Its
faults: reindex-resurrects replays tombstoned and forgotten checkpoints too, deleted
tenants included (topoteretes/cognee #3526); reindex-drops-tenant writes the rebuilt
records without their tenant key, which retrieval then lets through for every tenant
(MemTensor/MemOS #2231)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import Fault
from memlife.bundled.reference.schema import NO_TENANT, iso


class Maintenance:
    """Part of ReferenceRuntime (store.py)."""

    _db: sqlite3.Connection
    faults: frozenset[Fault]

    def _store_fact(self, tenant: str, message: str, stamp: str, *, graph: bool) -> bool:
        raise NotImplementedError  # the write path (store.py)

    _is_active: Callable[[str], bool]  # jobs.py (an annotation: a stub would shadow it)

    def _reindex(self, tenant: str, clock: datetime) -> dict[str, object]:
        resurrect = Fault.REINDEX_RESURRECTS in self.faults
        if not resurrect and not self._is_active(tenant):
            return {"status": "skipped", "records": 0}  # nothing of a deleted tenant is live
        messages = [
            row["content"]
            for row in self._db.execute(
                "SELECT content FROM thread_messages WHERE tenant_id=? AND role='user' "
                + ("" if resurrect else "AND deleted=0 ")
                + "ORDER BY id",
                (tenant,),
            )
        ]
        owner = NO_TENANT if Fault.REINDEX_DROPS_TENANT in self.faults else tenant
        self._db.execute("DELETE FROM memories WHERE tenant_id=?", (tenant,))
        self._db.execute("DELETE FROM cache WHERE tenant_id=?", (tenant,))
        stamp = iso(clock)
        rebuilt = sum(
            self._store_fact(owner, message, stamp, graph=False)
            for message in messages
            if not language.is_question(message)
        )
        return {"status": "completed", "records": rebuilt}
