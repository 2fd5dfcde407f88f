"""Target files: how to reach a memory system over JSON/HTTP, described without code. Pure.

Templates use `{name}` placeholders only (no expressions, no attribute access): strings in
paths, query parameters and JSON bodies are substituted from a fixed set of variables. A
JSON body value that is exactly one placeholder keeps the variable's type. Secrets are
named, never written: `{env: VAR}` is resolved inside an activity, so the value never
reaches Temporal history, the database, logs or reports.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

# jmespath is imported here, not where a pointer is checked: a Target is validated inside
# workflows too, and the sandbox warns about modules imported after the workflow loaded.
import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from memlife.errors import Problem
from memlife.rules.documents import load_yaml_file, parse_document
from memlife.rules.durations import Duration, GraceDuration
from memlife.rules.headers import BaseUrl, HeaderName, UrlText, safe_header_values
from memlife.rules.scenario import Slug

PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")

# Which variables each operation may use.
OPERATION_VARIABLES: dict[str, frozenset[str]] = {
    "register": frozenset({"phone", "tenant_alias", "user_id"}),
    "say": frozenset({"phone", "user_id", "message"}),
    "ask": frozenset({"phone", "user_id", "message"}),
    "delete_tenant": frozenset({"phone", "user_id"}),
    "deletion_status": frozenset({"phone", "user_id", "deletion_id"}),
    "forget": frozenset({"phone", "user_id", "value", "domain"}),
}
PROBE_VARIABLES: dict[str, frozenset[str]] = {
    "scope": frozenset({"user_id"}),
    "needle": frozenset({"needle"}),
    "needles": frozenset({"needles"}),
}
REQUIRED_EXTRACTS: dict[str, tuple[str, ...]] = {
    "register": (),
    "say": ("reply",),
    "ask": ("reply",),
    "delete_tenant": (),
    "deletion_status": ("status",),
    "forget": (),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class EnvRef(_Strict):
    """A value read from an environment variable inside an activity."""

    env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prefix: str = ""


HeaderValue = str | EnvRef
Headers = Annotated[dict[HeaderName, HeaderValue], AfterValidator(safe_header_values)]


def _check_pointer(pointer: str) -> str:
    """A JSON pointer (`/reply`, `/data/0/id`) or a JMESPath expression (`data[0].id`)."""
    if pointer == "" or pointer.startswith("/"):
        return pointer
    try:
        jmespath.compile(pointer)
    except JMESPathError as error:
        reason = str(error).splitlines()[0]
        raise ValueError(f"{pointer!r} is neither a JSON pointer (write e.g. '/reply' or "
                         f"'/data/id') nor a JMESPath expression ({reason})") from None
    return pointer


class Operation(_Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    path: UrlText = Field(pattern=r"^/")
    query: dict[str, UrlText] = Field(default_factory=dict)
    body: Any = Field(default=None, alias="json")
    headers: Headers = Field(default_factory=dict)
    extract: dict[str, str] = Field(default_factory=dict)
    success: list[int] = Field(default_factory=lambda: [200, 201, 202, 204], min_length=1)

    @field_validator("extract")
    @classmethod
    def _pointers(cls, value: dict[str, str]) -> dict[str, str]:
        for pointer in value.values():
            _check_pointer(pointer)
        return value

    @field_validator("success")
    @classmethod
    def _statuses(cls, value: list[int]) -> list[int]:
        for status in value:
            if not 100 <= status <= 599:
                raise ValueError(f"{status} is not an HTTP status")
        return value


class DeleteOperation(Operation):
    """Tenant deletion. If the response carries a `status` among `done_values`, deletion is
    confirmed at once; otherwise `deletion_status` is polled (or, without one, a 2xx is
    taken as synchronous completion)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "DELETE"
    done_values: list[str] = Field(default_factory=lambda: ["completed"], min_length=1)
    failed_values: list[str] = Field(default_factory=lambda: ["failed", "error"])


class DeletionStatusOperation(DeleteOperation):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"


class Operations(_Strict):
    # `register` would shadow ABCMeta.register on the model class; the file still says it.
    # One request, or several in order (create the user, then its session): `user_id` is
    # the last one extracted so far (the phone before any).
    registration: Operation | list[Operation] | None = Field(default=None, alias="register")

    def register_steps(self) -> list[Operation]:
        if self.registration is None:
            return []
        return (self.registration if isinstance(self.registration, list)
                else [self.registration])
    say: Operation
    # Optional: where questions go, when the service answers them elsewhere than it takes
    # statements (a memory API's search beside its add). Without it, everything is `say`.
    ask: Operation | None = None
    delete_tenant: DeleteOperation | None = None
    deletion_status: DeletionStatusOperation | None = None
    # Forget one fact (a single-fact erasure): {value} and {domain} name it.
    forget: Operation | None = None


