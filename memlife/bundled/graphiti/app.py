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

from fastapi import FastAPI

from memlife.bundled.graphiti.runtime import GraphitiRuntime
from memlife.bundled.realstack.app import conversation_app


def create_app(runtime: GraphitiRuntime) -> FastAPI:
    return conversation_app(runtime, "memlife graphiti target")
