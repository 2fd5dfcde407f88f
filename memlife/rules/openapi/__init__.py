"""A target file proposed from a service's OpenAPI 3.x document (`memlife target init`).
Pure: the document arrives parsed (a dict); fetching it is the command's.

Every guess carries where it came from, how sure it is and what a person must confirm; the
rendered file says all three in comments. What is guessed:

- `say`: the POST that takes a message (a `messages` list of role/content objects, or a
  `message`, `content`, `text`, `input` field) and whose name or path says add, send or chat
  about memories, messages or episodes.
- the tenant: how `say` names whose conversation it is. A user-ish path parameter
  (`/agents/{agent_id}/messages`: the tenant is an agent) needs a registration that creates
  one (the collection's POST, and before it its owner's when the create needs the owner's
  id); a user-ish body or query field (`user_id`) is the tenant's id as memlife gives it
  (the phone, without registration); a `phone` field is the phone.
- `ask`: a search taking a query and naming the tenant as `say` does, when `say` stores
  rather than answers (a memory API's add beside its search).
- `delete_tenant`, `deletion_status`, `forget`: the DELETE of the tenant's item (or of its
  records, by the tenant's query parameter), a GET of its deletion's status, a forget or
  erase taking the value, or else a memory deleted by id after a look-up (a sequence).
- `headers`: the document's security schemes (or header parameters such as
  `Authorization`) as secrets read from environment variables.

A response without a schema (FastAPI's `Any`) is read with tolerant JMESPath: the usual
field names, else the whole answer as text, never an error.

Here: `propose`, which puts the parts together. document.py reads the document; vocabulary.py
holds the words and field names looked for; tenant.py and request.py bind the tenant and write
an operation's request; conversation.py (say, ask), registration.py, deletion.py, forget.py
and security.py (headers) each guess their part; answers.py says where an answer's reply or
id is; proposal.py holds the result and renders it as the commented target file.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from memlife.rules.openapi.answers import reply_expression
from memlife.rules.openapi.conversation import ask, choose_say, say_score
from memlife.rules.openapi.deletion import delete_tenant, deletion_status
from memlife.rules.openapi.document import read_operations, schema_type
from memlife.rules.openapi.forget import forget
from memlife.rules.openapi.proposal import Guess, Proposal, ProposalError
from memlife.rules.openapi.registration import register
from memlife.rules.openapi.request import RequestBuilder
from memlife.rules.openapi.security import fetched_headers, security_headers
from memlife.rules.openapi.vocabulary import CONVERSATIONAL, MESSAGE_FIELDS, singular

__all__ = ["Guess", "Proposal", "ProposalError", "base_url_of", "propose", "slug"]


def slug(text: str) -> str:
    head = re.split(r"[(\[:,]", text or "")[0]
    words = re.findall(r"[a-z0-9]+", head.lower())[:3]
    return "-".join(words) or "my-memory"


def base_url_of(document: dict[str, Any], document_url: str | None) -> str | None:
    """The service's base URL: the first server's (relative to the document's URL when
    relative), else the origin the document was fetched from."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        server = servers[0]
        url = str(server.get("url") or "")
        for key, variable in (server.get("variables") or {}).items():
            if isinstance(variable, dict) and "default" in variable:
                url = url.replace("{" + key + "}", str(variable["default"]))
        if url.startswith(("http://", "https://")):
            fetched = urlsplit(document_url or "")
            host = urlsplit(url).hostname or ""
            if (host == "localhost" or host.endswith(".localhost")) and fetched.hostname in (
                "127.0.0.1",
                "::1",
                "localhost",
            ):
                # A loopback name the server gave itself (Letta lists its CORS origins,
                # http://letta.localhost): where the document came from answers.
                return f"{fetched.scheme}://{fetched.netloc}"
            return url.rstrip("/")
        if document_url and url and url != "/":
            return urljoin(document_url, url).rstrip("/")
    if document_url and document_url.startswith(("http://", "https://")):
        parts = urlsplit(document_url)
        return f"{parts.scheme}://{parts.netloc}"
    return None


