"""HTTP surface of the realstack and mem0 targets: the reference target's conversation
surface (graphiti's too), and a read of Mem0's memories (the one store memlife cannot open
itself while the target holds it).

  POST   /v1/users                  {phone}            -> {user_id, created}
  POST   /v1/preview                {phone, message}   -> {user_id, reply, context, layer}
  DELETE /v1/users/{user_id}                           -> {deletion_id, status} (synchronous)
  GET    /v1/users/{user_id}/deletion                  -> {deletion_id, status, ...}
  POST   /v1/users/{user_id}/forget {value}            -> {status}
  GET    /admin/memory/records?tenant_id=ID            -> {records: [...]}
  GET    /admin/memory/search?q=NEEDLE[&q=…]           -> {records: [...]} (all tenants)
  GET    /health
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Protocol

from fastapi import FastAPI, HTTPException, Query
from fastapi.concurrency import run_in_threadpool

from memlife.bundled.realstack.runtime import Reply
from memlife.bundled.reference.app import ForgetRequest, PreviewRequest, RegisterRequest
from memlife.bundled.tenants import UnknownTenant


class Conversation(Protocol):
    """What a bundled stack serves through the reference target's conversation surface
    (realstack, mem0, graphiti)."""

    data_dir: Path

    def register(self, phone: str) -> tuple[str, bool]: ...
    def converse(self, phone: str, message: str) -> tuple[str, Any]: ...
    def delete_tenant(self, user_id: str) -> dict[str, str]: ...
    def deletion_status(self, user_id: str) -> dict[str, str | None]: ...
    def forget(self, user_id: str, values: list[str]) -> dict[str, object]: ...


class Stack(Conversation, Protocol):
    """A stack whose memories memlife reads through this surface (realstack, mem0)."""

    def converse(self, phone: str, message: str) -> tuple[str, Reply]: ...
    def memory_records(
        self, tenant_id: str | None = None, needles: list[str] | None = None
    ) -> list[dict[str, object]]: ...


def conversation_app(runtime: Conversation, title: str) -> FastAPI:
    """The reference target's conversation and erasure routes over a bundled stack; a
    reply's `layer`, where the stack's reply has one, says which store answered."""
    app = FastAPI(title=title, version="1")

    @app.get("/health")
    def health() -> dict[str, object]:
        return {"status": "ok", "data_dir": str(runtime.data_dir)}

    @app.post("/v1/users")
    def register(body: RegisterRequest) -> dict[str, object]:
        user_id, created = runtime.register(body.phone)
        return {"user_id": user_id, "created": created}

    @app.post("/v1/preview")
    def preview(body: PreviewRequest) -> dict[str, object]:
        try:
            user_id, reply = runtime.converse(body.phone, body.message)
        except UnknownTenant:
            raise HTTPException(404, "phone is not registered") from None
        answer = {"user_id": user_id, "reply": reply.text, "context": reply.context}
        return answer | ({"layer": reply.layer} if hasattr(reply, "layer") else {})

    @app.delete("/v1/users/{user_id}", status_code=202)
    def delete_user(user_id: str) -> dict[str, str]:
        try:
            return runtime.delete_tenant(user_id)
        except UnknownTenant:
            raise HTTPException(404, "unknown user") from None

    @app.get("/v1/users/{user_id}/deletion")
    def deletion(user_id: str) -> dict[str, str | None]:
        try:
            return runtime.deletion_status(user_id)
        except UnknownTenant:
            raise HTTPException(404, "no deletion requested for this user") from None

    @app.post("/v1/users/{user_id}/forget")
    def forget(user_id: str, body: ForgetRequest) -> dict[str, object]:
        # Every value the fact has had, current and superseded: a stack may keep each.
        try:
            return runtime.forget(user_id, list(dict.fromkeys([body.value, *body.values])))
        except UnknownTenant:
            raise HTTPException(404, "unknown or deleted user") from None

    return app


def create_app(runtime: Stack, title: str = "memlife realstack target") -> FastAPI:
    app = conversation_app(runtime, title)

    @app.get("/admin/memory/records")
    async def memory_records(tenant_id: Annotated[str, Query(min_length=1)]) -> dict[str, object]:
        return {"records": await run_in_threadpool(runtime.memory_records, tenant_id)}

    @app.get("/admin/memory/search")
    async def memory_search(q: Annotated[list[str], Query()]) -> dict[str, object]:
        if not q or not all(q):
            raise HTTPException(422, "q: one or more non-empty needles")
        return {"records": await run_in_threadpool(runtime.memory_records, None, q)}

    return app
