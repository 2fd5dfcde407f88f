"""Target activities: all HTTP I/O with the system under test.

Registration and deletion requests are one call per activity: transport errors, timeouts
and 5xx are retried by the workflow's RetryPolicy with backoff; 4xx and configuration
problems are non-retryable. A conversation step sends one tenant's messages in order inside
one activity (the dev server's activity rate would otherwise cap a large run): each request
is retried in place with backoff, every result is heartbeated, and a retried activity
resumes after the last message that got an answer, so nothing is sent twice. A request that
still fails is returned as a target error: verdicts are data, never activity failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife import contracts
from memlife.contracts import (
    BatchOutcome,
    ConverseRequest,
    DeleteRequest,
    ForgetRequest,
    InspectRequest,
    RegisterRequest,
    RegisterResult,
    TargetBatch,
)
from memlife.log import get_logger
from memlife.rules.evidence import DeletionState, Reply, StoreRead, StoreRecordView
from memlife.rules.scoring import normalize
from memlife.rules.target import (
    ChromaProbe,
    DeleteOperation,
    FalkorDBProbe,
    FilesProbe,
    Operation,
    QdrantProbe,
    SqlProbe,
    Store,
    StoreProbe,
    Target,
)
from memlife.targets import files, http, sql, stores
from memlife.targets.http import MissingSecret, TargetError

log = get_logger("memlife.activities.target")
T = TypeVar("T")

READ_CONCURRENCY = 8
EXCERPT_CHARS = 160


HEARTBEAT_EVERY = 2.0  # seconds; the workflows' heartbeat timeout is a few times this


@contextlib.asynccontextmanager
async def heartbeating(details: Callable[[], Any]) -> AsyncIterator[None]:
    """Heartbeat in the background while the block runs, so that a worker that dies is
    noticed within the heartbeat timeout even while one request is slow."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY)
            activity.heartbeat(details())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _application_error(error: TargetError) -> ApplicationError:
    return ApplicationError(str(error), type=type(error).__name__,
                            non_retryable=not error.retryable)


async def call_with_retries(target: Target, operation: Operation, variables: dict[str, Any],
                            scenario_now: str) -> tuple[http.Response, int]:
    """One request, retried in place with exponential backoff while the error is
    retryable, up to the target's max_attempts. Returns (response, attempts)."""
    delay = 0.2
    for attempt in range(1, target.max_attempts + 1):
        try:
            return await http.call(target, operation, variables,
                                   scenario_now=scenario_now), attempt
        except TargetError as error:
            if not error.retryable or attempt == target.max_attempts:
                raise
            log.info("target call retried", error=str(error), attempt=attempt)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


# How one request is sent: once (Temporal retries the activity) or retried in place (a
# batch, whose other items must not be sent again).
Send = Callable[[Target, Operation, dict[str, Any], str], Awaitable[http.Response]]


async def send_once(target: Target, operation: Operation, variables: dict[str, Any],
                    scenario_now: str) -> http.Response:
    return await http.call(target, operation, variables, scenario_now=scenario_now)


async def send_retrying(target: Target, operation: Operation, variables: dict[str, Any],
                        scenario_now: str) -> http.Response:
    return (await call_with_retries(target, operation, variables, scenario_now))[0]


@activity.defn(name=contracts.REGISTER_TENANT)
async def register_tenant(request: RegisterRequest) -> RegisterResult:
    try:
        return await _register(request, send_once)
    except TargetError as error:
        log.warning("register failed", target=request.target.name, error=str(error),
                    attempt=activity.info().attempt)
        raise _application_error(error) from None


async def _register(request: RegisterRequest, send: Send) -> RegisterResult:
    steps = request.target.operations.register_steps()
    wall_time = datetime.now(UTC)
    user_id = request.phone  # the target identifies tenants by phone until it says otherwise
    latency_ms, status = 0.0, 0
    for operation in steps:  # in order: e.g. create the user, then its session
        response = await send(request.target, operation,
                              {"phone": request.phone, "tenant_alias": request.tenant_alias,
                               "user_id": user_id}, request.scenario_now)
        user_id = str(response.fields.get("user_id", user_id))
        latency_ms += response.latency_ms
        status = response.status
    return RegisterResult(user_id=user_id, latency_ms=latency_ms, status=status,
                          wall_time=wall_time)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return json.dumps(value, ensure_ascii=False)


@activity.defn(name=contracts.CONVERSE)
async def converse(request: ConverseRequest) -> list[Reply]:
    """Send a tenant's messages in order; return one Reply per message."""
    info = activity.info()
    done = [Reply.model_validate(item) for item in (info.heartbeat_details[0]
                                                   if info.heartbeat_details else [])]

    def progress() -> list[dict[str, Any]]:
        return [r.model_dump(mode="json") for r in done]

    async with heartbeating(progress):
        await _send_all(request, done)
    return done


