"""`memlife target check FILE`: exercise every operation and probe of a target file once,
with a throwaway tenant, and say precisely what works and what does not — which operation,
which HTTP status, which JSON path was missing.

The throwaway tenant gets a fictional phone (555-01XX) and a canary value; when the target
file describes deletion, the tenant is deleted at the end.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memlife.rules.operations import template_variables
from memlife.rules.phones import synthetic_phone
from memlife.rules.target import (
    ChromaProbe,
    FalkorDBProbe,
    FilesProbe,
    Operation,
    QdrantProbe,
    SqlProbe,
    Target,
)
from memlife.targets import http
from memlife.targets.sequence import run_sequence

STATEMENT = "Mi color favorito es {value}."
QUESTION = "¿Cuál es mi color favorito?"


@dataclass
class CheckResult:
    operation: str
    request: str
    ok: bool
    detail: str
    optional: bool = False  # a finding, not a misconfiguration (e.g. the value not recalled)


@dataclass
class TargetCheck:
    target: Target
    results: list[CheckResult] = field(default_factory=list)
    # A check is a run of its own to the target (X-Memlife-Run): a simulated target keeps
    # its work off every other run's clock.
    run: str = field(default_factory=lambda: f"target-check-{secrets.token_hex(6)}")

    @property
    def misconfigured(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok and not r.optional]


def _describe(operation: Operation, variables: dict[str, Any]) -> str:
    return f"{operation.method} {http.render(operation.path, variables, url=True)}"


async def _attempt(
    check: TargetCheck, name: str, operation: Operation, variables: dict[str, Any]
) -> http.Response | None:
    """One request; the result names the operation and exactly what went wrong."""
    request = _describe(operation, variables)
    try:
        response = await http.call(
            check.target,
            operation,
            variables,
            scenario_now=datetime.now(UTC).isoformat(),
            run=check.run,
        )
    except http.TargetError as error:
        check.results.append(CheckResult(name, request, False, f"{error.kind}: {error}"))
        return None
    extracted = ", ".join(f"{key}={_short(value)}" for key, value in response.fields.items())
    timing = (" · Server-Timing " + ", ".join(response.timings)) if response.timings else ""
    refused = " · refused (an answer that holds nothing)" if response.refused else ""
    check.results.append(
        CheckResult(
            name,
            request,
            True,
            f"HTTP {response.status} in {response.latency_ms:.0f} ms"
            + refused
            + (f" · {extracted}" if extracted else "")
            + timing,
        )
    )
    return response


class _Stopped(Exception):
    """A request of a sequence failed (its result already says how)."""


async def _sequence(
    check: TargetCheck, name: str, steps: list[Operation], variables: dict[str, Any]
) -> http.Response | None:
    """An operation's requests in order, each reported on its own (`forget (2/2)`); the
    last answer, or None when one failed."""
    if len(steps) == 1:
        return await _attempt(check, name, steps[0], variables)

    async def send(
        _target: Target, operation: Operation, values: dict[str, Any], _now: str, _run: str
    ) -> http.Response:
        index = next(i for i, step in enumerate(steps) if step is operation)
        response = await _attempt(check, f"{name} ({index + 1}/{len(steps)})", operation, values)
        if response is None:
            raise _Stopped
        return response

    try:
        result = await run_sequence(check.target, steps, variables, send)
    except _Stopped:
        return None
    except http.TargetError as error:  # a selection the answer cannot make
        check.results.append(CheckResult(name, "select", False, f"{error.kind}: {error}"))
        return None
    if result.selected is not None:
        check.results.append(
            CheckResult(
                name,
                "select",
                True,
                f"{result.selected} record(s) selected, {result.requests} request(s) in all",
            )
        )
    return result.response


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "…"


async def check_target(target: Target) -> TargetCheck:
    check = TargetCheck(target)
    operations = target.operations
    tag = secrets.token_hex(3)
    phone = synthetic_phone(f"target-check-{tag}", 0)
    canary = f"azul {tag}"
    # Without a register operation a tenant is known by its phone (as in a run).
    user_id = "" if operations.registration is not None else phone
    try:
        steps = operations.register_steps()
        extracted: dict[str, Any] = {}  # a step's extractions are variables of the next
        for index, step in enumerate(steps):
            variables = {
                **extracted,
                "phone": phone,
                "tenant_alias": f"check-{tag}",
                "user_id": user_id or phone,
            }
            missing = sorted(template_variables(step) - variables.keys())
            if missing:  # an earlier step failed before extracting what this one sends
                check.results.append(
                    CheckResult(
                        f"register ({index + 1}/{len(steps)})",
                        f"{step.method} {step.path}",
                        False,
                        "not sent: "
                        + ", ".join(f"{{{name}}}" for name in missing)
                        + " was not extracted by an earlier request",
                    )
                )
                break
            response = await _attempt(
                check,
                "register" if len(steps) == 1 else f"register ({index + 1}/{len(steps)})",
                step,
                variables,
            )
            if response is not None:
                extracted.update(response.fields)
                user_id = str(response.fields.get("user_id") or user_id or phone)
        said = await _attempt(
            check,
            "say (statement)",
            operations.say,
            {"phone": phone, "user_id": user_id, "message": STATEMENT.format(value=canary)},
        )
        if said is not None and not user_id:
            user_id = str(said.fields.get("user_id") or "")
        answer = await _attempt(
            check,
            "ask" if operations.ask else "say (question)",
            operations.ask or operations.say,
            {"phone": phone, "user_id": user_id, "message": QUESTION},
        )
        if answer is not None:
            recalled = canary.split()[1] in str(answer.fields.get("reply", ""))
            check.results.append(
                CheckResult(
                    "recall",
                    QUESTION,
                    recalled,
                    "the reply carries the value just stated"
                    if recalled
                    else "the reply does not carry the value just stated (a finding about the "
                    "target, not its file)",
                    optional=True,
                )
            )
        for store in target.stores:
            if store.probe is None:
                continue
            if isinstance(store.probe, FilesProbe):
                await _files_attempt(check, store.name, store.probe, canary)
                continue
            if isinstance(store.probe, QdrantProbe | FalkorDBProbe | ChromaProbe):
                for mode, key in (("scope", user_id), ("needle", canary)):
                    await _client_attempt(check, store.name, mode, store.probe, key)
                continue
            if isinstance(store.probe, SqlProbe):
                for mode, query, parameters in (
                    ("scope", store.probe.scope, {"user_id": user_id}),
                    ("needle", store.probe.needle, {"needle": canary}),
                ):
                    if query is None:
                        continue
                    await _sql_attempt(check, store.name, mode, store.probe, query, parameters)
                continue
            reads = [
                ("scope", store.probe.scope, {"user_id": user_id}),
                ("needle", store.probe.needle, {"needle": canary}),
            ]
            if store.probe.needles is not None:
                reads.append(
                    ("needles", store.probe.needles, {"needles": [canary, canary.split()[1]]})
                )
            for mode, operation, variables in reads:
                response = await _attempt(
                    check, f"probe {store.name} ({mode})", operation, variables
                )
                if response is not None:
                    _check_records(check, store.name, mode, store.probe, response)
        await _check_spaces(check, operations, phone, user_id, tag)
        for name in operations.maintain:
            await _sequence(
                check,
                f"maintain {name}",
                operations.sequence(f"maintain.{name}"),
                {"phone": phone, "user_id": user_id},
            )
        if operations.forget is not None and user_id:
            await _sequence(
                check,
                "forget",
                operations.sequence("forget"),
                {
                    "phone": phone,
                    "user_id": user_id,
                    "value": canary,
                    "values": [canary],
                    "domain": "color",
                },
            )
        if operations.delete_tenant is not None and user_id:
            deleted = await _sequence(
                check,
                "delete_tenant",
                operations.sequence("delete_tenant"),
                {"phone": phone, "user_id": user_id},
            )
            if deleted is not None and operations.deletion_status is not None:
                await _attempt(
                    check,
                    "deletion_status",
                    operations.deletion_status,
                    {
                        "phone": phone,
                        "user_id": user_id,
                        "deletion_id": str(deleted.fields.get("deletion_id") or ""),
                    },
                )
    finally:
        await http.close_clients()
    return check


async def _files_attempt(check: TargetCheck, store: str, probe: FilesProbe, canary: str) -> None:
    """The data directory is readable, file by file; where the value just stated is on
    disk is reported (a finding about the target, not its file)."""
    import asyncio

    from memlife.targets import files

    name = f"probe {store} (files)"
    try:
        root = files.data_directory(probe.path, probe.path_env)
        count, size = await asyncio.to_thread(files.inventory, root, probe.include)
        _, hits, latency_ms = await asyncio.to_thread(
            files.scan, root, probe.include, [canary], list(probe.encodings), 20
        )
    except http.TargetError as error:
        check.results.append(
            CheckResult(name, "scan the data directory", False, f"{type(error).__name__}: {error}")
        )
        return
    check.results.append(
        CheckResult(
            name,
            f"scan {root}",
            True,
            f"{count} file(s), {size / 1_048_576:,.1f} MB read in {latency_ms:.0f} ms",
        )
    )
    check.results.append(
        CheckResult(
            f"probe {store} (on disk)",
            canary,
            bool(hits),
            f"the value just stated is on disk in {hits} place(s)"
            if hits
            else "the value just stated is not on disk (yet): files may be written later",
            optional=True,
        )
    )


async def _client_attempt(
    check: TargetCheck,
    store: str,
    mode: str,
    probe: QdrantProbe | FalkorDBProbe | ChromaProbe,
    key: str,
) -> None:
    """One read with the store's own client, as inspections make it."""
    import asyncio

    from memlife.targets import stores

    name = f"probe {store} ({mode})"
    if isinstance(probe, FalkorDBProbe):
        read, request = stores.falkordb_read, f"Cypher {getattr(probe, mode)}"
    elif isinstance(probe, ChromaProbe):
        read, request = stores.chroma_read, f"Chroma {probe.collection}"
    else:
        read, request = stores.qdrant_read, f"Qdrant {probe.collection}"
    try:
        rows, total, latency_ms = await asyncio.to_thread(read, probe, mode, key, 20)
    except http.TargetError as error:
        check.results.append(CheckResult(name, request, False, f"{type(error).__name__}: {error}"))
        return
    check.results.append(
        CheckResult(name, request, True, f"{total} record(s) in {latency_ms:.0f} ms")
    )
    _check_pointers(check, store, probe, rows)