def propose(
    document: Any,
    source: str,
    *,
    name: str | None = None,
    base_url: str | None = None,
    document_url: str | None = None,
    fetched_with: dict[str, str] | None = None,
) -> Proposal:
    """A target file proposed from an OpenAPI 3 document; ProposalError when it is not
    one, has no operations or none that takes a message, or names no base URL.
    `fetched_with`: the headers the document was fetched with, by name, each with its
    scheme (`Bearer `) and never its secret."""
    ops = read_operations(document)
    info = document.get("info") if isinstance(document.get("info"), dict) else {}
    title = str(info.get("title") or "")
    url = base_url or base_url_of(document, document_url)
    if not url:
        raise ProposalError(
            "servers",
            "the document names no server URL: give the service's with --base-url",
        )
    base_confirm: list[str] = []
    if not base_url and document_url:
        fetched = urlsplit(document_url)
        if not url.startswith(f"{fetched.scheme}://{fetched.netloc}"):
            base_confirm.append(
                f"{url} is the document's first server; it was fetched from "
                f"{fetched.scheme}://{fetched.netloc}"
            )
    builder = RequestBuilder(document, ops)
    say_op, tenant = choose_say(builder)
    proposal = Proposal(
        name=name or slug(title),
        base_url=url,
        description=f"{title or 'a memory service'}, as its OpenAPI document describes it"
        + (f" (version {info['version']})" if info.get("version") else ""),
        source=source,
    )
    register_guess = register(builder, tenant)
    say_request, say_confirm = builder.request(say_op, tenant, {"message": MESSAGE_FIELDS})
    if say_op.body is not None and "json" in say_request:
        for prop, schema in builder.schemas.properties(say_op.body).items():
            if schema_type(schema) == "boolean" and "context" in prop.lower():
                say_request["json"][prop] = True
                say_confirm.append(f"{prop}: true, so that the answer carries the context")
    pointer, typed = reply_expression(say_op.response(), builder.schemas)
    say_request["extract"] = {"reply": pointer}
    if not typed:
        say_confirm.append(
            "the answer has no schema: `reply` is read with a tolerant expression (the "
            "usual fields, else the whole answer as text); narrow it to the field that answers"
        )
    tenant_note = {
        "path": f"the tenant is the {tenant.name!r} of {tenant.collection}/{{{tenant.name}}}",
        "body": f"the tenant is the body's {tenant.name!r} (memlife's user id: the phone, "
        "without registration)",
        "query": f"the tenant is the query's {tenant.name!r}",
        "phone": f"the tenant is known by the body's {tenant.name!r}",
        "none": "no field names whose conversation it is: tenants cannot be told apart",
    }[tenant.kind]
    say_guess = Guess(
        "say",
        say_request,
        "high" if say_score(say_op, builder.schemas) >= 6 else "medium",
        say_op.describe(),
        (tenant_note, *say_confirm),
    )
    if tenant.kind == "path" and register_guess is None:
        proposal.missing.append(
            f"register: the tenant is a {singular(tenant.resource)} (a path parameter), but "
            f"no POST {tenant.collection} creates one"
        )
    ask_guess = ask(builder, say_op, tenant)
    delete_guess = delete_tenant(builder, tenant, register_guess)
    status_guess = deletion_status(builder, tenant, delete_guess)
    forget_guess = forget(builder, tenant, say_op)
    guesses = (register_guess, say_guess, ask_guess, delete_guess, status_guess, forget_guess)
    proposal.operations = [g for g in guesses if g]
    proposal.base_url_confirm = base_confirm
    if ask_guess is None and not say_op.words & CONVERSATIONAL:
        proposal.missing.append("ask: no search takes a query for the tenant: questions go to say")
    for role, guess in (("delete_tenant", delete_guess), ("forget", forget_guess)):
        if guess is None:
            proposal.missing.append(f"{role}: no operation looks like it")
    chosen_ops = [say_op] + [o for o in ops if o is not say_op]
    # Secrets are named after the service (its title), whatever the target is called.
    service = slug(title) if title else proposal.name
    proposal.headers, proposal.header_guesses = security_headers(document, chosen_ops, service)
    if not proposal.headers and fetched_with:
        proposal.headers, proposal.header_guesses = fetched_headers(fetched_with, service)
    return proposal