async def _send_all(request: ConverseRequest, done: list[Reply],
                    beat_each: bool = True) -> None:
    operations = request.target.operations
    questions = set(request.questions)
    for index in range(len(done), len(request.messages)):
        # A memory API answers questions elsewhere (search) than it takes statements (add).
        operation = (operations.ask if index in questions and operations.ask is not None
                     else operations.say)
        variables = {"phone": request.phone, "user_id": request.user_id,
                     "message": request.messages[index]}
        wall_time = datetime.now(UTC)
        try:
            response, attempts = await call_with_retries(request.target, operation, variables,
                                                         request.scenario_now)
            context = response.fields.get("context")
            reply = Reply(index=index, reply=_text(response.fields["reply"]),
                          context=None if context is None else _text(context),
                          stages=response.timings, cost=_number(response.fields.get("cost")),
                          tokens=_whole(response.fields.get("tokens")),
                          http_status=response.status, latency_ms=response.latency_ms,
                          attempts=attempts, wall_time=wall_time)
        except MissingSecret as error:
            raise _application_error(error) from None
        except TargetError as error:
            reply = Reply(index=index, status="target-error", http_status=error.status,
                          error=f"{type(error).__name__}: {error}", wall_time=wall_time,
                          attempts=request.target.max_attempts if error.retryable else 1)
        done.append(reply)
        if beat_each:
            activity.heartbeat([r.model_dump(mode="json") for r in done])


def _number(value: Any) -> float | None:
    """A reported cost: a number, or a numeric string; anything else is not a cost."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _whole(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _deletion_state(operation: DeleteOperation, response: http.Response,
                    wall_time: datetime, synchronous_if_silent: bool) -> DeletionState:
    status = response.fields.get("status")
    status_text = None if status is None else str(status)
    done = status_text in operation.done_values if status_text is not None else (
        synchronous_if_silent)
    return DeletionState(
        status=status_text,
        deletion_id=None if response.fields.get("deletion_id") is None else str(
            response.fields["deletion_id"]),
        done=done, failed=status_text in operation.failed_values,
        http_status=response.status, latency_ms=response.latency_ms, wall_time=wall_time,
    )


async def _as_activity(work: Awaitable[T]) -> T:
    """A single-call activity: a target error becomes an ApplicationError, retryable or
    not, for Temporal's RetryPolicy (a batch keeps it as the item's error instead)."""
    try:
        return await work
    except TargetError as error:
        raise _application_error(error) from None


async def _erasure_call(request: DeleteRequest | ForgetRequest, name: str,
                        variables: dict[str, Any], send: Send,
                        ) -> tuple[Any, http.Response, datetime]:
    """One erasure-related request (delete, status, forget) by the operation's name."""
    operation = getattr(request.target.operations, name)
    if operation is None:
        raise ApplicationError(f"the target file has no operations.{name}",
                               type="TargetConfigError", non_retryable=True)
    wall_time = datetime.now(UTC)
    response = await send(request.target, operation,
                          {"phone": request.phone, "user_id": request.user_id, **variables},
                          request.scenario_now)
    return operation, response, wall_time


@activity.defn(name=contracts.DELETE_TENANT)
async def delete_tenant(request: DeleteRequest) -> DeletionState:
    return await _as_activity(_delete(request, send_once))


async def _delete(request: DeleteRequest, send: Send) -> DeletionState:
    operation, response, wall_time = await _erasure_call(request, "delete_tenant", {}, send)
    # Without a status operation, a 2xx answer is all the confirmation there is.
    silent_is_done = request.target.operations.deletion_status is None
    return _deletion_state(operation, response, wall_time, silent_is_done)


@activity.defn(name=contracts.DELETION_STATUS)
async def deletion_status(request: DeleteRequest) -> DeletionState:
    return await _as_activity(_deletion_status(request, send_once))


async def _deletion_status(request: DeleteRequest, send: Send) -> DeletionState:
    operation, response, wall_time = await _erasure_call(
        request, "deletion_status", {"deletion_id": request.deletion_id or ""}, send)
    return _deletion_state(operation, response, wall_time, False)


@activity.defn(name=contracts.FORGET_FACT)
async def forget_fact(request: ForgetRequest) -> DeletionState:
    """Erase one fact through the target's `forget` operation (a 2xx means done)."""
    return await _as_activity(_forget(request, send_once))


