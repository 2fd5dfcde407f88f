"""HTTP surface of the graphiti target: the reference target's conversation and erasure
surface. Graphiti's stores (entity nodes, fact edges, episodes) live in FalkorDB, which
memlife reads directly (scenarios/targets/graphiti.yaml): no admin reads here.

  POST   /v1/users                  {phone}            -> {user_id, created}
  POST   /v1/preview                {phone, message}   -> {user_id, reply, context}
  DELETE /v1/users/{user_id}                           -> {deletion_id, status} (synchronous)
  GET    /v1/users/{user_id}/deletion                  -> {deletion_id, status, ...}
  POST   /v1/users/{user_id}/forget {value, values?}   -> {status, episodes}
  GET    /health
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException

from memlife.bundled.graphiti.runtime import GraphitiRuntime, UnknownTenant
from memlife.bundled.reference.app import ForgetRequest, PreviewRequest, RegisterRequest


def create_app(runtime: GraphitiRuntime) -> FastAPI:
    app = FastAPI(title="memlife graphiti target", version="1")

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
        return {"user_id": user_id, "reply": reply.text, "context": reply.context}

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
        # Every value the fact had, current and superseded: Graphiti keeps the episode of
        # each (and the superseded value's invalidated edge).
        try:
            return runtime.forget(user_id, list(dict.fromkeys([body.value, *body.values])))
        except UnknownTenant:
            raise HTTPException(404, "unknown or deleted user") from None

    return app
