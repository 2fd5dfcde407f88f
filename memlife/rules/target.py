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
    Select,
    Strict,
    check_pointer,
    sequence_problems,
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
    "PLACEHOLDER",
    "PROBE_KINDS",
    "ChromaProbe",
    "DeleteOperation",
    "DeletionStatusOperation",
    "EnvRef",
    "FalkorDBProbe",
    "FilesProbe",
    "HeaderValue",
    "Headers",
    "Operation",
    "Operations",
    "Probe",
    "QdrantProbe",
    "Select",
    "Sequence",
    "SqlProbe",
    "Store",
    "StoreProbe",
    "Target",
    "steps_of",
    "check_pointer",
    "cypher_parameters",
    "load_target",
    "parse_target",
    "sql_parameters",
    "template_variables",
]

# Which variables each operation may use.
OPERATION_VARIABLES: dict[str, frozenset[str]] = {
    # registration_key: the same across the retries of one registration (an idempotency key
    # for a service that takes one; activities/target.py).
    "register": frozenset({"phone", "tenant_alias", "user_id", "registration_key"}),
    "say": frozenset({"phone", "user_id", "message"}),
    "ask": frozenset({"phone", "user_id", "message"}),
    "delete_tenant": frozenset({"phone", "user_id"}),
    "deletion_status": frozenset({"phone", "user_id", "deletion_id"}),
    "forget": frozenset({"phone", "user_id", "value", "values", "domain"}),
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


# A request, or several made in order: what an earlier one extracts (or selects) is a
# variable of the later ones (operations.py: Select, sequence_problems).
Sequence = Operation | list[Operation]


def steps_of(operation: Sequence | None) -> list[Operation]:
    """An operation's requests in order (none when the file has no such operation)."""
    if operation is None:
        return []
    return operation if isinstance(operation, list) else [operation]


class Operations(Strict):
    # `register` would shadow ABCMeta.register on the model class; the file still says it.
    # One request, or several in order (create the user, then its session): `user_id` is
    # the last one extracted so far (the phone before any).
    registration: Sequence | None = Field(default=None, alias="register")

    def register_steps(self) -> list[Operation]:
        return steps_of(self.registration)

    say: Operation
    # Optional: where questions go, when the service answers them elsewhere than it takes
    # statements (a memory API's search beside its add). Without it, everything is `say`.
    ask: Operation | None = None
    # The last request is the deletion proper: its status is read against done_values.
    delete_tenant: DeleteOperation | list[DeleteOperation] | None = None
    deletion_status: DeletionStatusOperation | None = None
    # Forget one fact (a single-fact erasure): {value}, {values} and {domain} name it. A
    # service that erases by id finds the id first (a sequence with `select`).
    forget: Sequence | None = None
    # Maintenance the service runs on demand or on a schedule (a reindex, compaction,
    # re-embedding or rebuild), by name: a scenario's `maintain` step triggers them. With
    # {user_id} or {phone} a call is made per tenant; without, once per pair.
    maintain: dict[Slug, Sequence] = Field(default_factory=dict)
    # Shared spaces (scenario `spaces`): a scope with members. `create_space` may extract
    # `space_id` (else the space is known by its {space_name}); `space_say` is a message
    # said inside the space, statement or question, and must extract `reply`.
    create_space: Sequence | None = None
    join_space: Sequence | None = None
    leave_space: Sequence | None = None
    delete_space: Sequence | None = None
    space_say: Operation | None = None
    # Optional: where questions inside a space go, when the service answers them elsewhere
    # than it takes statements (a group graph's search beside its add).
    space_ask: Operation | None = None

    def sequence(self, name: str) -> list[Operation]:
        """The requests of an operation by name (`forget`, `maintain.reindex`)."""
        if name.startswith("maintain."):
            return steps_of(self.maintain.get(name.removeprefix("maintain.")))
        if name == "register":
            return self.register_steps()
        return steps_of(getattr(self, name))


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
    # How the service answers a question: `assistant`, in sentences (it abstains in words),
    # or `retrieval`, with the records a search found (docs/design.md, "Retrieval answers").
    answers: Literal["assistant", "retrieval"] = "assistant"
    operations: Operations
    stores: list[Store] = Field(default_factory=list)

    def secret_names(self) -> list[str]:
        refs: list[EnvRef] = [v for v in self.headers.values() if isinstance(v, EnvRef)]
        for operation in self.all_operations().values():
            refs.extend(v for v in operation.headers.values() if isinstance(v, EnvRef))
        refs_by_name = {ref.env for ref in refs}
        refs_by_name.update(
            store.probe.url_env for store in self.stores if isinstance(store.probe, SqlProbe)
        )
        for store in self.stores:
            probe = store.probe
            if isinstance(probe, FilesProbe | QdrantProbe | FalkorDBProbe | ChromaProbe):
                refs_by_name.update(
                    name
                    for name in (
                        getattr(probe, "path_env", None),
                        getattr(probe, "url_env", None),
                        getattr(probe, "api_key_env", None),
                    )
                    if name
                )
        return sorted(refs_by_name)

    def all_operations(self) -> dict[str, Operation]:
        """Every request the file describes, by where it is written (`register.1` for the
        second registration step, `forget.0` for the first request of a sequence)."""
        found: dict[str, Operation] = {}
        for name, steps in self.sequences().items():
            for index, step in enumerate(steps):
                found[name if len(steps) == 1 else f"{name}.{index}"] = step
        return found

    def sequences(self) -> dict[str, list[Operation]]:
        """Every operation the file has, by name, as its requests in order."""
        names = [name for name in OPERATION_VARIABLES if name != "maintain"]
        names += [f"maintain.{name}" for name in self.operations.maintain]
        return {name: steps for name in names if (steps := self.operations.sequence(name))}


def semantic_problems(target: Target, file: str) -> list[Problem]:
    problems: list[Problem] = []
    for name, steps in target.sequences().items():
        kind = name.split(".")[0]
        where = [
            f"operations.{name}" if len(steps) == 1 else f"operations.{name}.{index}"
            for index in range(len(steps))
        ]
        for index, reason in sequence_problems(steps, OPERATION_VARIABLES[kind]):
            problems.append(Problem(file, where[index], reason))
        for field in REQUIRED_EXTRACTS[kind]:
            if field not in steps[-1].extract:
                problems.append(
                    Problem(
                        file,
                        f"{where[-1]}.extract",
                        f"must name where the response holds {field!r} (a JSON pointer such as "
                        f"'/{field}')",
                    )
                )
        if steps[-1].select is not None:
            problems.append(
                Problem(
                    file,
                    f"{where[-1]}.select",
                    "the last request of a "
                    "sequence selects for nothing: the requests that run "
                    "per selected record come after it",
                )
            )
    names = [store.name for store in target.stores]
    for index, store in enumerate(target.stores):
        if names.count(store.name) > 1:
            problems.append(
                Problem(file, f"stores.{index}.name", f"duplicate store name {store.name!r}")
            )
        if store.name == "response":
            problems.append(
                Problem(
                    file,
                    f"stores.{index}.name",
                    "'response' names the answer surface; pick another name",
                )
            )
        if store.probe is None:
            continue
        if isinstance(store.probe, SqlProbe):
            for mode, parameter in (("scope", "user_id"), ("needle", "needle")):
                if getattr(store.probe, mode) is None:
                    continue
                used = sql_parameters(getattr(store.probe, mode))
                if used != {parameter}:
                    problems.append(
                        Problem(
                            file,
                            f"stores.{index}.probe.{mode}",
                            f"a {mode} query takes exactly one parameter, :{parameter}"
                            + (
                                f" (it has {', '.join(':' + p for p in sorted(used))})"
                                if used
                                else " (it has none: it cannot tell one tenant or value "
                                "from another)"
                            ),
                        )
                    )
        if isinstance(store.probe, FilesProbe):
            continue  # no queries, no retention markers: bytes on disk
        if isinstance(store.probe, FalkorDBProbe):
            for mode, parameter in (("scope", "user_id"), ("needle", "needle")):
                used = cypher_parameters(getattr(store.probe, mode))
                if used != {parameter}:
                    problems.append(
                        Problem(
                            file,
                            f"stores.{index}.probe.{mode}",
                            f"a {mode} query takes exactly one parameter, ${parameter}"
                            + (
                                f" (it has {', '.join('$' + p for p in sorted(used))})"
                                if used
                                else " (it has none: it cannot tell one tenant or value from "
                                "another)"
                            ),
                        )
                    )
        if isinstance(store.probe, QdrantProbe | FalkorDBProbe | ChromaProbe):
            if store.retention == "tombstone" and store.probe.deleted is None:
                problems.append(
                    Problem(
                        file,
                        f"stores.{index}.probe.deleted",
                        "a tombstone store must say where a record is marked deleted",
                    )
                )
            continue
        for mode, allowed in PROBE_VARIABLES.items():
            if isinstance(store.probe, SqlProbe):
                break
            operation = getattr(store.probe, mode)
            if operation is None:
                continue
            used = template_variables(operation)
            for variable in sorted(used - allowed):
                problems.append(
                    Problem(
                        file,
                        f"stores.{index}.probe.{mode}",
                        f"unknown placeholder {{{variable}}}; a {mode} read may use: "
                        + ", ".join(f"{{{v}}}" for v in sorted(allowed)),
                    )
                )
            if not used & allowed:
                problems.append(
                    Problem(
                        file,
                        f"stores.{index}.probe.{mode}",
                        f"must use {' or '.join(f'{{{v}}}' for v in sorted(allowed))}: a read "
                        "that names no tenant or needle cannot tell one tenant from another",
                    )
                )
        if store.retention == "tombstone" and store.probe.deleted is None:
            problems.append(
                Problem(
                    file,
                    f"stores.{index}.probe.deleted",
                    "a tombstone store must say where a record is marked deleted (a JSON pointer "
                    "such as '/deleted')",
                )
            )
    return problems


def parse_target(data: Any, file: str = "<target>") -> Target:
    return parse_document(Target, data, file, semantic_problems)


def load_target(path: str | Path) -> Target:
    return parse_target(load_yaml_file(path), str(path))