async def _forget(request: ForgetRequest, send: Send) -> DeletionState:
    _, response, wall_time = await _erasure_call(
        request, "forget", {"value": request.value, "domain": request.domain}, send)
    status = response.fields.get("status")
    return DeletionState(status=None if status is None else str(status), done=True,
                         http_status=response.status, latency_ms=response.latency_ms,
                         wall_time=wall_time)


async def _read_store(request: InspectRequest, store: Store, mode: str, key: str,
                      limit: asyncio.Semaphore,
                      watch_normalized: list[str]) -> StoreRead:
    assert store.probe is not None
    probe = store.probe
    async with limit:
        try:
            if isinstance(probe, SqlProbe):
                raw, total, latency_ms = await _sql_read(probe, mode, key, request.max_records)
            elif isinstance(probe, FilesProbe):
                raw, total, latency_ms = await _files_read(probe, key, request.max_records)
            elif isinstance(probe, QdrantProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.qdrant_read, probe, mode, key, request.max_records)
            elif isinstance(probe, FalkorDBProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.falkordb_read, probe, mode, key, request.max_records)
            elif isinstance(probe, ChromaProbe):
                raw, total, latency_ms = await asyncio.to_thread(
                    stores.chroma_read, probe, mode, key, request.max_records)
            else:
                raw, latency_ms = await _http_read(request, store, probe, mode, key)
                total = len(raw)
        except MissingSecret as error:  # the worker is misconfigured: no read can succeed
            raise _application_error(error) from None
        except (TargetError, KeyError) as error:
            reason = (f"no records at {getattr(probe, 'records', '?')!r}"
                      if isinstance(error, KeyError) else f"{type(error).__name__}: {error}")
            return StoreRead(store=store.name, mode=mode, key=key, status="error",
                             error=reason)
    views = []
    for record in raw[: request.max_records]:
        def field(pointer: str | None, _record: Any = record) -> Any:
            if pointer is None:
                return None
            try:
                return http.extract(_record, pointer)
            except KeyError:
                return None

        content = _text(field(probe.content) if field(probe.content) is not None else record)
        normalized = normalize(content)
        deleted = field(probe.deleted)
        tenant = field(probe.tenant_field)
        record_id = field(probe.id)
        matched = [i for i, text in enumerate(watch_normalized) if text and text in normalized]
        own = tenant is None or str(tenant) in request.identities
        if not matched and own and not request.keep_unmatched:
            continue
        views.append(StoreRecordView(
            id=None if record_id is None else str(record_id),
            tenant_id=None if tenant is None else str(tenant),
            deleted=None if probe.deleted is None else bool(deleted),
            matches=matched,
            # Evidence only where a watched value is: the rest would only weigh on history.
            excerpt=content[:EXCERPT_CHARS] if matched else "",
        ))
    return StoreRead(store=store.name, mode=mode, key=key, total=total, records=views,
                     latency_ms=latency_ms)


async def _http_read(request: InspectRequest, store: Store, probe: StoreProbe, mode: str,
                     key: str) -> tuple[list[Any], float]:
    operation, variables = {
        "scope": (probe.scope, {"user_id": key}),
        "needle": (probe.needle, {"needle": key}),
        "needles": (probe.needles, {"needles": key.split("\n")}),
    }[mode]
    assert operation is not None
    response, _ = await call_with_retries(request.target, operation, variables,
                                          request.scenario_now)
    raw = http.extract(response.data, probe.records)
    if not isinstance(raw, list):
        raise http.TargetBadResponse(
            f"{probe.records!r} is not a list of records in the {store.name} response")
    return raw, response.latency_ms


async def _sql_read(probe: SqlProbe, mode: str, key: str,
                    max_records: int) -> tuple[list[Any], int, float]:
    """One parameterized SELECT in a read-only transaction, off the event loop."""
    query, parameters = ((probe.scope, {"user_id": key}) if mode == "scope"
                         else (probe.needle, {"needle": key}))
    return await asyncio.to_thread(sql.read_rows, probe.url_env, query, parameters,
                                   max_records)


async def _files_read(probe: FilesProbe, key: str,
                      max_records: int) -> tuple[list[Any], int, float]:
    """Every file under the store's data directory, byte by byte, off the event loop."""
    def scan() -> tuple[list[Any], int, float]:
        root = files.data_directory(probe.path, probe.path_env)
        return files.scan(root, probe.include, key.split("\n"), list(probe.encodings),
                          max_records)

    return await asyncio.to_thread(scan)


@activity.defn(name=contracts.INSPECT_STORES)
async def inspect_stores(request: InspectRequest) -> list[StoreRead]:
    """Read every probed store by tenant scope (each identity) and by needle (each value),
    with bounded concurrency. A read that fails is returned as an error, never as empty."""
    async with heartbeating(lambda: None):
        return await _inspect(request)


