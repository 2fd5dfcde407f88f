"""Where an answer holds what memlife reads (the reply, a created id): a JSON pointer when
the schema says, else a tolerant JMESPath that never errs."""

from __future__ import annotations

from typing import Any

from memlife.rules.openapi.document import Schemas, schema_type
from memlife.rules.openapi.vocabulary import (
    ANSWER_LISTS,
    ID_FIELDS,
    RECORD_LISTS,
    RECORD_TEXT,
    REPLY_FIELDS,
    name_matches,
    singular,
)


def property_named(
    schema: dict[str, Any] | None, schemas: Schemas, names: tuple[str, ...]
) -> str | None:
    if not schema:
        return None
    props = schemas.properties(schema)
    for name in names:
        for prop in props:
            if name_matches(prop, (name,)):
                return prop
    return None


def reply_expression(schema: dict[str, Any] | None, schemas: Schemas) -> tuple[str, bool]:
    """Where an answer's text is, and whether the schema said so (else a tolerant guess)."""
    if schema and schema_type(schema) == "object":
        props = schemas.properties(schema)
        for name in REPLY_FIELDS:
            prop = property_named(schema, schemas, (name,))
            if prop and schema_type(props[prop]) == "string":
                return f"/{prop}", True
        for name in RECORD_LISTS:
            prop = property_named(schema, schemas, (name,))
            if prop and schema_type(props[prop]) == "array":
                item = schemas.resolve(props[prop].get("items") or {})
                text = property_named(item, schemas, RECORD_TEXT)
                if text:
                    return f"join(' · ', {prop}[].{text} || `[]`)", True
    if schema and schema_type(schema) == "array":
        item = schemas.resolve(schema.get("items") or {})
        text = property_named(item, schemas, RECORD_TEXT)
        if text:
            return f"join(' · ', [].{text})", True
    texts = " || ".join(RECORD_TEXT)
    return (
        " || ".join(REPLY_FIELDS)
        + f" || join(' · ', map(&({texts} || ''), {ANSWER_LISTS} || `[]`)) || to_string(@)",
        False,
    )


def id_expression(
    schema: dict[str, Any] | None, schemas: Schemas, resource: str
) -> tuple[str, bool]:
    """Where a created resource's id is in the answer."""
    noun = singular(resource)
    names = (f"{noun}_id", *ID_FIELDS, f"{noun}_uuid")
    prop = property_named(schema, schemas, names)
    if prop:
        return f"/{prop}", True
    return " || ".join(n.replace("-", "_") for n in names), False