async def _sql_attempt(
    check: TargetCheck,
    store: str,
    mode: str,
    probe: SqlProbe,
    query: str,
    parameters: dict[str, Any],
) -> None:
    """One probe query, read-only, as inspections run it; then the pointers on its rows."""
    import asyncio

    from memlife.targets import sql

    name = f"probe {store} ({mode})"
    try:
        rows, total, latency_ms = await asyncio.to_thread(
            sql.read_rows, probe.url_env, query, parameters, 20
        )
    except http.TargetError as error:
        check.results.append(
            CheckResult(name, f"SQL {query}", False, f"{type(error).__name__}: {error}")
        )
        return
    check.results.append(
        CheckResult(name, f"SQL {query}", True, f"{total} row(s) in {latency_ms:.0f} ms")
    )
    _check_pointers(check, store, probe, rows)


def _check_records(
    check: TargetCheck, store: str, mode: str, probe: Any, response: http.Response
) -> None:
    """The record list and, on each record, the pointers the probe names."""
    result = check.results[-1]
    try:
        records = http.extract(response.data, probe.records)
    except KeyError:
        result.ok, result.detail = (
            False,
            (f"the response has no records at {probe.records!r} (stores.{store}.probe.records)"),
        )
        return
    if not isinstance(records, list):
        result.ok, result.detail = (
            False,
            (f"{probe.records!r} is not a list (stores.{store}.probe.records)"),
        )
        return
    _check_pointers(check, store, probe, records)