async def _inspect(request: InspectRequest) -> list[StoreRead]:
    limit = asyncio.Semaphore(READ_CONCURRENCY)
    watch_normalized = [normalize(text) for text in request.watch]
    reads = []
    for store in request.target.stores:
        if store.probe is None:
            continue
        erased = request.needles if request.erased is None else request.erased
        if isinstance(store.probe, FilesProbe):
            # Bytes on disk have no tenant: one scan for the values that must be gone.
            if erased:
                reads.append(_read_store(request, store, "needles", "\n".join(erased),
                                         limit, watch_normalized))
            continue
        if isinstance(store.probe, SqlProbe) and store.probe.scope is None:
            # No tenant column: only the values that must be gone are looked for.
            reads += [_read_store(request, store, "needle", needle, limit, watch_normalized)
                      for needle in erased]
            continue
        reads += [_read_store(request, store, "scope", identity, limit, watch_normalized)
                  for identity in request.identities]
        # One read for all the values where the probe can (SQL, Cypher: one per value).
        if request.needles and (isinstance(store.probe, QdrantProbe | ChromaProbe) or (
                isinstance(store.probe, StoreProbe) and store.probe.needles is not None)):
            reads.append(_read_store(request, store, "needles", "\n".join(request.needles),
                                     limit, watch_normalized))
        else:
            reads += [_read_store(request, store, "needle", needle, limit, watch_normalized)
                      for needle in request.needles]
    return list(await asyncio.gather(*reads))


# -- batches: the cohort workflow's one activity per step --------------------------------

# Items of a batch in flight at once; the target's own max_concurrency bounds the requests.
BATCH_ITEMS_IN_FLIGHT = 64

_REQUEST_TYPES: dict[str, type[Any]] = {
    "register": RegisterRequest, "converse": ConverseRequest, "delete": DeleteRequest,
    "deletion-status": DeleteRequest, "forget": ForgetRequest, "inspect": InspectRequest,
}


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value.model_dump(mode="json")


async def _batch_item(kind: str, request: Any, partial: list[Reply]) -> Any:
    if kind == "register":
        return await _register(request, send_retrying)
    if kind == "converse":
        await _send_all(request, partial, beat_each=False)
        return partial
    if kind == "delete":
        return await _delete(request, send_retrying)
    if kind == "deletion-status":
        return await _deletion_status(request, send_retrying)
    if kind == "forget":
        return await _forget(request, send_retrying)
    return await _inspect(request)


@activity.defn(name=contracts.TARGET_BATCH)
async def target_batch(batch: TargetBatch) -> list[BatchOutcome]:
    """Many target calls of one kind at once: each request retried in place, each item's
    error returned as data. Finished items (and a conversation's answered messages) are
    heartbeated, so a retried batch sends nothing twice."""
    saved = activity.info().heartbeat_details
    state: dict[str, Any] = saved[0] if saved else {}
    # Each finished item is serialized once, when it finishes: a heartbeat sends what is
    # already there instead of dumping every result again every two seconds.
    done_json: dict[str, Any] = dict(state.get("done", {}))
    done = {int(k): BatchOutcome.model_validate(v) for k, v in done_json.items()}
    partial = {int(k): [Reply.model_validate(r) for r in v]
               for k, v in state.get("partial", {}).items()}
    request_type = _REQUEST_TYPES[batch.kind]
    limit = asyncio.Semaphore(BATCH_ITEMS_IN_FLIGHT)
    # Store reads change nothing: a retried inspection reads again, and its (large) results
    # stay out of the heartbeats. Everything else resumes where it stopped.
    resumable = batch.kind != "inspect"

    def progress() -> dict[str, Any]:
        if not resumable:
            return {}
        return {"done": done_json,
                "partial": {str(k): [r.model_dump(mode="json") for r in v]
                            for k, v in partial.items() if v}}

    async def run(index: int, item: dict[str, Any]) -> None:
        if index in done:
            return
        request = request_type.model_validate({**item, "target": batch.target})
        async with limit:
            try:
                value = await _batch_item(batch.kind, request, partial.setdefault(index, []))
                outcome = BatchOutcome(value=_jsonable(value))
            except MissingSecret as error:  # the same for every item: the batch fails
                raise _application_error(error) from None
            except TargetError as error:
                outcome = BatchOutcome(ok=False, error=f"{type(error).__name__}: {error}")
            done[index] = outcome
            if resumable:
                done_json[str(index)] = outcome.model_dump(mode="json")
            partial.pop(index, None)

    async with heartbeating(progress):
        await asyncio.gather(*(run(i, item) for i, item in enumerate(batch.items)))
    return [done[i] for i in range(len(batch.items))]
