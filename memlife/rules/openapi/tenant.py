"""How an operation names whose conversation it is (the tenant), and whether another
operation names it the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memlife.rules.openapi.document import Op, Schemas
from memlife.rules.openapi.vocabulary import PHONE_FIELDS, USER_FIELDS, name_matches, normalized


@dataclass
class Tenant:
    """How `say` names the tenant."""

    kind: Literal["path", "body", "query", "phone", "none"]
    name: str = ""  # the parameter or field
    resource: str = ""  # path: the collection before the parameter (`agents`)
    collection: str = ""  # path: the collection's path (`/v1/agents`)


def is_user_ish(name: str) -> bool:
    return name_matches(name, USER_FIELDS) or normalized(name) in {"userid", "useruuid"}


def path_tenant(op: Op) -> Tenant | None:
    params = op.path_params()
    if not params:
        return None
    name = params[0]
    before = op.path.split("{" + name + "}")[0].rstrip("/")
    resource = before.rsplit("/", 1)[-1]
    return Tenant("path", name, resource, before)


def tenant_of(op: Op, schemas: Schemas) -> Tenant:
    props = schemas.properties(op.body) if op.body else {}
    path = path_tenant(op)
    if path is not None:
        return path
    for name in props:
        if name_matches(name, PHONE_FIELDS):
            return Tenant("phone", name)
    for name in props:
        if is_user_ish(name):
            return Tenant("body", name)
    query = next((p for p in op.params if p.where == "query" and is_user_ish(p.name)), None)
    if query is not None:
        return Tenant("query", query.name)
    return Tenant("none")


def collection_create(ops: list[Op], collection: str) -> Op | None:
    for op in ops:
        if op.method == "POST" and op.path.rstrip("/") == collection.rstrip("/"):
            return op
    return None


def binds(op: Op, tenant: Tenant, schemas: Schemas) -> bool:
    """Whether `op` names the tenant as `say` does."""
    if tenant.kind == "path":
        found = path_tenant(op)
        return found is not None and found.collection == tenant.collection
    props = schemas.properties(op.body) if op.body else {}
    names = [*props, *(p.name for p in op.params if p.where == "query")]
    if tenant.kind in ("body", "query"):
        return any(name_matches(n, (tenant.name,)) for n in names)
    if tenant.kind == "phone":
        return any(name_matches(n, PHONE_FIELDS) for n in names)
    return True
