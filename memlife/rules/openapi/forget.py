"""`forget`: an operation that forgets a value, or else a look-up of the tenant's memories
holding it and a delete of each (a sequence)."""

from __future__ import annotations

from memlife.rules.openapi.document import Op
from memlife.rules.openapi.proposal import Guess
from memlife.rules.openapi.request import RequestBuilder
from memlife.rules.openapi.tenant import Tenant, binds
from memlife.rules.openapi.vocabulary import (
    FORGET_WORDS,
    ID_FIELDS,
    LIMIT_FIELDS,
    MEMORY_NOUNS,
    RECORD_LISTS,
    RECORD_TEXT,
    VALUE_FIELDS,
    name_matches,
)


def forget(builder: RequestBuilder, tenant: Tenant, say_op: Op) -> Guess | None:
    for op in builder.ops:
        if op.method not in ("POST", "DELETE", "PUT") or not op.words & FORGET_WORDS:
            continue
        if not binds(op, tenant, builder.schemas) and tenant.kind != "phone":
            continue
        slots = {"values": ("values",), "value": VALUE_FIELDS}
        request, confirm = builder.request(op, tenant, slots)
        if tenant.kind == "phone" and op.path_params():
            request, confirm = builder.request(op, Tenant("path", op.path_params()[0]), slots)
        return Guess("forget", request, "high", op.describe(), tuple(confirm))
    # A memory deleted by id, after a look-up of the tenant's memories by value.
    for op in builder.ops:
        params = op.path_params()
        if op.method != "DELETE" or not params or not op.words & MEMORY_NOUNS:
            continue
        collection = op.path.rsplit("{" + params[-1] + "}", 1)[0].rstrip("/")
        listing = next(
            (o for o in builder.ops if o.method == "GET" and o.path.rstrip("/") == collection),
            None,
        )
        if listing is None or not binds(listing, tenant, builder.schemas):
            continue
        get, confirm = builder.request(listing, tenant, {})
        limit = next(
            (
                p
                for p in listing.params
                if p.where == "query" and name_matches(p.name, LIMIT_FIELDS)
            ),
            None,
        )
        if limit is not None:
            top = limit.schema.get("maximum", 100)
            get.setdefault("query", {})[limit.name] = str(top)
        response = listing.response()
        texts = " || ".join(RECORD_TEXT)
        get["select"] = {
            "records": " || ".join(RECORD_LISTS[:3]) + " || @",
            "content": texts,
            "holding": "{values}",
            "extract": {"memory_id": " || ".join(ID_FIELDS)},
        }
        if response is None:
            confirm.append(
                "the listing's answer has no schema: select reads its records and their "
                "text and id with tolerant expressions"
            )
        path_values = {params[-1]: "{memory_id}"}
        delete, more = builder.request(op, tenant, {}, path_values=path_values)
        delete["refused"] = [404]
        return Guess(
            "forget",
            [get, delete],
            "medium",
            f"{listing.describe()} then {op.describe()}",
            (
                "a fact is forgotten by deleting each memory that holds it, found in the "
                "tenant's list",
                *confirm,
                *more,
            ),
        )
    return None
