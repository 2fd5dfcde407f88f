"""HTTP surface of the reference target (Starlette: light to import and to serve, since
every `memlife run` without --target starts one).

Conversation surface (what a product exposes):
  POST   /v1/users                  {phone, namespace?} -> {user_id, created}
  POST   /v1/preview                {phone, message}   -> {user_id, reply, context}
  DELETE /v1/users/{user_id}                           -> {deletion_id, status} (async)
  GET    /v1/users/{user_id}/deletion                  -> {deletion_id, status, ...}
  POST   /v1/users/{user_id}/forget {value}            -> {status}   (one fact)
Shared spaces (what is said inside one is the space's; members only):
  POST   /v1/spaces                 {phone, name}      -> {space_id, status}
  POST   /v1/spaces/{space_id}/join {phone}            -> {space_id, status}
  POST   /v1/spaces/{space_id}/leave {phone}           -> {space_id, status}
  DELETE /v1/spaces/{space_id}?phone=P                 -> {space_id, status}
  POST   /v1/spaces/{space_id}/messages {phone, message} -> {user_id, reply, context}
                                         (with --refuse: 403 non-member, 410 space deleted)
Maintenance (what an operator or a schedule runs):
  POST   /admin/reindex             {tenant_id}        -> {status, records}  (rebuild memory)
Admin read surface (what memlife's store probes read; read-only):
  GET    /admin/stores                                 -> {stores: [{name, role}]}
  GET    /admin/stores/{store}/records?tenant_id=ID    -> {records: [...]}
  GET    /admin/stores/{store}/search?q=NEEDLE[&q=…]   -> {records: [...]}  (all tenants;
                                                        records holding any of the needles)
  GET    /health
"""

from __future__ import annotations

import asyncio
import hmac
import sys
import time
from asyncio import to_thread
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memlife.bundled.reference.faults import FAULTS
from memlife.bundled.reference.schema import PRICE_PER_MILLION, STORES
from memlife.bundled.reference.spaces import Refused, UnknownSpace
from memlife.bundled.reference.store import ReferenceRuntime, UnknownStore, UnknownTenant
from memlife.rules.tracing import trace_ids

NOW_HEADER = "X-Memlife-Now"
RUN_HEADER = "X-Memlife-Run"
_RUN_MAX = 200
M = TypeVar("M", bound=BaseModel)


class RegisterRequest(BaseModel):
    phone: str = Field(min_length=4, max_length=32)
    namespace: str = Field(default="", max_length=200)  # the tenant's name, e.g. "acme"


class ForgetRequest(BaseModel):
    value: str = Field(min_length=1, max_length=400)
    # Every value the fact has had, current and superseded (a target file's `{values}`):
    # a store that keeps superseded values must forget those too. The reference target's
    # forget tombstones earlier values itself and reads `value` only.
    values: list[str] = Field(default_factory=list, max_length=100)


class ReindexRequest(BaseModel):
    tenant_id: str = Field(min_length=1, max_length=200)


class SpaceRequest(BaseModel):
    phone: str = Field(min_length=4, max_length=32)
    name: str = Field(default="", max_length=200)


class PreviewRequest(BaseModel):
    phone: str = Field(min_length=4, max_length=32)
    message: str = Field(min_length=1, max_length=4000)


def _clock(request: Request) -> datetime:
    """The scenario clock when memlife sends one (skipped or compressed time), else real time."""
    header_value = request.headers.get(NOW_HEADER)
    if header_value:
        try:
            parsed = datetime.fromisoformat(header_value.replace("Z", "+00:00"))
        except ValueError:
            raise HTTPException(400, f"{NOW_HEADER} is not ISO-8601: {header_value!r}") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.now(UTC)


def _run(request: Request) -> str:
    """The run a request belongs to: its background work is due on that run's clock
    (docs/simulated-targets.md). Requests that name no run share one clock."""
    run = request.headers.get(RUN_HEADER, "")
    if len(run) > _RUN_MAX or not run.isprintable():
        raise HTTPException(
            400, f"{RUN_HEADER} must be printable and at most {_RUN_MAX} characters"
        )
    return run


class InvalidBody(Exception):
    """A request body that is not what the endpoint takes: 422 with pydantic's list."""

    def __init__(self, errors: list[Any]) -> None:
        super().__init__("invalid body")
        self.errors = errors