def _check_pointers(check: TargetCheck, store: str, probe: Any, records: list[Any]) -> None:
    result = check.results[-1]
    missing = []
    # A table read by value only has no tenant column: it is judged on erasure alone.
    by_value_only = isinstance(probe, SqlProbe) and probe.scope is None
    for record in records[:20]:
        for key, pointer in (
            ("content", probe.content),
            ("tenant_field", None if by_value_only else probe.tenant_field),
            ("deleted", probe.deleted),
        ):
            if pointer is None:
                continue
            try:
                http.extract(record, pointer)
            except KeyError:
                missing.append(f"stores.{store}.probe.{key} {pointer!r}")
    if missing:
        result.ok = False
        result.detail = f"{len(records)} record(s), but not found on them: " + ", ".join(
            sorted(set(missing))
        )
    else:
        result.detail += f" · {len(records)} record(s)"


async def _check_spaces(
    check: TargetCheck, operations: Any, phone: str, user_id: str, tag: str
) -> None:
    """A space's life with the one throwaway tenant: create, say and ask inside it, leave,
    join again, delete (each operation the file describes, once)."""
    if operations.create_space is None:
        return
    name = f"check-{tag}"
    variables = {"phone": phone, "user_id": user_id, "space_name": name, "space_id": name}
    created = await _sequence(check, "create_space", operations.sequence("create_space"), variables)
    if created is None:
        return
    variables["space_id"] = str(created.fields.get("space_id") or name)
    if operations.space_say is not None:
        await _attempt(
            check,
            "space_say (statement)",
            operations.space_say,
            {**variables, "message": STATEMENT.format(value=f"verde {tag}")},
        )
        await _attempt(
            check,
            "space_ask" if operations.space_ask else "space_say (question)",
            operations.space_ask or operations.space_say,
            {**variables, "message": QUESTION},
        )
    for operation_name in ("leave_space", "join_space", "delete_space"):
        steps = operations.sequence(operation_name)
        if steps:
            await _sequence(check, operation_name, steps, variables)
