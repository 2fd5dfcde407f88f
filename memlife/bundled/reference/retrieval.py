"""How the reference target answers: the cache first, then the graph, then memory, then
the thread (the answer precedence), or one layer alone (--retrieval). Faults reach here
too: other tenants' values in answers, a top-k filled from other tenants."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import Fault
from memlife.bundled.reference.rewording import reword
from memlife.bundled.reference.schema import CACHE_TTL, GLOBAL_TENANT, NO_TENANT, iso, norm

ABSTAIN_ES = "No tengo esa información."
SHARDS = 4  # the post-filter-crowding fault's shards
ABSTAIN_EN = "I don't have that information."
TOP_K = 3


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


class Retrieval:
    """Part of ReferenceRuntime (store.py): the answer path."""

    _db: sqlite3.Connection
    faults: frozenset[Fault]
    retrieval: str
    _run: str  # the run whose request holds the lock (store.py: ReferenceRuntime._at)

    def _answer(self, tenant: str, question: str, now: datetime) -> Answer:
        started = time.perf_counter()
        normalized_question = norm(question)
        cached = self._db.execute(
            "SELECT answer, context FROM cache WHERE tenant_id=? AND question=?",
            (tenant, normalized_question),
        ).fetchone()
        if cached is not None:
            return Answer(
                cached["answer"],
                json.loads(cached["context"]),
                "cache",
                {"retrieval": round((time.perf_counter() - started) * 1000, 3), "assembly": 0.0},
            )
        answer, retrieved = self._compose(tenant, question)
        self._db.execute(
            "INSERT INTO cache(tenant_id, question, answer, context, norm, cached_at, "
            "expires_at, run) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(tenant_id, question) DO "
            "UPDATE SET answer=excluded.answer, context=excluded.context, norm=excluded.norm, "
            "cached_at=excluded.cached_at, expires_at=excluded.expires_at, run=excluded.run",
            (
                tenant,
                normalized_question,
                answer.reply,
                json.dumps(answer.context),
                norm(answer.reply),
                iso(now),
                iso(now + CACHE_TTL),
                self._run,
            ),
        )
        finished = time.perf_counter()
        return replace(
            answer,
            timings={
                "retrieval": round((retrieved - started) * 1000, 3),
                "assembly": round((finished - retrieved) * 1000, 3),
            },
        )

    def _compose(self, tenant: str, question: str) -> tuple[Answer, float]:
        """The answer, and when retrieval ended (perf_counter) for the stage timings."""
        lang = language.detect_language(question)
        wanted = language.content_tokens(question)
        mode = self.retrieval
        context = self._retrieve(tenant, wanted) if mode in ("combined", "vector") else []
        evidence = self._from_graph(tenant, wanted) if mode in ("combined", "graph") else None
        if Fault.POST_FILTER_CROWDING in self.faults and self._crowded_out(tenant, wanted):
            context, evidence, mode = [], None, "crowded"  # nothing of its own survives
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
        if self.faults & {Fault.CROSS_TENANT_LEAK, Fault.REWORDED_LEAK}:
            foreign = self._foreign_values(tenant, wanted)
            if foreign:
                joiner = "También tengo anotado" if lang == "es" else "I also have noted"
                reply += f" {joiner}: {'; '.join(foreign)}."
        if Fault.REWORDED_LEAK in self.faults:
            reply = reword(reply)
        return Answer(reply, context, evidence.layer if evidence else None), retrieved

    def _crowded_out(self, tenant: str, wanted: frozenset[str]) -> bool:
        """The post-filter-crowding fault: the shard's facts ranked together, the best kept,
        then the tenant filter: true when a shard neighbour's fact ranked first."""
        rows = [
            row
            for row in self._db.execute("SELECT * FROM graph_nodes WHERE label='Fact'").fetchall()
            if _shard(row["tenant_id"]) == _shard(tenant)
        ]
        ranked = self._ranked(rows, wanted, "predicate")
        return (
            bool(ranked)
            and ranked[0]["tenant_id"] != tenant
            and any(row["tenant_id"] == tenant for row in ranked)
        )

    def _ranked(
        self,
        rows: list[sqlite3.Row],
        wanted: frozenset[str],
        tokens_of: str,
        first: Collection[str] = (),
    ) -> list[sqlite3.Row]:
        """By overlap with the question, then rows of the tenants `first`, then newest."""
        scored = []
        for row in rows:
            raw = row[tokens_of]
            tokens = (
                frozenset(json.loads(raw)) if tokens_of == "vector" else frozenset(str(raw).split())
            )
            score = language.overlap(wanted, tokens)
            if score > 0:
                scored.append(((score, row["tenant_id"] in first, row["seq"]), row))
        scored.sort(key=lambda item: item[0], reverse=True)
        return [row for _, row in scored]

    def _scope(self, tenant: str) -> list[str]:
        """The tenants a lookup for `tenant` reads: itself. The namespace-prefix-match fault
        matches its namespace as a prefix, as a namespaced search that forgets the
        separator does (acme also reads acme-corp)."""
        extra = []
        if Fault.REINDEX_DROPS_TENANT in self.faults:
            # Records that lost their tenant key pass a filter that only excludes others'.
            extra.append(NO_TENANT)
        if Fault.GLOBAL_PROMOTION in self.faults:
            extra.append(GLOBAL_TENANT)  # the global memory, served to every tenant
        if Fault.NAMESPACE_PREFIX_MATCH not in self.faults:
            return [tenant, *extra]
        row = self._db.execute("SELECT namespace FROM users WHERE user_id=?", (tenant,)).fetchone()
        if row is None or not row["namespace"]:
            return [tenant, *extra]
        prefixed = self._db.execute(
            "SELECT user_id FROM users WHERE substr(namespace, 1, ?) = ?",
            (len(row["namespace"]), row["namespace"]),
        ).fetchall()
        return [tenant, *(r["user_id"] for r in prefixed if r["user_id"] != tenant), *extra]

    def _prefixed(self, tenant: str, scope: list[str]) -> list[str]:
        """Under namespace-prefix-match, the tenants whose namespace extends the tenant's:
        the search lists the longer, more specific namespace first, so on a tie their
        memories win, whichever was written last."""
        if Fault.NAMESPACE_PREFIX_MATCH not in self.faults:
            return []
        return [t for t in scope if t not in (tenant, NO_TENANT, GLOBAL_TENANT)]

    def _retrieve(self, tenant: str, wanted: frozenset[str]) -> list[str]:
        """Top-k memories for the question: the retrieval context. Scoped to the tenant;
        the topk-fallback-leak fault fills an under-filled top-k from other tenants."""
        scope = self._scope(tenant)
        marks = ",".join("?" * len(scope))
        own = self._ranked(
            self._db.execute(
                f"SELECT * FROM memories WHERE tenant_id IN ({marks})",  # noqa: S608
                scope,
            ).fetchall(),
            wanted,
            "vector",
            self._prefixed(tenant, scope),
        )
        chosen = own[:TOP_K]
        if len(chosen) < TOP_K and Fault.TOPK_FALLBACK_LEAK in self.faults:
            foreign = self._ranked(
                self._db.execute(
                    "SELECT * FROM memories WHERE tenant_id != ? ORDER BY seq DESC LIMIT 500",
                    (tenant,),
                ).fetchall(),
                wanted,
                "vector",
            )
            chosen += foreign[: TOP_K - len(chosen)]
        return [row["text"] for row in chosen]

    def _from_graph(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        scope = self._scope(tenant)
        marks = ",".join("?" * len(scope))
        rows = self._db.execute(
            f"SELECT * FROM graph_nodes WHERE tenant_id IN ({marks}) AND label='Fact'",  # noqa: S608
            scope,
        ).fetchall()
        ranked = self._ranked(rows, wanted, "predicate", self._prefixed(tenant, scope))
        return Evidence("graph", ranked[0]["evidence"]) if ranked else None

    def _from_thread(self, tenant: str, wanted: frozenset[str]) -> Evidence | None:
        rows = self._db.execute(
            "SELECT * FROM thread_messages WHERE tenant_id=? AND role='user' AND deleted=0 "
            "ORDER BY id DESC",
            (tenant,),
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
        return [
            r["value"]
            for r in ranked
            if language.overlap(wanted, frozenset(r["predicate"].split())) == best
        ][:3]


def _shard(tenant: str) -> int:
    return int(hashlib.sha256(tenant.encode()).hexdigest()[:8], 16) % SHARDS
