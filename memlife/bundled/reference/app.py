"""HTTP surface of the reference target (FastAPI).

Conversation surface (what a product exposes):
  POST   /v1/users                  {phone}            -> {user_id, created}
  POST   /v1/preview                {phone, message}   -> {user_id, reply, context}
  DELETE /v1/users/{user_id}                           -> {deletion_id, status} (async)
  GET    /v1/users/{user_id}/deletion                  -> {deletion_id, status, ...}
  POST   /v1/users/{user_id}/forget {value}            -> {status}   (one fact)
Admin read surface (what memlife's store probes read; read-only):
  GET    /admin/stores                                 -> {stores: [{name, role}]}
  GET    /admin/stores/{store}/records?tenant_id=ID    -> {records: [...]}
  GET    /admin/stores/{store}/search?q=NEEDLE[&q=…]   -> {records: [...]}  (all tenants;
                                                        records holding any of the needles)
  GET    /health
"""

from __future__ import annotations

import hmac
import time
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from memlife.bundled.reference.faults import FAULTS
from memlife.bundled.reference.schema import PRICE_PER_MILLION, STORES
from memlife.bundled.reference.store import ReferenceRuntime, UnknownStore, UnknownTenant

NOW_HEADER = "X-Memlife-Now"


# Module level: with postponed annotations FastAPI resolves this name from the globals.
NowHeader = Annotated[str | None, Header(alias=NOW_HEADER)]


class RegisterRequest(BaseModel):
    phone: str = Field(min_length=4, max_length=32)


class ForgetRequest(BaseModel):
    value: str = Field(min_length=1, max_length=400)


class PreviewRequest(BaseModel):
    phone: str = Field(min_length=4, max_length=32)
    message: str = Field(min_length=1, max_length=4000)


def _clock(header_value: str | None) -> datetime:
    """The scenario clock when memlife sends one (skipped or compressed time), else real time."""
    if header_value:
        try:
            parsed = datetime.fromisoformat(header_value.replace("Z", "+00:00"))
        except ValueError:
            raise HTTPException(400, f"{NOW_HEADER} is not ISO-8601: {header_value!r}") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.now(UTC)


class ServerTotalTiming:
    """Pure ASGI middleware: every response carries `Server-Timing: total;dur=…`, the time
    from the request's arrival in the application to its response — what memlife's
    recorded latency is compared with (the rest is transport and the client)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.perf_counter()

        async def timed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                total = (time.perf_counter() - arrived) * 1000
                message = {**message, "headers": [*message.get("headers", []), (
                    b"server-timing", f"total;dur={total:.3f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed_send)


def create_app(runtime: ReferenceRuntime, service_time: float = 0.0,
               api_key: str | None = None) -> FastAPI:
    """`service_time` (seconds) simulates a model's thinking time on every conversation
    turn, outside the runtime's lock (as an LLM call would be). With `api_key`, every
    endpoint but /health requires `Authorization: Bearer <api_key>`."""
    app = FastAPI(title="memlife reference target", version="1")
    app.add_middleware(ServerTotalTiming)

    if api_key is not None:
        expected = f"Bearer {api_key}".encode()

        @app.middleware("http")
        async def require_key(request: Request, call_next: Any) -> Any:
            given = request.headers.get("authorization", "").encode()
            if request.url.path != "/health" and not hmac.compare_digest(given, expected):
                return JSONResponse({"detail": "missing or wrong API key"}, status_code=401)
            return await call_next(request)

    @app.get("/health")
    def health() -> dict[str, object]:
        return {"status": "ok", "faults": sorted(runtime.faults),
                "retrieval": runtime.retrieval}

    @app.post("/v1/users")
    def register(body: RegisterRequest, now: NowHeader = None) -> dict[str, object]:
        """Register a phone; a phone whose user was deleted registers as a new user."""
        user_id, created = runtime.register(body.phone, _clock(now))
        return {"user_id": user_id, "created": created}

    @app.post("/v1/preview")
    def preview(body: PreviewRequest, response: Response,
                now: NowHeader = None) -> dict[str, object]:
        """One turn: a statement is remembered, a question answered. `context` is the
        retrieval context the answer was assembled from (top-k memories); `usage` what a
        hosted model would have been billed; Server-Timing the time of each stage."""
        thinking = time.perf_counter()
        if service_time:
            time.sleep(service_time)
        think_ms = (time.perf_counter() - thinking) * 1000
        try:
            user_id, answer = runtime.converse(body.phone, body.message, _clock(now))
        except UnknownTenant:
            raise HTTPException(404, "phone is not registered") from None
        timings = {**answer.timings, "think": think_ms}
        response.headers["Server-Timing"] = ", ".join(
            f"{name};dur={value:.3f}" for name, value in timings.items())
        prompt = len(body.message.split()) + sum(len(c.split()) for c in answer.context)
        completion = len(answer.reply.split())
        cost = (prompt * PRICE_PER_MILLION["prompt"]
                + completion * PRICE_PER_MILLION["completion"]) / 1_000_000
        return {"user_id": user_id, "reply": answer.reply, "context": answer.context,
                "layer": answer.layer, "retrieval": runtime.retrieval,
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion, "cost_usd": round(cost, 9)}}

    @app.delete("/v1/users/{user_id}", status_code=202)
    def delete_user(user_id: str, now: NowHeader = None) -> dict[str, str]:
        """Request erasure; poll /v1/users/{user_id}/deletion until `completed`."""
        try:
            return runtime.delete_tenant(user_id, _clock(now))
        except UnknownTenant:
            raise HTTPException(404, "unknown user") from None

    @app.post("/v1/users/{user_id}/forget")
    def forget(user_id: str, body: ForgetRequest, now: NowHeader = None) -> dict[str, str]:
        """Forget one fact of an active user (every record that holds the value)."""
        try:
            return runtime.forget(user_id, body.value, _clock(now))
        except UnknownTenant:
            raise HTTPException(404, "unknown or deleted user") from None

    @app.get("/v1/users/{user_id}/deletion")
    def deletion(user_id: str, now: NowHeader = None) -> dict[str, str | None]:
        try:
            return runtime.deletion_status(user_id, _clock(now))
        except UnknownTenant:
            raise HTTPException(404, "no deletion requested for this user") from None

    @app.get("/admin/stores")
    def stores() -> dict[str, object]:
        return {"stores": [{"name": name, "role": role} for name, role in STORES.items()],
                "faults": {name: FAULTS[name] for name in sorted(runtime.faults)}}

    @app.get("/admin/stores/{store}/records")
    def records(store: str, tenant_id: Annotated[str, Query(min_length=1)],
                now: NowHeader = None) -> dict[str, object]:
        try:
            return {"records": runtime.store_records(store, _clock(now), tenant_id=tenant_id)}
        except UnknownStore:
            raise HTTPException(404, f"unknown store {store!r}") from None

    @app.get("/admin/stores/{store}/search")
    def search(store: str, q: Annotated[list[str], Query()],
               now: NowHeader = None) -> dict[str, object]:
        """Records holding the needle; with several `q`, any of them (each record once)."""
        if not q or not all(q):
            raise HTTPException(422, "q: one or more non-empty needles")
        try:
            return {"records": runtime.search_records(store, _clock(now), q)}
        except UnknownStore:
            raise HTTPException(404, f"unknown store {store!r}") from None

    return app
