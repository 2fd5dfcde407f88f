"""`say`, the operation that takes a message, and `ask`, a search beside it when `say`
stores rather than answers."""

from __future__ import annotations

from memlife.rules.openapi.answers import reply_expression
from memlife.rules.openapi.document import Op, Schemas
from memlife.rules.openapi.proposal import Guess, ProposalError
from memlife.rules.openapi.request import RequestBuilder, is_message_list
from memlife.rules.openapi.tenant import Tenant, binds, collection_create, is_user_ish, tenant_of
from memlife.rules.openapi.vocabulary import (
    CONVERSATIONAL,
    MEMORY_NOUNS,
    MESSAGE_FIELDS,
    QUERY_FIELDS,
    SAY_NOUNS,
    SAY_VERBS,
    SEARCH_WORDS,
    SPACE_WORDS,
    name_matches,
)


def say_score(op: Op, schemas: Schemas) -> int:
    if op.method != "POST":
        return -100
    score = 0
    props = schemas.properties(op.body) if op.body else {}
    if any(is_message_list(p, schemas) for p in props.values()):
        score += 4
    elif any(name_matches(n, MESSAGE_FIELDS[:-1]) for n in props):
        score += 3
    elif any(name_matches(n, ("data",)) for n in props):
        score += 1
    else:
        return -100
    score += 2 * bool(op.words & SAY_VERBS) + 2 * bool(op.words & SAY_NOUNS)
    score -= 4 * bool(op.words & SEARCH_WORDS) + 2 * bool(op.words & SPACE_WORDS)
    score -= 2 * max(0, len(op.path_params()) - 1)
    return score


def choose_say(builder: RequestBuilder) -> tuple[Op, Tenant]:
    scored = sorted(
        ((_say_rank(builder, op), index, op) for index, op in enumerate(builder.ops)),
        key=lambda t: (-t[0], t[1]),
    )
    if not scored or scored[0][0] < 3:
        raise ProposalError(
            "paths",
            "no operation takes a message (a POST whose body has `messages`, `message`, "
            "`content` or `text`): write the target file by hand (docs/target-files.md)",
        )
    op = scored[0][2]
    return op, tenant_of(op, builder.schemas)


def _say_rank(builder: RequestBuilder, op: Op) -> int:
    score = say_score(op, builder.schemas)
    tenant = tenant_of(op, builder.schemas) if score > 0 else Tenant("none")
    # A scope without a create of its own is hardly a tenant.
    if (
        tenant.kind == "path"
        and not is_user_ish(tenant.name)
        and collection_create(builder.ops, tenant.collection) is None
    ):
        score -= 2
    return score + (tenant.kind != "none")


def ask(builder: RequestBuilder, say_op: Op, tenant: Tenant) -> Guess | None:
    if say_op.words & CONVERSATIONAL:
        return None  # it answers what it is told
    best: tuple[int, Op] | None = None
    for op in builder.ops:
        if op is say_op or op.method not in ("POST", "GET") or not op.words & SEARCH_WORDS:
            continue
        props = builder.schemas.properties(op.body) if op.body else {}
        takes_query = any(name_matches(n, QUERY_FIELDS) for n in props) or any(
            p.where == "query" and name_matches(p.name, QUERY_FIELDS) for p in op.params
        )
        if not takes_query:
            continue
        if not binds(op, tenant, builder.schemas):
            continue
        score = 2 * bool(op.words & MEMORY_NOUNS) - 2 * bool(op.words & SPACE_WORDS)
        if best is None or score > best[0]:
            best = (score, op)
    if best is None:
        return None
    op = best[1]
    request, confirm = builder.request(op, tenant, {"message": QUERY_FIELDS})
    pointer, typed = reply_expression(op.response(), builder.schemas)
    request["extract"] = {"reply": pointer}
    if not typed:
        confirm.append("the answer has no schema: narrow `reply` to the field that answers")
    confirm.append("the search is scoped to the tenant by the field the say uses")
    return Guess("ask", request, "medium", op.describe(), tuple(confirm))