async def _body(request: Request, model: type[M]) -> M:
    """The request's JSON body as `model`."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as error:
        raise InvalidBody(
            error.errors(include_url=False, include_context=False, include_input=False)
        ) from None


async def _error_response(request: Request, error: Exception) -> Response:
    """Errors as `{"detail": …}`, the shape HTTP APIs of this kind answer with."""
    if isinstance(error, InvalidBody):
        return JSONResponse({"detail": error.errors}, status_code=422)
    assert isinstance(error, HTTPException)
    return JSONResponse({"detail": error.detail}, status_code=error.status_code)


class ServerTotalTiming:
    """Pure ASGI middleware: every response carries `Server-Timing: total;dur=…`, the time
    from the request's arrival in the application to its response — what memlife's
    recorded latency is compared with (the rest is transport and the client).

    With `access_log`, also one line per request on standard output with the trace id its
    `traceparent` carried, so that a finding's trace id leads to the request here
    (docs/tracing.md): `POST /v1/preview 200 2.1ms trace=4bf92f3577b34da6a3ce929d0e0e4736`."""

    def __init__(self, app: Any, access_log: bool = False) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.perf_counter()
        status, total = 500, 0.0  # what the client sees if the application fails first

        async def timed_send(message: Any) -> None:
            nonlocal status, total
            if message["type"] == "http.response.start":
                status, total = message["status"], (time.perf_counter() - arrived) * 1000
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (b"server-timing", f"total;dur={total:.3f}".encode()),
                    ],
                }
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            if self.access_log:
                ids = trace_ids(dict(scope["headers"]).get(b"traceparent", b"").decode("latin-1"))
                sys.stdout.write(
                    f"{scope['method']} {scope['path']} {status} {total:.1f}ms "
                    f"trace={ids[0] if ids else '-'}\n"
                )
                sys.stdout.flush()


class RequireKey:
    """Pure ASGI middleware: every path but /health needs `Authorization: Bearer <key>`."""

    def __init__(self, app: Any, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != "/health":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse({"detail": "missing or wrong API key"}, status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    runtime: ReferenceRuntime,
    service_time: float = 0.0,
    api_key: str | None = None,
    access_log: bool = False,
) -> Any:
    """`service_time` (seconds) simulates a model's thinking time on every conversation
    turn, outside the runtime's lock (as an LLM call would be). With `api_key`, every
    endpoint but /health requires `Authorization: Bearer <api_key>`. With `access_log`, a
    line per request on standard output (ServerTotalTiming).

    The runtime's work (a few milliseconds of SQLite under one lock) runs in a thread, off
    the event loop: a request that waits for the lock then waits inside the application,
    where `Server-Timing: total` counts it, and the loop stays free to take requests in."""

    def answers(
        endpoint: Callable[[Request], Awaitable[Any]], status: int = 200
    ) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint that returns data, answered as JSON with `status`."""

        async def respond(request: Request) -> Response:
            result = await endpoint(request)
            if isinstance(result, Response):
                return result
            return JSONResponse(result, status_code=status)

        return respond

    async def health(request: Request) -> dict[str, object]:
        return {
            "status": "ok",
            "faults": sorted(runtime.faults),
            "retrieval": runtime.retrieval,
            "refuse": runtime.refuse,
        }

    async def register(request: Request) -> dict[str, object]:
        """Register a phone; a phone whose user was deleted registers as a new user."""
        body = await _body(request, RegisterRequest)
        user_id, created = await to_thread(
            runtime.register, body.phone, _clock(request), _run(request), body.namespace
        )
        return {"user_id": user_id, "created": created}

    async def preview(request: Request) -> Response:
        """One turn: a statement is remembered, a question answered. `context` is the
        retrieval context the answer was assembled from (top-k memories); `usage` what a
        hosted model would have been billed; Server-Timing the time of each stage."""
        body = await _body(request, PreviewRequest)
        now = _clock(request)
        thinking = time.perf_counter()
        if service_time:
            await asyncio.sleep(service_time)
        think_ms = (time.perf_counter() - thinking) * 1000
        try:
            user_id, answer = await to_thread(
                runtime.converse, body.phone, body.message, now, _run(request)
            )
        except UnknownTenant:
            raise HTTPException(404, "phone is not registered") from None
        timings = {**answer.timings, "think": think_ms}
        prompt = len(body.message.split()) + sum(len(c.split()) for c in answer.context)
        completion = len(answer.reply.split())
        cost = (
            prompt * PRICE_PER_MILLION["prompt"] + completion * PRICE_PER_MILLION["completion"]
        ) / 1_000_000
        return JSONResponse(
            {
                "user_id": user_id,
                "reply": answer.reply,
                "context": answer.context,
                "layer": answer.layer,
                "retrieval": runtime.retrieval,
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "cost_usd": round(cost, 9),
                },
            },
            headers={
                "Server-Timing": ", ".join(
                    f"{name};dur={value:.3f}" for name, value in timings.items()
                )
            },
        )

    async def delete_user(request: Request) -> dict[str, str]:
        """Request erasure; poll /v1/users/{user_id}/deletion until `completed`."""
        try:
            return await to_thread(
                runtime.delete_tenant,
                request.path_params["user_id"],
                _clock(request),
                _run(request),
            )
        except UnknownTenant:
            raise HTTPException(404, "unknown user") from None

    async def forget(request: Request) -> dict[str, str]:
        """Forget one fact of an active user (every record that holds the value)."""
        body = await _body(request, ForgetRequest)
        try:
            return await to_thread(
                runtime.forget,
                request.path_params["user_id"],
                body.value,
                _clock(request),
                _run(request),
            )
        except UnknownTenant:
            raise HTTPException(404, "unknown or deleted user") from None

    async def reindex(request: Request) -> dict[str, object]:
        """Rebuild one tenant's vector memory from its checkpoints (maintenance.py)."""
        body = await _body(request, ReindexRequest)
        try:
            return await to_thread(runtime.reindex, body.tenant_id, _clock(request), _run(request))
        except UnknownTenant:
            raise HTTPException(404, "unknown user") from None

    async def create_space(request: Request) -> dict[str, str]:
        body = await _body(request, SpaceRequest)
        try:
            return await to_thread(
                runtime.create_space,
                body.phone,
                body.name or "space",
                _clock(request),
                _run(request),
            )
        except UnknownTenant:
            raise HTTPException(404, "phone is not registered") from None

    def membership(action: str) -> Callable[[Request], Awaitable[dict[str, str]]]:
        async def change(request: Request) -> dict[str, str]:
            body = await _body(request, SpaceRequest)
            try:
                return await to_thread(
                    runtime.change_membership,
                    request.path_params["space_id"],
                    body.phone,
                    action,
                    _clock(request),
                    _run(request),
                )
            except (UnknownTenant, UnknownSpace):
                raise HTTPException(404, "unknown phone or space") from None

        return change

    async def delete_space(request: Request) -> dict[str, str]:
        phone = request.query_params.get("phone", "")
        try:
            return await to_thread(
                runtime.delete_space,
                request.path_params["space_id"],
                phone,
                _clock(request),
                _run(request),
            )
        except (UnknownTenant, UnknownSpace):
            raise HTTPException(404, "unknown phone or space") from None
        except PermissionError:
            raise HTTPException(403, "only a member may delete a space") from None

    async def space_message(request: Request) -> dict[str, object]:
        """One message inside a space: the space's statement, or a question answered from
        the space's memory for its members (anyone else is told it has no access)."""
        body = await _body(request, PreviewRequest)
        try:
            user_id, answer = await to_thread(
                runtime.space_say,
                request.path_params["space_id"],
                body.phone,
                body.message,
                _clock(request),
                _run(request),
            )
        except (UnknownTenant, UnknownSpace):
            raise HTTPException(404, "unknown phone or space") from None
        except Refused as refused:
            raise HTTPException(refused.status, str(refused)) from None
        return {"user_id": user_id, "reply": answer.reply, "context": answer.context}

    async def deletion(request: Request) -> dict[str, str | None]:
        try:
            return await to_thread(
                runtime.deletion_status,
                request.path_params["user_id"],
                _clock(request),
                _run(request),
            )
        except UnknownTenant:
            raise HTTPException(404, "no deletion requested for this user") from None

    async def stores(request: Request) -> dict[str, object]:
        return {
            "stores": [{"name": name, "role": role} for name, role in STORES.items()],
            "faults": {name: FAULTS[name] for name in sorted(runtime.faults)},
        }

    async def records(request: Request) -> dict[str, object]:
        tenant_id = request.query_params.get("tenant_id")
        if not tenant_id:
            raise HTTPException(422, "tenant_id: a non-empty tenant id is required")
        try:
            return {
                "records": await to_thread(
                    runtime.store_records,
                    request.path_params["store"],
                    _clock(request),
                    tenant_id=tenant_id,
                    run=_run(request),
                )
            }
        except UnknownStore:
            raise HTTPException(404, f"unknown store {request.path_params['store']!r}") from None

    async def search(request: Request) -> dict[str, object]:
        """Records holding the needle; with several `q`, any of them (each record once)."""
        needles = request.query_params.getlist("q")
        if not needles or not all(needles):
            raise HTTPException(422, "q: one or more non-empty needles")
        try:
            return {
                "records": await to_thread(
                    runtime.search_records,
                    request.path_params["store"],
                    _clock(request),
                    needles,
                    _run(request),
                )
            }
        except UnknownStore:
            raise HTTPException(404, f"unknown store {request.path_params['store']!r}") from None

    routes = [
        Route("/health", answers(health), methods=["GET"]),
        Route("/v1/users", answers(register), methods=["POST"]),
        Route("/v1/preview", answers(preview), methods=["POST"]),
        Route("/v1/users/{user_id}", answers(delete_user, 202), methods=["DELETE"]),
        Route("/v1/users/{user_id}/forget", answers(forget), methods=["POST"]),
        Route("/v1/users/{user_id}/deletion", answers(deletion), methods=["GET"]),
        Route("/v1/spaces", answers(create_space, 201), methods=["POST"]),
        Route("/v1/spaces/{space_id}/join", answers(membership("join")), methods=["POST"]),
        Route("/v1/spaces/{space_id}/leave", answers(membership("leave")), methods=["POST"]),
        Route("/v1/spaces/{space_id}", answers(delete_space), methods=["DELETE"]),
        Route("/v1/spaces/{space_id}/messages", answers(space_message), methods=["POST"]),
        Route("/admin/reindex", answers(reindex), methods=["POST"]),
        Route("/admin/stores", answers(stores), methods=["GET"]),
        Route("/admin/stores/{store}/records", answers(records), methods=["GET"]),
        Route("/admin/stores/{store}/search", answers(search), methods=["GET"]),
    ]
    app: Any = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _error_response, InvalidBody: _error_response},
    )
    if api_key is not None:
        app = RequireKey(app, api_key)
    return ServerTotalTiming(app, access_log)
