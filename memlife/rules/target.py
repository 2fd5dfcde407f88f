"""Target files: how to reach a memory system over JSON/HTTP, described without code. Pure.

Templates use `{name}` placeholders only (no expressions, no attribute access): strings in
paths, query parameters and JSON bodies are substituted from a fixed set of variables. A
JSON body value that is exactly one placeholder keeps the variable's type. Secrets are
named, never written: `{env: VAR}` is resolved inside an activity, so the value never
reaches Temporal history, the database, logs or reports.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from memlife.errors import Problem
from memlife.rules.documents import load_yaml_file, parse_document
from memlife.rules.durations import Duration
from memlife.rules.headers import BaseUrl
from memlife.rules.operations import (  # re-exported: the target file's vocabulary
    PLACEHOLDER,
    DeleteOperation,
    DeletionStatusOperation,
    EnvRef,
    Headers,
    HeaderValue,
    Operation,
    Strict,
    check_pointer,
    template_variables,
)
from memlife.rules.probes import (  # re-exported
    PROBE_KINDS,
    ChromaProbe,
    FalkorDBProbe,
    FilesProbe,
    Probe,
    QdrantProbe,
    SqlProbe,
    StoreProbe,
    cypher_parameters,
    sql_parameters,
)
from memlife.rules.scenario import Slug

__all__ = [
    "PLACEHOLDER", "PROBE_KINDS", "ChromaProbe", "DeleteOperation", "DeletionStatusOperation",
    "EnvRef", "FalkorDBProbe", "FilesProbe", "HeaderValue", "Headers", "Operation",
    "Operations", "Probe", "QdrantProbe", "SqlProbe", "Store", "StoreProbe", "Target",
    "check_pointer", "cypher_parameters", "load_target", "parse_target", "sql_parameters",
    "template_variables",
]

# Which variables each operation may use.
OPERATION_VARIABLES: dict[str, frozenset[str]] = {
    "register": frozenset({"phone", "tenant_alias", "user_id"}),
    "say": frozenset({"phone", "user_id", "message"}),
    "ask": frozenset({"phone", "user_id", "message"}),
    "delete_tenant": frozenset({"phone", "user_id"}),
    "deletion_status": frozenset({"phone", "user_id", "deletion_id"}),
    "forget": frozenset({"phone", "user_id", "value", "domain"}),
    "maintain": frozenset({"phone", "user_id"}),
    "create_space": frozenset({"phone", "user_id", "space_name"}),
    "join_space": frozenset({"phone", "user_id", "space_id", "space_name"}),
    "leave_space": frozenset({"phone", "user_id", "space_id", "space_name"}),
    "delete_space": frozenset({"phone", "user_id", "space_id", "space_name"}),
    "space_say": frozenset({"phone", "user_id", "space_id", "space_name", "message"}),
    "space_ask": frozenset({"phone", "user_id", "space_id", "space_name", "message"}),
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
    "maintain": (),
    "create_space": (),
    "join_space": (),
    "leave_space": (),
    "delete_space": (),
    "space_say": ("reply",),
    "space_ask": ("reply",),
}


class Operations(Strict):
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
    # Maintenance the service runs on demand or on a schedule (a reindex, compaction,
    # re-embedding or rebuild), by name: a scenario's `maintain` step triggers them. With
    # {user_id} or {phone} a call is made per tenant; without, once per pair.
    maintain: dict[Slug, Operation] = Field(default_factory=dict)
    # Shared spaces (scenario `spaces`): a scope with members. `create_space` may extract
    # `space_id` (else the space is known by its {space_name}); `space_say` is a message
    # said inside the space, statement or question, and must extract `reply`.
    create_space: Operation | None = None
    join_space: Operation | None = None
    leave_space: Operation | None = None
    delete_space: Operation | None = None
    space_say: Operation | None = None
    # Optional: where questions inside a space go, when the service answers them elsewhere
    # than it takes statements (a group graph's search beside its add).
    space_ask: Operation | None = None



class Store(Strict):
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


class Target(Strict):
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
            if name in ("register", "maintain"):
                continue
            operation = getattr(self.operations, name)
            if operation is not None:
                found[name] = operation
        for name, operation in self.operations.maintain.items():
            found[f"maintain.{name}"] = operation
        return found


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
