"""An operation's request as a target file writes it: its path, query and JSON body, each
field given the memlife variable that fits (`{message}`, `{user_id}`, …) or a stand-in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlife.rules.openapi.document import Op, Schemas, schema_type
from memlife.rules.openapi.tenant import Tenant, is_user_ish
from memlife.rules.openapi.vocabulary import PHONE_FIELDS, USER_FIELDS, name_matches


def is_message_list(schema: dict[str, Any], schemas: Schemas) -> bool:
    if schema_type(schema) != "array":
        return False
    item = schemas.resolve(schema.get("items") or {})
    props = schemas.properties(item)
    return "content" in props or "text" in props or "message" in props


def _message_list(schema: dict[str, Any], schemas: Schemas) -> list[dict[str, Any]]:
    item = schemas.resolve(schema.get("items") or {})
    props = schemas.properties(item)
    text = next(n for n in ("content", "text", "message") if n in props)
    entry: dict[str, Any] = {}
    if "role" in props:
        entry["role"] = "user"
    entry[text] = "{message}"
    return [entry]


def stand_in_value(schema: dict[str, Any]) -> Any:
    """A value for a required field memlife has no variable for: its default, example or
    first enum value, else an empty one of its type (a person confirms it)."""
    for key in ("default", "example"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": []}.get(
        schema_type(schema), {}
    )


@dataclass
class Filled:
    """A JSON body (or query) proposed for an operation, and what it bound."""

    value: dict[str, Any]
    bound: set[str] = field(default_factory=set)  # the variables used
    filled: list[str] = field(default_factory=list)  # required fields given a stand-in value


def fill_body(
    schema: dict[str, Any] | None,
    schemas: Schemas,
    slots: dict[str, tuple[str, ...]],
    extra: dict[str, Any] | None = None,
) -> Filled | None:
    """Required fields, and the optional ones a variable fits. `slots`: variable -> the
    field names it goes in (first fitting field wins)."""
    if schema is None or schema_type(schema) != "object":
        return None
    props = schemas.properties(schema)
    required = set(schema.get("required") or [])
    result = Filled({})
    for name, prop in props.items():
        if "message" in slots and is_message_list(prop, schemas) and "message" not in result.bound:
            result.value[name] = _message_list(prop, schemas)
            result.bound.add("message")
            continue
        variable = next(
            (
                v
                for v, names in slots.items()
                if v not in result.bound and name_matches(name, names)
            ),
            None,
        )
        if variable is not None and schema_type(prop) in ("string", "", "array"):
            if variable == "tenant_alias":
                result.value[name] = (
                    "memlife-{tenant_alias}" if name_matches(name, ("name",)) else "{tenant_alias}"
                )
            elif variable == "values" and schema_type(prop) == "array":
                result.value[name] = "{values}"
            elif schema_type(prop) == "array":
                continue
            else:
                result.value[name] = "{" + variable + "}"
            result.bound.add(variable)
        elif extra and name in extra:
            result.value[name] = extra[name]
        elif name in required:
            result.value[name] = stand_in_value(prop)
            result.filled.append(name)
    return result


class RequestBuilder:
    """The document's operations and schemas, and each operation's request."""

    def __init__(self, document: dict[str, Any], ops: list[Op]) -> None:
        self.ops = ops
        self.schemas = Schemas(document)

    def request(
        self,
        op: Op,
        tenant: Tenant,
        slots: dict[str, tuple[str, ...]],
        *,
        extra: dict[str, Any] | None = None,
        path_values: dict[str, str] | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """An operation's request, its tenant bound as `say` binds it; what to confirm."""
        confirm: list[str] = []
        request: dict[str, Any] = {"method": op.method}
        path = op.path
        for name in op.path_params():
            value = (path_values or {}).get(name)
            if (
                value is None
                and tenant.kind == "path"
                and (name == tenant.name or is_user_ish(name))
            ):
                value = "{user_id}"
            if value is None:
                value = "{user_id}"
                confirm.append(f"the path parameter {{{name}}} was given the tenant's id")
            path = path.replace("{" + name + "}", value)
        request["path"] = path
        query: dict[str, str] = {}
        for param in op.params:
            if param.where != "query":
                continue
            if is_user_ish(param.name) and tenant.kind in ("body", "query", "path"):
                query[param.name] = "{user_id}"
            elif name_matches(param.name, PHONE_FIELDS):
                query[param.name] = "{phone}"
            elif "message" in slots and name_matches(param.name, slots["message"]):
                query[param.name] = "{message}"
            elif param.required:
                query[param.name] = str(stand_in_value(param.schema))
                confirm.append(f"the required query parameter {param.name!r}")
        if query:
            request["query"] = query
        if op.body is not None:
            all_slots = dict(slots)
            if tenant.kind in ("body", "query", "path"):
                all_slots.setdefault(
                    "user_id", USER_FIELDS + ((tenant.name,) if tenant.name else ())
                )
            all_slots.setdefault("phone", PHONE_FIELDS)
            filled = fill_body(op.body, self.schemas, all_slots, extra)
            if filled is not None:
                request["json"] = filled.value
                if filled.filled:
                    confirm.append(
                        "required body field(s) with no memlife variable, given the "
                        "schema's default or an empty value: " + ", ".join(filled.filled)
                    )
        success = op.success()
        if success != [200] and set(success) - {200, 201, 202, 204}:
            request["success"] = success
        return request, confirm
