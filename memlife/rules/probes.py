"""How a target file reads one store: over HTTP, SQL, a data directory's bytes, Qdrant,
Chroma or FalkorDB, and where each record keeps its content, tenant, id and tombstone. Pure.
The whole target file is target.py."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from memlife.rules.durations import GraceDuration
from memlife.rules.operations import Operation, Strict, check_pointer


class _RecordPointers(Strict):
    """Where each record a probe reads keeps its content, tenant, id and tombstone mark:
    JSON pointers into the record (a row, a point's payload, a response item)."""

    content: str = "/content"
    # None: the records name no tenant (a Letta block); a scope read's records are taken as
    # the tenant's own, a search's are judged by whose values they hold (rules/judging.py).
    tenant_field: str | None = "/tenant_id"
    id: str = "/id"
    deleted: str | None = None  # a truthy value here marks a tombstoned record

    @field_validator("content", "tenant_field", "id", "deleted")
    @classmethod
    def _pointer(cls, value: str | None) -> str | None:
        return value if value is None else check_pointer(value)


class StoreProbe(_RecordPointers):
    """Read-only HTTP reads of one store: by tenant scope and by needle search. The
    pointers address each record inside the `records` list."""

    kind: Literal["http"] = "http"
    scope: Operation
    needle: Operation
    # Optional: many needles in one request (`{needles}`, alone in a query parameter or a
    # JSON body value, becomes the list). Inspections then make one needle read per store
    # instead of one per value.
    needles: Operation | None = None
    records: str = "/records"

    @field_validator("records")
    @classmethod
    def _records_pointer(cls, value: str) -> str:
        return check_pointer(value)


_SQL_PARAMETER = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")
_READ_ONLY_START = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)


class SqlProbe(_RecordPointers):
    """Read-only SQL reads of one store: SQLite or PostgreSQL (any SQLAlchemy URL). The URL
    is named, never written — `url_env` is read on the worker, so credentials never reach
    Temporal history, the database, logs or reports. Queries are parameterized (`:user_id`
    in `scope`, `:needle` in `needle`), single SELECT (or WITH … SELECT) statements, run in
    a read-only transaction. Each row is a record: name columns so that the pointers find
    them (`SELECT id, user_id AS tenant_id, memory AS content …`)."""

    kind: Literal["sql"]
    url_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    # Without `scope` the store is read by value only (a table with no tenant column, such
    # as Mem0's history): it is judged on erasure (I4), not on isolation.
    scope: str | None = None
    needle: str

    @field_validator("scope", "needle")
    @classmethod
    def _read_only(cls, query: str | None) -> str | None:
        if query is None:
            return None
        if not _READ_ONLY_START.match(query):
            raise ValueError("a probe query is one SELECT (or WITH … SELECT) statement")
        if ";" in query.strip().rstrip(";"):
            raise ValueError("a probe query is one statement: no ';' inside it")
        return query.strip().rstrip(";")


class FilesProbe(_RecordPointers):
    """Physical residue: a byte-level scan of the store's data directory (on the worker's
    machine) for a deleted tenant's or forgotten fact's values — deleted data still on disk
    in WAL files, free pages, dead tuples or append-only logs, which no query shows. Found
    within `grace` of the erasure request it is allowed (compaction, vacuum and log
    rotation take time); found later it fails I4-physical, apart from the logical I4.
    Its records name no tenant: bytes on disk have none."""

    kind: Literal["files"]
    path: str | None = None  # the data directory, or
    path_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")  # its variable
    include: list[str] = Field(default_factory=lambda: ["*"], min_length=1)  # glob patterns
    # How values are searched, besides memlife's normalized form (always UTF-8).
    encodings: list[Literal["utf-8", "utf-16-le", "utf-16-be"]] = Field(
        default_factory=lambda: ["utf-8"], min_length=1
    )
    grace: GraceDuration = timedelta(0)

    @model_validator(mode="after")
    def _one_directory(self) -> FilesProbe:
        if (self.path is None) == (self.path_env is None):
            raise ValueError(
                "a files probe names its data directory: `path` or `path_env`, exactly one"
            )
        return self


