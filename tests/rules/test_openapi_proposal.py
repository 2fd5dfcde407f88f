"""`memlife target init`'s guessing, on the stand-ins' own OpenAPI documents (FastAPI's
app.openapi(), no server) and on small documents written here for the edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from memlife.bundled.realstack.app import create_app as realstack_app
from memlife.rules.openapi import Proposal, ProposalError, propose
from memlife.rules.target import Target, parse_target
from tests.standins import letta, mem0_oss, zep

DOC_URL = "http://127.0.0.1:9/openapi.json"


def proposed(document: dict[str, Any], **options: Any) -> tuple[Proposal, Target, str]:
    proposal = propose(document, "openapi.json", document_url=DOC_URL, **options)
    text = proposal.render("t.yaml")
    return proposal, parse_target(yaml.safe_load(text), "t.yaml"), text


def test_mem0_oss_add_search_delete_by_user_and_forget_by_id(tmp_path: Path) -> None:
    document = mem0_oss.create_app(tmp_path / "v.db", tmp_path / "h.db").openapi()
    proposal, target, text = proposed(document)
    ops = target.operations
    assert target.name == "mem0-rest-apis" and target.base_url == "http://127.0.0.1:9"
    # No registration: Mem0 knows a user by the user_id it is given.
    assert ops.registration is None
    assert (ops.say.method, ops.say.path) == ("POST", "/memories")
    assert ops.say.body == {
        "messages": [{"role": "user", "content": "{message}"}],
        "user_id": "{user_id}",
    }
    assert ops.ask is not None and ops.ask.path == "/search"
    assert ops.ask.body == {"query": "{message}", "user_id": "{user_id}"}
    delete = ops.delete_tenant
    assert not isinstance(delete, list) and delete is not None
    assert (delete.method, delete.path, delete.query) == (
        "DELETE",
        "/memories",
        {"user_id": "{user_id}"},
    )
    # Mem0 deletes a memory by id: the tenant's list, the memories holding the value, each
    # deleted.
    listing, deletion = ops.sequence("forget")
    assert (listing.method, listing.path) == ("GET", "/memories")
    assert listing.query == {"user_id": "{user_id}", "top_k": "1000"}  # the schema's maximum
    assert listing.select is not None and listing.select.holding == "{values}"
    assert (deletion.method, deletion.path) == ("DELETE", "/memories/{memory_id}")
    # X-API-Key (an apiKey scheme) is preferred to the bearer JWT the server also takes.
    assert list(target.headers) == ["X-API-Key"]
    assert target.headers["X-API-Key"].env == "MEM0_API_KEY"  # type: ignore[union-attr]
    assert "the document also accepts HTTPBearer" in text
    assert "#   export MEM0_API_KEY=…" in text
    # Each guess says where it came from, above it.
    assert "# say: guessed from POST /memories (operationId add_memory_memories_post" in text
    assert proposal.secrets() == ["MEM0_API_KEY"]


def test_zep_tenant_is_a_thread_made_after_its_user_and_deleted_through_it() -> None:
    proposal, target, text = proposed(zep.create_app("k").openapi())
    ops = target.operations
    register = ops.register_steps()
    # A thread needs its user's uuid: the user first, then the thread; the tenant's id is
    # the thread's (the last one extracted).
    assert [(s.path, s.body) for s in register] == [
        ("/api/v4/users", {"first_name": "{tenant_alias}"}),
        ("/api/v4/threads", {"user_uuid": "{user_id}"}),
    ]
    assert all("user_id" in step.extract for step in register)
    assert ops.say.path == "/api/v4/threads/{user_id}/messages"
    assert ops.say.body["return_context"] is True  # the answer carries the context
    assert ops.ask is None  # no search takes a query for a thread
    # The user owns the thread: looked up from the thread, then deleted.
    lookup, delete = ops.sequence("delete_tenant")
    assert (lookup.path, lookup.extract) == ("/api/v4/threads/{user_id}", {"owner": "user_uuid"})
    assert (delete.method, delete.path) == ("DELETE", "/api/v4/users/{owner}")
    # A task's status needs the deletion's task id, which no schema shows: commented out.
    assert ops.deletion_status is None
    assert (
        "  # deletion_status:\n  #   method: GET\n  #   path: /api/v4/tasks/{deletion_id}" in text
    )
    # The key comes from FastAPI's Authorization header parameter; the scheme is a guess.
    assert target.headers["Authorization"].env == "ZEP_API_KEY"  # type: ignore[union-attr]
    assert any("`Bearer ` is a guess" in item for item in proposal.to_confirm())


def test_letta_tenant_is_an_agent_and_forget_finds_passages_by_value() -> None:
    _, target, _ = proposed(letta.create_app("k").openapi())
    ops = target.operations
    register = ops.registration
    assert not isinstance(register, list) and register is not None
    assert (register.path, register.body) == ("/v1/agents/", {"name": "memlife-{tenant_alias}"})
    assert ops.say.path == "/v1/agents/{user_id}/messages"
    assert ops.ask is None  # an agent answers what it is told: no separate search
    delete = ops.delete_tenant
    assert not isinstance(delete, list) and delete is not None
    assert delete.path == "/v1/agents/{user_id}" and delete.refused == [404]
    listing, deletion = ops.sequence("forget")
    assert listing.path == "/v1/agents/{user_id}/archival-memory"
    assert deletion.path == "/v1/agents/{user_id}/archival-memory/{memory_id}"


def test_memlifes_own_conversation_surface_registers_by_phone_and_polls_deletion() -> None:
    _, target, _ = proposed(realstack_app(None).openapi())  # type: ignore[arg-type]
    ops = target.operations
    register = ops.registration
    assert not isinstance(register, list) and register is not None
    assert (register.path, register.body) == ("/v1/users", {"phone": "{phone}"})
    assert ops.say.body == {"phone": "{phone}", "message": "{message}"}
    assert ops.deletion_status is not None
    assert ops.deletion_status.path == "/v1/users/{user_id}/deletion"
    forget = ops.forget
    assert not isinstance(forget, list) and forget is not None
    assert forget.path == "/v1/users/{user_id}/forget"
    assert forget.body == {"value": "{value}", "values": "{values}"}
    assert target.headers == {}


def minimal(**extra: Any) -> dict[str, Any]:
    """A small typed service: register by phone, preview with a typed reply."""
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Acme Memory", "version": "2"},
        "servers": [{"url": "/api"}],
        "paths": {
            "/users": {
                "post": {
                    "operationId": "createUser",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["phone", "plan"],
                                    "properties": {
                                        "phone": {"type": "string"},
                                        "plan": {"type": "string", "enum": ["free", "pro"]},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"201": {"$ref": "#/components/responses/User"}},
                }
            },
            "/chat": {
                "post": {
                    "operationId": "chat",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "phone": {"type": "string"},
                                        "message": {"type": "string"},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"answer": {"type": "string"}},
                                    }
                                }
                            },
                        }
                    },
                }
            },
        },
        "components": {
            "responses": {
                "User": {
                    "description": "created",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"userId": {"type": "string"}},
                            }
                        }
                    },
                }
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
    document.update(extra)
    return document


def test_typed_answers_are_read_by_pointer_and_relative_servers_resolve() -> None:
    proposal, target, _ = proposed(minimal())
    assert target.base_url == "http://127.0.0.1:9/api"
    assert target.name == "acme-memory"
    register = target.operations.registration
    assert not isinstance(register, list) and register is not None
    # The required field memlife has no variable for gets its first enum value, to confirm.
    assert register.body == {"phone": "{phone}", "plan": "free"}
    assert register.extract == {"user_id": "/userId"}
    assert target.operations.say.extract == {"reply": "/answer"}
    assert any("plan" in item for item in proposal.to_confirm())
    assert target.headers["Authorization"].prefix == "Bearer "  # type: ignore[union-attr]


def test_a_query_key_is_not_written_as_a_header() -> None:
    document = minimal(security=[{"key": []}])
    document["components"]["securitySchemes"] = {
        "key": {"type": "apiKey", "in": "query", "name": "api_key"}
    }
    proposal, target, _ = proposed(document)
    assert target.headers == {}
    assert any("secrets in headers only" in item for item in proposal.to_confirm())


@pytest.mark.parametrize(
    ("document", "field", "reason"),
    [
        ([], "", "not an OpenAPI document"),
        ({"swagger": "2.0", "paths": {}}, "swagger", "not OpenAPI 3"),
        ({"info": {}}, "openapi", "not an OpenAPI 3 document"),
        ({"openapi": "3.1.0", "paths": {}}, "paths", "describes no operations"),
        (
            {"openapi": "3.1.0", "paths": {"/health": {"get": {"responses": {}}}}},
            "paths",
            "no operation takes a message",
        ),
    ],
)
def test_what_cannot_be_proposed_from_says_where_and_why(
    document: Any, field: str, reason: str
) -> None:
    with pytest.raises(ProposalError) as raised:
        propose(document, "doc.json", document_url=DOC_URL)
    assert raised.value.field == field and reason in str(raised.value)


def test_a_file_without_servers_needs_a_base_url() -> None:
    document = minimal()
    del document["servers"]
    with pytest.raises(ProposalError, match="--base-url") as raised:
        propose(document, "doc.yaml")
    assert raised.value.field == "servers"
    proposal = propose(document, "doc.yaml", base_url="https://memory.example")
    assert proposal.base_url == "https://memory.example"


def test_a_guarded_document_without_schemes_keeps_the_header_it_was_fetched_with() -> None:
    # Letta's server guards everything with its password but declares no scheme, and lists
    # its CORS origins as servers (http://letta.localhost).
    document = minimal(servers=[{"url": "http://letta.localhost"}])
    del document["security"], document["components"]["securitySchemes"]
    proposal, target, _ = proposed(document, fetched_with={"Authorization": "Bearer "})
    assert target.base_url == "http://127.0.0.1:9"  # where the document answered
    header = target.headers["Authorization"]
    assert header.env == "ACME_API_KEY" and header.prefix == "Bearer "  # type: ignore[union-attr]
    assert proposal.header_guesses[0].source.startswith("the header(s) the document was")