class _RecordPointers(_Strict):
    """Where each record a probe reads keeps its content, tenant, id and tombstone mark:
    JSON pointers into the record (a row, a point's payload, a response item)."""

    content: str = "/content"
    tenant_field: str = "/tenant_id"
    id: str = "/id"
    deleted: str | None = None  # a truthy value here marks a tombstoned record

    @field_validator("content", "tenant_field", "id", "deleted")
    @classmethod
    def _pointer(cls, value: str | None) -> str | None:
        return value if value is None else _check_pointer(value)


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
        return _check_pointer(value)


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
        default_factory=lambda: ["utf-8"], min_length=1)
    grace: GraceDuration = timedelta(0)

    @model_validator(mode="after")
    def _one_directory(self) -> FilesProbe:
        if (self.path is None) == (self.path_env is None):
            raise ValueError("a files probe names its data directory: `path` or `path_env`, "
                             "exactly one")
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
            raise ValueError("a qdrant probe names its server (`url_env`) or its local "
                             "storage (`path`), exactly one")
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
            raise ValueError("a chroma probe names its server (`url_env`) or its persistent "
                             "directory (`path` or `path_env`), exactly one")
        return self


_CYPHER_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class FalkorDBProbe(_RecordPointers):
    """A FalkorDB graph read by Cypher: `scope` takes `$user_id`, `needle` takes `$needle`;
    both run as GRAPH.RO_QUERY, which the server refuses to let write. Each result row is
    a record: name the columns (`RETURN n.id AS id, n.user_id AS tenant_id, n.value AS
    content`); a node returned whole becomes its properties (with `id` and `labels`)."""

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
    kind = value.get("kind", "http") if isinstance(value, dict) else getattr(value, "kind",
                                                                             "http")
    return kind if kind in PROBE_KINDS else "http"


PROBE_KINDS = ("http", "sql", "files", "qdrant", "falkordb", "chroma")
Probe = Annotated[Annotated[StoreProbe, Tag("http")] | Annotated[SqlProbe, Tag("sql")]
                  | Annotated[FilesProbe, Tag("files")] | Annotated[QdrantProbe, Tag("qdrant")]
                  | Annotated[FalkorDBProbe, Tag("falkordb")]
                  | Annotated[ChromaProbe, Tag("chroma")], Discriminator(_probe_kind)]


class Store(_Strict):
    name: Slug
    role: str = ""
    # purge: must be absent after deletion; tombstone: may remain if marked deleted (and is
    # never served); retain-redacted: may keep a row, never the value.
    retention: Literal["purge", "tombstone", "retain-redacted"] = "purge"
    # replace: a superseded value must leave the store; append: history kept by design.
    updates: Literal["replace", "append"] = "replace"
    # Entries expire by design after this long (a cache): absence later is not overreach.
    expires: Duration | None = None
    probe: Probe | None = None


class Target(_Strict):
    name: Slug
    description: str = ""
    base_url: BaseUrl = Field(pattern=r"^https?://[^\s/]+")
    timeout: Duration = timedelta(seconds=10)
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    max_attempts: int = Field(default=4, ge=1, le=20)
    # In-flight requests per worker process: memlife must not overload what it measures.
    max_concurrency: int = Field(default=8, ge=1, le=256)
    headers: Headers = Field(default_factory=dict)
    operations: Operations
    stores: list[Store] = Field(default_factory=list)

    def secret_names(self) -> list[str]:
        refs: list[EnvRef] = [v for v in self.headers.values() if isinstance(v, EnvRef)]
        for operation in self.all_operations().values():
            refs.extend(v for v in operation.headers.values() if isinstance(v, EnvRef))
        refs_by_name = {ref.env for ref in refs}
        refs_by_name.update(store.probe.url_env for store in self.stores
                            if isinstance(store.probe, SqlProbe))
        for store in self.stores:
            probe = store.probe
            if isinstance(probe, FilesProbe | QdrantProbe | FalkorDBProbe | ChromaProbe):
                refs_by_name.update(name for name in (
                    getattr(probe, "path_env", None), getattr(probe, "url_env", None),
                    getattr(probe, "api_key_env", None)) if name)
        return sorted(refs_by_name)

    def all_operations(self) -> dict[str, Operation]:
        """Every request the file describes, by where it is written (`register.1` for the
        second registration step)."""
        found: dict[str, Operation] = {}
        steps = self.operations.register_steps()
        for index, step in enumerate(steps):
            found["register" if len(steps) == 1 else f"register.{index}"] = step
        for name in OPERATION_VARIABLES:
            operation = None if name == "register" else getattr(self.operations, name)
            if operation is not None:
                found[name] = operation
        return found


