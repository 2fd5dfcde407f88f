"""The graphiti target's runtime: a conversation service whose memory is Graphiti
(graphiti-core 0.31.2, getzep/graphiti) on FalkorDB, its LLM and embedder pointed at
memlife's scripted model, everything through Graphiti's public API:

- a tenant is a Graphiti group (its group id is the tenant's user id); Graphiti's FalkorDB
  driver keeps each group in a graph of its own, named after the group id;
- each statement message is one episode (`add_episode`, a message episode "user: …");
- a question is `search` in the tenant's group alone, for the facts that hold now (edges
  Graphiti has not invalidated), and the answer is those facts (a retrieval answer);
- forgetting a fact is `remove_episode` of each of the tenant's episodes holding it;
- deleting a tenant is `clear_data` of its group (Graphiti's group deletion).

`remove_episode` takes no group: it reads its Graphiti's own driver, so each tenant gets a
Graphiti whose FalkorDB driver is on the tenant's graph (they share one connection and the
model's clients). Graphiti is asynchronous; it runs on one event loop in a thread of its own,
and the HTTP app's handlers wait on it. Tenants are the bundled stacks' registry
(memlife/bundled/tenants.py), which holds nothing a tenant said.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from memlife.bundled.reference import language
from memlife.bundled.reference.retrieval import ABSTAIN_EN, ABSTAIN_ES
from memlife.bundled.tenants import Tenants, UnknownTenant

APP_DB = "app.sqlite"
GROUP_PREFIX = "tenant_"  # a tenant's group id, and its FalkorDB graph: tenant_<hex>
SPEAKER = "user"  # the speaker of every message episode ("user: I work at …")
MODEL = "memlife-scripted"
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384  # MiniLM's own size: the scripted model answers it for this model name
CALL_SECONDS = 300  # one Graphiti call (an add_episode makes several model calls)

T = TypeVar("T")


@dataclass(frozen=True)
class Reply:
    text: str
    context: list[str]


def offline_environment() -> None:
    """Before graphiti_core is imported: no telemetry (Graphiti sends PostHog events by
    default), no Hugging Face hub (the scripted model reads MiniLM from its package)."""
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


class GraphitiRuntime:
    def __init__(self, data_dir: str | Path, falkordb_url: str, model_url: str):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.falkordb_url = falkordb_url
        self.model_url = model_url
        offline_environment()
        self._db_lock = threading.Lock()
        self._db = sqlite3.connect(
            str(self.data_dir / APP_DB), check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self.tenants = Tenants(self._db, prefix=GROUP_PREFIX)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="graphiti-loop", daemon=True
        )
        self._thread.start()
        self._graphitis: dict[str, Any] = {}
        # Graphiti asks that a group's episodes be added one at a time, each awaited: one
        # lock per tenant (created on the loop), different tenants in parallel.
        self._locks: dict[str, asyncio.Lock] = {}
        self._run(self._connect())

    # -- the event loop ----------------------------------------------------------------------

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(CALL_SECONDS)

    async def _connect(self) -> None:
        from falkordb.asyncio import FalkorDB
        from graphiti_core.llm_client.config import LLMConfig
        from openai import AsyncOpenAI

        self._falkordb = FalkorDB.from_url(self.falkordb_url)
        # No retries: the scripted model answers at once or says why it cannot (an unknown
        # prompt is a 400 naming the caller), and a retry would only hide that.
        self._openai = AsyncOpenAI(base_url=self.model_url, api_key="scripted", max_retries=0)
        self._llm_config = LLMConfig(
            api_key="scripted",
            base_url=self.model_url,
            model=MODEL,
            small_model=MODEL,
            temperature=0,
        )

    def _graphiti(self, group_id: str) -> Any:
        """The tenant's Graphiti: its FalkorDB driver on the tenant's graph."""
        found = self._graphitis.get(group_id)
        if found is None:
            from graphiti_core import Graphiti
            from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
            from graphiti_core.driver.falkordb_driver import FalkorDriver
            from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
            from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

            found = self._graphitis[group_id] = Graphiti(
                graph_driver=FalkorDriver(falkor_db=self._falkordb, database=group_id),
                # Chat completions with json_schema structured output (the default
                # OpenAIClient would use the Responses API).
                llm_client=OpenAIGenericClient(config=self._llm_config, client=self._openai),
                embedder=OpenAIEmbedder(
                    OpenAIEmbedderConfig(
                        embedding_model=EMBEDDING_MODEL, embedding_dim=EMBEDDING_DIM
                    ),
                    client=self._openai,
                ),
                # Graphiti.search's recipe (hybrid search, reciprocal rank fusion) calls no
                # cross-encoder; Graphiti wants one all the same.
                cross_encoder=OpenAIRerankerClient(config=self._llm_config, client=self._openai),
            )
        return found

    def _lock(self, group_id: str) -> asyncio.Lock:
        return self._locks.setdefault(group_id, asyncio.Lock())

    def close(self) -> None:
        async def shutdown() -> None:
            for graphiti in self._graphitis.values():
                # Each Graphiti's driver waits for its index task; the connection is shared
                # and closed once, below.
                init = getattr(graphiti.driver, "_init_task", None)
                if init is not None and not init.done():
                    await asyncio.wait([init], timeout=10)
            await self._falkordb.aclose()
            await self._openai.close()

        try:
            self._run(shutdown())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
            with self._db_lock:
                self._db.close()

    # -- tenants -----------------------------------------------------------------------------

    def _app(self, work: Callable[[Tenants], T]) -> T:
        with self._db_lock:
            return work(self.tenants)

    def register(self, phone: str) -> tuple[str, bool]:
        user_id, created = self._app(lambda t: t.register(phone))
        if created:
            self._run(self._prepare(user_id))
        return user_id, created

    async def _prepare(self, group_id: str) -> None:
        await self._graphiti(group_id).build_indices_and_constraints()

    # -- a conversation turn -----------------------------------------------------------------

    def converse(self, phone: str, message: str) -> tuple[str, Reply]:
        tenant = self._app(lambda t: t.for_phone(phone))
        if language.is_question(message):
            return tenant, self._run(self._answer(tenant, message))
        self._run(self._remember(tenant, message))
        spanish = language.detect_language(message) == "es"
        return tenant, Reply(
            "Entendido, lo recordaré." if spanish else "Got it, I'll remember that.", []
        )

    async def _remember(self, group_id: str, message: str) -> None:
        from graphiti_core.nodes import EpisodeType

        async with self._lock(group_id):
            await self._graphiti(group_id).add_episode(
                name=f"message {uuid.uuid4().hex[:8]}",
                episode_body=f"{SPEAKER}: {message}",
                source_description="memlife conversation",
                reference_time=datetime.now(UTC),
                source=EpisodeType.message,
                group_id=group_id,
            )

    async def _answer(self, group_id: str, question: str) -> Reply:
        from graphiti_core.search.search_filters import (
            ComparisonOperator,
            DateFilter,
            SearchFilters,
        )

        # The facts that hold now: Graphiti keeps an invalidated fact, dated (invalid_at),
        # beside the one that replaced it.
        current = SearchFilters(
            invalid_at=[[DateFilter(comparison_operator=ComparisonOperator.is_null)]]
        )
        async with self._lock(group_id):
            edges = await self._graphiti(group_id).search(
                question, group_ids=[group_id], search_filter=current
            )
        found = [edge.fact for edge in edges]
        if not found:
            spanish = language.detect_language(question) == "es"
            return Reply(ABSTAIN_ES if spanish else ABSTAIN_EN, [])
        return Reply("\n".join(found), found)

    # -- erasure -----------------------------------------------------------------------------

    def delete_tenant(self, user_id: str) -> dict[str, str]:
        """Delete the tenant's group with Graphiti's own group deletion, synchronously."""
        done = self._app(lambda t: t.deletion_of(user_id))
        if done is not None:  # idempotent: a retried request is the same request
            return {"deletion_id": done, "status": "completed"}
        self._run(self._clear(user_id))
        return self._app(lambda t: t.record_deletion(user_id))

    async def _clear(self, group_id: str) -> None:
        from graphiti_core.utils.maintenance.graph_data_operations import clear_data

        async with self._lock(group_id):
            await clear_data(self._graphiti(group_id).driver, group_ids=[group_id])

    def deletion_status(self, user_id: str) -> dict[str, str | None]:
        return self._app(lambda t: t.deletion_status(user_id))

    def forget(self, user_id: str, values: list[str]) -> dict[str, object]:
        """Forget a fact: `remove_episode` of each of the tenant's episodes holding any of
        its values (current and superseded)."""
        if not self._app(lambda t: t.is_active(user_id)):
            raise UnknownTenant(user_id)
        removed = self._run(self._forget(user_id, values))
        return {"status": "completed", "episodes": removed}

    async def _forget(self, group_id: str, values: list[str]) -> int:
        from graphiti_core.nodes import EpisodicNode

        needles = [language.normalize(v) for v in values if v.strip()]
        async with self._lock(group_id):
            graphiti = self._graphiti(group_id)
            episodes = await EpisodicNode.get_by_group_ids(graphiti.driver, [group_id])
            holding = [
                ep.uuid
                for ep in episodes
                if any(n in language.normalize(ep.content) for n in needles)
            ]
            for episode_uuid in holding:
                await graphiti.remove_episode(episode_uuid)
        return len(holding)
