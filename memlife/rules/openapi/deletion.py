"""`delete_tenant` (the tenant's item, its records, or its owner) and `deletion_status`."""

from __future__ import annotations

import re
from typing import Any

from memlife.rules.openapi.answers import property_named
from memlife.rules.openapi.document import Op
from memlife.rules.openapi.proposal import Confidence, Guess
from memlife.rules.openapi.request import RequestBuilder
from memlife.rules.openapi.tenant import Tenant, path_tenant
from memlife.rules.openapi.vocabulary import DONE_VALUES, STATUS_FIELDS, STATUS_WORDS


def delete_tenant(builder: RequestBuilder, tenant: Tenant, register: Guess | None) -> Guess | None:
    for op in builder.ops:
        if op.method != "DELETE":
            continue
        found = path_tenant(op)
        if (
            tenant.kind == "path"
            and found is not None
            and found.collection == tenant.collection
            and op.path.rstrip("/").endswith("{" + found.name + "}")
        ):
            return _delete_guess(builder, op, tenant, "high")
        if tenant.kind == "phone" and register is not None and found is not None:
            reg_path = register.value["path"] if isinstance(register.value, dict) else ""
            if found.collection.rstrip("/") == reg_path.rstrip("/") and op.path.rstrip(
                "/"
            ).endswith("{" + found.name + "}"):
                return _delete_guess(builder, op, Tenant("path", found.name), "high")
        if (
            tenant.kind in ("body", "query")
            and not op.path_params()
            and op.param("query", (tenant.name,)) is not None
        ):
            return _delete_guess(builder, op, tenant, "high")
    if tenant.kind == "path" and register is not None and isinstance(register.value, list):
        return _delete_owner(builder, tenant, register)
    return None


def _delete_guess(builder: RequestBuilder, op: Op, tenant: Tenant, confidence: Confidence) -> Guess:
    request, confirm = builder.request(op, tenant, {})
    response = op.response()
    extract = {}
    status = property_named(response, builder.schemas, STATUS_FIELDS)
    if status:
        extract["status"] = f"/{status}"
    ident = property_named(response, builder.schemas, ("deletion_id", "task_id", "job_id"))
    if ident:
        extract["deletion_id"] = f"/{ident}"
    if extract:
        request["extract"] = extract
        request["done_values"] = DONE_VALUES
        confirm.append(
            "the statuses that mean the deletion is done (done_values) and failed "
            "(failed_values, default [failed, error])"
        )
    request["refused"] = [404]
    confirm.append("404 is taken as nothing left to delete (refused)")
    return Guess("delete_tenant", request, confidence, op.describe(), tuple(confirm))


def _delete_owner(builder: RequestBuilder, tenant: Tenant, register: Guess) -> Guess | None:
    """A tenant made in two requests (a user, then its thread) is deleted through its
    owner: look the owner's id up on the tenant's item, delete the owner."""
    first = register.value[0]
    owner_collection = first["path"].rstrip("/")
    foreign = next(
        (k for k, v in (register.value[1].get("json") or {}).items() if v == "{user_id}"),
        None,
    )
    lookup = next(
        (
            op
            for op in builder.ops
            if op.method == "GET"
            and (found := path_tenant(op)) is not None
            and found.collection == tenant.collection
            and op.path.rstrip("/").endswith("{" + found.name + "}")
        ),
        None,
    )
    delete = next(
        (
            op
            for op in builder.ops
            if op.method == "DELETE"
            and (found := path_tenant(op)) is not None
            and found.collection.rstrip("/") == owner_collection
            and op.path.rstrip("/").endswith("{" + found.name + "}")
        ),
        None,
    )
    if lookup is None or delete is None or foreign is None:
        return None
    get, _ = builder.request(lookup, tenant, {})
    get["extract"] = {"owner": foreign}
    get["refused"] = [404]
    owner_id = delete.path_params()[0]
    guess = _delete_guess(builder, delete, tenant, "medium")
    last = dict(guess.value)
    last["path"] = delete.path.replace("{" + owner_id + "}", "{owner}")
    return Guess(
        "delete_tenant",
        [get, last],
        "medium",
        f"{lookup.describe()} then {delete.describe()}",
        (
            f"the tenant's owner is read from the answer's {foreign!r} and deleted with "
            "all it owns",
            *guess.confirm,
        ),
    )


def deletion_status(builder: RequestBuilder, tenant: Tenant, delete: Guess | None) -> Guess | None:
    if delete is None:
        return None
    last = delete.value[-1] if isinstance(delete.value, list) else delete.value
    for op in builder.ops:
        if op.method != "GET" or not op.words & STATUS_WORDS:
            continue
        params = op.path_params()
        item = re.sub(r"\{[^}]*\}", "{user_id}", op.path)
        if (
            len(params) == 1
            and item.startswith(last["path"].rstrip("/") + "/")
            and "{user_id}" in last["path"]
        ):
            request, confirm = builder.request(
                op, tenant if tenant.kind == "path" else Tenant("path", params[0]), {}
            )
            _status_extract(builder, op, request, confirm)
            return Guess("deletion_status", request, "high", op.describe(), tuple(confirm))
    for op in builder.ops:
        params = op.path_params()
        if (
            op.method != "GET"
            or len(params) != 1
            or not op.words & {"task", "tasks", "job", "jobs", "operation"}
        ):
            continue
        request, confirm = builder.request(op, tenant, {}, path_values={params[0]: "{deletion_id}"})
        _status_extract(builder, op, request, confirm)
        confirm.append(
            "delete_tenant must extract the task's id as deletion_id (and its status): "
            "the deletion's answer has no schema to say where"
        )
        return Guess("deletion_status", request, "low", op.describe(), tuple(confirm))
    return None


def _status_extract(
    builder: RequestBuilder, op: Op, request: dict[str, Any], confirm: list[str]
) -> None:
    status = property_named(op.response(), builder.schemas, STATUS_FIELDS)
    request["extract"] = {"status": f"/{status}" if status else " || ".join(STATUS_FIELDS)}
    request["done_values"] = DONE_VALUES
    confirm.append("the statuses that mean done (done_values) and failed (failed_values)")