def template_variables(operation: Operation) -> set[str]:
    names: set[str] = set(PLACEHOLDER.findall(operation.path))
    for value in operation.query.values():
        names.update(PLACEHOLDER.findall(value))

    def walk(node: Any) -> None:
        if isinstance(node, str):
            names.update(PLACEHOLDER.findall(node))
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(operation.body)
    return names


def semantic_problems(target: Target, file: str) -> list[Problem]:
    problems: list[Problem] = []
    for name, operation in target.all_operations().items():
        kind = name.split(".")[0]
        allowed = OPERATION_VARIABLES[kind]
        for variable in sorted(template_variables(operation) - allowed):
            problems.append(Problem(
                file, f"operations.{name}",
                f"unknown placeholder {{{variable}}}; this operation may use: "
                + ", ".join(f"{{{v}}}" for v in sorted(allowed)),
            ))
        for field in REQUIRED_EXTRACTS[kind]:
            if field not in operation.extract:
                problems.append(Problem(
                    file, f"operations.{name}.extract",
                    f"must name where the response holds {field!r} (a JSON pointer such as "
                    f"'/{field}')",
                ))
    names = [store.name for store in target.stores]
    for index, store in enumerate(target.stores):
        if names.count(store.name) > 1:
            problems.append(Problem(file, f"stores.{index}.name",
                                    f"duplicate store name {store.name!r}"))
        if store.name == "response":
            problems.append(Problem(file, f"stores.{index}.name",
                                    "'response' names the answer surface; pick another name"))
        if store.probe is None:
            continue
        if isinstance(store.probe, SqlProbe):
            for mode, parameter in (("scope", "user_id"), ("needle", "needle")):
                if getattr(store.probe, mode) is None:
                    continue
                used = sql_parameters(getattr(store.probe, mode))
                if used != {parameter}:
                    problems.append(Problem(
                        file, f"stores.{index}.probe.{mode}",
                        f"a {mode} query takes exactly one parameter, :{parameter}"
                        + (f" (it has {', '.join(':' + p for p in sorted(used))})"
                           if used else " (it has none: it cannot tell one tenant or value "
                           "from another)")))
        if isinstance(store.probe, FilesProbe):
            continue  # no queries, no retention markers: bytes on disk
        if isinstance(store.probe, FalkorDBProbe):
            for mode, parameter in (("scope", "user_id"), ("needle", "needle")):
                used = cypher_parameters(getattr(store.probe, mode))
                if used != {parameter}:
                    problems.append(Problem(
                        file, f"stores.{index}.probe.{mode}",
                        f"a {mode} query takes exactly one parameter, ${parameter}"
                        + (f" (it has {', '.join('$' + p for p in sorted(used))})" if used
                           else " (it has none: it cannot tell one tenant or value from "
                           "another)")))
        if isinstance(store.probe, QdrantProbe | FalkorDBProbe | ChromaProbe):
            if store.retention == "tombstone" and store.probe.deleted is None:
                problems.append(Problem(
                    file, f"stores.{index}.probe.deleted",
                    "a tombstone store must say where a record is marked deleted"))
            continue
        for mode, allowed in PROBE_VARIABLES.items():
            if isinstance(store.probe, SqlProbe):
                break
            operation = getattr(store.probe, mode)
            if operation is None:
                continue
            used = template_variables(operation)
            for variable in sorted(used - allowed):
                problems.append(Problem(
                    file, f"stores.{index}.probe.{mode}",
                    f"unknown placeholder {{{variable}}}; a {mode} read may use: "
                    + ", ".join(f"{{{v}}}" for v in sorted(allowed)),
                ))
            if not used & allowed:
                problems.append(Problem(
                    file, f"stores.{index}.probe.{mode}",
                    f"must use {' or '.join(f'{{{v}}}' for v in sorted(allowed))}: a read "
                    "that names no tenant or needle cannot tell one tenant from another",
                ))
        if store.retention == "tombstone" and store.probe.deleted is None:
            problems.append(Problem(
                file, f"stores.{index}.probe.deleted",
                "a tombstone store must say where a record is marked deleted (a JSON pointer "
                "such as '/deleted')",
            ))
    return problems


def parse_target(data: Any, file: str = "<target>") -> Target:
    return parse_document(Target, data, file, semantic_problems)


def load_target(path: str | Path) -> Target:
    return parse_target(load_yaml_file(path), str(path))
