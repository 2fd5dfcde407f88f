"""`register`: the requests that create a tenant, its owner first when the create needs the
owner's id."""

from __future__ import annotations

import re
from typing import Any

from memlife.rules.openapi.answers import id_expression, property_named
from memlife.rules.openapi.document import Op
from memlife.rules.openapi.proposal import Guess
from memlife.rules.openapi.request import RequestBuilder
from memlife.rules.openapi.tenant import Tenant, collection_create
from memlife.rules.openapi.vocabulary import (
    NAME_FIELDS,
    PHONE_FIELDS,
    TENANT_NOUNS,
    name_matches,
    normalized,
    singular,
)


def register(builder: RequestBuilder, tenant: Tenant) -> Guess | None:
    if tenant.kind == "path":
        create = collection_create(builder.ops, tenant.collection)
        if create is None:
            return None
        steps: list[dict[str, Any]] = []
        sources = [create.describe()]
        confirm: list[str] = []
        owner_step = _owner_step(builder, create)
        slots = {"tenant_alias": NAME_FIELDS, "phone": PHONE_FIELDS}
        extra: dict[str, Any] = {}
        if owner_step is not None:
            owner_op, foreign = owner_step
            step, more = _create_step(
                builder, owner_op, owner_op.path.rstrip("/").rsplit("/", 1)[-1]
            )
            steps.append(step)
            confirm += more
            sources.insert(0, owner_op.describe())
            extra[foreign] = "{user_id}"
            confirm.append(
                f"a tenant is made in two requests: the second's {foreign!r} is the first's id"
            )
        step, more = _create_step(builder, create, tenant.resource, slots, extra)
        steps.append(step)
        confirm += more
        return Guess(
            "register",
            steps if len(steps) > 1 else steps[0],
            "medium",
            " then ".join(sources),
            tuple(confirm),
        )
    if tenant.kind == "phone":
        for op in builder.ops:
            if (
                op.method == "POST"
                and not op.path_params()
                and op.words & TENANT_NOUNS
                and op.body is not None
                and any(name_matches(n, PHONE_FIELDS) for n in builder.schemas.properties(op.body))
            ):
                resource = op.path.rstrip("/").rsplit("/", 1)[-1]
                step, confirm = _create_step(builder, op, resource)
                created = property_named(op.response(), builder.schemas, ("created",))
                if created:
                    step["extract"]["created"] = f"/{created}"
                return Guess("register", step, "high", op.describe(), tuple(confirm))
    return None


def _owner_step(builder: RequestBuilder, create: Op) -> tuple[Op, str] | None:
    """A create whose body requires another resource's id (`user_uuid`): that
    resource's own create, and the field."""
    if create.body is None:
        return None
    for name in create.body.get("required") or []:
        noun = _refers_to(str(name))
        if noun is None:
            continue
        prefix = create.path.rstrip("/").rsplit("/", 1)[0]
        for plural in (noun + "s", noun + "es", noun):
            owner = collection_create(builder.ops, f"{prefix}/{plural}")
            if owner is not None and owner is not create:
                return owner, str(name)
    return None


def _create_step(
    builder: RequestBuilder,
    op: Op,
    resource: str,
    slots: dict[str, tuple[str, ...]] | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    slots = slots or {"tenant_alias": NAME_FIELDS, "phone": PHONE_FIELDS}
    request, confirm = builder.request(op, Tenant("none"), slots, extra=extra)
    pointer, typed = id_expression(op.response(), builder.schemas, resource)
    request["extract"] = {"user_id": pointer}
    if not typed:
        confirm.append(
            f"the new {singular(resource)}'s id is read with {pointer!r} (the answer has no schema)"
        )
    return request, confirm


def _refers_to(name: str) -> str | None:
    """The resource a foreign-key field names (`user_uuid`, `userId` -> `user`)."""
    match = re.fullmatch(r"([a-z]+?)(?:uuid|id)", normalized(name))
    return match.group(1) if match else None
