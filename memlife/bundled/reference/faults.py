"""What the reference target can be told to get wrong (`--fault NAME`, combinable), and
which layers answer its questions (`--retrieval MODE`). Light: the CLI checks names
against these without loading the runtime."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Fault(StrEnum):
    """A fault of the reference target; its value is the name `--fault` takes."""

    CROSS_TENANT_LEAK = "cross-tenant-leak"
    DELETION_SKIPS_SUMMARIES = "deletion-skips-summaries"
    PREMATURE_DELETION_STATUS = "premature-deletion-status"
    NIGHTLY_RESURRECTION = "nightly-resurrection"
    STALE_AFTER_UPDATE = "stale-after-update"
    CACHE_STALE = "cache-stale"
    TOPK_FALLBACK_LEAK = "topk-fallback-leak"
    GRAPH_UNSCOPED_DELETE = "graph-unscoped-delete"
    DELETE_OVERREACH = "delete-overreach"
    PARTIAL_DELETE = "partial-delete"
    FORGET_SKIPS_GRAPH = "forget-skips-graph"
    NAMESPACE_PREFIX_MATCH = "namespace-prefix-match"
    REINDEX_RESURRECTS = "reindex-resurrects"
    REINDEX_DROPS_TENANT = "reindex-drops-tenant"
    INGEST_AFTER_DELETE = "ingest-after-delete"
    IDENTITY_FROM_PROMPT = "identity-from-prompt"
    GLOBAL_PROMOTION = "global-promotion"
    SPACE_LEAK = "space-leak"
    REVOCATION_IGNORED = "revocation-ignored"
    MEMBER_DELETE_OVERREACH = "member-delete-overreach"
    REWORDED_LEAK = "reworded-leak"
    POST_FILTER_CROWDING = "post-filter-crowding"


# What each fault does, as `memlife target serve --help` lists them.
FAULTS: dict[str, str] = {
    "cross-tenant-leak": "answers also carry other tenants' values for the same key "
    "(retrieval without the tenant filter)",
    "deletion-skips-summaries": "tenant deletion leaves the summaries store alone",
    "premature-deletion-status": "deletion reports completed at once; the purge runs 2h later",
    "nightly-resurrection": "the nightly job rebuilds memory from every checkpoint, including "
    "the tombstoned checkpoints of deleted tenants",
    "stale-after-update": "an update adds the new value but the old one stays live and is "
    "served first",
    "cache-stale": "writes do not invalidate the response cache (6h TTL)",
    "topk-fallback-leak": "when a tenant's own memories under-fill top-k, other tenants' "
    "memories fill it",
    "graph-unscoped-delete": "tenant deletion misses the graph (its nodes survive)",
    "delete-overreach": "tenant deletion removes memory and graph records of every tenant "
    "that share a key with the deleted one",
    "partial-delete": "tenant deletion reports success but purges only part of the memory",
    "forget-skips-graph": "forgetting a fact removes the memory but leaves the graph node "
    "(which keeps answering)",
    "namespace-prefix-match": "a tenant's lookups match its namespace as a prefix, so tenant "
    "acme also reads acme-corp's memories (langchain-ai/langgraph #8478)",
    "reindex-resurrects": "the on-demand reindex (POST /admin/reindex) rebuilds memory from "
    "every checkpoint, tombstoned and forgotten ones included (topoteretes/cognee #3526)",
    "reindex-drops-tenant": "the reindex writes memories without their tenant key, and "
    "retrieval lets records without one through (MemTensor/MemOS #2231)",
    "ingest-after-delete": "deletion and forget do not drain the ingestion queue: statements "
    "still queued land after the purge (Significant-Gravitas/AutoGPT #12720)",
    "identity-from-prompt": "a question naming a registered phone or alias is answered from "
    "that tenant's memory: the scope comes from the prompt, not the session",
    "global-promotion": "statements addressed to everyone go into a global memory served to "
    "every tenant (Abilityai/trinity #888, letta-ai/letta #3388)",
    "space-leak": "a shared space's facts are read without a membership check: anyone asking "
    "in the space gets them",
    "revocation-ignored": "membership is checked when joining, not when reading: a member "
    "who left a space still retrieves its facts",
    "member-delete-overreach": "deleting a member also purges the facts of every space it "
    "belongs to (topoteretes/cognee #2732)",
    "reworded-leak": "a model writes every answer in its own style (streets abbreviated, "
    "numbers grouped, names family first) and adds other tenants' values for the same key, "
    "reworded the same way: no leaked value appears as stated",
    "post-filter-crowding": "the memories of every tenant on the tenant's shard are ranked "
    "together and the best kept before the tenant filter (post-filtering, which pgvector's "
    "README warns approximate indexes do): a shard neighbour's memory that ranks first crowds "
    "the tenant's own fact out, and the answer abstains without any of the neighbour's values",
}

# Which layers answer (the retrieval ablations of docs/experiments.md): the thread alone,
# vector memory alone, the graph alone, or the production precedence graph → memory →
# thread.
RETRIEVAL_MODES = ("combined", "thread", "vector", "graph")


def parse_faults(names: Iterable[str]) -> frozenset[Fault]:
    """The faults named (ValueError naming the unknown ones)."""
    unknown = sorted(set(names) - set(FAULTS))
    if unknown:
        raise ValueError(f"unknown fault(s): {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return frozenset(Fault(name) for name in names)