class QdrantProbe(_RecordPointers):
    """A Qdrant collection read with Qdrant's own client: a server (`url_env`, and
    `api_key_env` when it wants one) or local storage (`path`, readable only while no other
    process holds it). Scope reads filter on the payload key holding the tenant; needle
    reads scroll the whole collection and keep the points whose payload holds a value (Qdrant
    has no substring search without a full-text index). A record's content is the
    payload's `content_key` followed by its other text values."""

    kind: Literal["qdrant"]
    url_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    path: str | None = None
    collection: str = Field(min_length=1)
    tenant_key: str = Field(default="user_id", min_length=1)  # Mem0: user_id
    content_key: str = Field(default="data", min_length=1)  # Mem0: data
    page_size: int = Field(default=256, ge=1, le=10_000)

    @model_validator(mode="after")
    def _one_location(self) -> QdrantProbe:
        if (self.url_env is None) == (self.path is None):
            raise ValueError(
                "a qdrant probe names its server (`url_env`) or its local "
                "storage (`path`), exactly one"
            )
        if self.api_key_env and self.path:
            raise ValueError("`api_key_env` is for a server (`url_env`), not local storage")
        return self


class ChromaProbe(_RecordPointers):
    """A Chroma collection read with Chroma's own client: a server (`url_env`, holding
    http://host:port) or a persistent directory (`path` or `path_env`; Chroma does not
    promise reads from a second process while one writes: prefer a server). Scope reads
    filter on the metadata key holding the tenant; needle reads page through the whole
    collection and keep the records whose document or metadata holds a value (Chroma's
    `$contains` is case- and accent-sensitive). A record's content is its document
    followed by its metadata's text values."""

    kind: Literal["chroma"]
    url_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    path: str | None = None
    path_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    collection: str = Field(min_length=1)
    tenant_key: str = Field(default="user_id", min_length=1)
    page_size: int = Field(default=256, ge=1, le=10_000)

    @model_validator(mode="after")
    def _one_location(self) -> ChromaProbe:
        if sum(value is not None for value in (self.url_env, self.path, self.path_env)) != 1:
            raise ValueError(
                "a chroma probe names its server (`url_env`) or its persistent "
                "directory (`path` or `path_env`), exactly one"
            )
        return self


_CYPHER_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class FalkorDBProbe(_RecordPointers):
    """A FalkorDB graph read by Cypher: `scope` takes `$user_id`, `needle` takes `$needle`;
    both run as GRAPH.RO_QUERY, which the server refuses to let write. Each result row is
    a record: name the columns (`RETURN n.id AS id, n.user_id AS tenant_id, n.value AS
    content`); a node returned whole becomes its properties (with `id` and `labels`).
    A `graph` with a glob character (`*`, `?`, `[`) names every graph of the server it
    matches, each read with the same query: a service that keeps a graph per tenant
    (Graphiti on FalkorDB keeps one per group id)."""

    kind: Literal["falkordb"]
    url_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")  # redis://[:password@]host:port
    graph: str = Field(min_length=1)
    scope: str = Field(min_length=1)
    needle: str = Field(min_length=1)


def cypher_parameters(query: str) -> set[str]:
    return set(_CYPHER_PARAMETER.findall(query))


def sql_parameters(query: str) -> set[str]:
    return set(_SQL_PARAMETER.findall(query))


def _probe_kind(value: Any) -> str:
    kind = value.get("kind", "http") if isinstance(value, dict) else getattr(value, "kind", "http")
    return kind if kind in PROBE_KINDS else "http"


PROBE_KINDS = ("http", "sql", "files", "qdrant", "falkordb", "chroma")
Probe = Annotated[
    Annotated[StoreProbe, Tag("http")]
    | Annotated[SqlProbe, Tag("sql")]
    | Annotated[FilesProbe, Tag("files")]
    | Annotated[QdrantProbe, Tag("qdrant")]
    | Annotated[FalkorDBProbe, Tag("falkordb")]
    | Annotated[ChromaProbe, Tag("chroma")],
    Discriminator(_probe_kind),
]
